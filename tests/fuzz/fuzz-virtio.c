/*
 * A hostile virtio 1.x PCI driver for the fuzzer: any device on the
 * modern virtio-pci transport (virtio-blk-pci now, virtio-net-pci when it
 * comes) gets these operations, found through its vendor capabilities as
 * Linux's virtio_pci_modern finds them. The driver keeps, per queue, where
 * it put the rings and its next available index, so a chain op lands on
 * the queue the device was told about; everything it writes comes from
 * the input, so it lies as often as the fuzzer likes.
 *
 * Operation (one byte, then operands; README.md, "virtio"):
 *   bits 0-2  0 init, 1 queue, 2 driver-ok, 3 chain, 4 kick, 5 status,
 *             6 avail index, 7 reset
 *   bits 3-4  flags of the operation
 */
#include <string.h>
#include <glib.h>
#include "fuzz.h"
#include "hw/pci/msi.h"
#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtqueue.h"

#define FUZZ_VIRTIO_QUEUES      8       /* queues the driver keeps track of */
#define MAX_CHAIN               8       /* descriptors one op writes */

/* Where this driver puts a device's rings: per PCI slot, per queue, with
 * room for 1024 entries and an indirect table; clear of the data the
 * seeds use below 16 MiB. */
#define RING_AREA               (16ULL << 20)
#define RING_SLOT_STRIDE        0x80000
#define RING_QUEUE_STRIDE       0x10000
#define RING_INDIRECT           0x8000
_Static_assert(RING_AREA + 32 * RING_SLOT_STRIDE <= FUZZ_RAM_SIZE, "rings fit in RAM");
_Static_assert(FUZZ_VIRTIO_QUEUES * RING_QUEUE_STRIDE <= RING_SLOT_STRIDE, "queues fit");

#define MSI_ADDRESS             0xfee00000u
#define MSI_DATA_BASE           0x30

enum {
    VOP_INIT, VOP_QUEUE, VOP_DRIVER_OK, VOP_CHAIN, VOP_KICK, VOP_STATUS, VOP_AVAIL_IDX,
    VOP_RESET,
};
#define VOP_FLAG_A              0x08
#define VOP_FLAG_B              0x10

/* Where a virtio structure is: which BAR, at which offset. */
typedef struct VirtioStructure {
    uint8_t bar;
    uint32_t offset;
} VirtioStructure;

typedef struct VirtioQueueLayout {
    uint64_t desc, avail;
    uint16_t size;              /* as the driver set it (may be a lie) */
    uint16_t avail_idx;         /* the next index it publishes */
} VirtioQueueLayout;

typedef struct VirtioDriverState {
    VirtioStructure common, notify;
    uint32_t notify_multiplier;
    uint8_t msix_cap;
    VirtioQueueLayout queues[FUZZ_VIRTIO_QUEUES];
} VirtioDriverState;

static VirtioDriverState *state_of(FuzzDevice *dev)
{
    return dev->state;
}

static uint64_t structure_addr(FuzzDevice *dev, const VirtioStructure *s, uint64_t offset)
{
    return pci_bar(dev->devfn, s->bar).addr + s->offset + offset;
}

static uint64_t common_read(FuzzDevice *dev, unsigned offset, unsigned size)
{
    return guest_read(address_space_memory,
                      structure_addr(dev, &state_of(dev)->common, offset), size);
}

static void common_write(FuzzDevice *dev, unsigned offset, uint64_t value, unsigned size)
{
    guest_write(address_space_memory, structure_addr(dev, &state_of(dev)->common, offset),
                value, size);
}

/* The capabilities, once: they do not move (the BARs they name may). */
static void virtio_probe(FuzzDevice *dev)
{
    VirtioDriverState *s = g_new0(VirtioDriverState, 1);
    dev->state = s;
    unsigned cap = pci_config_read_port(dev->devfn, PCI_CAPABILITY_LIST, 1);
    for (int n = 0; cap && n < 48; n++, cap = pci_config_read_port(dev->devfn, cap + 1, 1)) {
        uint8_t id = pci_config_read_port(dev->devfn, cap, 1);
        if (id == PCI_CAP_ID_MSIX) {
            s->msix_cap = cap;
            continue;
        }
        if (id != PCI_CAP_ID_VNDR) {
            continue;
        }
        VirtioStructure found = {
            .bar = pci_config_read_port(dev->devfn, cap + 4, 1),
            .offset = pci_config_read_port(dev->devfn, cap + 8, 4),
        };
        switch (pci_config_read_port(dev->devfn, cap + 3, 1)) {
        case VIRTIO_PCI_CAP_COMMON_CFG:
            s->common = found;
            break;
        case VIRTIO_PCI_CAP_NOTIFY_CFG:
            s->notify = found;
            s->notify_multiplier = pci_config_read_port(dev->devfn, cap + 16, 4);
            break;
        }
    }
}

