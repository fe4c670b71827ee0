/*
 * The device registry (hw/qdev-registry.h) with a made-up device type that
 * has a property of every kind: parsing and its errors, defaults, the help
 * text in QEMU's layout, -global inheritance, backend references resolved
 * through fake backends, realize with ids and buses (bus=, QEMU's PCI
 * properties), aliases, QEMU's values this VMM refuses, and the board's
 * device types that only -global reaches.
 */
#include <string.h>
#include <glib.h>
#include "hw/block-error-properties.h"
#include "hw/i386/pc-board-devices.h"
#include "hw/misc/testdev.h"
#include "hw/net/e1000.h"
#include "hw/qdev-registry.h"
#include "hw/virtio/virtio-blk.h"
#include "hw/virtio/virtio-net.h"

typedef struct FakeOptions {
    bool flag;
    OnOffAuto mode;
    uint8_t small;
    uint16_t port;
    uint32_t count;
    uint64_t big;
    int32_t offset;
    uint64_t size;
    char *label;
    MACAddr mac;
    PCIDeviceOptions pci;
    int32_t bootindex;
    DeviceLink iothread, chardev, drive, netdev;
    BlockErrorProperties errors;    /* an enum kind, as the drives' devices have */
} FakeOptions;

static const DeviceProperty fake_properties[] = {
    DEFINE_PROP_BOOL("flag", FakeOptions, flag, true, NULL),
    DEFINE_PROP_ON_OFF_AUTO("mode", FakeOptions, mode, ON_OFF_AUTO_AUTO, NULL),
    DEFINE_PROP_UINT8("small", FakeOptions, small, 7, NULL),
    DEFINE_PROP_UINT16("port", FakeOptions, port, 0x3f8, "first port"),
    DEFINE_PROP_UINT32("count", FakeOptions, count, 0, NULL),
    DEFINE_PROP_UINT64("big", FakeOptions, big, UINT64_MAX, NULL),
    DEFINE_PROP_INT32("offset", FakeOptions, offset, -5, NULL),
    DEFINE_PROP_SIZE("size", FakeOptions, size, 4096, NULL),
    DEFINE_PROP_STRING("label", FakeOptions, label, NULL),
    DEFINE_PROP_MACADDR("mac", FakeOptions, mac),
    DEFINE_PCI_DEVICE_PROPERTIES(FakeOptions, pci),
    DEFINE_PROP_BOOTINDEX(FakeOptions, bootindex),
    DEFINE_PROP_LINK("iothread", DEVICE_PROP_IOTHREAD, FakeOptions, iothread),
    DEFINE_PROP_LINK("chardev", DEVICE_PROP_CHARDEV, FakeOptions, chardev),
    DEFINE_PROP_LINK("drive", DEVICE_PROP_DRIVE, FakeOptions, drive),
    DEFINE_PROP_LINK("netdev", DEVICE_PROP_NETDEV, FakeOptions, netdev),
    DEFINE_BLOCK_ERROR_PROPERTIES(FakeOptions, errors),
};

/* What the last realize saw, and the devices it made: PCI functions
 * off any bus, enough for the registry's multifunction=. */
static FakeOptions realized;
static DeviceBuses realized_buses;
static PCIDevice fake_devices[16];
static unsigned n_fake_devices;

static QEMUDevice *fake_realize(const void *options, const DeviceBuses *buses, Error **errp)
{
    realized = *(const FakeOptions *)options;
    realized_buses = *buses;
    g_assert_cmpuint(n_fake_devices, <, G_N_ELEMENTS(fake_devices));
    PCIDevice *dev = &fake_devices[n_fake_devices++];
    device_init(&dev->qdev, "fake-device", "fake");
    return &dev->qdev;
}

static const DeviceTypeInfo fake_type = {
    .name = "fake-device",
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_MISC,
    DEVICE_PROPERTIES(fake_properties),
    .options_size = sizeof(FakeOptions),
    .realize = fake_realize,
};

static const FakeOptions *options_of(const DeviceConfig *dev)
{
    return dev->options;
}

