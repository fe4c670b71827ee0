/*
 * Linux bzImage loading through the 64-bit boot protocol
 * (Documentation/x86/boot.rst): the protected-mode kernel goes to 1 MiB,
 * the zero page (struct boot_params) to BOOT_INFO_ADDR, and the CPU starts
 * in long mode at the 64-bit entry point, load address + 0x200.
 */
#include <string.h>
#include "loader-internal.h"

/* Offsets in the bzImage file and in the zero page (the setup header sits
 * at the same offset in both). */
enum {
    BP_E820_ENTRIES      = 0x1e8,
    HDR_START            = 0x1f1,   /* setup_sects, first setup header field */
    HDR_BOOT_FLAG        = 0x1fe,
    HDR_JUMP             = 0x200,   /* short jump over the header */
    HDR_MAGIC            = 0x202,   /* "HdrS" */
    HDR_VERSION          = 0x206,
    HDR_TYPE_OF_LOADER   = 0x210,
    HDR_LOADFLAGS        = 0x211,
    HDR_RAMDISK_IMAGE    = 0x218,
    HDR_RAMDISK_SIZE     = 0x21c,
    HDR_HEAP_END_PTR     = 0x224,
    HDR_CMD_LINE_PTR     = 0x228,
    HDR_INITRD_ADDR_MAX  = 0x22c,
    HDR_KERNEL_ALIGNMENT = 0x230,
    HDR_RELOCATABLE      = 0x234,
    HDR_XLOADFLAGS       = 0x236,
    HDR_CMDLINE_SIZE     = 0x238,
    HDR_PAYLOAD_OFFSET   = 0x248,
    HDR_PAYLOAD_LENGTH   = 0x24c,
    HDR_PREF_ADDRESS     = 0x258,
    HDR_INIT_SIZE        = 0x260,
    HDR_MIN_END          = 0x264,   /* end of init_size, the last field we read */
    HDR_MAX_END          = 0x290,   /* the zero page's next member starts here */
    BP_E820_TABLE        = 0x2d0,
    BP_E820_MAX          = 128,
    BP_SIZE              = 0x1000,
};

#define BOOT_PROTOCOL_MIN     0x020c    /* 2.12: xloadflags and the 64-bit entry */
#define LOADFLAG_CAN_USE_HEAP 0x80
#define XLF_KERNEL_64         0x0001
#define LOADER_TYPE_UNKNOWN   0xff
#define KERNEL_LOAD_ADDR      BOOT_HIGH_MEM_START
#define KERNEL_ENTRY64_OFFSET 0x200
/* No real-mode setup code runs, so the heap is nominal: the end of a 64 KiB
 * real-mode segment, minus 0x200 as the protocol defines the field. */
#define HEAP_END_PTR          0xfe00

bool bzimage_parse_header(const uint8_t *image, size_t size, BzImageHeader *hdr,
                          Error **errp)
{
    if (size < HDR_MAGIC + 4 || memcmp(image + HDR_MAGIC, "HdrS", 4) != 0 ||
        get_le16(image + HDR_BOOT_FLAG) != 0xaa55) {
        error_setg(errp, "not a bzImage (no setup header)");
        return false;
    }
    if (size < HDR_MIN_END) {
        error_setg(errp, "bzImage is truncated (%zu bytes)", size);
        return false;
    }
    *hdr = (BzImageHeader) {
        .protocol = get_le16(image + HDR_VERSION),
        .setup_sects = image[HDR_START] ? image[HDR_START] : 4,
    };
    if (hdr->protocol < BOOT_PROTOCOL_MIN) {
        error_setg(errp, "Linux boot protocol %u.%02u is too old, 2.12 or newer "
                   "is needed for a 64-bit entry", hdr->protocol >> 8,
                   hdr->protocol & 0xff);
        return false;
    }
    size_t header_end = HDR_MAGIC + image[HDR_JUMP + 1];
    hdr->setup_size = (hdr->setup_sects + 1) * 512;
    if (header_end < HDR_MIN_END || header_end > HDR_MAX_END ||
        hdr->setup_size >= size) {
        error_setg(errp, "bzImage is truncated or its setup header is malformed "
                   "(%zu bytes, %zu bytes of setup code)", size, hdr->setup_size);
        return false;
    }
    hdr->loadflags = image[HDR_LOADFLAGS];
    hdr->xloadflags = get_le16(image + HDR_XLOADFLAGS);
    hdr->initrd_addr_max = get_le32(image + HDR_INITRD_ADDR_MAX);
    hdr->cmdline_size = get_le32(image + HDR_CMDLINE_SIZE);
    hdr->kernel_alignment = get_le32(image + HDR_KERNEL_ALIGNMENT);
    hdr->relocatable_kernel = image[HDR_RELOCATABLE];
    hdr->pref_address = get_le64(image + HDR_PREF_ADDRESS);
    hdr->init_size = get_le32(image + HDR_INIT_SIZE);
    hdr->payload_offset = get_le32(image + HDR_PAYLOAD_OFFSET);
    hdr->payload_length = get_le32(image + HDR_PAYLOAD_LENGTH);
    if (!(hdr->xloadflags & XLF_KERNEL_64)) {
        error_setg(errp, "bzImage has no 64-bit entry point (XLF_KERNEL_64)");
        return false;
    }
    return true;
}

