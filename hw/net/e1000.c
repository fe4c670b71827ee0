/*
 * The Intel 82540EM (8086:100e) as Linux's e1000 driver uses it: the
 * register file in BAR0 (and through IOADDR/IODATA in BAR1), interrupt
 * causes with their mask, the ITR throttle and the RX/TX delay timers,
 * statistics, reset and realize. The EEPROM and PHY are in
 * e1000-eeprom-phy.c, the rings in e1000-tx.c and e1000-rx.c.
 *
 * Threads: register accesses arrive on vCPU threads with the device lock
 * held (dispatch takes it). Received frames, deferred TX, timers and the
 * peer's send_ready run on the device's context (the main loop's), each
 * taking the device lock. The interrupt is INTx pin A, raised under the
 * lock (pci_set_irq needs no other).
 */
#include <string.h>
#include <glib.h>
#include "e1000-internal.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"

/* ---- interrupts ---- */

bool e1000_link_up(const E1000State *s)
{
    /* set_link on either side of the pair pulls the cable. */
    return !(s->nc && (s->nc->link_down || (s->nc->peer && s->nc->peer->link_down)));
}

void e1000_update_irq(E1000State *s)
{
    bool want = E1000_REG(s, E1000_ICR) & E1000_REG(s, E1000_IMS);
    if (!want || s->irq_level) {
        if (!want && s->irq_level) {
            s->irq_level = false;
            pci_set_irq(&s->pci, false);
        }
        return;
    }
    /* ITR: no two assertions closer than ITR * 256 ns (the interval the
     * driver sets now); a cause that comes sooner waits for the throttle
     * timer. */
    int64_t now = clock_get_ns();
    int64_t next = s->irq_last_ns + (int64_t)(E1000_REG(s, E1000_ITR) & 0xffff) *
                                    E1000_ITR_UNIT_NS;
    if (s->irq_last_ns && now < next) {
        timer_mod(s->itr_timer, next);
        return;
    }
    s->irq_last_ns = now;
    s->irq_level = true;
    pci_set_irq(&s->pci, true);
}

void e1000_set_interrupt_cause(E1000State *s, uint32_t cause)
{
    E1000_REG(s, E1000_ICR) |= cause & E1000_ICR_VALID;
    e1000_update_irq(s);
}

static void e1000_itr_timer_cb(void *opaque)
{
    E1000State *s = opaque;
    device_lock(&s->pci.qdev);
    e1000_update_irq(s);
    device_unlock(&s->pci.qdev);
}

/* ---- delayed causes (RDTR/RADV, TIDV/TADV) ---- */

static void e1000_delay_fire(E1000Delay *d)
{
    e1000_delay_cancel(d);
    e1000_set_interrupt_cause(d->s, d->cause);
}

static void e1000_delay_timer_cb(void *opaque)
{
    E1000Delay *d = opaque;
    device_lock(&d->s->pci.qdev);
    /* A timer cancelled while its callback was on its way finds nothing
     * pending (timer.h: callbacks check under the lock). */
    if (d->pending) {
        e1000_delay_fire(d);
    }
    device_unlock(&d->s->pci.qdev);
}

void e1000_delay_init(E1000State *s, E1000Delay *d, uint32_t cause)
{
    d->s = s;
    d->cause = cause;
    d->packet = timer_new(e1000_delay_timer_cb, d);
    d->absolute = timer_new(e1000_delay_timer_cb, d);
}

void e1000_delay_cancel(E1000Delay *d)
{
    d->pending = false;
    timer_del(d->packet);
    timer_del(d->absolute);
}

