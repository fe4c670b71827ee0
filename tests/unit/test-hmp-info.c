/*
 * info network and info qtree (net/net-info.c, monitor/hmp-qtree.c): the
 * lines QEMU 7.2 printed for the same set-up, checked through the monitor's
 * command line. Each test builds its own clients and devices; the NIC
 * registry is process-wide, so the network test runs first.
 */
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/block-error-properties.h"
#include "hw/char/serial.h"
#include "hw/ide/ide.h"
#include "hw/pci-host/i440fx.h"
#include "hw/qdev-registry.h"
#include "monitor/hmp.h"
#include "net/net.h"
#include "net-stub.h"

static char *run(const char *line)
{
    GString *out = g_string_new(NULL);
    hmp_run_command(line, 0, out);
    return g_string_free(out, false);
}

static const NetClientInfo user_like = { .type = "user", .receive = nic_stub_receive };
static const NetClientInfo tap_like = { .type = "tap", .receive = nic_stub_receive };

static NetClientState *nic_for(QEMUDevice *owner, NetDev *nd, unsigned queue,
                               GMainContext *ctx)
{
    Error *err = NULL;
    NetClientState *nc = net_nic_new(&nic_stub_info, "nic", nd, queue, owner->id, ctx, NULL,
                                     &err);
    g_assert_null(err);
    nc->owner = owner;
    return nc;
}

/* QEMU: the netdev queues no NIC took first, then each NIC and " \ " its
 * peer; names are the device id, else MODEL.N counting earlier NIC queues
 * of the model; a second queue shows an empty NIC text; no link state. */
static void test_info_network(void)
{
    GMainContext *ctx = g_main_context_new();
    Error *err = NULL;
    NetDev *user = netdev_new("user", "n0", 1, &user_like, &err);
    NetDev *tap = netdev_new("tap", "t0", 2, &tap_like, &err);
    NetDev *spare = netdev_new("tap", "t9", 1, &tap_like, &err);
    g_assert_null(err);
    net_client_set_info(user->queues[0], "net=10.0.2.0,restrict=off");
    net_client_set_info(tap->queues[0], "ifname=tap0,script=no,downscript=no");
    net_client_set_info(tap->queues[1], "ifname=tap0,script=no,downscript=no");
    net_client_set_info(spare->queues[0], "ifname=tap9,script=no,downscript=no");

    static QEMUDevice e1, e2, vq;
    device_init(&e1, "e1000", "e1000.");
    device_init(&vq, "virtio-net-pci", "virtio-net");
    device_init(&e2, "e1000", "e1000.");
    device_set_id(&vq, "vq");
    MACAddr mac = { { 0x52, 0x54, 0, 0x12, 0x34, 0x56 } };
    net_nic_set_info(nic_for(&e1, user, 0, ctx), &mac);
    mac.a[5]++;
    net_nic_set_info(nic_for(&vq, tap, 0, ctx), &mac);
    nic_for(&vq, tap, 1, ctx);
    mac.a[5]++;
    NetClientState *lonely = nic_for(&e2, NULL, 0, ctx);
    net_nic_set_info(lonely, &mac);
    net_client_set_link(lonely, false);

    g_autofree char *text = run("info network");
    g_assert_cmpstr(text, ==,
        "t9: index=0,type=tap,ifname=tap9,script=no,downscript=no\n"
        "e1000.0: index=0,type=nic,model=e1000,macaddr=52:54:00:12:34:56\n"
        " \\ n0: index=0,type=user,net=10.0.2.0,restrict=off\n"
        "vq: index=0,type=nic,model=virtio-net-pci,macaddr=52:54:00:12:34:57\n"
        " \\ t0: index=0,type=tap,ifname=tap0,script=no,downscript=no\n"
        "vq: index=1,type=nic,\n"
        " \\ t0: index=1,type=tap,ifname=tap0,script=no,downscript=no\n"
        "e1000.1: index=0,type=nic,model=e1000,macaddr=52:54:00:12:34:58\n");
    MACAddr got;
    g_assert_true(net_nic_mac(&vq, &got));
    g_assert_cmpuint(got.a[5], ==, 0x57);

    g_autoptr(GPtrArray) nics = net_nic_clients();
    for (guint i = 0; i < nics->len; i++) {
        net_client_free(g_ptr_array_index(nics, i));
    }
    netdevs_free_all();
    g_main_context_unref(ctx);
}

