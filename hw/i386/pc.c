/*
 * The pc machine (hw/i386/pc.h): RAM layout and e820 map, the ISA devices
 * of a PC, the i440FX PCI bus, ACPI and fw_cfg, the MP table, the directly
 * loaded kernel, KVM vCPUs; reset and S3 resume.
 */
#include <errno.h>
#include <sys/stat.h>
#include <string.h>
#include <glib.h>
#include "chardev/char.h"
#include "exec/memory.h"
#include "hw/acpi/acpi.h"
#include "hw/char/serial.h"
#include "hw/i386/boot.h"
#include "hw/i386/mptable.h"
#include "hw/i386/pc-board-devices.h"
#include "hw/i386/pc.h"
#include "hw/ide/ide.h"
#include "hw/input/i8042.h"
#include "hw/irq.h"
#include "hw/misc/isa-misc.h"
#include "hw/nvram/fw_cfg.h"
#include "hw/pci-host/i440fx.h"
#include "hw/qdev-registry.h"
#include "hw/rtc/mc146818rtc.h"
#include "net/net.h"
#include "net/netdev-create.h"
#include "qemu/error.h"
#include "sysemu/cpuid.h"
#include "sysemu/drives.h"
#include "sysemu/guest-ram.h"
#include "sysemu/kvm.h"
#include "sysemu/kvm-irqfd.h"
#include "sysemu/runstate.h"
#include "sysemu/sandbox.h"

/* KVM's real-mode TSS and identity map (accel/kvm) live here. */
#define KVM_PRIVATE_AREA      0xfeffc000ULL
#define KVM_PRIVATE_AREA_SIZE 0x4000ULL
#define EBDA_START            0x9fc00ULL
/* Where a BIOS keeps its tables: ACPI (0xe0000) and MP (0xf0000). */
#define BIOS_AREA_START       ACPI_TABLES_ADDR
#define HIGH_MEMORY_START     0x100000ULL

/* What firmware would give PCI BARs: I/O above the ISA range, memory
 * between the end of low RAM (or 3.5 GiB, whichever is higher) and the
 * IOAPIC. The ACPI host-bridge windows say the same. */
#define PCI_IO_BASE           0xc000
#define PCI_IO_WINDOW_BASE    0x0d00
#define PCI_IO_LIMIT          0xffff
#define PCI_MEM_ASSIGN_BASE   0xe0000000ULL
#define PCI_MEM_LIMIT         (IOAPIC_ADDR - 1)
#define PCI_INTX_GSI_BASE     16

typedef struct PCMachine {
    const MachineConfig *cfg;
    GuestMemory mem;
    E820Table e820;
    MemoryRegion ram_low, ram_high;
    PCIBus *pci_bus;
    AcpiPMState *acpi_pm;       /* NULL with acpi=off */
    FWCfgState *fw_cfg;
    uint64_t rsdp_addr, facs_addr;  /* 0 with acpi=off */
} PCMachine;

static PCMachine pc;

