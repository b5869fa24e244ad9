/* Context switch for x86-64 System V.
 *
 * A suspended context is a stack pointer; the words above it hold the
 * callee-saved registers, the SSE and x87 control words and the return address.
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
    .text
    .globl  ito_context_switch
    .type   ito_context_switch, @function
    .p2align 4
ito_context_switch:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)

    movq    %rsi, %rsp
    /* Reading MXCSR (stmxcsr) is the slow half, ~4 ns here; loading is cheap. */
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    movq    %rdx, %rax
    testq   %rcx, %rcx
    jnz     3f
    ret
3:  movq    %rdx, %rdi
    subq    $8, %rsp            /* rsp points at the return address: realign */
    call    *%rcx
    addq    $8, %rsp
    ret
    .cfi_endproc
    .size   ito_context_switch, .-ito_context_switch

/* First code of a new context: entry(value, data), entry in r12, data in r13.
 * entry never returns. The undefined return address ends backtraces here. */
    .globl  ito_context_trampoline
    .type   ito_context_trampoline, @function
    .p2align 4
ito_context_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %rax, %rdi
    movq    %r13, %rsi
    call    *%r12
    ud2
    .cfi_endproc
    .size   ito_context_trampoline, .-ito_context_trampoline

    .section .note.GNU-stack,"",@progbits
