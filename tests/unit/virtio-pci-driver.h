/*
 * The driver's side of a modern virtio-pci function, for unit tests, as
 * Linux's virtio_pci_modern drives it: the structures found by walking
 * the vendor capabilities, the common configuration through MMIO
 * dispatch, queues in the test's guest RAM (vring-driver.h), MSI-X set up
 * in the function's table, kicks written at the queues' notify addresses.
 * The test thread is the vCPU; the main loop's context, which the test
 * runs, is the device's. Any device type: the caller creates it and gives
 * its bus and devfn.
 */
#ifndef TESTS_UNIT_VIRTIO_PCI_DRIVER_H
#define TESTS_UNIT_VIRTIO_PCI_DRIVER_H

#include <glib.h>
#include "hw/irq.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio.h"
#include "pio.h"
#include "qemu/main-loop.h"
#include "test-ram.h"
#include "vring-driver.h"

#define VPD_PCI_MEM_BASE    0xe0000000ULL
#define VPD_PCI_MEM_LIMIT   0xfebfffffULL
#define VPD_MSI_ADDRESS     0xfee00000u
#define VPD_MSI_DATA_BASE   0x40        /* vector v sends data 0x40 + v */

typedef struct VirtioPCIDriver {
    PCIBus *bus;
    unsigned devfn;
    uint64_t common, isr, device, notify;   /* guest-physical, from the caps */
    uint32_t notify_mult;
    uint64_t msix_table;
    uint8_t msix_cap;
} VirtioPCIDriver;

static inline uint32_t vpd_cfg_read(VirtioPCIDriver *d, uint32_t offset, unsigned len)
{
    return pci_bus_config_read(d->bus, d->devfn, offset, len);
}

static inline void vpd_cfg_write(VirtioPCIDriver *d, uint32_t offset, uint32_t value,
                                 unsigned len)
{
    pci_bus_config_write(d->bus, d->devfn, offset, value, len);
}

static inline uint64_t vpd_bar_address(VirtioPCIDriver *d, unsigned nr)
{
    uint64_t lo = vpd_cfg_read(d, PCI_BASE_ADDRESS_0 + 4 * nr, 4);
    uint64_t addr = lo & ~0xfULL;
    if (lo & PCI_BASE_ADDRESS_MEM_TYPE_64) {
        addr |= (uint64_t)vpd_cfg_read(d, PCI_BASE_ADDRESS_0 + 4 * (nr + 1), 4) << 32;
    }
    return addr;
}

/* The machine's share: BARs assigned, then the decoding and bus
 * mastering given as PCI_COMMAND bits turned on. */
static inline void vpd_enable(VirtioPCIDriver *d, PCIBus *bus, unsigned devfn, uint16_t command)
{
    *d = (VirtioPCIDriver) { .bus = bus, .devfn = devfn };
    Error *err = NULL;
    g_assert_true(pci_bus_assign_resources(bus, 0xc000, 0xffff, VPD_PCI_MEM_BASE,
                                           VPD_PCI_MEM_LIMIT, &err));
    vpd_cfg_write(d, PCI_COMMAND, command, 2);
}

/* Each modern structure found by its capability, and the MSI-X table;
 * what the function lacks stays 0. Again after a BAR moves. */
static inline void vpd_find_structures(VirtioPCIDriver *d)
{
    d->common = d->isr = d->device = d->notify = d->msix_table = 0;
    d->notify_mult = d->msix_cap = 0;
    uint64_t *where[5] = {
        [VIRTIO_PCI_CAP_COMMON_CFG] = &d->common, [VIRTIO_PCI_CAP_NOTIFY_CFG] = &d->notify,
        [VIRTIO_PCI_CAP_ISR_CFG] = &d->isr, [VIRTIO_PCI_CAP_DEVICE_CFG] = &d->device,
    };
    for (uint8_t cap = vpd_cfg_read(d, PCI_CAPABILITY_LIST, 1); cap;
         cap = vpd_cfg_read(d, cap + 1, 1)) {
        uint8_t id = vpd_cfg_read(d, cap, 1);
        uint8_t type = vpd_cfg_read(d, cap + 3, 1);
        if (id == PCI_CAP_ID_MSIX) {
            d->msix_cap = cap;
        } else if (id == PCI_CAP_ID_VNDR && type < G_N_ELEMENTS(where) && where[type]) {
            *where[type] = vpd_bar_address(d, vpd_cfg_read(d, cap + 4, 1)) +
                           vpd_cfg_read(d, cap + 8, 4);
            if (type == VIRTIO_PCI_CAP_NOTIFY_CFG) {
                d->notify_mult = vpd_cfg_read(d, cap + 16, 4);
            }
        }
    }
    if (d->msix_cap) {
        uint32_t table = vpd_cfg_read(d, d->msix_cap + 4, 4);
        d->msix_table = vpd_bar_address(d, table & 7) + (table & ~7u);
    }
}

/* A modern function as Linux's virtio_pci_modern probe finds it: memory
 * decoding and bus mastering on, every structure and MSI-X there. */
