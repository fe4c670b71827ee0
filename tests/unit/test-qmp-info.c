/*
 * The information commands through qmp_dispatch(), as a monitor runs
 * them: query-pci on a small i440FX bus, query-iothreads, query-chardev,
 * and x-query-device-locks while threads hammer device locks (the
 * ThreadSanitizer build runs this too), agreeing with the lock-stats=on
 * print.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "chardev/char.h"
#include "exec/memory.h"
#include "hw/acpi/acpi.h"
#include "hw/ide/ide.h"
#include "hw/irq.h"
#include "hw/net/e1000.h"
#include "hw/pci-host/i440fx.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio-net.h"
#include "hw/qdev.h"
#include "monitor/qmp.h"
#include "qemu/thread-naming.h"
#include "sysemu/iothread.h"

#define GSI_BASE    16

static void ignore_level(void *opaque, unsigned gsi, bool level)
{
}

static void ignore_msi(void *opaque, uint64_t address, uint32_t data)
{
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return GSI_BASE + (slot + pin - 1) % 4;
}

/* A command that must succeed, its arguments as JSON text (or NULL). */
static JsonNode *qmp_ok(const char *name, const char *args_json)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *args = NULL;
    if (args_json) {
        g_assert_true(json_parser_load_from_data(parser, args_json, -1, NULL));
        args = json_node_get_object(json_parser_get_root(parser));
    }
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch(name, args, &err);
    g_assert_cmpstr(err ? err->msg : NULL, ==, NULL);
    return ret;
}

/* ---- query-pci ---- */

static JsonObject *find_function(JsonArray *devices, unsigned slot, unsigned fn)
{
    for (guint i = 0; i < json_array_get_length(devices); i++) {
        JsonObject *d = json_array_get_object_element(devices, i);
        if (json_object_get_int_member(d, "slot") == slot &&
            json_object_get_int_member(d, "function") == fn) {
            return d;
        }
    }
    g_error("no function %02x.%u in query-pci", slot, fn);
}

static void assert_ids(JsonObject *d, unsigned class, const char *desc, unsigned vendor,
                       unsigned device)
{
    JsonObject *ci = json_object_get_object_member(d, "class_info");
    g_assert_cmpint(json_object_get_int_member(ci, "class"), ==, class);
    g_assert_cmpstr(json_object_get_string_member(ci, "desc"), ==, desc);
    JsonObject *id = json_object_get_object_member(d, "id");
    g_assert_cmpint(json_object_get_int_member(id, "vendor"), ==, vendor);
    g_assert_cmpint(json_object_get_int_member(id, "device"), ==, device);
    g_assert_true(json_object_has_member(id, "subsystem"));
    g_assert_true(json_object_has_member(id, "subsystem-vendor"));
}

/* The functions of bus in a query-pci answer: buses are listed in the
 * order they were made, and other tests of this process may make some. */
static JsonArray *devices_of(JsonNode *ret, PCIBus *bus)
{
    unsigned index = 0;
    for (PCIBus *b = pci_root_bus_next(NULL); b != bus; b = pci_root_bus_next(b)) {
        index++;
    }
    JsonObject *entry = json_array_get_object_element(json_node_get_array(ret), index);
    g_assert_cmpint(json_object_get_int_member(entry, "bus"), ==, 0);
    return json_object_get_array_member(entry, "devices");
}

static void assert_region(JsonObject *r, unsigned bar, const char *type, int64_t address,
                          int64_t size)
{
    g_assert_cmpint(json_object_get_int_member(r, "bar"), ==, bar);
    g_assert_cmpstr(json_object_get_string_member(r, "type"), ==, type);
    g_assert_cmpint(json_object_get_int_member(r, "address"), ==, address);
    g_assert_cmpint(json_object_get_int_member(r, "size"), ==, size);
    bool memory = !strcmp(type, "memory");
    g_assert_cmpint(json_object_has_member(r, "prefetch"), ==, memory);
    g_assert_cmpint(json_object_has_member(r, "mem_type_64"), ==, memory);
}

