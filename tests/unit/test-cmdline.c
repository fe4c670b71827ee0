/* Command-line parsing: argv -> MachineConfig (softmmu/cmdline.c). */
#include <stdio.h>
#include <string.h>
#include <glib.h>
#include "block/drive-config.h"
#include "hw/i386/pc-board-devices.h"
#include "hw/qdev-registry.h"
#include "monitor/monitor.h"
#include "net/netdev-create.h"
#include "sysemu/machine-config.h"

#define MiB (UINT64_C(1) << 20)

typedef struct Parsed {
    CmdlineResult result;
    MachineConfig cfg;
    char *out;      /* what was printed to the informational stream */
    char *error;    /* the error message, or NULL */
} Parsed;

/* Parse a shell-quoted command line (without the program name). */
static Parsed *parse(const char *cmdline)
{
    char **words = NULL;
    int n_words = 0;
    GError *gerr = NULL;
    /* g_shell_parse_argv refuses an empty line; an empty argv is valid here. */
    if (cmdline[0] == '\0') {
        words = g_new0(char *, 1);
    } else if (!g_shell_parse_argv(cmdline, &n_words, &words, &gerr)) {
        g_error("bad test command line '%s': %s", cmdline, gerr->message);
    }
    char **argv = g_new0(char *, n_words + 2);
    argv[0] = (char *)"qemu-system-x86_64";
    memcpy(argv + 1, words, n_words * sizeof(char *));

    Parsed *p = g_new0(Parsed, 1);
    size_t out_len;
    FILE *out = open_memstream(&p->out, &out_len);
    g_assert_nonnull(out);
    Error *err = NULL;
    p->result = cmdline_parse(n_words + 1, argv, &p->cfg, out, &err);
    fclose(out);
    if (err) {
        p->error = g_strdup(err->msg);
        error_free(err);
    }
    g_free(argv);
    g_strfreev(words);
    return p;
}

static void parsed_free(Parsed *p)
{
    machine_config_free(&p->cfg);
    g_free(p->out);
    g_free(p->error);
    g_free(p);
}

static Parsed *parse_ok(const char *cmdline)
{
    Parsed *p = parse(cmdline);
    if (p->result != CMDLINE_RUN) {
        g_error("'%s' failed: %s", cmdline, p->error ? p->error : "(no message)");
    }
    g_assert_null(p->error);
    return p;
}

static void assert_serials(const MachineConfig *cfg, const char *const *expected)
{
    guint n = g_strv_length((char **)expected);
    g_assert_cmpuint(cfg->serials->len, ==, n);
    for (guint i = 0; i < n; i++) {
        g_assert_cmpstr(g_ptr_array_index(cfg->serials, i), ==, expected[i]);
    }
}

static void assert_topology(const MachineConfig *cfg, unsigned cpus, unsigned sockets,
                            unsigned cores, unsigned threads, unsigned maxcpus)
{
    g_assert_cmpuint(cfg->smp_cpus, ==, cpus);
    g_assert_cmpuint(cfg->smp_sockets, ==, sockets);
    g_assert_cmpuint(cfg->smp_cores, ==, cores);
    g_assert_cmpuint(cfg->smp_threads, ==, threads);
    g_assert_cmpuint(cfg->smp_maxcpus, ==, maxcpus);
}

static void test_typical_command_line(void)
{
    Parsed *p = parse_ok("-accel kvm -machine pc,device-lock=on -m 512M -smp 2 -nographic "
                         "-kernel bzImage -initrd initrd.cpio.gz -append \"console=ttyS0\"");
    const MachineConfig *cfg = &p->cfg;
    g_assert_true(cfg->device_lock);
    g_assert_false(cfg->lock_stats);
    g_assert_true(cfg->pit);
    g_assert_true(cfg->acpi);
    g_assert_cmpuint(cfg->ram_size, ==, 512 * MiB);
    /* QEMU 7.2's pc prefers cores: -smp 2 is one socket of two cores. */
    assert_topology(cfg, 2, 1, 2, 1, 2);
    g_assert_cmpstr(cfg->cpu.model, ==, "qemu64");
    g_assert_cmpuint(cfg->cpu.features->len, ==, 0);
    g_assert_null(cfg->cpu.vendor);
    g_assert_cmpstr(cfg->kernel, ==, "bzImage");
    g_assert_cmpstr(cfg->initrd, ==, "initrd.cpio.gz");
    g_assert_cmpstr(cfg->append, ==, "console=ttyS0");
    g_assert_true(cfg->nographic);
    assert_serials(cfg, (const char *const[]){ "mon:stdio", NULL });
    g_assert_cmpuint(cfg->devices->len, ==, 0);
    g_assert_false(cfg->display_none);
    g_assert_false(cfg->nodefaults);
    g_assert_false(cfg->no_reboot);
    g_assert_null(cfg->name);
    g_assert_null(cfg->pidfile);
    g_assert_cmpstr(p->out, ==, "");
    parsed_free(p);
}

static void test_defaults(void)
{
    Parsed *p = parse_ok("");
    const MachineConfig *cfg = &p->cfg;
    g_assert_true(cfg->device_lock);
    g_assert_false(cfg->lock_stats);
    g_assert_true(cfg->pit);
    g_assert_true(cfg->acpi);
    g_assert_cmpuint(cfg->ram_size, ==, 128 * MiB);
    assert_topology(cfg, 1, 1, 1, 1, 1);
    g_assert_cmpstr(cfg->cpu.model, ==, "qemu64");
    g_assert_null(cfg->kernel);
    assert_serials(cfg, (const char *const[]){ "null", NULL });
    parsed_free(p);
}

static void test_double_dash(void)
{
    Parsed *p = parse_ok("--accel kvm --enable-kvm --M pc,pit=off --m 256 --smp 4 --cpu host "
                         "--kernel k --initrd i --append a --serial stdio --nographic "
                         "--no-reboot --name vm --pidfile pid --display none "
                         "--device isa-serial --no-acpi --d guest_errors --vga none "
                         "--net none --monitor none");
    const MachineConfig *cfg = &p->cfg;
    g_assert_false(cfg->pit);
    g_assert_false(cfg->acpi);
    g_assert_cmpuint(cfg->ram_size, ==, 256 * MiB);
    g_assert_cmpuint(cfg->smp_cpus, ==, 4);
    g_assert_cmpstr(cfg->cpu.model, ==, "host");
    g_assert_cmpstr(cfg->kernel, ==, "k");
    g_assert_cmpstr(cfg->initrd, ==, "i");
    g_assert_cmpstr(cfg->append, ==, "a");
    assert_serials(cfg, (const char *const[]){ "stdio", NULL });
    g_assert_true(cfg->nographic);
    g_assert_true(cfg->no_reboot);
    g_assert_true(cfg->display_none);
    g_assert_cmpstr(cfg->name, ==, "vm");
    g_assert_cmpstr(cfg->pidfile, ==, "pid");
    g_assert_cmpuint(cfg->devices->len, ==, 1);
    parsed_free(p);

    p = parse_ok("--nodefaults");
    g_assert_true(p->cfg.nodefaults);
    parsed_free(p);
}

static void test_memory_sizes(void)
{
    static const struct {
        const char *arg;
        uint64_t bytes;
    } cases[] = {
        { "512", 512 * MiB },           /* a bare number is MiB */
        { "3", 3 * MiB },
        { "512M", 512 * MiB },
        { "512m", 512 * MiB },
        { "1G", 1024 * MiB },
        { "2g", 2048 * MiB },
        { "2048k", 2 * MiB },
        { "4096K", 4 * MiB },
        { "1T", 1024 * 1024 * MiB },
        { "2049k", 2052 * 1024 },      /* rounded up to whole pages */
        { "size=256M", 256 * MiB },
        { "64,size=96", 96 * MiB },     /* the last size wins */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *cmdline = g_strdup_printf("-m %s", cases[i].arg);
        Parsed *p = parse_ok(cmdline);
        g_assert_cmpuint(p->cfg.ram_size, ==, cases[i].bytes);
        parsed_free(p);
        g_free(cmdline);
    }
    Parsed *p = parse_ok("-m 1G -m 2G");
    g_assert_cmpuint(p->cfg.ram_size, ==, 2048 * MiB);
    parsed_free(p);
}