static void assert_set_fails(const char *name, const char *text, const char *message)
{
    DeviceConfig *dev = device_config_new(&fake_type, "-device fake-device");
    Error *err = NULL;
    if (device_config_set(dev, name, text, &err) || !err ||
        strcmp(err->msg, message) != 0) {
        g_error("%s=%s: expected \"%s\", got \"%s\"", name, text ? text : "(bare)", message,
                err ? err->msg : "(success)");
    }
    g_assert_cmpuint(dev->given, ==, 0);
    error_free(err);
    device_config_free(dev);
}

static void set_ok(DeviceConfig *dev, const char *name, const char *text)
{
    Error *err = NULL;
    if (!device_config_set(dev, name, text, &err)) {
        g_error("%s=%s: %s", name, text ? text : "(bare)", err->msg);
    }
}

static void test_defaults(void)
{
    DeviceConfig *dev = device_config_new(&fake_type, "-device fake-device");
    const FakeOptions *o = options_of(dev);
    g_assert_true(o->flag);
    g_assert_cmpint(o->mode, ==, ON_OFF_AUTO_AUTO);
    g_assert_cmpuint(o->small, ==, 7);
    g_assert_cmphex(o->port, ==, 0x3f8);
    g_assert_cmpuint(o->big, ==, UINT64_MAX);
    g_assert_cmpint(o->offset, ==, -5);
    g_assert_cmpuint(o->size, ==, 4096);
    g_assert_null(o->label);
    g_assert_cmpint(o->pci.addr, ==, -1);
    g_assert_false(o->pci.multifunction);
    g_assert_null(o->pci.romfile);
    g_assert_cmpint(o->bootindex, ==, -1);
    g_assert_null(o->iothread.id);
    g_assert_cmpint(o->errors.rerror, ==, BLOCK_ERROR_AUTO);
    g_assert_cmpint(o->errors.werror, ==, BLOCK_ERROR_AUTO);
    g_assert_cmpuint(dev->given, ==, 0);
    device_config_free(dev);
}

static void test_values(void)
{
    DeviceConfig *dev = device_config_new(&fake_type, "-device fake-device");
    set_ok(dev, "flag", "off");
    set_ok(dev, "mode", "off");
    set_ok(dev, "small", "0xff");
    set_ok(dev, "port", "65535");
    set_ok(dev, "count", "4294967295");
    set_ok(dev, "big", "18446744073709551615");
    set_ok(dev, "offset", "-2147483648");
    set_ok(dev, "size", "2M");
    set_ok(dev, "label", "first");
    set_ok(dev, "label", "a,b");        /* a later value replaces the string */
    set_ok(dev, "mac", "52:54:00:12:34:5f");
    set_ok(dev, "addr", "1f.7");
    set_ok(dev, "drive", "disk0");
    set_ok(dev, "werror", "stop");
    set_ok(dev, "rerror", "enospc");    /* a device takes it for reads too, as QEMU's */
    set_ok(dev, "id", "my-dev.1");
    const FakeOptions *o = options_of(dev);
    g_assert_false(o->flag);
    g_assert_cmpint(o->mode, ==, ON_OFF_AUTO_OFF);
    g_assert_cmpuint(o->small, ==, 0xff);
    g_assert_cmpuint(o->port, ==, 65535);
    g_assert_cmpuint(o->count, ==, UINT32_MAX);
    g_assert_cmpuint(o->big, ==, UINT64_MAX);
    g_assert_cmpint(o->offset, ==, INT32_MIN);
    g_assert_cmpuint(o->size, ==, 2 << 20);
    g_assert_cmpstr(o->label, ==, "a,b");
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x5f };
    g_assert_cmpmem(o->mac.a, 6, mac, 6);
    g_assert_cmpint(o->pci.addr, ==, 0x1f << 3 | 7);
    g_assert_cmpstr(o->drive.id, ==, "disk0");
    g_assert_cmpint(o->errors.werror, ==, DRIVE_ERROR_STOP);
    g_assert_cmpint(o->errors.rerror, ==, DRIVE_ERROR_ENOSPC);
    g_assert_cmpstr(dev->id, ==, "my-dev.1");
    /* One bit for each property given (id= is none). */
    g_assert_cmpuint(__builtin_popcountll(dev->given), ==, 14);

    /* Each name of the enum, and auto again. */
    static const struct {
        const char *text;
        int value;
    } actions[] = {
        { "report", DRIVE_ERROR_REPORT }, { "ignore", DRIVE_ERROR_IGNORE },
        { "enospc", DRIVE_ERROR_ENOSPC }, { "stop", DRIVE_ERROR_STOP },
        { "auto", BLOCK_ERROR_AUTO },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(actions); i++) {
        set_ok(dev, "werror", actions[i].text);
        g_assert_cmpint(options_of(dev)->errors.werror, ==, actions[i].value);
    }

    /* A bare key is "on" for a bool and an OnOffAuto; the tri-state takes
     * every spelling of a bool, and auto. */
    set_ok(dev, "flag", NULL);
    g_assert_true(options_of(dev)->flag);
    set_ok(dev, "mode", NULL);
    g_assert_cmpint(options_of(dev)->mode, ==, ON_OFF_AUTO_ON);
    set_ok(dev, "mode", "auto");
    g_assert_cmpint(options_of(dev)->mode, ==, ON_OFF_AUTO_AUTO);
    set_ok(dev, "mode", "no");
    g_assert_cmpint(options_of(dev)->mode, ==, ON_OFF_AUTO_OFF);
    device_config_free(dev);
}

