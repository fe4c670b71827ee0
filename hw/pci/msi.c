/*
 * MSI (PCI Local Bus Specification 3.0, 6.8.1): a capability with 64-bit
 * message address and per-vector masking. The guest's registers live in
 * config space; only the vector count the device offers is kept aside.
 *
 * A vector raised while masked sets its pending bit; the config write that
 * unmasks it (or enables MSI) sends it then. A vector bound to an event
 * notifier (msi_vector_use_notifier) follows every config write and reset
 * of the capability: irqfd while deliverable, user space otherwise.
 */
#include <glib.h>
#include "hw/pci/msi.h"
#include "hw/pci/pci-vector-irqfd.h"
#include "qemu/log.h"

#define MSI_CONTROL             2
#define  MSI_CONTROL_ENABLE         0x0001
#define  MSI_CONTROL_MMC_SHIFT      1       /* log2 of vectors offered */
#define  MSI_CONTROL_MME_SHIFT      4       /* log2 of vectors enabled */
#define  MSI_CONTROL_MME_MASK       0x0070
#define  MSI_CONTROL_64BIT          0x0080
#define  MSI_CONTROL_MASKABLE       0x0100
#define MSI_ADDRESS_LO          4
#define MSI_ADDRESS_HI          8
#define MSI_DATA                12
#define MSI_MASK_BITS           16
#define MSI_PENDING_BITS        20
#define MSI_CAP_SIZE            24
#define MSI_MAX_VECTORS         32
/* The message address is dword aligned. */
#define MSI_ADDRESS_LO_WRITABLE 0xfffffffc

struct MSIState {
    uint8_t cap;
    unsigned nr_vectors;
    PCIVectorIrqfd *notifiers[MSI_MAX_VECTORS];    /* NULL: none bound */
};

static uint32_t msi_vector_bits(unsigned nr_vectors)
{
    return nr_vectors >= 32 ? UINT32_MAX : (1u << nr_vectors) - 1;
}

uint8_t msi_init(PCIDevice *dev, unsigned nr_vectors)
{
    g_assert(!dev->msi && nr_vectors >= 1 && nr_vectors <= MSI_MAX_VECTORS &&
             !(nr_vectors & (nr_vectors - 1)));
    uint8_t cap = pci_add_capability(dev, PCI_CAP_ID_MSI, MSI_CAP_SIZE);
    unsigned log2_vectors = __builtin_ctz(nr_vectors);
    pci_set_word(dev, cap + MSI_CONTROL, log2_vectors << MSI_CONTROL_MMC_SHIFT |
                 MSI_CONTROL_64BIT | MSI_CONTROL_MASKABLE);
    pci_set_wmask(dev, cap + MSI_CONTROL, MSI_CONTROL_ENABLE | MSI_CONTROL_MME_MASK, 2);
    pci_set_wmask(dev, cap + MSI_ADDRESS_LO, MSI_ADDRESS_LO_WRITABLE, 4);
    pci_set_wmask(dev, cap + MSI_ADDRESS_HI, UINT32_MAX, 4);
    pci_set_wmask(dev, cap + MSI_DATA, 0xffff, 2);
    pci_set_wmask(dev, cap + MSI_MASK_BITS, msi_vector_bits(nr_vectors), 4);

    dev->msi = g_new0(MSIState, 1);
    dev->msi->cap = cap;
    dev->msi->nr_vectors = nr_vectors;
    return cap;
}

bool msi_enabled(const PCIDevice *dev)
{
    return dev->msi && (pci_get_word(dev, dev->msi->cap + MSI_CONTROL) & MSI_CONTROL_ENABLE);
}

/* The vectors the guest enabled; more than offered counts as all offered. */
static unsigned msi_enabled_vectors(const PCIDevice *dev)
{
    uint16_t control = pci_get_word(dev, dev->msi->cap + MSI_CONTROL);
    unsigned log2_vectors = (control & MSI_CONTROL_MME_MASK) >> MSI_CONTROL_MME_SHIFT;
    return MIN(1u << log2_vectors, dev->msi->nr_vectors);
}

static uint64_t msi_address(const PCIDevice *dev)
{
    uint8_t cap = dev->msi->cap;
    return pci_get_long(dev, cap + MSI_ADDRESS_LO) |
           (uint64_t)pci_get_long(dev, cap + MSI_ADDRESS_HI) << 32;
}

static uint32_t msi_data(const PCIDevice *dev, unsigned vector)
{
    /* With several vectors enabled the function owns the low data bits. */
    uint32_t data = pci_get_word(dev, dev->msi->cap + MSI_DATA) & ~(msi_enabled_vectors(dev) - 1);
    return data | vector;
}

