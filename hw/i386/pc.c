/*
 * The pc machine (hw/i386/pc.h): RAM layout and e820 map, the ISA devices
 * of a PC, the MP table, the directly loaded kernel, KVM vCPUs; and reset.
 */
#include <errno.h>
#include <sys/mman.h>
#include <glib.h>
#include "chardev/char.h"
#include "exec/memory.h"
#include "hw/char/serial.h"
#include "hw/i386/boot.h"
#include "hw/i386/mptable.h"
#include "hw/i386/pc.h"
#include "hw/input/i8042.h"
#include "hw/irq.h"
#include "hw/misc/isa-misc.h"
#include "hw/rtc/mc146818rtc.h"
#include "qemu/error.h"
#include "sysemu/cpuid.h"
#include "sysemu/kvm.h"
#include "sysemu/runstate.h"

/* KVM's real-mode TSS and identity map (accel/kvm) live here. */
#define KVM_PRIVATE_AREA      0xfeffc000ULL
#define KVM_PRIVATE_AREA_SIZE 0x4000ULL
#define EBDA_START            0x9fc00ULL
#define BIOS_AREA_START       0xf0000ULL
#define HIGH_MEMORY_START     0x100000ULL

static const struct {
    uint16_t iobase;
    unsigned gsi;
} com_ports[] = { { 0x3f8, 4 }, { 0x2f8, 3 }, { 0x3e8, 4 }, { 0x2e8, 3 } };

typedef struct PCMachine {
    const MachineConfig *cfg;
    GuestMemory mem;
    E820Table e820;
    MemoryRegion ram_low, ram_high;
    Chardev *serial_backends[G_N_ELEMENTS(com_ports)];
} PCMachine;

static PCMachine pc;