static void test_smp_topologies(void)
{
    static const struct {
        const char *cmdline;
        unsigned cpus, sockets, cores, threads, maxcpus;
    } cases[] = {
        { "-smp 2", 2, 1, 2, 1, 2 },
        { "-smp cpus=3", 3, 1, 3, 1, 3 },
        { "-smp 4,sockets=2", 4, 2, 2, 1, 4 },
        { "-smp 4,cores=2", 4, 2, 2, 1, 4 },
        { "-smp 4,threads=2", 4, 1, 2, 2, 4 },
        { "-smp 8,sockets=2,cores=2", 8, 2, 2, 2, 8 },
        { "-smp 8,sockets=2,cores=2,threads=2,maxcpus=8", 8, 2, 2, 2, 8 },
        { "-smp maxcpus=4", 4, 1, 4, 1, 4 },
        { "-smp sockets=2,cores=2", 4, 2, 2, 1, 4 },
        { "-smp threads=2", 2, 1, 1, 2, 2 },
        { "-smp 2,dies=1", 2, 1, 2, 1, 2 },
        { "-smp 255", 255, 1, 255, 1, 255 },
        { "-smp 1 -smp 6", 6, 1, 6, 1, 6 },
        /* Machine versions before 6.2 prefer sockets, wherever -machine is. */
        { "-machine pc-i440fx-6.1 -smp 2", 2, 2, 1, 1, 2 },
        { "-smp 2 -machine pc-i440fx-6.1", 2, 2, 1, 1, 2 },
        { "-M pc-i440fx-2.12 -smp 4,threads=2", 4, 2, 1, 2, 4 },
        { "-M pc-i440fx-6.2 -smp 2", 2, 1, 2, 1, 2 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Parsed *p = parse_ok(cases[i].cmdline);
        assert_topology(&p->cfg, cases[i].cpus, cases[i].sockets, cases[i].cores,
                        cases[i].threads, cases[i].maxcpus);
        parsed_free(p);
    }
}

static void test_cpu_features(void)
{
    Parsed *p = parse_ok("-cpu host,+avx2,-x2apic,pmu=off,vmx=on,aes,vendor=GenuineIntel");
    static const struct {
        const char *name;
        bool enabled;
    } expected[] = {
        { "avx2", true }, { "x2apic", false }, { "pmu", false }, { "vmx", true },
        { "aes", true },
    };
    const CpuConfig *cpu = &p->cfg.cpu;
    g_assert_cmpstr(cpu->model, ==, "host");
    g_assert_cmpstr(cpu->vendor, ==, "GenuineIntel");
    g_assert_cmpuint(cpu->features->len, ==, G_N_ELEMENTS(expected));
    for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
        const CpuFeatureSetting *f = &g_array_index(cpu->features, CpuFeatureSetting, i);
        g_assert_cmpstr(f->name, ==, expected[i].name);
        g_assert_cmpint(f->enabled, ==, expected[i].enabled);
    }
    parsed_free(p);

    /* A later -cpu replaces the earlier one entirely. */
    p = parse_ok("-cpu host,+avx2,vendor=GenuineIntel -cpu max,-sse4.2");
    cpu = &p->cfg.cpu;
    g_assert_cmpstr(cpu->model, ==, "max");
    g_assert_null(cpu->vendor);
    g_assert_cmpuint(cpu->features->len, ==, 1);
    g_assert_cmpstr(g_array_index(cpu->features, CpuFeatureSetting, 0).name, ==, "sse4.2");
    g_assert_false(g_array_index(cpu->features, CpuFeatureSetting, 0).enabled);
    parsed_free(p);
}

static void test_machine_properties(void)
{
    Parsed *p = parse_ok("-machine pc,device-lock=off,lock-stats=yes,pit=false,acpi=no,"
                         "x-ram-thp=off");
    g_assert_false(p->cfg.ram_thp);
    g_assert_false(p->cfg.device_lock);
    g_assert_true(p->cfg.lock_stats);
    g_assert_false(p->cfg.pit);
    g_assert_false(p->cfg.acpi);
    parsed_free(p);

    /* A bare boolean property means on; type and accel may come anywhere. */
    p = parse_ok("-machine accel=kvm,lock-stats,type=pc-i440fx-7.2");
    g_assert_true(p->cfg.lock_stats);
    parsed_free(p);

    p = parse_ok("-M pc,usb=off,vmport=auto,smm=off,hpet=off,graphics=off,"
                 "dump-guest-core=on,mem-merge=off, -machine accel=kvm");
    g_assert_true(p->cfg.device_lock);
    g_assert_true(p->cfg.ram_thp);
    parsed_free(p);

    p = parse_ok("-no-acpi");
    g_assert_false(p->cfg.acpi);
    parsed_free(p);
}

static void test_serial_defaults(void)
{
    static const struct {
        const char *cmdline;
        const char *serials[5];
    } cases[] = {
        { "", { "null" } },
        { "-display none", { "null" } },
        { "-nographic", { "mon:stdio" } },
        { "-nographic -nodefaults", { NULL } },
        { "-nodefaults", { NULL } },
        { "-nographic -serial stdio", { "stdio" } },
        { "-nodefaults -serial mon:stdio", { "mon:stdio" } },
        { "-serial none -serial file:/tmp/com2.log", { "none", "file:/tmp/com2.log" } },
        { "-serial null -serial null -serial null -serial stdio",
          { "null", "null", "null", "stdio" } },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Parsed *p = parse_ok(cases[i].cmdline);
        assert_serials(&p->cfg, cases[i].serials);
        parsed_free(p);
    }
}

/*
 * Human monitors as QEMU makes them: -monitor SPEC on a backend named
 * compat_monitorN; a "mon:" serial carries one; -nographic's defaults are
 * mon:stdio when serial port and monitor are both defaults, else each alone
 * on stdio. Monitors are listed by backend id, backends as "id=spec".
 */
static void test_monitor_options(void)
{
    static const struct {
        const char *cmdline;
        const char *serials[3];
        const char *monitors[3];
        const char *chardevs[3];
    } cases[] = {
        { "", { "null" }, { NULL }, { NULL } },
        { "-nographic", { "mon:stdio" }, { "serial0" }, { NULL } },
        { "-nographic -nodefaults", { NULL }, { NULL }, { NULL } },
        { "-nographic -monitor none", { "stdio" }, { NULL }, { NULL } },
        /* QEMU then refuses the second user of stdio, as the machine will. */
        { "-nographic -serial stdio", { "stdio" }, { "compat_monitor0" },
          { "compat_monitor0=stdio" } },
        { "-nographic -serial file:/tmp/com1", { "file:/tmp/com1" }, { "compat_monitor0" },
          { "compat_monitor0=stdio" } },
        { "-nographic -serial mon:stdio", { "mon:stdio" }, { "serial0" }, { NULL } },
        { "-nodefaults -serial null -serial mon:stdio", { "null", "mon:stdio" }, { "serial1" },
          { NULL } },
        { "-nodefaults -monitor stdio", { NULL }, { "compat_monitor0" },
          { "compat_monitor0=stdio" } },
        { "-monitor unix:/tmp/m.sock,server=on,wait=off -monitor stdio", { "null" },
          { "compat_monitor0", "compat_monitor1" },
          { "compat_monitor0=unix:/tmp/m.sock,server=on,wait=off", "compat_monitor1=stdio" } },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Parsed *p = parse_ok(cases[i].cmdline);
        assert_serials(&p->cfg, cases[i].serials);
        g_assert_cmpuint(p->cfg.monitors->len, ==, g_strv_length((char **)cases[i].monitors));
        for (guint m = 0; m < p->cfg.monitors->len; m++) {
            const MonitorConfig *mc = g_ptr_array_index(p->cfg.monitors, m);
            g_assert_cmpstr(mc->chardev_id, ==, cases[i].monitors[m]);
            g_assert_cmpint(mc->mode, ==, MONITOR_MODE_READLINE);
        }
        g_assert_cmpuint(p->cfg.chardevs->len, ==, g_strv_length((char **)cases[i].chardevs));
        for (guint c = 0; c < p->cfg.chardevs->len; c++) {
            const ChardevConfig *cc = g_ptr_array_index(p->cfg.chardevs, c);
            g_autofree char *both = g_strdup_printf("%s=%s", cc->id, cc->spec);
            g_assert_cmpstr(both, ==, cases[i].chardevs[c]);
        }
        parsed_free(p);
    }
}

