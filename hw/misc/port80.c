/*
 * Port 0x80: the POST code port, which operating systems also write to as a
 * short I/O delay (Linux's io_delay=0x80). Writes latch the byte and reads
 * return the last byte written, as on PCs whose chipset decodes a POST code
 * latch there. (QEMU's ioport80 region returns 0xff instead; nothing depends
 * on either, and the latch makes the port observable.)
 *
 * The port is hit on every delayed I/O of some guests, so it takes no
 * device lock: the latch is a single atomic byte.
 */
#include <stdatomic.h>
#include "exec/memory.h"
#include "hw/misc/isa-misc.h"
#include "hw/qdev.h"

typedef struct Port80State {
    QEMUDevice dev;
    MemoryRegion io;
    atomic_uchar post_code;
} Port80State;

static uint64_t port80_read(void *opaque, uint64_t offset, unsigned size)
{
    Port80State *s = opaque;
    return atomic_load_explicit(&s->post_code, memory_order_relaxed);
}

static void port80_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    Port80State *s = opaque;
    atomic_store_explicit(&s->post_code, value & 0xff, memory_order_relaxed);
}

static const MemoryRegionOps port80_ops = {
    .read = port80_read,
    .write = port80_write,
    .max_access_size = 1,
    .locking = REGION_LOCK_FREE,
};

/* A reset is a new POST: the latch starts from 0 again. */
static void port80_reset(QEMUDevice *dev)
{
    Port80State *s = (Port80State *)dev;
    atomic_store_explicit(&s->post_code, 0, memory_order_relaxed);
}

void port80_new(void)
{
    Port80State *s = g_new0(Port80State, 1);
    device_init(&s->dev, "ioport80", "ioport80");
    s->dev.reset = port80_reset;
    memory_region_init_io(&s->io, &s->dev, &port80_ops, s, "ioport80", 1);
    address_space_map(address_space_io, &s->io, PORT80_IOBASE, 0);
}
