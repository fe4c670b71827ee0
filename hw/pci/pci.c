/*
 * The PCI core (hw/pci/pci.h): bus 0 with 256 functions, type-0 config
 * space with writable and write-1-to-clear masks, BARs that follow the
 * guest's programming, capabilities and INTx (PCI Local Bus Specification
 * 3.0, chapter 6).
 *
 * A BAR is mapped where its value says only while the command register
 * enables its kind of decoding. Every change recomputes all BARs of the
 * function and applies the moves inside one address-space transaction, so
 * vCPUs see either the old or the new map, never a mix. BARs are mapped
 * below RAM: a guest that programs a BAR over RAM gets RAM there, as a
 * chipset that decodes RAM first would give it.
 */
#include <inttypes.h>
#include <string.h>
#include <glib.h>
#include "hw/pci/intx-irqfd.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "qemu/log.h"

#define PCI_NUM_DEVFNS          256
#define PCI_CACHE_LINE_SIZE     0x0c
#define PCI_LATENCY_TIMER       0x0d
#define PCI_CAPABILITY_START    0x40
#define PCI_BAR_OFFSET(nr)      (PCI_BASE_ADDRESS_0 + 4 * (nr))
#define PCI_BARS_END            PCI_BAR_OFFSET(PCI_NUM_BARS)
#define PCI_BAR_IO_FLAGS        0x3
#define PCI_BAR_MEM_FLAGS       0xf
#define PCI_BAR_MIN_IO_SIZE     4
#define PCI_BAR_MIN_MEM_SIZE    16
#define PCI_COMMAND_WRITABLE    (PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER | \
                                 PCI_COMMAND_SERR | PCI_COMMAND_INTX_DISABLE)
/* Parity error, signalled/received target abort, received master abort,
 * signalled system error, detected parity error. */
#define PCI_STATUS_W1C          0xf900
/* QEMU's default subsystem ids for functions that do not set their own. */
#define PCI_DEFAULT_SUBSYSTEM_VENDOR_ID 0x1af4
#define PCI_DEFAULT_SUBSYSTEM_ID        0x1100
#define PCI_MAX_PIN             4

struct PCIBus {
    PCIMapIrqFn map_irq;
    PCIDevice *devices[PCI_NUM_DEVFNS];
    /*
     * Each function's config space as the machine left it: taken at the
     * function's first guest write or reset, whichever comes first, so it
     * holds what the device model built plus the resources the VMM
     * assigned in place of firmware. Reset restores it, which is what the
     * guest would find after a BIOS re-ran. Guarded by the function's lock.
     */
    uint8_t *power_on_config[PCI_NUM_DEVFNS];
    PCIBus *next_root;          /* the list query-pci walks */
};

/* Every bus pci_bus_new made, in creation order. Buses are made while the
 * machine is built (one thread) and never freed. */
static PCIBus *root_buses;
static PCIBus **root_buses_tail = &root_buses;

/* ---- little-endian helpers and accessors ---- */

static uint32_t le_get(const uint8_t *p, unsigned len)
{
    uint32_t value = 0;
    for (unsigned i = 0; i < len; i++) {
        value |= (uint32_t)p[i] << (8 * i);
    }
    return value;
}

static void le_set(uint8_t *p, uint32_t value, unsigned len)
{
    for (unsigned i = 0; i < len; i++) {
        p[i] = value >> (8 * i);
    }
}

static const uint8_t *config_at(const PCIDevice *dev, uint32_t offset, unsigned len)
{
    g_assert(offset + len <= PCI_CONFIG_SPACE_SIZE);
    return &dev->config[offset];
}

uint8_t pci_get_byte(const PCIDevice *dev, uint32_t offset)
{
    return *config_at(dev, offset, 1);
}

uint16_t pci_get_word(const PCIDevice *dev, uint32_t offset)
{
    return le_get(config_at(dev, offset, 2), 2);
}

uint32_t pci_get_long(const PCIDevice *dev, uint32_t offset)
{
    return le_get(config_at(dev, offset, 4), 4);
}

void pci_set_byte(PCIDevice *dev, uint32_t offset, uint8_t value)
{
    le_set((uint8_t *)config_at(dev, offset, 1), value, 1);
}

