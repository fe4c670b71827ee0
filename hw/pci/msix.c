/*
 * MSI-X (PCI Local Bus Specification 3.0, 6.8.2): a capability in config
 * space, and the vector table and the pending bit array (PBA) as two
 * regions in a memory BAR. The BAR is a container: either one of MSI-X's
 * own, with the table at offset 0 and the PBA at the first 4 KiB boundary
 * after it so the two never share a page, or one the function shares with
 * its other registers (virtio-pci puts its configuration structures and
 * MSI-X in one BAR, and Linux expects that layout).
 *
 * The table is accessed with aligned 4- or 8-byte reads and writes; the PBA
 * is read-only. Both regions are owned by the function, so their accesses
 * run under the same device lock as config writes and msix_notify().
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "hw/pci/msi.h"
#include "hw/pci/pci-vector-irqfd.h"
#include "qemu/log.h"

#define MSIX_CONTROL                2
#define  MSIX_CONTROL_TABLE_SIZE        0x07ff  /* vectors - 1 */
#define  MSIX_CONTROL_FUNCTION_MASK     0x4000
#define  MSIX_CONTROL_ENABLE            0x8000
#define MSIX_TABLE_OFFSET_BIR       4
#define MSIX_PBA_OFFSET_BIR         8
#define MSIX_CAP_SIZE               12
#define MSIX_PBA_ALIGN              4096

/* Dwords of a table entry. */
#define MSIX_ENTRY_ADDRESS_LO       0
#define MSIX_ENTRY_ADDRESS_HI       1
#define MSIX_ENTRY_DATA             2
#define MSIX_ENTRY_VECTOR_CONTROL   3
#define  MSIX_VECTOR_MASKED             0x1
#define MSIX_ENTRY_DWORDS           (MSIX_TABLE_ENTRY_SIZE / 4)

struct MSIXState {
    PCIDevice *dev;
    uint8_t cap;
    unsigned nr_vectors;
    uint32_t pba_size;          /* bytes, whole qwords */
    MemoryRegion table_region, pba_region;
    MemoryRegion exclusive_bar; /* the BAR, when it is MSI-X's own */
    uint32_t *table;            /* MSIX_ENTRY_DWORDS per vector */
    uint64_t *pba;              /* one bit per vector */
    PCIVectorIrqfd **notifiers; /* per vector, NULL: none bound */
};

static uint32_t *msix_entry(MSIXState *s, unsigned vector)
{
    return &s->table[vector * MSIX_ENTRY_DWORDS];
}

static bool msix_pending(const MSIXState *s, unsigned vector)
{
    return s->pba[vector / 64] & (1ULL << (vector % 64));
}

static void msix_set_pending(MSIXState *s, unsigned vector, bool pending)
{
    uint64_t bit = 1ULL << (vector % 64);
    s->pba[vector / 64] = pending ? s->pba[vector / 64] | bit : s->pba[vector / 64] & ~bit;
}

static uint16_t msix_control(const PCIDevice *dev)
{
    return pci_get_word(dev, dev->msix->cap + MSIX_CONTROL);
}

bool msix_enabled(const PCIDevice *dev)
{
    return dev->msix && (msix_control(dev) & MSIX_CONTROL_ENABLE);
}

bool msix_vector_masked(const PCIDevice *dev, unsigned vector)
{
    MSIXState *s = dev->msix;
    if (!s || vector >= s->nr_vectors) {
        return true;
    }
    return (msix_control(dev) & MSIX_CONTROL_FUNCTION_MASK) ||
           (msix_entry(s, vector)[MSIX_ENTRY_VECTOR_CONTROL] & MSIX_VECTOR_MASKED);
}

static uint64_t msix_address(MSIXState *s, unsigned vector)
{
    const uint32_t *entry = msix_entry(s, vector);
    return entry[MSIX_ENTRY_ADDRESS_LO] | (uint64_t)entry[MSIX_ENTRY_ADDRESS_HI] << 32;
}