/* The values as QEMU's qtree prints each kind. */
static void test_property_value_text(void)
{
    typedef struct {
        bool b;
        OnOffAuto ooa;
        uint16_t u16;
        int32_t i32, devfn, unset_devfn;
        uint64_t size, small;
        char *s, *none;
        MACAddr mac;
        DeviceLink link, nolink;
        BlockErrorProperties errors;
    } Opts;
    static const DeviceProperty props[] = {
        DEFINE_PROP_BOOL("b", Opts, b, false, NULL),
        DEFINE_PROP_ON_OFF_AUTO("ooa", Opts, ooa, ON_OFF_AUTO_AUTO, NULL),
        DEFINE_PROP_UINT16("u16", Opts, u16, 0, NULL),
        DEFINE_PROP_INT32("i32", Opts, i32, 0, NULL),
        DEFINE_PROP_PCI_DEVFN("addr", Opts, devfn),
        DEFINE_PROP_PCI_DEVFN("addr2", Opts, unset_devfn),
        DEFINE_PROP_SIZE("size", Opts, size, 0, NULL),
        DEFINE_PROP_SIZE("small", Opts, small, 0, NULL),
        DEFINE_PROP_STRING("s", Opts, s, NULL),
        DEFINE_PROP_STRING("none", Opts, none, NULL),
        DEFINE_PROP_MACADDR("mac", Opts, mac),
        DEFINE_PROP_LINK("netdev", DEVICE_PROP_NETDEV, Opts, link),
        DEFINE_PROP_LINK("chardev", DEVICE_PROP_CHARDEV, Opts, nolink),
        DEFINE_BLOCK_ERROR_PROPERTIES(Opts, errors),
    };
    Opts o = { .b = true, .ooa = ON_OFF_AUTO_OFF, .u16 = 256, .i32 = -1,
               .devfn = PCI_DEVFN(3, 1), .unset_devfn = -1, .size = 2147483648u,
               .small = 512, .s = "QM00001", .mac = { { 0x52, 0x54, 0, 0x12, 0x34, 0x56 } },
               .link = { .id = "n0" },
               .errors = { .rerror = BLOCK_ERROR_AUTO, .werror = DRIVE_ERROR_ENOSPC } };
    const char *expected[] = {
        "true", "\"off\"", "256 (0x100)", "-1 (0xffffffffffffffff)", "03.1", "<unset>",
        "2147483648 (2 GiB)", "512 (512 B)", "\"QM00001\"", "\"\"", "\"52:54:00:12:34:56\"",
        "\"n0\"", "\"\"", "\"auto\"", "\"enospc\"",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
        g_autofree char *text = device_property_value_text(&props[i], &o);
        g_assert_cmpstr(text, ==, expected[i]);
    }
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return 16 + (slot + pin - 1) % 4;
}

/* Is needle in haystack, and before `after` when that is given? */
static void assert_line_before(const char *text, const char *line, const char *after)
{
    const char *at = strstr(text, line);
    g_assert_nonnull(at);
    if (after) {
        const char *later = strstr(text, after);
        g_assert_nonnull(later);
        g_assert_true(at < later);
    }
}

/* The pc shape, a realized e1000 with its properties (the MAC it was
 * given when none was set), the PCI lines, newest function first. */
