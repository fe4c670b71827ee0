/*
 * Direct kernel boot: what the bzImage, PVH and multiboot loaders share
 * (guest RAM access, boot GDT and page tables, files, ELF) and the format
 * dispatch of x86_load_kernel().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "loader-internal.h"

void *guest_memory_ptr(const GuestMemory *mem, uint64_t gpa, uint64_t len)
{
    if (mem->host && gpa <= mem->below_4g && len <= mem->below_4g - gpa) {
        return mem->host + gpa;
    }
    if (mem->host_high && gpa >= BOOT_4GIB) {
        uint64_t offset = gpa - BOOT_4GIB;
        if (offset <= mem->above_4g && len <= mem->above_4g - offset) {
            return mem->host_high + offset;
        }
    }
    return NULL;
}

/* ---- boot CPU state: GDT and identity page tables ---- */

#define GDT_CODE64  0x00af9b000000ffffULL   /* flat, L=1, execute/read, accessed */
#define GDT_CODE32  0x00cf9b000000ffffULL   /* flat, D=1, execute/read, accessed */
#define GDT_DATA    0x00cf93000000ffffULL   /* flat, read/write, accessed */
#define BOOT_CODE_SELECTOR 0x10
#define BOOT_DATA_SELECTOR 0x18

void boot_setup_gdt(GuestMemory *mem, BootCpuState *cpu, uint64_t gdt_addr)
{
    /* The Linux boot protocol fixes __BOOT_CS = 0x10 and __BOOT_DS = 0x18;
     * the other loaders use the same layout. The descriptors are marked
     * accessed so the CPU never needs to write to the table. */
    const uint64_t gdt[4] = {
        0, 0,
        cpu->mode == BOOT_CPU_LONG64 ? GDT_CODE64 : GDT_CODE32,
        GDT_DATA,
    };
    uint8_t *dst = guest_memory_ptr(mem, gdt_addr, sizeof(gdt));
    g_assert(dst);
    memcpy(dst, gdt, sizeof(gdt));
    cpu->gdt_base = gdt_addr;
    cpu->gdt_limit = sizeof(gdt) - 1;
    cpu->code_selector = BOOT_CODE_SELECTOR;
    cpu->data_selector = BOOT_DATA_SELECTOR;
}

#define PTE_PRESENT  0x1ULL
#define PTE_WRITE    0x2ULL
#define PTE_HUGE     0x80ULL    /* PS: a 2 MiB page in a page directory */
#define PAGE_DIRS    4          /* one per GiB */

void boot_setup_identity_paging(GuestMemory *mem, BootCpuState *cpu)
{
    /* PML4, one PDPT and four page directories of 2 MiB pages fill
     * 0x9000-0xefff exactly and map the first 4 GiB 1:1. */
    const uint64_t pdpt_addr = BOOT_PML4_ADDR + BOOT_PAGE_SIZE;
    const uint64_t pd_addr = pdpt_addr + BOOT_PAGE_SIZE;
    uint64_t *pml4 = guest_memory_ptr(mem, BOOT_PML4_ADDR,
                                      (2 + PAGE_DIRS) * BOOT_PAGE_SIZE);
    g_assert(pml4);
    uint64_t *pdpt = pml4 + 512;
    uint64_t *pd = pdpt + 512;

    memset(pml4, 0, 2 * BOOT_PAGE_SIZE);
    pml4[0] = pdpt_addr | PTE_PRESENT | PTE_WRITE;
    for (unsigned i = 0; i < PAGE_DIRS; i++) {
        pdpt[i] = (pd_addr + i * BOOT_PAGE_SIZE) | PTE_PRESENT | PTE_WRITE;
    }
    for (uint64_t i = 0; i < PAGE_DIRS * 512; i++) {
        pd[i] = (i << 21) | PTE_PRESENT | PTE_WRITE | PTE_HUGE;
    }
    cpu->cr3 = BOOT_PML4_ADDR;
}

/* ---- guest RAM helpers ---- */

BootDataArea boot_data_area_fixed(void)
{
    return (BootDataArea) {
        .gdt = BOOT_GDT_ADDR, .info = BOOT_INFO_ADDR, .cmdline = BOOT_CMDLINE_ADDR,
        .aux = BOOT_AUX_ADDR, .end = BOOT_AUX_ADDR + BOOT_AUX_MAX,
    };
}

/* Same parts and sizes as the fixed area, from base up. */
BootDataArea boot_data_area_at(uint64_t base)
{
    uint64_t cmdline = base + 2 * BOOT_PAGE_SIZE;
    return (BootDataArea) {
        .gdt = base, .info = base + BOOT_PAGE_SIZE, .cmdline = cmdline,
        .aux = cmdline + BOOT_CMDLINE_MAX, .end = cmdline + BOOT_CMDLINE_MAX + BOOT_AUX_MAX,
    };
}