static bool pc_allocate_ram(PCMachine *m, uint64_t ram_size, bool huge_pages, Error **errp)
{
    uint64_t low = ram_size >= PC_LOWMEM_MAX ? PC_LOWMEM_SPLIT : ram_size;
    uint64_t high = ram_size - low;
    /* One mapping for both ranges: PC_LOWMEM_SPLIT and PC_HIGHMEM_START
     * are multiples of 2 MiB, so each guest-physical 2 MiB frame stays on
     * a host one (sysemu/guest-ram.h). */
    uint8_t *host = guest_ram_alloc(ram_size, huge_pages, errp);
    if (!host) {
        return false;
    }
    m->mem = (GuestMemory) {
        .host = host, .below_4g = low, .host_high = high ? host + low : NULL, .above_4g = high,
    };
    /* Mapped RAM becomes KVM memory slots through KVM's listener. */
    memory_region_init_ram(&m->ram_low, "pc.ram", low, host);
    address_space_map(address_space_memory, &m->ram_low, 0, 0);
    if (high) {
        memory_region_init_ram(&m->ram_high, "pc.ram-high", high, host + low);
        address_space_map(address_space_memory, &m->ram_high, PC_HIGHMEM_START, 0);
    }
    return kvm_ram_registered(errp);
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

static void *pc_find_chardev(const char *id)
{
    return chardev_find(id);
}

/* -chardev's backends, which devices (chardev=ID) and -serial chardev:ID
 * name. */
static bool pc_create_chardevs(const MachineConfig *cfg, Error **errp)
{
    device_backend_set_finder(DEVICE_PROP_CHARDEV, pc_find_chardev);
    for (guint i = 0; i < cfg->chardevs->len; i++) {
        const ChardevConfig *c = g_ptr_array_index(cfg->chardevs, i);
        Error *err = NULL;
        if (!chardev_add(c->id, c->spec, &err)) {
            error_prepend(&err, "-chardev id=%s: ", c->id);
            error_propagate(errp, err);
            return false;
        }
    }
    return true;
}

/* The backend of -serial spec as "serialN" (QEMU's name), or the
 * -chardev it names; NULL for "none" (or an error). */
static Chardev *pc_serial_backend(unsigned index, const char *spec, Error **errp)
{
    if (g_str_has_prefix(spec, "chardev:")) {
        const char *id = spec + strlen("chardev:");
        if (!chardev_find(id)) {
            error_setg(errp, "-serial %s: no -chardev with id '%s'", spec, id);
            return NULL;
        }
        return chardev_claim(id, errp) ? chardev_find(id) : NULL;
    }
    if (strcmp(spec, "none") == 0) {
        return NULL;
    }
    g_autofree char *id = g_strdup_printf("serial%u", index);
    Error *err = NULL;
    Chardev *chr = chardev_add(id, spec, &err);
    if (!chr) {
        error_prepend(&err, "-serial %s: ", spec);
        error_propagate(errp, err);
        return NULL;
    }
    /* A fresh id: nobody else can have claimed it. */
    bool claimed = chardev_claim(id, NULL);
    g_assert(claimed);
    return chr;
}

static bool pc_create_serials(const MachineConfig *cfg, Error **errp)
{
    if (cfg->serials->len > ISA_SERIAL_PORTS) {
        error_setg(errp, "-serial: at most %d serial ports", ISA_SERIAL_PORTS);
        return false;
    }
    for (guint i = 0; i < cfg->serials->len; i++) {
        Error *err = NULL;
        Chardev *chr = pc_serial_backend(i, g_ptr_array_index(cfg->serials, i), &err);
        if (err) {
            error_propagate(errp, err);
            return false;
        }
        if (chr && !isa_serial_new_com(i, chr, errp)) {
            return false;
        }
    }
    return true;
}

/*
 * PCI INTx: the PIIX3 swizzle of QEMU's pc machine ((slot + pin - 1) mod 4
 * picks PIRQA-D), but each PIRQ goes straight to its own IOAPIC GSI (16-19)
 * instead of through guest-programmable links to shared ISA IRQs: level
 * lines no ISA device shares, and nothing for the guest to route. The
 * ACPI _PRT and the MP table describe exactly this.
 */
static unsigned pc_pci_map_irq(unsigned slot, unsigned pin)
{
    return PCI_INTX_GSI_BASE + ((slot + pin - 1) & 3);
}

/* A host file as a fw_cfg item with its size under another key. */
static bool pc_fw_cfg_add_file_item(FWCfgState *fw, uint16_t size_key, uint16_t data_key,
                                    const char *path, Error **errp)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        error_setg_errno(errp, errno, "%s", path);
        return false;
    }
    fw_cfg_add_i32(fw, size_key, st.st_size);
    return fw_cfg_add_mapped_file(fw, data_key, path, errp);
}

