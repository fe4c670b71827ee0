/*
 * Direct kernel loaders: bzImage (synthetic and the guest kit's Debian
 * kernel), PVH (synthetic ELF and the kit's vmlinux), multiboot (ELF and
 * a.out kludge images built here) and the errors bad images must give.
 */
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>
#include "hw/i386/boot.h"
#include "qemu/byte-order.h"

#define MiB (1024 * 1024ULL)

typedef struct TestVM {
    GuestMemory mem;
    E820Table e820;
    BootCpuState cpu;
    KernelBootConfig cfg;
    char *dir;
} TestVM;

static void vm_init(TestVM *vm, uint64_t ram_size)
{
    *vm = (TestVM) { 0 };
    vm->mem.host = g_malloc0(ram_size);
    vm->mem.below_4g = ram_size;
    g_assert_true(e820_add(&vm->e820, 0, 0x9fc00, E820_RAM));
    g_assert_true(e820_add(&vm->e820, 0x9fc00, 0x400, E820_RESERVED));
    g_assert_true(e820_add(&vm->e820, 0xf0000, 0x10000, E820_RESERVED));
    g_assert_true(e820_add(&vm->e820, MiB, ram_size - MiB, E820_RAM));
    vm->cfg.e820 = &vm->e820;
    vm->dir = g_dir_make_tmp("test-loader-XXXXXX", NULL);
    g_assert_nonnull(vm->dir);
}

static void vm_cleanup(TestVM *vm)
{
    GDir *dir = g_dir_open(vm->dir, 0, NULL);
    const char *name;
    while ((name = g_dir_read_name(dir))) {
        g_autofree char *path = g_build_filename(vm->dir, name, NULL);
        g_unlink(path);
    }
    g_dir_close(dir);
    g_rmdir(vm->dir);
    g_free(vm->dir);
    g_free(vm->mem.host);
}

/* Write a file in the VM's temp dir; the path is the caller's. */
static char *vm_file(TestVM *vm, const char *name, const void *data, size_t len)
{
    char *path = g_build_filename(vm->dir, name, NULL);
    g_assert_true(g_file_set_contents(path, data, len, NULL));
    return path;
}

static uint8_t *ram(TestVM *vm, uint64_t gpa, uint64_t len)
{
    uint8_t *p = guest_memory_ptr(&vm->mem, gpa, len);
    g_assert_nonnull(p);
    return p;
}

static uint8_t *pattern(size_t len, unsigned seed)
{
    uint8_t *buf = g_malloc(len);
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 7 + seed + (i >> 8));
    }
    return buf;
}

/* Load path; on failure return the error message (caller frees). */
static char *vm_load_error(TestVM *vm, const char *path)
{
    Error *err = NULL;
    vm->cfg.kernel_path = path;
    if (x86_load_kernel(&vm->cfg, &vm->mem, &vm->cpu, &err)) {
        return NULL;
    }
    char *msg = g_strdup(err->msg);
    error_free(err);
    return msg;
}

static void vm_load(TestVM *vm, const char *path)
{
    g_autofree char *msg = vm_load_error(vm, path);
    if (msg) {
        g_error("loading %s failed: %s", path, msg);
    }
}

static void assert_load_fails(TestVM *vm, const char *path, const char *expect)
{
    g_autofree char *msg = vm_load_error(vm, path);
    g_assert_nonnull(msg);
    if (!strstr(msg, expect)) {
        g_error("error '%s' does not contain '%s'", msg, expect);
    }
}

/* Loading the image (freed here) fails with a message that names the
 * kernel file and contains expect. */
static void assert_image_fails(TestVM *vm, uint8_t *img, size_t size,
                               const char *expect)
{
    g_autofree char *path = vm_file(vm, "bad-kernel", img, size);
    g_autofree char *prefix = g_strdup_printf("%s: ", path);
    g_free(img);
    assert_load_fails(vm, path, expect);
    assert_load_fails(vm, path, prefix);
}