bool boot_place_data_area(BootLoad *bl, BootDataArea area, Error **errp)
{
    if (area.end > bl->ram_top || !e820_range_is_ram(bl->cfg->e820, area.gdt,
                                                      area.end - area.gdt) ||
        !guest_memory_ptr(bl->mem, area.gdt, area.end - area.gdt)) {
        error_setg(errp, "no room in RAM for the boot information at 0x%" PRIx64
                   "-0x%" PRIx64, area.gdt, area.end);
        return false;
    }
    bl->area = area;
    bl->aux_next = area.aux;
    bl->area_unplaced = false;
    return true;
}

static bool ranges_meet(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_end)
{
    return a_len && a < b_end && a + a_len > b;
}

bool boot_check_load_range(BootLoad *bl, uint64_t gpa, uint64_t len,
                           const char *what, Error **errp)
{
    const uint64_t reserved_start = bl->area.gdt;
    const uint64_t reserved_end = bl->area.end;

    if (gpa + len < gpa || !e820_range_is_ram(bl->cfg->e820, gpa, len) ||
        !guest_memory_ptr(bl->mem, gpa, len)) {
        error_setg(errp, "%s at 0x%" PRIx64 "-0x%" PRIx64 " is outside guest RAM",
                   what, gpa, gpa + len);
        return false;
    }
    if (bl->area_unplaced) {
        bl->kernel_in_fixed_area |= ranges_meet(gpa, len, reserved_start, reserved_end);
    } else if (ranges_meet(gpa, len, reserved_start, reserved_end)) {
        error_setg(errp, "%s at 0x%" PRIx64 "-0x%" PRIx64 " overlaps the boot "
                   "loader's data at 0x%" PRIx64 "-0x%" PRIx64,
                   what, gpa, gpa + len, reserved_start, reserved_end);
        return false;
    }
    return true;
}

void boot_write_fixed(BootLoad *bl, uint64_t gpa, const void *data, size_t len)
{
    void *dst = guest_memory_ptr(bl->mem, gpa, len);
    g_assert(dst);
    memcpy(dst, data, len);
}

bool boot_aux_add(BootLoad *bl, const void *data, size_t len, uint64_t *gpa,
                  Error **errp)
{
    uint64_t start = boot_align_up(bl->aux_next, 8);
    if (len > bl->area.end - start) {
        error_setg(errp, "boot information does not fit in %llu KiB "
                   "(too many or too long modules?)", BOOT_AUX_MAX / 1024);
        return false;
    }
    boot_write_fixed(bl, start, data, len);
    bl->aux_next = start + len;
    *gpa = start;
    return true;
}

bool boot_write_cmdline(BootLoad *bl, const char *cmdline, uint64_t max_len,
                        Error **errp)
{
    size_t len = strlen(cmdline);
    max_len = MIN(max_len, BOOT_CMDLINE_MAX - 1);
    if (len > max_len) {
        error_setg(errp, "kernel command line is %zu bytes long, but the kernel "
                   "accepts at most %" PRIu64, len, max_len);
        return false;
    }
    boot_write_fixed(bl, bl->area.cmdline, cmdline, len + 1);
    return true;
}

/* ---- files ---- */

static int boot_file_open(const char *path, uint64_t *size, Error **errp)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error_setg_errno(errp, errno, "could not open '%s'", path);
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        error_setg(errp, "'%s' is not a regular file", path);
        close(fd);
        return -1;
    }
    *size = st.st_size;
    return fd;
}

static bool boot_file_read(int fd, const char *path, uint8_t *dst, uint64_t size,
                           Error **errp)
{
    uint64_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, dst + done, MIN(size - done, 1ULL << 30), done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            error_setg_errno(errp, errno, "could not read '%s'", path);
            return false;
        }
        if (n == 0) {
            error_setg(errp, "'%s' shrank while it was being loaded", path);
            return false;
        }
        done += n;
    }
    return true;
}

bool boot_file_size(const char *path, uint64_t *size, Error **errp)
{
    int fd = boot_file_open(path, size, errp);
    if (fd < 0) {
        return false;
    }
    close(fd);
    return true;
}

bool boot_file_load(BootLoad *bl, const char *path, uint64_t gpa, uint64_t size,
                    Error **errp)
{
    uint64_t actual;
    int fd = boot_file_open(path, &actual, errp);
    if (fd < 0) {
        return false;
    }
    uint8_t *dst = guest_memory_ptr(bl->mem, gpa, size);
    g_assert(dst);
    bool ok = boot_file_read(fd, path, dst, size, errp);
    close(fd);
    return ok;
}

