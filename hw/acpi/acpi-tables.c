/*
 * The pc machine's ACPI tables (ACPI 6.4, chapter 5), laid out from
 * ACPI_TABLES_ADDR in one pass:
 *
 *   RSDP (36 bytes, 16-aligned, where Linux scans the BIOS area)
 *   FACS (64-aligned, as the spec requires)
 *   DSDT, FADT, MADT, RSDT, XSDT (16-aligned)
 *
 * Each table is built into a host buffer, patched with the addresses of
 * the tables it points at, checksummed, and the whole area copied into
 * guest RAM at once, so that a failure leaves guest RAM untouched.
 *
 * The FADT is the ACPI 2.0 layout (revision 3, 244 bytes): the last one
 * without hardware-reduced or sleep-register fields, which Linux parses
 * with no complaints, and the one QEMU's pc machine also uses.
 */
#include <stddef.h>
#include <string.h>
#include <glib.h>
#include "hw/acpi/acpi.h"
#include "hw/acpi/aml-build.h"
#include "qemu/bytesum.h"
#include "hw/i386/mptable.h"
#include "hw/input/i8042.h"
#include "hw/irq.h"
#include "hw/nvram/fw_cfg.h"
#include "hw/pci-host/i440fx.h"
#include "hw/rtc/mc146818rtc.h"

#define ACPI_OEM_ID             "PDLVMM"
#define ACPI_OEM_TABLE_ID       "PDLVMMPC"
#define ACPI_CREATOR_ID         "PDLV"
#define ACPI_OEM_REVISION       1
#define ACPI_CREATOR_REVISION   1

#define ACPI_TABLE_ALIGN        16
#define ACPI_FACS_ALIGN         64

#define ACPI_RSDP_REVISION      2       /* ACPI 2.0+: XSDT address present */
#define ACPI_RSDP_V1_LENGTH     20      /* what the first checksum covers */
#define ACPI_SDT_LIST_REVISION  1       /* RSDT and XSDT */
#define ACPI_FADT_REVISION      3
#define ACPI_FACS_VERSION       2
#define ACPI_MADT_REVISION      3
#define ACPI_DSDT_REVISION      2       /* 64-bit AML integers */

/* Generic Address Structure (5.2.3.2). */
#define ACPI_GAS_SYSTEM_IO      1
#define ACPI_GAS_ACCESS_BYTE    1
#define ACPI_GAS_ACCESS_WORD    2
#define ACPI_GAS_ACCESS_DWORD   3

/* FADT flags (table 5.10) and IA-PC boot architecture flags (5.11). */
#define ACPI_FADT_WBINVD        (1u << 0)
#define ACPI_FADT_PROC_C1       (1u << 2)
#define ACPI_FADT_SLP_BUTTON    (1u << 5)   /* no fixed-feature sleep button */
#define ACPI_FADT_RESET_REG_SUP (1u << 10)
#define ACPI_IAPC_LEGACY_DEVICES (1u << 0)
#define ACPI_IAPC_8042          (1u << 1)
/* P_LVLx_LAT above 100 / 1000 us: C2 / C3 not supported. */
#define ACPI_FADT_NO_C2_LATENCY 0x0fff
#define ACPI_FADT_NO_C3_LATENCY 0x0fff
#define ACPI_RESET_VALUE        (PIIX3_RCR_RESET_CPU | PIIX3_RCR_SYSTEM_RESET)

/* MADT (5.2.12). */
#define ACPI_MADT_PCAT_COMPAT   (1u << 0)
#define ACPI_MADT_LAPIC         0
#define ACPI_MADT_IOAPIC        1
#define ACPI_MADT_ISO           2
#define ACPI_MADT_LAPIC_NMI     4
#define ACPI_MADT_LAPIC_ENABLED (1u << 0)
#define ACPI_MADT_ALL_PROCESSORS 0xff
#define ACPI_MADT_MAX_APIC_ID   0xfe    /* 0xff is the xAPIC broadcast */
#define ACPI_MADT_LINT1         1
/* MPS INTI flags: polarity bits 1:0, trigger mode bits 3:2. */
#define ACPI_MPS_CONFORMS       0x0
#define ACPI_MPS_ACTIVE_HIGH    0x1
#define ACPI_MPS_LEVEL          (0x3 << 2)
#define ACPI_ISA_BUS            0
#define ACPI_PIT_IRQ            0
#define ACPI_PIT_GSI            2