static void msix_send(MSIXState *s, unsigned vector)
{
    msi_send_message(msix_address(s, vector), msix_entry(s, vector)[MSIX_ENTRY_DATA]);
}

/* Send vector if it is pending and may be sent now. */
static void msix_deliver_pending(MSIXState *s, unsigned vector)
{
    if (msix_pending(s, vector) && msix_enabled(s->dev) &&
        !msix_vector_masked(s->dev, vector)) {
        msix_set_pending(s, vector, false);
        msix_send(s, vector);
    }
}

void msix_notify(PCIDevice *dev, unsigned vector)
{
    MSIXState *s = dev->msix;
    /* A function whose MSI-X is off signals INTx instead; nothing to send. */
    if (!msix_enabled(dev)) {
        return;
    }
    if (vector >= s->nr_vectors) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: MSI-X vector %u beyond the %u offered: dropped\n",
                      dev->qdev.id, vector, s->nr_vectors);
        return;
    }
    if (msix_vector_masked(dev, vector)) {
        msix_set_pending(s, vector, true);
        return;
    }
    msix_send(s, vector);
}

/* ---- vectors raised through an EventNotifier (irqfd) ---- */

/* After any change of a vector (its entry, the function's control, a
 * reset): the signals that waited in user space first, then the kernel
 * delivers for as long as the vector is deliverable, with its message. */
static void msix_vector_update(MSIXState *s, unsigned vector)
{
    PCIVectorIrqfd *v = s->notifiers ? s->notifiers[vector] : NULL;
    if (!v) {
        return;
    }
    bool deliverable = msix_enabled(s->dev) && !msix_vector_masked(s->dev, vector);
    pci_vector_irqfd_update(v, deliverable, msix_address(s, vector),
                            msix_entry(s, vector)[MSIX_ENTRY_DATA]);
}

/* A PBA read must show the signals that arrived while masked. */
static void msix_take_all_signals(MSIXState *s)
{
    for (unsigned vector = 0; s->notifiers && vector < s->nr_vectors; vector++) {
        if (s->notifiers[vector]) {
            pci_vector_irqfd_take_signals(s->notifiers[vector]);
        }
    }
}

void msix_vector_use_notifier(PCIDevice *dev, unsigned vector, EventNotifier *notifier,
                              GMainContext *ctx)
{
    MSIXState *s = dev->msix;
    g_assert(s && vector < s->nr_vectors);
    if (!s->notifiers) {
        s->notifiers = g_new0(PCIVectorIrqfd *, s->nr_vectors);
    }
    g_assert(!s->notifiers[vector]);
    s->notifiers[vector] = pci_vector_irqfd_new(dev, "MSI-X", vector, msix_notify, notifier, ctx);
    msix_vector_update(s, vector);
}

bool msix_vector_in_kernel(const PCIDevice *dev, unsigned vector)
{
    const MSIXState *s = dev->msix;
    return s && vector < s->nr_vectors && s->notifiers && s->notifiers[vector] &&
           pci_vector_irqfd_in_kernel(s->notifiers[vector]);
}

/* ---- the vector table and the PBA ---- */

/* Dispatch keeps every access inside the region it hits; what is left to
 * check is the size and alignment the specification allows. */
static bool msix_access_valid(const MSIXState *s, const char *area, const char *what,
                              uint64_t offset, unsigned size)
{
    if ((size == 4 || size == 8) && offset % size == 0) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: MSI-X %s %s of %u bytes at 0x%" PRIx64 " is not an "
                  "aligned 4/8-byte access: ignored\n", s->dev->qdev.id, area, what, size,
                  offset);
    return false;
}

static uint64_t msix_table_read(void *opaque, uint64_t offset, unsigned size)
{
    MSIXState *s = opaque;
    if (!msix_access_valid(s, "table", "read", offset, size)) {
        return 0;
    }
    uint64_t value = s->table[offset / 4];
    if (size == 8) {
        value |= (uint64_t)s->table[offset / 4 + 1] << 32;
    }
    return value;
}

