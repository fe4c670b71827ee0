/*
 * Multiboot v1 (specification 0.6.96): a 32-bit ELF kernel, or any image
 * whose header gives its load addresses (the "a.out kludge", flag 16). The
 * kernel starts in flat 32-bit protected mode with %eax = 0x2BADB002 and
 * %ebx pointing at the multiboot information structure.
 *
 * As in QEMU, the kernel command line is "<kernel path> <-append text>" and
 * -initrd is a comma-separated module list ("path args,path args"; ",," is
 * a literal comma), each module's string being its whole entry.
 */
#include <string.h>
#include "loader-internal.h"

#define MB_HEADER_MAGIC       0x1BADB002
#define MB_BOOTLOADER_MAGIC   0x2BADB002
#define MB_SEARCH_BYTES       8192
#define MB_HEADER_MIN_SIZE    12        /* magic, flags, checksum */

/* Header flags: bits 0-15 are requirements, bits 16-31 optional. */
#define MB_FLAG_PAGE_ALIGN    (1u << 0)     /* we always page-align modules */
#define MB_FLAG_MEMORY_INFO   (1u << 1)     /* we always pass mem_* and mmap */
#define MB_FLAG_VIDEO_MODE    (1u << 2)     /* ignored but accepted, as QEMU does */
#define MB_FLAG_AOUT_KLUDGE   (1u << 16)
#define MB_FLAGS_REQUIRED     0xffffu
#define MB_FLAGS_SUPPORTED    (MB_FLAG_PAGE_ALIGN | MB_FLAG_MEMORY_INFO | \
                               MB_FLAG_VIDEO_MODE)

/* Information structure flags. */
#define MBI_MEMORY            (1u << 0)
#define MBI_CMDLINE           (1u << 2)
#define MBI_MODS              (1u << 3)
#define MBI_MMAP              (1u << 6)
#define MBI_LOADER_NAME       (1u << 9)

#define MB_LOADER_NAME        "qemu-pdl"
#define MB_LOWER_MEM_MAX      (640 * 1024)

typedef struct MultibootHeader {
    uint32_t magic, flags, checksum;
    uint32_t header_addr, load_addr, load_end_addr, bss_end_addr, entry_addr;
} MultibootHeader;

struct multiboot_info {
    uint32_t flags;
    uint32_t mem_lower, mem_upper;
    uint32_t boot_device;
    uint32_t cmdline;
    uint32_t mods_count, mods_addr;
    uint32_t syms[4];
    uint32_t mmap_length, mmap_addr;
    uint32_t drives_length, drives_addr;
    uint32_t config_table;
    uint32_t boot_loader_name;
    uint32_t apm_table;
    uint32_t vbe[4];
};
G_STATIC_ASSERT(sizeof(struct multiboot_info) == 88);

struct multiboot_module {
    uint32_t mod_start, mod_end;    /* end is exclusive */
    uint32_t string;
    uint32_t reserved;
};

struct __attribute__((packed)) multiboot_mmap_entry {
    uint32_t size;                  /* of the rest of the entry: 20 */
    uint64_t base, length;
    uint32_t type;
};
G_STATIC_ASSERT(sizeof(struct multiboot_mmap_entry) == 24);

long multiboot_scan(const uint8_t *image, size_t size, bool want_checksum)
{
    size_t limit = MIN(size, MB_SEARCH_BYTES);
    for (size_t off = 0; off + MB_HEADER_MIN_SIZE <= limit; off += 4) {
        const uint8_t *p = image + off;
        if (get_le32(p) == MB_HEADER_MAGIC &&
            (!want_checksum ||
             (uint32_t)(MB_HEADER_MAGIC + get_le32(p + 4) + get_le32(p + 8)) == 0)) {
            return off;
        }
    }
    return -1;
}

long multiboot_find_header(const uint8_t *image, size_t size)
{
    return multiboot_scan(image, size, true);
}

/* ---- the kernel image ---- */