static bool pc_fw_cfg_add_user_item(FWCfgState *fw, const FwCfgItemConfig *item, Error **errp)
{
    if (item->string) {
        return fw_cfg_add_file(fw, item->name, item->string, strlen(item->string), errp);
    }
    g_autofree char *contents = NULL;
    gsize len;
    GError *gerr = NULL;
    if (!g_file_get_contents(item->file, &contents, &len, &gerr)) {
        error_setg(errp, "-fw_cfg name=%s: %s", item->name, gerr->message);
        g_error_free(gerr);
        return false;
    }
    return fw_cfg_add_file(fw, item->name, contents, len, errp);
}

/* The keys QEMU's pc machine provides about the machine, and the user's
 * -fw_cfg items (checked before anything is loaded). */
static bool pc_fill_fw_cfg(PCMachine *m, const MachineConfig *cfg, Error **errp)
{
    FWCfgState *fw = m->fw_cfg;
    fw_cfg_add_i16(fw, FW_CFG_NB_CPUS, cfg->smp_cpus);
    fw_cfg_add_i16(fw, FW_CFG_MAX_CPUS, cfg->smp_maxcpus);
    fw_cfg_add_i64(fw, FW_CFG_RAM_SIZE, cfg->ram_size);
    fw_cfg_add_i16(fw, FW_CFG_NOGRAPHIC, cfg->nographic);
    for (guint i = 0; i < cfg->fw_cfg_items->len; i++) {
        if (!pc_fw_cfg_add_user_item(fw, g_ptr_array_index(cfg->fw_cfg_items, i), errp)) {
            return false;
        }
    }
    return true;
}

/* The -kernel, -initrd and -append contents, once the loader accepted
 * them: whole files, since there is no option ROM here that would want a
 * bzImage's setup apart from its payload. */
static bool pc_fw_cfg_add_boot_files(PCMachine *m, const MachineConfig *cfg, Error **errp)
{
    FWCfgState *fw = m->fw_cfg;
    const char *cmdline = cfg->append ? cfg->append : "";
    fw_cfg_add_i32(fw, FW_CFG_CMDLINE_ADDR, BOOT_CMDLINE_ADDR);
    fw_cfg_add_i32(fw, FW_CFG_CMDLINE_SIZE, strlen(cmdline) + 1);
    fw_cfg_add_bytes(fw, FW_CFG_CMDLINE_DATA, cmdline, strlen(cmdline) + 1);
    return pc_fw_cfg_add_file_item(fw, FW_CFG_KERNEL_SIZE, FW_CFG_KERNEL_DATA, cfg->kernel,
                                   errp) &&
           (!cfg->initrd || strchr(cfg->initrd, ',') ||
            pc_fw_cfg_add_file_item(fw, FW_CFG_INITRD_SIZE, FW_CFG_INITRD_DATA, cfg->initrd,
                                    errp));
}

static uint64_t pc_pci_mem_base(const PCMachine *m)
{
    return MAX(m->mem.below_4g, PCI_MEM_ASSIGN_BASE);
}

