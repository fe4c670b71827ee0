/*
 * vhost without a kernel: the memory table a vhost device hands the kernel
 * as the guest's map changes (RAM only, holes left out, neighbours merged,
 * one whole table per change), the translation of ring addresses that
 * refuses rings outside RAM, and vhost-net's feature arithmetic.
 */
#include <glib.h>
#include "exec/memory.h"
#include "hw/virtio/vhost-memory.h"
#include "hw/virtio/vhost-net.h"
#include "hw/virtio/vhost.h"
#include "net/vnet-hdr.h"

/* ---- the memory table ---- */

/* Every table handed over, as "gpa+size@hostoffset gpa+size@hostoffset",
 * host offsets relative to the test's RAM buffer. */
typedef struct TableLog {
    GPtrArray *tables;
    const uint8_t *host;
} TableLog;

static void table_changed(void *opaque, const VhostUapiMemory *t)
{
    TableLog *log = opaque;
    GString *s = g_string_new(t->nregions ? "" : "(empty)");
    for (uint32_t i = 0; i < t->nregions; i++) {
        const VhostUapiMemoryRegion *r = &t->regions[i];
        g_string_append_printf(s, "%s0x%" G_GINT64_MODIFIER "x+0x%" G_GINT64_MODIFIER
                               "x@0x%" G_GINT64_MODIFIER "x", i ? " " : "",
                               (guint64)r->guest_phys_addr, (guint64)r->memory_size,
                               (guint64)(r->userspace_addr - (uintptr_t)log->host));
    }
    g_ptr_array_add(log->tables, g_string_free(s, FALSE));
}

/* The tables handed over since the last call, joined by " | ". */
static char *take_tables(TableLog *log)
{
    g_ptr_array_add(log->tables, NULL);
    char *s = g_strjoinv(" | ", (char **)log->tables->pdata);
    g_ptr_array_set_size(log->tables, 0);
    return s;
}

#define assert_tables(log, expected) do {                   \
        g_autofree char *got_ = take_tables(log);           \
        g_assert_cmpstr(got_, ==, expected);                \
    } while (0)

static const MemoryRegionOps nop_ops = { .max_access_size = 4 };

/* Regions and devices live as long as the program, as a machine's do. */
static MemoryRegion *io_region(const char *name, uint64_t size)
{
    QEMUDevice *dev = g_new0(QEMUDevice, 1);
    device_init(dev, "test-device", "vhost-test");
    MemoryRegion *mr = g_new0(MemoryRegion, 1);
    memory_region_init_io(mr, dev, &nop_ops, NULL, name, size);
    return mr;
}

static MemoryRegion *ram_region(const char *name, uint64_t size, uint8_t *host)
{
    MemoryRegion *mr = g_new0(MemoryRegion, 1);
    memory_region_init_ram(mr, name, size, host);
    return mr;
}

#define HOST_SIZE   0x100000

typedef struct MemFixture {
    AddressSpace *as;
    uint8_t *host;
    TableLog log;
    VhostMemory mem;
} MemFixture;

static void fixture_init(MemFixture *f)
{
    f->as = address_space_new("vhost-test");
    f->host = g_malloc0(HOST_SIZE);
    f->log = (TableLog) { .tables = g_ptr_array_new_with_free_func(g_free), .host = f->host };
    vhost_memory_init(&f->mem, table_changed, &f->log);
}

static void fixture_free(MemFixture *f)
{
    vhost_memory_destroy(&f->mem);
    g_ptr_array_free(f->log.tables, TRUE);
    /* The regions stay mapped in the leaked address space: they and the
     * host memory they show live as long as the program. */
}

/*
 * RAM below and above a hole, as a PC has it: two regions. Listening hands
 * over the current table at once; a change that touches no RAM hands over
 * nothing; leaving hands over an empty one.
 */
