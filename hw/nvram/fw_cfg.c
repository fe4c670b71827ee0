/*
 * fw_cfg, QEMU's firmware configuration interface, on x86's I/O ports
 * (docs/specs/fw_cfg.rst in QEMU; contract in include/hw/nvram/fw_cfg.h).
 *
 * Ports 0x510-0x511 are one region, as on QEMU's pc: a 16-bit write at
 * 0x510 selects an item and rewinds the read offset, and every byte read
 * returns the next byte of the selected item (0 past its end or for an
 * item that does not exist). Ports 0x514-0x51b hold the big-endian 64-bit
 * address of an FWCfgDmaAccess descriptor; the write that completes the
 * low half (a 32-bit write at 0x518, or a 64-bit one at 0x514) runs the
 * transfer, and reading them gives the signature "QEMU CFG".
 *
 * All items are added before the guest runs; afterwards only the guest
 * touches the device, through handlers that run under the device lock.
 * DMA goes to guest RAM only (dma_memory_*), which needs no other lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "exec/memory.h"
#include "hw/nvram/fw_cfg.h"
#include "hw/qdev.h"
#include "qemu/byte-order.h"
#include "qemu/log.h"

/* Selector bit 14 asks for write access, which is ignored (the items are
 * read-only). Bit 15 marks arch-local items (x86's own keys), which are
 * plain keys here. */
#define FW_CFG_WRITE_CHANNEL    0x4000

#define FW_CFG_ID_TRADITIONAL   0x01
#define FW_CFG_ID_DMA           0x02

#define FW_CFG_DMA_CTL_ERROR    0x01
#define FW_CFG_DMA_CTL_READ     0x02
#define FW_CFG_DMA_CTL_SKIP     0x04
#define FW_CFG_DMA_CTL_SELECT   0x08
#define FW_CFG_DMA_CTL_WRITE    0x10

#define FW_CFG_PORTS_SIZE       2
#define FW_CFG_DMA_PORTS_SIZE   8
/* What reads of the DMA address register return, byte by byte. */
static const char fw_cfg_dma_signature[FW_CFG_DMA_PORTS_SIZE] = "QEMU CFG";
static const char fw_cfg_signature[4] = "QEMU";

/* The guest's view of a DMA request; all fields big-endian. */
typedef struct FWCfgDmaAccess {
    uint32_t control;
    uint32_t length;
    uint64_t address;
} FWCfgDmaAccess;

/* One entry of the FW_CFG_FILE_DIR item; all fields big-endian. */
typedef struct FWCfgDirEntry {
    uint32_t size;
    uint16_t select;
    uint16_t reserved;
    char name[FW_CFG_MAX_FILE_NAME];
} FWCfgDirEntry;
G_STATIC_ASSERT(sizeof(FWCfgDirEntry) == 64);
G_STATIC_ASSERT(sizeof(FWCfgDmaAccess) == 16);

typedef struct FWCfgEntry {
    uint8_t *data;      /* NULL when len is 0 */
    size_t len;
    bool mapped;        /* data is a read-only mapping of a host file */
} FWCfgEntry;

typedef struct FWCfgFile {
    char name[FW_CFG_MAX_FILE_NAME];
    FWCfgEntry entry;
} FWCfgFile;

struct FWCfgState {
    QEMUDevice dev;
    MemoryRegion ports;         /* selector and data */
    MemoryRegion dma_ports;     /* DMA descriptor address */
    GHashTable *items;          /* selector -> FWCfgEntry *, all but files */
    GPtrArray *files;           /* FWCfgFile *, by name; the i-th is FILE_FIRST + i */

    /* Guest-controlled state, under the device lock. */
    uint16_t selector;          /* without the write-channel bit */
    uint64_t offset;            /* next byte of the selected item */
    uint8_t dma_address[FW_CFG_DMA_PORTS_SIZE];    /* big-endian, as written */
};

/* ---- items ---- */

