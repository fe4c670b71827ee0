/*
 * isa-debug-exit: lets a test guest end the VMM with a status of its
 * choosing. As documented for QEMU's device, writing V exits with status
 * (V << 1) | 1, so a guest can never fake a plain success (0); reads return
 * 0, as QEMU's device does.
 *
 * The device has no mutable state, so its callbacks run without the device
 * lock; shutdown requests are thread-safe.
 */
#include "exec/memory.h"
#include "hw/misc/isa-misc.h"
#include "hw/qdev-registry.h"
#include "sysemu/runstate.h"

typedef struct DebugExitState {
    QEMUDevice dev;
    MemoryRegion io;
} DebugExitState;

static uint64_t debug_exit_read(void *opaque, uint64_t offset, unsigned size)
{
    return 0;
}

static void debug_exit_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    qemu_system_exit_request((int)((value << 1) | 1));
}

static const MemoryRegionOps debug_exit_ops = {
    .read = debug_exit_read,
    .write = debug_exit_write,
    .max_access_size = 4,
    .locking = REGION_LOCK_FREE,
};

QEMUDevice *isa_debug_exit_new(uint32_t iobase, uint32_t iosize, Error **errp)
{
    if (iosize != 1 && iosize != 2 && iosize != 4) {
        error_setg(errp, "isa-debug-exit: iosize=%u is invalid (use 1, 2 or 4)", iosize);
        return NULL;
    }
    if ((uint64_t)iobase + iosize > 0x10000) {
        error_setg(errp, "isa-debug-exit: iobase=0x%x with iosize=%u extends past port 0xffff",
                   iobase, iosize);
        return NULL;
    }
    DebugExitState *s = g_new0(DebugExitState, 1);
    device_init(&s->dev, "isa-debug-exit", "isa-debug-exit");
    /* Nothing to reset: the device has no state. */
    memory_region_init_io(&s->io, &s->dev, &debug_exit_ops, s, "isa-debug-exit", iosize);
    address_space_map(address_space_io, &s->io, iobase, 0);
    return &s->dev;
}

/* ---- registration ---- */

typedef struct DebugExitOptions {
    uint32_t iobase, iosize;
} DebugExitOptions;

static const DeviceProperty debug_exit_properties[] = {
    DEFINE_PROP_UINT32("iobase", DebugExitOptions, iobase, ISA_DEBUG_EXIT_DEFAULT_IOBASE, NULL),
    DEFINE_PROP_UINT32("iosize", DebugExitOptions, iosize, ISA_DEBUG_EXIT_DEFAULT_IOSIZE, NULL),
};

static QEMUDevice *debug_exit_realize(const void *options, const DeviceBuses *buses,
                                      Error **errp)
{
    const DebugExitOptions *o = options;
    return isa_debug_exit_new(o->iobase, o->iosize, errp);
}

const DeviceTypeInfo isa_debug_exit_type = {
    .name = "isa-debug-exit",
    .bus = DEVICE_BUS_ISA,
    .category = DEVICE_CATEGORY_MISC,
    .description = "writing V to its port exits with status (V << 1) | 1",
    DEVICE_PROPERTIES(debug_exit_properties),
    .options_size = sizeof(DebugExitOptions),
    .realize = debug_exit_realize,
};