bool boot_load_initrd_high(BootLoad *bl, uint64_t floor, uint64_t ceiling,
                           uint64_t *gpa, uint64_t *size, Error **errp)
{
    const char *path = bl->cfg->initrd;
    if (!boot_file_size(path, size, errp)) {
        return false;
    }
    uint64_t start = ceiling >= *size ? (ceiling - *size) & ~(BOOT_PAGE_SIZE - 1) : 0;
    if (ceiling < *size || start < floor) {
        error_setg(errp, "initrd '%s' (%" PRIu64 " bytes) does not fit in guest "
                   "RAM between the kernel end 0x%" PRIx64 " and 0x%" PRIx64,
                   path, *size, floor, ceiling);
        return false;
    }
    if (!boot_check_load_range(bl, start, *size, "initrd", errp)) {
        return false;
    }
    *gpa = start;
    return boot_file_load(bl, path, start, *size, errp);
}

/* ---- ELF ---- */

/* Offsets of the ELF header and program header fields per class. */
typedef struct ElfLayout {
    size_t ehdr_size, phdr_size;
    size_t e_phoff, e_phentsize, e_phnum;
    size_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz;
} ElfLayout;

static const ElfLayout elf32_layout = {
    .ehdr_size = 52, .phdr_size = 32,
    .e_phoff = 0x1c, .e_phentsize = 0x2a, .e_phnum = 0x2c,
    .p_offset = 4, .p_vaddr = 8, .p_paddr = 12, .p_filesz = 16, .p_memsz = 20,
};

static const ElfLayout elf64_layout = {
    .ehdr_size = 64, .phdr_size = 56,
    .e_phoff = 0x20, .e_phentsize = 0x36, .e_phnum = 0x38,
    .p_offset = 8, .p_vaddr = 0x10, .p_paddr = 0x18, .p_filesz = 0x20, .p_memsz = 0x28,
};

static bool elf_is64(const uint8_t *image)
{
    return image[4] == ELF_CLASS64;
}

static uint64_t elf_ld_word(const uint8_t *image, const uint8_t *p)
{
    return elf_is64(image) ? get_le64(p) : get_le32(p);
}

int elf_class(const uint8_t *image, size_t size)
{
    if (size < 64 || memcmp(image, "\x7f" "ELF", 4) != 0 || image[5] != 1 ||
        (image[4] != ELF_CLASS32 && image[4] != ELF_CLASS64)) {
        return 0;
    }
    const ElfLayout *l = elf_is64(image) ? &elf64_layout : &elf32_layout;
    uint64_t phoff = elf_ld_word(image, image + l->e_phoff);
    uint64_t phentsize = get_le16(image + l->e_phentsize);
    uint64_t phnum = get_le16(image + l->e_phnum);
    if (phentsize < l->phdr_size || phoff > size ||
        phnum * phentsize > size - phoff) {
        return 0;
    }
    return image[4];
}

uint64_t elf_entry(const uint8_t *image)
{
    return elf_ld_word(image, image + 0x18);
}

unsigned elf_segment_count(const uint8_t *image)
{
    const ElfLayout *l = elf_is64(image) ? &elf64_layout : &elf32_layout;
    return get_le16(image + l->e_phnum);
}

ElfSegment elf_segment(const uint8_t *image, unsigned index)
{
    const ElfLayout *l = elf_is64(image) ? &elf64_layout : &elf32_layout;
    const uint8_t *ph = image + elf_ld_word(image, image + l->e_phoff) +
                        (uint64_t)index * get_le16(image + l->e_phentsize);
    return (ElfSegment) {
        .type = get_le32(ph),
        .offset = elf_ld_word(image, ph + l->p_offset),
        .vaddr = elf_ld_word(image, ph + l->p_vaddr),
        .paddr = elf_ld_word(image, ph + l->p_paddr),
        .filesz = elf_ld_word(image, ph + l->p_filesz),
        .memsz = elf_ld_word(image, ph + l->p_memsz),
    };
}

static bool elf_load_segment(BootLoad *bl, unsigned index, const ElfSegment *seg,
                             Error **errp)
{
    char what[32];
    snprintf(what, sizeof(what), "ELF segment %u", index);
    if (seg->filesz > seg->memsz || seg->offset > bl->size ||
        seg->filesz > bl->size - seg->offset) {
        error_setg(errp, "%s is truncated or malformed (offset 0x%" PRIx64
                   ", file size 0x%" PRIx64 ", memory size 0x%" PRIx64 ")",
                   what, seg->offset, seg->filesz, seg->memsz);
        return false;
    }
    if (!boot_check_load_range(bl, seg->paddr, seg->memsz, what, errp)) {
        return false;
    }
    uint8_t *dst = guest_memory_ptr(bl->mem, seg->paddr, seg->memsz);
    memcpy(dst, bl->image + seg->offset, seg->filesz);
    memset(dst + seg->filesz, 0, seg->memsz - seg->filesz);
    return true;
}