static void fw_cfg_entry_release(FWCfgEntry *e)
{
    if (e->mapped && e->data) {
        munmap(e->data, e->len);
    } else {
        g_free(e->data);
    }
}

static void fw_cfg_entry_free(gpointer data)
{
    fw_cfg_entry_release(data);
    g_free(data);
}

static void fw_cfg_file_free(gpointer data)
{
    FWCfgFile *file = data;
    fw_cfg_entry_release(&file->entry);
    g_free(file);
}

static bool fw_cfg_is_file_selector(uint16_t selector)
{
    return selector >= FW_CFG_FILE_FIRST && selector < FW_CFG_WRITE_CHANNEL;
}

/* Keys the add functions may set: the directory and file selectors are the
 * device's own, and the write channel is not a key of its own. */
static bool fw_cfg_key_is_settable(uint16_t key)
{
    return !(key & FW_CFG_WRITE_CHANNEL) && key != FW_CFG_FILE_DIR &&
           !fw_cfg_is_file_selector(key);
}

static void fw_cfg_set_entry(FWCfgState *s, uint16_t key, uint8_t *data, size_t len,
                             bool mapped)
{
    FWCfgEntry *e = g_new(FWCfgEntry, 1);
    *e = (FWCfgEntry) { .data = data, .len = len, .mapped = mapped };
    g_hash_table_replace(s->items, GUINT_TO_POINTER(key), e);
}

static const FWCfgEntry *fw_cfg_find_entry(FWCfgState *s, uint16_t selector)
{
    if (fw_cfg_is_file_selector(selector)) {
        guint index = selector - FW_CFG_FILE_FIRST;
        if (index >= s->files->len) {
            return NULL;
        }
        const FWCfgFile *file = g_ptr_array_index(s->files, index);
        return &file->entry;
    }
    return g_hash_table_lookup(s->items, GUINT_TO_POINTER(selector));
}

void fw_cfg_add_bytes(FWCfgState *s, uint16_t key, const void *data, size_t len)
{
    g_return_if_fail(fw_cfg_key_is_settable(key));
    fw_cfg_set_entry(s, key, len ? g_memdup2(data, len) : NULL, len, false);
}

void fw_cfg_add_i16(FWCfgState *s, uint16_t key, uint16_t value)
{
    uint16_t le = GUINT16_TO_LE(value);
    fw_cfg_add_bytes(s, key, &le, sizeof(le));
}

void fw_cfg_add_i32(FWCfgState *s, uint16_t key, uint32_t value)
{
    uint32_t le = GUINT32_TO_LE(value);
    fw_cfg_add_bytes(s, key, &le, sizeof(le));
}

void fw_cfg_add_i64(FWCfgState *s, uint16_t key, uint64_t value)
{
    uint64_t le = GUINT64_TO_LE(value);
    fw_cfg_add_bytes(s, key, &le, sizeof(le));
}

/* Map the whole file read-only; *data stays NULL for an empty file, which
 * mmap() cannot map. */
static bool fw_cfg_map_file(int fd, const char *path, uint8_t **data, size_t *len,
                            Error **errp)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        error_setg_errno(errp, errno, "could not stat '%s'", path);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        error_setg(errp, "'%s' is not a regular file", path);
        return false;
    }
    *data = NULL;
    *len = st.st_size;
    if (*len == 0) {
        return true;
    }
    void *map = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        error_setg_errno(errp, errno, "could not map '%s'", path);
        return false;
    }
    *data = map;
    return true;
}

/*
 * The mapping stays for the life of the device. Like any mapped file, it
 * assumes nobody truncates the file on the host while the guest reads it.
 */
bool fw_cfg_add_mapped_file(FWCfgState *s, uint16_t key, const char *path, Error **errp)
{
    g_return_val_if_fail(fw_cfg_key_is_settable(key), false);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error_setg_errno(errp, errno, "could not open '%s'", path);
        return false;
    }
    uint8_t *data;
    size_t len;
    bool ok = fw_cfg_map_file(fd, path, &data, &len, errp);
    close(fd);
    if (ok) {
        fw_cfg_set_entry(s, key, data, len, true);
    }
    return ok;
}