static void test_guest_memory_ptr(void)
{
    uint8_t low[4096], high[8192];
    GuestMemory mem = { low, sizeof(low), high, sizeof(high) };

    g_assert_true(guest_memory_ptr(&mem, 0, 4096) == low);
    g_assert_true(guest_memory_ptr(&mem, 4000, 96) == low + 4000);
    g_assert_null(guest_memory_ptr(&mem, 4000, 97));
    g_assert_true(guest_memory_ptr(&mem, 1ULL << 32, 8192) == high);
    g_assert_true(guest_memory_ptr(&mem, (1ULL << 32) + 8000, 192) == high + 8000);
    g_assert_null(guest_memory_ptr(&mem, (1ULL << 32) + 8000, 193));
    g_assert_null(guest_memory_ptr(&mem, 8192, 1));              /* hole */
    g_assert_null(guest_memory_ptr(&mem, (1ULL << 32) - 1, 2));  /* crosses hole */
    g_assert_null(guest_memory_ptr(&mem, 100, UINT64_MAX));      /* wraps */
    g_assert_null(guest_memory_ptr(&mem, UINT64_MAX, 2));
}

/* The machine's e820 table copied to p, one entry every stride bytes as
 * {u64 addr, u64 size, u32 type}. */
static void check_e820_copy(TestVM *vm, const uint8_t *p, size_t stride)
{
    for (unsigned i = 0; i < vm->e820.count; i++, p += stride) {
        g_assert_cmphex(get_le64(p), ==, vm->e820.entries[i].addr);
        g_assert_cmphex(get_le64(p + 8), ==, vm->e820.entries[i].size);
        g_assert_cmpuint(get_le32(p + 16), ==, vm->e820.entries[i].type);
    }
}

/* ---- bzImage ---- */

static uint8_t *make_bzimage(uint16_t protocol, size_t payload, size_t *size)
{
    *size = 5 * 512 + payload;
    uint8_t *img = pattern(*size, 3);
    memset(img, 0, 5 * 512);
    img[0x1f1] = 0;                     /* 0 means 4 setup sectors */
    put_le16(img + 0x1fe, 0xaa55);
    img[0x200] = 0xeb;
    img[0x201] = 0x66;                  /* header ends at 0x268 */
    memcpy(img + 0x202, "HdrS", 4);
    put_le16(img + 0x206, protocol);
    img[0x211] = 0x01;                  /* LOADED_HIGH */
    put_le32(img + 0x22c, 0x7fffffff);
    put_le32(img + 0x230, 0x200000);
    img[0x234] = 1;
    put_le16(img + 0x236, 0x3);             /* XLF_KERNEL_64 | CAN_BE_LOADED_ABOVE_4G */
    put_le32(img + 0x238, 2047);
    put_le64(img + 0x258, 16 * MiB);
    put_le32(img + 0x260, 1 * MiB);
    return img;
}

static void check_gdt_at(TestVM *vm, uint64_t gdt_addr, uint64_t code_descriptor)
{
    const uint8_t *gdt = ram(vm, gdt_addr, 32);
    g_assert_cmphex(vm->cpu.gdt_base, ==, gdt_addr);
    g_assert_cmpuint(vm->cpu.gdt_limit, ==, 31);
    g_assert_cmphex(vm->cpu.code_selector, ==, 0x10);
    g_assert_cmphex(vm->cpu.data_selector, ==, 0x18);
    g_assert_cmphex(get_le64(gdt + 0x10), ==, code_descriptor);
    g_assert_cmphex(get_le64(gdt + 0x18), ==, 0x00cf93000000ffffULL);
}

static void check_gdt(TestVM *vm, uint64_t code_descriptor)
{
    check_gdt_at(vm, BOOT_GDT_ADDR, code_descriptor);
}

static void check_identity_paging(TestVM *vm)
{
    g_assert_cmphex(vm->cpu.cr3, ==, BOOT_PML4_ADDR);
    uint64_t pml4e = get_le64(ram(vm, vm->cpu.cr3, 8));
    g_assert_cmphex(pml4e & 3, ==, 3);
    uint64_t pdpt = pml4e & ~0xfffULL;
    for (uint64_t gib = 0; gib < 4; gib++) {
        uint64_t pdpte = get_le64(ram(vm, pdpt + gib * 8, 8));
        g_assert_cmphex(pdpte & 3, ==, 3);
        for (uint64_t i = 0; i < 512; i += 511) {
            uint64_t pde = get_le64(ram(vm, (pdpte & ~0xfffULL) + i * 8, 8));
            g_assert_cmphex(pde, ==, ((gib << 30) + (i << 21)) | 0x83);
        }
    }
}

/* Load image with an initrd and cmdline and check everything the 64-bit
 * boot protocol promises the kernel. */
