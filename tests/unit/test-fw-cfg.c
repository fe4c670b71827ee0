/*
 * fw_cfg driven as a guest drives it: through the port I/O dispatch path,
 * with DMA descriptors and buffers in a RAM region of the memory space.
 * Every test makes its own device; the latest one owns the ports.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "exec/memory.h"
#include "hw/nvram/fw_cfg.h"
#include "pio.h"
#include "qemu/byte-order.h"
#include "test-ram.h"

#define FW_CFG_SELECTOR_PORT    0x510
#define FW_CFG_DATA_PORT        0x511
#define FW_CFG_DMA_HIGH_PORT    0x514
#define FW_CFG_DMA_LOW_PORT     0x518

#define DMA_CTL_ERROR   0x01
#define DMA_CTL_READ    0x02
#define DMA_CTL_SKIP    0x04
#define DMA_CTL_SELECT  0x08
#define DMA_CTL_WRITE   0x10

#define RAM_BASE        0x100000
#define RAM_SIZE        0x10000
#define DESC_ADDR       (RAM_BASE + 0x100)
#define BUF_ADDR        (RAM_BASE + 0x1000)
#define DIR_ENTRY_SIZE  64

static uint8_t *ram;

static FWCfgState *new_fw_cfg(void)
{
    Error *err = NULL;
    FWCfgState *s = fw_cfg_new(&err);
    g_assert_null(err);
    g_assert_nonnull(s);
    return s;
}

static void select_item(uint16_t key)
{
    g_assert_cmpint(address_space_write(address_space_io, FW_CFG_SELECTOR_PORT, &key, 2),
                    ==, MEMTX_OK);
}

static void read_data(void *buf, size_t len)
{
    uint8_t *bytes = buf;
    for (size_t i = 0; i < len; i++) {
        bytes[i] = inb(FW_CFG_DATA_PORT);
    }
}

static void read_item(uint16_t key, void *buf, size_t len)
{
    select_item(key);
    read_data(buf, len);
}

static bool in_ram(uint64_t addr, uint64_t len)
{
    return addr >= RAM_BASE && addr - RAM_BASE <= RAM_SIZE - len;
}

static void write_descriptor(uint64_t desc_addr, uint32_t control, uint32_t length,
                             uint64_t address)
{
    uint8_t *desc = ram + (desc_addr - RAM_BASE);
    put_be32(desc, control);
    put_be32(desc + 4, length);
    put_be64(desc + 8, address);
}

/* Put a descriptor in guest RAM (if its address is RAM) and hand its
 * address over as a guest does: high half, then low half, both big-endian
 * 32-bit writes. Returns the control word the device left, if it can. */
static uint32_t dma_request(uint64_t desc_addr, uint32_t control, uint32_t length,
                            uint64_t address)
{
    if (in_ram(desc_addr, 16)) {
        write_descriptor(desc_addr, control, length, address);
    }
    uint32_t high = GUINT32_TO_BE(desc_addr >> 32), low = GUINT32_TO_BE((uint32_t)desc_addr);
    g_assert_cmpint(address_space_write(address_space_io, FW_CFG_DMA_HIGH_PORT, &high, 4),
                    ==, MEMTX_OK);
    g_assert_cmpint(address_space_write(address_space_io, FW_CFG_DMA_LOW_PORT, &low, 4),
                    ==, MEMTX_OK);
    return in_ram(desc_addr, 16) ? get_be32(ram + (desc_addr - RAM_BASE)) : UINT32_MAX;
}

static uint8_t *buf_in_ram(void)
{
    return ram + (BUF_ADDR - RAM_BASE);
}