/* ---- the file directory ---- */

/* Where name belongs in the sorted file list; -1 if it is there already. */
static gint fw_cfg_file_position(FWCfgState *s, const char *name)
{
    guint pos = 0;
    while (pos < s->files->len) {
        const FWCfgFile *file = g_ptr_array_index(s->files, pos);
        int order = strcmp(name, file->name);
        if (order == 0) {
            return -1;
        }
        if (order < 0) {
            break;
        }
        pos++;
    }
    return pos;
}

/* Selectors follow name order, so every addition renumbers the files after
 * it: the directory is rebuilt as a whole. */
static void fw_cfg_rebuild_directory(FWCfgState *s)
{
    guint count = s->files->len;
    size_t len = sizeof(uint32_t) + count * sizeof(FWCfgDirEntry);
    uint8_t *dir = g_malloc0(len);
    uint32_t be_count = GUINT32_TO_BE(count);
    memcpy(dir, &be_count, sizeof(be_count));
    FWCfgDirEntry *entries = (FWCfgDirEntry *)(dir + sizeof(uint32_t));
    for (guint i = 0; i < count; i++) {
        const FWCfgFile *file = g_ptr_array_index(s->files, i);
        entries[i].size = GUINT32_TO_BE(file->entry.len);
        entries[i].select = GUINT16_TO_BE(FW_CFG_FILE_FIRST + i);
        memcpy(entries[i].name, file->name, sizeof(entries[i].name));
    }
    fw_cfg_set_entry(s, FW_CFG_FILE_DIR, dir, len, false);
}

bool fw_cfg_add_file(FWCfgState *s, const char *name, const void *data, size_t len,
                     Error **errp)
{
    if (name[0] == '\0') {
        error_setg(errp, "fw_cfg file name must not be empty");
        return false;
    }
    if (strlen(name) >= FW_CFG_MAX_FILE_NAME) {
        error_setg(errp, "fw_cfg file name '%s' is too long (at most %d characters)",
                   name, FW_CFG_MAX_FILE_NAME - 1);
        return false;
    }
    if (len > UINT32_MAX) {
        error_setg(errp, "fw_cfg file '%s' is too large (at most 4 GiB - 1)", name);
        return false;
    }
    if (s->files->len >= FW_CFG_WRITE_CHANNEL - FW_CFG_FILE_FIRST) {
        error_setg(errp, "too many fw_cfg files (at most %d)",
                   FW_CFG_WRITE_CHANNEL - FW_CFG_FILE_FIRST);
        return false;
    }
    gint pos = fw_cfg_file_position(s, name);
    if (pos < 0) {
        error_setg(errp, "fw_cfg file '%s' already exists", name);
        return false;
    }
    FWCfgFile *file = g_new0(FWCfgFile, 1);
    g_strlcpy(file->name, name, sizeof(file->name));
    file->entry = (FWCfgEntry) { .data = len ? g_memdup2(data, len) : NULL, .len = len };
    g_ptr_array_insert(s->files, pos, file);
    fw_cfg_rebuild_directory(s);
    return true;
}

/* ---- selector and data ports ---- */

static void fw_cfg_select(FWCfgState *s, uint16_t selector)
{
    s->selector = selector & ~FW_CFG_WRITE_CHANNEL;
    s->offset = 0;
}

/* Bytes of the selected item from the read offset on; 0 if none are left. */
static size_t fw_cfg_remaining(FWCfgState *s, const FWCfgEntry **entry)
{
    const FWCfgEntry *e = fw_cfg_find_entry(s, s->selector);
    *entry = e;
    return e && s->offset < e->len ? e->len - s->offset : 0;
}

static uint8_t fw_cfg_read_byte(FWCfgState *s)
{
    const FWCfgEntry *e;
    if (fw_cfg_remaining(s, &e) == 0) {
        return 0;
    }
    return e->data[s->offset++];
}

/* QEMU's pc decodes both ports as one: any byte read is a data read. */
static uint64_t fw_cfg_ports_read(void *opaque, uint64_t offset, unsigned size)
{
    FWCfgState *s = opaque;
    if (size != 1) {
        qemu_log_mask(LOG_GUEST_ERROR, "fw_cfg: %u-byte read of port 0x%" PRIx64
                      " (the data port is 8 bits wide)\n", size, FW_CFG_IO_BASE + offset);
        return 0;
    }
    return fw_cfg_read_byte(s);
}

static void fw_cfg_ports_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    FWCfgState *s = opaque;
    if (offset == 0 && size == 2) {
        fw_cfg_select(s, value);
        return;
    }
    /* Data-port writes have been ignored since QEMU 2.4: items are read-only. */
    qemu_log_mask(LOG_GUEST_ERROR, "fw_cfg: %u-byte write of 0x%" PRIx64 " to port 0x%"
                  PRIx64 " ignored (only 16-bit selector writes)\n", size, value,
                  FW_CFG_IO_BASE + offset);
}

static const MemoryRegionOps fw_cfg_ports_ops = {
    .read = fw_cfg_ports_read,
    .write = fw_cfg_ports_write,
    .max_access_size = 2,
};

/* ---- DMA ---- */

static void fw_cfg_dma_skip(FWCfgState *s, uint32_t length)
{
    const FWCfgEntry *e;
    s->offset += MIN(length, fw_cfg_remaining(s, &e));
}

static bool fw_cfg_dma_zero(uint64_t address, uint64_t length)
{
    static const uint8_t zeros[4096];
    while (length > 0) {
        uint64_t chunk = MIN(length, sizeof(zeros));
        if (!dma_memory_write(address, zeros, chunk)) {
            return false;
        }
        address += chunk;
        length -= chunk;
    }
    return true;
}

/* Copy from the read offset on to guest RAM; past the item's end (or for a
 * selector without an item) the guest gets zeros, as from the data port. */
static bool fw_cfg_dma_read(FWCfgState *s, uint32_t length, uint64_t address)
{
    if (address + length < address) {
        qemu_log_mask(LOG_GUEST_ERROR, "fw_cfg: DMA of %" PRIu32 " bytes at 0x%" PRIx64
                      " wraps around the address space\n", length, address);
        return false;
    }
    const FWCfgEntry *e;
    uint64_t copied = MIN(length, fw_cfg_remaining(s, &e));
    if (copied && !dma_memory_write(address, e->data + s->offset, copied)) {
        return false;
    }
    s->offset += copied;
    return fw_cfg_dma_zero(address + copied, length - copied);
}

/* Run the operation the control word asks for; false: set ERROR. As in
 * QEMU, READ wins over WRITE, WRITE over SKIP. */
static bool fw_cfg_dma_operate(FWCfgState *s, uint32_t control, uint32_t length,
                               uint64_t address)
{
    if (control & FW_CFG_DMA_CTL_READ) {
        return fw_cfg_dma_read(s, length, address);
    }
    if (control & FW_CFG_DMA_CTL_WRITE) {
        qemu_log_mask(LOG_GUEST_ERROR, "fw_cfg: DMA write to item 0x%x refused "
                      "(items are read-only)\n", s->selector);
        return false;
    }
    if (control & FW_CFG_DMA_CTL_SKIP) {
        fw_cfg_dma_skip(s, length);
    }
    return true;
}

static void fw_cfg_dma_complete(uint64_t descriptor, uint32_t control)
{
    uint32_t be_control = GUINT32_TO_BE(control);
    if (!dma_memory_write(descriptor + offsetof(FWCfgDmaAccess, control), &be_control,
                          sizeof(be_control))) {
        qemu_log_mask(LOG_GUEST_ERROR, "fw_cfg: cannot write the status of the DMA "
                      "descriptor at 0x%" PRIx64 "\n", descriptor);
    }
}

