/*
 * Direct kernel boot without firmware: -kernel/-initrd/-append.
 *
 * x86_load_kernel() recognises the kernel format the way QEMU does: a Linux
 * bzImage (setup header magic "HdrS") is started at its 64-bit entry point;
 * otherwise a multiboot v1 kernel (header in the first 8 KiB) is loaded;
 * otherwise an ELF kernel with a PVH entry note (uncompressed vmlinux);
 * anything else is refused with a clear error. The loader writes the kernel,
 * initrd/modules, command line, boot information structure, GDT and (for
 * 64-bit entry) identity page tables into guest RAM and returns the register
 * state the boot CPU must start with.
 */
#ifndef HW_I386_BOOT_H
#define HW_I386_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hw/i386/e820.h"
#include "qemu/error.h"

/* Guest RAM as the loaders see it: GPA [0, below_4g) at host, and GPA
 * [4 GiB, 4 GiB + above_4g) at host_high. */
typedef struct GuestMemory {
    uint8_t *host;
    uint64_t below_4g;
    uint8_t *host_high;
    uint64_t above_4g;
} GuestMemory;

/* Host pointer for guest-physical [gpa, gpa + len), or NULL unless the whole
 * range is RAM. */
void *guest_memory_ptr(const GuestMemory *mem, uint64_t gpa, uint64_t len);

/* Fixed low-memory layout used by the loaders (below the EBDA at 0x9fc00). */
#define BOOT_GDT_ADDR        0x00000500ULL
#define BOOT_INFO_ADDR       0x00007000ULL  /* zero page / multiboot info / PVH start info */
#define BOOT_PML4_ADDR       0x00009000ULL  /* 0x9000-0xefff: identity page tables */
#define BOOT_CMDLINE_ADDR    0x00020000ULL
#define BOOT_CMDLINE_MAX     0x00010000ULL
#define BOOT_AUX_ADDR        0x00030000ULL  /* multiboot module list, memory map, strings */
#define BOOT_AUX_MAX         0x00010000ULL
#define BOOT_STACK_TOP       0x0008f000ULL

typedef enum BootCpuMode {
    BOOT_CPU_REAL16,        /* real mode at code_selector:rip (S3 resume) */
    BOOT_CPU_PROTECTED32,   /* flat 32-bit protected mode, paging off */
    BOOT_CPU_LONG64,        /* 64-bit long mode, identity-mapped paging */
} BootCpuMode;

/* The boot CPU's starting state. Segment selectors index the GDT written
 * at BOOT_GDT_ADDR: 0x10 is the code segment (64-bit in LONG64, 32-bit in
 * PROTECTED32), 0x18 the flat data segment. */
typedef struct BootCpuState {
    BootCpuMode mode;
    uint64_t rip;
    uint64_t rax, rbx, rsi, rsp;
    uint64_t gdt_base;
    uint16_t gdt_limit;
    uint16_t code_selector, data_selector;
    uint64_t cr3;           /* LONG64 only */
} BootCpuState;

typedef struct KernelBootConfig {
    const char *kernel_path;
    /* Linux/PVH: one initrd file. Multiboot: comma-separated module list,
     * each "path args..."; ",," stands for a literal comma (as in QEMU). */
    const char *initrd;
    const char *cmdline;        /* -append; NULL means empty */
    const E820Table *e820;      /* the machine's memory map */
    uint64_t rsdp_addr;         /* ACPI RSDP for PVH start info, 0 if none */
} KernelBootConfig;

bool x86_load_kernel(const KernelBootConfig *cfg, GuestMemory *mem,
                     BootCpuState *cpu, Error **errp);

/* ---- pieces, exposed for unit tests ---- */

/* The parts of a bzImage setup header the loader uses. */
typedef struct BzImageHeader {
    uint16_t protocol;          /* e.g. 0x020f */
    uint8_t setup_sects;
    uint8_t loadflags;
    uint16_t xloadflags;
    uint32_t initrd_addr_max;
    uint32_t cmdline_size;      /* protocol >= 2.06, else 255 */
    uint32_t kernel_alignment;
    uint8_t relocatable_kernel;
    uint64_t pref_address;
    uint32_t init_size;
    uint32_t payload_offset, payload_length;
    size_t setup_size;          /* bytes of real-mode setup code, incl. boot sector */
} BzImageHeader;

/* Parse and validate a bzImage header; false and *errp if the image is not
 * a bzImage we can boot (too old, no 64-bit entry, truncated...). */
bool bzimage_parse_header(const uint8_t *image, size_t size, BzImageHeader *hdr,
                          Error **errp);
/* Offset of a multiboot v1 header in the first 8 KiB, or -1. */
long multiboot_find_header(const uint8_t *image, size_t size);
/* The PVH entry point (XEN_ELFNOTE_PHYS32_ENTRY) of an ELF image, or 0. */
uint64_t pvh_find_entry(const uint8_t *image, size_t size);

/* Write the boot GDT at gdt_addr (BOOT_GDT_ADDR but for a relocated
 * multiboot load) and fill cpu's gdt/selector fields; for LONG64 also the
 * identity map of the first 4 GiB (2 MiB pages). */
void boot_setup_gdt(GuestMemory *mem, BootCpuState *cpu, uint64_t gdt_addr);
void boot_setup_identity_paging(GuestMemory *mem, BootCpuState *cpu);

#endif