static bool pc_create_devices(PCMachine *m, const MachineConfig *cfg, Error **errp)
{
    if (!pc_create_chardevs(cfg, errp) || !pc_create_serials(cfg, errp)) {
        return false;
    }
    RTCState *rtc = rtc_new(8, errp);
    if (!rtc) {
        return false;
    }
    rtc_set_pc_memory_info(rtc, m->mem.below_4g, m->mem.above_4g, cfg->smp_cpus);
    port80_new();
    i8042_new();
    m->pci_bus = i440fx_init(pc_pci_map_irq, errp);
    if (!m->pci_bus || (cfg->acpi && !(m->acpi_pm = acpi_pm_new(m->pci_bus, errp))) ||
        !(m->fw_cfg = fw_cfg_new(errp)) || !pc_fill_fw_cfg(m, cfg, errp)) {
        return false;
    }
    /* The PIIX3's IDE function is there with or without drives, as on QEMU. */
    DeviceBuses buses = { .pci = m->pci_bus, .ide = piix3_ide_new(m->pci_bus, errp),
                          .boot_cpus = cfg->smp_cpus };
    if (!buses.ide || !drives_open(cfg->drives, errp) ||
        !drives_create_devices(DRIVE_IF_IDE, &buses, errp)) {
        return false;
    }
    /* The backends of -netdev and -nic, then the NICs of -nic and QEMU's
     * default NIC, before -device as on QEMU's pc (they have slots 3 on). */
    if (!netdevs_create(cfg->netdevs, errp)) {
        return false;
    }
    for (guint i = 0; i < cfg->nics->len; i++) {
        if (!device_config_realize(g_ptr_array_index(cfg->nics, i), &buses, errp)) {
            return false;
        }
    }
    /* -device, ISA and PCI alike, after the built-in devices: the first
     * free COM port is the first that no -serial took, as in QEMU. */
    for (guint i = 0; i < cfg->devices->len; i++) {
        if (!device_config_realize(g_ptr_array_index(cfg->devices, i), &buses, errp)) {
            return false;
        }
    }
    netdevs_warn_unclaimed(cfg->netdevs);
    netdevs_detach_unused_queues();
    /* if=virtio drives after the -device options: QEMU adds their devices
     * to the end of the list, so they take the next free PCI slots. */
    if (!drives_create_devices(DRIVE_IF_VIRTIO, &buses, errp)) {
        return false;
    }
    if (m->acpi_pm) {
        acpi_pm_machine_done(m->acpi_pm);
    }
    return pci_bus_assign_resources(m->pci_bus, PCI_IO_BASE, PCI_IO_LIMIT,
                                    pc_pci_mem_base(m), PCI_MEM_LIMIT, errp);
}

static bool pc_build_acpi_tables(PCMachine *m, const uint32_t *apic_ids, unsigned ncpus,
                                 uint8_t ioapic_id, Error **errp)
{
    const PIIX4PMOptions *pm = board_device_options(m->cfg->board_globals, &piix4_pm_type);
    AcpiTablesConfig acpi = {
        .ncpus = ncpus, .apic_ids = apic_ids, .ioapic_id = ioapic_id,
        .pci_io_base = PCI_IO_WINDOW_BASE, .pci_io_limit = PCI_IO_LIMIT,
        .pci_mem_base = m->mem.below_4g, .pci_mem_limit = PCI_MEM_LIMIT,
        .pci_map_irq = pc_pci_map_irq, .fw_cfg = true,
        .disable_s3 = pm->disable_s3, .disable_s4 = pm->disable_s4,
    };
    return acpi_build_tables(&m->mem, &acpi, &m->rsdp_addr, &m->facs_addr, errp);
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
    MPTableConfig mp = { .ncpus = ncpus, .apic_ids = apic_ids, .pci_map_irq = pc_pci_map_irq };
    kvm_cpu_signature(&mp.cpu_signature, &mp.cpu_features);
    uint8_t ioapic_id;
    bool ok = mptable_build(&m->mem, &mp, &ioapic_id, errp) &&
              (!cfg->acpi || pc_build_acpi_tables(m, apic_ids, ncpus, ioapic_id, errp));
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
        .e820 = &m->e820, .rsdp_addr = m->rsdp_addr,
    };
    BootCpuState cpu;
    return x86_load_kernel(&boot, &m->mem, &cpu, errp) && kvm_set_boot_state(&cpu, errp);
}

static bool pc_machine_reset(void);
static bool pc_machine_wakeup(void);
static void pc_machine_powerdown(void);

bool pc_machine_start(const MachineConfig *cfg, Error **errp)
{
    pc.cfg = cfg;
    const KVMPitOptions *pit = board_device_options(cfg->board_globals, &kvm_pit_type);
    bool pit_discard = pit->lost_tick_policy == LOST_TICK_POLICY_DISCARD;
    if (!cpuid_check_config(&cfg->cpu, errp) || !kvm_init(cfg->pit, pit_discard, errp) ||
        !pc_allocate_ram(&pc, cfg->ram_size, cfg->ram_thp, errp)) {
        return false;
    }
    pc_build_e820(&pc);
    CpuTopology topo = {
        .sockets = cfg->smp_sockets, .cores = cfg->smp_cores, .threads = cfg->smp_threads,
    };
    runstate_set_vcpu_stopper(kvm_request_pause_all);
    runstate_set_machine_ops(&(MachineRunOps) {
        .pause_vcpus = kvm_pause_all, .resume_vcpus = kvm_resume_all,
        .reset = pc_machine_reset, .wakeup = pc_machine_wakeup,
        .powerdown = pc_machine_powerdown,
    });
    return kvm_create_vcpus(cfg->smp_cpus, &cfg->cpu, &topo, errp) &&
           pc_create_devices(&pc, cfg, errp) &&
           pc_load_boot_state(&pc, errp) &&
           pc_fw_cfg_add_boot_files(&pc, cfg, errp) &&
           sandbox_install(&cfg->sandbox, errp) &&
           kvm_start_vcpus(errp);
}

/*
 * What a reset and an S3 wake-up share, with every vCPU paused: devices and
 * interrupt lines to power-on state, the KVM VM created anew with the same
 * RAM, then start_cpu sets the boot CPU up. A failure ends the VMM.
 * Whether the vCPUs run again is the run-state machine's decision
 * (softmmu/runstate-actions.c).
 */
static bool pc_power_cycle(bool (*start_cpu)(PCMachine *m, Error **errp), const char *what)
{
    Error *err = NULL;
    device_reset_all();
    irq_reset_all();
    if (!kvm_reset_vm(&err) || !start_cpu(&pc, &err)) {
        error_prepend(&err, "%s failed: ", what);
        error_report_err(err);
        qemu_system_exit_request(1);
        return false;
    }
    return true;
}

static bool pc_machine_reset(void)
{
    return pc_power_cycle(pc_load_boot_state, "reset");
}

/* FACS.Firmware_Waking_Vector (ACPI 6.4, 5.2.10): real-mode address. */
#define FACS_WAKING_VECTOR_OFFSET 12

static uint32_t pc_facs_waking_vector(PCMachine *m)
{
    uint32_t *vector = guest_memory_ptr(&m->mem, m->facs_addr + FACS_WAKING_VECTOR_OFFSET,
                                        sizeof(*vector));
    return vector ? *vector : 0;
}

static bool pc_resume_from_s3(PCMachine *m, Error **errp)
{
    uint32_t vector = pc_facs_waking_vector(m);
    if (!vector) {
        /* Nothing to resume: firmware would boot afresh. */
        return pc_load_boot_state(m, errp);
    }
    acpi_pm_set_woken(m->acpi_pm, true);
    /* As SeaBIOS, through which QEMU's guests wake: CS:IP from the vector,
     * the data segments 0 (resume code written for QEMU reads low memory
     * through DS). */
    BootCpuState cpu = {
        .mode = BOOT_CPU_REAL16,
        .code_selector = vector >> 4, .data_selector = 0,
        .rip = vector & 0xf,
    };
    return kvm_set_boot_state(&cpu, errp);
}

/* Only the RTC alarm wakes this machine, if the guest enabled it. */
static bool pc_machine_wakeup(void)
{
    return pc.acpi_pm && acpi_pm_rtc_wake_enabled(pc.acpi_pm) &&
           pc_power_cycle(pc_resume_from_s3, "resume from S3");
}

/* Without ACPI there is no power button: QEMU sends POWERDOWN all the
 * same, and nothing follows. */
static void pc_machine_powerdown(void)
{
    if (pc.acpi_pm) {
        acpi_pm_power_button(pc.acpi_pm);
    }
}

void pc_machine_stop(void)
{
    kvm_stop_vcpus();
    device_drain_all();
    /* No interrupt injected into a VM whose vCPUs are gone. */
    kvm_irqfd_remove_all();
    drives_close_all();
    /* The guest's last words are still in the backends' buffers. */
    chardev_flush_all();
}