static void virtio_reset_state(FuzzDevice *dev)
{
    memset(state_of(dev)->queues, 0, sizeof(state_of(dev)->queues));
}

static uint64_t ring_base(FuzzDevice *dev, unsigned queue)
{
    return RING_AREA + PCI_SLOT(dev->devfn) * RING_SLOT_STRIDE + queue * RING_QUEUE_STRIDE;
}

/* Every MSI-X vector to the LAPIC window, then the capability on. */
static void msix_enable(FuzzDevice *dev)
{
    VirtioDriverState *s = state_of(dev);
    if (!s->msix_cap) {
        return;
    }
    uint16_t control = pci_config_read_port(dev->devfn, s->msix_cap + 2, 2);
    uint32_t table = pci_config_read_port(dev->devfn, s->msix_cap + 4, 4);
    uint64_t base = pci_bar(dev->devfn, table & 7).addr + (table & ~7u);
    for (unsigned v = 0; v <= (control & 0x7ffu) && v < FUZZ_VIRTIO_QUEUES + 1; v++) {
        guest_write(address_space_memory, base + v * MSIX_TABLE_ENTRY_SIZE, MSI_ADDRESS, 4);
        guest_write(address_space_memory, base + v * MSIX_TABLE_ENTRY_SIZE + 8,
                    MSI_DATA_BASE + v, 4);
        guest_write(address_space_memory, base + v * MSIX_TABLE_ENTRY_SIZE + 12, 0, 4);
    }
    pci_config_write_port(dev->devfn, s->msix_cap + 2, control | 0x8000, 2);
}

/*
 * As virtio_dev_probe: reset, ACKNOWLEDGE, DRIVER, features, FEATURES_OK.
 * Operands: mask:8, the driver's features being the device's under the
 * mask (flag A: the mask itself, offering what the device does not).
 * Flag B: MSI-X on, the configuration vector 0.
 */
