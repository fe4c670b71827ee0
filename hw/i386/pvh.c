/*
 * PVH boot of an uncompressed ELF kernel (Linux vmlinux): the entry point
 * comes from the XEN_ELFNOTE_PHYS32_ENTRY note; the kernel starts in flat
 * 32-bit protected mode, paging off, with %ebx pointing at a struct
 * hvm_start_info (Xen public/arch-x86/hvm/start_info.h, version 1).
 */
#include <string.h>
#include "loader-internal.h"

#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC          0x336ec578
#define HVM_START_VERSION        1

struct hvm_start_info {
    uint32_t magic;
    uint32_t version;
    uint32_t flags;
    uint32_t nr_modules;
    uint64_t modlist_paddr;
    uint64_t cmdline_paddr;
    uint64_t rsdp_paddr;
    uint64_t memmap_paddr;      /* version 1 */
    uint32_t memmap_entries;
    uint32_t reserved;
};
G_STATIC_ASSERT(sizeof(struct hvm_start_info) == 56);

struct hvm_modlist_entry {
    uint64_t paddr;
    uint64_t size;
    uint64_t cmdline_paddr;
    uint64_t reserved;
};
G_STATIC_ASSERT(sizeof(struct hvm_modlist_entry) == 32);

struct hvm_memmap_table_entry {
    uint64_t addr;
    uint64_t size;
    uint32_t type;
    uint32_t reserved;
};
G_STATIC_ASSERT(sizeof(struct hvm_memmap_table_entry) == 24);

/* The PHYS32_ENTRY value of the notes in image[start, end), or 0. */
static uint64_t pvh_scan_notes(const uint8_t *image, uint64_t start, uint64_t end)
{
    uint64_t pos = start;
    while (end - pos >= 12) {
        uint64_t namesz = get_le32(image + pos);
        uint64_t descsz = get_le32(image + pos + 4);
        uint32_t type = get_le32(image + pos + 8);
        uint64_t name = pos + 12;
        uint64_t desc = name + boot_align_up(namesz, 4);
        if (desc > end || boot_align_up(descsz, 4) > end - desc) {
            return 0;
        }
        if (type == XEN_ELFNOTE_PHYS32_ENTRY && namesz == 4 &&
            memcmp(image + name, "Xen", 4) == 0) {
            /* The entry is stored as a 32- or 64-bit word. */
            return descsz == 4 ? get_le32(image + desc)
                 : descsz == 8 ? get_le64(image + desc) : 0;
        }
        pos = desc + boot_align_up(descsz, 4);
    }
    return 0;
}

uint64_t pvh_find_entry(const uint8_t *image, size_t size)
{
    if (!elf_class(image, size)) {
        return 0;
    }
    unsigned count = elf_segment_count(image);
    for (unsigned i = 0; i < count; i++) {
        ElfSegment seg = elf_segment(image, i);
        if (seg.type != ELF_PT_NOTE || seg.offset > size ||
            seg.filesz > size - seg.offset) {
            continue;
        }
        uint64_t entry = pvh_scan_notes(image, seg.offset, seg.offset + seg.filesz);
        if (entry) {
            return entry;
        }
    }
    return 0;
}

static bool pvh_add_memmap(BootLoad *bl, struct hvm_start_info *info, Error **errp)
{
    const E820Table *e820 = bl->cfg->e820;
    struct hvm_memmap_table_entry map[E820_MAX_ENTRIES];

    for (unsigned i = 0; i < e820->count; i++) {
        map[i] = (struct hvm_memmap_table_entry) {
            .addr = e820->entries[i].addr,
            .size = e820->entries[i].size,
            .type = e820->entries[i].type,
        };
    }
    info->memmap_entries = e820->count;
    return boot_aux_add(bl, map, e820->count * sizeof(map[0]),
                        &info->memmap_paddr, errp);
}

static bool pvh_add_initrd(BootLoad *bl, uint64_t kernel_end,
                           struct hvm_start_info *info, Error **errp)
{
    struct hvm_modlist_entry module = { 0 };
    uint64_t floor = boot_align_up(MAX(kernel_end, BOOT_HIGH_MEM_START),
                                   BOOT_PAGE_SIZE);

    if (!boot_load_initrd_high(bl, floor, bl->ram_top, &module.paddr,
                               &module.size, errp)) {
        return false;
    }
    info->nr_modules = 1;
    return boot_aux_add(bl, &module, sizeof(module), &info->modlist_paddr, errp);
}

bool pvh_load(BootLoad *bl, uint64_t entry, Error **errp)
{
    struct hvm_start_info info = {
        .magic = HVM_START_MAGIC,
        .version = HVM_START_VERSION,
        .cmdline_paddr = bl->area.cmdline,
        .rsdp_paddr = bl->cfg->rsdp_addr,
    };
    uint64_t kernel_end;

    if (entry >= BOOT_4GIB) {
        error_setg(errp, "PVH entry point 0x%" PRIx64 " is not reachable from "
                   "32-bit mode", entry);
        return false;
    }
    if (!elf_load_segments(bl, &kernel_end, errp) ||
        !boot_write_cmdline(bl, bl->cfg->cmdline ? bl->cfg->cmdline : "",
                            BOOT_CMDLINE_MAX - 1, errp) ||
        !pvh_add_memmap(bl, &info, errp) ||
        (bl->cfg->initrd && !pvh_add_initrd(bl, kernel_end, &info, errp))) {
        return false;
    }
    boot_write_fixed(bl, bl->area.info, &info, sizeof(info));

    bl->cpu->mode = BOOT_CPU_PROTECTED32;
    boot_setup_gdt(bl->mem, bl->cpu, bl->area.gdt);
    bl->cpu->rip = entry;
    bl->cpu->rbx = bl->area.info;
    return true;
}