static void test_table_holes(void)
{
    MemFixture f;
    fixture_init(&f);
    address_space_map(f.as, ram_region("low", 0xa000, f.host), 0, 0);
    address_space_map(f.as, ram_region("high", 0x10000, f.host + 0x20000), 0x100000, 0);
    vhost_memory_listen(&f.mem, f.as);
    assert_tables(&f.log, "0x0+0xa000@0x0 0x100000+0x10000@0x20000");

    address_space_map(f.as, io_region("mmio", 0x1000), 0xfee00000, 0);
    assert_tables(&f.log, "");

    vhost_memory_destroy(&f.mem);
    assert_tables(&f.log, "(empty)");
    g_ptr_array_free(f.log.tables, TRUE);
}

/* Sections that meet in both guest-physical and host memory are one region
 * for the kernel; meeting in one of the two is not enough. */
static void test_table_adjacency(void)
{
    MemFixture f;
    fixture_init(&f);
    vhost_memory_listen(&f.mem, f.as);
    assert_tables(&f.log, "(empty)");
    address_space_map(f.as, ram_region("a", 0x1000, f.host), 0x10000, 0);
    address_space_map(f.as, ram_region("b", 0x1000, f.host + 0x1000), 0x11000, 0);
    assert_tables(&f.log, "0x10000+0x1000@0x0 | 0x10000+0x2000@0x0");
    /* Next in guest-physical, elsewhere in host memory. */
    address_space_map(f.as, ram_region("c", 0x1000, f.host + 0x8000), 0x12000, 0);
    assert_tables(&f.log, "0x10000+0x2000@0x0 0x12000+0x1000@0x8000");
    fixture_free(&f);
}

/*
 * A BAR mapped over RAM cuts a hole in it, and the kernel gets the two
 * pieces in one table, never the RAM missing as a whole between the del
 * and the adds; the BAR moved away (one transaction) glues RAM back into
 * one region, again in one table.
 */
static void test_table_bar_moves(void)
{
    MemFixture f;
    fixture_init(&f);
    address_space_map(f.as, ram_region("ram", 0x40000, f.host), 0, 0);
    vhost_memory_listen(&f.mem, f.as);
    assert_tables(&f.log, "0x0+0x40000@0x0");

    MemoryRegion *bar = io_region("bar", 0x4000);
    address_space_map(f.as, bar, 0x10000, 1);
    assert_tables(&f.log, "0x0+0x10000@0x0 0x14000+0x2c000@0x14000");

    address_space_begin(f.as);
    address_space_unmap(f.as, bar);
    address_space_map(f.as, bar, 0x80000, 1);
    address_space_commit(f.as);
    assert_tables(&f.log, "0x0+0x40000@0x0");
    fixture_free(&f);
}

/* Translation: wholly inside one region (merged ones count as one), else
 * refused: a hole, MMIO, past the end, wrapping, empty. */
static void test_translate(void)
{
    MemFixture f;
    fixture_init(&f);
    address_space_map(f.as, ram_region("a", 0x1000, f.host), 0x10000, 0);
    address_space_map(f.as, ram_region("b", 0x1000, f.host + 0x1000), 0x11000, 0);
    address_space_map(f.as, ram_region("far", 0x1000, f.host + 0x4000), 0x20000, 0);
    address_space_map(f.as, io_region("mmio", 0x1000), 0x30000, 0);
    vhost_memory_listen(&f.mem, f.as);
    uint64_t hva = 0;
    g_assert_true(vhost_memory_translate(&f.mem, 0x10010, 0x10, &hva));
    g_assert_true(hva == (uintptr_t)f.host + 0x10);
    g_assert_true(vhost_memory_translate(&f.mem, 0x10ff0, 0x20, &hva));
    g_assert_true(hva == (uintptr_t)f.host + 0xff0);
    g_assert_true(vhost_memory_translate(&f.mem, 0x20000, 0x1000, &hva));
    g_assert_true(hva == (uintptr_t)f.host + 0x4000);
    g_assert_false(vhost_memory_translate(&f.mem, 0x11ff0, 0x20, &hva));    /* into a hole */
    g_assert_false(vhost_memory_translate(&f.mem, 0x1fff0, 0x20, &hva));    /* from a hole */
    g_assert_false(vhost_memory_translate(&f.mem, 0x30000, 0x10, &hva));    /* MMIO */
    g_assert_false(vhost_memory_translate(&f.mem, 0x20800, 0x1000, &hva));  /* past the end */
    g_assert_false(vhost_memory_translate(&f.mem, UINT64_MAX - 0xf, 0x20, &hva));
    g_assert_false(vhost_memory_translate(&f.mem, 0x10000, 0, &hva));
    fixture_free(&f);
}