static void test_errors(void)
{
    static const struct {
        const char *name, *text, *message;
    } cases[] = {
        { "bogus", "1", "Property 'fake-device.bogus' not found (try -device fake-device,help)" },
        { "flag", "maybe", "Property 'fake-device.flag' expects on or off, not 'maybe'" },
        { "flag", "1", "Property 'fake-device.flag' expects on or off, not '1'" },
        { "mode", "maybe", "Property 'fake-device.mode' expects on, off or auto, not 'maybe'" },
        { "small", "256", "Property 'fake-device.small' expects an integer from 0 to 255, "
          "not '256'" },
        { "port", "0x10000", "Property 'fake-device.port' expects an integer from 0 to "
          "65535, not '0x10000'" },
        { "count", "-1", "Property 'fake-device.count' expects an integer from 0 to "
          "4294967295, not '-1'" },
        { "count", "12abc", "Property 'fake-device.count' expects an integer from 0 to "
          "4294967295, not '12abc'" },
        { "count", " 1", "Property 'fake-device.count' expects an integer from 0 to "
          "4294967295, not ' 1'" },
        { "big", "18446744073709551616", "Property 'fake-device.big' expects an integer "
          "from 0 to 18446744073709551615, not '18446744073709551616'" },
        { "offset", "2147483648", "Property 'fake-device.offset' expects an integer from "
          "-2147483648 to 2147483647, not '2147483648'" },
        { "offset", "-2147483649", "Property 'fake-device.offset' expects an integer from "
          "-2147483648 to 2147483647, not '-2147483649'" },
        { "size", "1Q", "Property 'fake-device.size' expects a size (bytes, or a number "
          "with a k, M, G or T suffix), not '1Q'" },
        { "mac", "52:54:00:12:34", "Property 'fake-device.mac' expects a MAC address such "
          "as 52:54:00:12:34:56, not '52:54:00:12:34'" },
        { "mac", "52:54:00:12:34:567", "Property 'fake-device.mac' expects a MAC address "
          "such as 52:54:00:12:34:56, not '52:54:00:12:34:567'" },
        { "mac", "5g:54:00:12:34:56", "Property 'fake-device.mac' expects a MAC address "
          "such as 52:54:00:12:34:56, not '5g:54:00:12:34:56'" },
        { "addr", "20", "Property 'fake-device.addr' expects SLOT[.FUNCTION] with SLOT 0 "
          "to 1f (hexadecimal) and FUNCTION 0 to 7, not '20'" },
        { "addr", "1.8", "Property 'fake-device.addr' expects SLOT[.FUNCTION] with SLOT 0 "
          "to 1f (hexadecimal) and FUNCTION 0 to 7, not '1.8'" },
        { "netdev", "", "Property 'fake-device.netdev' expects the id of a netdev, not ''" },
        { "count", NULL, "Property 'fake-device.count' needs a value" },
        /* An enum's error is QEMU's, word for word; its names are exact. */
        { "werror", "foo", "Parameter 'werror' does not accept value 'foo'" },
        { "rerror", "STOP", "Parameter 'rerror' does not accept value 'STOP'" },
        { "werror", "", "Parameter 'werror' does not accept value ''" },
        { "werror", NULL, "Property 'fake-device.werror' needs a value" },
        { "id", "9lives", "Parameter 'id' expects an identifier: letters, digits, '-', '.' "
          "and '_', starting with a letter" },
        { "id", NULL, "Parameter 'id' expects an identifier: letters, digits, '-', '.' "
          "and '_', starting with a letter" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        assert_set_fails(cases[i].name, cases[i].text, cases[i].message);
    }
}

static char *captured_output(void (*print)(FILE *out, const void *arg), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    print(out, arg);
    fclose(out);
    /* A copy: GCC takes pointers into the stream's buffer for dangling. */
    char *text = g_strndup(buf, len);
    free(buf);
    return text;
}

static void print_fake_properties(FILE *out, const void *type)
{
    device_type_print_properties(type, out);
}

/* QEMU's layout: sorted by name, "  NAME=<TYPE>" padded to 24 columns,
 * " - " and the description, the default for numbers and bools. */
static void test_property_help(void)
{
    char *text = captured_output(print_fake_properties, &fake_type);
    g_assert_cmpstr(text, ==,
        "fake-device options:\n"
        "  addr=<int32>           - Slot and optional function number, example: 06.0 or 06 "
        "(default: -1)\n"
        "  big=<uint64>           -  (default: 18446744073709551615)\n"
        "  bootindex=<int32>\n"
        "  chardev=<str>          - ID of a chardev to use as a backend\n"
        "  count=<uint32>         -  (default: 0)\n"
        "  drive=<str>            - Node name or ID of a block device to use as a backend\n"
        "  flag=<bool>            - on/off (default: true)\n"
        "  iothread=<link<iothread>>\n"
        "  label=<str>\n"
        "  mac=<str>              - Ethernet 6-byte MAC Address, example: 52:54:00:12:34:56\n"
        "  mode=<OnOffAuto>       - on/off/auto (default: \"auto\")\n"
        "  multifunction=<bool>   - on/off (default: false)\n"
        "  netdev=<str>           - ID of a netdev to use as a backend\n"
        "  offset=<int32>         -  (default: -5)\n"
        "  port=<uint16>          - first port (default: 1016)\n"
        "  rerror=<BlockdevOnError> - Error handling policy, report/ignore/enospc/stop/auto "
        "(default: \"auto\")\n"
        "  romfile=<str>\n"
        "  size=<size>            -  (default: 4096)\n"
        "  small=<uint8>          -  (default: 7)\n"
        "  werror=<BlockdevOnError> - Error handling policy, report/ignore/enospc/stop/auto "
        "(default: \"auto\")\n");
    g_free(text);
}

static void print_types(FILE *out, const void *unused)
{
    device_types_print(out);
}

static void test_types_help(void)
{
    char *text = captured_output(print_types, NULL);
    /* Grouped under QEMU's headings, a blank line between groups, sorted. */
    g_assert_true(g_str_has_prefix(text, "Storage devices:\nname \"ide-cd\", bus IDE, "
                                   "desc \"virtual IDE CD-ROM\"\nname \"ide-hd\", bus IDE"));
    g_assert_nonnull(strstr(text, "\n\nInput devices:\nname \"isa-serial\", bus ISA, "));
    const char *misc = strstr(text, "\n\nMisc devices:\n");
    g_assert_nonnull(misc);
    const char *debug_exit = strstr(misc, "name \"isa-debug-exit\"");
    const char *pc_testdev = strstr(misc, "name \"pc-testdev\", bus ISA");
    const char *pci_testdev = strstr(misc, "name \"pci-testdev\", bus PCI");
    const char *pdl_testdev = strstr(misc, "name \"pdl-testdev\", bus PCI");
    g_assert_true(debug_exit && debug_exit < pc_testdev && pc_testdev < pci_testdev &&
                  pci_testdev < pdl_testdev);
    g_assert_true(g_str_has_suffix(text, "MSI-X, DMA)\"\n"));    /* no blank line at the end */
    g_free(text);
    g_assert_true(device_type_find("pdl-testdev") == &pdl_testdev_type);
    /* Every PCI device takes QEMU's PCI properties, which the registry
     * applies to any PCI type it realizes. */
    for (size_t i = 0; i < device_types_count; i++) {
        const DeviceTypeInfo *type = device_types[i];
        if (type->bus == DEVICE_BUS_PCI && type->realize) {
            g_assert_nonnull(device_type_find_property(type, "addr"));
            g_assert_nonnull(device_type_find_property(type, "multifunction"));
            g_assert_nonnull(device_type_find_property(type, "romfile"));
        }
    }
    g_assert_true(device_type_find("e1000") == &e1000_type);
    g_assert_null(device_type_find("rtl8139"));
}

static void test_globals(void)
{
    DeviceConfig *globals = device_config_new(&fake_type, "-global");
    set_ok(globals, "count", "9");
    set_ok(globals, "label", "from-global");
    set_ok(globals, "port", "0x60");

    DeviceConfig *dev = device_config_new(&fake_type, "-device fake-device,port=0x70");
    set_ok(dev, "port", "0x70");
    device_config_inherit(dev, globals);
    device_config_free(globals);    /* the device owns its copies */
    const FakeOptions *o = options_of(dev);
    g_assert_cmpuint(o->count, ==, 9);
    g_assert_cmpstr(o->label, ==, "from-global");
    g_assert_cmphex(o->port, ==, 0x70);        /* given by -device: kept */
    g_assert_cmpuint(o->small, ==, 7);          /* in neither: the default */
    device_config_free(dev);
}

/* Backends for the reference kinds that have none yet. */
static int fake_drive, fake_netdev;

static void *find_fake_drive(const char *id)
{
    return strcmp(id, "disk0") == 0 ? &fake_drive : NULL;
}

static void *find_fake_netdev(const char *id)
{
    return strcmp(id, "net0") == 0 ? &fake_netdev : NULL;
}

static const DeviceBuses pci_buses = { .pci = (PCIBus *)&fake_netdev };

/* A config of the type origin names ("-device TYPE,..."), with settings. */
static DeviceConfig *config_of(const char *origin, const char *const *settings)
{
    g_autofree char *name = g_strndup(origin + strlen("-device "),
                                      strcspn(origin + strlen("-device "), ","));
    const DeviceTypeInfo *type = device_type_find(name);
    DeviceConfig *dev = device_config_new(type ? type : &fake_type, origin);
    for (size_t i = 0; settings[i]; i += 2) {
        set_ok(dev, settings[i], settings[i + 1]);
    }
    return dev;
}

static void assert_realize_fails(DeviceConfig *dev, const DeviceBuses *buses,
                                 const char *message)
{
    Error *err = NULL;
    unsigned before = n_fake_devices;
    g_assert_null(device_config_realize(dev, buses, &err));
    g_assert_nonnull(err);
    g_assert_cmpstr(err->msg, ==, message);
    g_assert_cmpuint(n_fake_devices, ==, before);   /* realize was never called */
    error_free(err);
    device_config_free(dev);
}

static void test_realize(void)
{
    device_backend_set_finder(DEVICE_PROP_DRIVE, find_fake_drive);
    device_backend_set_finder(DEVICE_PROP_NETDEV, find_fake_netdev);

    DeviceConfig *dev = config_of("-device fake-device,drive=disk0,netdev=net0,id=nic",
                                  (const char *const[]){ "drive", "disk0", "netdev", "net0",
                                                         "id", "nic", "count", "3", NULL });
    Error *err = NULL;
    QEMUDevice *qdev = device_config_realize(dev, &pci_buses, &err);
    g_assert_null(err);
    g_assert_true(qdev == &fake_devices[n_fake_devices - 1].qdev);
    g_assert_cmpstr(qdev->id, ==, "nic");
    g_assert_true(device_find("nic") == qdev);
    g_assert_true(realized.drive.backend == &fake_drive);
    g_assert_true(realized.netdev.backend == &fake_netdev);
    g_assert_null(realized.chardev.backend);    /* not given: nothing to resolve */
    g_assert_cmpuint(realized.count, ==, 3);
    device_config_free(dev);

    assert_realize_fails(config_of("-device fake-device,drive=disk9",
                                   (const char *const[]){ "drive", "disk9", NULL }),
                         &pci_buses, "-device fake-device,drive=disk9: Property "
                         "'fake-device.drive' can't find value 'disk9' (no drive has that id)");
    /* No I/O thread was created: every iothread id is unknown. */
    assert_realize_fails(config_of("-device fake-device,iothread=io9",
                                   (const char *const[]){ "iothread", "io9", NULL }),
                         &pci_buses, "-device fake-device,iothread=io9: Property "
                         "'fake-device.iothread' can't find value 'io9' (no iothread has "
                         "that id)");
    /* No -chardev backends are known to this test. */
    device_backend_set_finder(DEVICE_PROP_CHARDEV, NULL);
    assert_realize_fails(config_of("-device fake-device,chardev=c0",
                                   (const char *const[]){ "chardev", "c0", NULL }),
                         &pci_buses, "-device fake-device,chardev=c0: Property "
                         "'fake-device.chardev' can't find value 'c0' (no chardev has "
                         "that id)");
    assert_realize_fails(config_of("-device fake-device,id=nic",
                                   (const char *const[]){ "id", "nic", NULL }),
                         &pci_buses, "-device fake-device,id=nic: Duplicate ID 'nic' for "
                         "device");
    assert_realize_fails(config_of("-device fake-device", (const char *const[]){ NULL }),
                         &(DeviceBuses){ 0 }, "-device fake-device: No 'PCI' bus found for "
                         "device 'fake-device'");
}

static QEMUDevice *realize_ok(DeviceConfig *dev, const DeviceBuses *buses)
{
    Error *err = NULL;
    QEMUDevice *qdev = device_config_realize(dev, buses, &err);
    g_assert_null(err);
    g_assert_nonnull(qdev);
    device_config_free(dev);
    return qdev;
}

/* bus= is every device's: the bus of the device's kind, by QEMU's name,
 * handed to realize as its number; QEMU's errors for the others. */
static void test_bus(void)
{
    realize_ok(config_of("-device fake-device", (const char *const[]){ NULL }), &pci_buses);
    g_assert_cmpint(realized_buses.bus_index, ==, -1);
    realize_ok(config_of("-device fake-device,bus=pci.0,addr=0x3",
                         (const char *const[]){ "bus", "pci.0", "addr", "0x3", NULL }),
               &pci_buses);
    g_assert_cmpint(realized_buses.bus_index, ==, 0);
    g_assert_cmpint(realized.pci.addr, ==, 3 << 3);
    g_assert_true(realized_buses.pci == pci_buses.pci);

    static const struct {
        const char *bus, *message;
    } refused[] = {
        { "pci.1", "-device fake-device: Bus 'pci.1' not found" },
        { "pci.9", "-device fake-device: Bus 'pci.9' not found" },
        { "pci.", "-device fake-device: Bus 'pci.' not found" },
        { "pci.0x0", "-device fake-device: Bus 'pci.0x0' not found" },
        { "ide.2", "-device fake-device: Bus 'ide.2' not found" },
        { "nowhere", "-device fake-device: Bus 'nowhere' not found" },
        { "ide.1", "-device fake-device: Device 'fake-device' can't go on IDE bus" },
        { "isa.0", "-device fake-device: Device 'fake-device' can't go on ISA bus" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
        assert_realize_fails(config_of("-device fake-device",
                                       (const char *const[]){ "bus", refused[i].bus, NULL }),
                             &pci_buses, refused[i].message);
    }
}

/* QEMU's PCI properties: romfile= only empty (no option ROMs),
 * multifunction=on sets bit 7 of that function's header type, bootindex
 * is kept. */
static void test_pci_properties(void)
{
    QEMUDevice *qdev = realize_ok(config_of("-device fake-device",
                                            (const char *const[]){ "romfile", "", NULL }),
                                  &pci_buses);
    g_assert_cmphex(pci_get_byte((PCIDevice *)qdev, PCI_HEADER_TYPE), ==, 0);
    qdev = realize_ok(config_of("-device fake-device",
                                (const char *const[]){ "multifunction", "on", "bootindex", "2",
                                                       NULL }),
                      &pci_buses);
    g_assert_cmphex(pci_get_byte((PCIDevice *)qdev, PCI_HEADER_TYPE), ==,
                    PCI_HEADER_TYPE_MULTI_FUNCTION);
    g_assert_cmpint(realized.bootindex, ==, 2);
    assert_realize_fails(config_of("-device fake-device,romfile=efi-e1000.rom",
                                   (const char *const[]){ "romfile", "efi-e1000.rom", NULL }),
                         &pci_buses, "-device fake-device,romfile=efi-e1000.rom: "
                         "romfile=efi-e1000.rom: option ROMs are not supported (there is no "
                         "firmware to run one); leave romfile= empty");
}

static unsigned no_irq(unsigned slot, unsigned pin)
{
    return 16;
}

/* pci-testdev's membar=SIZE (QEMU's): BAR2, 64-bit prefetchable memory of
 * that size, sized by a guest as any BAR; not a power of two: refused. */
static void test_pci_testdev_membar(void)
{
    PCIBus *bus = pci_bus_new(no_irq);
    DeviceBuses buses = { .pci = bus };
    realize_ok(config_of("-device pci-testdev",
                         (const char *const[]){ "membar", "1M", "addr", "4", NULL }), &buses);
    unsigned devfn = 4 << 3;
    pci_bus_config_write(bus, devfn, 0x18, 0xffffffff, 4);
    pci_bus_config_write(bus, devfn, 0x1c, 0xffffffff, 4);
    g_assert_cmphex(pci_bus_config_read(bus, devfn, 0x18, 4), ==, 0xfff00000 | 0xc);
    g_assert_cmphex(pci_bus_config_read(bus, devfn, 0x1c, 4), ==, 0xffffffff);
    /* Without membar= there is no BAR2. */
    realize_ok(config_of("-device pci-testdev", (const char *const[]){ "addr", "5", NULL }),
               &buses);
    pci_bus_config_write(bus, 5 << 3, 0x18, 0xffffffff, 4);
    g_assert_cmphex(pci_bus_config_read(bus, 5 << 3, 0x18, 4), ==, 0);
    Error *err = NULL;
    DeviceConfig *dev = config_of("-device pci-testdev,membar=4095",
                                  (const char *const[]){ "membar", "4095", NULL });
    g_assert_null(device_config_realize(dev, &buses, &err));
    g_assert_cmpstr(err->msg, ==, "-device pci-testdev,membar=4095: membar=4095: a BAR's size "
                    "must be a power of two, at least 16");
    error_free(err);
    device_config_free(dev);
}

static void test_aliases(void)
{
    g_assert_true(device_type_find("virtio-net") == &virtio_net_pci_type);
    g_assert_true(device_type_find("virtio-blk") == &virtio_blk_pci_type);
    g_assert_true(device_type_find("e1000-82540em") == &e1000_type);
    char *text = captured_output(print_types, NULL);
    /* An alias is printed on its type's line, as QEMU does, never as a type. */
    g_assert_nonnull(strstr(text, "name \"e1000\", bus PCI, alias \"e1000-82540em\", desc "
                                  "\"Intel Gigabit Ethernet\"\n"));
    g_assert_nonnull(strstr(text, "name \"virtio-net-pci\", bus PCI, alias \"virtio-net\""));
    g_assert_null(strstr(text, "name \"e1000-82540em\""));
    g_free(text);
    /* Errors name the type, whichever name the user gave. */
    Error *err = NULL;
    DeviceConfig *dev = device_config_new(device_type_find("virtio-net"), "-device virtio-net");
    g_assert_false(device_config_set(dev, "nope", "1", &err));
    g_assert_cmpstr(err->msg, ==, "Property 'virtio-net-pci.nope' not found (try -device "
                    "virtio-net-pci,help)");
    error_free(err);
    device_config_free(dev);
}

/* The board's devices: not listed by -device help, their defaults and
 * -global values through board_device_options, QEMU's values this VMM
 * does not implement refused with the value named. */
static void test_board_types(void)
{
    char *text = captured_output(print_types, NULL);
    g_assert_null(strstr(text, "PIIX4_PM"));
    g_assert_null(strstr(text, "kvm-pit"));
    g_assert_null(strstr(text, "mc146818rtc"));
    g_assert_null(strstr(text, "\"i8042\""));
    g_free(text);
    g_assert_true(device_type_find("PIIX4_PM") == &piix4_pm_type);

    const KVMPitOptions *pit = board_device_options(NULL, &kvm_pit_type);
    g_assert_cmpint(pit->lost_tick_policy, ==, LOST_TICK_POLICY_DELAY);
    const PIIX4PMOptions *pm = board_device_options(NULL, &piix4_pm_type);
    g_assert_cmpuint(pm->disable_s3, ==, 0);

    GPtrArray *globals = g_ptr_array_new_with_free_func((GDestroyNotify)device_config_free);
    DeviceConfig *pm_globals = device_config_new(&piix4_pm_type, "-global");
    set_ok(pm_globals, "disable_s3", "1");
    g_ptr_array_add(globals, pm_globals);
    pm = board_device_options(globals, &piix4_pm_type);
    g_assert_cmpuint(pm->disable_s3, ==, 1);
    g_assert_cmpuint(pm->disable_s4, ==, 0);
    pit = board_device_options(globals, &kvm_pit_type);
    g_assert_cmpint(pit->lost_tick_policy, ==, LOST_TICK_POLICY_DELAY);
    g_ptr_array_unref(globals);

    static const struct {
        const DeviceTypeInfo *type;
        const char *name, *text, *message;
    } refused[] = {
        { &kvm_pit_type, "lost_tick_policy", "slew", "Property 'kvm-pit.lost_tick_policy' "
          "cannot be 'slew': this VMM does not implement it" },
        { &mc146818rtc_type, "lost_tick_policy", "delay", "Property "
          "'mc146818rtc.lost_tick_policy' cannot be 'delay': this VMM implements only its "
          "default (\"discard\")" },
        { &mc146818rtc_type, "base_year", "2000", "Property 'mc146818rtc.base_year' cannot be "
          "'2000': this VMM implements only its default (1980)" },
        { &i8042_type, "kbd-throttle", "on", "Property 'i8042.kbd-throttle' cannot be 'on': "
          "this VMM implements only its default (false)" },
        { &i8042_type, "mouse-irq", "5", "Property 'i8042.mouse-irq' cannot be '5': this VMM "
          "implements only its default (12)" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
        DeviceConfig *dev = device_config_new(refused[i].type, "-global");
        Error *err = NULL;
        g_assert_false(device_config_set(dev, refused[i].name, refused[i].text, &err));
        g_assert_cmpstr(err->msg, ==, refused[i].message);
        g_assert_cmpuint(dev->given, ==, 0);
        error_free(err);
        device_config_free(dev);
    }
    /* The defaults themselves are accepted, spelled any way. */
    DeviceConfig *dev = device_config_new(&i8042_type, "-global");
    set_ok(dev, "kbd-throttle", "off");
    set_ok(dev, "kbd-irq", "0x1");
    device_config_free(dev);
    dev = device_config_new(&mc146818rtc_type, "-global");
    set_ok(dev, "lost_tick_policy", "discard");
    device_config_free(dev);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qdev-registry/defaults", test_defaults);
    g_test_add_func("/qdev-registry/values", test_values);
    g_test_add_func("/qdev-registry/bus", test_bus);
    g_test_add_func("/qdev-registry/pci-properties", test_pci_properties);
    g_test_add_func("/qdev-registry/aliases", test_aliases);
    g_test_add_func("/qdev-registry/pci-testdev-membar", test_pci_testdev_membar);
    g_test_add_func("/qdev-registry/board-types", test_board_types);
    g_test_add_func("/qdev-registry/errors", test_errors);
    g_test_add_func("/qdev-registry/property-help", test_property_help);
    g_test_add_func("/qdev-registry/types-help", test_types_help);
    g_test_add_func("/qdev-registry/globals", test_globals);
    g_test_add_func("/qdev-registry/realize", test_realize);
    return g_test_run();
}