/* The value of dev's property name, which must be of the given kind. */
static const void *device_field(const DeviceConfig *dev, const char *name,
                                DevicePropertyKind kind)
{
    const DeviceProperty *prop = device_type_find_property(dev->type, name);
    g_assert_nonnull(prop);
    g_assert_cmpint(prop->kind, ==, kind);
    return (const char *)dev->options + prop->offset;
}

static uint32_t device_u32(const DeviceConfig *dev, const char *name)
{
    return *(const uint32_t *)device_field(dev, name, DEVICE_PROP_UINT32);
}

static int32_t device_devfn(const DeviceConfig *dev)
{
    return *(const int32_t *)device_field(dev, "addr", DEVICE_PROP_PCI_DEVFN);
}

static const DeviceConfig *device_at(const MachineConfig *cfg, guint i)
{
    return g_ptr_array_index(cfg->devices, i);
}

static void test_devices(void)
{
    Parsed *p = parse_ok("-device isa-debug-exit,iobase=0xf4,iosize=4 -device isa-debug-exit "
                         "-device isa-serial,id=com2,index=1 "
                         "-device iosize=0x1,driver=isa-debug-exit");
    g_assert_cmpuint(p->cfg.devices->len, ==, 4);

    const DeviceConfig *dev = device_at(&p->cfg, 0);
    g_assert_cmpstr(dev->type->name, ==, "isa-debug-exit");
    g_assert_cmphex(device_u32(dev, "iobase"), ==, 0xf4);
    g_assert_cmpuint(device_u32(dev, "iosize"), ==, 4);
    g_assert_null(dev->id);
    g_assert_cmpstr(dev->origin, ==, "-device isa-debug-exit,iobase=0xf4,iosize=4");

    /* Not given: the defaults of the property table. */
    dev = device_at(&p->cfg, 1);
    g_assert_cmphex(device_u32(dev, "iobase"), ==, 0x501);
    g_assert_cmpuint(device_u32(dev, "iosize"), ==, 2);
    g_assert_cmpuint(dev->given, ==, 0);

    dev = device_at(&p->cfg, 2);
    g_assert_cmpstr(dev->type->name, ==, "isa-serial");
    g_assert_cmpstr(dev->id, ==, "com2");
    g_assert_cmpuint(device_u32(dev, "index"), ==, 1);
    g_assert_cmpuint(device_u32(dev, "iobase"), ==, UINT32_MAX);

    dev = device_at(&p->cfg, 3);
    g_assert_cmpstr(dev->type->name, ==, "isa-debug-exit");
    g_assert_cmpuint(device_u32(dev, "iosize"), ==, 1);
    parsed_free(p);
}