/* Legacy devices under the ISA bridge (PIIX3 at 00:01.0). */
#define ACPI_COM1_BASE          0x3f8
#define ACPI_COM1_LEN           8
#define ACPI_COM1_IRQ           4
#define ACPI_RTC_LEN            2
#define ACPI_FW_CFG_IO_LEN      0x0c    /* selector, data and DMA address */
#define ACPI_STA_PRESENT_ENABLED_FUNCTIONING 0x0b

/* PCI host bridge windows (the config ports 0xcf8-0xcff sit between). */
#define ACPI_PCI_IO_LOW_LIMIT   (I440FX_CONFIG_ADDRESS - 1)
#define ACPI_PCI_CONFIG_PORTS   8
#define ACPI_PCI_IO_HIGH_BASE   0x0d00
#define ACPI_VGA_MEM_BASE       0x000a0000
#define ACPI_VGA_MEM_LIMIT      0x000bffff
#define ACPI_PCI_SLOT_FIRST     1       /* slot 0 is the host bridge */
#define ACPI_PCI_PINS           4

typedef struct __attribute__((packed)) AcpiTableHeader {
    char signature[4];
    uint32_t length;
    uint8_t revision;
    uint8_t checksum;
    char oem_id[6];
    char oem_table_id[8];
    uint32_t oem_revision;
    char creator_id[4];
    uint32_t creator_revision;
} AcpiTableHeader;

typedef struct __attribute__((packed)) AcpiRsdp {
    char signature[8];          /* "RSD PTR " */
    uint8_t checksum;           /* first 20 bytes */
    char oem_id[6];
    uint8_t revision;
    uint32_t rsdt_address;
    uint32_t length;
    uint64_t xsdt_address;
    uint8_t extended_checksum;  /* whole structure */
    uint8_t reserved[3];
} AcpiRsdp;

typedef struct __attribute__((packed)) AcpiGas {
    uint8_t space_id;
    uint8_t bit_width;
    uint8_t bit_offset;
    uint8_t access_size;
    uint64_t address;
} AcpiGas;

typedef struct __attribute__((packed)) AcpiFadt {
    AcpiTableHeader header;
    uint32_t firmware_ctrl;
    uint32_t dsdt;
    uint8_t reserved1;
    uint8_t preferred_pm_profile;
    uint16_t sci_int;
    uint32_t smi_cmd;
    uint8_t acpi_enable, acpi_disable, s4bios_req, pstate_cnt;
    uint32_t pm1a_evt_blk, pm1b_evt_blk;
    uint32_t pm1a_cnt_blk, pm1b_cnt_blk;
    uint32_t pm2_cnt_blk;
    uint32_t pm_tmr_blk;
    uint32_t gpe0_blk, gpe1_blk;
    uint8_t pm1_evt_len, pm1_cnt_len, pm2_cnt_len, pm_tmr_len;
    uint8_t gpe0_blk_len, gpe1_blk_len, gpe1_base, cst_cnt;
    uint16_t p_lvl2_lat, p_lvl3_lat;
    uint16_t flush_size, flush_stride;
    uint8_t duty_offset, duty_width;
    uint8_t day_alrm, mon_alrm, century;
    uint16_t iapc_boot_arch;
    uint8_t reserved2;
    uint32_t flags;
    AcpiGas reset_reg;
    uint8_t reset_value;
    uint8_t reserved3[3];
    uint64_t x_firmware_ctrl;
    uint64_t x_dsdt;
    AcpiGas x_pm1a_evt_blk, x_pm1b_evt_blk;
    AcpiGas x_pm1a_cnt_blk, x_pm1b_cnt_blk;
    AcpiGas x_pm2_cnt_blk;
    AcpiGas x_pm_tmr_blk;
    AcpiGas x_gpe0_blk, x_gpe1_blk;
} AcpiFadt;

typedef struct __attribute__((packed)) AcpiFacs {
    char signature[4];
    uint32_t length;
    uint32_t hardware_signature;
    uint32_t firmware_waking_vector;
    uint32_t global_lock;
    uint32_t flags;
    uint64_t x_firmware_waking_vector;
    uint8_t version;
    uint8_t reserved[3];
    uint32_t ospm_flags;
    uint8_t reserved2[24];
} AcpiFacs;