void pci_set_word(PCIDevice *dev, uint32_t offset, uint16_t value)
{
    le_set((uint8_t *)config_at(dev, offset, 2), value, 2);
}

void pci_set_long(PCIDevice *dev, uint32_t offset, uint32_t value)
{
    le_set((uint8_t *)config_at(dev, offset, 4), value, 4);
}

void pci_set_wmask(PCIDevice *dev, uint32_t offset, uint32_t mask, unsigned len)
{
    g_assert(offset + len <= PCI_CONFIG_SPACE_SIZE);
    le_set(&dev->wmask[offset], mask, len);
}

static bool ranges_overlap(uint32_t a, uint32_t a_len, uint32_t b, uint32_t b_len)
{
    return a < b + b_len && b < a + a_len;
}

static uint32_t all_ones(unsigned len)
{
    return len >= 1 && len < 4 ? (1u << (8 * len)) - 1 : UINT32_MAX;
}

/* ---- BAR decoding ---- */

static bool pci_bar_is_io(const PCIBar *bar)
{
    return bar->type & PCI_BASE_ADDRESS_SPACE_IO;
}

static bool pci_bar_is_64(const PCIBar *bar)
{
    return !pci_bar_is_io(bar) && (bar->type & PCI_BASE_ADDRESS_MEM_TYPE_64);
}

static AddressSpace *pci_bar_space(const PCIBar *bar)
{
    return pci_bar_is_io(bar) ? address_space_io : address_space_memory;
}

/*
 * The highest address a BAR's last byte may decode. The all-ones sizing
 * pattern puts a memory BAR at the very top of its space, which is never
 * a real assignment, so the top byte itself is excluded.
 */
static uint64_t pci_bar_top(const PCIBar *bar)
{
    if (pci_bar_is_io(bar)) {
        return 0xffff;
    }
    return pci_bar_is_64(bar) ? UINT64_MAX - 1 : UINT32_MAX - 1;
}

/* The address the BAR's registers hold, decoding enabled or not. */
static uint64_t pci_bar_programmed_address(const PCIDevice *dev, unsigned nr)
{
    const PCIBar *bar = &dev->bars[nr];
    uint64_t addr = pci_get_long(dev, PCI_BAR_OFFSET(nr));
    if (pci_bar_is_io(bar)) {
        return addr & ~(uint64_t)PCI_BAR_IO_FLAGS;
    }
    addr &= ~(uint64_t)PCI_BAR_MEM_FLAGS;
    if (pci_bar_is_64(bar)) {
        addr |= (uint64_t)pci_get_long(dev, PCI_BAR_OFFSET(nr + 1)) << 32;
    }
    return addr;
}

/* Where BAR nr decodes now, or PCI_BAR_UNMAPPED. */
static uint64_t pci_bar_decoded_address(const PCIDevice *dev, unsigned nr)
{
    const PCIBar *bar = &dev->bars[nr];
    if (!bar->region) {
        return PCI_BAR_UNMAPPED;
    }
    uint16_t enable = pci_bar_is_io(bar) ? PCI_COMMAND_IO : PCI_COMMAND_MEMORY;
    if (!(pci_get_word(dev, PCI_COMMAND) & enable)) {
        return PCI_BAR_UNMAPPED;
    }
    uint64_t addr = pci_bar_programmed_address(dev, nr);
    uint64_t last = addr + (bar->size - 1);
    /* 0 is how firmware leaves a BAR it did not assign. */
    if (addr == 0 || last < addr || last > pci_bar_top(bar)) {
        return PCI_BAR_UNMAPPED;
    }
    return addr;
}

static void pci_bar_move(PCIBar *bar, uint64_t addr)
{
    AddressSpace *as = pci_bar_space(bar);
    if (bar->addr != PCI_BAR_UNMAPPED) {
        address_space_unmap(as, bar->region);
    }
    if (addr != PCI_BAR_UNMAPPED) {
        address_space_map(as, bar->region, addr, PCI_DECODE_PRIORITY);
    }
    bar->addr = addr;
}

/* A region over RAM (or a fixed device) loses to it; tell whoever debugs.
 * Asks which mapping wins, not which region decodes: a container shows
 * its subregions, or nothing in its holes. */
