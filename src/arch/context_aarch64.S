/* SPDX-License-Identifier: Apache-2.0 */
/* Context switch for aarch64 (AAPCS64). The same three entry points and
 * contract as context_x86_64.S (see there and arch/context.hpp).
 *
 * A suspended context is a stack pointer; the 176 bytes above it hold
 *   sp+0    FPCR (rounding mode, flush-to-zero: per context, as MXCSR on x86)
 *   sp+8    a pad word (sp stays 16-aligned)
 *   sp+16   d8..d15   (the low halves of v8-v15 are callee-saved)
 *   sp+80   x19..x28
 *   sp+160  x29 (fp)
 *   sp+168  x30 (lr): where the context resumes
 * There is no split-stack limit word: GCC has no -fsplit-stack for aarch64.
 *
 * The CFI lets debuggers, profilers and the unwinder walk through a switch:
 * both sides have the same layout, so one CFA rule (sp + 176) holds before and
 * after sp moves. A context started on a new stack marks its return address
 * (x30) undefined and its frame pointer zero: a backtrace inside a ULT ends
 * cleanly there, by CFI or by frame-pointer walk. */
    .macro  save_context
    sub     sp, sp, #176
    .cfi_adjust_cfa_offset 176
    stp     x29, x30, [sp, #160]
    .cfi_rel_offset x29, 160
    .cfi_rel_offset x30, 168
    stp     x27, x28, [sp, #144]
    .cfi_rel_offset x27, 144
    .cfi_rel_offset x28, 152
    stp     x25, x26, [sp, #128]
    .cfi_rel_offset x25, 128
    .cfi_rel_offset x26, 136
    stp     x23, x24, [sp, #112]
    .cfi_rel_offset x23, 112
    .cfi_rel_offset x24, 120
    stp     x21, x22, [sp, #96]
    .cfi_rel_offset x21, 96
    .cfi_rel_offset x22, 104
    stp     x19, x20, [sp, #80]
    .cfi_rel_offset x19, 80
    .cfi_rel_offset x20, 88
    stp     d14, d15, [sp, #64]
    .cfi_rel_offset d14, 64
    .cfi_rel_offset d15, 72
    stp     d12, d13, [sp, #48]
    .cfi_rel_offset d12, 48
    .cfi_rel_offset d13, 56
    stp     d10, d11, [sp, #32]
    .cfi_rel_offset d10, 32
    .cfi_rel_offset d11, 40
    stp     d8, d9, [sp, #16]
    .cfi_rel_offset d8, 16
    .cfi_rel_offset d9, 24
    mrs     x9, fpcr
    str     x9, [sp]
    mov     x10, sp
    str     x10, [x0]
    .endm

    /* FPCR from the frame at sp; x9 holds the current one. Written only when
     * it differs: a write can stall the FP pipeline, a compare cannot. */
    .macro  load_fpcr
    ldr     x10, [sp]
    cmp     x9, x10
    b.eq    9f
    msr     fpcr, x10
9:
    .endm

    /* Loads what save_context stored and pops its frame. */
    .macro  restore_registers
    ldp     d8, d9, [sp, #16]
    ldp     d10, d11, [sp, #32]
    ldp     d12, d13, [sp, #48]
    ldp     d14, d15, [sp, #64]
    ldp     x19, x20, [sp, #80]
    ldp     x21, x22, [sp, #96]
    ldp     x23, x24, [sp, #112]
    ldp     x25, x26, [sp, #128]
    ldp     x27, x28, [sp, #144]
    ldp     x29, x30, [sp, #160]
    add     sp, sp, #176
    .cfi_adjust_cfa_offset -176
    .cfi_restore x19
    .cfi_restore x20
    .cfi_restore x21
    .cfi_restore x22
    .cfi_restore x23
    .cfi_restore x24
    .cfi_restore x25
    .cfi_restore x26
    .cfi_restore x27
    .cfi_restore x28
    .cfi_restore x29
    .cfi_restore x30
    .cfi_restore d8
    .cfi_restore d9
    .cfi_restore d10
    .cfi_restore d11
    .cfi_restore d12
    .cfi_restore d13
    .cfi_restore d14
    .cfi_restore d15
    .endm

    .text

/*   void* ito_context_switch(void** save_sp, void* load_sp, void* value,
 *                            void* (*on_top)(void* value));
 * x0 save_sp, x1 load_sp, x2 value, x3 on_top. */
    .globl  ito_context_switch
    .type   ito_context_switch, %function
    .p2align 4
ito_context_switch:
    .cfi_startproc
    save_context
    mov     sp, x1
    load_fpcr
    restore_registers
    mov     x0, x2
    cbnz    x3, 1f
    ret
    /* on_top(value) on the resumed stack, as a tail call: it returns straight
     * to the resumed code (lr) with its result in x0. x16: the register a
     * BTI-guarded callee accepts from any indirect branch. */
1:  mov     x16, x3
    br      x16
    .cfi_endproc
    .size   ito_context_switch, .-ito_context_switch

/*   void ito_context_start(void** save_sp, void* stack_top, void* data,
 *                          void* (*on_top)(void*), void* on_top_arg,
 *                          ito_exit_switch (*main)(void* data));
 * x0 save_sp, x1 stack_top (16-aligned), x2 data, x3 on_top, x4 on_top_arg,
 * x5 main. Saves the current context, then calls on_top(on_top_arg) and
 * main(data) on the new stack. Calling main with `blr` (not a `ret` into a
 * made-up frame) keeps the return-address predictor in step with the real
 * stacks, as on x86-64. main returns {next_sp, arg} in x0 and x1. */
    .macro  context_start name
    .globl  \name
    .type   \name, %function
    .p2align 4
\name:
    .cfi_startproc
    save_context
    mov     sp, x1
    /* The new stack's outermost frame: nothing to unwind into below it. */
    .cfi_def_cfa sp, 0
    .cfi_undefined x30
    mov     x29, xzr
    mov     x19, x2
    mov     x20, x5
    cbz     x3, 1f
    mov     x0, x4
    blr     x3
1:  mov     x0, x19
    blr     x20
    b       .Lexit_to
    .cfi_endproc
    .size   \name, .-\name
    .endm

    context_start ito_context_start
/* The same: there is no limit word to load on aarch64 (the scheduler calls it
 * for provider stacks, which split stacks alone use). A copy, not an alias,
 * so that a backtrace names the entry it ran through. */
    context_start ito_context_start_split

/* First code of a context made by make_context (one that was queued before
 * it ever ran): main(data), main in x19, data in x20, then the same exit. */
    .globl  ito_context_trampoline
    .type   ito_context_trampoline, %function
    .p2align 4
ito_context_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    mov     x0, x20
    blr     x19
.Lexit_to:
    /* x0: the context to resume; x1: the exit hook's argument. */
    mov     sp, x0
    /* Now on the resumed context's saved frame (see save_context). */
    .cfi_def_cfa sp, 176
    .cfi_offset x30, -8
    .cfi_offset x29, -16
    .cfi_offset x28, -24
    .cfi_offset x27, -32
    .cfi_offset x26, -40
    .cfi_offset x25, -48
    .cfi_offset x24, -56
    .cfi_offset x23, -64
    .cfi_offset x22, -72
    .cfi_offset x21, -80
    .cfi_offset x20, -88
    .cfi_offset x19, -96
    .cfi_offset d15, -104
    .cfi_offset d14, -112
    .cfi_offset d13, -120
    .cfi_offset d12, -128
    .cfi_offset d11, -136
    .cfi_offset d10, -144
    .cfi_offset d9, -152
    .cfi_offset d8, -160
    mrs     x9, fpcr
    load_fpcr
    restore_registers
    /* ito_ult_exit_hook(arg) on the resumed stack, as a tail call: it
     * returns to the resumed code. A null arg: the finished context left
     * the hook nothing to do. */
    cbz     x1, 4f
    mov     x0, x1
    b       ito_ult_exit_hook
4:  mov     x0, xzr
    ret
    .cfi_endproc
    .size   ito_context_trampoline, .-ito_context_trampoline

    .section .note.GNU-stack,"",%progbits
