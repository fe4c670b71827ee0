/*
 * The floor for exit cost: the least a KVM program can do to run the tiny
 * multiboot guest's exit benchmark (tests/functional/tiny, "bench=pio:N" or
 * "bench=mmio:N"). Same guest code, same VM set-up as the VMM (in-kernel
 * irqchip and PIT, the CPUID KVM supports, the same RAM size), but exits
 * are handled by a switch on the port: COM1's data and status registers for
 * the guest's messages, anything else ignored, port 0xf4 ends the run. The
 * guest times its loop with the TSC and prints the result, so the VMM and
 * this program are measured by the same code (tests/bench/exit_cost.py).
 *
 *   kvm-exit-bare TINY_ELF "GUEST COMMAND LINE" [RAM_MIB]
 */
#include <elf.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB_INFO_ADDR    0x7000
#define MB_CMDLINE_ADDR 0x7100
#define COM1            0x3f8

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* Load the PT_LOAD segments of a 32-bit ELF; returns its entry point. */
static uint32_t load_elf(const char *path, uint8_t *ram, size_t ram_size)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        die(path);
    }
    uint8_t *image = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (image == MAP_FAILED) {
        die(path);
    }
    const Elf32_Ehdr *eh = (const void *)image;
    for (int i = 0; i < eh->e_phnum; i++) {
        const Elf32_Phdr *ph = (const void *)(image + eh->e_phoff + i * eh->e_phentsize);
        if (ph->p_type != PT_LOAD) {
            continue;
        }
        if (ph->p_paddr + ph->p_memsz > ram_size || ph->p_offset + ph->p_filesz > (size_t)st.st_size) {
            fprintf(stderr, "%s: segment outside RAM or file\n", path);
            exit(1);
        }
        memcpy(ram + ph->p_paddr, image + ph->p_offset, ph->p_filesz);
    }
    return eh->e_entry;
}

static void set_cpuid(int kvm, int vcpu)
{
    int n = 256;
    struct kvm_cpuid2 *cpuid = calloc(1, sizeof(*cpuid) + n * sizeof(cpuid->entries[0]));
    cpuid->nent = n;
    if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid) < 0 || ioctl(vcpu, KVM_SET_CPUID2, cpuid) < 0) {
        die("CPUID");
    }
    free(cpuid);
}

static void set_protected_mode(int vcpu, uint32_t entry, uint32_t info)
{
    struct kvm_sregs sregs;
    ioctl(vcpu, KVM_GET_SREGS, &sregs);
    struct kvm_segment flat = {
        .limit = 0xffffffff, .present = 1, .s = 1, .g = 1, .db = 1, .type = 3, .selector = 0x18,
    };
    sregs.ds = sregs.es = sregs.ss = sregs.fs = sregs.gs = flat;
    flat.type = 0xb;
    flat.selector = 0x10;
    sregs.cs = flat;
    sregs.cr0 = 0x11;
    if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0) {
        die("KVM_SET_SREGS");
    }
    struct kvm_regs regs = { .rip = entry, .rax = 0x2BADB002, .rbx = info, .rflags = 2 };
    if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0) {
        die("KVM_SET_REGS");
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s TINY_ELF \"COMMAND LINE\" [RAM_MIB]\n", argv[0]);
        return 1;
    }
    size_t ram_size = (argc > 3 ? strtoul(argv[3], NULL, 0) : 64) << 20;
    int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    int vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
    if (vm < 0) {
        die("/dev/kvm");
    }
    struct kvm_pit_config pit = { .flags = 0 };
    if (ioctl(vm, KVM_SET_TSS_ADDR, 0xfeffd000UL) < 0 || ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0 ||
        ioctl(vm, KVM_CREATE_PIT2, &pit) < 0) {
        die("in-kernel irqchip and PIT");
    }
    uint8_t *ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct kvm_userspace_memory_region region = {
        .memory_size = ram_size, .userspace_addr = (uintptr_t)ram,
    };
    if (ram == MAP_FAILED || ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
        die("guest RAM");
    }
    uint32_t entry = load_elf(argv[1], ram, ram_size);
    /* Multiboot information with just a command line (flags bit 2). */
    uint32_t info[4] = { 1 << 2, 0, 0, 0 };
    info[0] = 1 << 2;
    memcpy(ram + MB_INFO_ADDR, info, sizeof(info));
    uint32_t cmdline = MB_CMDLINE_ADDR;
    memcpy(ram + MB_INFO_ADDR + 16, &cmdline, 4);
    snprintf((char *)ram + MB_CMDLINE_ADDR, 256, "%s", argv[2]);

    int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    struct kvm_run *run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (vcpu < 0 || run == MAP_FAILED) {
        die("vCPU");
    }
    set_cpuid(kvm, vcpu);
    set_protected_mode(vcpu, entry, MB_INFO_ADDR);

    for (;;) {
        if (ioctl(vcpu, KVM_RUN, 0) < 0) {
            die("KVM_RUN");
        }
        if (run->exit_reason == KVM_EXIT_MMIO) {
            continue;
        }
        if (run->exit_reason != KVM_EXIT_IO) {
            fprintf(stderr, "unexpected exit %u\n", run->exit_reason);
            return 1;
        }
        uint8_t *data = (uint8_t *)run + run->io.data_offset;
        if (run->io.port == 0xf4) {
            return 0;
        } else if (run->io.port == COM1 && run->io.direction == KVM_EXIT_IO_OUT) {
            putchar(*data);
        } else if (run->io.port == COM1 + 5 && run->io.direction == KVM_EXIT_IO_IN) {
            *data = 0x60;           /* LSR: transmitter empty */
        }
    }
}
