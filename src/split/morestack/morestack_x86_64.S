/* SPDX-License-Identifier: Apache-2.0 */
/* ito's __morestack for gcc -fsplit-stack code on x86-64 (no libgcc runtime).
 *
 * A split-stack prologue that finds too little room between sp and the limit
 * word %fs:0x70 runs `mov $frame,%r10; mov $argbytes,%r11; call __morestack;
 * ret` and the function body follows that `ret`. We get a segment from
 * ito_split_grow (C++, in libito), copy the stack arguments there, call the
 * body on it, and on return give the segment back (ito_split_shrink) and
 * return to that `ret`, which returns to the function's caller.
 *
 * The frame stays on the old stack and is addressed through %rbp: the CFA is
 * %rbp+24 (the caller's own CFA) wherever %rsp is, so unwinders and debuggers
 * walk from the new segment back to the old one. Varargs bodies find their stack arguments at
 * 24(%rbp), which gcc expects from __morestack.
 *
 * Frame, below %rbp (264 bytes, leaving %rsp 16-byte aligned):
 *   -8 rdi  -16 rsi  -24 rdx  -32 rcx  -40 r8  -48 r9  -56 rax
 *   -200..-73  xmm0-xmm7 (argument registers)
 *   -264..-201 struct split_frame (src/split/split_stack.hpp)
 */
    .set    ADJUST_SIZE, 8192      /* == ito::sched::split::adjust_size */
    .set    FRAME, 264

    .text
    .globl  __morestack
    .type   __morestack, @function

    .p2align 4
__morestack:
    .cfi_startproc
    .cfi_personality 0x9b, DW.ref.__gcc_personality_v0
    .cfi_lsda 0x1b, .Lmorestack_lsda
    /* Unwinders skip the caller's prologue (it has no state yet, and its
     * `call __morestack` is in no LSDA call-site range: C++ would terminate):
     * our CFA is the caller's, past its return address. */
    .cfi_def_cfa_offset 16
    pushq   %rbp
    .cfi_def_cfa_offset 24
    .cfi_offset %rbp, -24
    movq    %rsp, %rbp
    .cfi_def_cfa_register %rbp
    subq    $FRAME, %rsp
    movq    %rdi, -8(%rbp)
    movq    %rsi, -16(%rbp)
    movq    %rdx, -24(%rbp)
    movq    %rcx, -32(%rbp)
    movq    %r8, -40(%rbp)
    movq    %r9, -48(%rbp)
    movq    %rax, -56(%rbp)
    movups  %xmm0, -200(%rbp)
    movups  %xmm1, -184(%rbp)
    movups  %xmm2, -168(%rbp)
    movups  %xmm3, -152(%rbp)
    movups  %xmm4, -136(%rbp)
    movups  %xmm5, -120(%rbp)
    movups  %xmm6, -104(%rbp)
    movups  %xmm7, -88(%rbp)

    /* The C++ side runs below the old limit: hand it the limit and zero the
     * word meanwhile (see ito_split_grow). */
    movq    %fs:0x70, %rax
    movq    %rax, (%rsp)          /* split_frame.prev_limit */
    movq    $0, %fs:0x70
    /* ito_split_grow(record, frame_bytes, args, arg_bytes, caller_sp) */
    movq    %rsp, %rdi
    movq    %r10, %rsi
    leaq    24(%rbp), %rdx
    movq    %r11, %rcx
    leaq    16(%rbp), %r8
    call    ito_split_grow@PLT
    movq    %rax, %r11

    movups  -200(%rbp), %xmm0
    movups  -184(%rbp), %xmm1
    movups  -168(%rbp), %xmm2
    movups  -152(%rbp), %xmm3
    movups  -136(%rbp), %xmm4
    movups  -120(%rbp), %xmm5
    movups  -104(%rbp), %xmm6
    movups  -88(%rbp), %xmm7
    movq    -8(%rbp), %rdi
    movq    -16(%rbp), %rsi
    movq    -24(%rbp), %rdx
    movq    -32(%rbp), %rcx
    movq    -40(%rbp), %r8
    movq    -48(%rbp), %r9
    movq    -56(%rbp), %rax

    testq   %r11, %r11
    jz      .Lno_new_segment

    movq    %r11, %rsp            /* the new segment; stack arguments copied at 0(%rsp) */
    movq    8(%rbp), %r10
    incq    %r10                  /* the body follows the prologue's `ret` */
.Lcall_body_begin:
    call    *%r10
.Lcall_body_end:
    leaq    -FRAME(%rbp), %rsp    /* back on the old stack */
    movq    %rax, -56(%rbp)
    movq    %rdx, -24(%rbp)
    movups  %xmm0, -200(%rbp)
    movups  %xmm1, -184(%rbp)
    movq    %fs:0x70, %rsi        /* ito_split_shrink(record, limit) */
    movq    $0, %fs:0x70
    movq    %rsp, %rdi
    call    ito_split_shrink@PLT
    movq    -56(%rbp), %rax
    movq    -24(%rbp), %rdx
    movups  -200(%rbp), %xmm0
    movups  -184(%rbp), %xmm1
    .cfi_remember_state
    leave
    .cfi_def_cfa %rsp, 16
    ret                           /* into the prologue's `ret` */

.Lno_new_segment:
    /* Merging released children made room: run the body where we are. */
    .cfi_restore_state
    leave
    .cfi_def_cfa %rsp, 16
    incq    (%rsp)
    ret

    /* An exception leaves the body: rsp is on the new segment, rbp ours. */