typedef struct __attribute__((packed)) AcpiMadt {
    AcpiTableHeader header;
    uint32_t lapic_address;
    uint32_t flags;
} AcpiMadt;

typedef struct __attribute__((packed)) AcpiMadtLapic {
    uint8_t type, length;
    uint8_t processor_uid;
    uint8_t apic_id;
    uint32_t flags;
} AcpiMadtLapic;

typedef struct __attribute__((packed)) AcpiMadtIoapic {
    uint8_t type, length;
    uint8_t ioapic_id;
    uint8_t reserved;
    uint32_t address;
    uint32_t gsi_base;
} AcpiMadtIoapic;

typedef struct __attribute__((packed)) AcpiMadtIso {
    uint8_t type, length;
    uint8_t bus;
    uint8_t source;
    uint32_t gsi;
    uint16_t flags;
} AcpiMadtIso;

typedef struct __attribute__((packed)) AcpiMadtLapicNmi {
    uint8_t type, length;
    uint8_t processor_uid;
    uint16_t flags;
    uint8_t lint;
} AcpiMadtLapicNmi;

_Static_assert(sizeof(AcpiTableHeader) == 36, "ACPI table header is 36 bytes");
_Static_assert(sizeof(AcpiRsdp) == 36, "RSDP is 36 bytes");
_Static_assert(sizeof(AcpiGas) == 12, "GAS is 12 bytes");
_Static_assert(sizeof(AcpiFadt) == 244, "FADT revision 3 is 244 bytes");
_Static_assert(offsetof(AcpiFadt, reset_reg) == 116, "FADT RESET_REG offset");
_Static_assert(offsetof(AcpiFadt, x_dsdt) == 140, "FADT X_DSDT offset");
_Static_assert(sizeof(AcpiFacs) == 64, "FACS is 64 bytes");
_Static_assert(sizeof(AcpiMadt) == 44, "MADT header is 44 bytes");
_Static_assert(sizeof(AcpiMadtLapic) == 8, "MADT local APIC entry is 8 bytes");
_Static_assert(sizeof(AcpiMadtIoapic) == 12, "MADT I/O APIC entry is 12 bytes");
_Static_assert(sizeof(AcpiMadtIso) == 10, "MADT interrupt source override is 10 bytes");
_Static_assert(sizeof(AcpiMadtLapicNmi) == 6, "MADT local APIC NMI entry is 6 bytes");

/* ---- the area being built ---- */

/* The tables in host memory, offsets relative to ACPI_TABLES_ADDR. */
typedef struct AcpiArea {
    GByteArray *bytes;
} AcpiArea;

/* Zero-filled space for len bytes at the next multiple of align. */
static size_t area_reserve(AcpiArea *area, size_t len, size_t align)
{
    size_t offset = (area->bytes->len + align - 1) / align * align;
    size_t old_len = area->bytes->len;
    g_byte_array_set_size(area->bytes, offset + len);
    memset(area->bytes->data + old_len, 0, offset + len - old_len);
    return offset;
}

static void *area_at(AcpiArea *area, size_t offset)
{
    return area->bytes->data + offset;
}

static uint32_t area_address(size_t offset)
{
    return ACPI_TABLES_ADDR + offset;
}

/* Reserve a table of len bytes and fill in its header, all but the
 * checksum (table_seal() does that once the contents are final). */
static size_t table_new(AcpiArea *area, const char *signature, uint8_t revision, size_t len)
{
    size_t offset = area_reserve(area, len, ACPI_TABLE_ALIGN);
    AcpiTableHeader *h = area_at(area, offset);
    memcpy(h->signature, signature, sizeof(h->signature));
    h->length = len;
    h->revision = revision;
    memcpy(h->oem_id, ACPI_OEM_ID, sizeof(h->oem_id));
    memcpy(h->oem_table_id, ACPI_OEM_TABLE_ID, sizeof(h->oem_table_id));
    h->oem_revision = ACPI_OEM_REVISION;
    memcpy(h->creator_id, ACPI_CREATOR_ID, sizeof(h->creator_id));
    h->creator_revision = ACPI_CREATOR_REVISION;
    return offset;
}

static void table_seal(AcpiArea *area, size_t offset)
{
    AcpiTableHeader *h = area_at(area, offset);
    h->checksum = 0;
    h->checksum = byte_sum_checksum(h, h->length);
}