static bool multiboot_load_aout(BootLoad *bl, long offset, const MultibootHeader *h,
                                uint64_t *entry, uint64_t *end, Error **errp)
{
    if (h->load_addr > h->header_addr ||
        h->header_addr - h->load_addr > (uint64_t)offset) {
        error_setg(errp, "multiboot load_addr 0x%x and header_addr 0x%x do not "
                   "match the header's file offset 0x%lx",
                   h->load_addr, h->header_addr, offset);
        return false;
    }
    uint64_t file_start = offset - (h->header_addr - h->load_addr);
    uint64_t load_end = h->load_end_addr ? h->load_end_addr
                                         : h->load_addr + (bl->size - file_start);
    uint64_t bss_end = h->bss_end_addr ? h->bss_end_addr : load_end;
    if (load_end < h->load_addr || load_end - h->load_addr > bl->size - file_start ||
        bss_end < load_end) {
        error_setg(errp, "multiboot load_end_addr 0x%x or bss_end_addr 0x%x is "
                   "inconsistent with the file size or load_addr 0x%x",
                   h->load_end_addr, h->bss_end_addr, h->load_addr);
        return false;
    }
    if (!boot_check_load_range(bl, h->load_addr, bss_end - h->load_addr,
                               "multiboot kernel", errp)) {
        return false;
    }
    uint8_t *dst = guest_memory_ptr(bl->mem, h->load_addr, bss_end - h->load_addr);
    memcpy(dst, bl->image + file_start, load_end - h->load_addr);
    memset(dst + (load_end - h->load_addr), 0, bss_end - load_end);
    *entry = h->entry_addr;
    *end = bss_end;
    return true;
}

/* e_entry is a virtual address; a higher-half kernel's loads at a different
 * physical address, so translate through the segment that contains it. */
static uint64_t multiboot_elf_entry(const uint8_t *image)
{
    uint64_t entry = elf_entry(image);
    unsigned count = elf_segment_count(image);
    for (unsigned i = 0; i < count; i++) {
        ElfSegment seg = elf_segment(image, i);
        if (seg.type == ELF_PT_LOAD && entry >= seg.vaddr &&
            entry - seg.vaddr < seg.memsz) {
            return seg.paddr + (entry - seg.vaddr);
        }
    }
    return entry;
}

static bool multiboot_load_elf(BootLoad *bl, uint64_t *entry, uint64_t *end,
                               Error **errp)
{
    int class = elf_class(bl->image, bl->size);
    if (class != ELF_CLASS32) {
        error_setg(errp, class ? "a multiboot ELF kernel must be 32-bit"
                   : "multiboot kernel is neither an ELF image nor has load "
                     "addresses in its header (flag 16)");
        return false;
    }
    if (!elf_load_segments(bl, end, errp)) {
        return false;
    }
    *entry = multiboot_elf_entry(bl->image);
    return true;
}

/* ---- modules ---- */

/* Split the -initrd list at single commas; ",," stands for a comma. */
static GPtrArray *multiboot_split_modules(const char *list)
{
    GPtrArray *entries = g_ptr_array_new_with_free_func(g_free);
    GString *entry = g_string_new(NULL);
    for (const char *p = list; ; p++) {
        if (p[0] == ',' && p[1] == ',') {
            g_string_append_c(entry, ',');
            p++;
        } else if (p[0] == ',' || p[0] == '\0') {
            g_ptr_array_add(entries, g_string_free(entry, FALSE));
            if (p[0] == '\0') {
                return entries;
            }
            entry = g_string_new(NULL);
        } else {
            g_string_append_c(entry, p[0]);
        }
    }
}

/* Load one module at *next; its string is the whole entry. */
static bool multiboot_load_module(BootLoad *bl, const char *entry, uint64_t *next,
                                  struct multiboot_module *mod, Error **errp)
{
    g_autofree char *path = g_strndup(entry, strcspn(entry, " "));
    uint64_t size, string;

    if (!path[0]) {
        error_setg(errp, "empty module entry in the -initrd list");
        return false;
    }
    if (!boot_file_size(path, &size, errp)) {
        return false;
    }
    if (size > bl->ram_top || *next > bl->ram_top - size) {
        error_setg(errp, "module '%s' (%" PRIu64 " bytes) does not fit in guest "
                   "RAM at 0x%" PRIx64 "-0x%" PRIx64, path, size, *next, bl->ram_top);
        return false;
    }
    if (!boot_check_load_range(bl, *next, size, "module", errp) ||
        !boot_file_load(bl, path, *next, size, errp) ||
        !boot_aux_add(bl, entry, strlen(entry) + 1, &string, errp)) {
        return false;
    }
    *mod = (struct multiboot_module) {
        .mod_start = *next, .mod_end = *next + size, .string = string,
    };
    *next = boot_align_up(*next + size, BOOT_PAGE_SIZE);
    return true;
}

static bool multiboot_load_modules(BootLoad *bl, uint64_t kernel_end,
                                   struct multiboot_info *info, Error **errp)
{
    g_autoptr(GPtrArray) entries = multiboot_split_modules(bl->cfg->initrd);
    g_autofree struct multiboot_module *mods =
        g_new0(struct multiboot_module, entries->len);
    uint64_t next = boot_align_up(MAX(MAX(kernel_end, BOOT_HIGH_MEM_START), bl->area.end),
                                  BOOT_PAGE_SIZE);