static void test_query_pci(void)
{
    Error *err = NULL;
    PCIBus *bus = i440fx_init(map_irq, &err);
    g_assert_nonnull(bus);
    g_assert_nonnull(piix3_ide_new(bus, &err));
    g_assert_nonnull(acpi_pm_new(bus, &err));
    E1000Conf conf = { .mac = { { 0x52, 0x54, 0, 0x12, 0x34, 0x56 } } };
    QEMUDevice *nic = e1000_new(bus, -1, &conf, &err);
    g_assert_nonnull(nic);
    device_set_id(nic, "nic0");
    /* No id: QEMU's qdev_id is then "". */
    VirtIONetConf vconf = { .mac = conf.mac, .rx_queue_size = 256, .tx_queue_size = 256,
                            .features = UINT64_MAX };
    g_assert_nonnull(virtio_net_pci_new(bus, -1, &vconf, &err));
    g_assert_true(pci_bus_assign_resources(bus, 0xc000, 0xffff, 0xe0000000, 0xfebfffff, &err));

    JsonNode *ret = qmp_ok("query-pci", NULL);
    JsonArray *devices = devices_of(ret, bus);
    g_assert_cmpuint(json_array_get_length(devices), ==, 6);

    /* QEMU's pc: the host bridge and the PIIX3's ISA bridge have no pin
     * and so no "irq", and no user id. */
    JsonObject *host = find_function(devices, 0, 0);
    assert_ids(host, 0x0600, "Host bridge", 0x8086, 0x1237);
    g_assert_false(json_object_has_member(host, "irq"));
    g_assert_cmpint(json_object_get_int_member(host, "irq_pin"), ==, 0);
    g_assert_cmpstr(json_object_get_string_member(host, "qdev_id"), ==, "");
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(host, "regions")), ==, 0);
    assert_ids(find_function(devices, 1, 0), 0x0601, "ISA bridge", 0x8086, 0x7000);
    JsonObject *ide = find_function(devices, 1, 1);
    assert_ids(ide, 0x0101, "IDE controller", 0x8086, 0x7010);
    JsonArray *ide_regions = json_object_get_array_member(ide, "regions");
    g_assert_cmpuint(json_array_get_length(ide_regions), ==, 1);
    /* Decoding is off until the guest enables it: no address yet. */
    assert_region(json_array_get_object_element(ide_regions, 0), 4, "io", -1, 16);
    /* The PIIX4 PM function: pin A and "irq" 9 (its SCI, not the slot's
     * INTx route) after resource assignment, as after SeaBIOS on QEMU. */
    JsonObject *pm = find_function(devices, 1, 3);
    assert_ids(pm, 0x0680, "Bridge", 0x8086, 0x7113);
    g_assert_cmpint(json_object_get_int_member(pm, "irq_pin"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(pm, "irq"), ==, 9);
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(pm, "regions")), ==, 0);

    JsonObject *e1000 = find_function(devices, 2, 0);
    assert_ids(e1000, 0x0200, "Ethernet controller", 0x8086, 0x100e);
    g_assert_cmpstr(json_object_get_string_member(e1000, "qdev_id"), ==, "nic0");
    g_assert_cmpint(json_object_get_int_member(e1000, "irq_pin"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(e1000, "irq"), ==, map_irq(2, 1));
    JsonArray *regions = json_object_get_array_member(e1000, "regions");
    g_assert_cmpuint(json_array_get_length(regions), ==, 2);
    JsonObject *mmio = json_array_get_object_element(regions, 0);
    assert_region(mmio, 0, "memory", -1, 128 * 1024);
    g_assert_false(json_object_get_boolean_member(mmio, "prefetch"));
    g_assert_false(json_object_get_boolean_member(mmio, "mem_type_64"));
    assert_region(json_array_get_object_element(regions, 1), 1, "io", -1, 64);

    /* The transitional virtio-net: legacy I/O, MSI-X, and the modern BAR
     * 64-bit and prefetchable (its upper half, BAR 5, is not a region). */
    JsonObject *vnet = find_function(devices, 3, 0);
    assert_ids(vnet, 0x0200, "Ethernet controller", 0x1af4, 0x1000);
    g_assert_cmpstr(json_object_get_string_member(vnet, "qdev_id"), ==, "");
    regions = json_object_get_array_member(vnet, "regions");
    g_assert_cmpuint(json_array_get_length(regions), ==, 3);
    /* The legacy I/O BAR is 64 bytes here where QEMU's is 32: our
     * configuration space is always 12 bytes long, QEMU's only as long as
     * the offered features need (8 without MQ and MTU). */
    JsonObject *legacy = json_array_get_object_element(regions, 0);
    assert_region(legacy, 0, "io", -1, json_object_get_int_member(legacy, "size"));
    g_assert_cmpint(json_object_get_int_member(legacy, "size"), >=, 32);
    assert_region(json_array_get_object_element(regions, 1), 1, "memory", -1, 0x1000);
    JsonObject *modern = json_array_get_object_element(regions, 2);
    assert_region(modern, 4, "memory", -1, 0x4000);
    g_assert_true(json_object_get_boolean_member(modern, "prefetch"));
    g_assert_true(json_object_get_boolean_member(modern, "mem_type_64"));
    json_node_unref(ret);

    /* The guest turns decoding on: the BARs have their addresses. */
    unsigned devfn = PCI_DEVFN(2, 0);
    uint32_t bar0 = pci_bus_config_read(bus, devfn, PCI_BASE_ADDRESS_0, 4) & ~0xfu;
    uint32_t bar1 = pci_bus_config_read(bus, devfn, PCI_BASE_ADDRESS_0 + 4, 4) & ~3u;
    pci_bus_config_write(bus, devfn, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_IO, 2);
    ret = qmp_ok("query-pci", NULL);
    regions = json_object_get_array_member(find_function(devices_of(ret, bus), 2, 0), "regions");
    assert_region(json_array_get_object_element(regions, 0), 0, "memory", bar0, 128 * 1024);
    assert_region(json_array_get_object_element(regions, 1), 1, "io", bar1, 64);
    json_node_unref(ret);
    pci_bus_config_write(bus, devfn, PCI_COMMAND, 0, 2);
}