static void test_signature_and_id(void)
{
    new_fw_cfg();
    char sig[5] = { 0 };
    read_item(FW_CFG_SIGNATURE, sig, 4);
    g_assert_cmpstr(sig, ==, "QEMU");
    /* Past the end of an item, the data port reads 0. */
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 0);

    /* Reselecting rewinds; the write-channel bit selects the same item. */
    read_item(FW_CFG_SIGNATURE | 0x4000, sig, 4);
    g_assert_cmpstr(sig, ==, "QEMU");

    uint8_t id[4];
    read_item(FW_CFG_ID, id, sizeof(id));
    g_assert_cmpuint(id[0], ==, 3);     /* traditional interface and DMA */
    g_assert_cmpuint(id[1] | id[2] | id[3], ==, 0);

    /* The DMA register reads "QEMU CFG", a big-endian 64-bit quantity. */
    uint64_t dma_sig;
    g_assert_cmpint(address_space_read(address_space_io, FW_CFG_DMA_HIGH_PORT, &dma_sig, 8),
                    ==, MEMTX_OK);
    g_assert_cmphex(GUINT64_FROM_BE(dma_sig), ==, 0x51454d5520434647);
    uint32_t low;
    g_assert_cmpint(address_space_read(address_space_io, FW_CFG_DMA_LOW_PORT, &low, 4),
                    ==, MEMTX_OK);
    g_assert_cmpmem(&low, 4, " CFG", 4);

    /* An item that does not exist reads as zeros. */
    select_item(0x3fff);
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 0);
}

static void test_integer_items(void)
{
    FWCfgState *s = new_fw_cfg();
    fw_cfg_add_i16(s, FW_CFG_NB_CPUS, 0x0102);
    fw_cfg_add_i32(s, FW_CFG_KERNEL_SIZE, 0x01020304);
    fw_cfg_add_i64(s, FW_CFG_RAM_SIZE, 0x0102030405060708);
    fw_cfg_add_bytes(s, 0x8003, "e820", 4);     /* arch-local keys work too */

    uint8_t bytes[8];
    read_item(FW_CFG_NB_CPUS, bytes, 2);
    g_assert_cmpmem(bytes, 2, "\x02\x01", 2);
    read_item(FW_CFG_KERNEL_SIZE, bytes, 4);
    g_assert_cmpmem(bytes, 4, "\x04\x03\x02\x01", 4);
    read_item(FW_CFG_RAM_SIZE, bytes, 8);
    g_assert_cmpmem(bytes, 8, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
    read_item(0x8003, bytes, 4);
    g_assert_cmpmem(bytes, 4, "e820", 4);

    /* Adding a key again replaces it. */
    fw_cfg_add_i16(s, FW_CFG_NB_CPUS, 7);
    read_item(FW_CFG_NB_CPUS, bytes, 3);
    g_assert_cmpmem(bytes, 3, "\x07\x00\x00", 3);
}

static void add_file_ok(FWCfgState *s, const char *name, const char *contents)
{
    Error *err = NULL;
    g_assert_true(fw_cfg_add_file(s, name, contents, strlen(contents), &err));
    g_assert_null(err);
}

static void test_file_directory(void)
{
    FWCfgState *s = new_fw_cfg();
    uint8_t count[4];
    read_item(FW_CFG_FILE_DIR, count, 4);
    g_assert_cmpuint(get_be32(count), ==, 0);

    /* Added out of order: the directory and the selectors go by name. */
    add_file_ok(s, "opt/zeta", "last");
    add_file_ok(s, "etc/boot-fail-wait", "");
    add_file_ok(s, "opt/alpha", "first user item");

    static const struct {
        const char *name;
        const char *contents;
    } expected[] = {
        { "etc/boot-fail-wait", "" },
        { "opt/alpha", "first user item" },
        { "opt/zeta", "last" },
    };
    size_t dir_len = 4 + G_N_ELEMENTS(expected) * DIR_ENTRY_SIZE;
    uint8_t *dir = g_malloc(dir_len + 1);
    read_item(FW_CFG_FILE_DIR, dir, dir_len + 1);
    g_assert_cmpuint(get_be32(dir), ==, G_N_ELEMENTS(expected));
    g_assert_cmpuint(dir[dir_len], ==, 0);      /* nothing after the last entry */
    for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
        const uint8_t *entry = dir + 4 + i * DIR_ENTRY_SIZE;
        size_t len = strlen(expected[i].contents);
        g_assert_cmpuint(get_be32(entry), ==, len);
        uint16_t select = get_be16(entry + 4);
        g_assert_cmphex(select, ==, FW_CFG_FILE_FIRST + i);
        g_assert_cmpuint(get_be16(entry + 6), ==, 0);
        g_assert_cmpstr((const char *)entry + 8, ==, expected[i].name);

        /* Reading the file item by the selector the directory gave. */
        char *contents = g_malloc0(len + 2);
        read_item(select, contents, len + 1);
        g_assert_cmpstr(contents, ==, expected[i].contents);
        g_free(contents);
    }
    g_free(dir);
    /* No file behind the last selector. */
    select_item(FW_CFG_FILE_FIRST + G_N_ELEMENTS(expected));
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 0);
}

