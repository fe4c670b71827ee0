/*
 * pci-testdev: QEMU's PCI test device (1b36:0005, class "other"), with the
 * register layout of QEMU 7.2 so that kvm-unit-tests' PCI tests run as is.
 *
 * BAR0 (4 KiB memory, "pci-testdev-mmio") and BAR1 (256 bytes of I/O,
 * "pci-testdev-portio") each offer three tests: no-eventfd,
 * wildcard-eventfd and datamatch-eventfd. A byte write of T (0..2) at
 * offset 0 of a BAR selects test T of that BAR's kind (mmio tests are
 * 0..2, portio tests 3..5) and zeroes its count; any other value at offset
 * 0 deselects. The selected test's header then reads, byte by byte, at
 * offset 0 of either BAR:
 *
 *   0  u8  test        index 0..5
 *   1  u8  width       1: the tests are byte writes
 *   4  u32 offset      where to write: 2048 + index (mmio), 128 + index (portio)
 *   8  u8  data        0xfa to match (datamatch, no-eventfd), 0xce (wildcard)
 *  12  u32 count       hits so far
 *  16  char name[]     "mmio-no-eventfd", "portio-datamatch-eventfd", ...
 *
 * A write at the selected test's offset is a hit if the test is
 * wildcard-eventfd, or if the byte written equals data. Nothing selected,
 * or past the name, reads 0. Accesses are served a byte at a time, as in
 * QEMU, so a wide write hits with its low byte.
 *
 * The eventfd tests are what their names say, as in QEMU: selecting one
 * declares an ioeventfd at its offset (one byte; with datamatch, of the
 * test's data) on its BAR, and deselecting removes it. Where KVM takes
 * ioeventfds of any width, the mmio wildcard test's is one, as QEMU makes
 * it (KVM's fastest MMIO exit). Under KVM the write
 * signals the eventfd in the kernel and never reaches the handler; without
 * KVM's ioeventfds dispatch signals it instead (exec/memory.h). Either way
 * nobody counts the signals (the notifier is only drained when its test is
 * selected or deselected, so no ring wakes a thread), and a hit on an
 * eventfd test leaves its count at 0, as QEMU shows it. Writes the
 * ioeventfd does not match (another width, other data) reach the handler
 * and count as above. kvm-unit-tests accepts either count.
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/misc/testdev.h"
#include "hw/pci/pci.h"
#include "qemu/event-notifier.h"
#include "sysemu/kvm.h"

#define PCI_TESTDEV_VENDOR_ID       0x1b36  /* Red Hat, Inc. */
#define PCI_TESTDEV_DEVICE_ID       0x0005
/* QEMU gives it class word 0x00ff (base class 0, sub-class 0xff: its
 * "PCI_CLASS_OTHERS" written where the class word goes), not base class
 * 0xff; guests and query-pci see that, so we do the same. */
#define PCI_TESTDEV_CLASS           0x00ff00
#define PCI_TESTDEV_MMIO_SIZE       0x1000
#define PCI_TESTDEV_PORTIO_SIZE     0x100

#define PCI_TESTDEV_MATCH_DATA      0xfa
#define PCI_TESTDEV_NOMATCH_DATA    0xce
#define PCI_TESTDEV_WIDTH           1

/* Header field offsets. */
#define HDR_TEST        0
#define HDR_WIDTH       1
#define HDR_OFFSET      4
#define HDR_DATA        8
#define HDR_COUNT       12
#define HDR_NAME        16

enum { TEST_NO_EVENTFD, TEST_WILDCARD_EVENTFD, TEST_DATAMATCH_EVENTFD, TESTS_PER_BAR };
enum { BAR_KIND_MMIO, BAR_KIND_PORTIO, BAR_KINDS };
#define PCI_TESTDEV_TESTS   (TESTS_PER_BAR * BAR_KINDS)
#define NO_TEST             (-1)

static const char *const test_names[PCI_TESTDEV_TESTS] = {
    "mmio-no-eventfd", "mmio-wildcard-eventfd", "mmio-datamatch-eventfd",
    "portio-no-eventfd", "portio-wildcard-eventfd", "portio-datamatch-eventfd",
};

typedef struct PCITestdevState {
    PCIDevice pci;
    MemoryRegion mmio;
    MemoryRegion portio;
    MemoryRegion membar;                /* BAR2 with membar=: nothing behind it */
    int current;                        /* selected test, or NO_TEST */
    uint32_t count[PCI_TESTDEV_TESTS];
    EventNotifier notifier[PCI_TESTDEV_TESTS];  /* of the eventfd tests */
} PCITestdevState;

