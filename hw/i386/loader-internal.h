/*
 * Private to the direct kernel loaders of hw/i386: the state of one load
 * and the helpers the bzImage, PVH and multiboot loaders share.
 */
#ifndef HW_I386_LOADER_INTERNAL_H
#define HW_I386_LOADER_INTERNAL_H

#include <inttypes.h>
#include <glib.h>
#include "hw/i386/boot.h"
#include "qemu/byte-order.h"  /* get_le16/32/64 for the image headers */

/* Boot structures are built as host structs and copied into the guest:
 * only a little-endian host (which an x86 KVM host is) lays them out as
 * the guest expects. */
G_STATIC_ASSERT(G_BYTE_ORDER == G_LITTLE_ENDIAN);

#define BOOT_PAGE_SIZE      0x1000ULL
#define BOOT_HIGH_MEM_START 0x100000ULL  /* 1 MiB */
#define BOOT_4GIB           0x100000000ULL

/*
 * Where the loader puts its own data: the boot GDT, the boot information
 * structure (zero page, multiboot information, PVH start info), the
 * command line, and the aux area for everything else. Normally the fixed
 * low-memory addresses of hw/i386/boot.h (BOOT_GDT_ADDR to BOOT_AUX_ADDR +
 * BOOT_AUX_MAX). A multiboot kernel may have a segment there (real-mode
 * test kernels are linked at 0x8000): the area then follows the kernel's
 * image, as QEMU places its multiboot information.
 */
typedef struct BootDataArea {
    uint64_t gdt, info, cmdline, aux, end;
} BootDataArea;

/* One kernel load in progress. */
typedef struct BootLoad {
    const KernelBootConfig *cfg;
    GuestMemory *mem;
    BootCpuState *cpu;
    const uint8_t *image;       /* the whole kernel file */
    size_t size;
    uint64_t ram_top;           /* end of the RAM that starts at 1 MiB, <= 4 GiB */
    BootDataArea area;
    uint64_t aux_next;          /* first free byte of the area's aux part */
    /* Multiboot: the kernel is loaded before the area is placed, so its
     * ranges are not checked against the area but only noted
     * (kernel_in_fixed_area); multiboot_load then places it. */
    bool area_unplaced;
    bool kernel_in_fixed_area;
} BootLoad;

/* The fixed low-memory area, or one of the same shape at base. */
BootDataArea boot_data_area_fixed(void);
BootDataArea boot_data_area_at(uint64_t base);
/* Use area for the rest of the load; false if it is not RAM. */
bool boot_place_data_area(BootLoad *bl, BootDataArea area, Error **errp);

/* The three formats; errors need not name the kernel file (the caller
 * prefixes its path). */
bool linux_load_bzimage(BootLoad *bl, Error **errp);
bool pvh_load(BootLoad *bl, uint64_t entry, Error **errp);
bool multiboot_load(BootLoad *bl, long header_offset, Error **errp);
/* multiboot_find_header(), optionally without checking the checksum. */
long multiboot_scan(const uint8_t *image, size_t size, bool want_checksum);

/* ---- e820.c ---- */

/* End of the run of adjacent E820_RAM entries that contains addr, or 0. */
uint64_t e820_ram_run_end(const E820Table *e820, uint64_t addr);
/* True if [addr, addr + len) lies in one run of adjacent E820_RAM entries. */
bool e820_range_is_ram(const E820Table *e820, uint64_t addr, uint64_t len);

/* ---- boot-common.c ---- */

static inline uint64_t boot_align_up(uint64_t value, uint64_t align)
{
    return (value + align - 1) & ~(align - 1);
}

/* Check that the image may be loaded at [gpa, gpa + len): RAM in the memory
 * map, backed by guest memory, clear of the loader's own data area.
 * "what" names the piece in the error ("segment 2", "kernel"...). */
bool boot_check_load_range(BootLoad *bl, uint64_t gpa, uint64_t len,
                           const char *what, Error **errp);
/* Copy into the loader's data area (checked when it was placed). */
void boot_write_fixed(BootLoad *bl, uint64_t gpa, const void *data, size_t len);
/* Copy data into the area's aux part, 8-byte aligned; its address in *gpa. */
bool boot_aux_add(BootLoad *bl, const void *data, size_t len, uint64_t *gpa,
                  Error **errp);
/* Write the NUL-terminated command line at bl->area.cmdline; max_len is
 * the longest line (without NUL) the kernel accepts. */
bool boot_write_cmdline(BootLoad *bl, const char *cmdline, uint64_t max_len,
                        Error **errp);

/* The size of a file, for placing it before loading it. */
bool boot_file_size(const char *path, uint64_t *size, Error **errp);
/* Read exactly size bytes of path into guest RAM at gpa (range checked by
 * the caller). */
bool boot_file_load(BootLoad *bl, const char *path, uint64_t gpa, uint64_t size,
                    Error **errp);
/* Load the initrd file page-aligned as high as it fits in [floor, ceiling). */
bool boot_load_initrd_high(BootLoad *bl, uint64_t floor, uint64_t ceiling,
                           uint64_t *gpa, uint64_t *size, Error **errp);

/* ---- ELF (little endian, 32- or 64-bit), in boot-common.c ---- */

enum {
    ELF_PT_LOAD = 1,
    ELF_PT_NOTE = 4,
    ELF_CLASS32 = 1,
    ELF_CLASS64 = 2,
};

typedef struct ElfSegment {
    uint32_t type;
    uint64_t offset, vaddr, paddr, filesz, memsz;
} ElfSegment;

/* ELF_CLASS32/64 for a little-endian ELF image with an intact header and
 * program header table, else 0. */
int elf_class(const uint8_t *image, size_t size);
uint64_t elf_entry(const uint8_t *image);
unsigned elf_segment_count(const uint8_t *image);
ElfSegment elf_segment(const uint8_t *image, unsigned index);
/* Load every PT_LOAD segment at its p_paddr; *end is the highest loaded
 * byte + 1. */
bool elf_load_segments(BootLoad *bl, uint64_t *end, Error **errp);

#endif