static void msix_table_write_dword(MSIXState *s, uint64_t offset, uint32_t value)
{
    unsigned vector = offset / MSIX_TABLE_ENTRY_SIZE;
    unsigned field = offset % MSIX_TABLE_ENTRY_SIZE / 4;
    switch (field) {
    case MSIX_ENTRY_ADDRESS_LO:
        s->table[offset / 4] = value & ~3u;     /* dword aligned */
        break;
    case MSIX_ENTRY_VECTOR_CONTROL:
        /* The other bits are reserved. */
        s->table[offset / 4] = value & MSIX_VECTOR_MASKED;
        msix_deliver_pending(s, vector);
        break;
    default:
        s->table[offset / 4] = value;
        break;
    }
    msix_vector_update(s, vector);
}

static void msix_table_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    MSIXState *s = opaque;
    if (!msix_access_valid(s, "table", "write", offset, size)) {
        return;
    }
    msix_table_write_dword(s, offset, value);
    if (size == 8) {
        msix_table_write_dword(s, offset + 4, value >> 32);
    }
}

static const MemoryRegionOps msix_table_ops = {
    .read = msix_table_read,
    .write = msix_table_write,
    .max_access_size = 8,
};

static uint64_t msix_pba_read(void *opaque, uint64_t offset, unsigned size)
{
    MSIXState *s = opaque;
    if (!msix_access_valid(s, "PBA", "read", offset, size)) {
        return 0;
    }
    msix_take_all_signals(s);
    return s->pba[offset / 8] >> (8 * (offset % 8));
}

static void msix_pba_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    MSIXState *s = opaque;
    qemu_log_mask(LOG_GUEST_ERROR, "%s: MSI-X PBA is read-only: write of %u bytes at 0x%"
                  PRIx64 " ignored\n", s->dev->qdev.id, size, offset);
}

static const MemoryRegionOps msix_pba_ops = {
    .read = msix_pba_read,
    .write = msix_pba_write,
    .max_access_size = 8,
};

/* ---- capability, control, reset ---- */

static uint64_t pow2_ceil(uint64_t x)
{
    uint64_t p = 1;
    while (p < x) {
        p <<= 1;
    }
    return p;
}

static MSIXState *msix_state_new(PCIDevice *dev, unsigned nr_vectors)
{
    g_assert(!dev->msix && nr_vectors >= 1 && nr_vectors <= MSIX_MAX_VECTORS);
    MSIXState *s = g_new0(MSIXState, 1);
    s->dev = dev;
    s->nr_vectors = nr_vectors;
    s->pba_size = (nr_vectors + 63) / 64 * 8;
    s->table = g_new0(uint32_t, nr_vectors * MSIX_ENTRY_DWORDS);
    s->pba = g_new0(uint64_t, s->pba_size / 8);
    return s;
}

static bool msix_ranges_apart(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len)
{
    return a + a_len <= b || b + b_len <= a;
}

/* Put s's table and PBA into BAR bar_nr, a container already registered,
 * and add the capability that points the guest to them. */