void pci_log_if_hidden(const PCIDevice *dev, AddressSpace *as, MemoryRegion *mr,
                       uint64_t addr, const char *what)
{
    const uint64_t ends[] = { addr, addr + (mr->size - 1) };
    for (size_t i = 0; i < G_N_ELEMENTS(ends); i++) {
        MemoryRegion *winner = address_space_lookup_mapping(as, ends[i]);
        if (winner != mr) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: %s at 0x%" PRIx64 " overlaps %s, which "
                          "hides it\n", dev->qdev.id, what, addr,
                          winner ? winner->name : "?");
            return;
        }
    }
}

static void pci_bar_check_visible(const PCIDevice *dev, unsigned nr)
{
    const PCIBar *bar = &dev->bars[nr];
    char what[8];
    g_snprintf(what, sizeof(what), "BAR %u", nr);
    pci_log_if_hidden(dev, pci_bar_space(bar), bar->region, bar->addr, what);
}

/* Make every BAR's mapping follow its registers and the command register. */
static void pci_update_mappings(PCIDevice *dev)
{
    uint64_t target[PCI_NUM_BARS];
    bool changed = false;
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        target[nr] = pci_bar_decoded_address(dev, nr);
        changed |= target[nr] != dev->bars[nr].addr;
    }
    if (!changed) {
        return;
    }
    bool moved[PCI_NUM_BARS] = { false };
    address_space_begin(address_space_io);
    address_space_begin(address_space_memory);
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        if (target[nr] != dev->bars[nr].addr) {
            pci_bar_move(&dev->bars[nr], target[nr]);
            moved[nr] = target[nr] != PCI_BAR_UNMAPPED;
        }
    }
    address_space_commit(address_space_memory);
    address_space_commit(address_space_io);
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        if (moved[nr]) {
            pci_bar_check_visible(dev, nr);
        }
    }
}

/* ---- INTx ---- */

static bool pci_has_intx(const PCIDevice *dev)
{
    return dev->intx_routed;
}

static void pci_update_intx_line(PCIDevice *dev)
{
    if (!pci_has_intx(dev)) {
        return;
    }
    bool disabled = pci_get_word(dev, PCI_COMMAND) & PCI_COMMAND_INTX_DISABLE;
    bool level = dev->intx_asserted && !disabled;
    if (dev->intx_irqfd) {
        pci_intx_irqfd_set_level(dev->intx_irqfd, level);
    } else {
        irq_source_set(dev->intx, level);
    }
}

static void pci_set_intx_wish(PCIDevice *dev, bool level)
{
    uint16_t status = pci_get_word(dev, PCI_STATUS) & ~PCI_STATUS_INTERRUPT;
    dev->intx_asserted = level;
    pci_set_word(dev, PCI_STATUS, status | (level ? PCI_STATUS_INTERRUPT : 0));
}

void pci_set_irq(PCIDevice *dev, bool level)
{
    pci_set_intx_wish(dev, level);
    pci_update_intx_line(dev);
}

bool pci_bus_master_enabled(const PCIDevice *dev)
{
    return pci_get_word(dev, PCI_COMMAND) & PCI_COMMAND_MASTER;
}

/* ---- config access ---- */

static bool pci_config_access_valid(const PCIDevice *dev, uint32_t offset, unsigned len,
                                    const char *what)
{
    bool valid = (len == 1 || len == 2 || len == 4) && offset % len == 0 &&
                 offset < PCI_CONFIG_SPACE_SIZE && len <= PCI_CONFIG_SPACE_SIZE - offset;
    if (!valid) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: config %s of %u bytes at 0x%x is misaligned or "
                      "out of range: ignored\n", dev->qdev.id, what, len, offset);
    }
    return valid;
}

static void pci_snapshot_power_on_config(PCIDevice *dev)
{
    uint8_t **saved = &dev->bus->power_on_config[dev->devfn];
    if (!*saved) {
        *saved = g_memdup2(dev->config, PCI_CONFIG_SPACE_SIZE);
    }
}