.Lunwind_pad:
    .cfi_def_cfa %rbp, 24
    movq    %rax, -56(%rbp)
    movq    %fs:0x70, %rsi        /* ito_split_unwind(record, limit) */
    movq    $0, %fs:0x70
    leaq    -FRAME(%rbp), %rdi
    call    ito_split_unwind@PLT
    movq    -56(%rbp), %rdi
    call    __real__Unwind_Resume@PLT   /* ito::split_stack links --wrap=_Unwind_Resume */
    ud2
    .cfi_endproc
.Lmorestack_end:
    .size   __morestack, .-__morestack

    .section .gcc_except_table, "a", @progbits
.Lmorestack_lsda:
    .byte   0xff                  /* no landing-pad base: relative to the function */
    .byte   0xff                  /* no type table: cleanups only */
    .byte   0x1                   /* call sites as uleb128 */
    .uleb128 .Lcall_sites_end - .Lcall_sites
.Lcall_sites:
    .uleb128 .Lcall_body_begin - __morestack
    .uleb128 .Lcall_body_end - .Lcall_body_begin
    .uleb128 .Lunwind_pad - __morestack
    .uleb128 0                    /* action: cleanup */
.Lcall_sites_end:

    .text
/* Called instead of __morestack (rewritten by gold/lld) by functions that call
 * code built without -fsplit-stack, when their prologue could not be enlarged
 * by the adjust size: if sp - frame - adjust is still above the limit, run the
 * body here; else get a segment with the adjust size added. */
    .globl  __morestack_non_split
    .type   __morestack_non_split, @function

    .p2align 4
__morestack_non_split:
    .cfi_startproc
    pushq   %rax
    .cfi_adjust_cfa_offset 8
    movq    %rsp, %rax
    subq    %r10, %rax
    subq    $ADJUST_SIZE+8, %rax
    cmpq    %fs:0x70, %rax
    popq    %rax
    .cfi_adjust_cfa_offset -8
    jb      1f
    incq    (%rsp)
    ret
1:  addq    $ADJUST_SIZE, %r10
    jmp     __morestack
    .cfi_endproc
    .size   __morestack_non_split, .-__morestack_non_split

/* Split-stack shims for non-split functions that C++ code calls all the time.
 * gold/lld send every call of a small-frame split function that calls
 * non-split code through __morestack_non_split (a mispredicted return,
 * ~8 ns), even when the call sits on a path that never runs: every cleanup
 * pad calls _Unwind_Resume, every `new` calls operator new. ito::split_stack
 * links with --wrap for each symbol below (cmake/split_stack.cmake, the same
 * list), so those calls land here, in split-stack code, and the room the
 * callee may need (the adjust size) is checked here, when it runs.
 * Short of room, the shim is a split prologue: __morestack calls what follows
 * the `ret` (the jump to the real function) on a new segment, and returns
 * through that `ret`; an exception leaves through __morestack's cleanup pad.
 * Only functions with register arguments (no stack arguments to copy), and
 * none a signal handler may call (a handler on a sigaltstack must never
 * reach __morestack): memcpy and friends stay unwrapped. */
    .macro split_shim name
    .globl  __wrap_\name
    .type   __wrap_\name, @function
    .p2align 4
__wrap_\name:
    .cfi_startproc
    leaq    -ADJUST_SIZE(%rsp), %r11
    cmpq    %fs:0x70, %r11
    jb      1f
    jmp     __real_\name@PLT
1:  movq    $ADJUST_SIZE, %r10
    xorl    %r11d, %r11d
    call    __morestack
    ret
    jmp     __real_\name@PLT
    .cfi_endproc
    .size   __wrap_\name, .-__wrap_\name
    .endm

    split_shim _Unwind_Resume
    split_shim __cxa_allocate_exception
    split_shim __cxa_free_exception
    split_shim __cxa_throw
    split_shim __cxa_rethrow
    split_shim __cxa_begin_catch
    split_shim __cxa_end_catch
    split_shim _Znwm                  /* operator new(size_t) */
    split_shim _Znam                  /* operator new[](size_t) */
    split_shim _ZdlPv                 /* operator delete(void*) */
    split_shim _ZdlPvm                /* operator delete(void*, size_t) */
    split_shim _ZdaPv                 /* operator delete[](void*) */
    split_shim _ZdaPvm                /* operator delete[](void*, size_t) */
    split_shim malloc
    split_shim free

/* -mcmodel=large passes both sizes in %r10: argument bytes in the high half. */
    .globl  __morestack_large_model
    .type   __morestack_large_model, @function

    .p2align 4
__morestack_large_model:
    .cfi_startproc
    movq    %r10, %r11
    shrq    $32, %r11
    movl    %r10d, %r10d
    jmp     __morestack
    .cfi_endproc
    .size   __morestack_large_model, .-__morestack_large_model

    .hidden DW.ref.__gcc_personality_v0
    .weak   DW.ref.__gcc_personality_v0
    .section .data.rel.local.DW.ref.__gcc_personality_v0, "awG", @progbits, DW.ref.__gcc_personality_v0, comdat
    .align  8
    .type   DW.ref.__gcc_personality_v0, @object
    .size   DW.ref.__gcc_personality_v0, 8
DW.ref.__gcc_personality_v0:
    .quad   __gcc_personality_v0

    .section .note.GNU-stack, "", @progbits
    /* Both notes: gold/lld treat calls into this object as split-stack calls
     * (no enlarged check), and the object itself as containing non-split code. */
    .section .note.GNU-split-stack, "", @progbits
    .section .note.GNU-no-split-stack, "", @progbits
