/* SPDX-License-Identifier: Apache-2.0 */
/* Context switch for x86-64 System V.
 *
 * A suspended context is a stack pointer; the words above it hold the SSE and
 * x87 control words, the split-stack limit word (%fs:0x70, see
 * docs/SPLIT_STACKS.md), the callee-saved registers and the return address.
 * The limit is per context: code built with -fsplit-stack compares sp with it
 * in every prologue. Saving it costs one TLS load and store per switch.
 *
 *   void* ito_context_switch(void** save_sp, void* load_sp, void* value,
 *                            void* (*on_top)(void* value));
 *
 * Saves the current context into *save_sp and resumes load_sp. If on_top is not
 * null it runs on the resumed stack before the resumed code continues, and its
 * result becomes the value the resumed ito_context_switch returns; otherwise the
 * resumed side gets `value`. on_top lets the scheduler publish the context it
 * just left (push it, free it) only once nobody runs on that stack any more.
 */
/* The CFI below lets debuggers, profilers and the unwinder walk through a
 * switch: both sides of a switch have the same layout (16 bytes of control
 * words and limit, six registers, the return address), so one CFA rule holds
 * before and after rsp moves. A context started on a new stack marks its
 * return address undefined: a backtrace inside a ULT ends cleanly there. */
    .macro  save_registers
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbp, 0
    pushq   %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbx, 0
    pushq   %r12
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r12, 0
    pushq   %r13
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r13, 0
    pushq   %r14
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r14, 0
    pushq   %r15
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r15, 0
    subq    $16, %rsp
    .cfi_adjust_cfa_offset 16
    .endm

    /* The frame's control words: read from the registers, or with the
     * modes per worker (ito_fp_modes_per_worker) the mark `not saved`, all
     * ones, which no real MXCSR is (its reserved high bits are zero) and
     * which load_fp_modes never loads. */
    .macro  save_fp_modes
    cmpb    $0, ito_fp_modes_per_worker(%rip)
    jne     5f
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    jmp     6f
5:  movq    $-1, (%rsp)
6:
    .endm

    /* The split-stack limit, then the frame's address in *save_sp: from
     * here on the context may be resumed. */
    .macro  publish_frame
    movq    %fs:0x70, %r10
    movq    %r10, 8(%rsp)
    movq    %rsp, (%rdi)
    .endm

    /* Loads the modes of the frame at rsp where they differ from the ones in
     * force (eax: MXCSR, r11w: x87 control word). MXCSR's low six bits are
     * sticky exception flags, not modes: they stay the OS thread's (as the
     * x87 status word and aarch64's FPSR do), so a ULT that only raised
     * "inexact" loads nothing. Skipping matters beyond the load's own ~2 ns:
     * on the AMD EPYC here, stmxcsr soon after an ldmxcsr that changed the
     * register costs ~90 ns, and every switch-out reads MXCSR. */
    .macro  load_fp_modes
    movl    (%rsp), %r10d
    xorl    %eax, %r10d
    testl   $0xffc0, %r10d
    jz      8f
    cmpl    $-1, (%rsp)         /* saved with the modes per worker: none */
    je      9f
    xorl    %eax, %r10d         /* the frame's modes, with the flags in force */
    andl    $0x3f, %eax
    andl    $0xffffffc0, %r10d
    orl     %eax, %r10d
    movl    %r10d, (%rsp)
    ldmxcsr (%rsp)
8:  cmpw    4(%rsp), %r11w
    je      9f
    cmpw    $-1, 4(%rsp)
    je      9f
    fldcw   4(%rsp)
9:
    .endm

    /* Pops what save_registers pushed (the control words and limit are
     * loaded first, by the caller). */
    .macro  restore_registers
    addq    $16, %rsp
    .cfi_adjust_cfa_offset -16
    popq    %r15
    .cfi_adjust_cfa_offset -8
    .cfi_restore r15
    popq    %r14
    .cfi_adjust_cfa_offset -8
    .cfi_restore r14
    popq    %r13
    .cfi_adjust_cfa_offset -8
    .cfi_restore r13
    popq    %r12
    .cfi_adjust_cfa_offset -8
    .cfi_restore r12
    popq    %rbx
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbx
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbp
    .endm

    .text
    .globl  ito_context_switch
    .type   ito_context_switch, @function
    .p2align 4
ito_context_switch:
    .cfi_startproc
    save_registers
    cmpb    $0, ito_fp_modes_per_worker(%rip)
    jne     7f
    .cfi_remember_state
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    publish_frame
    movl    (%rsp), %eax        /* the modes this context runs in */
    movzwl  4(%rsp), %r11d

    movq    %rsi, %rsp
    load_fp_modes
.Lresume:
    movq    8(%rsp), %r10
    movq    %r10, %fs:0x70
    restore_registers
    movq    %rdx, %rax
    testq   %rcx, %rcx
    jnz     3f
    ret