static void test_file_name_errors(void)
{
    FWCfgState *s = new_fw_cfg();
    add_file_ok(s, "opt/config", "one");

    Error *err = NULL;
    g_assert_false(fw_cfg_add_file(s, "opt/config", "two", 3, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "'opt/config' already exists"));
    error_free(err);
    err = NULL;

    char name[FW_CFG_MAX_FILE_NAME + 1];
    memset(name, 'a', sizeof(name));
    name[FW_CFG_MAX_FILE_NAME] = '\0';          /* 56 characters: one too many */
    g_assert_false(fw_cfg_add_file(s, name, "x", 1, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "too long"));
    error_free(err);
    err = NULL;

    name[FW_CFG_MAX_FILE_NAME - 1] = '\0';      /* 55 fit, with the NUL */
    g_assert_true(fw_cfg_add_file(s, name, "x", 1, &err));
    g_assert_null(err);

    g_assert_false(fw_cfg_add_file(s, "", "x", 1, &err));
    g_assert_nonnull(err);
    error_free(err);

    /* The refused additions left the directory alone; the original stays. */
    uint8_t dir[4 + 2 * DIR_ENTRY_SIZE];
    read_item(FW_CFG_FILE_DIR, dir, sizeof(dir));
    g_assert_cmpuint(get_be32(dir), ==, 2);
    g_assert_cmpstr((const char *)dir + 4 + 8, ==, name);
    g_assert_cmpstr((const char *)dir + 4 + DIR_ENTRY_SIZE + 8, ==, "opt/config");
    char contents[4] = { 0 };
    read_item(FW_CFG_FILE_FIRST + 1, contents, 3);
    g_assert_cmpstr(contents, ==, "one");
}