/* A ring's three parts, sized for its entries and event fields, each in
 * RAM; one part out and the ring is refused with the part named. */
static void test_ring_addr(void)
{
    MemFixture f;
    fixture_init(&f);
    address_space_map(f.as, ram_region("ram", 0x10000, f.host), 0x100000, 0);
    vhost_memory_listen(&f.mem, f.as);
    VhostRingSetup s = { .num = 256, .desc = 0x100000, .avail = 0x101000, .used = 0x102000 };
    VhostUapiVringAddr addr;
    g_assert_true(vhost_ring_addr(&f.mem, 1, &s, &addr, NULL));
    g_assert_cmpuint(addr.index, ==, 1);
    g_assert_true(addr.desc_user_addr == (uintptr_t)f.host);
    g_assert_true(addr.avail_user_addr == (uintptr_t)f.host + 0x1000);
    g_assert_true(addr.used_user_addr == (uintptr_t)f.host + 0x2000);
    g_assert_cmpuint(addr.flags, ==, 0);

    /* The used ring of 256 entries is 4 + 8 * 256 + 2 bytes: its last
     * byte one past RAM. */
    s.used = 0x110000 - (4 + 8 * 256 + 2) + 1;
    Error *err = NULL;
    g_assert_false(vhost_ring_addr(&f.mem, 0, &s, &addr, &err));
    g_assert_nonnull(strstr(err->msg, "used ring"));
    error_free(err);
    s.used -= 1;
    g_assert_true(vhost_ring_addr(&f.mem, 0, &s, &addr, NULL));
    s.desc = 0x200000;      /* no RAM there at all */
    g_assert_false(vhost_ring_addr(&f.mem, 0, &s, &addr, NULL));
    fixture_free(&f);
}

/* ---- vhost-net's features ---- */

#define BIT(n)              VIRTIO_BIT(n)
#define MRG_RXBUF           15
#define NOTIFY_ON_EMPTY     24
#define ANY_LAYOUT          27
#define ACCESS_PLATFORM     33
#define RING_PACKED         34
#define NET_CSUM            0
#define NET_GUEST_CSUM      1
#define NET_MAC             5
#define NET_HOST_TSO4       11
#define NET_CTRL_VQ         17
#define NET_MQ              22

/* What a kernel of the last years offers (Linux's VHOST_NET_FEATURES). */
static const uint64_t kernel_all =
    BIT(NOTIFY_ON_EMPTY) | BIT(VIRTIO_F_RING_INDIRECT_DESC) | BIT(VIRTIO_F_RING_EVENT_IDX) |
    BIT(26) /* LOG_ALL */ | BIT(ANY_LAYOUT) | BIT(VIRTIO_F_VERSION_1) | BIT(MRG_RXBUF) |
    BIT(ACCESS_PLATFORM);

static const uint64_t offered =
    BIT(NET_CSUM) | BIT(NET_GUEST_CSUM) | BIT(NET_MAC) | BIT(NET_HOST_TSO4) | BIT(MRG_RXBUF) |
    BIT(NET_CTRL_VQ) | BIT(NET_MQ) | BIT(VIRTIO_F_RING_INDIRECT_DESC) |
    BIT(VIRTIO_F_RING_EVENT_IDX) | BIT(VIRTIO_F_VERSION_1) | BIT(ANY_LAYOUT) |
    BIT(ACCESS_PLATFORM) | BIT(RING_PACKED);

