/*
 * The smallest multiboot v1 kernel: prints "tiny-hello" on COM1 and exits
 * through isa-debug-exit (port 0xf4) with value 5, so the VMM's exit status
 * is (5 << 1) | 1 = 11. Used to check that the bench harness runs guests
 * directly on any /dev/kvm, kvm_pvm included.
 */
    .text
    .code32
    .align 4
multiboot_header:
    .long 0x1BADB002            /* magic */
    .long 0                     /* flags: nothing requested */
    .long -0x1BADB002           /* checksum: magic + flags + checksum == 0 */

    .globl _start
_start:
    mov $message, %esi
1:  lodsb
    test %al, %al
    jz 2f
    mov $0x3f8, %dx
    out %al, %dx
    jmp 1b
2:  mov $0xf4, %dx
    mov $5, %al
    out %al, %dx
    hlt
    jmp 2b

    .section .note.GNU-stack, "", @progbits
    .data
message:
    .asciz "tiny-hello\n"