uint32_t pci_config_read(PCIDevice *dev, uint32_t offset, unsigned len)
{
    if (!pci_config_access_valid(dev, offset, len, "read")) {
        return all_ones(len);
    }
    if (dev->msi) {
        msi_config_read(dev, offset, len);
    }
    return le_get(&dev->config[offset], len);
}

static void pci_config_store(PCIDevice *dev, uint32_t offset, uint32_t value, unsigned len)
{
    for (unsigned i = 0; i < len; i++) {
        uint32_t at = offset + i;
        uint8_t byte = value >> (8 * i);
        uint8_t kept = dev->config[at] & ~dev->wmask[at];
        dev->config[at] = (kept | (byte & dev->wmask[at])) & ~(byte & dev->w1cmask[at]);
    }
}

void pci_config_write(PCIDevice *dev, uint32_t offset, uint32_t value, unsigned len)
{
    if (!pci_config_access_valid(dev, offset, len, "write")) {
        return;
    }
    pci_snapshot_power_on_config(dev);
    pci_config_store(dev, offset, value, len);
    bool command = ranges_overlap(offset, len, PCI_COMMAND, 2);
    if (command || ranges_overlap(offset, len, PCI_BASE_ADDRESS_0, PCI_BARS_END -
                                  PCI_BASE_ADDRESS_0)) {
        pci_update_mappings(dev);
    }
    if (command) {
        pci_update_intx_line(dev);
    }
    if (dev->msi) {
        msi_config_written(dev, offset, len);
    }
    if (dev->msix) {
        msix_config_written(dev, offset, len);
    }
    if (dev->config_written) {
        dev->config_written(dev, offset, value, len);
    }
}

/* ---- the bus ---- */

PCIBus *pci_bus_new(PCIMapIrqFn map_irq)
{
    PCIBus *bus = g_new0(PCIBus, 1);
    bus->map_irq = map_irq;
    *root_buses_tail = bus;
    root_buses_tail = &bus->next_root;
    return bus;
}

PCIBus *pci_root_bus_next(PCIBus *prev)
{
    return prev ? prev->next_root : root_buses;
}

PCIDevice *pci_bus_device(PCIBus *bus, unsigned devfn)
{
    return devfn < PCI_NUM_DEVFNS ? bus->devices[devfn] : NULL;
}

uint32_t pci_bus_config_read(PCIBus *bus, unsigned devfn, uint32_t offset, unsigned len)
{
    PCIDevice *dev = pci_bus_device(bus, devfn);
    if (!dev) {
        return all_ones(len);   /* master abort: how the guest finds empty slots */
    }
    device_lock(&dev->qdev);
    uint32_t value = pci_config_read(dev, offset, len);
    device_unlock(&dev->qdev);
    return value;
}

void pci_bus_config_write(PCIBus *bus, unsigned devfn, uint32_t offset, uint32_t value,
                          unsigned len)
{
    PCIDevice *dev = pci_bus_device(bus, devfn);
    if (!dev) {
        return;
    }
    device_lock(&dev->qdev);
    pci_config_write(dev, offset, value, len);
    device_unlock(&dev->qdev);
}

/* ---- resource assignment (the firmware's job) ---- */

typedef struct PCIBarRef {
    PCIDevice *dev;
    unsigned nr;
} PCIBarRef;

typedef struct PCIWindow {
    const char *name;
    uint64_t next;
    uint64_t limit;             /* inclusive */
} PCIWindow;

static gint pci_bar_ref_larger_first(gconstpointer a, gconstpointer b)
{
    const PCIBarRef *x = a, *y = b;
    uint64_t x_size = x->dev->bars[x->nr].size, y_size = y->dev->bars[y->nr].size;
    return x_size == y_size ? 0 : x_size > y_size ? -1 : 1;
}

static GArray *pci_bus_collect_bars(PCIBus *bus)
{
    GArray *refs = g_array_new(FALSE, FALSE, sizeof(PCIBarRef));
    for (unsigned devfn = 0; devfn < PCI_NUM_DEVFNS; devfn++) {
        PCIDevice *dev = bus->devices[devfn];
        for (unsigned nr = 0; dev && nr < PCI_NUM_BARS; nr++) {
            if (dev->bars[nr].region) {
                PCIBarRef ref = { .dev = dev, .nr = nr };
                g_array_append_val(refs, ref);
            }
        }
    }
    /* Stable: equal sizes keep bus order, so assignments are reproducible. */
    g_array_sort(refs, pci_bar_ref_larger_first);
    return refs;
}