static void test_pci_addresses(void)
{
    static const struct {
        const char *addr;
        int32_t devfn;
    } cases[] = {
        { "3", 24 },
        { "03", 24 },
        { "0x3", 24 },
        { "1f", 248 },
        { "0x1F", 248 },
        { "0", 0 },
        { "4.1", 33 },
        { "04.0", 32 },
        { "1f.7", 255 },
        { "0x2.0x3", 19 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *cmdline = g_strdup_printf("-device pci-testdev,addr=%s "
                                        "-device pdl-testdev,id=p,addr=%s",
                                        cases[i].addr, cases[i].addr);
        Parsed *p = parse_ok(cmdline);
        g_assert_cmpuint(p->cfg.devices->len, ==, 2);
        for (guint d = 0; d < 2; d++) {
            const DeviceConfig *dev = device_at(&p->cfg, d);
            g_assert_cmpstr(dev->type->name, ==, d == 0 ? "pci-testdev" : "pdl-testdev");
            g_assert_cmpint(device_devfn(dev), ==, cases[i].devfn);
        }
        parsed_free(p);
        g_free(cmdline);
    }

    /* Without addr= the devfn is -1: the machine picks a slot. */
    Parsed *p = parse_ok("-device pdl-testdev -device pc-testdev,id=t");
    const DeviceConfig *dev = device_at(&p->cfg, 0);
    g_assert_cmpstr(dev->type->name, ==, "pdl-testdev");
    g_assert_cmpint(device_devfn(dev), ==, -1);
    dev = device_at(&p->cfg, 1);
    g_assert_cmpstr(dev->type->name, ==, "pc-testdev");
    g_assert_cmpstr(dev->id, ==, "t");
    parsed_free(p);
}

static void test_globals(void)
{
    /* A -global is the default of every -device of its driver, before or
     * after it; explicit properties win whatever the order. */
    Parsed *p = parse_ok("-device isa-debug-exit -global isa-debug-exit.iobase=0xf4 "
                         "-device isa-debug-exit,iobase=0x80 -device isa-serial "
                         "-global driver=isa-debug-exit,property=iosize,value=4 "
                         "-device isa-debug-exit,iosize=1,iobase=0x90 "
                         "-global pdl-testdev.addr=5 -device pdl-testdev "
                         "-device pdl-testdev,addr=6.1 -global isa-serial.irq=0x5");
    g_assert_cmpuint(p->cfg.devices->len, ==, 6);
    static const struct {
        uint32_t iobase, iosize;
    } debug_exits[] = { { 0xf4, 4 }, { 0x80, 4 }, { 0, 0 }, { 0x90, 1 } };
    for (guint i = 0; i < G_N_ELEMENTS(debug_exits); i++) {
        const DeviceConfig *dev = device_at(&p->cfg, i);
        if (!debug_exits[i].iobase) {
            /* Other drivers are untouched by isa-debug-exit's globals. */
            g_assert_cmpstr(dev->type->name, ==, "isa-serial");
            g_assert_cmpuint(device_u32(dev, "irq"), ==, 5);
            g_assert_cmpuint(device_u32(dev, "iobase"), ==, UINT32_MAX);
            continue;
        }
        g_assert_cmpstr(dev->type->name, ==, "isa-debug-exit");
        g_assert_cmphex(device_u32(dev, "iobase"), ==, debug_exits[i].iobase);
        g_assert_cmpuint(device_u32(dev, "iosize"), ==, debug_exits[i].iosize);
    }
    g_assert_cmpint(device_devfn(device_at(&p->cfg, 4)), ==, 5 << 3);
    g_assert_cmpint(device_devfn(device_at(&p->cfg, 5)), ==, 6 << 3 | 1);
    g_assert_cmpuint(p->cfg.board_globals->len, ==, 0);
    parsed_free(p);

    /* The later -global wins; built-in defaults fill the rest. */
    p = parse_ok("-global isa-debug-exit.iosize=1 -global isa-debug-exit.iosize=8 "
                 "-device isa-debug-exit");
    const DeviceConfig *dev = device_at(&p->cfg, 0);
    g_assert_cmpuint(device_u32(dev, "iosize"), ==, 8);
    g_assert_cmphex(device_u32(dev, "iobase"), ==, 0x501);
    parsed_free(p);

    /* A -global for a driver without -device changes nothing. */
    p = parse_ok("-global isa-debug-exit.iobase=0xf4");
    g_assert_cmpuint(p->cfg.devices->len, ==, 0);
    parsed_free(p);
}

static LostTickPolicy pit_policy(const Parsed *p)
{
    const KVMPitOptions *pit = board_device_options(p->cfg.board_globals, &kvm_pit_type);
    return pit->lost_tick_policy;
}

/* kvm-pit is an ordinary (board) entry of the registry. */
static void test_kvm_pit_policy(void)
{
    Parsed *p = parse_ok("");
    g_assert_cmpint(pit_policy(p), ==, LOST_TICK_POLICY_DELAY);
    parsed_free(p);

    p = parse_ok("-global kvm-pit.lost_tick_policy=discard");
    g_assert_cmpint(pit_policy(p), ==, LOST_TICK_POLICY_DISCARD);
    parsed_free(p);

    p = parse_ok("-global kvm-pit.lost_tick_policy=discard "
                 "-global driver=kvm-pit,property=lost_tick_policy,value=delay");
    g_assert_cmpint(pit_policy(p), ==, LOST_TICK_POLICY_DELAY);
    parsed_free(p);
}

/* libvirt's -global PIIX4_PM.disable_s3=1 reaches the board's PM device;
 * the board's RTC and keyboard controller take QEMU's defaults. */
static void test_board_globals(void)
{
    Parsed *p = parse_ok("-global PIIX4_PM.disable_s3=1 "
                         "-global driver=PIIX4_PM,property=disable_s4,value=1 "
                         "-global mc146818rtc.lost_tick_policy=discard "
                         "-global i8042.kbd-throttle=off");
    const PIIX4PMOptions *pm = board_device_options(p->cfg.board_globals, &piix4_pm_type);
    g_assert_cmpuint(pm->disable_s3, ==, 1);
    g_assert_cmpuint(pm->disable_s4, ==, 1);
    g_assert_cmpuint(p->cfg.board_globals->len, ==, 3);
    parsed_free(p);

    p = parse_ok("-global PIIX4_PM.disable_s4=1");
    pm = board_device_options(p->cfg.board_globals, &piix4_pm_type);
    g_assert_cmpuint(pm->disable_s3, ==, 0);
    g_assert_cmpuint(pm->disable_s4, ==, 1);
    parsed_free(p);

    /* Without -global: the defaults, S3 and S4 offered. */
    p = parse_ok("");
    pm = board_device_options(p->cfg.board_globals, &piix4_pm_type);
    g_assert_cmpuint(pm->disable_s3, ==, 0);
    g_assert_cmpuint(pm->disable_s4, ==, 0);
    parsed_free(p);
}

static void assert_fw_cfg_item(const MachineConfig *cfg, guint i, const char *name,
                               const char *string, const char *file)
{
    const FwCfgItemConfig *item = g_ptr_array_index(cfg->fw_cfg_items, i);
    g_assert_cmpstr(item->name, ==, name);
    g_assert_cmpstr(item->string, ==, string);
    g_assert_cmpstr(item->file, ==, file);
}

static void test_fw_cfg_items(void)
{
    Parsed *p = parse_ok("-fw_cfg opt/org.test/a,string=hello,,world "
                         "-fw_cfg name=opt/b,file=/tmp/b.bin "
                         "-fw_cfg file=/dev/null,name=opt/c");
    g_assert_cmpuint(p->cfg.fw_cfg_items->len, ==, 3);
    assert_fw_cfg_item(&p->cfg, 0, "opt/org.test/a", "hello,world", NULL);
    assert_fw_cfg_item(&p->cfg, 1, "opt/b", NULL, "/tmp/b.bin");
    assert_fw_cfg_item(&p->cfg, 2, "opt/c", NULL, "/dev/null");
    parsed_free(p);

    /* 55 characters is the longest name. */
    p = parse_ok("-fw_cfg opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,string=x");
    g_assert_cmpuint(p->cfg.fw_cfg_items->len, ==, 1);
    parsed_free(p);

    p = parse_ok("");
    g_assert_cmpuint(p->cfg.fw_cfg_items->len, ==, 0);
    parsed_free(p);
}

/* A name outside opt/ is accepted with QEMU's warning on stderr. */
static void test_fw_cfg_warning(void)
{
    if (g_test_subprocess()) {
        Parsed *p = parse_ok("-fw_cfg etc/mine,string=1 -fw_cfg opt/ok,string=2");
        g_assert_cmpuint(p->cfg.fw_cfg_items->len, ==, 2);
        assert_fw_cfg_item(&p->cfg, 0, "etc/mine", "1", NULL);
        parsed_free(p);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("qemu-system-x86_64: warning: externally provided fw_cfg "
                              "item names should be prefixed with \"opt/\"\n");
}

static void test_strings_and_escapes(void)
{
    Parsed *p = parse_ok("-name my,,vm -kernel a -kernel b -append 'root=/dev/sda,x quiet' "
                         "-pidfile /run/vm.pid -no-reboot");
    g_assert_cmpstr(p->cfg.name, ==, "my,vm");
    g_assert_cmpstr(p->cfg.kernel, ==, "b");
    g_assert_cmpstr(p->cfg.append, ==, "root=/dev/sda,x quiet");
    g_assert_cmpstr(p->cfg.pidfile, ==, "/run/vm.pid");
    g_assert_true(p->cfg.no_reboot);
    parsed_free(p);

    p = parse_ok("-name guest=vm1,debug-threads=on,process=qemu-vm1");
    g_assert_cmpstr(p->cfg.name, ==, "vm1");
    g_assert_cmpstr(p->cfg.process_name, ==, "qemu-vm1");
    g_assert_true(p->cfg.debug_threads);
    parsed_free(p);
}

/* -name as QemuOpts reads it in QEMU 7.2 (checked against Debian's). */
static void test_name(void)
{
    static const struct {
        const char *cmdline;
        const char *name, *process;     /* NULL: not set */
        bool debug_threads;
    } cases[] = {
        { "", NULL, NULL, false },
        { "-name ''", NULL, NULL, false },          /* no name: query-name {} */
        { "-name guest=", "", NULL, false },        /* an empty name */
        { "-name vm", "vm", NULL, false },
        { "-name vm,debug-threads=on", "vm", NULL, true },
        { "-name vm,debug-threads", "vm", NULL, true },     /* a bare key is on */
        { "-name vm,debug-threads=on,debug-threads=off", "vm", NULL, false },
        { "-name debug-threads=on", NULL, NULL, true },
        { "-name process=p", NULL, "p", false },
        { "-name vm,guest=other", "other", NULL, false },   /* the last one counts */
        { "-name vm,guest", "on", NULL, false },
        { "-name a -name b", "b", NULL, false },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Parsed *p = parse_ok(cases[i].cmdline);
        g_assert_cmpstr(p->cfg.name, ==, cases[i].name);
        g_assert_cmpstr(p->cfg.process_name, ==, cases[i].process);
        g_assert_cmpint(p->cfg.debug_threads, ==, cases[i].debug_threads);
        parsed_free(p);
    }
}

/* What -daemonize accepts: a daemon's stdio is /dev/null, so nothing may
 * be on it (the refusals are in test_errors). */
static void test_daemonize(void)
{
    static const char *const accepted[] = {
        "-daemonize",
        "-daemonize -nographic -nodefaults",
        "-daemonize -display none -serial null -serial file:/tmp/x -chardev null,id=c",
        "-daemonize -pidfile /run/vm.pid",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(accepted); i++) {
        Parsed *p = parse_ok(accepted[i]);
        g_assert_true(p->cfg.daemonize);
        parsed_free(p);
    }
    Parsed *p = parse_ok("-nographic");
    g_assert_false(p->cfg.daemonize);
    parsed_free(p);
}

static void test_errors(void)
{
    static const struct {
        const char *cmdline;
        const char *message;    /* the start of the error message */
    } cases[] = {
        { "-foo", "-foo: unknown option" },
        { "-m 1G --bar 2", "--bar: unknown option" },
        { "-m", "-m: requires an argument" },
        { "-smp 2 --kernel", "--kernel: requires an argument" },
        { "-m 12Q", "-m 12Q: invalid size '12Q'" },
        { "-m 0", "-m 0: RAM size must be at least 2 MiB" },
        { "-m 1M", "-m 1M: RAM size must be at least" },
        { "-m 1k", "-m 1k: RAM size must be at least" },
        { "-m -5", "-m -5: invalid size" },
        { "-m abc", "-m abc: invalid size" },
        { "-m ''", "-m : invalid size" },
        { "-m 1.5G", "-m 1.5G: invalid size" },
        { "-m 99999999999999999999", "-m 99999999999999999999: invalid size" },
        { "-m 17179869184G", "-m 17179869184G: invalid size" },
        { "-m 128T", "-m 128T: RAM size does not fit in the host address space" },
        { "-m 1G,slots=2,maxmem=4G", "-m 1G,slots=2,maxmem=4G: memory hotplug is not supported" },
        { "-m 1G,foo=1", "-m 1G,foo=1: property 'foo' is not supported" },
        { "-machine pc,foo=1", "-machine pc,foo=1: property 'foo' is not supported" },
        { "-machine q35", "-machine q35: unsupported machine type 'q35'" },
        { "-machine pc-i440fx-8.0", "-machine pc-i440fx-8.0: unsupported machine type" },
        { "-machine pc,usb=on", "-machine pc,usb=on: usb=on is not supported" },
        { "-machine pc,hpet", "-machine pc,hpet: hpet=on is not supported" },
        { "-machine pc,device-lock=maybe", "-machine pc,device-lock=maybe: parameter "
          "'device-lock' expects on or off" },
        { "-machine pc,accel=tcg", "-machine pc,accel=tcg: only the kvm accelerator" },
        { "-machine pc,=1", "-machine pc,=1: empty parameter name" },
        { "-accel tcg", "-accel tcg: only the kvm accelerator is supported" },
        { "--accel xen", "--accel xen: only the kvm accelerator is supported" },
        { "-accel kvm,kernel-irqchip=on", "-accel kvm,kernel-irqchip=on: property "
          "'kernel-irqchip' is not supported" },
        { "-serial pty", "-serial pty: unsupported serial backend (use stdio, mon:stdio, "
          "file:PATH, unix:PATH,server=on,wait=off, tcp:HOST:PORT,server=on,wait=off, "
          "chardev:ID, null or none)" },
        { "-serial udp::4444", "-serial udp::4444: unsupported serial backend" },
        { "-serial file:", "-serial file:: unsupported serial backend" },
        { "-serial null -serial null -serial null -serial null -serial null",
          "-serial null: too many serial ports" },
        { "-serial stdio -serial mon:stdio", "-serial mon:stdio: stdio is already used" },
        { "-device foo", "-device foo: 'foo' is not a valid device model name (try -device "
          "help)" },
        { "-device isa-debug-exit,bar=1", "-device isa-debug-exit,bar=1: Property "
          "'isa-debug-exit.bar' not found (try -device isa-debug-exit,help)" },
        { "-device isa-debug-exit,iobase=0x100000000", "-device isa-debug-exit,"
          "iobase=0x100000000: Property 'isa-debug-exit.iobase' expects an integer from 0 "
          "to 4294967295, not '0x100000000'" },
        { "-device isa-debug-exit,iosize=four", "-device isa-debug-exit,iosize=four: "
          "Property 'isa-debug-exit.iosize' expects an integer" },
        { "-device isa-debug-exit,iosize=-1", "-device isa-debug-exit,iosize=-1: "
          "Property 'isa-debug-exit.iosize' expects an integer" },
        { "-device isa-debug-exit,iosize", "-device isa-debug-exit,iosize: "
          "Property 'isa-debug-exit.iosize' needs a value" },
        { "-device isa-serial,baudbase=9600", "-device isa-serial,baudbase=9600: Property "
          "'isa-serial.baudbase' not found" },
        { "-device id=x", "-device id=x: parameter 'driver' is missing" },
        { "-device isa-serial,id=1st", "-device isa-serial,id=1st: Parameter 'id' expects "
          "an identifier" },
        { "-device isa-serial,id=a,,b", "-device isa-serial,id=a,,b: Parameter 'id' expects "
          "an identifier" },
        { "-device isa-serial,id=a -device pdl-testdev,id=a", "-device pdl-testdev,id=a: "
          "Duplicate ID 'a' for device" },
        { "-initrd initrd.img", "-initrd only allowed with -kernel option" },
        { "--append console=ttyS0", "--append only allowed with -kernel option" },
        { "-smp 4,sockets=3", "-smp 4,sockets=3: invalid CPU topology" },
        { "-smp 4,sockets=2,cores=2,threads=2", "-smp 4,sockets=2,cores=2,threads=2: "
          "invalid CPU topology" },
        { "-smp 4,maxcpus=2", "-smp 4,maxcpus=2: invalid CPU topology: cpus (4) exceeds" },
        { "-smp 2,maxcpus=4", "-smp 2,maxcpus=4: CPU hotplug is not supported" },
        { "-smp 256", "-smp 256: parameter 'cpus' must be between 1 and 255" },
        { "-smp sockets=16,cores=16", "-smp sockets=16,cores=16: at most 255 vCPUs" },
        { "-smp 0", "-smp 0: parameter 'cpus' must be between 1 and 255" },
        { "-smp two", "-smp two: parameter 'cpus' expects a number" },
        { "-smp 2,dies=2", "-smp 2,dies=2: multi-die topologies are not supported" },
        { "-smp 2,clusters=1", "-smp 2,clusters=1: property 'clusters' is not supported" },
        { "-cpu qemu64,vendor=Intel", "-cpu qemu64,vendor=Intel: vendor 'Intel' must be "
          "exactly 12" },
        { "-cpu qemu64,avx=maybe", "-cpu qemu64,avx=maybe: parameter 'avx' expects on or off" },
        { "-cpu qemu64,+", "-cpu qemu64,+: invalid CPU feature ''" },
        { "-cpu qemu64,+avx=on", "-cpu qemu64,+avx=on: invalid CPU feature '+avx'" },
        { "-cpu ''", "-cpu : a CPU model must come first" },
        { "-display gtk", "-display gtk: only -display none is supported" },
        { "-display none,gl=on", "-display none,gl=on: only -display none" },
        { "-vga std", "-vga std: only -vga none is supported" },
        { "-net nic", "-net nic: the legacy -net hub is not supported: use -nic" },
        { "-net user,id=n0", "-net user,id=n0: the legacy -net hub is not supported" },
        { "-netdev foo,id=n0", "-netdev foo,id=n0: Parameter 'type' expects a netdev backend "
          "type" },
        { "-netdev id=n0", "-netdev id=n0: Parameter 'type' expects a netdev backend type" },
        { "-netdev tap", "-netdev tap: Parameter 'id' is missing" },
        { "-netdev tap,id=0n", "-netdev tap,id=0n: '0n' is not a valid id" },
        { "-netdev tap,id=__nic0", "-netdev tap,id=__nic0: '__nic0' is not a valid id" },
        { "-netdev tap,id=n0 -netdev socket,id=n0,listen=:1",
          "-netdev socket,id=n0,listen=:1: Duplicate ID 'n0' for netdev" },
        { "-netdev tap,id=n0 -nic tap,id=n0", "-nic tap,id=n0: Duplicate ID 'n0' for netdev" },
        { "-nic foo", "-nic foo: Parameter 'type' expects a netdev backend type" },
        { "-nic tap,mac=52:54:00:12:34", "-nic tap,mac=52:54:00:12:34: Property 'e1000.mac' "
          "expects a MAC address" },
        { "-nic tap,model=virtio-net-pci,mac", "-nic tap,model=virtio-net-pci,mac: Property "
          "'virtio-net-pci.mac' expects a MAC address" },
        { "-nic tap,model=rtl8139", "-nic tap,model=rtl8139: Unsupported NIC model: rtl8139" },
        { "-monitor ''", "-monitor : a backend is needed (stdio, unix:PATH,server=on,wait=off "
          "or none)" },
        { "-mon chardev=c0,mode=bogus",
          "-mon chardev=c0,mode=bogus: unknown monitor mode \"bogus\"" },
        { "-mon chardev=c0,mode=control", "-mon: chardev \"c0\" not found" },
        { "-global isa-serial.baudbase=9600", "-global isa-serial.baudbase=9600: Property "
          "'isa-serial.baudbase' not found" },
        { "-global foo.bar=1", "-global foo.bar=1: 'foo' is not a valid device model name" },
        { "-global isa-debug-exit.iobase=lots", "-global isa-debug-exit.iobase=lots: "
          "Property 'isa-debug-exit.iobase' expects an integer" },
        { "-global pci-testdev.addr=20", "-global pci-testdev.addr=20: Property "
          "'pci-testdev.addr' expects SLOT[.FUNCTION]" },
        { "-global isa-serial.id=com1", "-global isa-serial.id=com1: property 'id' names "
          "one device" },
        { "-global kvm-pit.lost_tick_policy=slew", "-global kvm-pit.lost_tick_policy=slew: "
          "Property 'kvm-pit.lost_tick_policy' cannot be 'slew': this VMM does not "
          "implement it" },
        { "-global mc146818rtc.lost_tick_policy=slew", "-global "
          "mc146818rtc.lost_tick_policy=slew: Property 'mc146818rtc.lost_tick_policy' cannot "
          "be 'slew': this VMM implements only its default (\"discard\")" },
        { "-global mc146818rtc.lost_tick_policy=bogus", "-global "
          "mc146818rtc.lost_tick_policy=bogus: Parameter 'lost_tick_policy' does not accept "
          "value 'bogus'" },
        { "-global i8042.kbd-throttle=on", "-global i8042.kbd-throttle=on: Property "
          "'i8042.kbd-throttle' cannot be 'on': this VMM implements only its default (false)" },
        { "-global PIIX4_PM.disable_s3=on", "-global PIIX4_PM.disable_s3=on: Property "
          "'PIIX4_PM.disable_s3' expects an integer from 0 to 255, not 'on'" },
        { "-global PIIX4_PM.foo=1", "-global PIIX4_PM.foo=1: Property 'PIIX4_PM.foo' not found" },
        { "-global ide-hd.bus=ide.0", "-global ide-hd.bus=ide.0: Property 'ide-hd.bus' not "
          "found" },
        { "-device PIIX4_PM", "-device PIIX4_PM: Parameter 'driver' expects a pluggable device "
          "type" },
        { "-device kvm-pit,lost_tick_policy=delay", "-device kvm-pit,lost_tick_policy=delay: "
          "Parameter 'driver' expects a pluggable device type" },
        { "-device e1000,bus", "-device e1000,bus: Parameter 'bus' needs a value" },
        { "-global kvm-pit.irq0=1", "-global kvm-pit.irq0=1: Property 'kvm-pit.irq0' not "
          "found" },
        { "-global driver=isa-serial,property=id", "-global driver=isa-serial,property=id: "
          "driver, property and value are all required" },
        { "-global isa-serial", "-global isa-serial: expected DRIVER.PROPERTY=VALUE" },
        { "-global driver=kvm-pit,prop=x,value=y", "-global driver=kvm-pit,prop=x,value=y: "
          "expected DRIVER.PROPERTY=VALUE" },
        { "-global", "-global: requires an argument" },
        { "-device pci-testdev,addr=20", "-device pci-testdev,addr=20: Property "
          "'pci-testdev.addr' expects SLOT[.FUNCTION] with SLOT 0 to 1f (hexadecimal) and "
          "FUNCTION 0 to 7, not '20'" },
        { "-device pci-testdev,addr=3.8", "-device pci-testdev,addr=3.8: Property 'pci-testdev.addr'" },
        { "-device pdl-testdev,addr=x", "-device pdl-testdev,addr=x: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr=", "-device pdl-testdev,addr=: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr=3.", "-device pdl-testdev,addr=3.: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr=.1", "-device pdl-testdev,addr=.1: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr=0x", "-device pdl-testdev,addr=0x: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr=-1", "-device pdl-testdev,addr=-1: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr=3.1.1", "-device pdl-testdev,addr=3.1.1: Property 'pdl-testdev.addr'" },
        { "-device pdl-testdev,addr", "-device pdl-testdev,addr: Property "
          "'pdl-testdev.addr' needs a value" },
        { "-device pc-testdev,addr=3", "-device pc-testdev,addr=3: Property "
          "'pc-testdev.addr' not found" },
        { "-fw_cfg string=x", "-fw_cfg string=x: a non-empty name= is required" },
        { "-fw_cfg opt/a", "-fw_cfg opt/a: exactly one of string= and file= is required" },
        { "-fw_cfg opt/a,string=x,file=y", "-fw_cfg opt/a,string=x,file=y: exactly one of" },
        { "-fw_cfg opt/a,string=", "-fw_cfg opt/a,string=: string= must not be empty" },
        { "-fw_cfg opt/a,file=", "-fw_cfg opt/a,file=: file= must not be empty" },
        { "-fw_cfg opt/a,gen_id=1", "-fw_cfg opt/a,gen_id=1: property 'gen_id' is not "
          "supported" },
        { "-fw_cfg opt/a,string", "-fw_cfg opt/a,string: parameter 'string' needs a value" },
        { "-fw_cfg opt/a,string=1 -fw_cfg name=opt/a,file=f",
          "-fw_cfg name=opt/a,file=f: fw_cfg item 'opt/a' is given twice" },
        { "-fw_cfg opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,string=x",
          "-fw_cfg opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,string=x: name "
          "'opt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is too long (at most 55" },
        { "-drive file=disk.img,if=scsi", "-drive file=disk.img,if=scsi: unsupported bus "
          "type 'scsi'" },
        { "-drive file=disk.img,bogus=1", "-drive file=disk.img,bogus=1: unsupported "
          "parameter 'bogus'" },
        { "-drive file=a -drive file=b,index=0", "-drive file=b,index=0: drive with bus=0, "
          "unit=0 (index=0) exists" },
        { "-hdc a -cdrom b", "-cdrom b: drive with bus=1, unit=0 (index=2) exists" },
        { "-hda", "-hda: requires an argument" },
        { "-drive file=disk.img,if=none,id=a -drive file=b.img,if=none,id=a",
          "-drive file=b.img,if=none,id=a: Duplicate ID 'a' for drive" },
        { "-d bogus", "-d bogus: unknown log category 'bogus'" },
        /* QEMU 7.2's words for -name and -daemonize. */
        { "-name vm,color=red", "-name vm,color=red: Invalid parameter 'color'" },
        { "-name vm,debug-threads=maybe",
          "-name vm,debug-threads=maybe: Parameter 'debug-threads' expects 'on' or 'off'" },
        { "-daemonize -nographic", "-nographic cannot be used with -daemonize" },
        { "-nographic -serial null -daemonize", "-nographic cannot be used with -daemonize" },
        { "-daemonize -serial stdio", "-serial stdio: cannot use stdio with -daemonize" },
        { "-daemonize -serial null -serial mon:stdio",
          "-serial mon:stdio: cannot use stdio with -daemonize" },
        /* Backends are made before serial ports: QEMU names the -chardev. */
        { "-serial stdio -chardev null,id=a -chardev stdio,id=b -daemonize",
          "-chardev stdio,id=b: cannot use stdio with -daemonize" },
        { "-foo -help", "-foo: unknown option" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Parsed *p = parse(cases[i].cmdline);
        if (p->result != CMDLINE_ERROR || !p->error ||
            !g_str_has_prefix(p->error, cases[i].message)) {
            g_error("'%s': expected an error starting with \"%s\", got result %d, \"%s\"",
                    cases[i].cmdline, cases[i].message, p->result,
                    p->error ? p->error : "(none)");
        }
        /* Nothing is left allocated in a failed config. */
        g_assert_null(p->cfg.serials);
        g_assert_null(p->cfg.fw_cfg_items);
        g_assert_null(p->cfg.drives);
        g_assert_null(p->cfg.cpu.model);
        parsed_free(p);
    }
}

static void test_informational(void)
{
    static const struct {
        const char *cmdline;
        const char *output;     /* a line the output must contain */
    } cases[] = {
        { "-h", "-machine [type=]pc" },
        { "-help", "usage: qemu-system-x86_64" },
        { "--help", "-smp [cpus=]N" },
        { "-version", "QEMU emulator version 7.2.0 (qemu-pdl)\n" },
        { "--version", "Copyright" },
        { "-machine help", "pc                   Standard PC (i440FX + PIIX, 1996)" },
        { "-M ?", "pc-i440fx-7.2" },
        { "-machine pc,help", "device-lock=on|off" },
        { "-device help", "name \"isa-debug-exit\"" },
        { "-device help", "name \"isa-serial\", bus ISA, desc \"16550A UART" },
        { "-device help", "name \"pc-testdev\", bus ISA, desc \"QEMU's ISA test device "
          "(ports 0xe0-0xe7, 0x2000, MMIO 0xff000000)\"\n" },
        { "-device help", "name \"pci-testdev\", bus PCI, desc \"QEMU's PCI test device "
          "1b36:0005\"\n" },
        { "-device help", "name \"pdl-testdev\", bus PCI, desc \"our PCI test device "
          "7e57:0001 (MMIO/IO BARs, INTx, MSI, MSI-X, DMA)\"\n" },
        { "-device pci-testdev,help", "pci-testdev options:\n  addr=<int32>           - "
          "Slot and optional function number, example: 06.0 or 06 (default: -1)\n" },
        { "-device pdl-testdev,?", "addr=<int32>" },
        { "-device pc-testdev,help", "There are no options for pc-testdev.\n" },
        { "-device help", "Input devices:\nname \"isa-serial\", bus ISA" },
        { "-device help", "\n\nMisc devices:\nname \"isa-debug-exit\", bus ISA" },
        { "-help", "-fw_cfg [name=]NAME,string=STR|file=PATH" },
        { "-help", "-global DRIVER.PROP=VALUE" },
        { "-device isa-debug-exit,help", "isa-debug-exit options:\n"
          "  iobase=<uint32>        -  (default: 1281)\n"
          "  iosize=<uint32>        -  (default: 2)\n" },
        { "-device isa-serial,help", "  index=<uint32>         -  (default: 4294967295)\n" },
        /* Lines as QEMU 7.2 prints them for the same properties. */
        { "-device help", "name \"e1000\", bus PCI, alias \"e1000-82540em\", desc \"Intel "
          "Gigabit Ethernet\"\n" },
        { "-device help", "name \"virtio-blk-pci\", bus PCI, alias \"virtio-blk\"" },
        { "-device help", "name \"virtio-net-pci\", bus PCI, alias \"virtio-net\"" },
        { "-device virtio-net,help", "virtio-net-pci options:\n" },
        { "-device e1000-82540em,help", "e1000 options:\n" },
        { "-device e1000,help", "  bootindex=<int32>\n" },
        { "-device e1000,help", "  multifunction=<bool>   - on/off (default: false)\n"
          "  netdev=<str>           - ID of a netdev to use as a backend\n"
          "  romfile=<str>\n" },
        { "-device virtio-blk-pci,help", "  num-queues=<uint16>    -  (default: 65535)\n" },
        { "-device virtio-blk-pci,help", "  write-cache=<OnOffAuto> - on/off/auto (default: "
          "\"auto\")\n" },
        { "-device ide-hd,help", "  write-cache=<OnOffAuto> - on/off/auto (default: "
          "\"auto\")\n" },
        { "-device PIIX4_PM,help", "PIIX4_PM options:\n"
          "  disable_s3=<uint8>     -  (default: 0)\n"
          "  disable_s4=<uint8>     -  (default: 0)\n" },
        { "-device kvm-pit,help", "  lost_tick_policy=<LostTickPolicy> -  (default: "
          "\"delay\")\n" },
        { "-device mc146818rtc,help", "  base_year=<int32>      -  (default: 1980)\n" },
        { "-device i8042,help", "  kbd-throttle=<bool>    -  (default: false)\n" },
        { "-netdev help", "Available netdev backend types:\nsocket\ntap\n" },
        { "-netdev type=help", "Available netdev backend types:" },
        { "-nic help", "Available netdev backend types:" },
        { "-nic model=help", "Available NIC models:\n" },
        { "-help", "-netdev tap|socket|user,id=ID" },
        { "-cpu help", "Available CPUs:" },
        { "-cpu help", "qemu64" },
        { "-accel help", "kvm" },
        /* Options are taken in order: the help wins over what follows it. */
        { "-m 512 -help -foo", "-kernel FILE" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Parsed *p = parse(cases[i].cmdline);
        if (p->result != CMDLINE_EXIT_OK || !strstr(p->out, cases[i].output)) {
            g_error("'%s': expected exit-ok with \"%s\", got result %d, output \"%s\"",
                    cases[i].cmdline, cases[i].output, p->result, p->out);
        }
        g_assert_null(p->error);
        parsed_free(p);
    }
}

/* qemu_log_print_help writes to stdout, so look at it from a subprocess. */
static void test_log_help(void)
{
    if (g_test_subprocess()) {
        Parsed *p = parse("-d help");
        g_assert_cmpint(p->result, ==, CMDLINE_EXIT_OK);
        parsed_free(p);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout("*guest_errors*");
}

/* -drive, -hda..-hdd, -cdrom and a bare image become DriveConfigs in
 * order, placed and named as QEMU does, each knowing how it was written. */
static void test_drives(void)
{
    Parsed *p = parse_ok("disk0.img -hdb disk1.img -cdrom cd.iso "
                         "-drive file=d.img,if=none,id=data,cache=none,aio=native");
    GPtrArray *drives = p->cfg.drives;
    g_assert_cmpuint(drives->len, ==, 4);
    static const struct {
        const char *id, *file, *origin;
        int bus, unit;
    } expect[] = {
        { "ide0-hd0", "disk0.img", "disk0.img", 0, 0 },
        { "ide0-hd1", "disk1.img", "-hdb disk1.img", 0, 1 },
        { "ide1-cd0", "cd.iso", "-cdrom cd.iso", 1, 0 },
        { "data", "d.img", "-drive file=d.img,if=none,id=data,cache=none,aio=native", 0, 0 },
    };
    for (guint i = 0; i < drives->len; i++) {
        const DriveConfig *cfg = g_ptr_array_index(drives, i);
        g_assert_cmpstr(cfg->id, ==, expect[i].id);
        g_assert_cmpstr(cfg->file, ==, expect[i].file);
        g_assert_cmpstr(cfg->origin, ==, expect[i].origin);
        g_assert_cmpint(cfg->bus, ==, expect[i].bus);
        g_assert_cmpint(cfg->unit, ==, expect[i].unit);
    }
    g_assert_true(((DriveConfig *)g_ptr_array_index(drives, 2))->read_only);
    parsed_free(p);
}

/* -netdev keeps its options for the backend; -nic makes a netdev and a
 * NIC config; QEMU's default NIC exists exactly when this build has its
 * backend and model. */
static void test_netdevs(void)
{
    Parsed *p = parse_ok("-netdev tap,id=n0,ifname=tap0,script=no -netdev "
                         "socket,id=s1,listen=127.0.0.1:1234");
    g_assert_cmpuint(p->cfg.netdevs->len, ==, 2);
    const NetdevConfig *tap = g_ptr_array_index(p->cfg.netdevs, 0);
    g_assert_cmpstr(tap->type, ==, "tap");
    g_assert_cmpstr(tap->id, ==, "n0");
    g_assert_cmpstr(tap->origin, ==, "-netdev tap,id=n0,ifname=tap0,script=no");
    g_assert_cmpuint(tap->items->len, ==, 2);
    g_assert_cmpstr(netdev_config_get(tap, "ifname"), ==, "tap0");
    g_assert_cmpstr(netdev_config_get(tap, "script"), ==, "no");
    g_assert_cmpuint(p->cfg.nics->len, ==, 0);      /* -netdev alone: no default NIC */
    parsed_free(p);

    p = parse_ok("-nic none");
    g_assert_cmpuint(p->cfg.netdevs->len + p->cfg.nics->len, ==, 0);
    parsed_free(p);
    p = parse_ok("-net none");
    g_assert_cmpuint(p->cfg.netdevs->len + p->cfg.nics->len, ==, 0);
    parsed_free(p);
    p = parse_ok("-nodefaults");
    g_assert_cmpuint(p->cfg.netdevs->len + p->cfg.nics->len, ==, 0);
    parsed_free(p);

    bool can_default = netdev_type_is_known("user") && device_type_find("e1000");
    p = parse_ok("");
    g_assert_cmpuint(p->cfg.nics->len, ==, can_default);
    g_assert_cmpuint(p->cfg.netdevs->len, ==, can_default);
    if (can_default) {
        const DeviceConfig *nic = g_ptr_array_index(p->cfg.nics, 0);
        const NetdevConfig *user = g_ptr_array_index(p->cfg.netdevs, 0);
        g_assert_cmpstr(nic->type->name, ==, "e1000");
        g_assert_cmpstr(user->type, ==, "user");
        g_assert_cmpstr(user->id, ==, "__nic0");
    }
    parsed_free(p);

    if (device_type_find("e1000")) {
        p = parse_ok("-nic tap,id=t0,ifname=tap1,mac=52:54:00:00:00:01 -nic socket,connect=:5");
        g_assert_cmpuint(p->cfg.nics->len, ==, 2);
        const NetdevConfig *first = g_ptr_array_index(p->cfg.netdevs, 0);
        const NetdevConfig *second = g_ptr_array_index(p->cfg.netdevs, 1);
        g_assert_cmpstr(first->id, ==, "t0");
        g_assert_cmpuint(first->items->len, ==, 1);     /* ifname; mac went to the NIC */
        g_assert_cmpstr(second->id, ==, "__nic1");
        parsed_free(p);
    } else {
        p = parse("-nic tap");
        g_assert_cmpint(p->result, ==, CMDLINE_ERROR);
        g_assert_cmpstr(p->error, ==, "-nic tap: Unsupported NIC model: e1000 (try -nic "
                        "model=help)");
        parsed_free(p);
    }
}

static void test_free_twice(void)
{
    Parsed *p = parse_ok("-device isa-debug-exit -cpu host,+avx -kernel k -name n "
                         "-fw_cfg opt/x,string=y");
    machine_config_free(&p->cfg);
    g_assert_null(p->cfg.devices);
    g_assert_null(p->cfg.fw_cfg_items);
    parsed_free(p);     /* frees the config a second time */
}

static const ChardevConfig *chardev_at(const MachineConfig *cfg, guint i)
{
    g_assert_cmpuint(i, <, cfg->chardevs->len);
    return g_ptr_array_index(cfg->chardevs, i);
}

static void assert_monitor(const MachineConfig *cfg, guint i, const char *chardev,
                           MonitorMode mode, bool pretty)
{
    g_assert_cmpuint(i, <, cfg->monitors->len);
    const MonitorConfig *mc = g_ptr_array_index(cfg->monitors, i);
    g_assert_cmpstr(mc->chardev_id, ==, chardev);
    g_assert_cmpint(mc->mode, ==, mode);
    g_assert_cmpint(mc->pretty, ==, pretty);
}

/* -qmp, -qmp-pretty and -mon: chardevs named compat_monitorN as QEMU names
 * them, -chardev socket in -serial's spelling. */
static void test_monitors(void)
{
    Parsed *p = parse_ok("-qmp unix:/tmp/a.sock,server=on,wait=off "
                         "-qmp-pretty tcp:127.0.0.1:4444,server,nowait "
                         "-chardev socket,id=m2,path=/tmp/m2.sock,server=on,wait=off "
                         "-mon chardev=m2,mode=control,pretty=on -mon m2 "
                         "-chardev socket,id=t,host=127.0.0.1,port=5555,server=on,wait=off "
                         "-qmp chardev:t");
    g_assert_cmpstr(chardev_at(&p->cfg, 0)->id, ==, "compat_monitor0");
    g_assert_cmpstr(chardev_at(&p->cfg, 0)->spec, ==, "unix:/tmp/a.sock,server=on,wait=off");
    g_assert_cmpstr(chardev_at(&p->cfg, 1)->id, ==, "compat_monitor1");
    g_assert_cmpstr(chardev_at(&p->cfg, 1)->spec, ==, "tcp:127.0.0.1:4444,server,nowait");
    g_assert_cmpstr(chardev_at(&p->cfg, 2)->spec, ==, "unix:/tmp/m2.sock,server=on,wait=off");
    g_assert_cmpstr(chardev_at(&p->cfg, 3)->spec, ==, "tcp:127.0.0.1:5555,server=on,wait=off");
    g_assert_cmpuint(p->cfg.chardevs->len, ==, 4);
    assert_monitor(&p->cfg, 0, "compat_monitor0", MONITOR_MODE_CONTROL, false);
    assert_monitor(&p->cfg, 1, "compat_monitor1", MONITOR_MODE_CONTROL, true);
    assert_monitor(&p->cfg, 2, "m2", MONITOR_MODE_CONTROL, true);
    assert_monitor(&p->cfg, 3, "m2", MONITOR_MODE_READLINE, false);   /* -mon's default */
    assert_monitor(&p->cfg, 4, "t", MONITOR_MODE_CONTROL, false);
    g_assert_cmpuint(p->cfg.monitors->len, ==, 5);
    parsed_free(p);

    Parsed *serial = parse_ok("-serial unix:/tmp/s.sock,server=on,wait=off");
    g_assert_cmpstr(g_ptr_array_index(serial->cfg.serials, 0), ==,
                    "unix:/tmp/s.sock,server=on,wait=off");
    parsed_free(serial);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cmdline/typical", test_typical_command_line);
    g_test_add_func("/cmdline/defaults", test_defaults);
    g_test_add_func("/cmdline/double-dash", test_double_dash);
    g_test_add_func("/cmdline/memory-sizes", test_memory_sizes);
    g_test_add_func("/cmdline/smp", test_smp_topologies);
    g_test_add_func("/cmdline/cpu-features", test_cpu_features);
    g_test_add_func("/cmdline/machine-properties", test_machine_properties);
    g_test_add_func("/cmdline/serial-defaults", test_serial_defaults);
    g_test_add_func("/cmdline/monitor-options", test_monitor_options);
    g_test_add_func("/cmdline/devices", test_devices);
    g_test_add_func("/cmdline/pci-addresses", test_pci_addresses);
    g_test_add_func("/cmdline/globals", test_globals);
    g_test_add_func("/cmdline/kvm-pit-policy", test_kvm_pit_policy);
    g_test_add_func("/cmdline/board-globals", test_board_globals);
    g_test_add_func("/cmdline/fw-cfg-items", test_fw_cfg_items);
    g_test_add_func("/cmdline/fw-cfg-warning", test_fw_cfg_warning);
    g_test_add_func("/cmdline/strings-and-escapes", test_strings_and_escapes);
    g_test_add_func("/cmdline/name", test_name);
    g_test_add_func("/cmdline/daemonize", test_daemonize);
    g_test_add_func("/cmdline/errors", test_errors);
    g_test_add_func("/cmdline/informational", test_informational);
    g_test_add_func("/cmdline/log-help", test_log_help);
    g_test_add_func("/cmdline/drives", test_drives);
    g_test_add_func("/cmdline/netdevs", test_netdevs);
    g_test_add_func("/cmdline/free-twice", test_free_twice);
    g_test_add_func("/cmdline/monitors", test_monitors);
    return g_test_run();
}