/* ---- DSDT ---- */

static Aml *aml_device_with_hid(const char *name, const char *eisaid)
{
    Aml *dev = aml_device(name);
    aml_append(dev, aml_name_decl("_HID", aml_eisaid(eisaid)));
    return dev;
}

static Aml *aml_isa_device(const char *name, const char *eisaid, Aml *crs)
{
    Aml *dev = aml_device_with_hid(name, eisaid);
    aml_append(dev, aml_name_decl("_CRS", crs));
    return dev;
}

static Aml *dsdt_isa_bridge(void)
{
    Aml *isa = aml_device("ISA");
    aml_append(isa, aml_name_decl("_ADR", aml_int(PCI_SLOT(PIIX3_DEVFN) << 16 |
                                                  PCI_FUNC(PIIX3_DEVFN))));

    Aml *crs = aml_resource_template();
    aml_append(crs, aml_io(RTC_ISA_BASE, RTC_ISA_BASE, 1, ACPI_RTC_LEN));
    aml_append(crs, aml_irq_no_flags(RTC_ISA_GSI));
    aml_append(isa, aml_isa_device("RTC", "PNP0B00", crs));

    crs = aml_resource_template();
    aml_append(crs, aml_io(I8042_DATA_PORT, I8042_DATA_PORT, 1, 1));
    aml_append(crs, aml_io(I8042_CMD_PORT, I8042_CMD_PORT, 1, 1));
    aml_append(crs, aml_irq_no_flags(I8042_KBD_GSI));
    aml_append(isa, aml_isa_device("KBD", "PNP0303", crs));

    /* Without a PS/2 mouse node Linux turns the i8042 aux port off. */
    crs = aml_resource_template();
    aml_append(crs, aml_irq_no_flags(I8042_AUX_GSI));
    aml_append(isa, aml_isa_device("MOU", "PNP0F13", crs));

    crs = aml_resource_template();
    aml_append(crs, aml_io(ACPI_COM1_BASE, ACPI_COM1_BASE, 1, ACPI_COM1_LEN));
    aml_append(crs, aml_irq_no_flags(ACPI_COM1_IRQ));
    Aml *com1 = aml_isa_device("COM1", "PNP0501", crs);
    aml_append(com1, aml_name_decl("_UID", aml_int(1)));
    aml_append(isa, com1);
    return isa;
}

/* The PIIX4 PM function, named as on QEMU's DSDT (which also declares its
 * config space as an operation region that nothing uses). */
static Aml *dsdt_pm_function(void)
{
    Aml *dev = aml_device("PX13");
    aml_append(dev, aml_name_decl("_ADR", aml_int(PCI_SLOT(PIIX4_PM_DEVFN) << 16 |
                                                  PCI_FUNC(PIIX4_PM_DEVFN))));
    return dev;
}

static Aml *dsdt_fw_cfg(void)
{
    Aml *dev = aml_device("FWCF");
    aml_append(dev, aml_name_decl("_HID", aml_string("QEMU0002")));
    aml_append(dev, aml_name_decl("_STA", aml_int(ACPI_STA_PRESENT_ENABLED_FUNCTIONING)));
    Aml *crs = aml_resource_template();
    aml_append(crs, aml_io(FW_CFG_IO_BASE, FW_CFG_IO_BASE, 1, ACPI_FW_CFG_IO_LEN));
    aml_append(dev, aml_name_decl("_CRS", crs));
    return dev;
}

static Aml *dsdt_pci_crs(const AcpiTablesConfig *cfg)
{
    Aml *crs = aml_resource_template();
    aml_append(crs, aml_word_bus_number(0, 0xff));
    aml_append(crs, aml_io(I440FX_CONFIG_ADDRESS, I440FX_CONFIG_ADDRESS, 1,
                           ACPI_PCI_CONFIG_PORTS));
    aml_append(crs, aml_word_io(0, ACPI_PCI_IO_LOW_LIMIT));
    aml_append(crs, aml_word_io(ACPI_PCI_IO_HIGH_BASE, cfg->pci_io_limit));
    aml_append(crs, aml_dword_memory(AML_CACHEABLE, ACPI_VGA_MEM_BASE, ACPI_VGA_MEM_LIMIT));
    aml_append(crs, aml_dword_memory(AML_NON_CACHEABLE, cfg->pci_mem_base, cfg->pci_mem_limit));
    return crs;
}