static void test_info_qtree(void)
{
    Error *err = NULL;
    PCIBus *bus = i440fx_init(map_irq, &err);
    g_assert_nonnull(bus);
    PIIXIDEState *ide = piix3_ide_new(bus, &err);
    g_assert_nonnull(ide);
    DeviceConfig *dev = device_config_new(device_type_find("e1000"), "-device e1000");
    g_assert_true(device_config_set(dev, "id", "nic0", &err));
    DeviceBuses buses = { .pci = bus, .ide = ide };
    g_assert_nonnull(device_config_realize(dev, &buses, &err));
    g_assert_null(err);
    device_config_free(dev);
    g_assert_true(pci_bus_assign_resources(bus, 0xc000, 0xffff, 0xe0000000, 0xfebfffff, &err));
    /* A COM port the machine made (-serial): an isa-serial with what it chose. */
    g_assert_nonnull(isa_serial_new_com(1, NULL, &err));

    g_autofree char *text = run("info qtree");
    g_assert_true(g_str_has_prefix(text,
        "bus: main-system-bus\n"
        "  type System\n"
        "  dev: i440FX-pcihost, id \"\"\n"
        "    bus: pci.0\n"
        "      type PCI\n"
        "      dev: e1000, id \"nic0\"\n"
        "        netdev = \"\"\n"));
    MACAddr mac;
    char mac_text[18], mac_line[64];
    g_assert_true(net_nic_mac(device_find("nic0"), &mac));
    net_format_mac(&mac, mac_text);
    g_snprintf(mac_line, sizeof(mac_line), "        mac = \"%s\"\n", mac_text);
    assert_line_before(text, mac_line, "        addr = 02.0\n");
    assert_line_before(text, "        addr = 02.0\n"
                       "        class Ethernet controller, addr 00:02.0, pci id 8086:100e "
                       "(sub 1af4:1100)\n"
                       "        bar 0: mem at 0x", "      dev: piix3-ide, id \"\"\n");
    assert_line_before(text, "      dev: piix3-ide, id \"\"\n"
                       "        addr = 01.1\n"
                       "        class IDE controller, addr 00:01.1, pci id 8086:7010 "
                       "(sub 1af4:1100)\n"
                       "        bar 4: i/o at 0x", "        bus: ide.1\n");
    assert_line_before(text, "        bus: ide.1\n          type IDE\n"
                       "        bus: ide.0\n          type IDE\n", "      dev: PIIX3, id \"\"\n");
    assert_line_before(text, "      dev: PIIX3, id \"\"\n"
                       "        addr = 01.0\n"
                       "        class ISA bridge, addr 00:01.0, pci id 8086:7000 (sub 1af4:1100)\n"
                       "        bus: isa.0\n"
                       "          type ISA\n"
                       "          dev: isa-serial, id \"\"\n"
                       "            index = 1 (0x1)\n"
                       "            iobase = 760 (0x2f8)\n"
                       "            irq = 3 (0x3)\n", "      dev: i440FX, id \"\"\n");
    g_assert_true(g_str_has_suffix(text, "      dev: i440FX, id \"\"\n"
                                   "        addr = 00.0\n"
                                   "        class Host bridge, addr 00:00.0, pci id 8086:1237 "
                                   "(sub 1af4:1100)\n"));
}

/* Both are listed where QEMU lists them, with its words. */
static void test_help_info_lists_both(void)
{
    g_autofree char *text = run("help info");
    assert_line_before(text, "info name  -- show the current VM name\n"
                       "info network  -- show the network state\n"
                       "info pci  -- show PCI info\n"
                       "info qtree  -- show device tree\n"
                       "info status  -- ", NULL);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    g_test_add_func("/hmp-info/network", test_info_network);
    g_test_add_func("/hmp-info/property-value-text", test_property_value_text);
    g_test_add_func("/hmp-info/qtree", test_info_qtree);
    g_test_add_func("/hmp-info/help-info", test_help_info_lists_both);
    return g_test_run();
}