    for (unsigned i = 0; i < entries->len; i++) {
        if (!multiboot_load_module(bl, entries->pdata[i], &next, &mods[i], errp)) {
            return false;
        }
    }
    uint64_t mods_addr;
    if (!boot_aux_add(bl, mods, entries->len * sizeof(*mods), &mods_addr, errp)) {
        return false;
    }
    info->mods_count = entries->len;
    info->mods_addr = mods_addr;
    return true;
}

/* ---- information structure ---- */

static bool multiboot_add_mmap(BootLoad *bl, struct multiboot_info *info,
                               Error **errp)
{
    const E820Table *e820 = bl->cfg->e820;
    struct multiboot_mmap_entry map[E820_MAX_ENTRIES];
    uint64_t addr;

    for (unsigned i = 0; i < e820->count; i++) {
        map[i] = (struct multiboot_mmap_entry) {
            .size = sizeof(map[i]) - sizeof(map[i].size),
            .base = e820->entries[i].addr,
            .length = e820->entries[i].size,
            .type = e820->entries[i].type,
        };
    }
    if (!boot_aux_add(bl, map, e820->count * sizeof(map[0]), &addr, errp)) {
        return false;
    }
    info->mmap_addr = addr;
    info->mmap_length = e820->count * sizeof(map[0]);
    return true;
}

static bool multiboot_build_info(BootLoad *bl, uint64_t kernel_end, Error **errp)
{
    struct multiboot_info info = {
        .flags = MBI_MEMORY | MBI_CMDLINE | MBI_MODS | MBI_MMAP | MBI_LOADER_NAME,
        .mem_lower = MIN(e820_ram_run_end(bl->cfg->e820, 0), MB_LOWER_MEM_MAX) / 1024,
        .mem_upper = (bl->ram_top - BOOT_HIGH_MEM_START) / 1024,
        .cmdline = bl->area.cmdline,
    };
    g_autofree char *cmdline = g_strdup_printf("%s %s", bl->cfg->kernel_path,
                                               bl->cfg->cmdline ? bl->cfg->cmdline : "");
    uint64_t name_addr;

    if (!boot_write_cmdline(bl, cmdline, BOOT_CMDLINE_MAX - 1, errp) ||
        !multiboot_add_mmap(bl, &info, errp) ||
        !boot_aux_add(bl, MB_LOADER_NAME, sizeof(MB_LOADER_NAME), &name_addr, errp) ||
        (bl->cfg->initrd && !multiboot_load_modules(bl, kernel_end, &info, errp))) {
        return false;
    }
    info.boot_loader_name = name_addr;
    boot_write_fixed(bl, bl->area.info, &info, sizeof(info));
    return true;
}

/* The fixed low-memory area where the kernel left it free, else the pages
 * after the kernel's image. */
static bool multiboot_place_data_area(BootLoad *bl, uint64_t kernel_end, Error **errp)
{
    if (!bl->kernel_in_fixed_area) {
        return boot_place_data_area(bl, boot_data_area_fixed(), errp);
    }
    return boot_place_data_area(bl, boot_data_area_at(boot_align_up(kernel_end, BOOT_PAGE_SIZE)),
                                errp);
}

bool multiboot_load(BootLoad *bl, long offset, Error **errp)
{
    MultibootHeader h = { 0 };
    uint64_t entry, kernel_end;

    /* The header found has its first three words; the address fields are
     * only read (and only required) with the a.out kludge flag. */
    memcpy(&h, bl->image + offset, MIN(sizeof(h), bl->size - offset));
    if (h.flags & MB_FLAGS_REQUIRED & ~MB_FLAGS_SUPPORTED) {
        error_setg(errp, "multiboot kernel requires unsupported features "
                   "(header flags 0x%x)", h.flags);
        return false;
    }
    bl->area_unplaced = true;
    if (h.flags & MB_FLAG_AOUT_KLUDGE) {
        if (bl->size - offset < sizeof(h)) {
            error_setg(errp, "multiboot header is truncated");
            return false;
        }
        if (!multiboot_load_aout(bl, offset, &h, &entry, &kernel_end, errp)) {
            return false;
        }
    } else if (!multiboot_load_elf(bl, &entry, &kernel_end, errp)) {
        return false;
    }
    if (!multiboot_place_data_area(bl, kernel_end, errp) ||
        !multiboot_build_info(bl, kernel_end, errp)) {
        return false;
    }
    bl->cpu->mode = BOOT_CPU_PROTECTED32;
    boot_setup_gdt(bl->mem, bl->cpu, bl->area.gdt);
    bl->cpu->rip = entry;
    bl->cpu->rax = MB_BOOTLOADER_MAGIC;
    bl->cpu->rbx = bl->area.info;
    return true;
}