static void driver_init(FuzzDevice *dev, FuzzInput *in, unsigned flags)
{
    uint64_t mask = input_take(in, 8);
    pci_enable(dev->devfn, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    common_write(dev, VIRTIO_PCI_COMMON_STATUS, 0, 1);
    common_write(dev, VIRTIO_PCI_COMMON_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE, 1);
    common_write(dev, VIRTIO_PCI_COMMON_STATUS,
                 VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER, 1);
    uint64_t features = mask;
    if (!(flags & VOP_FLAG_A)) {
        common_write(dev, VIRTIO_PCI_COMMON_DFSELECT, 0, 4);
        features = common_read(dev, VIRTIO_PCI_COMMON_DF, 4);
        common_write(dev, VIRTIO_PCI_COMMON_DFSELECT, 1, 4);
        features = (features | common_read(dev, VIRTIO_PCI_COMMON_DF, 4) << 32) & mask;
    }
    for (unsigned word = 0; word < 2; word++) {
        common_write(dev, VIRTIO_PCI_COMMON_GFSELECT, word, 4);
        common_write(dev, VIRTIO_PCI_COMMON_GF, features >> (32 * word), 4);
    }
    common_write(dev, VIRTIO_PCI_COMMON_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE |
                 VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK, 1);
    if (flags & VOP_FLAG_B) {
        msix_enable(dev);
        common_write(dev, VIRTIO_PCI_COMMON_MSIX, 0, 2);
    }
    virtio_reset_state(dev);
}

/*
 * Set up and enable a queue. Operands: queue:1 size_log2:1 vector:2;
 * flag A: desc:8 avail:8 used:8 given (anywhere), else this driver's
 * layout. A size_log2 above 15 writes that byte as the size itself.
 */
static void virtio_queue(FuzzDevice *dev, FuzzInput *in, unsigned flags)
{
    unsigned queue = input_take(in, 1);
    unsigned size_log2 = input_take(in, 1);
    uint16_t vector = input_take(in, 2);
    uint16_t size = size_log2 <= 15 ? 1u << size_log2 : size_log2;
    VirtioQueueLayout layout = { .size = size };
    uint64_t used;
    if (flags & VOP_FLAG_A) {
        layout.desc = input_take(in, 8);
        layout.avail = input_take(in, 8);
        used = input_take(in, 8);
    } else {
        layout.desc = ring_base(dev, queue % FUZZ_VIRTIO_QUEUES);
        layout.avail = layout.desc + vring_desc_size(size);
        used = (layout.avail + vring_avail_size(size) + 3) & ~3ULL;
    }
    common_write(dev, VIRTIO_PCI_COMMON_Q_SELECT, queue, 2);
    common_write(dev, VIRTIO_PCI_COMMON_Q_SIZE, size, 2);
    common_write(dev, VIRTIO_PCI_COMMON_Q_DESCLO, (uint32_t)layout.desc, 4);
    common_write(dev, VIRTIO_PCI_COMMON_Q_DESCHI, layout.desc >> 32, 4);
    common_write(dev, VIRTIO_PCI_COMMON_Q_AVAILLO, (uint32_t)layout.avail, 4);
    common_write(dev, VIRTIO_PCI_COMMON_Q_AVAILHI, layout.avail >> 32, 4);
    common_write(dev, VIRTIO_PCI_COMMON_Q_USEDLO, (uint32_t)used, 4);
    common_write(dev, VIRTIO_PCI_COMMON_Q_USEDHI, used >> 32, 4);
    common_write(dev, VIRTIO_PCI_COMMON_Q_MSIX, vector, 2);
    common_write(dev, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
    state_of(dev)->queues[queue % FUZZ_VIRTIO_QUEUES] = layout;
}

static void virtio_kick(FuzzDevice *dev, uint16_t queue)
{
    VirtioDriverState *s = state_of(dev);
    guest_write(address_space_memory,
                structure_addr(dev, &s->notify, (uint64_t)queue * s->notify_multiplier),
                queue, 2);
}

/* The avail ring's index field, and its ring entry i. */
static void publish(VirtioQueueLayout *q, uint16_t head)
{
    uint16_t size = q->size ? q->size : 1;
    guest_write(address_space_memory, q->avail + 4 + 2ULL * (q->avail_idx % size), head, 2);
    q->avail_idx++;
    guest_write(address_space_memory, q->avail + 2, q->avail_idx, 2);
}

/*
 * A descriptor chain made available. Operands: queue:1 head:2 count:1,
 * then count (1..8) descriptors of addr:4 len:4 flags:2 next:2, written
 * from slot head on. Flag A: they form an indirect table, and slot head
 * is one INDIRECT descriptor pointing at it. Flag B: kick the queue.
 */
static void virtio_chain(FuzzDevice *dev, FuzzInput *in, unsigned flags)
{
    unsigned queue = input_take(in, 1) % FUZZ_VIRTIO_QUEUES;
    uint16_t head = input_take(in, 2);
    unsigned count = input_take(in, 1) % MAX_CHAIN + 1;
    VirtioQueueLayout *q = &state_of(dev)->queues[queue];
    uint16_t size = q->size ? q->size : 1;
    VRingDesc descs[MAX_CHAIN];
    for (unsigned i = 0; i < count; i++) {
        descs[i].addr = input_take(in, 4);
        descs[i].len = input_take(in, 4);
        descs[i].flags = input_take(in, 2);
        descs[i].next = input_take(in, 2);
    }
    if (flags & VOP_FLAG_A) {
        uint64_t table = ring_base(dev, queue) + RING_INDIRECT;
        guest_write_block(table, descs, count * sizeof(VRingDesc));
        VRingDesc indirect = {
            .addr = table, .len = count * sizeof(VRingDesc), .flags = VRING_DESC_F_INDIRECT,
        };
        guest_write_block(q->desc + sizeof(VRingDesc) * (head % size), &indirect,
                          sizeof(indirect));
    } else {
        for (unsigned i = 0; i < count; i++) {
            guest_write_block(q->desc + sizeof(VRingDesc) * ((head + i) % size), &descs[i],
                              sizeof(VRingDesc));
        }
    }
    publish(q, head);
    if (flags & VOP_FLAG_B) {
        virtio_kick(dev, queue);
    }
}

static void virtio_op(FuzzDevice *dev, FuzzInput *in)
{
    uint8_t op = input_take(in, 1);
    unsigned flags = op & (VOP_FLAG_A | VOP_FLAG_B);
    switch (op & 7) {
    case VOP_INIT:
        driver_init(dev, in, flags);
        break;
    case VOP_QUEUE:
        virtio_queue(dev, in, flags);
        break;
    case VOP_DRIVER_OK:
        common_write(dev, VIRTIO_PCI_COMMON_STATUS,
                     common_read(dev, VIRTIO_PCI_COMMON_STATUS, 1) | VIRTIO_CONFIG_S_DRIVER_OK,
                     1);
        break;
    case VOP_CHAIN:
        virtio_chain(dev, in, flags);
        break;
    case VOP_KICK:
        virtio_kick(dev, input_take(in, 2));
        break;
    case VOP_STATUS:
        common_write(dev, VIRTIO_PCI_COMMON_STATUS, input_take(in, 1), 1);
        break;
    case VOP_AVAIL_IDX: {
        /* A published index the driver never filled (a hostile jump). */
        VirtioQueueLayout *q = &state_of(dev)->queues[input_take(in, 1) % FUZZ_VIRTIO_QUEUES];
        q->avail_idx = input_take(in, 2);
        guest_write(address_space_memory, q->avail + 2, q->avail_idx, 2);
        break;
    }
    case VOP_RESET:
        common_write(dev, VIRTIO_PCI_COMMON_STATUS, 0, 1);
        virtio_reset_state(dev);
        break;
    }
}

const FuzzDriver fuzz_virtio_driver = {
    .name = "virtio-pci",
    .probe = virtio_probe,
    .reset = virtio_reset_state,
    .op = virtio_op,
};