void e1000_delay_cause(E1000State *s, E1000Delay *d, uint32_t packet_units,
                       uint32_t absolute_units)
{
    packet_units &= 0xffff;
    absolute_units &= 0xffff;
    if (!packet_units) {
        e1000_delay_fire(d);
        return;
    }
    int64_t now = clock_get_ns();
    d->pending = true;
    timer_mod(d->packet, now + (int64_t)packet_units * E1000_TIMER_UNIT_NS);
    if (absolute_units && !timer_pending(d->absolute)) {
        timer_mod(d->absolute, now + (int64_t)absolute_units * E1000_TIMER_UNIT_NS);
    }
}

/* ---- statistics ---- */

void e1000_stat_inc(E1000State *s, unsigned reg)
{
    if (E1000_REG(s, reg) != UINT32_MAX) {
        E1000_REG(s, reg)++;
    }
}

void e1000_stat_add64(E1000State *s, unsigned low_reg, uint64_t value)
{
    uint64_t sum = ((uint64_t)E1000_REG(s, low_reg + 4) << 32 | E1000_REG(s, low_reg)) + value;
    E1000_REG(s, low_reg) = (uint32_t)sum;
    E1000_REG(s, low_reg + 4) = sum >> 32;
}

/* ---- rings ---- */

bool e1000_ring_get(E1000State *s, unsigned bal_reg, const char *what, E1000Ring *ring)
{
    /* The ring registers are laid out alike for RX and TX: BAL, BAH, LEN,
     * (8) H, (8) T. */
    uint32_t len = E1000_REG(s, bal_reg + 8);
    ring->base = (uint64_t)E1000_REG(s, bal_reg + 4) << 32 | (E1000_REG(s, bal_reg) & ~0xfu);
    ring->count = len / E1000_DESC_SIZE;
    ring->head = E1000_REG(s, bal_reg + 0x10);
    ring->tail = E1000_REG(s, bal_reg + 0x18);
    const char *why = NULL;
    if (!len || len % E1000_RING_ALIGN || len > 0x100000) {
        why = "length is not a non-zero multiple of 128 below 1 MiB";
    } else if (ring->head >= ring->count || ring->tail >= ring->count) {
        why = "head or tail beyond the ring";
    } else if (!dma_memory_map(ring->base, len)) {
        why = "ring is not in RAM";
    }
    if (why) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: %s ring at 0x%" G_GINT64_MODIFIER "x, %u bytes, "
                      "head %u tail %u: %s; stopped until reprogrammed\n", what, ring->base, len,
                      ring->head, ring->tail, why);
        return false;
    }
    return true;
}

/* ---- the register file ---- */

static void e1000_reset_registers(E1000State *s)
{
    memset(s->regs, 0, sizeof(s->regs));
    E1000_REG(s, E1000_CTRL) = E1000_CTRL_FD | E1000_CTRL_ASDE | E1000_CTRL_SPD_1000;
    E1000_REG(s, E1000_EECD) = E1000_EECD_PRES | E1000_EECD_FWE_DIS;
    E1000_REG(s, E1000_VET) = 0x8100;
    E1000_REG(s, E1000_PBA) = 0x00100030;
    E1000_REG(s, E1000_LEDCTL) = 0x07068302;
    E1000_REG(s, E1000_RXCSUM) = E1000_RXCSUM_IPOFL | E1000_RXCSUM_TUOFL;
    /* The first receive address is the EEPROM's MAC, valid. */
    const uint8_t *m = s->mac.a;
    E1000_REG(s, E1000_RA) = get_le32(m);
    E1000_REG(s, E1000_RA + 4) = get_le16(m + 4) | E1000_RAH_AV;
}

/* CTRL.RST and the device's power-on reset: everything but PCI config. */
static void e1000_soft_reset(E1000State *s)
{
    e1000_delay_cancel(&s->rx_delay);
    e1000_delay_cancel(&s->tx_delay);
    timer_del(s->itr_timer);
    e1000_reset_registers(s);
    s->irq_last_ns = 0;
    if (s->irq_level) {
        s->irq_level = false;
        pci_set_irq(&s->pci, false);
    }
    s->ioaddr = 0;
    s->ee_in = s->ee_in_bits = s->ee_out_bits = 0;
    s->ee_reading = false;
    s->eecd_last = 0;
    s->rx_ring_error = s->tx_ring_error = false;
    e1000_phy_reset(s);
    e1000_tx_reset(s);
    e1000_rx_offload_reset(s);
    /* A peer refused while the ring was full may send again once the
     * guest sets the ring up; tell it then (RDT). */
}