3:  movq    %rdx, %rdi
    subq    $8, %rsp            /* rsp points at the return address: realign */
    .cfi_adjust_cfa_offset 8
    call    *%rcx
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    ret
    /* The modes per worker: nothing read, nothing loaded (no stmxcsr,
     * ~3 ns a switch on AMD Zen 3; docs/ARCHITECTURE.md, "The control words"). */
7:  .cfi_restore_state
    movq    $-1, (%rsp)
    publish_frame
    movq    %rsi, %rsp
    jmp     .Lresume
    .cfi_endproc
    .size   ito_context_switch, .-ito_context_switch

/*   void ito_context_start(void** save_sp, void* stack_top, void* data,
 *                          void* (*on_top)(void*), void* on_top_arg,
 *                          ito_exit_switch (*main)(void* data));
 *
 * Saves the current context like ito_context_switch, then starts a new
 * context at stack_top by *calling* main(data) there (after on_top). Starting
 * with a call instead of a `ret` into a made-up frame keeps the CPU's return
 * stack buffer in step with the real stacks: when the new context later ends,
 * its final `ret` into the context it resumes is predicted correctly. That
 * alone made spawn + join ~40% faster.
 *
 * main returns {next_sp, arg}: the context to resume, and the argument of
 * ito_ult_exit_hook, which runs on the resumed stack (it publishes the end of
 * the finished context, which nobody may touch before); a null arg skips it. */
/* Both start routines share this body; the split-stack one also loads the
 * new context's limit word from the word at stack_top before on_top runs, so
 * that everything on the new stack (on_top included) sees its own limit. */
    .macro  context_start name, load_limit
    .globl  \name
    .type   \name, @function
    .p2align 4
\name:
    .cfi_startproc
    save_registers
    save_fp_modes
    publish_frame

    movq    %rsi, %rsp          /* 16-byte aligned: calls below are aligned */
    /* The new stack's outermost frame: nothing to unwind into below it. */
    .cfi_def_cfa rsp, 8
    .cfi_undefined rip
    .if \load_limit
    movq    (%rsp), %r10
    movq    %r10, %fs:0x70
    .endif
    movq    %rdx, %r12
    movq    %r9, %r13
    testq   %rcx, %rcx
    jz      1f
    movq    %r8, %rdi
    call    *%rcx
1:  movq    %r12, %rdi
    call    *%r13
    jmp     .Lexit_to
    .cfi_endproc
    .size   \name, .-\name
    .endm

    context_start ito_context_start, 0
/*   void ito_context_start_split(...same arguments...): for lazy/fair_use ULTs;
 * the word at stack_top holds the new context's split-stack limit. */
    context_start ito_context_start_split, 1

/* First code of a context made by make_context (one that was queued before
 * it ever ran): main(data), main in r12, data in r13, then the same exit. */
    .globl  ito_context_trampoline
    .type   ito_context_trampoline, @function
    .p2align 4
ito_context_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %r13, %rdi
    call    *%r12
.Lexit_to:
    /* rax: the context to resume; rdx: the exit hook's argument. */
    movq    %rax, %rsp
    /* Now on the resumed context's saved frame (see save_registers). */
    .cfi_def_cfa rsp, 72
    .cfi_offset rip, -8
    .cfi_offset rbp, -16
    .cfi_offset rbx, -24
    .cfi_offset r12, -32
    .cfi_offset r13, -40
    .cfi_offset r14, -48
    .cfi_offset r15, -56
    /* The finished context's modes, through the resumed stack's red zone
     * (nothing lives below a suspended context's frame). */
    cmpb    $0, ito_fp_modes_per_worker(%rip)
    jne     9f
    stmxcsr -8(%rsp)
    fnstcw  -4(%rsp)
    movl    -8(%rsp), %eax
    movzwl  -4(%rsp), %r11d
    load_fp_modes               /* ends at its label 9 */
    movq    8(%rsp), %r10
    movq    %r10, %fs:0x70
    restore_registers
    /* A null argument: the finished context left the hook nothing to do. */
    testq   %rdx, %rdx
    jz      4f
    movq    %rdx, %rdi
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    call    ito_ult_exit_hook
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    ret
4:  xorl    %eax, %eax
    ret
    .cfi_endproc
    .size   ito_context_trampoline, .-ito_context_trampoline

    /* Set at a runtime's start (options::fp_modes): nonzero when ULTs
     * share their worker's control words instead of carrying their own. */
    .bss
    .globl  ito_fp_modes_per_worker
    .hidden ito_fp_modes_per_worker
    .type   ito_fp_modes_per_worker, @object
    .size   ito_fp_modes_per_worker, 1
ito_fp_modes_per_worker:
    .zero   1

    .section .note.GNU-stack,"",@progbits
    /* For gold/lld in split-stack programs: calls into these switches are
     * split-stack calls (they push a few words on the caller's stack, well
     * within the room below every limit), not calls that need the adjust size. */
    .section .note.GNU-split-stack,"",@progbits
    .section .note.GNU-no-split-stack,"",@progbits