static void check_bzimage_boot(TestVM *vm, const uint8_t *img, size_t size)
{
    const size_t initrd_len = 65536 + 123;
    g_autofree uint8_t *initrd = pattern(initrd_len, 9);
    g_autofree char *kernel = vm_file(vm, "bzImage", img, size);
    g_autofree char *initrd_path = vm_file(vm, "initrd", initrd, initrd_len);
    g_autofree char *cmdline = g_strnfill(1000, 'c');
    const uint8_t *zp = ram(vm, BOOT_INFO_ADDR, 4096);
    size_t setup = ((img[0x1f1] ? img[0x1f1] : 4) + 1) * 512;

    memcpy(cmdline, "console=ttyS0 ", 14);
    vm->cfg.cmdline = cmdline;
    vm->cfg.initrd = initrd_path;
    vm_load(vm, kernel);

    g_assert_cmphex(get_le16(zp + 0x1fe), ==, 0xaa55);
    g_assert_cmpmem(zp + 0x202, 4, "HdrS", 4);
    g_assert_cmphex(get_le16(zp + 0x206), ==, get_le16(img + 0x206));
    g_assert_cmphex(zp[0x210], ==, 0xff);
    g_assert_cmphex(zp[0x211] & 0x81, ==, 0x81);
    g_assert_cmphex(get_le32(zp + 0x228), ==, BOOT_CMDLINE_ADDR);
    g_assert_cmpstr((char *)ram(vm, BOOT_CMDLINE_ADDR, 1001), ==, cmdline);

    uint64_t top = MIN(vm->mem.below_4g, (uint64_t)get_le32(img + 0x22c) + 1);
    uint64_t initrd_addr = (top - initrd_len) & ~0xfffULL;
    g_assert_cmphex(get_le32(zp + 0x218), ==, initrd_addr);
    g_assert_cmpuint(get_le32(zp + 0x21c), ==, initrd_len);
    g_assert_cmpmem(ram(vm, initrd_addr, initrd_len), initrd_len, initrd, initrd_len);
    g_assert_cmpuint(initrd_addr, >=, get_le64(img + 0x258) + get_le32(img + 0x260));

    g_assert_cmpuint(zp[0x1e8], ==, vm->e820.count);
    check_e820_copy(vm, zp + 0x2d0, 20);
    g_assert_cmpmem(ram(vm, MiB, size - setup), size - setup, img + setup, size - setup);

    g_assert_cmpint(vm->cpu.mode, ==, BOOT_CPU_LONG64);
    g_assert_cmphex(vm->cpu.rip, ==, 0x100200);
    g_assert_cmphex(vm->cpu.rsi, ==, BOOT_INFO_ADDR);
    check_gdt(vm, 0x00af9b000000ffffULL);
    check_identity_paging(vm);
}

static void test_bzimage_synthetic(void)
{
    TestVM vm;
    size_t size;
    g_autofree uint8_t *img = make_bzimage(0x020f, 3000, &size);
    Error *err = NULL;
    BzImageHeader hdr;

    g_assert_true(bzimage_parse_header(img, size, &hdr, &err));
    g_assert_cmpuint(hdr.setup_sects, ==, 4);
    g_assert_cmpuint(hdr.setup_size, ==, 5 * 512);
    vm_init(&vm, 64 * MiB);
    check_bzimage_boot(&vm, img, size);
    vm_cleanup(&vm);
}

/* The guest kit's file, or NULL (and the test skipped) if there is none. */
static char *kit_file(const char *name)
{
    const char *env = g_getenv("VMM_KIT_DIR");
    g_autofree char *home_kit = g_build_filename(g_get_home_dir(), ".cache",
                                                 "vmm-kit", "kit", NULL);
    const char *dirs[] = { env && env[0] ? env : NULL, home_kit };
    for (unsigned i = 0; i < G_N_ELEMENTS(dirs); i++) {
        char *path = dirs[i] ? g_build_filename(dirs[i], "l2", name, NULL) : NULL;
        if (path && g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
            return path;
        }
        g_free(path);
    }
    g_autofree char *reason = g_strdup_printf("no guest kit l2/%s (set VMM_KIT_DIR "
                                              "or run scripts/build-guest-kit.sh)", name);
    g_test_skip(reason);
    return NULL;
}

static void test_bzimage_real(void)
{
    g_autofree char *path = kit_file("bzImage");
    g_autofree gchar *img = NULL;
    gsize size;
    BzImageHeader hdr;
    Error *err = NULL;
    TestVM vm;

    if (!path) {
        return;
    }
    g_assert_true(g_file_get_contents(path, &img, &size, NULL));
    g_assert_true(bzimage_parse_header((uint8_t *)img, size, &hdr, &err));
    g_assert_cmphex(hdr.protocol, >=, 0x020c);
    g_assert_cmphex(hdr.xloadflags & 1, ==, 1);
    g_assert_cmpuint(hdr.cmdline_size, ==, 2047);  /* COMMAND_LINE_SIZE 2048 - 1 */
    g_assert_cmpuint(hdr.init_size, >, size - hdr.setup_size);

    vm_init(&vm, 256 * MiB);
    check_bzimage_boot(&vm, (uint8_t *)img, size);
    vm_cleanup(&vm);
}

static void test_bzimage_errors(void)
{
    TestVM vm;
    size_t size;
    g_autofree uint8_t *img = make_bzimage(0x020f, 3000, &size);

    vm_init(&vm, 24 * MiB);
    assert_image_fails(&vm, g_memdup2(img, size), 5 * 512, "truncated");
    assert_image_fails(&vm, g_memdup2(img, size), 0x240, "truncated");
    uint8_t *old = g_memdup2(img, size);
    put_le16(old + 0x206, 0x0200);
    assert_image_fails(&vm, old, size, "2.00 is too old");

    g_autofree char *good = vm_file(&vm, "good", img, size);
    g_autofree char *cmdline = g_strnfill(2048, 'x');
    vm.cfg.cmdline = cmdline;
    assert_load_fails(&vm, good, "2048 bytes long, but the kernel accepts at most 2047");
    cmdline[2047] = '\0';
    vm_load(&vm, good);

    /* Kernel footprint ends at 17 MiB: an 8 MiB initrd cannot fit in 24. */
    g_autofree char *initrd = g_build_filename(vm.dir, "big-initrd", NULL);
    int fd = open(initrd, O_CREAT | O_WRONLY, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, 8 * MiB), ==, 0);
    close(fd);
    vm.cfg.initrd = initrd;
    assert_load_fails(&vm, good, "does not fit");
    vm_cleanup(&vm);
}

/* ---- ELF images (PVH and multiboot) ---- */

typedef struct TestSegment {
    uint32_t type;
    uint64_t vaddr, paddr, memsz;
    const void *data;
    size_t filesz;
} TestSegment;

static void put_word(uint8_t *p, bool is64, uint64_t v)
{
    memcpy(p, &v, is64 ? 8 : 4);    /* little-endian host */
}

static uint8_t *make_elf(bool is64, uint64_t entry, const TestSegment *segs,
                         unsigned count, size_t *size)
{
    size_t ehdr = is64 ? 64 : 52, phent = is64 ? 56 : 32;
    size_t offset = ehdr + count * phent;
    *size = offset;
    for (unsigned i = 0; i < count; i++) {
        *size += segs[i].filesz;
    }
    uint8_t *img = g_malloc0(*size);
    memcpy(img, "\x7f" "ELF", 4);
    img[4] = is64 ? 2 : 1;
    img[5] = img[6] = 1;
    put_le16(img + 0x10, 2);
    put_le16(img + 0x12, is64 ? 62 : 3);
    put_word(img + 0x18, is64, entry);
    put_word(img + (is64 ? 0x20 : 0x1c), is64, ehdr);
    put_le16(img + (is64 ? 0x36 : 0x2a), phent);
    put_le16(img + (is64 ? 0x38 : 0x2c), count);
    for (unsigned i = 0; i < count; i++) {
        uint8_t *ph = img + ehdr + i * phent;
        /* p_offset, p_vaddr, p_paddr, p_filesz, p_memsz: consecutive words
         * after p_type (and, in ELF64, p_flags). */
        const uint64_t fields[] = { offset, segs[i].vaddr, segs[i].paddr,
                                    segs[i].filesz, segs[i].memsz };
        put_le32(ph, segs[i].type);
        for (unsigned f = 0; f < G_N_ELEMENTS(fields); f++) {
            put_word(ph + (is64 ? 8 : 4) * (f + 1), is64, fields[f]);
        }
        memcpy(img + offset, segs[i].data, segs[i].filesz);
        offset += segs[i].filesz;
    }
    return img;
}

/* A "Xen" note: namesz 4, descsz, type, name, desc (desc_len 4 or 8). */
static size_t put_xen_note(uint8_t *p, uint32_t type, uint64_t desc, size_t desc_len)
{
    put_le32(p, 4);
    put_le32(p + 4, desc_len);
    put_le32(p + 8, type);
    memcpy(p + 12, "Xen", 4);
    memcpy(p + 16, &desc, desc_len);
    return 16 + desc_len;
}

static uint8_t *make_pvh_elf(bool is64, uint64_t paddr, uint64_t entry, size_t *size)
{
    g_autofree uint8_t *code = pattern(256, 5);
    uint8_t notes[64];
    size_t notes_len = put_xen_note(notes, 5, 0x302e332d6e6578ULL, 8);  /* "xen-3.0" */
    notes_len += put_xen_note(notes + notes_len, 18, entry, is64 ? 8 : 4);
    TestSegment segs[] = {
        { 1, 0xffffffff81000000ULL, paddr, 0x2000, code, 256 },
        { 4, 0, 0, notes_len, notes, notes_len },
    };
    return make_elf(is64, 0xffffffff81000000ULL, segs, 2, size);
}

static void check_pvh_start_info(TestVM *vm, uint64_t entry, const char *cmdline)
{
    const uint8_t *si = ram(vm, BOOT_INFO_ADDR, 56);
    g_assert_cmphex(get_le32(si), ==, 0x336ec578);
    g_assert_cmpuint(get_le32(si + 4), ==, 1);
    g_assert_cmpstr((char *)ram(vm, get_le64(si + 24), 1), ==, cmdline);
    g_assert_cmphex(get_le64(si + 32), ==, vm->cfg.rsdp_addr);
    g_assert_cmpuint(get_le32(si + 48), ==, vm->e820.count);
    check_e820_copy(vm, ram(vm, get_le64(si + 40), vm->e820.count * 24), 24);
    g_assert_cmpint(vm->cpu.mode, ==, BOOT_CPU_PROTECTED32);
    g_assert_cmphex(vm->cpu.rip, ==, entry);
    g_assert_cmphex(vm->cpu.rbx, ==, BOOT_INFO_ADDR);
    check_gdt(vm, 0x00cf9b000000ffffULL);
}

/* The initrd module: page-aligned, as high as RAM allows. */
static void check_pvh_initrd(TestVM *vm, const uint8_t *data, size_t len)
{
    const uint8_t *si = ram(vm, BOOT_INFO_ADDR, 56);
    g_assert_cmpuint(get_le32(si + 12), ==, 1);
    const uint8_t *mod = ram(vm, get_le64(si + 16), 32);
    g_assert_cmphex(get_le64(mod), ==, (vm->mem.below_4g - len) & ~0xfffULL);
    g_assert_cmpuint(get_le64(mod + 8), ==, len);
    g_assert_cmpmem(ram(vm, get_le64(mod), len), len, data, len);
}

static void test_pvh_synthetic(void)
{
    TestVM vm;
    size_t size, size32;
    g_autofree uint8_t *img = make_pvh_elf(true, 16 * MiB, 16 * MiB + 0x80, &size);
    g_autofree uint8_t *img32 = make_pvh_elf(false, 16 * MiB, 0x1234560, &size32);
    g_autofree uint8_t *initrd = pattern(8192, 1);

    g_assert_cmphex(pvh_find_entry(img, size), ==, 16 * MiB + 0x80);
    g_assert_cmphex(pvh_find_entry(img32, size32), ==, 0x1234560);
    g_assert_cmphex(pvh_find_entry(img, size - 20), ==, 0);  /* note cut off */

    vm_init(&vm, 64 * MiB);
    memset(ram(&vm, 16 * MiB, 0x2000), 0xcc, 0x2000);
    g_autofree char *kernel = vm_file(&vm, "vmlinux", img, size);
    g_autofree char *initrd_path = vm_file(&vm, "initrd", initrd, 8192);
    vm.cfg.cmdline = "pvh test";
    vm.cfg.initrd = initrd_path;
    vm.cfg.rsdp_addr = 0xe0000;
    vm_load(&vm, kernel);
    check_pvh_start_info(&vm, 16 * MiB + 0x80, "pvh test");
    check_pvh_initrd(&vm, initrd, 8192);
    g_assert_cmpmem(ram(&vm, 16 * MiB, 256), 256, img + 64 + 2 * 56, 256);
    g_assert_cmphex(ram(&vm, 16 * MiB + 0x1fff, 1)[0], ==, 0);  /* bss zeroed */
    vm_cleanup(&vm);
}

static void test_pvh_real(void)
{
    g_autofree char *path = kit_file("vmlinux");
    g_autofree gchar *img = NULL;
    gsize size;
    TestVM vm;

    if (!path) {
        return;
    }
    g_assert_true(g_file_get_contents(path, &img, &size, NULL));
    uint64_t entry = pvh_find_entry((uint8_t *)img, size);
    g_assert_cmphex(entry, !=, 0);
    g_assert_cmphex(entry, <, 1ULL << 32);

    vm_init(&vm, 256 * MiB);
    g_autofree uint8_t *initrd = pattern(5000, 2);
    g_autofree char *initrd_path = vm_file(&vm, "initrd", initrd, 5000);
    vm.cfg.cmdline = "console=ttyS0 earlyprintk=ttyS0";
    vm.cfg.initrd = initrd_path;
    vm_load(&vm, path);
    check_pvh_start_info(&vm, entry, vm.cfg.cmdline);
    check_pvh_initrd(&vm, initrd, 5000);
    /* The entry code was loaded: it matches the file at the segment offset. */
    const uint8_t *ph = (uint8_t *)img + get_le64((uint8_t *)img + 0x20);
    g_assert_cmpuint(get_le32(ph), ==, 1);
    g_assert_cmpmem(ram(&vm, get_le64(ph + 0x18), 4096), 4096, img + get_le64(ph + 8), 4096);
    vm_cleanup(&vm);
}

/* ---- multiboot ---- */

#define MB_MAGIC 0x1BADB002u

static void put_mb_header(uint8_t *p, uint32_t flags, uint32_t checksum_delta)
{
    put_le32(p, MB_MAGIC);
    put_le32(p + 4, flags);
    put_le32(p + 8, -(MB_MAGIC + flags) + checksum_delta);
}

/* A 32-bit higher-half ELF: linked at 0xc0100000, loaded at 1 MiB. */
static uint8_t *make_mb_elf(uint32_t flags, uint32_t checksum_delta, uint64_t paddr,
                            size_t *size)
{
    g_autofree uint8_t *code = pattern(512, 4);
    put_mb_header(code, flags, checksum_delta);
    TestSegment seg = { 1, 0xc0100000, paddr, 512 + 0x3000, code, 512 };
    return make_elf(false, 0xc0100010, &seg, 1, size);
}

static void test_multiboot_elf(void)
{
    TestVM vm;
    size_t size;
    g_autofree uint8_t *img = make_mb_elf(0x3, 0, MiB, &size);
    g_autofree uint8_t *mod2 = pattern(5000, 6);

    g_assert_cmpint(multiboot_find_header(img, size), ==, 52 + 32);
    vm_init(&vm, 64 * MiB);
    memset(ram(&vm, MiB, 0x4000), 0xcc, 0x4000);
    g_autofree char *kernel = vm_file(&vm, "kernel.elf", img, size);
    g_autofree char *mod1_path = vm_file(&vm, "mod1", "first module", 12);
    g_autofree char *mod2_path = vm_file(&vm, "mod,2", mod2, 5000);
    g_autofree char *initrd = g_strdup_printf("%s arg1 arg2,%s/mod,,2 x,,y",
                                              mod1_path, vm.dir);
    vm.cfg.initrd = initrd;
    vm.cfg.cmdline = "console=ttyS0 foo";
    vm_load(&vm, kernel);

    g_assert_cmpmem(ram(&vm, MiB, 512), 512, img + 52 + 32, 512);
    g_assert_cmphex(ram(&vm, MiB + 512 + 0x2fff, 1)[0], ==, 0);     /* bss */
    g_assert_cmpint(vm.cpu.mode, ==, BOOT_CPU_PROTECTED32);
    g_assert_cmphex(vm.cpu.rip, ==, MiB + 0x10);
    g_assert_cmphex(vm.cpu.rax, ==, 0x2BADB002);
    g_assert_cmphex(vm.cpu.rbx, ==, BOOT_INFO_ADDR);
    check_gdt(&vm, 0x00cf9b000000ffffULL);

    const uint8_t *info = ram(&vm, BOOT_INFO_ADDR, 88);
    g_assert_cmphex(get_le32(info) & 0x24d, ==, 0x24d);   /* mem, cmdline, mods, mmap, name */
    g_assert_cmpuint(get_le32(info + 4), ==, 639);
    g_assert_cmpuint(get_le32(info + 8), ==, 63 * 1024);
    g_autofree char *cmdline = g_strdup_printf("%s console=ttyS0 foo", kernel);
    g_assert_cmpstr((char *)ram(&vm, get_le32(info + 16), 1), ==, cmdline);
    g_assert_cmpstr((char *)ram(&vm, get_le32(info + 64), 1), ==, "qemu-pdl");

    g_assert_cmpuint(get_le32(info + 20), ==, 2);
    const uint8_t *mods = ram(&vm, get_le32(info + 24), 32);
    uint32_t start1 = get_le32(mods), start2 = get_le32(mods + 16);
    g_assert_cmphex(start1, ==, MiB + 0x4000);       /* page after kernel + bss */
    g_assert_cmphex(get_le32(mods + 4), ==, start1 + 12);
    g_assert_cmpmem(ram(&vm, start1, 12), 12, "first module", 12);
    g_autofree char *string1 = g_strdup_printf("%s arg1 arg2", mod1_path);
    g_assert_cmpstr((char *)ram(&vm, get_le32(mods + 8), 1), ==, string1);
    g_assert_cmphex(start2, ==, start1 + 0x1000);
    g_assert_cmphex(get_le32(mods + 20), ==, start2 + 5000);
    g_assert_cmpmem(ram(&vm, start2, 5000), 5000, mod2, 5000);
    g_autofree char *string2 = g_strdup_printf("%s x,y", mod2_path);
    g_assert_cmpstr((char *)ram(&vm, get_le32(mods + 24), 1), ==, string2);

    g_assert_cmpuint(get_le32(info + 44), ==, vm.e820.count * 24);
    const uint8_t *mmap = ram(&vm, get_le32(info + 48), vm.e820.count * 24);
    for (unsigned i = 0; i < vm.e820.count; i++) {
        g_assert_cmpuint(get_le32(mmap + i * 24), ==, 20);   /* size of the rest */
    }
    check_e820_copy(&vm, mmap + 4, 24);
    vm_cleanup(&vm);
}

/* 16 bytes of padding, the header at file offset 16, code after it. */
static uint8_t *make_mb_aout(uint32_t load_addr, size_t *size)
{
    *size = 256;
    uint8_t *img = pattern(*size, 8);
    put_mb_header(img + 16, 0x10003, 0);
    put_le32(img + 28, load_addr + 16);             /* header_addr */
    put_le32(img + 32, load_addr);
    put_le32(img + 36, load_addr + *size);          /* load_end_addr */
    put_le32(img + 40, load_addr + *size + 0x2000); /* bss_end_addr */
    put_le32(img + 44, load_addr + 0x40);           /* entry_addr */
    return img;
}

static void test_multiboot_aout(void)
{
    TestVM vm;
    size_t size;
    g_autofree uint8_t *img = make_mb_aout(0x200000, &size);

    g_assert_cmpint(multiboot_find_header(img, size), ==, 16);
    vm_init(&vm, 64 * MiB);
    memset(ram(&vm, 0x200000, 0x3000), 0xcc, 0x3000);
    g_autofree char *kernel = vm_file(&vm, "kernel.bin", img, size);
    vm_load(&vm, kernel);
    g_assert_cmpmem(ram(&vm, 0x200000, size), size, img, size);
    g_assert_cmphex(ram(&vm, 0x200000 + size, 1)[0], ==, 0);
    g_assert_cmphex(ram(&vm, 0x200000 + size + 0x1fff, 1)[0], ==, 0);
    g_assert_cmphex(ram(&vm, 0x200000 + size + 0x2000, 1)[0], ==, 0xcc);
    g_assert_cmphex(vm.cpu.rip, ==, 0x200040);
    g_assert_cmphex(vm.cpu.rax, ==, 0x2BADB002);
    const uint8_t *info = ram(&vm, BOOT_INFO_ADDR, 88);
    g_autofree char *cmdline = g_strdup_printf("%s ", kernel);
    g_assert_cmpstr((char *)ram(&vm, get_le32(info + 16), 1), ==, cmdline);
    g_assert_cmpuint(get_le32(info + 20), ==, 0);
    vm_cleanup(&vm);
}

/* A multiboot kernel linked in low memory (as real-mode test kernels are,
 * at 0x8000) loads, and the loader's data follow its image, as QEMU
 * places its multiboot information; its modules come after them. */
static void test_multiboot_low_segment(void)
{
    TestVM vm;
    size_t size;
    g_autofree uint8_t *img = make_mb_elf(0x3, 0, 0x8000, &size);
    vm_init(&vm, 64 * MiB);
    g_autofree char *kernel = vm_file(&vm, "low.elf", img, size);
    g_autofree char *mod_path = vm_file(&vm, "mod", "module", 6);
    vm.cfg.initrd = mod_path;
    vm.cfg.cmdline = "low";
    vm_load(&vm, kernel);

    g_assert_cmpmem(ram(&vm, 0x8000, 512), 512, img + 52 + 32, 512);
    g_assert_cmphex(vm.cpu.rip, ==, 0x8010);
    uint64_t area = 0x8000 + 0x4000;         /* the page after kernel + bss */
    check_gdt_at(&vm, area, 0x00cf9b000000ffffULL);
    g_assert_cmphex(vm.cpu.rbx, >=, area);
    const uint8_t *info = ram(&vm, vm.cpu.rbx, 88);
    g_autofree char *cmdline = g_strdup_printf("%s low", kernel);
    g_assert_cmphex(get_le32(info + 16), >=, area);
    g_assert_cmpstr((char *)ram(&vm, get_le32(info + 16), 1), ==, cmdline);
    g_assert_cmpstr((char *)ram(&vm, get_le32(info + 64), 1), ==, "qemu-pdl");
    const uint8_t *mod = ram(&vm, get_le32(info + 24), 16);
    g_assert_cmphex(get_le32(mod), ==, MiB);
    g_assert_cmpmem(ram(&vm, MiB, 6), 6, "module", 6);
    vm_cleanup(&vm);
}

static void test_load_errors(void)
{
    TestVM vm;
    size_t size;
    vm_init(&vm, 64 * MiB);

    uint8_t *bad_sum = make_mb_elf(0x3, 1, MiB, &size);
    g_assert_cmpint(multiboot_find_header(bad_sum, size), ==, -1);
    assert_image_fails(&vm, bad_sum, size, "bad checksum");
    uint8_t *high = make_mb_elf(0x3, 0, 128 * MiB, &size);
    assert_image_fails(&vm, high, size, "outside guest RAM");
    uint8_t *low_pvh = make_pvh_elf(true, 0x7000, 0x7000, &size);
    assert_image_fails(&vm, low_pvh, size, "overlaps the boot loader's data");
    uint8_t *aout = make_mb_aout(0xfff00000, &size);
    assert_image_fails(&vm, aout, size, "outside guest RAM");
    uint8_t *flags = make_mb_elf(0x8, 0, MiB, &size);
    assert_image_fails(&vm, flags, size, "unsupported features");
    uint8_t *pvh = make_pvh_elf(true, 256 * MiB, 256 * MiB, &size);
    assert_image_fails(&vm, pvh, size, "outside guest RAM");

    /* An ELF with neither a PVH note nor a multiboot header. */
    g_autofree uint8_t *code = pattern(64, 0);
    TestSegment seg = { 1, MiB, MiB, 64, code, 64 };
    uint8_t *plain = make_elf(true, MiB, &seg, 1, &size);
    assert_image_fails(&vm, plain, size, "not a Linux bzImage, multiboot or PVH ELF kernel");

    g_autofree char *missing = g_build_filename(vm.dir, "no-such-kernel", NULL);
    assert_load_fails(&vm, missing, missing);
    vm_cleanup(&vm);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/loader/guest-memory-ptr", test_guest_memory_ptr);
    g_test_add_func("/loader/bzimage/synthetic", test_bzimage_synthetic);
    g_test_add_func("/loader/bzimage/real", test_bzimage_real);
    g_test_add_func("/loader/bzimage/errors", test_bzimage_errors);
    g_test_add_func("/loader/pvh/synthetic", test_pvh_synthetic);
    g_test_add_func("/loader/pvh/real", test_pvh_real);
    g_test_add_func("/loader/multiboot/elf", test_multiboot_elf);
    g_test_add_func("/loader/multiboot/aout", test_multiboot_aout);
    g_test_add_func("/loader/multiboot/low-segment", test_multiboot_low_segment);
    g_test_add_func("/loader/errors", test_load_errors);
    return g_test_run();
}