/* Naturally aligned room for size bytes whose last byte is at most top. */
static bool pci_window_take(PCIWindow *window, uint64_t size, uint64_t top, uint64_t *addr)
{
    uint64_t from = MAX(window->next, 1);   /* 0 would read as "unassigned" */
    uint64_t base = (from + size - 1) & ~(size - 1);
    uint64_t limit = MIN(window->limit, top);
    if (base < from || base > limit || limit - base < size - 1) {
        return false;
    }
    *addr = base;
    window->next = base + size;
    return true;
}

static void pci_bar_assign(PCIDevice *dev, unsigned nr, uint64_t addr)
{
    device_lock(&dev->qdev);
    pci_set_long(dev, PCI_BAR_OFFSET(nr), (uint32_t)addr | dev->bars[nr].type);
    if (pci_bar_is_64(&dev->bars[nr])) {
        pci_set_long(dev, PCI_BAR_OFFSET(nr + 1), addr >> 32);
    }
    pci_update_mappings(dev);
    device_unlock(&dev->qdev);
}

static void pci_bus_assign_interrupt_lines(PCIBus *bus)
{
    for (unsigned devfn = 0; devfn < PCI_NUM_DEVFNS; devfn++) {
        PCIDevice *dev = bus->devices[devfn];
        if (dev && pci_has_intx(dev)) {
            device_lock(&dev->qdev);
            pci_set_byte(dev, PCI_INTERRUPT_LINE, dev->intx.gsi);
            device_unlock(&dev->qdev);
        }
    }
}

bool pci_bus_assign_resources(PCIBus *bus, uint64_t io_base, uint64_t io_limit,
                              uint64_t mem_base, uint64_t mem_limit, Error **errp)
{
    PCIWindow io = { .name = "I/O", .next = io_base, .limit = io_limit };
    PCIWindow mem = { .name = "memory", .next = mem_base, .limit = mem_limit };
    GArray *refs = pci_bus_collect_bars(bus);
    bool ok = true;
    for (guint i = 0; i < refs->len && ok; i++) {
        PCIBarRef *ref = &g_array_index(refs, PCIBarRef, i);
        const PCIBar *bar = &ref->dev->bars[ref->nr];
        PCIWindow *window = pci_bar_is_io(bar) ? &io : &mem;
        uint64_t addr;
        ok = pci_window_take(window, bar->size, pci_bar_top(bar), &addr);
        if (ok) {
            pci_bar_assign(ref->dev, ref->nr, addr);
        } else {
            error_setg(errp, "%s: BAR %u (0x%" PRIx64 " bytes) does not fit in the PCI %s "
                       "window that ends at 0x%" PRIx64, ref->dev->qdev.id, ref->nr,
                       bar->size, window->name, window->limit);
        }
    }
    g_array_free(refs, TRUE);
    if (ok) {
        pci_bus_assign_interrupt_lines(bus);
    }
    return ok;
}

/* ---- building a function ---- */

static bool pci_bus_slot_is_free(PCIBus *bus, unsigned slot)
{
    for (unsigned fn = 0; fn < PCI_FUNC_MAX; fn++) {
        if (bus->devices[PCI_DEVFN(slot, fn)]) {
            return false;
        }
    }
    return true;
}

static bool pci_bus_choose_devfn(PCIBus *bus, int *devfn, const char *type, Error **errp)
{
    if (*devfn < 0) {
        for (unsigned slot = 0; slot < PCI_SLOT_MAX; slot++) {
            if (pci_bus_slot_is_free(bus, slot)) {
                *devfn = PCI_DEVFN(slot, 0);
                return true;
            }
        }
        error_setg(errp, "%s: no free PCI slot left on bus 0", type);
        return false;
    }
    if (*devfn >= PCI_NUM_DEVFNS) {
        error_setg(errp, "%s: PCI devfn %d is invalid (0..255)", type, *devfn);
        return false;
    }
    if (bus->devices[*devfn]) {
        error_setg(errp, "%s: PCI address %02x.%x is already taken by %s", type,
                   PCI_SLOT(*devfn), PCI_FUNC(*devfn), bus->devices[*devfn]->qdev.id);
        return false;
    }
    return true;
}