static void test_dma_read(void)
{
    FWCfgState *s = new_fw_cfg();
    add_file_ok(s, "opt/dma", "0123456789");

    /* SELECT | READ of the whole signature. */
    memset(buf_in_ram(), 0xaa, 16);
    uint32_t control = dma_request(DESC_ADDR, (FW_CFG_SIGNATURE << 16) | DMA_CTL_SELECT |
                                   DMA_CTL_READ, 4, BUF_ADDR);
    g_assert_cmphex(control, ==, 0);
    g_assert_cmpmem(buf_in_ram(), 4, "QEMU", 4);
    g_assert_cmpuint(buf_in_ram()[4], ==, 0xaa);

    /* SELECT | SKIP 3, then READ 4: the offset carries over. */
    control = dma_request(DESC_ADDR, (FW_CFG_FILE_FIRST << 16) | DMA_CTL_SELECT |
                          DMA_CTL_SKIP, 3, 0);
    g_assert_cmphex(control, ==, 0);
    control = dma_request(DESC_ADDR, DMA_CTL_READ, 4, BUF_ADDR);
    g_assert_cmphex(control, ==, 0);
    g_assert_cmpmem(buf_in_ram(), 4, "3456", 4);

    /* ... and the data port continues from the same offset. */
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, '7');

    /* Reading past the end fills zeros. */
    memset(buf_in_ram(), 0xaa, 16);
    control = dma_request(DESC_ADDR, DMA_CTL_READ, 8, BUF_ADDR);
    g_assert_cmphex(control, ==, 0);
    g_assert_cmpmem(buf_in_ram(), 8, "89\0\0\0\0\0\0", 8);
    g_assert_cmpuint(buf_in_ram()[8], ==, 0xaa);

    /* One 64-bit write of the address works as well. */
    write_descriptor(DESC_ADDR, (FW_CFG_ID << 16) | DMA_CTL_SELECT | DMA_CTL_READ, 4,
                     BUF_ADDR);
    uint64_t be_addr = GUINT64_TO_BE(DESC_ADDR);
    g_assert_cmpint(address_space_write(address_space_io, FW_CFG_DMA_HIGH_PORT, &be_addr, 8),
                    ==, MEMTX_OK);
    g_assert_cmpuint(get_be32(ram + (DESC_ADDR - RAM_BASE)), ==, 0);
    g_assert_cmpmem(buf_in_ram(), 4, "\x03\0\0\0", 4);
}

static void test_dma_errors(void)
{
    new_fw_cfg();
    uint64_t refused = dma_refused_count();

    /* A buffer outside guest RAM: ERROR, and nothing written. */
    uint32_t control = dma_request(DESC_ADDR, (FW_CFG_SIGNATURE << 16) | DMA_CTL_SELECT |
                                   DMA_CTL_READ, 4, RAM_BASE + RAM_SIZE - 2);
    g_assert_cmphex(control, ==, DMA_CTL_ERROR);
    g_assert_cmpuint(dma_refused_count(), >, refused);

    /* A buffer that wraps the address space. */
    control = dma_request(DESC_ADDR, DMA_CTL_SELECT | DMA_CTL_READ, 4, UINT64_MAX - 1);
    g_assert_cmphex(control, ==, DMA_CTL_ERROR);

    /* Writes are not supported. */
    control = dma_request(DESC_ADDR, (FW_CFG_SIGNATURE << 16) | DMA_CTL_SELECT |
                          DMA_CTL_WRITE, 4, BUF_ADDR);
    g_assert_cmphex(control, ==, DMA_CTL_ERROR);

    /* A huge read of a missing item stops at the end of RAM with ERROR. */
    control = dma_request(DESC_ADDR, (0x3fff << 16) | DMA_CTL_SELECT | DMA_CTL_READ,
                          UINT32_MAX, BUF_ADDR);
    g_assert_cmphex(control, ==, DMA_CTL_ERROR);

    /* A descriptor outside RAM, or at the very top of the address space,
     * is refused without harm. */
    refused = dma_refused_count();
    dma_request(0x4000, DMA_CTL_READ, 4, BUF_ADDR);
    g_assert_cmpuint(dma_refused_count(), >, refused);
    dma_request(UINT64_MAX - 7, DMA_CTL_READ, 4, BUF_ADDR);

    /* The device still works. */
    control = dma_request(DESC_ADDR, (FW_CFG_SIGNATURE << 16) | DMA_CTL_SELECT |
                          DMA_CTL_READ, 4, BUF_ADDR);
    g_assert_cmphex(control, ==, 0);
    g_assert_cmpmem(buf_in_ram(), 4, "QEMU", 4);
}

static void test_bad_port_accesses(void)
{
    new_fw_cfg();
    select_item(FW_CFG_SIGNATURE);
    /* A byte write to the selector and writes to the data port change nothing. */
    outb(FW_CFG_SELECTOR_PORT, FW_CFG_ID);
    outb(FW_CFG_DATA_PORT, 'X');
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 'Q');
    /* A 16-bit read is not a data read: it returns 0 and keeps the offset. */
    uint16_t word = 0xffff;
    g_assert_cmpint(address_space_read(address_space_io, FW_CFG_SELECTOR_PORT, &word, 2),
                    ==, MEMTX_OK);
    g_assert_cmpuint(word, ==, 0);
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 'E');
}

