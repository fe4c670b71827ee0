/*
 * Entry of the tiny multiboot guest, and the real-mode trampoline that
 * application processors start in after INIT-SIPI-SIPI.
 */
#define MB_MAGIC  0x1BADB002
#define MB_FLAGS  0x00000003      /* page-aligned modules, memory information */

    .section .multiboot, "a"
    .align 4
    .long MB_MAGIC
    .long MB_FLAGS
    .long -(MB_MAGIC + MB_FLAGS)

    .text
    .code32
    .globl _start
_start:
    mov $bsp_stack_top, %esp
    push %ebx                   /* multiboot information */
    push %eax                   /* 0x2BADB002 */
    call tiny_main
1:  hlt
    jmp 1b

/*
 * Copied to TRAMPOLINE_ADDR (0x8000) by the BSP; an AP starts here in real
 * mode with CS = 0x800, IP = 0. It switches to flat protected mode and
 * calls ap_main on the stack the BSP left in ap_stack_top.
 */
#define TRAMPOLINE_ADDR 0x8000
#define REL(x) ((x) - trampoline_start + TRAMPOLINE_ADDR)
    .globl trampoline_start, trampoline_end
    .code16
trampoline_start:
    cli
    xor %ax, %ax
    mov %ax, %ds
    lgdtl REL(tramp_gdt_desc)
    mov %cr0, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x08, $REL(tramp_pm32)
    .code32
tramp_pm32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov ap_stack_top, %esp
    mov $ap_main, %eax          /* absolute: this code runs from a copy */
    call *%eax
2:  hlt
    jmp 2b
    .align 8
tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff    /* 0x08: flat 32-bit code */
    .quad 0x00cf92000000ffff    /* 0x10: flat data */
tramp_gdt_desc:
    .word tramp_gdt_desc - tramp_gdt - 1
    .long REL(tramp_gdt)
trampoline_end:

    .section .note.GNU-stack, "", @progbits

    .bss
    .align 16
    .space 8192
bsp_stack_top:
