/*
 * The devices the harness adds to the platform, made as the command line
 * makes them: each drive from a -drive option on a small temporary raw
 * image, each device from a -device option through the device registry.
 * Adding a device to the fuzzer is one line in fuzz_devices[] (README.md,
 * "Adding a device").
 *
 * Determinism: host I/O runs on the block layer's worker threads
 * (aio=threads), but its completions run only when the harness runs the
 * main loop's context (fuzz_settle, or the drain before a reset), so what
 * the devices do depends on the input alone. Every input starts from
 * images with their first contents.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include "block/drive-config.h"
#include "fuzz.h"
#include "qemu/keyval.h"
#include "qemu/main-loop.h"
#include "sysemu/drives.h"

/* A drive, on an image of size bytes made for the run; its -drive options
 * without file=. A read-only image keeps a pattern, the others start
 * zeroed at every input. */
typedef struct FuzzDrive {
    const char *option;
    size_t size;
    bool read_only;
} FuzzDrive;

static const FuzzDrive fuzz_drives[] = {
    { "id=hd0,if=none,format=raw,aio=threads", 1 << 20 },
    { "id=cd0,if=none,media=cdrom,format=raw,aio=threads", 128 << 10, true },
    { "id=vd0,if=none,format=raw,aio=threads,discard=unmap", 1 << 20 },
};

/* The devices, created in this order after the platform's. */
static FuzzDevice fuzz_devices[] = {
    { "pdl-testdev,addr=3" },
    { "pci-testdev,addr=4" },
    { "ide-hd,drive=hd0,bus=ide.0,unit=0", &fuzz_ide_driver },
    { "ide-cd,drive=cd0,bus=ide.1,unit=0", &fuzz_ide_driver },
    { "ide-cd,bus=ide.1,unit=1", &fuzz_ide_driver },          /* an empty tray */
    { "virtio-blk-pci,drive=vd0,addr=6,num-queues=2", &fuzz_virtio_driver },
    /* Seeds name a device by its index here: new ones go at the end. */
    /* On a wire that drops what it sends and gives it frames (its
     * driver). It transmits on the thread that writes TDT, as the
     * harness runs no main loop for a bottom half. */
    { "e1000,addr=5,x-tx-defer=off,netdev=" FUZZ_E1000_WIRE_ID, &fuzz_e1000_driver },
    /* No backend either; its queues and control queue get the generic
     * hostile virtio driver. Both virtio-nets watch an emptied transmitq
     * for 2 us at most: the harness adds chains only between passes, so
     * no watch can catch one, and the default 50 us would spend the run
     * spinning; a short one still runs the watch. */
    { "virtio-net-pci,addr=7,mq=off,x-tx-poll-ns=2000", &fuzz_virtio_driver },
    /* On a wire with virtio-net headers: the host's offloads. */
    { "e1000,addr=8,mac=52:54:00:00:00:08,x-tx-defer=off,netdev=" FUZZ_E1000_VNET_WIRE_ID, &fuzz_e1000_driver },
    /* On a vnet wire too: frames filled in place into its chains. */
    { "virtio-net-pci,addr=9,mac=52:54:00:00:00:09,x-tx-poll-ns=2000,netdev=" FUZZ_VIRTIO_NET_WIRE_ID,
      &fuzz_virtio_net_driver },
};

static int image_fds[G_N_ELEMENTS(fuzz_drives)];

/* A temporary image, unlinked once the drive has it open (the harness
 * keeps a descriptor to reset it). Returns its path. */
static char *image_create(const FuzzDrive *d, int *fd, Error **errp)
{
    char *path = g_build_filename(g_get_tmp_dir(), "fuzz-platform-XXXXXX", NULL);
    *fd = g_mkstemp(path);
    if (*fd < 0 || ftruncate(*fd, d->size) < 0) {
        error_setg_errno(errp, errno, "cannot create an image in %s", g_get_tmp_dir());
        g_free(path);
        return NULL;
    }
    if (d->read_only) {
        g_autofree uint8_t *pattern = g_malloc(d->size);
        for (size_t i = 0; i < d->size; i++) {
            pattern[i] = i * 7 + (i >> 11);
        }
        if (pwrite(*fd, pattern, d->size, 0) != (ssize_t)d->size) {
            error_setg_errno(errp, errno, "cannot write %s", path);
            g_free(path);
            return NULL;
        }
    }
    return path;
}

static bool drives_create(Error **errp)
{
    GPtrArray *cfgs = drive_config_list_new();     /* kept: the drives point into it */
    char *paths[G_N_ELEMENTS(fuzz_drives)] = { 0 };
    bool ok = true;
    for (size_t i = 0; ok && i < G_N_ELEMENTS(fuzz_drives); i++) {
        paths[i] = image_create(&fuzz_drives[i], &image_fds[i], errp);
        g_autofree char *option = g_strdup_printf("file=%s,%s", paths[i],
                                                  fuzz_drives[i].option);
        ok = paths[i] && drive_add(cfgs, option, errp);
        if (ok) {
            DriveConfig *cfg = g_ptr_array_index(cfgs, cfgs->len - 1);
            cfg->origin = g_strdup_printf("-drive %s", option);
        }
    }
    ok = ok && drives_open(cfgs, errp);
    for (size_t i = 0; i < G_N_ELEMENTS(fuzz_drives); i++) {
        if (paths[i]) {
            unlink(paths[i]);
        }
        g_free(paths[i]);
    }
    return ok;
}

/* -device OPTION through the registry, as the command line and the
 * machine do it; notes where a PCI function or an IDE drive landed. */
static bool device_create(FuzzDevice *dev, const DeviceBuses *buses, Error **errp)
{
    g_autoptr(GPtrArray) items = keyval_parse(dev->option, "driver", errp);
    if (!items) {
        return false;
    }
    const KeyvalItem *driver = g_ptr_array_index(items, 0);
    const DeviceTypeInfo *type = device_type_find(driver->value);
    g_autofree char *origin = g_strdup_printf("-device %s", dev->option);
    if (!type) {
        error_setg(errp, "%s: no such device type", origin);
        return false;
    }
    DeviceConfig *cfg = device_config_new(type, origin);
    bool ok = true;
    dev->ide_bus = dev->ide_unit = -1;
    for (guint i = 1; ok && i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        ok = device_config_set(cfg, item->key, item->value, errp);
        if (strcmp(item->key, "bus") == 0 && g_str_has_prefix(item->value, "ide.")) {
            dev->ide_bus = atoi(item->value + strlen("ide."));
        } else if (strcmp(item->key, "unit") == 0) {
            dev->ide_unit = atoi(item->value);
        }
    }
    dev->qdev = ok ? device_config_realize(cfg, buses, errp) : NULL;
    device_config_free(cfg);
    if (!dev->qdev) {
        return false;
    }
    dev->devfn = type->bus == DEVICE_BUS_PCI ? ((PCIDevice *)dev->qdev)->devfn : -1;
    return true;
}

bool fuzz_devices_create(const DeviceBuses *buses, Error **errp)
{
    if (!drives_create(errp) || !fuzz_wires_create(errp)) {
        return false;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(fuzz_devices); i++) {
        if (!device_create(&fuzz_devices[i], buses, errp)) {
            return false;
        }
    }
    return true;
}

/* Called once every device is on the bus and has its BARs. */
void fuzz_devices_probe(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(fuzz_devices); i++) {
        FuzzDevice *dev = &fuzz_devices[i];
        if (dev->driver && dev->driver->probe) {
            dev->driver->probe(dev);
        }
    }
}

unsigned fuzz_device_count(void)
{
    return G_N_ELEMENTS(fuzz_devices);
}

FuzzDevice *fuzz_device(unsigned index)
{
    return &fuzz_devices[index % G_N_ELEMENTS(fuzz_devices)];
}

void fuzz_devices_reset(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(fuzz_drives); i++) {
        /* Zeroed again: drop the blocks, then give the size back. */
        if (!fuzz_drives[i].read_only &&
            (ftruncate(image_fds[i], 0) < 0 || ftruncate(image_fds[i], fuzz_drives[i].size) < 0)) {
            g_error("fuzz-platform: cannot reset an image: %s", g_strerror(errno));
        }
    }
    for (size_t i = 0; i < G_N_ELEMENTS(fuzz_devices); i++) {
        FuzzDevice *dev = &fuzz_devices[i];
        if (dev->driver && dev->driver->reset) {
            dev->driver->reset(dev);
        }
    }
}

void fuzz_settle(void)
{
    device_drain_all();
    /* What the completions scheduled (interrupt bottom halves); bounded,
     * so that a source that keeps itself ready shows as slowness, not a
     * harness that never returns. */
    for (int i = 0; i < 64 && g_main_context_iteration(main_loop_context(), FALSE); i++) {
    }
}