static bool test_is_wildcard(int test)
{
    return test % TESTS_PER_BAR == TEST_WILDCARD_EVENTFD;
}

static bool test_has_eventfd(int test)
{
    return test % TESTS_PER_BAR != TEST_NO_EVENTFD;
}

static uint32_t test_offset(int test)
{
    uint32_t bar_half = test / TESTS_PER_BAR == BAR_KIND_MMIO ? PCI_TESTDEV_MMIO_SIZE / 2
                                                               : PCI_TESTDEV_PORTIO_SIZE / 2;
    return bar_half + (uint32_t)test * PCI_TESTDEV_WIDTH;
}

static uint8_t test_data(int test)
{
    return test_is_wildcard(test) ? PCI_TESTDEV_NOMATCH_DATA : PCI_TESTDEV_MATCH_DATA;
}

static uint8_t le32_byte(uint32_t value, uint64_t index)
{
    return value >> (8 * index);
}

static uint8_t test_header_byte(const PCITestdevState *s, int test, uint64_t addr)
{
    const char *name = test_names[test];
    if (addr >= HDR_NAME) {
        uint64_t i = addr - HDR_NAME;
        return i < strlen(name) ? (uint8_t)name[i] : 0;
    }
    if (addr >= HDR_COUNT) {
        return le32_byte(s->count[test], addr - HDR_COUNT);
    }
    if (addr >= HDR_OFFSET && addr < HDR_OFFSET + 4) {
        return le32_byte(test_offset(test), addr - HDR_OFFSET);
    }
    switch (addr) {
    case HDR_TEST:
        return test;
    case HDR_WIDTH:
        return PCI_TESTDEV_WIDTH;
    case HDR_DATA:
        return test_data(test);
    default:
        return 0;   /* padding */
    }
}

static uint64_t pci_testdev_read(void *opaque, uint64_t addr, unsigned size)
{
    PCITestdevState *s = opaque;
    return s->current == NO_TEST ? 0 : test_header_byte(s, s->current, addr);
}

/* Declare (add) or remove the ioeventfd of test, if it has one. */
static void pci_testdev_set_eventfd(PCITestdevState *s, int test, bool add)
{
    if (test == NO_TEST || !test_has_eventfd(test)) {
        return;
    }
    event_notifier_test_and_clear(&s->notifier[test]);     /* drained, not counted */
    bool mmio = test / TESTS_PER_BAR == BAR_KIND_MMIO;
    MemoryRegion *bar = mmio ? &s->mmio : &s->portio;
    bool match = !test_is_wildcard(test);
    bool any_width = mmio && !match && (kvm_fast_paths() & KVM_FAST_PATH_IOEVENTFD_ANY_LENGTH);
    unsigned size = any_width ? 0 : PCI_TESTDEV_WIDTH;
    if (add) {
        memory_region_add_eventfd(bar, test_offset(test), size, match, test_data(test),
                                  &s->notifier[test]);
    } else {
        memory_region_del_eventfd(bar, test_offset(test), size, match, test_data(test),
                                  &s->notifier[test]);
    }
}

static void pci_testdev_select(PCITestdevState *s, int bar_kind, uint64_t value)
{
    pci_testdev_set_eventfd(s, s->current, false);
    if (value >= TESTS_PER_BAR) {
        s->current = NO_TEST;
        return;
    }
    s->current = bar_kind * TESTS_PER_BAR + (int)value;
    s->count[s->current] = 0;
    pci_testdev_set_eventfd(s, s->current, true);
}

static void pci_testdev_write(PCITestdevState *s, int bar_kind, uint64_t addr, uint64_t value,
                              unsigned size)
{
    if (addr == HDR_TEST) {
        pci_testdev_select(s, bar_kind, value);
        return;
    }
    /* As in QEMU, the hit may come through either BAR: only the offset counts. */
    int test = s->current;
    if (test == NO_TEST || addr != test_offset(test)) {
        return;
    }
    if (!test_is_wildcard(test) && (size != PCI_TESTDEV_WIDTH || value != test_data(test))) {
        return;
    }
    s->count[test]++;
}

static void pci_testdev_mmio_write(void *opaque, uint64_t addr, uint64_t value, unsigned size)
{
    pci_testdev_write(opaque, BAR_KIND_MMIO, addr, value, size);
}