/* ---- query-iothreads ---- */

static void test_query_iothreads(void)
{
    Error *err = NULL;
    IOThread *t = iothread_new("io-info", &err);
    g_assert_nonnull(t);
    JsonNode *ret = qmp_ok("query-iothreads", NULL);
    JsonArray *list = json_node_get_array(ret);
    g_assert_cmpuint(json_array_get_length(list), ==, 1);
    JsonObject *info = json_array_get_object_element(list, 0);
    g_assert_cmpstr(json_object_get_string_member(info, "id"), ==, "io-info");
    static const char *const polling[] = { "poll-max-ns", "poll-grow", "poll-shrink",
                                           "aio-max-batch" };
    for (size_t i = 0; i < G_N_ELEMENTS(polling); i++) {
        g_assert_cmpint(json_object_get_int_member(info, polling[i]), ==, 0);
    }
    /* A real thread of this process, named as QEMU names it. */
    int64_t tid = json_object_get_int_member(info, "thread-id");
    g_assert_cmpint(tid, >, 0);
    g_assert_cmpint(tid, !=, getpid());
    g_autofree char *comm_path = g_strdup_printf("/proc/self/task/%" PRId64 "/comm", tid);
    g_autofree char *comm = NULL;
    g_assert_true(g_file_get_contents(comm_path, &comm, NULL, NULL));
    g_assert_cmpstr(g_strchomp(comm), ==, "IO io-info");
    json_node_unref(ret);
    iothread_free(t);
    ret = qmp_ok("query-iothreads", NULL);
    g_assert_cmpuint(json_array_get_length(json_node_get_array(ret)), ==, 0);
    json_node_unref(ret);
}

/* ---- query-chardev ---- */

static JsonObject *find_chardev(JsonArray *list, const char *label)
{
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *c = json_array_get_object_element(list, i);
        if (!strcmp(json_object_get_string_member(c, "label"), label)) {
            return c;
        }
    }
    return NULL;
}