bool elf_load_segments(BootLoad *bl, uint64_t *end, Error **errp)
{
    unsigned count = elf_segment_count(bl->image);
    *end = 0;
    for (unsigned i = 0; i < count; i++) {
        ElfSegment seg = elf_segment(bl->image, i);
        if (seg.type != ELF_PT_LOAD || seg.memsz == 0) {
            continue;
        }
        if (!elf_load_segment(bl, i, &seg, errp)) {
            return false;
        }
        *end = MAX(*end, seg.paddr + seg.memsz);
    }
    if (*end == 0) {
        error_setg(errp, "ELF image has no loadable segment");
        return false;
    }
    return true;
}

/* ---- format dispatch ---- */

static bool boot_check_low_memory(const KernelBootConfig *cfg, GuestMemory *mem,
                                  Error **errp)
{
    /* The fixed boot structures live in the first 640 KiB; the kernel and
     * initrd go in the RAM that starts at 1 MiB. */
    if (!guest_memory_ptr(mem, 0, BOOT_STACK_TOP) ||
        !e820_range_is_ram(cfg->e820, BOOT_GDT_ADDR, BOOT_STACK_TOP - BOOT_GDT_ADDR) ||
        !e820_range_is_ram(cfg->e820, BOOT_HIGH_MEM_START, 1)) {
        error_setg(errp, "direct kernel boot needs RAM at 0x%llx-0x%llx and "
                   "above 1 MiB", BOOT_GDT_ADDR, BOOT_STACK_TOP);
        return false;
    }
    return true;
}

static bool boot_read_kernel(const char *path, const GuestMemory *mem,
                             uint8_t **image, size_t *size, Error **errp)
{
    uint64_t file_size;
    int fd = boot_file_open(path, &file_size, errp);
    if (fd < 0) {
        return false;
    }
    /* A kernel bigger than guest RAM cannot be loaded; checking first keeps
     * a huge file from exhausting host memory. */
    if (file_size > mem->below_4g + mem->above_4g) {
        error_setg(errp, "'%s' (%" PRIu64 " bytes) is larger than guest RAM",
                   path, file_size);
        close(fd);
        return false;
    }
    *image = g_malloc(file_size);
    *size = file_size;
    bool ok = boot_file_read(fd, path, *image, file_size, errp);
    close(fd);
    if (!ok) {
        g_free(*image);
    }
    return ok;
}

static bool boot_load_image(BootLoad *bl, Error **errp)
{
    long mb_offset;
    uint64_t pvh_entry;

    if (bl->size >= 0x206 && memcmp(bl->image + 0x202, "HdrS", 4) == 0) {
        return linux_load_bzimage(bl, errp);
    }
    mb_offset = multiboot_find_header(bl->image, bl->size);
    if (mb_offset >= 0) {
        return multiboot_load(bl, mb_offset, errp);
    }
    pvh_entry = pvh_find_entry(bl->image, bl->size);
    if (pvh_entry) {
        return pvh_load(bl, pvh_entry, errp);
    }
    mb_offset = multiboot_scan(bl->image, bl->size, false);
    if (mb_offset >= 0) {
        error_setg(errp, "multiboot header at offset 0x%lx has a bad checksum",
                   mb_offset);
        return false;
    }
    error_setg(errp, "not a Linux bzImage, multiboot or PVH ELF kernel");
    return false;
}

bool x86_load_kernel(const KernelBootConfig *cfg, GuestMemory *mem,
                     BootCpuState *cpu, Error **errp)
{
    BootLoad bl = {
        .cfg = cfg, .mem = mem, .cpu = cpu, .area = boot_data_area_fixed(),
    };
    bl.aux_next = bl.area.aux;
    uint8_t *image;

    g_assert(cfg->e820);
    *cpu = (BootCpuState) { .rsp = BOOT_STACK_TOP };
    if (!boot_check_low_memory(cfg, mem, errp) ||
        !boot_read_kernel(cfg->kernel_path, mem, &image, &bl.size, errp)) {
        return false;
    }
    bl.image = image;
    bl.ram_top = MIN(e820_ram_run_end(cfg->e820, BOOT_HIGH_MEM_START), BOOT_4GIB);
    bl.ram_top = MIN(bl.ram_top, mem->below_4g);
    memset(guest_memory_ptr(mem, BOOT_INFO_ADDR, BOOT_PAGE_SIZE), 0, BOOT_PAGE_SIZE);

    bool ok = boot_load_image(&bl, errp);
    g_free(image);
    if (!ok) {
        error_prepend(errp, "%s: ", cfg->kernel_path);
    }
    return ok;
}