static void pci_testdev_portio_write(void *opaque, uint64_t addr, uint64_t value, unsigned size)
{
    pci_testdev_write(opaque, BAR_KIND_PORTIO, addr, value, size);
}

static const MemoryRegionOps pci_testdev_mmio_ops = {
    .read = pci_testdev_read,
    .write = pci_testdev_mmio_write,
    .max_access_size = 1,
};

static const MemoryRegionOps pci_testdev_portio_ops = {
    .read = pci_testdev_read,
    .write = pci_testdev_portio_write,
    .max_access_size = 1,
};

static void pci_testdev_reset(QEMUDevice *dev)
{
    PCITestdevState *s = (PCITestdevState *)dev;
    pci_testdev_set_eventfd(s, s->current, false);
    s->current = NO_TEST;
    pci_device_reset(&s->pci);
}

QEMUDevice *pci_testdev_new(PCIBus *bus, int devfn, Error **errp)
{
    PCITestdevState *s = g_new0(PCITestdevState, 1);
    if (!pci_device_init(&s->pci, bus, devfn, "pci-testdev", "pci-testdev",
                         PCI_TESTDEV_VENDOR_ID, PCI_TESTDEV_DEVICE_ID, 0, PCI_TESTDEV_CLASS,
                         0, errp)) {
        g_free(s);
        return NULL;
    }
    s->pci.qdev.reset = pci_testdev_reset;
    s->current = NO_TEST;
    for (int test = 0; test < PCI_TESTDEV_TESTS; test++) {
        if (!test_has_eventfd(test)) {
            s->notifier[test].fd = -1;
            continue;
        }
        if (!event_notifier_init(&s->notifier[test], errp)) {
            return NULL;
        }
    }
    memory_region_init_io(&s->mmio, &s->pci.qdev, &pci_testdev_mmio_ops, s,
                          "pci-testdev-mmio", PCI_TESTDEV_MMIO_SIZE);
    memory_region_init_io(&s->portio, &s->pci.qdev, &pci_testdev_portio_ops, s,
                          "pci-testdev-portio", PCI_TESTDEV_PORTIO_SIZE);
    pci_register_bar(&s->pci, 0, 0, &s->mmio);
    pci_register_bar(&s->pci, 1, PCI_BASE_ADDRESS_SPACE_IO, &s->portio);
    return &s->pci.qdev;
}

/* ---- -device pci-testdev ---- */

/* QEMU's membar=SIZE: BAR2, a 64-bit prefetchable memory BAR of that size
 * with no storage behind it, for testing how a guest places a BAR of a
 * given (possibly large) size. 0: no BAR2. */
typedef struct PCITestdevOptions {
    PCIDeviceOptions pci;
    uint64_t membar;
} PCITestdevOptions;

#define PCI_TESTDEV_MEMBAR          2
#define PCI_MEM_BAR_MIN_SIZE        16

static const DeviceProperty pci_testdev_properties[] = {
    DEFINE_PCI_DEVICE_PROPERTIES(PCITestdevOptions, pci),
    DEFINE_PROP_SIZE("membar", PCITestdevOptions, membar, 0, NULL),
};

static QEMUDevice *pci_testdev_realize(const void *options, const DeviceBuses *buses,
                                       Error **errp)
{
    const PCITestdevOptions *o = options;
    if (o->membar && (o->membar & (o->membar - 1) || o->membar < PCI_MEM_BAR_MIN_SIZE)) {
        /* QEMU asserts here; a BAR's size is a power of two. */
        error_setg(errp, "membar=%" PRIu64 ": a BAR's size must be a power of two, at least "
                   "%d", o->membar, PCI_MEM_BAR_MIN_SIZE);
        return NULL;
    }
    QEMUDevice *dev = pci_testdev_new(buses->pci, o->pci.addr, errp);
    if (dev && o->membar) {
        PCITestdevState *s = (PCITestdevState *)dev;
        memory_region_init_container(&s->membar, dev, "pci-testdev-membar", o->membar);
        pci_register_bar(&s->pci, PCI_TESTDEV_MEMBAR,
                         PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH,
                         &s->membar);
    }
    return dev;
}

const DeviceTypeInfo pci_testdev_type = {
    .name = "pci-testdev",
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_MISC,
    .description = "QEMU's PCI test device 1b36:0005",
    DEVICE_PROPERTIES(pci_testdev_properties),
    .options_size = sizeof(PCITestdevOptions),
    .realize = pci_testdev_realize,
};