static void test_query_chardev(void)
{
    Error *err = NULL;
    g_autofree char *path = g_strdup_printf("%s/qmp-info-%d.txt", g_get_tmp_dir(), getpid());
    g_autofree char *file_spec = g_strdup_printf("file:%s", path);
    g_assert_nonnull(chardev_add("c-null", "null", &err));
    g_assert_nonnull(chardev_add("c-file", file_spec, &err));
    g_assert_true(chardev_claim("c-null", &err));
    JsonNode *ret = qmp_ok("query-chardev", NULL);
    JsonArray *list = json_node_get_array(ret);
    g_assert_cmpuint(json_array_get_length(list), ==, 2);
    JsonObject *null = find_chardev(list, "c-null");
    g_assert_cmpstr(json_object_get_string_member(null, "filename"), ==, "null");
    g_assert_true(json_object_get_boolean_member(null, "frontend-open"));
    JsonObject *file = find_chardev(list, "c-file");
    g_assert_cmpstr(json_object_get_string_member(file, "filename"), ==, "file");
    g_assert_false(json_object_get_boolean_member(file, "frontend-open"));
    json_node_unref(ret);
    g_unlink(path);
}

/* ---- x-query-device-locks ---- */

#define HAMMER_THREADS      4
#define HAMMER_ROUNDS       20000

typedef struct Hammer {
    QEMUDevice *devs[2];
    atomic_int running;
} Hammer;

/* Each thread takes both devices' locks in turn, as vCPUs exiting to two
 * devices would, and holds each a moment so that others contend. */
static void *hammer_thread(void *opaque)
{
    Hammer *h = opaque;
    for (unsigned i = 0; i < HAMMER_ROUNDS; i++) {
        QEMUDevice *dev = h->devs[i % 2];
        device_lock(dev);
        for (volatile unsigned spin = 0; spin < 20; spin++) {
        }
        device_unlock(dev);
    }
    atomic_fetch_sub(&h->running, 1);
    return NULL;
}

/* The entry of lock name in an x-query-device-locks answer. */
static JsonObject *find_lock(JsonNode *ret, const char *name)
{
    JsonArray *locks = json_object_get_array_member(json_node_get_object(ret), "locks");
    for (guint i = 0; i < json_array_get_length(locks); i++) {
        JsonObject *l = json_array_get_object_element(locks, i);
        if (!strcmp(json_object_get_string_member(l, "name"), name)) {
            return l;
        }
    }
    g_error("no lock %s in x-query-device-locks", name);
}

/*
 * Threads hammer two devices while the monitor reads and resets their
 * counters again and again: every acquisition is counted exactly once
 * over all the readings (reset exchanges each counter with zero), and the
 * threads never wait for the monitor (it takes no device lock).
 */
static uint64_t hammer_while_querying(Hammer *h, const char *lock_a, const char *lock_b)
{
    /* Start from zero: what earlier tests counted is dropped. */
    json_node_unref(qmp_ok("x-query-device-locks", "{\"reset\": true}"));
    pthread_t threads[HAMMER_THREADS];
    atomic_init(&h->running, HAMMER_THREADS);
    for (unsigned i = 0; i < HAMMER_THREADS; i++) {
        g_assert_cmpint(pthread_create(&threads[i], NULL, hammer_thread, h), ==, 0);
    }
    uint64_t counted = 0, queries = 0;
    bool done = false;
    while (!done) {
        done = atomic_load(&h->running) == 0;   /* one more reading after the last */
        JsonNode *ret = qmp_ok("x-query-device-locks", "{\"reset\": true}");
        counted += json_object_get_int_member(find_lock(ret, lock_a), "acquisitions");
        if (lock_b) {
            counted += json_object_get_int_member(find_lock(ret, lock_b), "acquisitions");
        }
        json_node_unref(ret);
        queries++;
    }
    for (unsigned i = 0; i < HAMMER_THREADS; i++) {
        pthread_join(threads[i], NULL);
    }
    g_test_message("%" PRIu64 " readings while the threads ran", queries);
    return counted;
}

static void test_device_locks_under_load(void)
{
    static QEMUDevice a, b;
    device_init(&a, "hammer-dev", "hammer");
    device_init(&b, "hammer-dev", "hammer");
    Hammer h = { { &a, &b } };
    g_assert_cmpuint(hammer_while_querying(&h, a.id, b.id), ==,
                     (uint64_t)HAMMER_THREADS * HAMMER_ROUNDS);

    /* Reading without reset leaves the counters as they are. */
    device_lock(&a);
    device_unlock(&a);
    g_autoptr(JsonNode) ret = qmp_ok("x-query-device-locks", NULL);
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(ret), "device-lock"), ==,
                    "on");
    g_assert_cmpint(json_object_get_int_member(find_lock(ret, a.id), "acquisitions"), ==, 1);
    g_autoptr(JsonNode) again = qmp_ok("x-query-device-locks", NULL);
    g_assert_cmpint(json_object_get_int_member(find_lock(again, a.id), "acquisitions"), ==, 1);
    g_assert_cmpstr(json_object_get_string_member(find_lock(again, a.id), "type"), ==,
                    "hammer-dev");
}

/* device-lock=off: every device_lock() is the global lock's, and so are
 * the counts. */
static void test_device_locks_global_mode(void)
{
    static QEMUDevice a, b;
    device_init(&a, "hammer-dev", "global-hammer");
    device_init(&b, "hammer-dev", "global-hammer");
    device_lock_set_per_device(false);
    Hammer h = { { &a, &b } };
    uint64_t counted = hammer_while_querying(&h, "global", NULL);
    g_autoptr(JsonNode) ret = qmp_ok("x-query-device-locks", NULL);
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(ret), "device-lock"), ==,
                    "off");
    g_assert_cmpint(json_object_get_int_member(find_lock(ret, a.id), "acquisitions"), ==, 0);
    device_lock_set_per_device(true);
    g_assert_cmpuint(counted, ==, (uint64_t)HAMMER_THREADS * HAMMER_ROUNDS);
}

/* The live numbers are the ones lock-stats=on prints at exit. */
static void test_device_locks_match_exit_print(void)
{
    static QEMUDevice a;
    device_init(&a, "hammer-dev", "print-hammer");
    Hammer h = { { &a, &a } };
    hammer_while_querying(&h, a.id, NULL);
    g_autoptr(JsonNode) ret = qmp_ok("x-query-device-locks", NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    device_lock_stats_print(out);
    fclose(out);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_free(text);
    JsonArray *locks = json_object_get_array_member(json_node_get_object(ret), "locks");
    /* Title and column heads, then one line per lock in the same order. */
    g_assert_cmpuint(g_strv_length(lines), ==, 2 + json_array_get_length(locks) + 1);
    for (guint i = 0; i < json_array_get_length(locks); i++) {
        JsonObject *l = json_array_get_object_element(locks, i);
        g_autofree char *expect = g_strdup_printf(
            "  %-16s %-16s %12" PRId64 " %12" PRId64 " %14.3f",
            json_object_get_string_member(l, "name"), json_object_get_string_member(l, "type"),
            json_object_get_int_member(l, "acquisitions"),
            json_object_get_int_member(l, "contended"),
            json_object_get_int_member(l, "wait-ns") / 1e6);
        g_assert_cmpstr(lines[2 + i], ==, expect);
    }
    JsonObject *mine = find_lock(ret, a.id);
    g_assert_cmpint(json_object_get_int_member(mine, "contended"), <=,
                    json_object_get_int_member(mine, "acquisitions"));
}

static void test_device_locks_bad_argument(void)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(parser, "{\"reset\": 1}", -1, NULL));
    Error *err = NULL;
    g_assert_null(qmp_dispatch("x-query-device-locks",
                               json_node_get_object(json_parser_get_root(parser)), &err));
    g_assert_cmpstr(err->msg, ==, "Invalid parameter type for 'reset', expected: boolean");
    error_free(err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* As with -name debug-threads=on: query-iothreads' thread ids are
     * checked against the names the threads were given. */
    thread_naming_enable(true);
    memory_init();
    static const IrqBackend backend = { .set_level = ignore_level, .send_msi = ignore_msi };
    irq_set_backend(&backend);
    g_test_add_func("/qmp-info/query-pci", test_query_pci);
    g_test_add_func("/qmp-info/query-iothreads", test_query_iothreads);
    g_test_add_func("/qmp-info/query-chardev", test_query_chardev);
    g_test_add_func("/qmp-info/device-locks-under-load", test_device_locks_under_load);
    g_test_add_func("/qmp-info/device-locks-global-mode", test_device_locks_global_mode);
    g_test_add_func("/qmp-info/device-locks-match-exit-print", test_device_locks_match_exit_print);
    g_test_add_func("/qmp-info/device-locks-bad-argument", test_device_locks_bad_argument);
    return g_test_run();
}