/*
 * The highest address the kernel may touch before it has read the memory
 * map: the decompressor runs at max(load address aligned up to
 * kernel_alignment, pref_address) (only at pref_address if the kernel is
 * not relocatable) and uses init_size bytes from there.
 */
static uint64_t bzimage_footprint_end(const BzImageHeader *hdr, uint64_t payload)
{
    uint64_t run_at = hdr->pref_address;
    if (hdr->relocatable_kernel) {
        uint64_t align = hdr->kernel_alignment;
        uint64_t aligned = (align && !(align & (align - 1)))
                           ? boot_align_up(KERNEL_LOAD_ADDR, align) : KERNEL_LOAD_ADDR;
        run_at = MAX(aligned, run_at);
    }
    return MAX(KERNEL_LOAD_ADDR + payload, run_at + hdr->init_size);
}

static void zero_page_put_e820(uint8_t *zp, const E820Table *e820)
{
    unsigned count = MIN(e820->count, BP_E820_MAX);
    for (unsigned i = 0; i < count; i++) {
        const E820Entry *e = &e820->entries[i];
        uint8_t *dst = zp + BP_E820_TABLE + i * 20;
        memcpy(dst, &e->addr, 8);
        memcpy(dst + 8, &e->size, 8);
        memcpy(dst + 16, &e->type, 4);
    }
    zp[BP_E820_ENTRIES] = count;
}

static void build_zero_page(BootLoad *bl, uint64_t initrd_addr, uint64_t initrd_size)
{
    uint8_t zp[BP_SIZE] = { 0 };
    size_t header_end = HDR_MAGIC + bl->image[HDR_JUMP + 1];

    memcpy(zp + HDR_START, bl->image + HDR_START, header_end - HDR_START);
    zp[HDR_TYPE_OF_LOADER] = LOADER_TYPE_UNKNOWN;
    zp[HDR_LOADFLAGS] |= LOADFLAG_CAN_USE_HEAP;
    put_le16(zp + HDR_HEAP_END_PTR, HEAP_END_PTR);
    put_le32(zp + HDR_CMD_LINE_PTR, bl->area.cmdline);
    put_le32(zp + HDR_RAMDISK_IMAGE, initrd_addr);
    put_le32(zp + HDR_RAMDISK_SIZE, initrd_size);
    /* The initrd lies below 4 GiB: ext_ramdisk_image/size stay zero. */
    zero_page_put_e820(zp, bl->cfg->e820);
    boot_write_fixed(bl, bl->area.info, zp, sizeof(zp));
}

bool linux_load_bzimage(BootLoad *bl, Error **errp)
{
    BzImageHeader hdr;
    uint64_t initrd_addr = 0, initrd_size = 0;

    if (!bzimage_parse_header(bl->image, bl->size, &hdr, errp)) {
        return false;
    }
    uint64_t payload = bl->size - hdr.setup_size;
    uint64_t kernel_end = bzimage_footprint_end(&hdr, payload);
    if (kernel_end > bl->ram_top) {
        error_setg(errp, "the kernel needs RAM up to 0x%" PRIx64 " to decompress, "
                   "but RAM below 4 GiB ends at 0x%" PRIx64, kernel_end, bl->ram_top);
        return false;
    }
    if (!boot_check_load_range(bl, KERNEL_LOAD_ADDR, payload, "kernel", errp) ||
        !boot_write_cmdline(bl, bl->cfg->cmdline ? bl->cfg->cmdline : "",
                            hdr.cmdline_size, errp)) {
        return false;
    }
    if (bl->cfg->initrd) {
        uint64_t ceiling = MIN((uint64_t)hdr.initrd_addr_max + 1, bl->ram_top);
        if (!boot_load_initrd_high(bl, kernel_end, ceiling, &initrd_addr,
                                   &initrd_size, errp)) {
            return false;
        }
    }
    memcpy(guest_memory_ptr(bl->mem, KERNEL_LOAD_ADDR, payload),
           bl->image + hdr.setup_size, payload);
    build_zero_page(bl, initrd_addr, initrd_size);

    bl->cpu->mode = BOOT_CPU_LONG64;
    boot_setup_gdt(bl->mem, bl->cpu, bl->area.gdt);
    boot_setup_identity_paging(bl->mem, bl->cpu);
    bl->cpu->rip = KERNEL_LOAD_ADDR + KERNEL_ENTRY64_OFFSET;
    bl->cpu->rsi = bl->area.info;
    return true;
}