static void test_mapped_file(void)
{
    FWCfgState *s = new_fw_cfg();
    char *path = NULL;
    int fd = g_file_open_tmp("fw-cfg-XXXXXX", &path, NULL);
    g_assert_cmpint(fd, >=, 0);
    size_t len = 5000;
    uint8_t *contents = g_malloc(len);
    for (size_t i = 0; i < len; i++) {
        contents[i] = (i * 7 + 3) & 0xff;
    }
    g_assert_cmpint(write(fd, contents, len), ==, (ssize_t)len);
    close(fd);

    Error *err = NULL;
    g_assert_true(fw_cfg_add_mapped_file(s, FW_CFG_KERNEL_DATA, path, &err));
    g_assert_null(err);
    fw_cfg_add_i32(s, FW_CFG_KERNEL_SIZE, len);
    /* The item does not depend on the file's name staying around. */
    g_unlink(path);
    g_free(path);

    uint8_t *back = g_malloc(len + 1);
    read_item(FW_CFG_KERNEL_DATA, back, len + 1);
    g_assert_cmpmem(back, len, contents, len);
    g_assert_cmpuint(back[len], ==, 0);

    /* By DMA, too. */
    g_assert_cmphex(dma_request(DESC_ADDR, (FW_CFG_KERNEL_DATA << 16) | DMA_CTL_SELECT |
                                DMA_CTL_READ, len, BUF_ADDR), ==, 0);
    g_assert_cmpmem(buf_in_ram(), len, contents, len);
    g_free(back);
    g_free(contents);

    /* An empty file is a valid, empty item. */
    fd = g_file_open_tmp("fw-cfg-empty-XXXXXX", &path, NULL);
    close(fd);
    g_assert_true(fw_cfg_add_mapped_file(s, FW_CFG_INITRD_DATA, path, &err));
    g_assert_null(err);
    g_unlink(path);
    g_free(path);
    select_item(FW_CFG_INITRD_DATA);
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 0);

    /* Missing files and directories fail, naming the path. */
    g_assert_false(fw_cfg_add_mapped_file(s, FW_CFG_INITRD_DATA, "/nonexistent/initrd", &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "/nonexistent/initrd"));
    error_free(err);
    err = NULL;
    g_assert_false(fw_cfg_add_mapped_file(s, FW_CFG_INITRD_DATA, "/", &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "'/'"));
    error_free(err);
}

static void test_reset_selects_signature(void)
{
    FWCfgState *s = new_fw_cfg();
    fw_cfg_add_i32(s, FW_CFG_NB_CPUS, 4);
    select_item(FW_CFG_NB_CPUS);
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 4);
    device_reset_all();
    g_assert_cmpuint(inb(FW_CFG_DATA_PORT), ==, 'Q');
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    ram = test_ram_map(RAM_BASE, RAM_SIZE);

    g_test_add_func("/fw_cfg/signature-and-id", test_signature_and_id);
    g_test_add_func("/fw_cfg/integer-items", test_integer_items);
    g_test_add_func("/fw_cfg/file-directory", test_file_directory);
    g_test_add_func("/fw_cfg/file-name-errors", test_file_name_errors);
    g_test_add_func("/fw_cfg/dma-read", test_dma_read);
    g_test_add_func("/fw_cfg/dma-errors", test_dma_errors);
    g_test_add_func("/fw_cfg/bad-port-accesses", test_bad_port_accesses);
    g_test_add_func("/fw_cfg/mapped-file", test_mapped_file);
    g_test_add_func("/fw_cfg/reset", test_reset_selects_signature);
    return g_test_run();
}