static void test_feature_mask(void)
{
    /* Everything the kernel does is offered; never an IOMMU or packed
     * rings; vhost-only bits (LOG_ALL) are not invented. */
    g_assert_cmphex(vhost_net_mask_features(kernel_all, offered), ==,
                    offered & ~BIT(ACCESS_PLATFORM) & ~BIT(RING_PACKED));
    /* An older kernel without EVENT_IDX and MRG_RXBUF: those go, the
     * tap's and user space's bits stay. */
    uint64_t old_kernel = kernel_all & ~BIT(VIRTIO_F_RING_EVENT_IDX) & ~BIT(MRG_RXBUF);
    uint64_t masked = vhost_net_mask_features(old_kernel, offered);
    g_assert_false(masked & BIT(VIRTIO_F_RING_EVENT_IDX));
    g_assert_false(masked & BIT(MRG_RXBUF));
    g_assert_true(masked & BIT(VIRTIO_F_VERSION_1));
    g_assert_cmphex(masked & (BIT(NET_CSUM) | BIT(NET_GUEST_CSUM) | BIT(NET_MAC) |
                              BIT(NET_HOST_TSO4) | BIT(NET_CTRL_VQ) | BIT(NET_MQ)), ==,
                    BIT(NET_CSUM) | BIT(NET_GUEST_CSUM) | BIT(NET_MAC) | BIT(NET_HOST_TSO4) |
                    BIT(NET_CTRL_VQ) | BIT(NET_MQ));
}

static void test_feature_ack(void)
{
    uint64_t guest = BIT(NET_CSUM) | BIT(MRG_RXBUF) | BIT(VIRTIO_F_RING_EVENT_IDX) |
                     BIT(VIRTIO_F_VERSION_1) | BIT(ANY_LAYOUT) | BIT(NET_CTRL_VQ);
    /* The kernel hears of the ring and buffer layout only, and never of
     * ANY_LAYOUT, which it would take for "add the header yourself"... */
    g_assert_cmphex(vhost_net_ack_features(kernel_all, guest, true), ==,
                    BIT(MRG_RXBUF) | BIT(VIRTIO_F_RING_EVENT_IDX) | BIT(VIRTIO_F_VERSION_1));
    /* ...unless the tap carries no header: then that is what it must do. */
    g_assert_cmphex(vhost_net_ack_features(kernel_all, guest, false), ==,
                    BIT(MRG_RXBUF) | BIT(VIRTIO_F_RING_EVENT_IDX) | BIT(VIRTIO_F_VERSION_1) |
                    BIT(VHOST_UAPI_NET_F_VIRTIO_NET_HDR));
    g_assert_cmpuint(vhost_net_hdr_len(guest), ==, VIRTIO_NET_HDR_LEN);
    g_assert_cmpuint(vhost_net_hdr_len(BIT(VIRTIO_F_VERSION_1)), ==, VIRTIO_NET_HDR_LEN);
    g_assert_cmpuint(vhost_net_hdr_len(BIT(MRG_RXBUF)), ==, VIRTIO_NET_HDR_LEN);
    g_assert_cmpuint(vhost_net_hdr_len(BIT(NET_CSUM)), ==, VIRTIO_NET_HDR_LEN_SHORT);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vhost/table/holes", test_table_holes);
    g_test_add_func("/vhost/table/adjacency", test_table_adjacency);
    g_test_add_func("/vhost/table/bar-moves", test_table_bar_moves);
    g_test_add_func("/vhost/translate", test_translate);
    g_test_add_func("/vhost/ring-addr", test_ring_addr);
    g_test_add_func("/vhost-net/feature-mask", test_feature_mask);
    g_test_add_func("/vhost-net/feature-ack", test_feature_ack);
    return g_test_run();
}