static bool pc_allocate_ram(PCMachine *m, uint64_t ram_size, Error **errp)
{
    uint64_t low = ram_size >= PC_LOWMEM_MAX ? PC_LOWMEM_SPLIT : ram_size;
    uint64_t high = ram_size - low;
    /* One anonymous mapping, reserved lazily: untouched guest RAM costs no
     * host memory. */
    uint8_t *host = mmap(NULL, ram_size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (host == MAP_FAILED) {
        error_setg_errno(errp, errno, "-m: cannot allocate %" G_GUINT64_FORMAT " MiB of guest RAM",
                         ram_size >> 20);
        return false;
    }
    m->mem = (GuestMemory) {
        .host = host, .below_4g = low, .host_high = high ? host + low : NULL, .above_4g = high,
    };
    memory_region_init_ram(&m->ram_low, "pc.ram", low, host);
    address_space_map(address_space_memory, &m->ram_low, 0, 0);
    if (!kvm_add_ram(0, low, host, errp)) {
        return false;
    }
    if (high) {
        memory_region_init_ram(&m->ram_high, "pc.ram-high", high, host + low);
        address_space_map(address_space_memory, &m->ram_high, PC_HIGHMEM_START, 0);
        if (!kvm_add_ram(PC_HIGHMEM_START, high, host + low, errp)) {
            return false;
        }
    }
    return true;
}

static void pc_build_e820(PCMachine *m)
{
    E820Table *t = &m->e820;
    t->count = 0;
    e820_add(t, 0, EBDA_START, E820_RAM);
    e820_add(t, EBDA_START, 0xa0000 - EBDA_START, E820_RESERVED);
    e820_add(t, BIOS_AREA_START, HIGH_MEMORY_START - BIOS_AREA_START, E820_RESERVED);
    e820_add(t, HIGH_MEMORY_START, m->mem.below_4g - HIGH_MEMORY_START, E820_RAM);
    e820_add(t, KVM_PRIVATE_AREA, KVM_PRIVATE_AREA_SIZE, E820_RESERVED);
    if (m->mem.above_4g) {
        e820_add(t, PC_HIGHMEM_START, m->mem.above_4g, E820_RAM);
    }
}

static bool pc_create_serials(const MachineConfig *cfg, Error **errp)
{
    if (cfg->serials->len > G_N_ELEMENTS(com_ports)) {
        error_setg(errp, "-serial: at most %zu serial ports", G_N_ELEMENTS(com_ports));
        return false;
    }
    for (guint i = 0; i < cfg->serials->len; i++) {
        const char *spec = g_ptr_array_index(cfg->serials, i);
        Error *err = NULL;
        Chardev *chr = chardev_new(spec, &err);
        if (err) {
            error_prepend(&err, "-serial %s: ", spec);
            error_propagate(errp, err);
            return false;
        }
        if (!chr) {
            continue;           /* "none": the COM slot stays empty */
        }
        pc.serial_backends[i] = chr;
        if (!isa_serial_new(com_ports[i].iobase, com_ports[i].gsi, chr, errp)) {
            return false;
        }
    }
    return true;
}

static bool pc_create_devices(const MachineConfig *cfg, Error **errp)
{
    if (!pc_create_serials(cfg, errp)) {
        return false;
    }
    RTCState *rtc = rtc_new(8, errp);
    if (!rtc) {
        return false;
    }
    rtc_set_pc_memory_info(rtc, pc.mem.below_4g, pc.mem.above_4g, cfg->smp_cpus);
    port80_new();
    i8042_new();
    for (guint i = 0; i < cfg->devices->len; i++) {
        const DeviceConfig *dev = g_ptr_array_index(cfg->devices, i);
        if (g_str_equal(dev->driver, "isa-debug-exit")) {
            uint16_t iobase = g_ascii_strtoull(g_hash_table_lookup(dev->props, "iobase"), NULL, 0);
            uint16_t iosize = g_ascii_strtoull(g_hash_table_lookup(dev->props, "iosize"), NULL, 0);
            if (!isa_debug_exit_new(iobase, iosize, errp)) {
                return false;
            }
        } else {
            error_setg(errp, "-device %s: not available on the pc machine", dev->driver);
            return false;
        }
    }
    return true;
}

/* Everything a boot or a reset writes into guest RAM and the boot CPU. */
static bool pc_load_boot_state(PCMachine *m, Error **errp)
{
    const MachineConfig *cfg = m->cfg;
    unsigned ncpus = kvm_vcpu_count();
    uint32_t *apic_ids = g_new(uint32_t, ncpus);
    for (unsigned i = 0; i < ncpus; i++) {
        apic_ids[i] = kvm_vcpu_apic_id(i);
    }
    MPTableConfig mp = { .ncpus = ncpus, .apic_ids = apic_ids };
    kvm_cpu_signature(&mp.cpu_signature, &mp.cpu_features);
    bool ok = mptable_build(&m->mem, &mp, NULL, errp);
    g_free(apic_ids);
    if (!ok) {
        return false;
    }
    if (!cfg->kernel) {
        error_setg(errp, "no -kernel given: this VMM has no firmware, so it boots only "
                         "a kernel given with -kernel");
        return false;
    }
    KernelBootConfig boot = {
        .kernel_path = cfg->kernel, .initrd = cfg->initrd, .cmdline = cfg->append,
        .e820 = &m->e820,
    };
    BootCpuState cpu;
    return x86_load_kernel(&boot, &m->mem, &cpu, errp) && kvm_set_boot_state(&cpu, errp);
}

bool pc_machine_start(const MachineConfig *cfg, Error **errp)
{
    pc.cfg = cfg;
    if (!cpuid_check_config(&cfg->cpu, errp) || !kvm_init(cfg->pit, errp) ||
        !pc_allocate_ram(&pc, cfg->ram_size, errp)) {
        return false;
    }
    pc_build_e820(&pc);
    CpuTopology topo = {
        .sockets = cfg->smp_sockets, .cores = cfg->smp_cores, .threads = cfg->smp_threads,
    };
    runstate_set_vcpu_stopper(kvm_request_pause_all);
    return kvm_create_vcpus(cfg->smp_cpus, &cfg->cpu, &topo, errp) &&
           pc_create_devices(cfg, errp) &&
           pc_load_boot_state(&pc, errp) &&
           kvm_start_vcpus(errp);
}

void pc_machine_reset(void)
{
    Error *err = NULL;
    runstate_set(RUN_STATE_RESET);
    kvm_pause_all();
    device_reset_all();
    irq_reset_all();
    if (!kvm_reset_vm(&err) || !pc_load_boot_state(&pc, &err)) {
        error_prepend(&err, "reset failed: ");
        error_report_err(err);
        qemu_system_shutdown_request(1);
        return;
    }
    runstate_set(RUN_STATE_RUNNING);
    kvm_resume_all();
}

void pc_machine_stop(void)
{
    kvm_stop_vcpus();
    /* The guest's last words are still in the backends' buffers. */
    for (size_t i = 0; i < G_N_ELEMENTS(pc.serial_backends); i++) {
        if (pc.serial_backends[i]) {
            chardev_flush(pc.serial_backends[i]);
        }
    }
}