static void fw_cfg_dma_transfer(FWCfgState *s, uint64_t descriptor)
{
    FWCfgDmaAccess access;
    if (descriptor + sizeof(access) < descriptor ||
        !dma_memory_read(descriptor, &access, sizeof(access))) {
        qemu_log_mask(LOG_GUEST_ERROR, "fw_cfg: DMA descriptor at 0x%" PRIx64
                      " is not in guest RAM\n", descriptor);
        fw_cfg_dma_complete(descriptor, FW_CFG_DMA_CTL_ERROR);
        return;
    }
    uint32_t control = GUINT32_FROM_BE(access.control);
    if (control & FW_CFG_DMA_CTL_SELECT) {
        fw_cfg_select(s, control >> 16);
    }
    bool ok = fw_cfg_dma_operate(s, control, GUINT32_FROM_BE(access.length),
                                 GUINT64_FROM_BE(access.address));
    fw_cfg_dma_complete(descriptor, ok ? 0 : FW_CFG_DMA_CTL_ERROR);
}

static uint64_t fw_cfg_dma_ports_read(void *opaque, uint64_t offset, unsigned size)
{
    uint64_t value = 0;
    for (unsigned i = 0; i < size && offset + i < FW_CFG_DMA_PORTS_SIZE; i++) {
        value |= (uint64_t)(uint8_t)fw_cfg_dma_signature[offset + i] << (8 * i);
    }
    return value;
}

/* The guest writes the address big-endian, high half first; completing
 * the last byte starts the transfer and clears the register, so that a
 * later request giving only the low half means a 32-bit address. */
static void fw_cfg_dma_ports_write(void *opaque, uint64_t offset, uint64_t value,
                                   unsigned size)
{
    FWCfgState *s = opaque;
    for (unsigned i = 0; i < size && offset + i < FW_CFG_DMA_PORTS_SIZE; i++) {
        s->dma_address[offset + i] = value >> (8 * i);
    }
    if (offset + size < FW_CFG_DMA_PORTS_SIZE) {
        return;
    }
    uint64_t address = get_be64(s->dma_address);
    memset(s->dma_address, 0, sizeof(s->dma_address));
    fw_cfg_dma_transfer(s, address);
}

static const MemoryRegionOps fw_cfg_dma_ports_ops = {
    .read = fw_cfg_dma_ports_read,
    .write = fw_cfg_dma_ports_write,
    .max_access_size = 8,
};

/* ---- creation ---- */

static void fw_cfg_reset(QEMUDevice *dev)
{
    FWCfgState *s = (FWCfgState *)dev;
    fw_cfg_select(s, FW_CFG_SIGNATURE);
    memset(s->dma_address, 0, sizeof(s->dma_address));
}

FWCfgState *fw_cfg_new(Error **errp)
{
    FWCfgState *s = g_new0(FWCfgState, 1);
    device_init(&s->dev, "fw_cfg_io", "fw_cfg");
    s->dev.reset = fw_cfg_reset;
    s->items = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, fw_cfg_entry_free);
    s->files = g_ptr_array_new_with_free_func(fw_cfg_file_free);

    fw_cfg_add_bytes(s, FW_CFG_SIGNATURE, fw_cfg_signature, sizeof(fw_cfg_signature));
    fw_cfg_add_i32(s, FW_CFG_ID, FW_CFG_ID_TRADITIONAL | FW_CFG_ID_DMA);
    fw_cfg_rebuild_directory(s);

    memory_region_init_io(&s->ports, &s->dev, &fw_cfg_ports_ops, s, "fw_cfg",
                          FW_CFG_PORTS_SIZE);
    memory_region_init_io(&s->dma_ports, &s->dev, &fw_cfg_dma_ports_ops, s, "fw_cfg-dma",
                          FW_CFG_DMA_PORTS_SIZE);
    address_space_map(address_space_io, &s->ports, FW_CFG_IO_BASE, 0);
    address_space_map(address_space_io, &s->dma_ports, FW_CFG_DMA_IO_BASE, 0);
    return s;
}