static uint8_t msix_place(MSIXState *s, unsigned bar_nr, uint32_t table_offset,
                          uint32_t pba_offset)
{
    PCIDevice *dev = s->dev;
    uint32_t table_size = s->nr_vectors * MSIX_TABLE_ENTRY_SIZE;
    g_assert(bar_nr < PCI_NUM_BARS);
    MemoryRegion *bar = dev->bars[bar_nr].region;
    /* The offsets share their dword with the BIR: qword aligned. */
    g_assert(bar && bar->is_container && !(dev->bars[bar_nr].type & PCI_BASE_ADDRESS_SPACE_IO));
    g_assert(table_offset % 8 == 0 && pba_offset % 8 == 0);
    g_assert(table_size <= bar->size && table_offset <= bar->size - table_size);
    g_assert(s->pba_size <= bar->size && pba_offset <= bar->size - s->pba_size);
    g_assert(msix_ranges_apart(table_offset, table_size, pba_offset, s->pba_size));

    s->cap = pci_add_capability(dev, PCI_CAP_ID_MSIX, MSIX_CAP_SIZE);
    pci_set_word(dev, s->cap + MSIX_CONTROL, s->nr_vectors - 1);
    pci_set_wmask(dev, s->cap + MSIX_CONTROL, MSIX_CONTROL_ENABLE | MSIX_CONTROL_FUNCTION_MASK,
                  2);
    pci_set_long(dev, s->cap + MSIX_TABLE_OFFSET_BIR, table_offset | bar_nr);
    pci_set_long(dev, s->cap + MSIX_PBA_OFFSET_BIR, pba_offset | bar_nr);
    dev->msix = s;
    msix_reset(dev);

    memory_region_init_io(&s->table_region, &dev->qdev, &msix_table_ops, s, "msix-table",
                          table_size);
    memory_region_init_io(&s->pba_region, &dev->qdev, &msix_pba_ops, s, "msix-pba",
                          s->pba_size);
    memory_region_add_subregion(bar, table_offset, &s->table_region, 0);
    memory_region_add_subregion(bar, pba_offset, &s->pba_region, 0);
    return s->cap;
}

uint8_t msix_init(PCIDevice *dev, unsigned nr_vectors, unsigned bar_nr)
{
    MSIXState *s = msix_state_new(dev, nr_vectors);
    uint32_t table_size = nr_vectors * MSIX_TABLE_ENTRY_SIZE;
    uint32_t pba_offset = (table_size + MSIX_PBA_ALIGN - 1) & ~(MSIX_PBA_ALIGN - 1);
    memory_region_init_container(&s->exclusive_bar, &dev->qdev, "msix",
                                 pow2_ceil(pba_offset + s->pba_size));
    pci_register_bar(dev, bar_nr, 0, &s->exclusive_bar);
    return msix_place(s, bar_nr, 0, pba_offset);
}

uint8_t msix_init_in_bar(PCIDevice *dev, unsigned nr_vectors, unsigned bar_nr,
                         uint32_t table_offset, uint32_t pba_offset)
{
    return msix_place(msix_state_new(dev, nr_vectors), bar_nr, table_offset, pba_offset);
}

void msix_config_written(PCIDevice *dev, uint32_t offset, unsigned len)
{
    MSIXState *s = dev->msix;
    uint32_t control = s->cap + MSIX_CONTROL;
    if (offset >= control + 2 || offset + len <= control) {
        return;
    }
    /* Enabling MSI-X or clearing the function mask releases what waited;
     * any change of the two may start or stop the kernel's delivery. */
    for (unsigned vector = 0; vector < s->nr_vectors; vector++) {
        msix_deliver_pending(s, vector);
        msix_vector_update(s, vector);
    }
}

void msix_reset(PCIDevice *dev)
{
    MSIXState *s = dev->msix;
    pci_set_word(dev, s->cap + MSIX_CONTROL, msix_control(dev) &
                 ~(MSIX_CONTROL_ENABLE | MSIX_CONTROL_FUNCTION_MASK));
    memset(s->table, 0, (size_t)s->nr_vectors * MSIX_TABLE_ENTRY_SIZE);
    for (unsigned vector = 0; vector < s->nr_vectors; vector++) {
        msix_entry(s, vector)[MSIX_ENTRY_VECTOR_CONTROL] = MSIX_VECTOR_MASKED;
    }
    memset(s->pba, 0, s->pba_size);
    /* The kernel stops delivering; signals from before the reset are
     * dropped, as MSI-X is off. */
    for (unsigned vector = 0; vector < s->nr_vectors; vector++) {
        msix_vector_update(s, vector);
    }
}