static void msi_send(const PCIDevice *dev, unsigned vector)
{
    msi_send_message(msi_address(dev), msi_data(dev, vector));
}

static bool msi_vector_masked(const PCIDevice *dev, unsigned vector)
{
    return pci_get_long(dev, dev->msi->cap + MSI_MASK_BITS) & (1u << vector);
}

void msi_notify(PCIDevice *dev, unsigned vector)
{
    /* A function whose MSI is off signals INTx instead; nothing to send. */
    if (!msi_enabled(dev)) {
        return;
    }
    if (vector >= msi_enabled_vectors(dev)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: MSI vector %u beyond the %u enabled: dropped\n",
                      dev->qdev.id, vector, msi_enabled_vectors(dev));
        return;
    }
    uint8_t cap = dev->msi->cap;
    if (msi_vector_masked(dev, vector)) {
        pci_set_long(dev, cap + MSI_PENDING_BITS,
                     pci_get_long(dev, cap + MSI_PENDING_BITS) | 1u << vector);
        return;
    }
    msi_send(dev, vector);
}

/* After any change of the capability: each bound vector with its message,
 * delivered by the kernel while it may be. */
static void msi_update_notifiers(PCIDevice *dev)
{
    for (unsigned vector = 0; vector < dev->msi->nr_vectors; vector++) {
        PCIVectorIrqfd *v = dev->msi->notifiers[vector];
        if (v) {
            bool deliverable = msi_enabled(dev) && vector < msi_enabled_vectors(dev) &&
                               !msi_vector_masked(dev, vector);
            pci_vector_irqfd_update(v, deliverable, msi_address(dev), msi_data(dev, vector));
        }
    }
}

void msi_vector_use_notifier(PCIDevice *dev, unsigned vector, EventNotifier *notifier,
                             GMainContext *ctx)
{
    g_assert(dev->msi && vector < dev->msi->nr_vectors && !dev->msi->notifiers[vector]);
    dev->msi->notifiers[vector] = pci_vector_irqfd_new(dev, "MSI", vector, msi_notify,
                                                       notifier, ctx);
    msi_update_notifiers(dev);
}

bool msi_vector_in_kernel(const PCIDevice *dev, unsigned vector)
{
    return dev->msi && vector < dev->msi->nr_vectors && dev->msi->notifiers[vector] &&
           pci_vector_irqfd_in_kernel(dev->msi->notifiers[vector]);
}

void msi_config_read(PCIDevice *dev, uint32_t offset, unsigned len)
{
    uint32_t at = dev->msi->cap + MSI_PENDING_BITS;
    if (offset >= at + 4 || offset + len <= at) {
        return;
    }
    /* The pending bits must show the signals that arrived while masked. */
    for (unsigned vector = 0; vector < dev->msi->nr_vectors; vector++) {
        if (dev->msi->notifiers[vector]) {
            pci_vector_irqfd_take_signals(dev->msi->notifiers[vector]);
        }
    }
}

void msi_config_written(PCIDevice *dev, uint32_t offset, unsigned len)
{
    uint32_t cap = dev->msi->cap;
    if (offset >= cap + MSI_CAP_SIZE || offset + len <= cap) {
        return;
    }
    msi_update_notifiers(dev);
    if (!msi_enabled(dev)) {
        return;
    }
    uint32_t pending = pci_get_long(dev, cap + MSI_PENDING_BITS);
    uint32_t deliver = pending & ~pci_get_long(dev, cap + MSI_MASK_BITS) &
                       msi_vector_bits(msi_enabled_vectors(dev));
    if (!deliver) {
        return;
    }
    pci_set_long(dev, cap + MSI_PENDING_BITS, pending & ~deliver);
    for (unsigned vector = 0; deliver; vector++, deliver >>= 1) {
        if (deliver & 1) {
            msi_send(dev, vector);
        }
    }
}

void msi_reset(PCIDevice *dev)
{
    uint8_t cap = dev->msi->cap;
    uint16_t control = pci_get_word(dev, cap + MSI_CONTROL);
    pci_set_word(dev, cap + MSI_CONTROL,
                 control & ~(MSI_CONTROL_ENABLE | MSI_CONTROL_MME_MASK));
    pci_set_long(dev, cap + MSI_ADDRESS_LO, 0);
    pci_set_long(dev, cap + MSI_ADDRESS_HI, 0);
    pci_set_word(dev, cap + MSI_DATA, 0);
    pci_set_long(dev, cap + MSI_MASK_BITS, 0);
    pci_set_long(dev, cap + MSI_PENDING_BITS, 0);
    msi_update_notifiers(dev);
}