static uint32_t e1000_status(const E1000State *s)
{
    uint32_t status = E1000_STATUS_FD | E1000_STATUS_SPEED_1000 | E1000_STATUS_ASDV_1000;
    return e1000_link_up(s) ? status | E1000_STATUS_LU : status;
}

static bool e1000_is_stat(unsigned offset)
{
    return offset >= E1000_STATS_FIRST && offset <= E1000_STATS_LAST;
}

static uint32_t e1000_reg_read(E1000State *s, unsigned offset)
{
    uint32_t value;
    switch (offset) {
    case E1000_STATUS:
        return e1000_status(s);
    case E1000_EECD:
        return e1000_eecd_read(s);
    case E1000_ICR:
        value = E1000_REG(s, E1000_ICR);
        E1000_REG(s, E1000_ICR) = 0;
        e1000_update_irq(s);
        return value;
    case E1000_ICS:
    case E1000_IMC:
    case E1000_WUC:
    case E1000_WUFC:
    case E1000_WUS:
    case E1000_MANC:
        return 0;
    default:
        if (offset >= E1000_REGS_SIZE) {
            qemu_log_mask(LOG_UNIMP, "e1000: read of unimplemented register 0x%x\n", offset);
            return 0;
        }
        value = s->regs[offset >> 2];
        if (e1000_is_stat(offset)) {
            s->regs[offset >> 2] = 0;
        }
        return value;
    }
}

static void e1000_ctrl_write(E1000State *s, uint32_t value)
{
    if (value & E1000_CTRL_RST) {
        e1000_soft_reset(s);
        return;
    }
    bool link_was_set = E1000_REG(s, E1000_CTRL) & E1000_CTRL_SLU;
    if (value & E1000_CTRL_PHY_RST) {
        e1000_phy_reset(s);
    }
    E1000_REG(s, E1000_CTRL) = value & ~(E1000_CTRL_RST | E1000_CTRL_PHY_RST);
    /* The driver's "set link up" brings the (always connected) link up:
     * the link-status-change interrupt that starts its watchdog. */
    if (!link_was_set && (value & E1000_CTRL_SLU)) {
        e1000_set_interrupt_cause(s, E1000_ICR_LSC);
    }
}