static inline void vpd_attach(VirtioPCIDriver *d, PCIBus *bus, unsigned devfn)
{
    vpd_enable(d, bus, devfn, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    vpd_find_structures(d);
    g_assert_true(d->common && d->notify && d->isr && d->device && d->msix_cap);
}

static inline uint32_t vpd_common_read(VirtioPCIDriver *d, unsigned offset, unsigned size)
{
    return mem_read(d->common + offset, size);
}

static inline void vpd_common_write(VirtioPCIDriver *d, unsigned offset, uint32_t value,
                                    unsigned size)
{
    mem_write(d->common + offset, value, size);
}

static inline uint64_t vpd_device_features(VirtioPCIDriver *d)
{
    vpd_common_write(d, VIRTIO_PCI_COMMON_DFSELECT, 0, 4);
    uint64_t f = vpd_common_read(d, VIRTIO_PCI_COMMON_DF, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_DFSELECT, 1, 4);
    return f | (uint64_t)vpd_common_read(d, VIRTIO_PCI_COMMON_DF, 4) << 32;
}

static inline void vpd_set_driver_features(VirtioPCIDriver *d, uint64_t f)
{
    for (unsigned word = 0; word < 2; word++) {
        vpd_common_write(d, VIRTIO_PCI_COMMON_GFSELECT, word, 4);
        vpd_common_write(d, VIRTIO_PCI_COMMON_GF, (uint32_t)(f >> (32 * word)), 4);
    }
}

static inline uint8_t vpd_status(VirtioPCIDriver *d)
{
    return vpd_common_read(d, VIRTIO_PCI_COMMON_STATUS, 1);
}

static inline void vpd_set_status(VirtioPCIDriver *d, uint8_t s)
{
    vpd_common_write(d, VIRTIO_PCI_COMMON_STATUS, s, 1);
}

/* The function's MSI-X table, every vector v to VPD_MSI_ADDRESS with data
 * VPD_MSI_DATA_BASE + v, and MSI-X on: what a legacy driver does too. */
static inline void vpd_msix_table_setup(VirtioPCIDriver *d, unsigned nvectors)
{
    for (unsigned v = 0; v < nvectors; v++) {
        uint64_t entry = d->msix_table + v * MSIX_TABLE_ENTRY_SIZE;
        mem_write(entry, VPD_MSI_ADDRESS, 4);
        mem_write(entry + 4, 0, 4);
        mem_write(entry + 8, VPD_MSI_DATA_BASE + v, 4);
        mem_write(entry + 12, 0, 4);
    }
    vpd_cfg_write(d, d->msix_cap + 2, 0x8000, 2);
}

/* The table, then vector 0 for configuration changes, read back as Linux
 * checks that the device took it. */
static inline void vpd_enable_msix(VirtioPCIDriver *d, unsigned nvectors)
{
    vpd_msix_table_setup(d, nvectors);
    vpd_common_write(d, VIRTIO_PCI_COMMON_MSIX, 0, 2);
    g_assert_cmpuint(vpd_common_read(d, VIRTIO_PCI_COMMON_MSIX, 2), ==, 0);
}

/* Queue q laid out in tv (tv_init'd by the caller), its size chosen,
 * its vector set (read back, as Linux checks it) and enabled. Its notify
 * offset must be q: vpd_kick writes there. */
static inline void vpd_setup_queue(VirtioPCIDriver *d, unsigned q, TestVring *tv,
                                   uint16_t vector)
{
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_SELECT, q, 2);
    g_assert_cmpuint(vpd_common_read(d, VIRTIO_PCI_COMMON_Q_NOFF, 2), ==, q);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_SIZE, tv->num, 2);
    /* 64-bit addresses as two halves, as Linux writes them. */
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_DESCLO, tv->desc, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_DESCHI, 0, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_AVAILLO, tv->avail, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_AVAILHI, 0, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_USEDLO, tv->used, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_USEDHI, 0, 4);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_MSIX, vector, 2);
    g_assert_cmpuint(vpd_common_read(d, VIRTIO_PCI_COMMON_Q_MSIX, 2), ==, vector);
    vpd_common_write(d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
    g_assert_cmpuint(vpd_common_read(d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), ==, 1);
}

/* As vp_notify: the queue index, 2 bytes, at the queue's address. */
static inline void vpd_kick(VirtioPCIDriver *d, unsigned q)
{
    mem_write(d->notify + q * d->notify_mult, q, 2);
}

/*
 * As Linux's virtqueue_kick_prepare after publishing from old_idx: with
 * EVENT_IDX only if the available index passed the device's avail_event,
 * else unless the device set NO_NOTIFY.
 */
static inline bool vpd_kick_needed(TestVring *tv, uint16_t old_idx, bool event_idx)
{
    if (event_idx) {
        uint16_t event = tv_avail_event(tv);
        return (uint16_t)(tv->avail_idx - event - 1) < (uint16_t)(tv->avail_idx - old_idx);
    }
    return !(tv_used_flags(tv) & VRING_USED_F_NO_NOTIFY);
}

/* Kick as Linux does after publishing from old_idx: a device that forgets
 * to ask for kicks is not kicked, as under Linux. */
static inline void vpd_kick_if_needed(VirtioPCIDriver *d, unsigned q, TestVring *tv,
                                      uint16_t old_idx, bool event_idx)
{
    if (vpd_kick_needed(tv, old_idx, event_idx)) {
        vpd_kick(d, q);
    }
}

/* The test's machine: the memory API, interrupts to backend, and size
 * bytes of RAM at base (returned). Once per test program. */
static inline uint8_t *vpd_machine_init(const IrqBackend *backend, uint64_t base, size_t size)
{
    memory_init();
    irq_set_backend(backend);
    return test_ram_map(base, size);
}

/* Run what the main loop has ready until nothing is left. */
static inline void vpd_settle(void)
{
    while (g_main_context_iteration(main_loop_context(), FALSE)) {
    }
}

#endif