/* The GSI INTx of this pin reaches, or -1 (with errp set). */
static int pci_bus_pin_gsi(PCIBus *bus, unsigned devfn, uint8_t pin, const char *type,
                           Error **errp)
{
    if (pin > PCI_MAX_PIN) {
        error_setg(errp, "%s: interrupt pin %u is invalid (0..4)", type, pin);
        return -1;
    }
    unsigned gsi = bus->map_irq ? bus->map_irq(PCI_SLOT(devfn), pin) : IRQ_MAX_GSI;
    if (gsi >= IRQ_MAX_GSI) {
        error_setg(errp, "%s: the machine routes INTx of slot %u to no valid GSI", type,
                   PCI_SLOT(devfn));
        return -1;
    }
    return gsi;
}

static void pci_config_init(PCIDevice *dev, uint16_t vendor_id, uint16_t device_id,
                            uint8_t revision, uint32_t class_code, uint8_t pin)
{
    memset(dev->config, 0, sizeof(dev->config));
    memset(dev->wmask, 0, sizeof(dev->wmask));
    memset(dev->w1cmask, 0, sizeof(dev->w1cmask));
    pci_set_word(dev, PCI_VENDOR_ID, vendor_id);
    pci_set_word(dev, PCI_DEVICE_ID, device_id);
    pci_set_byte(dev, PCI_REVISION_ID, revision);
    pci_set_byte(dev, PCI_CLASS_PROG, class_code & 0xff);
    pci_set_word(dev, PCI_CLASS_DEVICE, class_code >> 8);
    pci_set_word(dev, PCI_SUBSYSTEM_VENDOR_ID, PCI_DEFAULT_SUBSYSTEM_VENDOR_ID);
    pci_set_word(dev, PCI_SUBSYSTEM_ID, PCI_DEFAULT_SUBSYSTEM_ID);
    pci_set_byte(dev, PCI_INTERRUPT_PIN, pin);

    pci_set_wmask(dev, PCI_COMMAND, PCI_COMMAND_WRITABLE, 2);
    le_set(&dev->w1cmask[PCI_STATUS], PCI_STATUS_W1C, 2);
    pci_set_wmask(dev, PCI_CACHE_LINE_SIZE, 0xff, 1);
    pci_set_wmask(dev, PCI_LATENCY_TIMER, 0xff, 1);
    pci_set_wmask(dev, PCI_INTERRUPT_LINE, 0xff, 1);
    dev->cap_next_free = PCI_CAPABILITY_START;
}

/* Function 0 of a slot with several functions says so, or the guest never
 * looks at the others. */
static void pci_bus_update_multifunction(PCIBus *bus, unsigned slot)
{
    PCIDevice *fn0 = bus->devices[PCI_DEVFN(slot, 0)];
    for (unsigned fn = 1; fn0 && fn < PCI_FUNC_MAX; fn++) {
        if (bus->devices[PCI_DEVFN(slot, fn)]) {
            pci_device_set_multifunction(fn0);
            return;
        }
    }
}

void pci_device_set_multifunction(PCIDevice *dev)
{
    pci_set_byte(dev, PCI_HEADER_TYPE,
                 pci_get_byte(dev, PCI_HEADER_TYPE) | PCI_HEADER_TYPE_MULTI_FUNCTION);
}

bool pci_device_init(PCIDevice *dev, PCIBus *bus, int devfn, const char *type,
                     const char *id_prefix, uint16_t vendor_id, uint16_t device_id,
                     uint8_t revision, uint32_t class_code, uint8_t interrupt_pin,
                     Error **errp)
{
    int gsi = -1;
    if (!pci_bus_choose_devfn(bus, &devfn, type, errp)) {
        return false;
    }
    if (interrupt_pin) {
        gsi = pci_bus_pin_gsi(bus, devfn, interrupt_pin, type, errp);
        if (gsi < 0) {
            return false;
        }
    }
    pci_config_init(dev, vendor_id, device_id, revision, class_code, interrupt_pin);
    for (unsigned nr = 0; nr < PCI_NUM_BARS; nr++) {
        dev->bars[nr] = (PCIBar) { .addr = PCI_BAR_UNMAPPED };
    }
    dev->intx_asserted = false;
    dev->intx_routed = gsi >= 0;
    dev->msi = NULL;
    dev->msix = NULL;
    device_init(&dev->qdev, type, id_prefix);
    dev->bus = bus;
    dev->devfn = devfn;
    if (gsi >= 0) {
        dev->intx = irq_source_claim(gsi);
    }
    bus->devices[devfn] = dev;
    pci_bus_update_multifunction(bus, PCI_SLOT(devfn));
    return true;
}

static bool is_power_of_2(uint64_t x)
{
    return x && !(x & (x - 1));
}

void pci_register_bar(PCIDevice *dev, unsigned nr, uint8_t type, MemoryRegion *mr)
{
    PCIBar *bar = &dev->bars[nr];
    *bar = (PCIBar) { .region = mr, .size = mr->size, .type = type, .addr = PCI_BAR_UNMAPPED };
    bool io = pci_bar_is_io(bar), is_64 = pci_bar_is_64(bar);
    g_assert(nr + is_64 < PCI_NUM_BARS && mr->owner == &dev->qdev && is_power_of_2(mr->size));
    g_assert(mr->size >= (io ? PCI_BAR_MIN_IO_SIZE : PCI_BAR_MIN_MEM_SIZE));
    g_assert(is_64 || mr->size <= (UINT64_C(1) << 31));

    uint64_t size_mask = ~(mr->size - 1);
    pci_set_long(dev, PCI_BAR_OFFSET(nr), type);
    pci_set_wmask(dev, PCI_BAR_OFFSET(nr),
                  (uint32_t)size_mask & ~(io ? PCI_BAR_IO_FLAGS : PCI_BAR_MEM_FLAGS), 4);
    if (is_64) {
        dev->bars[nr + 1] = (PCIBar) { .addr = PCI_BAR_UNMAPPED };
        pci_set_long(dev, PCI_BAR_OFFSET(nr + 1), 0);
        pci_set_wmask(dev, PCI_BAR_OFFSET(nr + 1), size_mask >> 32, 4);
    }
}

void pci_set_unrouted_interrupt_pin(PCIDevice *dev, uint8_t pin, uint8_t line)
{
    g_assert(!dev->intx_routed && pin >= 1 && pin <= PCI_MAX_PIN);
    pci_set_byte(dev, PCI_INTERRUPT_PIN, pin);
    pci_set_byte(dev, PCI_INTERRUPT_LINE, line);
}

uint8_t pci_add_capability(PCIDevice *dev, uint8_t cap_id, uint8_t len)
{
    uint8_t offset = dev->cap_next_free;
    /* cap_next_free wraps to 0 once the space is full. */
    g_assert(offset >= PCI_CAPABILITY_START && len >= 2 &&
             len <= PCI_CONFIG_SPACE_SIZE - offset);
    uint8_t *link = &dev->config[PCI_CAPABILITY_LIST];
    while (*link) {
        link = &dev->config[*link + 1];
    }
    *link = offset;
    pci_set_byte(dev, offset, cap_id);
    pci_set_byte(dev, offset + 1, 0);
    pci_set_word(dev, PCI_STATUS, pci_get_word(dev, PCI_STATUS) | PCI_STATUS_CAP_LIST);
    /* Capabilities are dword aligned. */
    dev->cap_next_free = offset + ((len + 3u) & ~3u);
    return offset;
}

/* ---- reset ---- */

void pci_device_reset(PCIDevice *dev)
{
    pci_snapshot_power_on_config(dev);
    memcpy(dev->config, dev->bus->power_on_config[dev->devfn], PCI_CONFIG_SPACE_SIZE);
    pci_set_intx_wish(dev, false);
    pci_update_intx_line(dev);
    pci_update_mappings(dev);
    if (dev->msi) {
        msi_reset(dev);
    }
    if (dev->msix) {
        msix_reset(dev);
    }
}