static void e1000_reg_write(E1000State *s, unsigned offset, uint32_t value)
{
    uint32_t old;
    switch (offset) {
    case E1000_CTRL:
        e1000_ctrl_write(s, value);
        return;
    case E1000_STATUS:
    case E1000_WUC:
    case E1000_WUFC:
    case E1000_WUS:
    case E1000_MANC:
        return;
    case E1000_EECD:
        e1000_eecd_write(s, value);
        return;
    case E1000_EERD:
        e1000_eerd_write(s, value);
        return;
    case E1000_MDIC:
        e1000_mdic_write(s, value);
        return;
    case E1000_ICR:
        E1000_REG(s, E1000_ICR) &= ~value;
        e1000_update_irq(s);
        return;
    case E1000_ICS:
        e1000_set_interrupt_cause(s, value);
        return;
    case E1000_IMS:
        E1000_REG(s, E1000_IMS) |= value & E1000_ICR_VALID;
        e1000_update_irq(s);
        return;
    case E1000_IMC:
        E1000_REG(s, E1000_IMS) &= ~value;
        e1000_update_irq(s);
        return;
    case E1000_RCTL:
        old = E1000_REG(s, E1000_RCTL);
        E1000_REG(s, E1000_RCTL) = value;
        if (!(old & E1000_RCTL_EN) && (value & E1000_RCTL_EN)) {
            e1000_rx_ring_refilled(s);
        }
        return;
    case E1000_RDBAL:
    case E1000_RDBAH:
    case E1000_RDLEN:
    case E1000_RDH:
        E1000_REG(s, offset) = offset == E1000_RDBAL || offset == E1000_RDBAH ? value
                                                                            : value & 0xfffff;
        s->rx_ring_error = false;
        return;
    case E1000_RDT:
        E1000_REG(s, E1000_RDT) = value & 0xffff;
        e1000_rx_ring_refilled(s);
        return;
    case E1000_RDTR:
        E1000_REG(s, E1000_RDTR) = value & 0xffff;
        if ((value & E1000_RDTR_FPD) && s->rx_delay.pending) {
            e1000_delay_cancel(&s->rx_delay);
            e1000_set_interrupt_cause(s, E1000_ICR_RXT0);
        }
        return;
    case E1000_TCTL:
        old = E1000_REG(s, E1000_TCTL);
        E1000_REG(s, E1000_TCTL) = value;
        if (!(old & E1000_TCTL_EN) && (value & E1000_TCTL_EN)) {
            e1000_tx_kick(s);
        }
        return;
    case E1000_TDBAL:
    case E1000_TDBAH:
    case E1000_TDLEN:
    case E1000_TDH:
        E1000_REG(s, offset) = offset == E1000_TDBAL || offset == E1000_TDBAH ? value
                                                                            : value & 0xfffff;
        s->tx_ring_error = false;
        s->tx_ring_epoch++;
        return;
    case E1000_TDT:
        E1000_REG(s, E1000_TDT) = value & 0xffff;
        e1000_tx_kick(s);
        return;
    default:
        if (offset >= E1000_REGS_SIZE || e1000_is_stat(offset)) {
            qemu_log_mask(LOG_UNIMP, "e1000: write 0x%x to read-only or unimplemented "
                          "register 0x%x\n", value, offset);
            return;
        }
        s->regs[offset >> 2] = value;
    }
}

/* The 8254x takes 32-bit accesses; a narrower read reads its part of the
 * register (side effects included, as the hardware's), a narrower or
 * unaligned write is refused. */
static uint64_t e1000_mmio_read(void *opaque, uint64_t addr, unsigned size)
{
    uint32_t value = e1000_reg_read(opaque, addr & ~3u);
    return (value >> (8 * (addr & 3))) & (size >= 4 ? UINT32_MAX : (1u << (8 * size)) - 1);
}

static void e1000_mmio_write(void *opaque, uint64_t addr, uint64_t value, unsigned size)
{
    if (size != 4 || (addr & 3)) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: %u-byte write at 0x%" G_GINT64_MODIFIER "x "
                      "ignored (registers take 32-bit writes)\n", size, addr);
        return;
    }
    e1000_reg_write(opaque, addr, value);
}

static const MemoryRegionOps e1000_mmio_ops = {
    .read = e1000_mmio_read,
    .write = e1000_mmio_write,
    .max_access_size = 4,
};

/* BAR1: IOADDR selects a register, IODATA accesses it. */
static bool e1000_ioaddr_valid(const E1000State *s)
{
    if (s->ioaddr >= E1000_MMIO_SIZE || (s->ioaddr & 3)) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: IODATA access with IOADDR 0x%x\n", s->ioaddr);
        return false;
    }
    return true;
}

static uint64_t e1000_io_read(void *opaque, uint64_t addr, unsigned size)
{
    E1000State *s = opaque;
    switch (addr) {
    case E1000_IOADDR:
        return s->ioaddr;
    case E1000_IODATA:
        return e1000_ioaddr_valid(s) ? e1000_reg_read(s, s->ioaddr) : 0;
    default:
        return 0;
    }
}

static void e1000_io_write(void *opaque, uint64_t addr, uint64_t value, unsigned size)
{
    E1000State *s = opaque;
    if (size != 4) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: %u-byte I/O write ignored\n", size);
        return;
    }
    if (addr == E1000_IOADDR) {
        s->ioaddr = value;
    } else if (addr == E1000_IODATA && e1000_ioaddr_valid(s)) {
        e1000_reg_write(s, s->ioaddr, value);
    }
}

static const MemoryRegionOps e1000_io_ops = {
    .read = e1000_io_read,
    .write = e1000_io_write,
    .max_access_size = 4,
};

/*
 * Coalesced MMIO: writes the driver makes that need no immediate answer
 * wait in KVM's ring and reach e1000_reg_write at the next exit (dispatch
 * replays the ring before any other access to the device). Left out: MDIC
 * (the driver polls its result), ICR, ICS and IMS (raising or unmasking a
 * cause must not wait for an exit: the driver re-enables IMS and may halt,
 * and a halt does not exit to user space), TCTL and TDT (they start
 * transmission). IMC is coalesced: on PCI it is a posted write that may
 * reach the device after it raised another cause, so drivers read a
 * register after it when they need the mask in place (Linux's interrupt
 * handler reads STATUS right after its IMC, and that read replays the
 * ring). Until then a new cause may assert the line, as on hardware. That
 * saves one of the five exits of each of Linux's interrupts (ICR, IMC,
 * STATUS, then IMS and STATUS after its poll).
 * RDT is coalesced: refilled buffers that no frame is waiting for have no
 * effect, and when a frame waits the driver's IMS write that ends its
 * poll follows and drains the ring first.
 */
static void e1000_add_coalescing(E1000State *s)
{
    static const unsigned excluded[] = {
        E1000_MDIC, E1000_ICR, E1000_ICS, E1000_IMS, E1000_TCTL, E1000_TDT,
    };
    uint64_t start = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(excluded); i++) {
        if (excluded[i] > start) {
            memory_region_add_coalescing(&s->mmio, start, excluded[i] - start);
        }
        start = excluded[i] + 4;
    }
    memory_region_add_coalescing(&s->mmio, start, E1000_MMIO_SIZE - start);
}

/* ---- the NIC client ---- */

static void e1000_send_ready(NetClientState *nc)
{
    E1000State *s = nc->opaque;
    device_lock(&s->pci.qdev);
    e1000_tx_resume(s);
    device_unlock(&s->pci.qdev);
}

static void e1000_link_changed(NetClientState *nc)
{
    E1000State *s = nc->opaque;
    device_lock(&s->pci.qdev);
    e1000_phy_link_update(s);
    e1000_set_interrupt_cause(s, E1000_ICR_LSC);
    device_unlock(&s->pci.qdev);
}

static const NetClientInfo e1000_net_info = {
    .type = "nic",
    .receive = e1000_receive,
    .send_ready = e1000_send_ready,
    .link_changed = e1000_link_changed,
};

/* ---- the device ---- */

static void e1000_reset(QEMUDevice *dev)
{
    E1000State *s = (E1000State *)dev;
    pci_device_reset(&s->pci);
    e1000_soft_reset(s);
}

QEMUDevice *e1000_new(PCIBus *bus, int devfn, const E1000Conf *conf, Error **errp)
{
    E1000State *s = g_new0(E1000State, 1);
    if (!pci_device_init(&s->pci, bus, devfn, "e1000", "e1000.", E1000_VENDOR_INTEL,
                         E1000_DEV_ID_82540EM, E1000_REVISION, E1000_CLASS_ETHERNET, 1, errp)) {
        g_free(s);
        return NULL;
    }
    s->ctx = main_loop_context();
    s->mac = conf->mac;
    s->tx_deferred = conf->tx_deferred;
    s->coalesced_mmio = conf->coalesced_mmio;
    s->nc = net_nic_new(&e1000_net_info, s->pci.qdev.id, conf->netdev, 0, "e1000", s->ctx, s,
                        errp);
    if (!s->nc) {
        return NULL;    /* the PCI function stays registered, as a failed realize ends the VMM */
    }
    s->nc->owner = &s->pci.qdev;    /* set_link names it by the device's id */
    net_nic_set_info(s->nc, &s->mac);
    s->pci.qdev.reset = e1000_reset;
    s->itr_timer = timer_new(e1000_itr_timer_cb, s);
    e1000_delay_init(s, &s->rx_delay, E1000_ICR_RXT0);
    e1000_delay_init(s, &s->tx_delay, E1000_ICR_TXDW);
    s->rx_frame = g_malloc(E1000_RX_MAX_FRAME + 4);
    e1000_rx_offload_init(s, conf->host_offloads);
    e1000_tx_init(s);
    e1000_eeprom_init(s);
    e1000_soft_reset(s);
    memory_region_init_io(&s->mmio, &s->pci.qdev, &e1000_mmio_ops, s, "e1000-mmio",
                          E1000_MMIO_SIZE);
    memory_region_init_io(&s->io, &s->pci.qdev, &e1000_io_ops, s, "e1000-io", E1000_IO_SIZE);
    if (s->coalesced_mmio) {
        e1000_add_coalescing(s);
    }
    pci_register_bar(&s->pci, 0, 0, &s->mmio);
    pci_register_bar(&s->pci, 1, PCI_BASE_ADDRESS_SPACE_IO, &s->io);
    return &s->pci.qdev;
}

NetClientState *e1000_net_client(QEMUDevice *dev)
{
    return ((E1000State *)dev)->nc;
}

/* ---- -device e1000 ---- */

typedef struct E1000Options {
    PCIDeviceOptions pci;
    int32_t bootindex;
    DeviceLink netdev;
    MACAddr mac;
    bool coalesced_mmio;
    bool tx_deferred;
    bool host_offloads;
} E1000Options;

static const DeviceProperty e1000_properties[] = {
    DEFINE_PCI_DEVICE_PROPERTIES(E1000Options, pci),
    DEFINE_PROP_BOOTINDEX(E1000Options, bootindex),
    DEFINE_PROP_LINK("netdev", DEVICE_PROP_NETDEV, E1000Options, netdev),
    DEFINE_PROP_MACADDR("mac", E1000Options, mac),
    DEFINE_PROP_BOOL("x-coalesced-mmio", E1000Options, coalesced_mmio, true,
                     "batch writes that need no answer in KVM's coalesced MMIO ring"),
    DEFINE_PROP_BOOL("x-tx-defer", E1000Options, tx_deferred, true,
                     "transmit on the device's thread instead of the vCPU that writes TDT"),
    DEFINE_PROP_BOOL("x-host-offloads", E1000Options, host_offloads, true,
                     "exchange large (GSO) packets with a tap: cut the host's here, hand it TSO sends whole"),
};

static QEMUDevice *e1000_realize(const void *options, const DeviceBuses *buses, Error **errp)
{
    const E1000Options *o = options;
    E1000Conf conf = {
        .netdev = o->netdev.backend, .mac = o->mac,
        .coalesced_mmio = o->coalesced_mmio, .tx_deferred = o->tx_deferred,
        .host_offloads = o->host_offloads,
    };
    static const MACAddr none;
    if (!memcmp(&conf.mac, &none, sizeof(none))) {
        net_default_mac(&conf.mac);
    }
    return e1000_new(buses->pci, o->pci.addr, &conf, errp);
}

const DeviceTypeInfo e1000_type = {
    .name = "e1000",
    .alias = "e1000-82540em",       /* the model it is */
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_NETWORK,
    .description = "Intel Gigabit Ethernet",
    DEVICE_PROPERTIES(e1000_properties),
    .options_size = sizeof(E1000Options),
    .realize = e1000_realize,
};