/*
 * _PRT entries in the GSI form (source Zero, source index = GSI): no
 * interrupt link devices to program, the routing is fixed by the machine.
 */
static Aml *dsdt_pci_prt(const AcpiTablesConfig *cfg, Error **errp)
{
    Aml *prt = aml_package();
    for (unsigned slot = ACPI_PCI_SLOT_FIRST; slot < PCI_SLOT_MAX; slot++) {
        for (unsigned pin = 1; pin <= ACPI_PCI_PINS; pin++) {
            unsigned gsi = cfg->pci_map_irq(slot, pin);
            if (gsi >= IRQ_MAX_GSI) {
                error_setg(errp, "ACPI _PRT: PCI slot %u pin %u maps to GSI %u, "
                           "past the I/O APIC's last input %u", slot, pin, gsi,
                           IRQ_MAX_GSI - 1);
                aml_free(prt);
                return NULL;
            }
            Aml *entry = aml_package();
            aml_append(entry, aml_int((uint64_t)slot << 16 | 0xffff));
            aml_append(entry, aml_int(pin - 1));
            aml_append(entry, aml_int(0));
            aml_append(entry, aml_int(gsi));
            aml_append(prt, entry);
        }
    }
    return prt;
}

static Aml *dsdt_pci_host(const AcpiTablesConfig *cfg, Error **errp)
{
    Aml *prt = dsdt_pci_prt(cfg, errp);
    if (!prt) {
        return NULL;
    }
    Aml *pci = aml_device_with_hid("PCI0", "PNP0A03");
    aml_append(pci, aml_name_decl("_ADR", aml_int(0)));
    aml_append(pci, aml_name_decl("_UID", aml_int(0)));
    aml_append(pci, aml_name_decl("_BBN", aml_int(0)));
    aml_append(pci, aml_name_decl("_CRS", dsdt_pci_crs(cfg)));
    aml_append(pci, aml_name_decl("_PRT", prt));
    aml_append(pci, dsdt_isa_bridge());
    aml_append(pci, dsdt_pm_function());
    if (cfg->fw_cfg) {
        aml_append(pci, dsdt_fw_cfg());
    }
    return pci;
}

/* Processor devices; _UID matches the MADT entry's processor UID. */
static void dsdt_processors(Aml *sb, const AcpiTablesConfig *cfg)
{
    for (unsigned i = 0; i < cfg->ncpus; i++) {
        char name[5];
        g_snprintf(name, sizeof(name), "C%03X", i);
        Aml *cpu = aml_device(name);
        aml_append(cpu, aml_name_decl("_HID", aml_string("ACPI0007")));
        aml_append(cpu, aml_name_decl("_UID", aml_int(i)));
        aml_append(sb, cpu);
    }
}

/* \_Sx: PM1a and PM1b SLP_TYP, two reserved fields. */
static Aml *dsdt_sleep_state(const char *name, uint8_t slp_typ)
{
    Aml *pkg = aml_package();
    aml_append(pkg, aml_int(slp_typ));
    aml_append(pkg, aml_int(slp_typ));
    aml_append(pkg, aml_int(0));
    aml_append(pkg, aml_int(0));
    return aml_name_decl(name, pkg);
}

static uint8_t *dsdt_build_aml(const AcpiTablesConfig *cfg, size_t *len, Error **errp)
{
    Aml *pci = dsdt_pci_host(cfg, errp);
    if (!pci) {
        return NULL;
    }
    Aml *sb = aml_scope("\\_SB");
    aml_append(sb, pci);
    dsdt_processors(sb, cfg);

    Aml *dsdt = aml_term_list();
    aml_append(dsdt, sb);
    /* PIIX4_PM.disable_s3/s4: without the package the OS offers no such
     * state, as with QEMU. */
    if (!cfg->disable_s3) {
        aml_append(dsdt, dsdt_sleep_state("_S3", ACPI_SLP_TYP_S3));
    }
    if (!cfg->disable_s4) {
        aml_append(dsdt, dsdt_sleep_state("_S4", ACPI_SLP_TYP_S4));
    }
    aml_append(dsdt, dsdt_sleep_state("_S5", ACPI_SLP_TYP_S5));
    /* The OS reports its interrupt model; with fixed routing there is
     * nothing to switch. */
    aml_append(dsdt, aml_method("_PIC", 1, false));
    return aml_finish(dsdt, len);
}

/* The DSDT's offset, or 0 on error (offset 0 holds the RSDP). */
static size_t build_dsdt(AcpiArea *area, const AcpiTablesConfig *cfg, Error **errp)
{
    size_t aml_len;
    uint8_t *aml = dsdt_build_aml(cfg, &aml_len, errp);
    if (!aml) {
        return 0;
    }
    size_t offset = table_new(area, "DSDT", ACPI_DSDT_REVISION,
                              sizeof(AcpiTableHeader) + aml_len);
    memcpy(area_at(area, offset + sizeof(AcpiTableHeader)), aml, aml_len);
    g_free(aml);
    table_seal(area, offset);
    return offset;
}

/* ---- FACS, FADT, MADT ---- */

static size_t build_facs(AcpiArea *area)
{
    size_t offset = area_reserve(area, sizeof(AcpiFacs), ACPI_FACS_ALIGN);
    AcpiFacs *facs = area_at(area, offset);
    memcpy(facs->signature, "FACS", sizeof(facs->signature));
    facs->length = sizeof(AcpiFacs);
    facs->version = ACPI_FACS_VERSION;
    return offset;
}

static AcpiGas acpi_gas_io(uint16_t port, unsigned len, uint8_t access_size)
{
    return (AcpiGas){
        .space_id = ACPI_GAS_SYSTEM_IO,
        .bit_width = len * 8,
        .access_size = access_size,
        .address = port,
    };
}

static size_t build_fadt(AcpiArea *area, size_t facs, size_t dsdt)
{
    size_t offset = table_new(area, "FACP", ACPI_FADT_REVISION, sizeof(AcpiFadt));
    AcpiFadt *f = area_at(area, offset);
    f->firmware_ctrl = area_address(facs);
    f->dsdt = area_address(dsdt);
    f->x_firmware_ctrl = f->firmware_ctrl;
    f->x_dsdt = f->dsdt;
    f->sci_int = ACPI_SCI_IRQ;
    /* smi_cmd 0: no SMI command port, the machine is always in ACPI mode. */

    const uint16_t pm1_evt = ACPI_PM_BASE;
    const uint16_t pm1_cnt = ACPI_PM_BASE + ACPI_PM1_CNT_OFFSET;
    const uint16_t pm_tmr = ACPI_PM_BASE + ACPI_PM_TMR_OFFSET;
    f->pm1a_evt_blk = pm1_evt;
    f->pm1a_cnt_blk = pm1_cnt;
    f->pm_tmr_blk = pm_tmr;
    f->pm1_evt_len = ACPI_PM1_EVT_LEN;
    f->pm1_cnt_len = ACPI_PM1_CNT_LEN;
    f->pm_tmr_len = ACPI_PM_TMR_LEN;
    f->x_pm1a_evt_blk = acpi_gas_io(pm1_evt, ACPI_PM1_EVT_LEN, ACPI_GAS_ACCESS_WORD);
    f->x_pm1a_cnt_blk = acpi_gas_io(pm1_cnt, ACPI_PM1_CNT_LEN, ACPI_GAS_ACCESS_WORD);
    f->x_pm_tmr_blk = acpi_gas_io(pm_tmr, ACPI_PM_TMR_LEN, ACPI_GAS_ACCESS_DWORD);

    f->p_lvl2_lat = ACPI_FADT_NO_C2_LATENCY;
    f->p_lvl3_lat = ACPI_FADT_NO_C3_LATENCY;
    f->century = RTC_CENTURY;
    f->iapc_boot_arch = ACPI_IAPC_LEGACY_DEVICES | ACPI_IAPC_8042;
    f->flags = ACPI_FADT_WBINVD | ACPI_FADT_PROC_C1 | ACPI_FADT_SLP_BUTTON |
               ACPI_FADT_RESET_REG_SUP;
    f->reset_reg = acpi_gas_io(PIIX3_RESET_CONTROL, 1, ACPI_GAS_ACCESS_BYTE);
    f->reset_value = ACPI_RESET_VALUE;
    table_seal(area, offset);
    return offset;
}

/* ISA IRQ -> GSI overrides: the PIT on pin 2 (as every PC chipset wires
 * it), and the SCI level-triggered, active high (ACPI's default for the
 * SCI is level, active low; our line is active high, as in QEMU). */
static const AcpiMadtIso madt_overrides[] = {
    { ACPI_MADT_ISO, sizeof(AcpiMadtIso), ACPI_ISA_BUS, ACPI_PIT_IRQ, ACPI_PIT_GSI,
      ACPI_MPS_CONFORMS },
    { ACPI_MADT_ISO, sizeof(AcpiMadtIso), ACPI_ISA_BUS, ACPI_SCI_IRQ, ACPI_SCI_IRQ,
      ACPI_MPS_ACTIVE_HIGH | ACPI_MPS_LEVEL },
};

static size_t build_madt(AcpiArea *area, const AcpiTablesConfig *cfg)
{
    size_t len = sizeof(AcpiMadt) + cfg->ncpus * sizeof(AcpiMadtLapic) +
                 sizeof(AcpiMadtIoapic) + sizeof(madt_overrides) + sizeof(AcpiMadtLapicNmi);
    size_t offset = table_new(area, "APIC", ACPI_MADT_REVISION, len);
    AcpiMadt *madt = area_at(area, offset);
    madt->lapic_address = LAPIC_ADDR;
    madt->flags = ACPI_MADT_PCAT_COMPAT;

    uint8_t *entry = (uint8_t *)(madt + 1);
    for (unsigned i = 0; i < cfg->ncpus; i++) {
        AcpiMadtLapic lapic = {
            .type = ACPI_MADT_LAPIC, .length = sizeof(lapic),
            .processor_uid = i, .apic_id = cfg->apic_ids[i],
            .flags = ACPI_MADT_LAPIC_ENABLED,
        };
        memcpy(entry, &lapic, sizeof(lapic));
        entry += sizeof(lapic);
    }
    AcpiMadtIoapic ioapic = {
        .type = ACPI_MADT_IOAPIC, .length = sizeof(ioapic),
        .ioapic_id = cfg->ioapic_id, .address = IOAPIC_ADDR, .gsi_base = 0,
    };
    memcpy(entry, &ioapic, sizeof(ioapic));
    entry += sizeof(ioapic);
    memcpy(entry, madt_overrides, sizeof(madt_overrides));
    entry += sizeof(madt_overrides);
    AcpiMadtLapicNmi nmi = {
        .type = ACPI_MADT_LAPIC_NMI, .length = sizeof(nmi),
        .processor_uid = ACPI_MADT_ALL_PROCESSORS, .flags = ACPI_MPS_CONFORMS,
        .lint = ACPI_MADT_LINT1,
    };
    memcpy(entry, &nmi, sizeof(nmi));
    table_seal(area, offset);
    return offset;
}

/* ---- RSDT, XSDT, RSDP ---- */

/* RSDT (4-byte entries) or XSDT (8-byte entries, only 4-byte aligned after
 * the 36-byte header, hence memcpy): the addresses of the other tables. */
static size_t build_table_list(AcpiArea *area, const char *signature, size_t entry_size,
                               const size_t *tables, unsigned n)
{
    size_t offset = table_new(area, signature, ACPI_SDT_LIST_REVISION,
                              sizeof(AcpiTableHeader) + n * entry_size);
    uint8_t *entries = area_at(area, offset + sizeof(AcpiTableHeader));
    for (unsigned i = 0; i < n; i++) {
        uint64_t address = area_address(tables[i]);    /* little-endian host */
        memcpy(entries + i * entry_size, &address, entry_size);
    }
    table_seal(area, offset);
    return offset;
}

static void fill_rsdp(AcpiArea *area, size_t offset, size_t rsdt, size_t xsdt)
{
    AcpiRsdp *rsdp = area_at(area, offset);
    memcpy(rsdp->signature, "RSD PTR ", sizeof(rsdp->signature));
    memcpy(rsdp->oem_id, ACPI_OEM_ID, sizeof(rsdp->oem_id));
    rsdp->revision = ACPI_RSDP_REVISION;
    rsdp->rsdt_address = area_address(rsdt);
    rsdp->length = sizeof(AcpiRsdp);
    rsdp->xsdt_address = area_address(xsdt);
    rsdp->checksum = byte_sum_checksum(rsdp, ACPI_RSDP_V1_LENGTH);
    rsdp->extended_checksum = byte_sum_checksum(rsdp, sizeof(AcpiRsdp));
}

/* ---- entry point ---- */

static bool acpi_config_check(const AcpiTablesConfig *cfg, Error **errp)
{
    if (cfg->ncpus == 0 || !cfg->apic_ids) {
        error_setg(errp, "ACPI tables: no CPUs to describe");
        return false;
    }
    /* Processor UIDs are bytes, and 0xff means "all processors". */
    if (cfg->ncpus > ACPI_MADT_ALL_PROCESSORS) {
        error_setg(errp, "ACPI tables: %u CPUs do not fit the MADT's local APIC "
                   "entries (at most %u)", cfg->ncpus, ACPI_MADT_ALL_PROCESSORS);
        return false;
    }
    for (unsigned i = 0; i < cfg->ncpus; i++) {
        if (cfg->apic_ids[i] > ACPI_MADT_MAX_APIC_ID) {
            error_setg(errp, "ACPI tables: APIC id %u of CPU %u needs an x2APIC "
                       "entry, which is not supported", cfg->apic_ids[i], i);
            return false;
        }
    }
    if (!cfg->pci_map_irq) {
        error_setg(errp, "ACPI tables: no PCI interrupt routing");
        return false;
    }
    if (cfg->pci_io_base < ACPI_PCI_IO_HIGH_BASE || cfg->pci_io_base > cfg->pci_io_limit) {
        error_setg(errp, "ACPI tables: PCI I/O window 0x%x-0x%x must lie within "
                   "0x%x-0xffff", cfg->pci_io_base, cfg->pci_io_limit, ACPI_PCI_IO_HIGH_BASE);
        return false;
    }
    if (cfg->pci_mem_base > cfg->pci_mem_limit) {
        error_setg(errp, "ACPI tables: PCI memory window 0x%x-0x%x is empty",
                   cfg->pci_mem_base, cfg->pci_mem_limit);
        return false;
    }
    return true;
}

/* Lay every table out in area; false (and nothing usable) on error. */
static bool acpi_layout_tables(AcpiArea *area, const AcpiTablesConfig *cfg,
                               size_t *facs_offset, Error **errp)
{
    size_t rsdp = area_reserve(area, sizeof(AcpiRsdp), ACPI_TABLE_ALIGN);
    size_t facs = build_facs(area);
    size_t dsdt = build_dsdt(area, cfg, errp);
    if (!dsdt) {
        return false;
    }
    size_t tables[] = { build_fadt(area, facs, dsdt), build_madt(area, cfg) };
    size_t rsdt = build_table_list(area, "RSDT", sizeof(uint32_t), tables,
                                   G_N_ELEMENTS(tables));
    size_t xsdt = build_table_list(area, "XSDT", sizeof(uint64_t), tables,
                                   G_N_ELEMENTS(tables));
    fill_rsdp(area, rsdp, rsdt, xsdt);
    *facs_offset = facs;
    return true;
}

bool acpi_build_tables(GuestMemory *mem, const AcpiTablesConfig *cfg, uint64_t *rsdp_addr,
                       uint64_t *facs_addr, Error **errp)
{
    if (!acpi_config_check(cfg, errp)) {
        return false;
    }
    AcpiArea area = { .bytes = g_byte_array_new() };
    size_t facs = 0;
    bool ok = acpi_layout_tables(&area, cfg, &facs, errp);
    if (ok && area.bytes->len > ACPI_TABLES_MAX_SIZE) {
        error_setg(errp, "ACPI tables: %u bytes do not fit the 0x%llx bytes reserved "
                   "at 0x%llx", area.bytes->len, ACPI_TABLES_MAX_SIZE, ACPI_TABLES_ADDR);
        ok = false;
    }
    void *dest = ok ? guest_memory_ptr(mem, ACPI_TABLES_ADDR, area.bytes->len) : NULL;
    if (ok && !dest) {
        error_setg(errp, "ACPI tables: guest RAM does not cover 0x%llx-0x%llx",
                   ACPI_TABLES_ADDR, ACPI_TABLES_ADDR + area.bytes->len - 1);
        ok = false;
    }
    if (ok) {
        memcpy(dest, area.bytes->data, area.bytes->len);
        *rsdp_addr = ACPI_TABLES_ADDR;
        *facs_addr = area_address(facs);
    }
    g_byte_array_unref(area.bytes);
    return ok;
}
