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

/*
 * Copied to RESUME_ADDR (0x2000) and named as the FACS waking vector before
 * an S3 suspend: the firmware (SeaBIOS under QEMU, the VMM itself under
 * ours) jumps here in real mode with CS:IP = 0x200:0 on wake-up. It reads
 * the dword at 0x1f00 through DS, as resume code written for QEMU does with
 * DS = 0, prints "tiny: s3 resumed flag=Y" if that is the flag the guest
 * left there (N otherwise: DS is not 0), and exits through isa-debug-exit
 * with 0, that is VMM status 1.
 */
#define RESUME_FLAG 0x33535233
    .globl resume_start, resume_end
    .code16
resume_start:
    cli
    movl 0x1f00, %eax
    mov $'Y', %bl
    cmpl $RESUME_FLAG, %eax
    je 1f
    mov $'N', %bl
1:  mov $0x3f8, %dx
    .irp c, 't','i','n','y',':',' ','s','3',' ','r','e','s','u','m','e','d',' ','f','l','a','g','='
    mov $\c, %al
    out %al, %dx
    .endr
    mov %bl, %al
    out %al, %dx
    mov $'\n', %al
    out %al, %dx
    mov $0xf4, %dx
    xor %al, %al
    out %al, %dx
2:  hlt
    jmp 2b
resume_end:
    .code32

    .section .note.GNU-stack, "", @progbits

    .bss
    .align 16
    .space 8192
bsp_stack_top:
