/*
 * The e1000 (82540EM) model driven as Linux's e1000 driver drives it,
 * through MMIO dispatch on the test's thread (a vCPU) and against a fake
 * backend on the other side of the NIC: PCI identity, the EEPROM through
 * EERD and bit-banged EECD, the PHY through MDIC, the link interrupt and
 * ITR, TX of legacy frames byte for byte, checksum offload and TSO of
 * TCP/IPv4 and TCP/IPv6 (segments checked by check_tcp_frames.py, a
 * parser in Python's standard library), RX into the ring through the
 * filters, flow control with a full ring, and hostile rings and
 * descriptors.
 */
#include <string.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "exec/memory.h"
#include "fake-coalesced-ring.h"
#include "hw/irq.h"
#include "hw/net/e1000-regs.h"
#include "hw/net/e1000.h"
#include "hw/pci/pci.h"
#include "monitor/qmp.h"
#include "net/checksum.h"
#include "net/net.h"
#include "net/vnet-hdr.h"
#include "pio.h"
#include "qemu/byte-order.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "test-ram.h"

#define RAM_BASE        0x100000ULL
#define RAM_SIZE        (4 << 20)
#define TX_RING         (RAM_BASE + 0x1000)     /* 256 descriptors */
#define TX_RING_COUNT   256
#define RX_RING         (RAM_BASE + 0x2000)
#define RX_RING_COUNT   8
#define TX_BUF          (RAM_BASE + 0x10000)    /* up to 128 KiB of frames */
#define RX_BUF          (RAM_BASE + 0x40000)    /* 16 KiB per RX descriptor */
#define RX_BUF_STRIDE   0x4000
#define PCI_MEM_BASE    0xe0000000ULL
#define PCI_MEM_LIMIT   0xfebfffffULL
#define GSI_BASE        16
#define MAC0            0x52, 0x54, 0x00, 0x12, 0x34, 0x56

static uint8_t *ram;

static uint8_t *gpa(uint64_t addr)
{
    return ram + (addr - RAM_BASE);
}

/* ---- interrupts and the fake backend ---- */

static bool levels[IRQ_MAX_GSI];

static void rec_set_level(void *opaque, unsigned gsi, bool level)
{
    levels[gsi] = level;
}

static void rec_send_msi(void *opaque, uint64_t address, uint32_t data)
{
    g_assert_not_reached();
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return GSI_BASE + (slot + pin - 1) % 4;
}

typedef struct TestDev TestDev;

static struct {
    GPtrArray *frames;          /* GByteArray per frame the NIC sent */
    bool refuse;
    unsigned send_ready;
    unsigned locks_held;        /* device locks held at the last frame */
    /* The guest writes write_value to write_reg while the peer has the
     * NIC's frame number write_at (from 0). */
    TestDev *write_dev;
    unsigned write_at, write_reg;
    uint32_t write_value;
    /* A tap-like peer (fake_vnet_info): what the NIC asked of it. */
    unsigned vnet_hdr_len;
    NetOffloads offloads;
} fake;

static void wr(TestDev *t, unsigned reg, uint32_t value);

static ssize_t fake_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    if (fake.refuse) {
        return 0;
    }
    fake.locks_held = device_locks_held();
    if (fake.write_dev && fake.frames->len == fake.write_at) {
        wr(fake.write_dev, fake.write_reg, fake.write_value);
        fake.write_dev = NULL;
    }
    size_t size = iov_size(iov, iovcnt);
    GByteArray *b = g_byte_array_sized_new(size);
    g_byte_array_set_size(b, size);
    iov_to_buf(iov, iovcnt, 0, b->data, size);
    g_ptr_array_add(fake.frames, b);
    return size;
}

static void fake_send_ready(NetClientState *nc)
{
    fake.send_ready++;
}

static const NetClientInfo fake_info = {
    .type = "test", .receive = fake_receive, .send_ready = fake_send_ready,
};

static bool fake_has_vnet_hdr(NetClientState *nc)
{
    return true;
}

static void fake_set_vnet_hdr_len(NetClientState *nc, unsigned len)
{
    fake.vnet_hdr_len = len;
}

static void fake_set_offload(NetClientState *nc, const NetOffloads *offloads)
{
    fake.offloads = *offloads;
}

/* A peer that carries virtio-net headers, as a tap with IFF_VNET_HDR. */
static const NetClientInfo fake_vnet_info = {
    .type = "test-vnet", .receive = fake_receive, .send_ready = fake_send_ready,
    .has_vnet_hdr = fake_has_vnet_hdr, .set_vnet_hdr_len = fake_set_vnet_hdr_len,
    .set_offload = fake_set_offload,
};

/* ---- the device ---- */

struct TestDev {
    PCIBus *bus;
    unsigned devfn;
    QEMUDevice *qdev;
    NetClientState *backend;
    uint64_t bar0;
    uint16_t bar1;
    unsigned gsi;
    unsigned tx_tail;
    unsigned rx_tail;
};

static uint32_t cfg_read(TestDev *t, uint32_t offset, unsigned len)
{
    return pci_bus_config_read(t->bus, t->devfn, offset, len);
}

static void cfg_write(TestDev *t, uint32_t offset, uint32_t value, unsigned len)
{
    pci_bus_config_write(t->bus, t->devfn, offset, value, len);
}

static uint32_t rd(TestDev *t, unsigned reg)
{
    return mem_read(t->bar0 + reg, 4);
}

static void wr(TestDev *t, unsigned reg, uint32_t value)
{
    mem_write(t->bar0 + reg, value, 4);
}

static bool irq(TestDev *t)
{
    return levels[t->gsi];
}

static void main_loop_settle(void)
{
    while (g_main_context_iteration(main_loop_context(), FALSE)) {
    }
}

static TestDev *dev_new_peer(bool tx_deferred, const NetClientInfo *peer, bool host_offloads)
{
    static unsigned n;
    TestDev *t = g_new0(TestDev, 1);
    memset(ram, 0, RAM_SIZE);
    memset(levels, 0, sizeof(levels));
    if (fake.frames) {
        g_ptr_array_free(fake.frames, true);
    }
    fake.frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
    fake.refuse = false;
    fake.send_ready = 0;
    fake.write_dev = NULL;
    fake.vnet_hdr_len = 0;
    memset(&fake.offloads, 0, sizeof(fake.offloads));
    Error *err = NULL;
    g_autofree char *id = g_strdup_printf("n%u", n++);
    NetDev *nd = netdev_new("test", id, 1, peer, &err);
    g_assert_null(err);
    t->backend = nd->queues[0];
    t->bus = pci_bus_new(map_irq);
    E1000Conf conf = {
        .netdev = nd, .mac = { { MAC0 } }, .coalesced_mmio = true, .tx_deferred = tx_deferred,
        .host_offloads = host_offloads,
    };
    t->qdev = e1000_new(t->bus, -1, &conf, &err);
    g_assert_null(err);
    t->devfn = ((PCIDevice *)t->qdev)->devfn;
    g_assert_true(pci_bus_assign_resources(t->bus, 0xc000, 0xffff, PCI_MEM_BASE, PCI_MEM_LIMIT,
                                           &err));
    cfg_write(t, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_IO | PCI_COMMAND_MASTER, 2);
    t->bar0 = cfg_read(t, PCI_BASE_ADDRESS_0, 4) & ~0xfu;
    t->bar1 = cfg_read(t, PCI_BASE_ADDRESS_0 + 4, 4) & ~3u;
    t->gsi = cfg_read(t, PCI_INTERRUPT_LINE, 1);
    return t;
}

static TestDev *dev_new_conf(bool tx_deferred)
{
    return dev_new_peer(tx_deferred, &fake_info, true);
}

static TestDev *dev_new(void)
{
    return dev_new_conf(true);
}

/* Reset: the line goes down (the next test's device may share it), the
 * timers stop and the BARs leave the address space. */
static void dev_free(TestDev *t)
{
    main_loop_settle();
    device_lock(t->qdev);
    t->qdev->reset(t->qdev);
    device_unlock(t->qdev);
    g_assert_false(irq(t));
    g_free(t);
}

/* ---- identity, EEPROM, PHY ---- */

static void test_pci_identity(void)
{
    TestDev *t = dev_new();
    g_assert_cmphex(cfg_read(t, PCI_VENDOR_ID, 2), ==, 0x8086);
    g_assert_cmphex(cfg_read(t, PCI_DEVICE_ID, 2), ==, 0x100e);
    g_assert_cmphex(cfg_read(t, PCI_CLASS_DEVICE, 2), ==, 0x0200);
    g_assert_cmpuint(cfg_read(t, PCI_INTERRUPT_PIN, 1), ==, 1);
    g_assert_cmphex(cfg_read(t, PCI_BASE_ADDRESS_0, 4) & 0xf, ==, 0);   /* 32-bit memory */
    g_assert_cmphex(cfg_read(t, PCI_BASE_ADDRESS_0 + 4, 4) & 1, ==, 1); /* I/O */
    cfg_write(t, PCI_COMMAND, 0, 2);
    cfg_write(t, PCI_BASE_ADDRESS_0, 0xffffffff, 4);
    g_assert_cmphex(cfg_read(t, PCI_BASE_ADDRESS_0, 4), ==, 0xfffe0000);  /* 128 KiB */
    cfg_write(t, PCI_BASE_ADDRESS_0 + 4, 0xffffffff, 4);
    g_assert_cmphex(cfg_read(t, PCI_BASE_ADDRESS_0 + 4, 4) & 0xffff, ==, 0xffc1); /* 64 B */
    g_assert_cmpstr(e1000_net_client(t->qdev)->name, ==, t->qdev->id);
    dev_free(t);
}

static uint16_t eerd_read(TestDev *t, unsigned addr)
{
    wr(t, E1000_EERD, addr << E1000_EERD_ADDR_SHIFT | E1000_EERD_START);
    uint32_t v = rd(t, E1000_EERD);
    g_assert_true(v & E1000_EERD_DONE);
    return v >> E1000_EERD_DATA_SHIFT;
}

/* Linux's Microwire read: request, select, clock out 1-10 and the
 * address, clock in 16 bits, deselect, release. */
static void ee_clock_out(TestDev *t, uint32_t value, unsigned bits)
{
    for (int i = bits - 1; i >= 0; i--) {
        uint32_t e = E1000_EECD_REQ | E1000_EECD_CS | ((value >> i) & 1 ? E1000_EECD_DI : 0);
        wr(t, E1000_EECD, e);
        wr(t, E1000_EECD, e | E1000_EECD_SK);
        wr(t, E1000_EECD, e);
    }
}

static uint16_t eecd_read(TestDev *t, unsigned addr)
{
    wr(t, E1000_EECD, E1000_EECD_REQ);
    g_assert_true(rd(t, E1000_EECD) & E1000_EECD_GNT);
    g_assert_true(rd(t, E1000_EECD) & E1000_EECD_PRES);
    g_assert_false(rd(t, E1000_EECD) & E1000_EECD_SIZE);    /* 64 words */
    wr(t, E1000_EECD, E1000_EECD_REQ | E1000_EECD_CS);
    ee_clock_out(t, 0x6, 3);
    ee_clock_out(t, addr, 6);
    uint16_t data = 0;
    for (int i = 0; i < 16; i++) {
        wr(t, E1000_EECD, E1000_EECD_REQ | E1000_EECD_CS | E1000_EECD_SK);
        data = data << 1 | !!(rd(t, E1000_EECD) & E1000_EECD_DO);
        wr(t, E1000_EECD, E1000_EECD_REQ | E1000_EECD_CS);
    }
    wr(t, E1000_EECD, E1000_EECD_REQ);
    wr(t, E1000_EECD, 0);
    g_assert_false(rd(t, E1000_EECD) & E1000_EECD_GNT);
    return data;
}

static void test_eeprom(void)
{
    TestDev *t = dev_new();
    uint16_t sum_eerd = 0, sum_eecd = 0;
    for (unsigned i = 0; i < E1000_EEPROM_WORDS; i++) {
        uint16_t a = eerd_read(t, i), b = eecd_read(t, i);
        g_assert_cmphex(a, ==, b);
        sum_eerd += a;
        sum_eecd += b;
    }
    g_assert_cmphex(sum_eerd, ==, 0xbaba);
    g_assert_cmphex(sum_eecd, ==, 0xbaba);
    g_assert_cmphex(eerd_read(t, 0), ==, 0x5452);
    g_assert_cmphex(eerd_read(t, 1), ==, 0x1200);
    g_assert_cmphex(eecd_read(t, 2), ==, 0x5634);
    g_assert_cmphex(eerd_read(t, E1000_EEPROM_DEVICE_ID), ==, 0x100e);
    /* The receive address 0 holds the MAC after reset. */
    g_assert_cmphex(rd(t, E1000_RA), ==, 0x12005452);
    g_assert_cmphex(rd(t, E1000_RA + 4), ==, 0x80005634);
    /* A word beyond the EEPROM reads 0; the register file through BAR1. */
    g_assert_cmphex(eerd_read(t, 0x80), ==, 0);
    io_write(t->bar1 + E1000_IOADDR, E1000_STATUS, 4);
    g_assert_cmphex(io_read(t->bar1 + E1000_IODATA, 4), ==, rd(t, E1000_STATUS));
    dev_free(t);
}

static uint32_t mdic(TestDev *t, unsigned phy, unsigned reg, uint32_t op, uint16_t data)
{
    wr(t, E1000_MDIC, data | reg << E1000_MDIC_REG_SHIFT | phy << E1000_MDIC_PHY_SHIFT | op);
    uint32_t v = rd(t, E1000_MDIC);
    g_assert_true(v & E1000_MDIC_READY);
    return v;
}

static uint16_t phy_read(TestDev *t, unsigned reg)
{
    uint32_t v = mdic(t, 1, reg, E1000_MDIC_OP_READ, 0);
    g_assert_false(v & E1000_MDIC_ERROR);
    return v & 0xffff;
}

static void test_phy(void)
{
    TestDev *t = dev_new();
    g_assert_cmphex(phy_read(t, MII_PHYID1), ==, 0x0141);
    g_assert_cmphex(phy_read(t, MII_PHYID2) & 0xfff0, ==, 0x0c20);
    g_assert_cmphex(phy_read(t, MII_BMSR) & 0x0024, ==, 0x0024);   /* AN complete, link */
    g_assert_cmphex(phy_read(t, MII_ANLPAR) & 0x01e0, ==, 0x01e0);
    g_assert_cmphex(phy_read(t, M88_PHY_SPEC_STATUS) & 0xc400, ==, 0x8400); /* 1000, link */
    mdic(t, 1, MII_ANAR, E1000_MDIC_OP_WRITE, 0x01e1);
    g_assert_cmphex(phy_read(t, MII_ANAR), ==, 0x01e1);
    mdic(t, 1, MII_BMCR, E1000_MDIC_OP_WRITE, 0x1340);    /* AN enable + restart */
    g_assert_cmphex(phy_read(t, MII_BMCR), ==, 0x1140);   /* restart cleared itself */
    mdic(t, 1, MII_BMCR, E1000_MDIC_OP_WRITE, 0x8000);
    g_assert_cmphex(phy_read(t, MII_BMCR), ==, 0x1140);
    g_assert_cmphex(phy_read(t, MII_ANAR), ==, 0x01e1);   /* kept over a PHY reset */
    /* No PHY at address 2. */
    g_assert_true(mdic(t, 2, MII_PHYID1, E1000_MDIC_OP_READ, 0) & E1000_MDIC_ERROR);
    dev_free(t);
}

static void test_link_interrupt(void)
{
    TestDev *t = dev_new();
    uint32_t status = rd(t, E1000_STATUS);
    g_assert_cmphex(status & (E1000_STATUS_LU | E1000_STATUS_FD), ==,
                    E1000_STATUS_LU | E1000_STATUS_FD);
    g_assert_cmphex(status & (3u << 6), ==, E1000_STATUS_SPEED_1000);
    wr(t, E1000_IMC, ~0u);
    rd(t, E1000_ICR);
    wr(t, E1000_IMS, E1000_ICR_LSC);
    g_assert_cmphex(rd(t, E1000_IMS), ==, E1000_ICR_LSC);
    g_assert_false(irq(t));
    wr(t, E1000_CTRL, rd(t, E1000_CTRL) | E1000_CTRL_SLU);  /* link up: LSC */
    g_assert_true(irq(t));
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);
    g_assert_false(irq(t));
    g_assert_cmphex(rd(t, E1000_ICR), ==, 0);
    /* A masked cause waits in ICR without the line. */
    wr(t, E1000_ICS, E1000_ICR_RXT0);
    g_assert_false(irq(t));
    wr(t, E1000_IMS, E1000_ICR_RXT0);
    g_assert_true(irq(t));
    wr(t, E1000_IMC, E1000_ICR_RXT0);
    g_assert_false(irq(t));
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_RXT0);

    /* ITR: a second assertion waits for the interval (here 0x2000 * 256 ns). */
    wr(t, E1000_ITR, 0x2000);
    g_usleep(0x2000 * 256 / 1000 + 1000);   /* since the last assertion */
    wr(t, E1000_ICS, E1000_ICR_LSC);
    g_assert_true(irq(t));
    rd(t, E1000_ICR);
    wr(t, E1000_ICS, E1000_ICR_LSC);
    g_assert_false(irq(t));
    g_usleep(0x2000 * 256 / 1000 + 1000);
    timers_run_due();
    g_assert_true(irq(t));
    rd(t, E1000_ICR);
    wr(t, E1000_ITR, 0);

    /* The backend's link goes down and up: STATUS, the PHY and LSC follow. */
    net_client_set_link(t->backend, false);
    g_assert_true(irq(t));
    g_assert_false(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    g_assert_false(phy_read(t, MII_BMSR) & 0x0004);
    rd(t, E1000_ICR);
    net_client_set_link(t->backend, true);
    g_assert_true(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);
    dev_free(t);
}

/* A link going down and up (the backend's set_link) changes what the wire
 * decides, not what the driver programmed: the advertisement, the
 * 1000BASE-T control and BMCR survive; BMSR's link and AN-complete bits,
 * the partner's registers and the M88 status follow the link. */
static void test_link_change_keeps_phy_programming(void)
{
    TestDev *t = dev_new();
    mdic(t, 1, MII_ANAR, E1000_MDIC_OP_WRITE, 0x0061);          /* 10 half/full only */
    mdic(t, 1, MII_CTRL1000, E1000_MDIC_OP_WRITE, 0x0000);      /* no 1000BASE-T */
    mdic(t, 1, MII_BMCR, E1000_MDIC_OP_WRITE, 0x0100);          /* AN off, full duplex */
    mdic(t, 1, M88_PHY_SPEC_CTRL, E1000_MDIC_OP_WRITE, 0x0808);
    wr(t, E1000_IMC, ~0u);
    rd(t, E1000_ICR);

    net_client_set_link(t->backend, false);
    g_assert_cmphex(phy_read(t, MII_BMSR) & 0x0024, ==, 0);
    g_assert_cmphex(phy_read(t, MII_ANLPAR), ==, 0);
    g_assert_cmphex(phy_read(t, M88_PHY_SPEC_STATUS) & 0x0400, ==, 0);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);
    net_client_set_link(t->backend, true);
    g_assert_cmphex(phy_read(t, MII_BMSR) & 0x0024, ==, 0x0024);
    g_assert_cmphex(phy_read(t, MII_ANLPAR) & 0x01e0, ==, 0x01e0);
    g_assert_cmphex(phy_read(t, M88_PHY_SPEC_STATUS) & 0x0400, ==, 0x0400);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);

    g_assert_cmphex(phy_read(t, MII_ANAR), ==, 0x0061);
    g_assert_cmphex(phy_read(t, MII_CTRL1000), ==, 0x0000);
    g_assert_cmphex(phy_read(t, MII_BMCR), ==, 0x0100);
    g_assert_cmphex(phy_read(t, M88_PHY_SPEC_CTRL), ==, 0x0808);
    g_assert_cmphex(phy_read(t, MII_PHYID1), ==, 0x0141);
    dev_free(t);
}

/* set_link through QMP, as a manager sends it; false: DeviceNotFound. */
static bool qmp_set_link(const char *name, bool up)
{
    g_autoptr(JsonObject) args = json_object_new();
    json_object_set_string_member(args, "name", name);
    json_object_set_boolean_member(args, "up", up);
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch("set_link", args, &err);
    if (ret) {
        json_node_unref(ret);
    }
    if (!err) {
        return true;
    }
    g_assert_cmpint(err->cls, ==, ERROR_CLASS_DEVICE_NOT_FOUND);
    g_assert_cmpstr(err->msg, ==, "Device 'no-such-nic' not found");
    error_free(err);
    return false;
}

/* set_link by the NIC's id and by the netdev's: STATUS.LU and LSC. */
static void test_qmp_set_link(void)
{
    TestDev *t = dev_new();
    device_set_id(t->qdev, "nic-qmp");
    wr(t, E1000_IMC, ~0u);
    rd(t, E1000_ICR);
    wr(t, E1000_IMS, E1000_ICR_LSC);
    g_assert_true(qmp_set_link("nic-qmp", false));
    g_assert_true(irq(t));
    g_assert_false(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);
    g_assert_true(qmp_set_link("nic-qmp", true));
    g_assert_true(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);
    /* The netdev's name pulls the same cable. */
    g_assert_true(qmp_set_link(t->backend->name, false));
    g_assert_false(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_LSC);
    g_assert_true(qmp_set_link(t->backend->name, true));
    g_assert_true(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    rd(t, E1000_ICR);
    g_assert_false(qmp_set_link("no-such-nic", false));
    g_assert_true(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    g_assert_cmphex(rd(t, E1000_ICR), ==, 0);
    dev_free(t);
}

/* ---- transmit ---- */

static void tx_setup(TestDev *t)
{
    wr(t, E1000_TDBAL, (uint32_t)TX_RING);
    wr(t, E1000_TDBAH, TX_RING >> 32);
    wr(t, E1000_TDLEN, TX_RING_COUNT * 16);
    wr(t, E1000_TDH, 0);
    wr(t, E1000_TDT, 0);
    wr(t, E1000_TCTL, E1000_TCTL_EN);
    t->tx_tail = 0;
}

static uint8_t *tx_desc(TestDev *t, unsigned i)
{
    return gpa(TX_RING + 16 * (i % TX_RING_COUNT));
}

/* Queue a descriptor: bytes 0..7 as given, lower and upper dwords. */
static unsigned tx_queue(TestDev *t, uint64_t first8, uint32_t lower, uint32_t upper)
{
    unsigned i = t->tx_tail;
    uint8_t *d = tx_desc(t, i);
    put_le64(d, first8);
    put_le32(d + 8, lower);
    put_le32(d + 12, upper);
    t->tx_tail = (i + 1) % TX_RING_COUNT;
    return i;
}

static void tx_kick(TestDev *t)
{
    wr(t, E1000_TDT, t->tx_tail);
    main_loop_settle();
}

static GByteArray *sent(unsigned i)
{
    g_assert_cmpuint(i, <, fake.frames->len);
    return g_ptr_array_index(fake.frames, i);
}

static void fill_pattern(uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = i * 7 + seed;
    }
}

static void test_tx_legacy(gconstpointer deferred)
{
    TestDev *t = dev_new_conf(GPOINTER_TO_INT(deferred));
    tx_setup(t);
    rd(t, E1000_ICR);
    uint8_t *buf = gpa(TX_BUF);
    fill_pattern(buf, 3000, 1);
    /* One frame in one descriptor, one in three pieces. */
    unsigned a = tx_queue(t, TX_BUF, 100 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS |
                          E1000_TXD_CMD_RS, 0);
    tx_queue(t, TX_BUF + 100, 500, 0);
    tx_queue(t, TX_BUF + 600, 1, 0);
    unsigned c = tx_queue(t, TX_BUF + 601, 899 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    if (GPOINTER_TO_INT(deferred)) {
        tx_kick(t);
    } else {
        /* On the vCPU: sent before the TDT write returns. */
        wr(t, E1000_TDT, t->tx_tail);
    }
    g_assert_cmpuint(fake.frames->len, ==, 2);
    g_assert_cmpmem(sent(0)->data, sent(0)->len, buf, 100);
    g_assert_cmpmem(sent(1)->data, sent(1)->len, buf + 100, 1400);
    g_assert_cmphex(tx_desc(t, a)[12] & E1000_TXD_STAT_DD, ==, E1000_TXD_STAT_DD);
    g_assert_cmphex(tx_desc(t, a + 1)[12] & E1000_TXD_STAT_DD, ==, 0);   /* no RS */
    g_assert_cmphex(tx_desc(t, c)[12] & E1000_TXD_STAT_DD, ==, E1000_TXD_STAT_DD);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, 4);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_TXDW | E1000_ICR_TXQE);
    g_assert_cmpuint(rd(t, E1000_GPTC), ==, 2);
    g_assert_cmpuint(rd(t, E1000_GPTC), ==, 0);     /* cleared by the read */
    g_assert_cmpuint(rd(t, E1000_TPT), ==, 2);
    g_assert_cmpuint(rd(t, E1000_GOTCL), ==, 1500 + 8);
    g_assert_cmpuint(rd(t, E1000_GOTCH), ==, 0);

    /* IDE: TXDW waits for TIDV. */
    wr(t, E1000_TIDV, 1000);    /* about 1 ms */
    wr(t, E1000_IMS, E1000_ICR_TXDW);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS | E1000_TXD_CMD_IDE, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 3);
    g_assert_false(irq(t));
    g_usleep(1100);
    timers_run_due();
    g_assert_true(irq(t));
    g_assert_cmphex(rd(t, E1000_ICR) & E1000_ICR_TXDW, ==, E1000_ICR_TXDW);
    dev_free(t);
}

/* A backend that refuses: the packet stays at TDH and goes when it is ready. */
static void test_tx_backpressure(void)
{
    TestDev *t = dev_new();
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 200, 3);
    fake.refuse = true;
    tx_queue(t, TX_BUF, 100 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_queue(t, TX_BUF + 100, 100 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 0);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, 0);
    g_assert_cmphex(tx_desc(t, 0)[12], ==, 0);
    fake.refuse = false;
    net_client_receive_ready(t->backend);   /* as the tap does once writable */
    main_loop_settle();
    g_assert_cmpuint(fake.frames->len, ==, 2);
    g_assert_cmpmem(sent(1)->data, sent(1)->len, gpa(TX_BUF + 100), 100);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, 2);
    dev_free(t);
}

/* A packet of no bytes is dropped, its descriptor done: a peer's 0 for it
 * would read as "not now", and the ring would wait for a send_ready that
 * never comes. */
static void test_tx_empty_packet(void)
{
    TestDev *t = dev_new();
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 60, 4);
    unsigned a = tx_queue(t, TX_BUF, 0 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 1);
    g_assert_cmpmem(sent(0)->data, sent(0)->len, gpa(TX_BUF), 60);
    g_assert_cmphex(tx_desc(t, a)[12], ==, E1000_TXD_STAT_DD);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, 2);
    dev_free(t);
}

/* Without TSO a packet is one frame, at most 16 KiB as on the hardware:
 * one byte more (legacy or data descriptors) drops the packet, its
 * descriptors done, rather than sending a frame no 8254x could. */
static void test_tx_oversize_frame(gconstpointer deferred)
{
    TestDev *t = dev_new_conf(GPOINTER_TO_INT(deferred));
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 3 * 8192, 6);
    uint32_t data = E1000_TXD_CMD_DEXT | E1000_TXD_DTYP_D;
    tx_queue(t, TX_BUF, 8192, 0);
    tx_queue(t, TX_BUF + 8192, 8192 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_queue(t, TX_BUF, 8192, 0);
    unsigned legacy = tx_queue(t, TX_BUF + 8192, 8193 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS,
                               0);
    tx_queue(t, TX_BUF, data | 16384, 0);
    unsigned ext = tx_queue(t, TX_BUF + 16384, data | 1 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS,
                            0);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    if (GPOINTER_TO_INT(deferred)) {
        tx_kick(t);
    } else {
        wr(t, E1000_TDT, t->tx_tail);
    }
    g_assert_cmpuint(fake.frames->len, ==, 2);
    g_assert_cmpmem(sent(0)->data, sent(0)->len, gpa(TX_BUF), 16384);
    g_assert_cmpuint(sent(1)->len, ==, 60);
    g_assert_cmphex(tx_desc(t, legacy)[12], ==, E1000_TXD_STAT_DD);
    g_assert_cmphex(tx_desc(t, ext)[12], ==, E1000_TXD_STAT_DD);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, t->tx_tail);
    dev_free(t);
}

/* ---- checksum offload and TSO, checked by Python ---- */

typedef struct TcpSend {
    int ipv;
    size_t payload_len;
    uint16_t mss;
    uint32_t seq;
    uint16_t ip_id;
    uint8_t flags;
    unsigned seed;
    bool tso;
} TcpSend;

/* Ethernet + IPv4 (20) or IPv6 (40) + TCP (20, with the flags), the TCP
 * checksum seeded as Linux seeds it: the pseudo-header sum, with the
 * length for checksum offload and without it for TSO. Returns the
 * header length. */
static size_t build_tcp_headers(uint8_t *h, const TcpSend *ts)
{
    static const uint8_t macs[12] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc, MAC0 };
    memcpy(h, macs, 12);
    size_t ip_len = ts->ipv == 4 ? 20 : 40, l4 = 14 + ip_len, hdr = l4 + 20;
    size_t tcp_len = 20 + ts->payload_len;
    memset(h + 14, 0, hdr - 14);
    uint32_t pseudo;
    if (ts->ipv == 4) {
        h[12] = 0x08, h[13] = 0x00;
        h[14] = 0x45;
        size_t total = ts->tso ? 0 : ip_len + tcp_len;
        h[16] = total >> 8, h[17] = total;
        h[18] = ts->ip_id >> 8, h[19] = ts->ip_id;
        h[22] = 64, h[23] = 6;
        static const uint8_t addrs[8] = { 10, 0, 2, 15, 10, 0, 2, 2 };
        memcpy(h + 26, addrs, 8);
        pseudo = net_checksum_add(6, addrs, 8);
    } else {
        h[12] = 0x86, h[13] = 0xdd;
        h[14] = 0x60;
        size_t plen = ts->tso ? 0 : tcp_len;
        h[18] = plen >> 8, h[19] = plen;
        h[20] = 6, h[21] = 64;
        for (int i = 0; i < 32; i++) {
            h[22 + i] = i < 16 ? 0x20 + i : 0x40 + i;   /* source, destination */
        }
        pseudo = net_checksum_add(6, h + 22, 32);
    }
    uint8_t *tcp = h + l4;
    tcp[0] = 0x30, tcp[1] = 0x39, tcp[2] = 0x00, tcp[3] = 0x50;
    put_be32(tcp + 4, ts->seq);
    tcp[12] = 5 << 4;
    tcp[13] = ts->flags;
    tcp[14] = 0xff, tcp[15] = 0xff;
    if (!ts->tso) {
        pseudo += tcp_len;
    }
    /* The folded, uncomplemented sum, as the stack leaves it. */
    uint16_t seed = ~net_checksum_finish(pseudo);
    tcp[16] = seed >> 8, tcp[17] = seed;
    return hdr;
}

/* Check frames[first_frame...] (GByteArray *) with check_tcp_frames.py. */
static void check_frames(GPtrArray *frames, const TcpSend *ts, unsigned first_frame)
{
    g_autofree char *dir = g_dir_make_tmp("test-e1000-XXXXXX", NULL);
    g_assert_nonnull(dir);
    for (unsigned i = first_frame; i < frames->len; i++) {
        g_autofree char *name = g_strdup_printf("%s/%03u.bin", dir, i - first_frame);
        GByteArray *f = g_ptr_array_index(frames, i);
        g_assert_true(g_file_set_contents(name, (char *)f->data, f->len, NULL));
    }
    g_autofree char *spec = g_strdup_printf(
        "{\"ipv\": %d, \"mss\": %u, \"payload_len\": %zu, \"seq\": %u, \"ip_id\": %u, "
        "\"flags\": %u, \"seed\": %u}", ts->ipv, ts->tso ? ts->mss : (unsigned)ts->payload_len,
        ts->payload_len, ts->seq, ts->ip_id, ts->flags, ts->seed);
    g_autofree char *spec_path = g_build_filename(dir, "spec.json", NULL);
    g_assert_true(g_file_set_contents(spec_path, spec, -1, NULL));
    char *argv[] = { (char *)"python3", (char *)FRAME_CHECKER, dir, NULL };
    g_autofree char *out = NULL, *err = NULL;
    int status;
    g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                               &status, NULL));
    if (!g_spawn_check_wait_status(status, NULL)) {
        g_test_message("checker: %s%s", out, err);
        g_assert_not_reached();
    }
    for (unsigned i = first_frame; i < frames->len; i++) {
        g_autofree char *name = g_strdup_printf("%s/%03u.bin", dir, i - first_frame);
        g_unlink(name);
    }
    g_unlink(spec_path);
    g_rmdir(dir);
}

/* The frames the NIC sent, from number first_frame on. */
static void run_checker(const TcpSend *ts, unsigned first_frame)
{
    check_frames(fake.frames, ts, first_frame);
}

/* Write the packet to TX_BUF and queue: a context descriptor, then the
 * headers in one data descriptor and the payload in 4 KiB ones, as Linux
 * splits them. */
static void tx_tcp_queue(TestDev *t, const TcpSend *ts)
{
    uint8_t *buf = gpa(TX_BUF);
    size_t hdr = build_tcp_headers(buf, ts);
    for (size_t j = 0; j < ts->payload_len; j++) {
        buf[hdr + j] = j * 131 + ts->seed;
    }
    size_t ipcss = 14, tucss = hdr - 20;
    uint64_t ctx_lo = ipcss | (uint64_t)(ts->ipv == 4 ? 24 : 0) << 8 |
                      (uint64_t)(ts->ipv == 4 ? tucss - 1 : 0) << 16 |
                      (uint64_t)tucss << 32 | (uint64_t)(tucss + 16) << 40;
    uint32_t tucmd = E1000_TXD_CMD_DEXT | E1000_TXC_TUCMD_TCP |
                     (ts->ipv == 4 ? E1000_TXC_TUCMD_IP : 0) |
                     (ts->tso ? E1000_TXD_CMD_TSE : 0);
    tx_queue(t, ctx_lo, tucmd | (uint32_t)ts->payload_len,
             (uint32_t)ts->mss << E1000_TXC_MSS_SHIFT | hdr << E1000_TXC_HDRLEN_SHIFT);
    uint32_t dcmd = E1000_TXD_CMD_DEXT | E1000_TXD_DTYP_D | (ts->tso ? E1000_TXD_CMD_TSE : 0);
    uint32_t popts = E1000_TXD_POPTS_TXSM | (ts->ipv == 4 ? E1000_TXD_POPTS_IXSM : 0);
    size_t total = hdr + ts->payload_len;
    for (size_t off = 0; off < total;) {
        size_t len = off ? MIN((size_t)4096, total - off) : hdr;
        bool eop = off + len == total;
        tx_queue(t, TX_BUF + off, dcmd | len | (eop ? E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS : 0),
                 popts);
        off += len;
    }
}

static void tx_tcp(TestDev *t, const TcpSend *ts)
{
    tx_tcp_queue(t, ts);
    tx_kick(t);
}

static void test_tx_checksum_offload(void)
{
    TestDev *t = dev_new();
    tx_setup(t);
    TcpSend v4 = { .ipv = 4, .payload_len = 1000, .seq = 1, .ip_id = 7, .flags = 0x18,
                   .seed = 5 };
    tx_tcp(t, &v4);
    g_assert_cmpuint(fake.frames->len, ==, 1);
    run_checker(&v4, 0);
    TcpSend v6 = { .ipv = 6, .payload_len = 1001, .seq = 99, .flags = 0x19, .seed = 9 };
    tx_tcp(t, &v6);
    g_assert_cmpuint(fake.frames->len, ==, 2);
    run_checker(&v6, 1);
    /* The checker can fail: a corrupted frame is refused. */
    sent(1)->data[100] ^= 1;
    g_autofree char *dir = g_dir_make_tmp("test-e1000-XXXXXX", NULL);
    g_autofree char *f = g_build_filename(dir, "000.bin", NULL);
    g_autofree char *spec = g_build_filename(dir, "spec.json", NULL);
    g_assert_true(g_file_set_contents(f, (char *)sent(1)->data, sent(1)->len, NULL));
    g_assert_true(g_file_set_contents(spec, "{\"ipv\": 6, \"mss\": 1001, \"payload_len\": 1001,"
                                      " \"seq\": 99, \"ip_id\": 0, \"flags\": 25, \"seed\": 9}",
                                      -1, NULL));
    char *argv[] = { (char *)"python3", (char *)FRAME_CHECKER, dir, NULL };
    int status;
    g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH |
                               G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL, &status,
                               NULL));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_unlink(f);
    g_unlink(spec);
    g_rmdir(dir);
    dev_free(t);
}

/* A checksummed packet the backend refused goes out later with the same,
 * right, checksums: the sums are computed once, not again over the
 * checksums the first try inserted. */
static void test_tx_checksum_offload_refused(void)
{
    TestDev *t = dev_new();
    tx_setup(t);
    fake.refuse = true;
    TcpSend v4 = { .ipv = 4, .payload_len = 700, .seq = 3, .ip_id = 9, .flags = 0x18,
                   .seed = 2 };
    tx_tcp(t, &v4);
    g_assert_cmpuint(fake.frames->len, ==, 0);
    fake.refuse = false;
    net_client_receive_ready(t->backend);
    main_loop_settle();
    g_assert_cmpuint(fake.frames->len, ==, 1);
    run_checker(&v4, 0);
    dev_free(t);
}

static void test_tso(gconstpointer ipv)
{
    TestDev *t = dev_new();
    tx_setup(t);
    wr(t, E1000_TSCTC, 0);
    rd(t, E1000_TSCTC);
    bool v4 = GPOINTER_TO_INT(ipv) == 4;
    TcpSend ts = {
        .ipv = v4 ? 4 : 6, .tso = true, .mss = v4 ? 1448 : 1440,
        .payload_len = 65536 - (v4 ? 54 : 74),
        .seq = 0xffff0000u,     /* wraps during the send */
        .ip_id = 0xfff0,        /* wraps too */
        .flags = 0x19,          /* FIN, PSH, ACK: FIN and PSH on the last segment only */
        .seed = 11,
    };
    tx_tcp(t, &ts);
    g_assert_cmpuint(fake.frames->len, ==, (ts.payload_len + ts.mss - 1) / ts.mss);
    run_checker(&ts, 0);
    g_assert_cmpuint(rd(t, E1000_TSCTC), ==, 1);
    g_assert_cmpuint(rd(t, E1000_GPTC), ==, fake.frames->len);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, t->tx_tail);
    dev_free(t);
}

/*
 * MSS 1 is a legal TSO send of one segment per payload byte. Transmitting
 * on the vCPU (x-tx-defer=off), the TDT write returns after one turn of
 * segments, not after all of them under the device lock; the rest follows
 * from the bottom half, every segment right.
 */
static void test_tso_tiny_mss_bounded(void)
{
    TestDev *t = dev_new_conf(false);
    tx_setup(t);
    TcpSend ts = { .ipv = 4, .tso = true, .mss = 1, .payload_len = 999, .seq = 77,
                   .ip_id = 5, .flags = 0x18, .seed = 13 };
    tx_tcp_queue(t, &ts);
    wr(t, E1000_TDT, t->tx_tail);
    g_assert_cmpuint(fake.frames->len, >, 0);
    g_assert_cmpuint(fake.frames->len, <=, 64);
    g_assert_cmpuint(rd(t, E1000_TDH), !=, t->tx_tail);
    main_loop_settle();
    g_assert_cmpuint(fake.frames->len, ==, ts.payload_len);
    run_checker(&ts, 0);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, t->tx_tail);
    g_assert_cmpuint(rd(t, E1000_TSCTC), ==, 1);
    dev_free(t);
}

/*
 * The deferred pass gives the device lock back while the peer takes each
 * frame: a tap write can take long, and a vCPU reading ICR or writing TDT
 * would wait for it. On the vCPU (x-tx-defer=off) the write holds the
 * lock, as the MMIO write that sends does.
 */
static void test_tx_sends_unlocked(gconstpointer deferred)
{
    TestDev *t = dev_new_conf(GPOINTER_TO_INT(deferred));
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 100, 4);
    fake.locks_held = UINT_MAX;
    tx_queue(t, TX_BUF, 100 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 1);
    g_assert_cmpuint(fake.locks_held, ==, GPOINTER_TO_INT(deferred) ? 0 : 1);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, 1);
    dev_free(t);
}

/*
 * The guest resets the device (CTRL.RST) or sets a new TDH while a TSO
 * segment is with the peer: the pass ends there. No more segments go, no
 * descriptor is written back, TDH stays as the guest left it, and the
 * device transmits right once the guest sets the ring up again.
 */
static void test_tx_ring_gone_while_sending(gconstpointer reg)
{
    TestDev *t = dev_new();
    tx_setup(t);
    fake.write_dev = t;
    fake.write_at = 3;
    fake.write_reg = GPOINTER_TO_UINT(reg);
    fake.write_value = fake.write_reg == E1000_CTRL ? E1000_CTRL_RST : 0;
    TcpSend ts = { .ipv = 4, .tso = true, .mss = 1448, .payload_len = 20000, .seq = 3,
                   .ip_id = 1, .flags = 0x18, .seed = 17 };
    tx_tcp(t, &ts);
    g_assert_null(fake.write_dev);
    g_assert_cmpuint(fake.frames->len, ==, 4);     /* the fourth was with the peer */
    g_assert_cmpuint(rd(t, E1000_TDH), ==, 0);
    for (unsigned i = 0; i < t->tx_tail; i++) {
        g_assert_cmphex(tx_desc(t, i)[12] & E1000_TXD_STAT_DD, ==, 0);
    }
    /* The guest starts over: the whole send goes, segments checked. */
    g_ptr_array_set_size(fake.frames, 0);
    tx_setup(t);
    tx_tcp(t, &ts);
    g_assert_cmpuint(fake.frames->len, ==, (ts.payload_len + ts.mss - 1) / ts.mss);
    run_checker(&ts, 0);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, t->tx_tail);
    dev_free(t);
}

/* ---- receive ---- */

static void rx_setup(TestDev *t, unsigned owned, uint32_t rctl)
{
    for (unsigned i = 0; i < RX_RING_COUNT; i++) {
        put_le64(gpa(RX_RING + 16 * i), RX_BUF + i * RX_BUF_STRIDE);
    }
    wr(t, E1000_RDBAL, (uint32_t)RX_RING);
    wr(t, E1000_RDBAH, 0);
    wr(t, E1000_RDLEN, RX_RING_COUNT * 16);
    wr(t, E1000_RDH, 0);
    wr(t, E1000_RDT, owned);
    wr(t, E1000_RDTR, 0);
    wr(t, E1000_RCTL, rctl | E1000_RCTL_EN);
    t->rx_tail = owned;
}

static ssize_t rx_send(TestDev *t, const uint8_t *frame, size_t len)
{
    return net_send_buf(t->backend, frame, len);
}

static uint8_t *rx_desc(unsigned i)
{
    return gpa(RX_RING + 16 * (i % RX_RING_COUNT));
}

static void make_frame(uint8_t *f, size_t len, const uint8_t *dst)
{
    static const uint8_t src[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x88, f[13] = 0xb5;     /* a local experimental type */
    fill_pattern(f + 14, len - 14, len);
}

/* Is frame delivered into descriptor i (with the 4 CRC bytes unless SECRC)? */
static void assert_received(unsigned i, const uint8_t *frame, size_t len, size_t crc)
{
    uint8_t *d = rx_desc(i);
    g_assert_cmphex(d[12] & (E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP), ==,
                    E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP);
    g_assert_cmpuint(get_le16(d + 8), ==, len + crc);
    g_assert_cmpmem(gpa(get_le64(d)), len, frame, len);
}

static void test_rx_filters(void)
{
    TestDev *t = dev_new();
    rx_setup(t, RX_RING_COUNT - 1, 0);
    wr(t, E1000_IMS, E1000_ICR_RXT0);
    static const uint8_t mine[6] = { MAC0 };
    static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 };
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
    uint8_t f[256];
    unsigned next = 0;

    make_frame(f, 100, mine);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    assert_received(next++, f, 100, 4);
    g_assert_true(irq(t));
    g_assert_cmphex(rd(t, E1000_ICR) & E1000_ICR_RXT0, ==, E1000_ICR_RXT0);
    g_assert_cmpuint(rd(t, E1000_GPRC), ==, 1);
    g_assert_cmpuint(rd(t, E1000_GORCL), ==, 104);

    /* Filtered out: taken from the backend, not stored. */
    make_frame(f, 100, other);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    make_frame(f, 100, bcast);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    make_frame(f, 100, mcast);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, next);
    g_assert_false(irq(t));

    /* Broadcast with BAM; the multicast hash (MO 0: bits 47..36) in MTA;
     * promiscuous unicast; SECRC. */
    wr(t, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);
    make_frame(f, 100, bcast);
    rx_send(t, f, 100);
    assert_received(next++, f, 100, 0);
    unsigned hash = (mcast[4] >> 4 | mcast[5] << 4) & 0xfff;
    wr(t, E1000_MTA + 4 * (hash >> 5), 1u << (hash & 31));
    make_frame(f, 100, mcast);
    rx_send(t, f, 100);
    assert_received(next++, f, 100, 0);
    g_assert_cmpuint(rd(t, E1000_MPRC), ==, 1);
    wr(t, E1000_RCTL, rd(t, E1000_RCTL) | E1000_RCTL_UPE);
    make_frame(f, 100, other);
    rx_send(t, f, 100);
    assert_received(next++, f, 100, 0);
    /* A second receive address. */
    wr(t, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_SECRC);
    wr(t, E1000_RA + 8, 0x99005452);
    wr(t, E1000_RA + 12, 0x9999 | E1000_RAH_AV);
    rx_send(t, f, 100);
    assert_received(next++, f, 100, 0);
    /* A short frame is padded to 60 bytes. */
    make_frame(f, 42, mine);
    rx_send(t, f, 42);
    g_assert_cmpuint(get_le16(rx_desc(next) + 8), ==, 60);
    g_assert_cmpmem(gpa(get_le64(rx_desc(next))), 42, f, 42);
    next++;
    g_assert_cmpuint(rd(t, E1000_RDH), ==, next);
    dev_free(t);
}

static void test_rx_checksum_and_vlan(void)
{
    TestDev *t = dev_new();
    rx_setup(t, RX_RING_COUNT - 1, E1000_RCTL_SECRC);
    wr(t, E1000_RXCSUM, E1000_RXCSUM_IPOFL | E1000_RXCSUM_TUOFL);
    uint8_t f[1600];
    TcpSend ts = { .ipv = 4, .payload_len = 500, .seq = 5, .ip_id = 1, .flags = 0x10 };
    size_t hdr = build_tcp_headers(f, &ts);
    memcpy(f, (uint8_t[]) { MAC0 }, 6);
    memset(f + hdr, 0x5a, ts.payload_len);
    size_t len = hdr + ts.payload_len;
    /* The headers' checksums, as a sender completes them. */
    net_checksum_insert(f, len, 14, 34, 24);
    f[50] = f[51] = 0;
    uint32_t pseudo = net_checksum_add(6 + 20 + ts.payload_len, f + 26, 8);
    uint16_t sum = net_checksum_finish(net_checksum_add(pseudo, f + 34, len - 34));
    f[50] = sum >> 8, f[51] = sum;
    rx_send(t, f, len);
    uint8_t *d = rx_desc(0);
    g_assert_cmphex(d[12], ==, E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP | E1000_RXD_STAT_IPCS |
                    E1000_RXD_STAT_TCPCS);
    g_assert_cmphex(d[13], ==, 0);
    f[len - 1] ^= 0xff;
    rx_send(t, f, len);
    g_assert_cmphex(rx_desc(1)[12] & E1000_RXD_STAT_TCPCS, ==, E1000_RXD_STAT_TCPCS);
    g_assert_cmphex(rx_desc(1)[13], ==, E1000_RXD_ERR_TCPE);
    /* Checksums off: IXSM says nothing was checked. */
    wr(t, E1000_RXCSUM, 0);
    rx_send(t, f, len);
    g_assert_cmphex(rx_desc(2)[12], ==, E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP |
                    E1000_RXD_STAT_IXSM);

    /* VLAN: stripped into special with VME; filtered by VFTA with VFE. */
    uint8_t v[104];
    make_frame(v, 104, (uint8_t[]) { MAC0 });
    v[12] = 0x81, v[13] = 0x00, v[14] = 0x20, v[15] = 0x05;     /* priority 1, VLAN 5 */
    wr(t, E1000_CTRL, rd(t, E1000_CTRL) | E1000_CTRL_VME);
    rx_send(t, v, 104);
    d = rx_desc(3);
    g_assert_cmphex(d[12] & E1000_RXD_STAT_VP, ==, E1000_RXD_STAT_VP);
    g_assert_cmphex(get_le16(d + 14), ==, 0x2005);
    g_assert_cmpuint(get_le16(d + 8), ==, 100);
    g_assert_cmpmem(gpa(get_le64(d)), 12, v, 12);
    g_assert_cmpmem(gpa(get_le64(d)) + 12, 88, v + 16, 88);
    wr(t, E1000_RCTL, rd(t, E1000_RCTL) | E1000_RCTL_VFE);
    rx_send(t, v, 104);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 4);      /* VLAN 5 not in the table */
    wr(t, E1000_VFTA, 1u << 5);
    rx_send(t, v, 104);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 5);
    dev_free(t);
}

/* A full ring: receive returns 0, the backend waits; RDT brings send_ready. */
static void test_rx_full_ring(void)
{
    TestDev *t = dev_new();
    rx_setup(t, 3, E1000_RCTL_LPE);
    static const uint8_t mine[6] = { MAC0 };
    uint8_t f[3000];
    make_frame(f, 100, mine);
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    }
    g_assert_cmpint(rx_send(t, f, 100), ==, 0);
    main_loop_settle();
    g_assert_cmpuint(fake.send_ready, ==, 0);
    wr(t, E1000_RDT, 4);
    main_loop_settle();
    g_assert_cmpuint(fake.send_ready, ==, 1);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    assert_received(3, f, 100, 4);
    /* A 3000-byte frame needs two 2 KiB buffers: one is not enough. */
    make_frame(f, 3000, mine);
    wr(t, E1000_RDT, 5);
    g_assert_cmpint(rx_send(t, f, 3000), ==, 0);
    wr(t, E1000_RDT, 6);
    main_loop_settle();
    g_assert_cmpuint(fake.send_ready, ==, 2);
    g_assert_cmpint(rx_send(t, f, 3000), ==, 3000);
    g_assert_cmphex(rx_desc(4)[12], ==, E1000_RXD_STAT_DD);
    g_assert_cmphex(rx_desc(5)[12], ==, E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP);
    g_assert_cmpuint(get_le16(rx_desc(4) + 8) + get_le16(rx_desc(5) + 8), ==, 3004);
    g_assert_cmpmem(gpa(get_le64(rx_desc(4))), 2048, f, 2048);
    g_assert_cmpmem(gpa(get_le64(rx_desc(5))), 952, f + 2048, 952);
    /* Over the limit without LPE: dropped, counted. */
    wr(t, E1000_RCTL, E1000_RCTL_EN);
    wr(t, E1000_RDT, 0);
    g_assert_cmpint(rx_send(t, f, 3000), ==, 3000);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 6);
    g_assert_cmpuint(rd(t, E1000_ROC), ==, 1);
    dev_free(t);
}

/*
 * The driver's last writes wait in KVM's coalesced ring (here a fake one)
 * and the guest halts, which exits to nobody: a frame must meet them all
 * the same, its buffers given back by RDT and the receiver enabled by
 * RCTL, or it waits (or is dropped) until an unrelated exit. Nothing else
 * dispatches here, so only receive can replay the ring.
 */
static void test_rx_replays_coalesced_writes(void)
{
    TestDev *t = dev_new();
    rx_setup(t, 1, 0);
    static const uint8_t mine[6] = { MAC0 };
    uint8_t f[100];
    make_frame(f, sizeof(f), mine);
    struct kvm_coalesced_mmio_ring *ring = fake_ring_new();
    memory_coalesced_attach(ring, FAKE_RING_CAPACITY);
    g_assert_cmpint(rx_send(t, f, sizeof(f)), ==, sizeof(f));      /* the one buffer */
    fake_ring_push(ring, t->bar0 + E1000_RDT, 3, 4, false);        /* two more, queued */
    g_assert_cmpint(rx_send(t, f, sizeof(f)), ==, sizeof(f));
    g_assert_cmpuint(ring->first, ==, ring->last);
    assert_received(1, f, sizeof(f), 4);

    wr(t, E1000_RCTL, 0);
    fake_ring_push(ring, t->bar0 + E1000_RCTL, E1000_RCTL_EN, 4, false);
    g_assert_cmpint(rx_send(t, f, sizeof(f)), ==, sizeof(f));
    g_assert_cmpuint(ring->first, ==, ring->last);
    assert_received(2, f, sizeof(f), 4);
    memory_coalesced_attach(NULL, 0);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 3);
    g_free(ring);
    dev_free(t);
}

/* Whether a write to addr would be coalesced: a listener collects the
 * zones KVM would be given, as KVM's own listener does. */
typedef struct ZoneProbe {
    MemoryListener l;
    uint64_t addr;
    bool covered;
} ZoneProbe;

static void zone_probe_range(uint64_t addr, uint64_t size, void *opaque)
{
    ZoneProbe *p = opaque;
    p->covered |= p->addr >= addr && p->addr - addr < size;
}

static void zone_probe_add(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    memory_section_for_each_coalesced(s, zone_probe_range, l);
}

static void zone_probe_del(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    /* Registered only for the replay of region_add. */
}

static bool write_coalesced(uint64_t addr)
{
    ZoneProbe p = { .l.region_add = zone_probe_add, .l.region_del = zone_probe_del, .addr = addr };
    memory_listener_register(&p.l, address_space_memory);
    memory_listener_unregister(&p.l, address_space_memory);
    return p.covered;
}

/*
 * IMC is a posted write (coalesced): the line stays as it was until the
 * guest's next access, which replays it first. Linux's interrupt handler
 * masks with IMC and reads STATUS at once for that. The registers that
 * raise or unmask an interrupt, or start a transmission, exit at once.
 */
static void test_imc_posted_until_next_access(void)
{
    TestDev *t = dev_new();
    g_assert_true(write_coalesced(t->bar0 + E1000_IMC));
    g_assert_true(write_coalesced(t->bar0 + E1000_RDT));
    static const unsigned immediate[] = {
        E1000_MDIC, E1000_ICR, E1000_ICS, E1000_IMS, E1000_TCTL, E1000_TDT,
    };
    for (size_t i = 0; i < G_N_ELEMENTS(immediate); i++) {
        g_assert_false(write_coalesced(t->bar0 + immediate[i]));
    }

    wr(t, E1000_IMS, E1000_ICR_TXDW);
    wr(t, E1000_ICS, E1000_ICR_TXDW);
    g_assert_true(irq(t));
    struct kvm_coalesced_mmio_ring *ring = fake_ring_new();
    memory_coalesced_attach(ring, FAKE_RING_CAPACITY);
    fake_ring_push(ring, t->bar0 + E1000_IMC, ~0u, 4, false);
    g_assert_true(irq(t));                  /* not yet seen by the device */
    rd(t, E1000_STATUS);                    /* the driver's flush */
    g_assert_cmpuint(ring->first, ==, ring->last);
    g_assert_false(irq(t));
    memory_coalesced_attach(NULL, 0);
    g_assert_cmphex(rd(t, E1000_ICR), ==, E1000_ICR_TXDW);   /* the cause stays */
    g_free(ring);
    dev_free(t);
}

/* A frame that needs more buffers than the ring can ever lend (count - 1)
 * is dropped and counted: refusing it would stop the backend for good. */
static void test_rx_frame_larger_than_ring(void)
{
    TestDev *t = dev_new();
    rx_setup(t, RX_RING_COUNT - 1, E1000_RCTL_LPE | 3u << E1000_RCTL_BSIZE_SHIFT);
    static const uint8_t mine[6] = { MAC0 };
    uint8_t f[2000];
    make_frame(f, sizeof(f), mine);     /* 2004 bytes with the CRC: 8 buffers of 256 */
    g_assert_cmpint(rx_send(t, f, sizeof(f)), ==, sizeof(f));
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 0);
    g_assert_cmpuint(rd(t, E1000_MPC), ==, 1);
    make_frame(f, 1700, mine);          /* 7 buffers: fits */
    g_assert_cmpint(rx_send(t, f, 1700), ==, 1700);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 7);
    g_assert_cmphex(rx_desc(6)[12], ==, E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP);
    dev_free(t);
}

/* ---- receive from a host that offloads (e1000-rx-offload.c) ---- */

/* A frame from a tap-like peer: the virtio-net header, then the frame in
 * two pieces (the model must not care where the pieces end). */
static ssize_t rx_send_vnet(TestDev *t, uint8_t flags, uint8_t gso_type, uint16_t gso_size,
                            uint16_t csum_start, const uint8_t *frame, size_t len)
{
    uint8_t hdr[VIRTIO_NET_HDR_LEN_SHORT] = { flags, gso_type };
    put_le16(hdr + 4, gso_size);
    put_le16(hdr + 6, csum_start);
    put_le16(hdr + 8, 16);      /* csum_offset: TCP's checksum */
    size_t cut = MIN(len, (size_t)37);
    struct iovec iov[3] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = (void *)frame, .iov_len = cut },
        { .iov_base = (void *)(frame + cut), .iov_len = len - cut },
    };
    return net_send(t->backend, iov, 3);
}

/* A TCP packet from the host to MAC0 in buf: checksums left to the NIC
 * (the IPv4 header's too, which the host's GSO packets carry filled in,
 * so here it is filled in for the single frame). Returns its length. */
static size_t host_tcp_packet(uint8_t *buf, const TcpSend *ts)
{
    size_t hdr = build_tcp_headers(buf, ts);
    memcpy(buf, (uint8_t[]) { MAC0 }, 6);
    for (size_t j = 0; j < ts->payload_len; j++) {
        buf[hdr + j] = j * 131 + ts->seed;
    }
    if (ts->ipv == 4 && !ts->tso) {
        net_checksum_insert(buf, hdr, 14, 34, 24);
    }
    return hdr + ts->payload_len;
}

/* Take the frames stored since *next (each in one buffer, with the status
 * want_status and no error) and give their buffers back, as Linux's driver
 * does; then let the device's context run. */
static void rx_reap(TestDev *t, GPtrArray *frames, unsigned *next, uint8_t want_status)
{
    unsigned rdh = rd(t, E1000_RDH);
    while (*next != rdh) {
        uint8_t *d = rx_desc(*next);
        g_assert_cmphex(d[12], ==, E1000_RXD_STAT_DD | E1000_RXD_STAT_EOP | want_status);
        g_assert_cmphex(d[13], ==, 0);
        GByteArray *f = g_byte_array_new();
        g_byte_array_append(f, gpa(get_le64(d)), get_le16(d + 8));
        g_ptr_array_add(frames, f);
        d[12] = 0;
        *next = (*next + 1) % RX_RING_COUNT;
    }
    wr(t, E1000_RDT, (*next + RX_RING_COUNT - 1) % RX_RING_COUNT);
    main_loop_settle();
}

/*
 * The e1000 takes its tap's offloads, and a GSO packet of 60000 bytes
 * reaches the guest as the frames the host would have cut (checked by
 * check_tcp_frames.py), across a ring of 7 free buffers: the rest of the
 * packet waits in the device for the RDTs, the next frame is refused
 * meanwhile, and the peer hears once the packet is all in.
 */
static void test_rx_host_gso(gconstpointer ipv)
{
    TestDev *t = dev_new_peer(true, &fake_vnet_info, true);
    g_assert_cmpuint(fake.vnet_hdr_len, ==, VIRTIO_NET_HDR_LEN_SHORT);
    g_assert_true(fake.offloads.csum && fake.offloads.tso4 && fake.offloads.tso6);
    g_assert_false(fake.offloads.ecn || fake.offloads.ufo);
    rx_setup(t, RX_RING_COUNT - 1, E1000_RCTL_SECRC);
    wr(t, E1000_RXCSUM, E1000_RXCSUM_IPOFL | E1000_RXCSUM_TUOFL);
    bool v4 = GPOINTER_TO_INT(ipv) == 4;
    TcpSend ts = {
        .ipv = v4 ? 4 : 6, .tso = true, .mss = v4 ? 1448 : 1428, .payload_len = 60000,
        .seq = 0xffffc000u, .ip_id = 0xfff0, .flags = 0x19, .seed = 3,
    };
    g_autofree uint8_t *pkt = g_malloc(65536);
    size_t len = host_tcp_packet(pkt, &ts);
    uint8_t gso = v4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6;
    g_assert_cmpint(rx_send_vnet(t, VIRTIO_NET_HDR_F_NEEDS_CSUM, gso, ts.mss, len - 60000 - 20,
                                 pkt, len), ==, len + VIRTIO_NET_HDR_LEN_SHORT);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, RX_RING_COUNT - 1);
    uint8_t small[100];
    make_frame(small, sizeof(small), (uint8_t[]) { MAC0 });
    g_assert_cmpint(rx_send_vnet(t, 0, 0, 0, 0, small, sizeof(small)), ==, 0);

    unsigned nsegs = (ts.payload_len + ts.mss - 1) / ts.mss, next = 0;
    g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    uint8_t status = v4 ? E1000_RXD_STAT_IPCS | E1000_RXD_STAT_TCPCS : 0;
    for (unsigned round = 0; frames->len < nsegs; round++) {
        g_assert_cmpuint(round, <, nsegs);
        unsigned in_ring = (rd(t, E1000_RDH) + RX_RING_COUNT - next) % RX_RING_COUNT;
        g_assert_cmpuint(fake.send_ready, ==, frames->len + in_ring == nsegs);
        rx_reap(t, frames, &next, status);
    }
    g_assert_cmpuint(frames->len, ==, nsegs);
    g_assert_cmpuint(fake.send_ready, ==, 1);
    check_frames(frames, &ts, 0);
    g_assert_cmpuint(rd(t, E1000_GPRC), ==, nsegs);
    g_assert_cmpint(rx_send_vnet(t, 0, 0, 0, 0, small, sizeof(small)), ==,
                    sizeof(small) + VIRTIO_NET_HDR_LEN_SHORT);
    g_assert_cmpmem(gpa(get_le64(rx_desc(next))), sizeof(small), small, sizeof(small));
    dev_free(t);
}

/*
 * NEEDS_CSUM: the checksum is stored; DATA_VALID: the host checked it, so
 * RXCSUM reports it good without a sum. The header is host input: every
 * impossible one drops its packet and the ring works on. Frames the NIC
 * sends carry a header asking for nothing.
 */
static void test_rx_host_checksum_and_hostile(void)
{
    TestDev *t = dev_new_peer(true, &fake_vnet_info, true);
    rx_setup(t, RX_RING_COUNT - 1, E1000_RCTL_SECRC);
    wr(t, E1000_RXCSUM, E1000_RXCSUM_IPOFL | E1000_RXCSUM_TUOFL);
    TcpSend ts = { .ipv = 4, .payload_len = 1000, .seq = 42, .ip_id = 3, .flags = 0x18,
                   .seed = 8 };
    uint8_t f[1600];
    size_t len = host_tcp_packet(f, &ts);
    const uint8_t needs = VIRTIO_NET_HDR_F_NEEDS_CSUM, valid = VIRTIO_NET_HDR_F_DATA_VALID;
    g_assert_cmpint(rx_send_vnet(t, needs, 0, 0, 34, f, len), ==, len + 10);
    g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    unsigned next = 0;
    rx_reap(t, frames, &next, E1000_RXD_STAT_IPCS | E1000_RXD_STAT_TCPCS);
    check_frames(frames, &ts, 0);
    memcpy(f, ((GByteArray *)g_ptr_array_index(frames, 0))->data, len);
    f[len - 1] ^= 0xff;
    rx_send_vnet(t, valid, 0, 0, 0, f, len);
    rx_reap(t, frames, &next, E1000_RXD_STAT_IPCS | E1000_RXD_STAT_TCPCS);
    rx_send_vnet(t, 0, 0, 0, 0, f, len);
    g_assert_cmphex(rx_desc(next)[13], ==, E1000_RXD_ERR_TCPE);
    rx_desc(next)[13] = 0;
    rx_reap(t, frames, &next, E1000_RXD_STAT_IPCS | E1000_RXD_STAT_TCPCS);

    /* Impossible headers: each packet taken and dropped, nothing stored. */
    unsigned rdh = rd(t, E1000_RDH);
    g_assert_cmpint(net_send_buf(t->backend, f, 6), ==, 6);         /* a cut header */
    g_assert_cmpint(net_send_buf(t->backend, f, 10), ==, 10);       /* no frame */
    g_assert_cmpint(rx_send_vnet(t, needs, VIRTIO_NET_HDR_GSO_UDP, 1000, 34, f, len), ==,
                    len + 10);
    g_assert_cmpint(rx_send_vnet(t, 0, VIRTIO_NET_HDR_GSO_TCPV4, 500, 34, f, len), ==, len + 10);
    g_assert_cmpint(rx_send_vnet(t, needs, VIRTIO_NET_HDR_GSO_TCPV4, 0, 34, f, len), ==,
                    len + 10);
    g_assert_cmpint(rx_send_vnet(t, needs, VIRTIO_NET_HDR_GSO_TCPV6, 500, 34, f, len), ==,
                    len + 10);
    g_assert_cmpint(rx_send_vnet(t, needs, VIRTIO_NET_HDR_GSO_TCPV4, 20000, 34, f, len), ==,
                    len + 10);
    g_assert_cmpint(rx_send_vnet(t, needs, 0, 0, len - 17, f, len), ==, len + 10);
    uint8_t cut[60];
    memcpy(cut, f, sizeof(cut));
    cut[34 + 12] = 0xf0;        /* a TCP header of 60 bytes in a 60-byte frame */
    g_assert_cmpint(rx_send_vnet(t, needs, VIRTIO_NET_HDR_GSO_TCPV4, 500, 34, cut, 60), ==, 70);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, rdh);
    rx_send_vnet(t, 0, 0, 0, 0, f, 100);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, (rdh + 1) % RX_RING_COUNT);

    /* Transmit: a zero header ahead of the frame. */
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 60, 9);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 1);
    static const uint8_t zero[VIRTIO_NET_HDR_LEN_SHORT];
    g_assert_cmpuint(sent(0)->len, ==, sizeof(zero) + 60);
    g_assert_cmpmem(sent(0)->data, sizeof(zero), zero, sizeof(zero));
    g_assert_cmpmem(sent(0)->data + sizeof(zero), 60, gpa(TX_BUF), 60);
    dev_free(t);
}

/*
 * A TSO send to a peer that takes offloads goes whole, behind a header
 * that asks the host to cut it: the guest's packet byte for byte but for
 * what the hardware would have filled in per segment, here filled in for
 * the whole (IPv4 total length and header checksum or IPv6 payload length,
 * the TCP seed with the length). Counted as the frames it makes. A send
 * with VLAN insertion, or with its checksum elsewhere than TCP's, is cut
 * in the model all the same.
 */
static void test_tx_gso_to_host(gconstpointer ipv)
{
    TestDev *t = dev_new_peer(true, &fake_vnet_info, true);
    tx_setup(t);
    bool v4 = GPOINTER_TO_INT(ipv) == 4;
    TcpSend ts = {
        .ipv = v4 ? 4 : 6, .tso = true, .mss = 1448, .payload_len = 65000, .seq = 0xfffff000u,
        .ip_id = 0x1234, .flags = 0x19, .seed = 21,
    };
    tx_tcp(t, &ts);
    g_assert_cmpuint(fake.frames->len, ==, 1);
    const uint8_t *vh = sent(0)->data, *pkt = sent(0)->data + VIRTIO_NET_HDR_LEN_SHORT;
    size_t l3 = 14, l4 = v4 ? 34 : 54, hdr = l4 + 20, len = hdr + ts.payload_len;
    g_assert_cmpuint(sent(0)->len, ==, VIRTIO_NET_HDR_LEN_SHORT + len);
    g_assert_cmphex(vh[0], ==, VIRTIO_NET_HDR_F_NEEDS_CSUM);
    g_assert_cmphex(vh[1], ==, v4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6);
    g_assert_cmpuint(get_le16(vh + 2), ==, hdr);
    g_assert_cmpuint(get_le16(vh + 4), ==, ts.mss);
    g_assert_cmpuint(get_le16(vh + 6), ==, l4);
    g_assert_cmpuint(get_le16(vh + 8), ==, 16);
    uint32_t pseudo;
    if (v4) {
        g_assert_cmpuint(get_be16(pkt + l3 + 2), ==, len - l3);
        g_assert_cmphex(net_checksum_finish(net_checksum_add(0, pkt + l3, 20)), ==, 0);
        g_assert_cmpuint(get_be16(pkt + l3 + 4), ==, ts.ip_id);
        pseudo = net_checksum_add(6 + (uint32_t)(len - l4), pkt + l3 + 12, 8);
    } else {
        g_assert_cmpuint(get_be16(pkt + l3 + 4), ==, len - l4);
        pseudo = net_checksum_add(6 + (uint32_t)(len - l4), pkt + l3 + 8, 32);
    }
    /* The seed a host's own stack leaves for GSO: the pseudo-header with
     * the whole TCP length, folded, not complemented. */
    g_assert_cmphex(get_be16(pkt + l4 + 16), ==, (uint16_t)~net_checksum_finish(pseudo));
    g_assert_cmpmem(pkt, 12, gpa(TX_BUF), 12);
    g_assert_cmpmem(pkt + l4, 16, gpa(TX_BUF) + l4, 16);
    g_assert_cmpmem(pkt + hdr, ts.payload_len, gpa(TX_BUF) + hdr, ts.payload_len);
    unsigned nsegs = (ts.payload_len + ts.mss - 1) / ts.mss;
    g_assert_cmpuint(rd(t, E1000_GPTC), ==, nsegs);
    g_assert_cmpuint(rd(t, E1000_TSCTC), ==, 1);
    g_assert_cmpuint(rd(t, E1000_TDH), ==, t->tx_tail);

    /* VLAN insertion: cut here, each frame behind a header of zeros. */
    wr(t, E1000_CTRL, rd(t, E1000_CTRL) | E1000_CTRL_VME);
    tx_tcp_queue(t, &ts);
    put_le32(tx_desc(t, t->tx_tail - 1) + 8,
             get_le32(tx_desc(t, t->tx_tail - 1) + 8) | E1000_TXD_CMD_VLE);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 1 + nsegs);
    g_assert_cmpuint(sent(1)->len, ==, VIRTIO_NET_HDR_LEN_SHORT + 4 + hdr + ts.mss);
    g_assert_cmphex(sent(1)->data[1], ==, VIRTIO_NET_HDR_GSO_NONE);

    /* A checksum asked for elsewhere than TCP's (TUCSO): cut here too, the
     * sum where the guest asked. */
    wr(t, E1000_CTRL, rd(t, E1000_CTRL) & ~E1000_CTRL_VME);
    unsigned ctx = t->tx_tail;
    tx_tcp_queue(t, &ts);
    tx_desc(t, ctx)[5] = l4 + 12;
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 1 + 2 * nsegs);
    g_assert_cmphex(sent(1 + nsegs)->data[1], ==, VIRTIO_NET_HDR_GSO_NONE);
    dev_free(t);
}

/* x-host-offloads=off: the tap-like peer is asked for nothing, frames are
 * bare both ways. */
static void test_host_offloads_off(void)
{
    TestDev *t = dev_new_peer(true, &fake_vnet_info, false);
    g_assert_cmpuint(fake.vnet_hdr_len, ==, 0);
    g_assert_false(fake.offloads.csum || fake.offloads.tso4);
    rx_setup(t, RX_RING_COUNT - 1, E1000_RCTL_SECRC);
    uint8_t f[100];
    make_frame(f, sizeof(f), (uint8_t[]) { MAC0 });
    g_assert_cmpint(rx_send(t, f, sizeof(f)), ==, sizeof(f));
    assert_received(0, f, sizeof(f), 0);
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 60, 9);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpmem(sent(0)->data, sent(0)->len, gpa(TX_BUF), 60);
    /* And a TSO send is cut in the model. */
    TcpSend ts = { .ipv = 4, .tso = true, .mss = 1448, .payload_len = 10000, .seq = 1,
                   .ip_id = 2, .flags = 0x18, .seed = 4 };
    tx_tcp(t, &ts);
    g_assert_cmpuint(fake.frames->len, ==, 1 + (ts.payload_len + ts.mss - 1) / ts.mss);
    run_checker(&ts, 1);
    dev_free(t);
}

/* ---- two threads ---- */

#define CONCURRENT_TX   3000
#define CONCURRENT_RX   3000

/* A guest driver on its own thread (a vCPU): transmits frames, and reaps
 * received ones, giving their buffers back through RDT, as NAPI does. */
static gpointer concurrent_guest(gpointer opaque)
{
    TestDev *t = opaque;
    unsigned sent = 0, reaped = 0, next_rx = 0;
    while (sent < CONCURRENT_TX || reaped < CONCURRENT_RX) {
        if (sent < CONCURRENT_TX) {
            tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
            wr(t, E1000_TDT, t->tx_tail);
            sent++;
        }
        /* RDH's read orders the descriptors the device wrote before it. */
        unsigned rdh = rd(t, E1000_RDH);
        while (next_rx != rdh) {
            uint8_t *d = rx_desc(next_rx);
            g_assert_cmphex(d[12] & E1000_RXD_STAT_DD, ==, E1000_RXD_STAT_DD);
            g_assert_cmpuint(gpa(get_le64(d))[14], ==, reaped & 0xff);
            d[12] = 0;
            reaped++;
            next_rx = (next_rx + 1) % RX_RING_COUNT;
            wr(t, E1000_RDT, (next_rx + RX_RING_COUNT - 1) % RX_RING_COUNT);
        }
        rd(t, E1000_ICR);
    }
    return NULL;
}

/* The backend's side on the test thread (the main loop) and a vCPU
 * thread at once, under the device lock (and TSan in make check). */
static void test_concurrent_rx_tx(void)
{
    TestDev *t = dev_new_conf(false);
    tx_setup(t);
    rx_setup(t, RX_RING_COUNT - 1, E1000_RCTL_SECRC);
    GThread *guest = g_thread_new("guest", concurrent_guest, t);
    uint8_t f[64];
    static const uint8_t mine[6] = { MAC0 };
    make_frame(f, sizeof(f), mine);
    unsigned refused = 0;
    for (unsigned i = 0; i < CONCURRENT_RX; i++) {
        f[14] = i;
        while (rx_send(t, f, sizeof(f)) == 0) {
            refused++;
            /* Wait for RDT to bring send_ready, as a backend does. */
            unsigned ready = fake.send_ready;
            while (fake.send_ready == ready) {
                g_main_context_iteration(main_loop_context(), TRUE);
            }
        }
    }
    g_thread_join(guest);
    g_assert_cmpuint(fake.frames->len, ==, CONCURRENT_TX);
    g_test_message("%u of %u frames waited for the ring", refused, CONCURRENT_RX);
    g_assert_cmpuint(rd(t, E1000_GPRC), ==, CONCURRENT_RX);
    g_assert_cmpuint(rd(t, E1000_GPTC), ==, CONCURRENT_TX);
    dev_free(t);
}

/* ---- hostile guests ---- */

static void test_hostile_rx_ring(void)
{
    TestDev *t = dev_new();
    static const uint8_t mine[6] = { MAC0 };
    uint8_t f[100];
    make_frame(f, 100, mine);
    rx_setup(t, 4, 0);
    wr(t, E1000_RDLEN, 100);        /* not a multiple of 128 */
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    wr(t, E1000_RDLEN, 0);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    wr(t, E1000_RDLEN, RX_RING_COUNT * 16);
    wr(t, E1000_RDBAL, 0xdead0000);     /* not RAM */
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    g_assert_cmpuint(rd(t, E1000_RDH), ==, 0);
    /* A descriptor whose buffer is not RAM stops the ring... */
    wr(t, E1000_RDBAL, (uint32_t)RX_RING);
    put_le64(rx_desc(0), 0xdead0000);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    put_le64(rx_desc(0), RX_BUF);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    g_assert_cmphex(rx_desc(0)[12], ==, 0);
    /* ...until the guest reprograms it. */
    wr(t, E1000_RDH, 0);
    g_assert_cmpint(rx_send(t, f, 100), ==, 100);
    assert_received(0, f, 100, 4);
    dev_free(t);
}

static void test_hostile_tx(void)
{
    TestDev *t = dev_new();
    tx_setup(t);
    fill_pattern(gpa(TX_BUF), 256, 0);
    /* A ring outside RAM: nothing happens until it is reprogrammed. */
    wr(t, E1000_TDBAL, 0xdead0000);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 0);
    wr(t, E1000_TDBAL, (uint32_t)TX_RING);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 1);
    /* A descriptor over 16 KiB, one outside RAM: their packets are dropped,
     * the descriptors consumed and written back. */
    unsigned a = tx_queue(t, TX_BUF, 20000 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    unsigned b = tx_queue(t, 0xdead0000, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP | E1000_TXD_CMD_RS, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 2);
    g_assert_cmphex(tx_desc(t, a)[12], ==, E1000_TXD_STAT_DD);
    g_assert_cmphex(tx_desc(t, b)[12], ==, E1000_TXD_STAT_DD);
    /* TSO contexts that cannot be: MSS 0, headers longer than the packet. */
    uint32_t tucmd = E1000_TXD_CMD_DEXT | E1000_TXD_CMD_TSE | E1000_TXC_TUCMD_TCP |
                     E1000_TXC_TUCMD_IP;
    uint64_t ctx = 14 | 24 << 8 | 33 << 16 | 34ULL << 32 | 50ULL << 40;
    uint32_t data = E1000_TXD_CMD_DEXT | E1000_TXD_DTYP_D | E1000_TXD_CMD_TSE |
                    E1000_TXD_CMD_EOP;
    tx_queue(t, ctx, tucmd | 200, 0u << 16 | 54 << 8);
    tx_queue(t, TX_BUF, data | 254, E1000_TXD_POPTS_TXSM);
    tx_queue(t, ctx, tucmd | 200, 100u << 16 | 255 << 8);
    tx_queue(t, TX_BUF, data | 100, E1000_TXD_POPTS_TXSM);
    tx_queue(t, ctx, tucmd | 200, 100u << 16 | 10 << 8);   /* TCP beyond the headers */
    tx_queue(t, TX_BUF, data | 254, E1000_TXD_POPTS_TXSM);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 2);
    /* Unknown descriptor type, then an endless packet: the whole ring of
     * 16 KiB pieces without EOP, then the tail one short of the head. The
     * pass ends at TDT and the oversized packet is dropped. */
    tx_queue(t, 0, E1000_TXD_CMD_DEXT | 7u << 20, 0);
    tx_kick(t);
    unsigned head = rd(t, E1000_TDH);
    for (unsigned i = 0; i < TX_RING_COUNT - 1; i++) {
        tx_queue(t, TX_BUF, 16384, 0);
    }
    wr(t, E1000_TDT, (head + TX_RING_COUNT - 1) % TX_RING_COUNT);
    main_loop_settle();
    g_assert_cmpuint(rd(t, E1000_TDH), ==, (head + TX_RING_COUNT - 1) % TX_RING_COUNT);
    t->tx_tail = rd(t, E1000_TDH);
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 2);  /* the end of the oversized packet */
    tx_queue(t, TX_BUF, 60 | E1000_TXD_CMD_EOP, 0);
    tx_kick(t);
    g_assert_cmpuint(fake.frames->len, ==, 3);  /* and the ring works on */
    /* TDT beyond the ring stops it. */
    wr(t, E1000_TDT, TX_RING_COUNT + 5);
    main_loop_settle();
    g_assert_cmpuint(fake.frames->len, ==, 3);
    dev_free(t);
}

static void test_register_abuse(void)
{
    TestDev *t = dev_new();
    uint32_t ims = rd(t, E1000_IMS);
    mem_write(t->bar0 + E1000_IMS, 0xff, 1);        /* narrow writes are refused */
    mem_write(t->bar0 + E1000_IMS + 2, 0xff, 2);
    g_assert_cmphex(rd(t, E1000_IMS), ==, ims);
    g_assert_cmphex(mem_read(t->bar0 + E1000_STATUS, 1), ==, rd(t, E1000_STATUS) & 0xff);
    wr(t, 0x1fffc, 0x12345678);                     /* beyond the register file */
    g_assert_cmphex(rd(t, 0x1fffc), ==, 0);
    wr(t, E1000_MANC, 0xffffffff);
    g_assert_cmphex(rd(t, E1000_MANC), ==, 0);
    wr(t, E1000_STATUS, 0);
    g_assert_true(rd(t, E1000_STATUS) & E1000_STATUS_LU);
    io_write(t->bar1 + E1000_IOADDR, 0x20001, 4);   /* beyond BAR0, unaligned */
    g_assert_cmphex(io_read(t->bar1 + E1000_IODATA, 4), ==, 0);
    io_write(t->bar1 + E1000_IODATA, 0, 4);
    /* CTRL.RST: the registers return to their reset values. */
    wr(t, E1000_IMS, E1000_ICR_LSC);
    wr(t, E1000_RCTL, E1000_RCTL_EN);
    wr(t, E1000_CTRL, E1000_CTRL_RST);
    g_assert_cmphex(rd(t, E1000_IMS), ==, 0);
    g_assert_cmphex(rd(t, E1000_RCTL), ==, 0);
    g_assert_cmphex(rd(t, E1000_CTRL) & E1000_CTRL_RST, ==, 0);
    dev_free(t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    static const IrqBackend backend = { .set_level = rec_set_level, .send_msi = rec_send_msi };
    irq_set_backend(&backend);
    ram = test_ram_map(RAM_BASE, RAM_SIZE);

    g_test_add_func("/e1000/pci-identity", test_pci_identity);
    g_test_add_func("/e1000/eeprom", test_eeprom);
    g_test_add_func("/e1000/phy", test_phy);
    g_test_add_func("/e1000/link-interrupt", test_link_interrupt);
    g_test_add_func("/e1000/link-change-keeps-phy-programming",
                    test_link_change_keeps_phy_programming);
    g_test_add_func("/e1000/qmp-set-link", test_qmp_set_link);
    g_test_add_data_func("/e1000/tx-legacy/deferred", GINT_TO_POINTER(1), test_tx_legacy);
    g_test_add_data_func("/e1000/tx-legacy/on-vcpu", GINT_TO_POINTER(0), test_tx_legacy);
    g_test_add_func("/e1000/tx-backpressure", test_tx_backpressure);
    g_test_add_func("/e1000/tx-empty-packet", test_tx_empty_packet);
    g_test_add_data_func("/e1000/tx-oversize-frame/deferred", GINT_TO_POINTER(1),
                         test_tx_oversize_frame);
    g_test_add_data_func("/e1000/tx-oversize-frame/on-vcpu", GINT_TO_POINTER(0),
                         test_tx_oversize_frame);
    g_test_add_func("/e1000/tx-checksum-offload", test_tx_checksum_offload);
    g_test_add_func("/e1000/tx-checksum-offload-refused", test_tx_checksum_offload_refused);
    g_test_add_data_func("/e1000/tso/ipv4", GINT_TO_POINTER(4), test_tso);
    g_test_add_data_func("/e1000/tso/ipv6", GINT_TO_POINTER(6), test_tso);
    g_test_add_func("/e1000/tso-tiny-mss-bounded", test_tso_tiny_mss_bounded);
    g_test_add_data_func("/e1000/tx-sends-unlocked/deferred", GINT_TO_POINTER(1),
                         test_tx_sends_unlocked);
    g_test_add_data_func("/e1000/tx-sends-unlocked/on-vcpu", GINT_TO_POINTER(0),
                         test_tx_sends_unlocked);
    g_test_add_data_func("/e1000/tx-ring-gone-while-sending/reset",
                         GUINT_TO_POINTER(E1000_CTRL), test_tx_ring_gone_while_sending);
    g_test_add_data_func("/e1000/tx-ring-gone-while-sending/tdh",
                         GUINT_TO_POINTER(E1000_TDH), test_tx_ring_gone_while_sending);
    g_test_add_func("/e1000/rx-filters", test_rx_filters);
    g_test_add_func("/e1000/rx-checksum-and-vlan", test_rx_checksum_and_vlan);
    g_test_add_func("/e1000/rx-full-ring", test_rx_full_ring);
    g_test_add_func("/e1000/rx-replays-coalesced-writes", test_rx_replays_coalesced_writes);
    g_test_add_func("/e1000/imc-posted-until-next-access", test_imc_posted_until_next_access);
    g_test_add_func("/e1000/rx-frame-larger-than-ring", test_rx_frame_larger_than_ring);
    g_test_add_data_func("/e1000/rx-host-gso/ipv4", GINT_TO_POINTER(4), test_rx_host_gso);
    g_test_add_data_func("/e1000/rx-host-gso/ipv6", GINT_TO_POINTER(6), test_rx_host_gso);
    g_test_add_func("/e1000/rx-host-checksum-and-hostile", test_rx_host_checksum_and_hostile);
    g_test_add_data_func("/e1000/tx-gso-to-host/ipv4", GINT_TO_POINTER(4), test_tx_gso_to_host);
    g_test_add_data_func("/e1000/tx-gso-to-host/ipv6", GINT_TO_POINTER(6), test_tx_gso_to_host);
    g_test_add_func("/e1000/host-offloads-off", test_host_offloads_off);
    g_test_add_func("/e1000/concurrent-rx-tx", test_concurrent_rx_tx);
    g_test_add_func("/e1000/hostile-rx-ring", test_hostile_rx_ring);
    g_test_add_func("/e1000/hostile-tx", test_hostile_tx);
    g_test_add_func("/e1000/register-abuse", test_register_abuse);
    return g_test_run();
}
