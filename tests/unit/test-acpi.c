/*
 * ACPI: the AML encodings, the tables read back the way an OS finds and
 * walks them (independently of the writer's structs), the DSDT checked by
 * ACPICA's disassembler when iasl is installed, and the PM device driven
 * through the port I/O dispatch path.
 */
#include <string.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "exec/memory.h"
#include "hw/acpi/acpi.h"
#include "pio.h"
#include "hw/acpi/aml-build.h"
#include "hw/irq.h"
#include "hw/pci/pci.h"
#include "hw/qdev.h"
#include "qemu/log.h"
#include "sysemu/runstate.h"
#include "qemu/byte-order.h"
#include "qemu/bytesum.h"

#define RAM_SIZE            (2 * 1024 * 1024)
#define RAM_POISON          0xa5
#define BIOS_AREA_START     0xe0000
#define BIOS_AREA_END       0x100000
#define HEADER_LEN          36

/* ---- AML encodings ---- */

static void assert_aml(Aml *aml, const uint8_t *expected, size_t expected_len)
{
    size_t len;
    uint8_t *bytes = aml_finish(aml, &len);
    g_assert_cmpmem(bytes, len, expected, expected_len);
    g_free(bytes);
}

#define ASSERT_AML(aml, ...) do {                           \
        static const uint8_t expected_[] = { __VA_ARGS__ }; \
        assert_aml((aml), expected_, sizeof(expected_));    \
    } while (0)

static void test_aml_integers(void)
{
    ASSERT_AML(aml_int(0), 0x00);
    ASSERT_AML(aml_int(1), 0x01);
    ASSERT_AML(aml_int(2), 0x0a, 0x02);
    ASSERT_AML(aml_int(0xff), 0x0a, 0xff);
    ASSERT_AML(aml_int(0x100), 0x0b, 0x00, 0x01);
    ASSERT_AML(aml_int(0xffff), 0x0b, 0xff, 0xff);
    ASSERT_AML(aml_int(0x10000), 0x0c, 0x00, 0x00, 0x01, 0x00);
    ASSERT_AML(aml_int(0xfee00000), 0x0c, 0x00, 0x00, 0xe0, 0xfe);
    ASSERT_AML(aml_int(0x100000000ULL), 0x0e, 0, 0, 0, 0, 1, 0, 0, 0);
    ASSERT_AML(aml_int(UINT64_MAX), 0x0e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
}

static void assert_pkg_length(size_t body_len, const uint8_t *expected, unsigned n)
{
    uint8_t out[4];
    g_assert_cmpmem(out, aml_pkg_length_encode(body_len, out), expected, n);
}

static void test_aml_pkg_length(void)
{
    assert_pkg_length(0, (const uint8_t[]){ 0x01 }, 1);
    assert_pkg_length(62, (const uint8_t[]){ 0x3f }, 1);
    /* 63 + 2 = 65 = 0x041: low nibble in the lead byte. */
    assert_pkg_length(63, (const uint8_t[]){ 0x41, 0x04 }, 2);
    assert_pkg_length(4093, (const uint8_t[]){ 0x4f, 0xff }, 2);
    assert_pkg_length(4094, (const uint8_t[]){ 0x81, 0x00, 0x01 }, 3);
    assert_pkg_length((1 << 20) - 4, (const uint8_t[]){ 0x8f, 0xff, 0xff }, 3);
    assert_pkg_length((1 << 20) - 3, (const uint8_t[]){ 0xc1, 0x00, 0x00, 0x01 }, 4);
}

static void test_aml_names(void)
{
    ASSERT_AML(aml_name_decl("_UID", aml_int(0)), 0x08, '_', 'U', 'I', 'D', 0x00);
    ASSERT_AML(aml_name_decl("ISA", aml_int(1)), 0x08, 'I', 'S', 'A', '_', 0x01);
    ASSERT_AML(aml_scope("\\"), 0x10, 0x03, '\\', 0x00);
    ASSERT_AML(aml_scope("\\_SB"), 0x10, 0x06, '\\', '_', 'S', 'B', '_');
    ASSERT_AML(aml_scope("\\_SB.PCI0"), 0x10, 0x0b, '\\', 0x2e,
               '_', 'S', 'B', '_', 'P', 'C', 'I', '0');
    ASSERT_AML(aml_scope("^^A.B.C"), 0x10, 0x11, '^', '^', 0x2f, 0x03,
               'A', '_', '_', '_', 'B', '_', '_', '_', 'C', '_', '_', '_');
}

static void test_aml_containers(void)
{
    Aml *dev = aml_device("RTC");
    aml_append(dev, aml_name_decl("_HID", aml_eisaid("PNP0B00")));
    ASSERT_AML(dev, 0x5b, 0x82, 0x0f, 'R', 'T', 'C', '_',
               0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x0b, 0x00);

    ASSERT_AML(aml_method("_PIC", 1, false), 0x14, 0x06, '_', 'P', 'I', 'C', 0x01);
    ASSERT_AML(aml_method("LOCK", 2, true), 0x14, 0x06, 'L', 'O', 'C', 'K', 0x0a);

    Aml *pkg = aml_package();
    aml_append(pkg, aml_int(1));
    aml_append(pkg, aml_string("ab"));
    ASSERT_AML(pkg, 0x12, 0x07, 0x02, 0x01, 0x0d, 'a', 'b', 0x00);

    static const uint8_t data[] = { 1, 2, 3 };
    ASSERT_AML(aml_buffer(data, sizeof(data)), 0x11, 0x06, 0x0a, 0x03, 1, 2, 3);

    /* Past 255 elements the count no longer fits a byte: VarPackage. */
    Aml *big = aml_package();
    for (unsigned i = 0; i < 300; i++) {
        aml_append(big, aml_int(0));
    }
    size_t len;
    uint8_t *bytes = aml_finish(big, &len);
    /* 300 Zeros + the count (0x0b 0x2c 0x01) + a 2-byte PkgLength. */
    g_assert_cmpuint(len, ==, 1 + 2 + 3 + 300);
    g_assert_cmphex(bytes[0], ==, 0x13);
    g_assert_cmphex(bytes[3], ==, 0x0b);
    g_assert_cmphex(bytes[4] | bytes[5] << 8, ==, 300);
    g_free(bytes);
}

static void test_aml_eisaid(void)
{
    g_assert_cmphex(aml_eisaid_value("PNP0A03"), ==, 0x030ad041);
    g_assert_cmphex(aml_eisaid_value("PNP0501"), ==, 0x0105d041);
    g_assert_cmphex(aml_eisaid_value("ABC1234"), ==, 0x34124304);
}

static void test_aml_resources(void)
{
    Aml *crs = aml_resource_template();
    aml_append(crs, aml_io(0x3f8, 0x3f8, 1, 8));
    aml_append(crs, aml_irq_no_flags(4));
    ASSERT_AML(crs, 0x11, 0x10, 0x0a, 0x0d,
               0x47, 0x01, 0xf8, 0x03, 0xf8, 0x03, 0x01, 0x08,
               0x22, 0x10, 0x00,
               0x79, 0x00);

    ASSERT_AML(aml_word_bus_number(0, 0xff),
               0x88, 0x0d, 0x00, 0x02, 0x0c, 0x00,
               0, 0, 0x00, 0x00, 0xff, 0x00, 0, 0, 0x00, 0x01);
    ASSERT_AML(aml_word_io(0x0d00, 0xffff),
               0x88, 0x0d, 0x00, 0x01, 0x0c, 0x03,
               0, 0, 0x00, 0x0d, 0xff, 0xff, 0, 0, 0x00, 0xf3);
    ASSERT_AML(aml_dword_memory(AML_NON_CACHEABLE, 0xc0000000, 0xfebfffff),
               0x87, 0x17, 0x00, 0x00, 0x0c, 0x01,
               0, 0, 0, 0,  0x00, 0x00, 0x00, 0xc0,  0xff, 0xff, 0xbf, 0xfe,
               0, 0, 0, 0,  0x00, 0x00, 0xc0, 0x3e);
    ASSERT_AML(aml_dword_memory(AML_CACHEABLE, 0xa0000, 0xbffff),
               0x87, 0x17, 0x00, 0x00, 0x0c, 0x03,
               0, 0, 0, 0,  0x00, 0x00, 0x0a, 0x00,  0xff, 0xff, 0x0b, 0x00,
               0, 0, 0, 0,  0x00, 0x00, 0x02, 0x00);
}

/* ---- tables: a guest's view ---- */

typedef struct Guest {
    uint8_t *ram;
    GuestMemory mem;
    uint64_t rsdp_addr, facs_addr;
} Guest;

/* Slot s pin p reaches GSI 16 + (s + p - 1) % 4, the usual swizzle. */
static unsigned test_map_irq(unsigned slot, unsigned pin)
{
    return 16 + (slot + pin - 1) % 4;
}

static unsigned bad_map_irq(unsigned slot, unsigned pin)
{
    return slot == 7 ? IRQ_MAX_GSI : 16;
}

static const uint32_t test_apic_ids[] = { 0, 1, 2, 4, 6 };

static AcpiTablesConfig test_config(void)
{
    return (AcpiTablesConfig){
        .ncpus = G_N_ELEMENTS(test_apic_ids),
        .apic_ids = test_apic_ids,
        .ioapic_id = 7,
        .pci_io_base = 0xc000, .pci_io_limit = 0xffff,
        .pci_mem_base = 0xc0000000, .pci_mem_limit = 0xfebfffff,
        .pci_map_irq = test_map_irq,
        .fw_cfg = true,
    };
}

static void guest_init(Guest *g)
{
    g->ram = g_malloc(RAM_SIZE);
    memset(g->ram, RAM_POISON, RAM_SIZE);
    g->mem = (GuestMemory){ .host = g->ram, .below_4g = RAM_SIZE };
}

static void guest_build(Guest *g, const AcpiTablesConfig *cfg)
{
    guest_init(g);
    Error *err = NULL;
    g_assert_true(acpi_build_tables(&g->mem, cfg, &g->rsdp_addr, &g->facs_addr, &err));
    g_assert_null(err);
}

static void guest_free(Guest *g)
{
    g_free(g->ram);
}

/* A table at addr: in RAM, its length sane, its checksum right. */
static const uint8_t *table_at(const Guest *g, uint64_t addr, const char *signature)
{
    g_assert_cmpuint(addr, >=, BIOS_AREA_START);
    g_assert_cmpuint(addr + HEADER_LEN, <=, RAM_SIZE);
    const uint8_t *t = g->ram + addr;
    g_assert_cmpmem(t, 4, signature, 4);
    uint32_t length = get_le32(t + 4);
    g_assert_cmpuint(length, >=, HEADER_LEN);
    g_assert_cmpuint(addr + length, <=, ACPI_TABLES_ADDR + ACPI_TABLES_MAX_SIZE);
    g_assert_cmpuint(byte_sum(t, length), ==, 0);
    g_assert_cmpmem(t + 10, 6, "PDLVMM", 6);
    return t;
}

/* Scan the BIOS area for the RSDP on 16-byte boundaries, as Linux does. */
static const uint8_t *find_rsdp(const Guest *g)
{
    for (uint64_t addr = BIOS_AREA_START; addr < BIOS_AREA_END; addr += 16) {
        const uint8_t *p = g->ram + addr;
        if (memcmp(p, "RSD PTR ", 8) == 0 && byte_sum(p, 20) == 0) {
            return p;
        }
    }
    return NULL;
}

static const uint8_t *rsdp_checked(const Guest *g)
{
    const uint8_t *rsdp = find_rsdp(g);
    g_assert_nonnull(rsdp);
    g_assert_cmpuint(rsdp - g->ram, ==, ACPI_TABLES_ADDR);
    g_assert_cmpuint(g->rsdp_addr, ==, ACPI_TABLES_ADDR);
    g_assert_cmpuint(rsdp[15], ==, 2);                  /* revision */
    g_assert_cmpmem(rsdp + 9, 6, "PDLVMM", 6);
    g_assert_cmpuint(get_le32(rsdp + 20), ==, 36);         /* length */
    g_assert_cmpuint(byte_sum(rsdp, 36), ==, 0);        /* extended checksum */
    return rsdp;
}

/* The table with signature sig that the RSDT (and, the same, the XSDT)
 * lists. */
static const uint8_t *find_table(const Guest *g, const char *sig)
{
    const uint8_t *rsdp = rsdp_checked(g);
    const uint8_t *rsdt = table_at(g, get_le32(rsdp + 16), "RSDT");
    const uint8_t *xsdt = table_at(g, get_le64(rsdp + 24), "XSDT");
    unsigned n = (get_le32(rsdt + 4) - HEADER_LEN) / 4;
    g_assert_cmpuint(get_le32(xsdt + 4), ==, HEADER_LEN + 8 * n);
    const uint8_t *found = NULL;
    for (unsigned i = 0; i < n; i++) {
        uint32_t addr = get_le32(rsdt + HEADER_LEN + 4 * i);
        g_assert_cmpuint(get_le64(xsdt + HEADER_LEN + 8 * i), ==, addr);
        if (memcmp(g->ram + addr, sig, 4) == 0) {
            g_assert_null(found);
            found = table_at(g, addr, sig);
        }
    }
    g_assert_nonnull(found);
    return found;
}

static void test_tables_rsdt_xsdt(void)
{
    AcpiTablesConfig cfg = test_config();
    Guest g;
    guest_build(&g, &cfg);
    find_table(&g, "FACP");
    find_table(&g, "APIC");
    /* Nothing written outside the reserved area. */
    for (uint64_t a = ACPI_TABLES_ADDR + ACPI_TABLES_MAX_SIZE; a < RAM_SIZE; a++) {
        g_assert_cmphex(g.ram[a], ==, RAM_POISON);
    }
    g_assert_cmphex(g.ram[ACPI_TABLES_ADDR - 1], ==, RAM_POISON);
    guest_free(&g);
}

/* Check a Generic Address Structure: system I/O at port, width bits. */
static void assert_gas_io(const uint8_t *gas, uint16_t port, unsigned bits)
{
    g_assert_cmpuint(gas[0], ==, 1);
    g_assert_cmpuint(gas[1], ==, bits);
    g_assert_cmpuint(gas[2], ==, 0);
    g_assert_cmphex(get_le64(gas + 4), ==, port);
}

static void test_tables_fadt(void)
{
    AcpiTablesConfig cfg = test_config();
    Guest g;
    guest_build(&g, &cfg);
    const uint8_t *f = find_table(&g, "FACP");
    g_assert_cmpuint(get_le32(f + 4), >=, 244);
    g_assert_cmpuint(f[8], >=, 3);

    uint32_t facs_addr = get_le32(f + 36);
    uint32_t dsdt_addr = get_le32(f + 40);
    g_assert_cmpuint(get_le64(f + 132), ==, facs_addr);    /* X_FIRMWARE_CTRL */
    g_assert_cmpuint(get_le64(f + 140), ==, dsdt_addr);    /* X_DSDT */
    g_assert_cmpuint(facs_addr, ==, g.facs_addr);
    table_at(&g, dsdt_addr, "DSDT");

    g_assert_cmpuint(get_le16(f + 46), ==, 9);             /* SCI_INT */
    g_assert_cmpuint(get_le32(f + 48), ==, 0);             /* SMI_CMD */
    g_assert_cmphex(get_le32(f + 56), ==, 0x600);          /* PM1a_EVT_BLK */
    g_assert_cmphex(get_le32(f + 60), ==, 0);              /* PM1b_EVT_BLK */
    g_assert_cmphex(get_le32(f + 64), ==, 0x604);          /* PM1a_CNT_BLK */
    g_assert_cmphex(get_le32(f + 76), ==, 0x608);          /* PM_TMR_BLK */
    g_assert_cmphex(get_le32(f + 80), ==, 0);              /* GPE0_BLK */
    g_assert_cmpuint(f[88], ==, 4);                     /* PM1_EVT_LEN */
    g_assert_cmpuint(f[89], ==, 2);                     /* PM1_CNT_LEN */
    g_assert_cmpuint(f[91], ==, 4);                     /* PM_TMR_LEN */
    g_assert_cmpuint(f[92], ==, 0);                     /* GPE0_BLK_LEN */
    g_assert_cmphex(get_le16(f + 109), ==, 0x3);           /* legacy devices, 8042 */

    uint32_t flags = get_le32(f + 112);
    g_assert_cmphex(flags & (1u << 0), !=, 0);          /* WBINVD */
    g_assert_cmphex(flags & (1u << 2), !=, 0);          /* PROC_C1 */
    g_assert_cmphex(flags & (1u << 5), !=, 0);          /* SLP_BUTTON */
    g_assert_cmphex(flags & (1u << 8), ==, 0);          /* TMR_VAL_EXT: 24 bits */
    g_assert_cmphex(flags & (1u << 10), !=, 0);         /* RESET_REG_SUP */
    g_assert_cmphex(flags & (1u << 20), ==, 0);         /* not HW_REDUCED */

    assert_gas_io(f + 116, 0xcf9, 8);                   /* RESET_REG */
    g_assert_cmphex(f[128], ==, 6);                     /* RESET_VALUE */
    assert_gas_io(f + 148, 0x600, 32);                  /* X_PM1a_EVT_BLK */
    assert_gas_io(f + 172, 0x604, 16);                  /* X_PM1a_CNT_BLK */
    assert_gas_io(f + 208, 0x608, 32);                  /* X_PM_TMR_BLK */
    g_assert_cmphex(get_le64(f + 220 + 4), ==, 0);         /* X_GPE0_BLK */

    const uint8_t *facs = g.ram + facs_addr;
    g_assert_cmpuint(facs_addr % 64, ==, 0);
    g_assert_cmpmem(facs, 4, "FACS", 4);
    g_assert_cmpuint(get_le32(facs + 4), ==, 64);
    g_assert_cmphex(get_le32(facs + 12), ==, 0);           /* firmware waking vector */
    g_assert_cmphex(get_le64(facs + 24), ==, 0);           /* X_ waking vector */
    guest_free(&g);
}

static void test_tables_madt(void)
{
    AcpiTablesConfig cfg = test_config();
    Guest g;
    guest_build(&g, &cfg);
    const uint8_t *m = find_table(&g, "APIC");
    g_assert_cmphex(get_le32(m + 36), ==, 0xfee00000);
    g_assert_cmphex(get_le32(m + 40) & 1, ==, 1);          /* PCAT_COMPAT */

    unsigned nlapic = 0, nioapic = 0, nnmi = 0;
    bool pit_override = false, sci_override = false;
    uint32_t length = get_le32(m + 4);
    for (uint32_t off = 44; off < length; off += m[off + 1]) {
        const uint8_t *e = m + off;
        g_assert_cmpuint(e[1], >=, 2);
        g_assert_cmpuint(off + e[1], <=, length);
        switch (e[0]) {
        case 0:
            g_assert_cmpuint(e[1], ==, 8);
            g_assert_cmpuint(nlapic, <, cfg.ncpus);
            g_assert_cmpuint(e[2], ==, nlapic);         /* processor UID */
            g_assert_cmpuint(e[3], ==, test_apic_ids[nlapic]);
            g_assert_cmphex(get_le32(e + 4), ==, 1);       /* enabled */
            nlapic++;
            break;
        case 1:
            g_assert_cmpuint(e[1], ==, 12);
            g_assert_cmpuint(e[2], ==, 7);
            g_assert_cmphex(get_le32(e + 4), ==, 0xfec00000);
            g_assert_cmpuint(get_le32(e + 8), ==, 0);
            nioapic++;
            break;
        case 2:
            g_assert_cmpuint(e[1], ==, 10);
            g_assert_cmpuint(e[2], ==, 0);              /* ISA */
            if (e[3] == 0) {
                g_assert_cmpuint(get_le32(e + 4), ==, 2);
                pit_override = true;
            } else {
                g_assert_cmpuint(e[3], ==, 9);
                g_assert_cmpuint(get_le32(e + 4), ==, 9);
                g_assert_cmphex(get_le16(e + 8), ==, 0x0d);    /* level, active high */
                sci_override = true;
            }
            break;
        case 4:
            g_assert_cmpuint(e[1], ==, 6);
            g_assert_cmpuint(e[2], ==, 0xff);           /* all processors */
            g_assert_cmpuint(e[5], ==, 1);              /* LINT1 */
            nnmi++;
            break;
        default:
            g_assert_not_reached();
        }
    }
    g_assert_cmpuint(nlapic, ==, cfg.ncpus);
    g_assert_cmpuint(nioapic, ==, 1);
    g_assert_cmpuint(nnmi, ==, 1);
    g_assert_true(pit_override);
    g_assert_true(sci_override);
    guest_free(&g);
}

static const uint8_t *dsdt_of(const Guest *g, uint32_t *len)
{
    const uint8_t *f = find_table(g, "FACP");
    const uint8_t *dsdt = table_at(g, get_le32(f + 40), "DSDT");
    *len = get_le32(dsdt + 4);
    return dsdt;
}

static bool contains(const uint8_t *hay, size_t hay_len, const void *needle, size_t len)
{
    return memmem(hay, hay_len, needle, len) != NULL;
}

static bool contains_str(const uint8_t *hay, size_t hay_len, const char *needle)
{
    return contains(hay, hay_len, needle, strlen(needle));
}

static void test_tables_dsdt(void)
{
    AcpiTablesConfig cfg = test_config();
    Guest g;
    guest_build(&g, &cfg);
    uint32_t len;
    const uint8_t *dsdt = dsdt_of(&g, &len);
    g_assert_cmpuint(dsdt[8], ==, 2);   /* revision 2: 64-bit integers */
    g_assert_true(contains_str(dsdt, len, "PCI0"));
    g_assert_true(contains_str(dsdt, len, "_PRT"));
    g_assert_true(contains_str(dsdt, len, "_CRS"));
    g_assert_true(contains_str(dsdt, len, "QEMU0002"));
    g_assert_true(contains_str(dsdt, len, "ACPI0007"));
    g_assert_true(contains_str(dsdt, len, "PX13"));         /* 00:01.3, as QEMU names it */

    /* Name(_S5_, Package(4){0, 0, 0, 0}) and _S3_ with SLP_TYP 1. */
    static const uint8_t s5[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x04, 0, 0, 0, 0 };
    static const uint8_t s3[] = { 0x08, '_', 'S', '3', '_', 0x12, 0x06, 0x04, 1, 1, 0, 0 };
    static const uint8_t s4[] = { 0x08, '_', 'S', '4', '_', 0x12, 0x08, 0x04,
                                  0x0a, 2, 0x0a, 2, 0, 0 };
    g_assert_true(contains(dsdt, len, s5, sizeof(s5)));
    g_assert_true(contains(dsdt, len, s3, sizeof(s3)));
    g_assert_true(contains(dsdt, len, s4, sizeof(s4)));

    /* _PRT entry for slot 3 pin INTB: {0x0003ffff, 1, Zero, GSI 16 + 4 % 4}. */
    static const uint8_t prt_entry[] = { 0x12, 0x0b, 0x04, 0x0c, 0xff, 0xff, 0x03, 0x00,
                                         0x01, 0x00, 0x0a, 16 };
    g_assert_true(contains(dsdt, len, prt_entry, sizeof(prt_entry)));
    /* The _PRT package: 31 slots x 4 pins. */
    static const uint8_t prt_head[] = { 0x08, '_', 'P', 'R', 'T', 0x12 };
    const uint8_t *prt = memmem(dsdt, len, prt_head, sizeof(prt_head));
    g_assert_nonnull(prt);
    unsigned pkg_len_bytes = (prt[6] >> 6) + 1;
    g_assert_cmpuint(prt[6 + pkg_len_bytes], ==, 31 * 4);

    /* The host bridge's memory window, as configured. */
    static const uint8_t mem_window[] = { 0x00, 0x00, 0x00, 0xc0, 0xff, 0xff, 0xbf, 0xfe };
    g_assert_true(contains(dsdt, len, mem_window, sizeof(mem_window)));
    guest_free(&g);

    cfg.fw_cfg = false;
    guest_build(&g, &cfg);
    dsdt = dsdt_of(&g, &len);
    g_assert_false(contains_str(dsdt, len, "QEMU0002"));
    g_assert_true(contains_str(dsdt, len, "_PRT"));
    guest_free(&g);

    /* PIIX4_PM.disable_s3=1 / disable_s4=1: that package is left out, the
     * others stay (an OS then offers neither state). */
    for (int disabled = 1; disabled < 4; disabled++) {
        cfg.disable_s3 = disabled & 1;
        cfg.disable_s4 = disabled & 2;
        guest_build(&g, &cfg);
        dsdt = dsdt_of(&g, &len);
        g_assert_cmpint(contains(dsdt, len, s3, sizeof(s3)), ==, !cfg.disable_s3);
        g_assert_cmpint(contains_str(dsdt, len, "_S3_"), ==, !cfg.disable_s3);
        g_assert_cmpint(contains(dsdt, len, s4, sizeof(s4)), ==, !cfg.disable_s4);
        g_assert_cmpint(contains_str(dsdt, len, "_S4_"), ==, !cfg.disable_s4);
        g_assert_true(contains(dsdt, len, s5, sizeof(s5)));
        guest_free(&g);
    }
}

static void assert_build_fails(const AcpiTablesConfig *cfg, GuestMemory *mem,
                               const char *message_part)
{
    Guest g;
    guest_init(&g);
    if (!mem) {
        mem = &g.mem;
    }
    Error *err = NULL;
    uint64_t rsdp = 0, facs = 0;
    g_assert_false(acpi_build_tables(mem, cfg, &rsdp, &facs, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, message_part));
    error_free(err);
    /* A failed build writes nothing. */
    for (uint64_t a = ACPI_TABLES_ADDR; a < ACPI_TABLES_ADDR + ACPI_TABLES_MAX_SIZE; a++) {
        g_assert_cmphex(g.ram[a], ==, RAM_POISON);
    }
    guest_free(&g);
}

static void test_tables_errors(void)
{
    AcpiTablesConfig cfg = test_config();
    cfg.ncpus = 0;
    assert_build_fails(&cfg, NULL, "no CPUs");

    static const uint32_t big_ids[] = { 0, 255 };
    cfg = test_config();
    cfg.ncpus = 2;
    cfg.apic_ids = big_ids;
    assert_build_fails(&cfg, NULL, "APIC id 255");

    cfg = test_config();
    cfg.pci_map_irq = bad_map_irq;
    assert_build_fails(&cfg, NULL, "slot 7");

    cfg = test_config();
    cfg.pci_io_base = 0x100;
    assert_build_fails(&cfg, NULL, "I/O window");

    cfg = test_config();
    cfg.pci_mem_base = 0xf0000000;
    cfg.pci_mem_limit = 0xe0000000;
    assert_build_fails(&cfg, NULL, "memory window");

    /* Guest RAM that ends inside the table area. */
    cfg = test_config();
    uint8_t *small = g_malloc0(ACPI_TABLES_ADDR + 0x100);
    GuestMemory small_mem = { .host = small, .below_4g = ACPI_TABLES_ADDR + 0x100 };
    assert_build_fails(&cfg, &small_mem, "guest RAM");
    g_free(small);
}

static void test_tables_many_cpus(void)
{
    uint32_t ids[254];
    for (unsigned i = 0; i < G_N_ELEMENTS(ids); i++) {
        ids[i] = 253 - i;
    }
    AcpiTablesConfig cfg = test_config();
    cfg.ncpus = G_N_ELEMENTS(ids);
    cfg.apic_ids = ids;
    Guest g;
    guest_build(&g, &cfg);
    const uint8_t *m = find_table(&g, "APIC");
    /* The last local APIC entry is the 254th, right after the header. */
    const uint8_t *last = m + 44 + 8 * (G_N_ELEMENTS(ids) - 1);
    g_assert_cmpuint(last[0], ==, 0);
    g_assert_cmpuint(last[2], ==, 253);
    g_assert_cmpuint(last[3], ==, 0);
    uint32_t len;
    const uint8_t *dsdt = dsdt_of(&g, &len);
    g_assert_true(contains_str(dsdt, len, "C0FD"));
    guest_free(&g);
}

/* ---- the DSDT through ACPICA's disassembler and compiler ---- */

static bool run_iasl(const char *dir, const char *const *args, char **output)
{
    g_autofree char *out = NULL, *err = NULL;
    int status;
    GError *gerr = NULL;
    bool ran = g_spawn_sync(dir, (char **)args, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                            &out, &err, &status, &gerr);
    g_assert_no_error(gerr);
    g_assert_true(ran);
    *output = g_strconcat(out, err, NULL);
    return g_spawn_check_wait_status(status, NULL);
}

static void test_dsdt_iasl(void)
{
    g_autofree char *iasl = g_find_program_in_path("iasl");
    if (!iasl) {
        g_test_skip("iasl (acpica-tools) not installed");
        return;
    }
    AcpiTablesConfig cfg = test_config();
    Guest g;
    guest_build(&g, &cfg);
    uint32_t len;
    const uint8_t *dsdt = dsdt_of(&g, &len);

    g_autofree char *dir = g_dir_make_tmp("test-acpi-XXXXXX", NULL);
    g_assert_nonnull(dir);
    g_autofree char *dat = g_build_filename(dir, "dsdt.dat", NULL);
    g_autofree char *dsl = g_build_filename(dir, "dsdt.dsl", NULL);
    g_autofree char *aml = g_build_filename(dir, "dsdt.aml", NULL);
    g_assert_true(g_file_set_contents(dat, (const char *)dsdt, len, NULL));

    g_autofree char *output = NULL;
    const char *const disassemble[] = { "iasl", "-d", "dsdt.dat", NULL };
    bool ok = run_iasl(dir, disassemble, &output);
    if (!ok || strstr(output, "Error") || strstr(output, "rror(s)")) {
        g_test_message("iasl -d: %s", output);
    }
    g_assert_true(ok);
    g_assert_null(strstr(output, "ACPI Error"));

    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(dsl, &text, NULL, NULL));
    g_assert_nonnull(strstr(text, "Device (PCI0)"));
    g_assert_nonnull(strstr(text, "EisaId (\"PNP0A03\")"));
    g_assert_nonnull(strstr(text, "\"QEMU0002\""));
    g_assert_nonnull(strstr(text, "Name (_PRT, Package (0x7C)"));
    g_assert_nonnull(strstr(text, "WordBusNumber"));
    g_assert_nonnull(strstr(text, "Device (PX13)"));
    g_assert_nonnull(strstr(text, "Name (_ADR, 0x00010003)"));
    g_assert_nonnull(strstr(text, "Name (_S5, Package (0x04)"));

    /* What disassembles must also compile back without errors. */
    g_free(output);
    output = NULL;
    const char *const compile[] = { "iasl", "dsdt.dsl", NULL };
    ok = run_iasl(dir, compile, &output);
    if (!ok) {
        g_test_message("iasl: %s", output);
    }
    g_assert_true(ok);
    g_assert_nonnull(strstr(output, "0 Errors"));

    g_unlink(dat);
    g_unlink(dsl);
    g_unlink(aml);
    g_rmdir(dir);
    guest_free(&g);
}

/* ---- the PM device ---- */

#define PM1_STS     (ACPI_PM_BASE + 0)
#define PM1_EN      (ACPI_PM_BASE + 2)
#define PM1_CNT     (ACPI_PM_BASE + ACPI_PM1_CNT_OFFSET)
#define PM_TMR      (ACPI_PM_BASE + ACPI_PM_TMR_OFFSET)
#define STS_PWRBTN  0x0100
#define STS_RTC     0x0400
#define STS_WAK     0x8000
#define CNT_SCI_EN  0x0001
#define CNT_SLP_EN  0x2000
#define TIMER_WRAP  (1u << 24)

static PCIBus *pm_bus;
static AcpiPMState *pm;

static void slp(unsigned typ)
{
    outw(PM1_CNT, typ << 10 | CNT_SLP_EN);
}

static void pm_reset(void)
{
    device_reset_all();
    g_assert_cmphex(inw(PM1_STS), ==, 0);
    g_assert_cmphex(inw(PM1_EN), ==, 0);
    g_assert_cmphex(inw(PM1_CNT), ==, CNT_SCI_EN);
    g_assert_false(irq_line_level(ACPI_SCI_IRQ));
}

static void test_pm_timer(void)
{
    uint32_t t0 = inl(PM_TMR);
    g_usleep(10000);
    uint32_t t1 = inl(PM_TMR);
    g_assert_cmphex(t0, <, TIMER_WRAP);
    g_assert_cmphex(t1, <, TIMER_WRAP);
    uint32_t ticks = (t1 - t0) % TIMER_WRAP;
    g_assert_cmpuint(ticks, >=, 20000);     /* ~35795 for 10 ms */
    g_assert_cmpuint(ticks, <=, 60000);

    /* The port shows acpi_pm_timer_now(); its top byte is always 0. */
    uint32_t now = acpi_pm_timer_now();
    g_assert_cmpuint((inl(PM_TMR) - now) % TIMER_WRAP, <, TIMER_WRAP / 8);
    uint8_t top = 0xff;
    g_assert_cmpint(address_space_read(address_space_io, PM_TMR + 3, &top, 1), ==, MEMTX_OK);
    g_assert_cmphex(top, ==, 0);
}

static void test_pm_timer_lockless(void)
{
    uint64_t offset;
    MemoryRegion *mr = address_space_lookup(address_space_io, PM_TMR, &offset);
    g_assert_nonnull(mr);
    g_assert_cmpint(mr->ops->locking, ==, REGION_LOCK_FREE);
    DeviceLock *lock = device_lock_of(mr->owner);
    uint64_t before = atomic_load(&lock->acquisitions);
    for (int i = 0; i < 1000; i++) {
        inl(PM_TMR);
    }
    g_assert_cmpuint(atomic_load(&lock->acquisitions), ==, before);
    /* The PM1 registers do take it. */
    inw(PM1_STS);
    g_assert_cmpuint(atomic_load(&lock->acquisitions), ==, before + 1);
}

#define READER_THREADS  4
#define READS_PER_THREAD 20000

/* Each reader sees the counter never step back (modulo the wrap), while
 * another thread hammers the locked registers of the same device. */
static gpointer timer_reader(gpointer data)
{
    uint32_t last = inl(PM_TMR);
    for (int i = 0; i < READS_PER_THREAD; i++) {
        uint32_t now = inl(PM_TMR);
        g_assert_cmpuint((now - last) % TIMER_WRAP, <, TIMER_WRAP / 2);
        last = now;
    }
    return NULL;
}

static void test_pm_timer_concurrent(void)
{
    GThread *readers[READER_THREADS];
    for (int i = 0; i < READER_THREADS; i++) {
        readers[i] = g_thread_new("pm-timer-reader", timer_reader, NULL);
    }
    for (int i = 0; i < READS_PER_THREAD; i++) {
        outw(PM1_EN, i & 1 ? STS_RTC : 0);
        inw(PM1_STS);
    }
    for (int i = 0; i < READER_THREADS; i++) {
        g_thread_join(readers[i]);
    }
    pm_reset();
}

static void test_pm_control(void)
{
    pm_reset();
    /* SCI_EN always reads 1, even after writing 0; SLP_TYP reads back. */
    outw(PM1_CNT, 0);
    g_assert_cmphex(inw(PM1_CNT), ==, CNT_SCI_EN);
    outw(PM1_CNT, 5 << 10);
    g_assert_cmphex(inw(PM1_CNT), ==, (5 << 10) | CNT_SCI_EN);
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
    g_assert_false(runstate_take_suspend_request());

    int status = -1;
    ShutdownCause cause = SHUTDOWN_CAUSE_NONE;
    slp(ACPI_SLP_TYP_S5);
    g_assert_true(runstate_take_shutdown_request(&cause, &status));
    g_assert_cmpint(status, ==, 0);
    g_assert_cmpstr(shutdown_cause_name(cause), ==, "guest-shutdown");
    g_assert_false(runstate_take_suspend_request());
    /* SLP_EN is write-only. */
    g_assert_cmphex(inw(PM1_CNT), ==, (ACPI_SLP_TYP_S5 << 10) | CNT_SCI_EN);

    status = -1;
    cause = SHUTDOWN_CAUSE_NONE;
    slp(ACPI_SLP_TYP_S4);
    g_assert_true(runstate_take_shutdown_request(&cause, &status));
    g_assert_cmpint(status, ==, 0);
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_GUEST_SHUTDOWN);

    slp(ACPI_SLP_TYP_S3);
    g_assert_true(runstate_take_suspend_request());
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));

    /* A byte write of the high half carries SLP_TYP and SLP_EN together. */
    outb(PM1_CNT + 1, (ACPI_SLP_TYP_S3 << 2) | (CNT_SLP_EN >> 8));
    g_assert_true(runstate_take_suspend_request());

    /* Unknown sleep types are ignored. */
    slp(6);
    slp(7);
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
    g_assert_false(runstate_take_suspend_request());

    /* Writing SLP_TYP alone does nothing. */
    outw(PM1_CNT, ACPI_SLP_TYP_S3 << 10);
    g_assert_false(runstate_take_suspend_request());
    pm_reset();
}

static void test_pm_status_and_sci(void)
{
    pm_reset();
    /* Only the implemented enables stick. */
    outw(PM1_EN, 0xffff);
    g_assert_cmphex(inw(PM1_EN), ==, 0x0521);
    outw(PM1_EN, 0);

    /* As QEMU: a press the guest did not enable is lost, and enabling
     * the button later finds none. */
    acpi_pm_power_button(pm);
    g_assert_cmphex(inw(PM1_STS), ==, 0);
    g_assert_false(irq_line_level(ACPI_SCI_IRQ));
    outw(PM1_EN, STS_PWRBTN);
    g_assert_false(irq_line_level(ACPI_SCI_IRQ));
    acpi_pm_power_button(pm);
    g_assert_cmphex(inw(PM1_STS), ==, STS_PWRBTN);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));

    /* Write 1 to clear; writing 0 clears nothing. */
    outw(PM1_STS, 0);
    g_assert_cmphex(inw(PM1_STS), ==, STS_PWRBTN);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));
    outw(PM1_STS, STS_PWRBTN);
    g_assert_cmphex(inw(PM1_STS), ==, 0);
    g_assert_false(irq_line_level(ACPI_SCI_IRQ));

    /* Waking: WAK_STS has no enable and raises no SCI by itself. */
    g_assert_false(acpi_pm_rtc_wake_enabled(pm));
    acpi_pm_set_woken(pm, false);
    g_assert_cmphex(inw(PM1_STS), ==, STS_WAK);
    g_assert_false(irq_line_level(ACPI_SCI_IRQ));
    outw(PM1_STS, STS_WAK);

    /* Woken by the RTC alarm the guest armed: RTC_STS and an SCI. */
    outb(PM1_EN + 1, STS_RTC >> 8);
    g_assert_true(acpi_pm_rtc_wake_enabled(pm));
    acpi_pm_set_woken(pm, true);
    g_assert_cmphex(inw(PM1_STS), ==, STS_WAK | STS_RTC);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));
    /* Clearing WAK_STS alone keeps the SCI up; disabling RTC_EN drops it. */
    outb(PM1_STS + 1, STS_WAK >> 8);
    g_assert_cmphex(inw(PM1_STS), ==, STS_RTC);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));
    outw(PM1_EN, 0);
    g_assert_false(irq_line_level(ACPI_SCI_IRQ));
    outw(PM1_EN, STS_RTC);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));

    /* A dword write at the block's start reaches both registers. */
    uint32_t both = STS_RTC | (uint32_t)STS_RTC << 16;
    g_assert_cmpint(address_space_write(address_space_io, PM1_STS, &both, 4), ==, MEMTX_OK);
    g_assert_cmphex(inw(PM1_STS), ==, 0);
    g_assert_cmphex(inw(PM1_EN), ==, STS_RTC);

    /* Reset clears status, enables and the SCI. */
    outw(PM1_EN, STS_PWRBTN);
    acpi_pm_power_button(pm);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));
    pm_reset();
}

static void test_pm_second_device_refused(void)
{
    Error *err = NULL;
    g_assert_null(acpi_pm_new(pm_bus, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "0x600"));
    error_free(err);
}

/* ---- the PCI function 00:01.3 ---- */

#define PMBA            0x40
#define DEVACTB         0x58
#define DEVRESA         0x5c
#define DEVRESB         0x60
#define DEVRESC         0x64
#define PMREGMISC       0x80
#define SMBBA           0x90
#define SMBHSTCFG_DWORD 0xd0
#define MOVED_BASE      0xb000

static uint32_t pm_cfg(uint32_t offset, unsigned len)
{
    return pci_bus_config_read(pm_bus, PIIX4_PM_DEVFN, offset, len);
}

static void pm_cfg_write(uint32_t offset, uint32_t value, unsigned len)
{
    pci_bus_config_write(pm_bus, PIIX4_PM_DEVFN, offset, value, len);
}

/* Whether a read at port hits nothing (and reads all ones). */
static bool port_unassigned(uint16_t port, unsigned size)
{
    uint32_t value = 0;
    bool unassigned = address_space_read(address_space_io, port, &value, size) ==
                      MEMTX_UNASSIGNED;
    return unassigned && value == (size == 4 ? 0xffffffff : (1u << (8 * size)) - 1);
}

/* Whether the PM timer decodes at base + 8. */
static bool pm_timer_at(uint16_t base)
{
    uint64_t offset;
    MemoryRegion *mr = address_space_lookup(address_space_io, base + ACPI_PM_TMR_OFFSET,
                                            &offset);
    return mr && strcmp(mr->name, "acpi-pm-timer") == 0 && offset == 0;
}

/* The dwords Debian's QEMU 7.2 shows a guest after SeaBIOS (with COM1 and
 * without a parallel port), as tests/functional/tiny pmconf reads them. */
static void test_pm_function_config(void)
{
    device_reset_all();
    static const struct { uint32_t offset, value; } expected[] = {
        { 0x00, 0x71138086 }, { 0x04, 0x02800103 }, { 0x08, 0x06800003 },
        { 0x0c, 0x00000000 }, { 0x10, 0x00000000 }, { 0x2c, 0x11001af4 },
        { 0x34, 0x00000000 }, { 0x3c, 0x00000109 }, { PMBA, 0x00000601 },
        { DEVACTB, 0x02000000 }, { DEVRESA, 0x10000000 }, { DEVRESB, 0x60000000 },
        { PMREGMISC, 0x00000001 }, { SMBBA, 0x00000701 }, { SMBHSTCFG_DWORD, 0x00090000 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
        g_assert_cmphex(pm_cfg(expected[i].offset, 4), ==, expected[i].value);
    }
    /* As on QEMU, every device-specific byte is writable. */
    for (uint32_t offset = 0x40; offset < 0x100; offset += 4) {
        uint32_t saved = pm_cfg(offset, 4);
        pm_cfg_write(offset, 0xffffffff, 4);
        g_assert_cmphex(pm_cfg(offset, 4), ==, 0xffffffff);
        pm_cfg_write(offset, saved, 4);
    }
    /* The header's ids are not. */
    pm_cfg_write(0x00, 0, 4);
    g_assert_cmphex(pm_cfg(0x00, 4), ==, 0x71138086);
    g_assert_true(pm_timer_at(ACPI_PM_BASE));
}

/* The SCI is IRQ 9, not the function's INTx: STATUS.INTERRUPT stays clear
 * and INTX_DISABLE does not mask it. */
static void test_pm_function_sci_is_not_intx(void)
{
    pm_reset();
    pm_cfg_write(PCI_COMMAND, 0x0103 | PCI_COMMAND_INTX_DISABLE, 2);
    /* Enabled first: as on QEMU, a press latches only when the guest
     * enabled the button. */
    outw(PM1_EN, STS_PWRBTN);
    acpi_pm_power_button(pm);
    g_assert_true(irq_line_level(ACPI_SCI_IRQ));
    g_assert_cmphex(pm_cfg(PCI_STATUS, 2), ==, 0x0280);
    pm_reset();
    g_assert_cmphex(pm_cfg(PCI_COMMAND, 2), ==, 0x0103);
}

/* PMBA moves the PM I/O space, PMREGMISC bit 0 switches it off and on,
 * and a reset puts it back where the FADT says. */
static void test_pm_function_moves_io(void)
{
    pm_reset();
    pm_cfg_write(PMBA, MOVED_BASE | 1, 4);
    g_assert_true(pm_timer_at(MOVED_BASE));
    g_assert_false(pm_timer_at(ACPI_PM_BASE));
    g_assert_true(port_unassigned(ACPI_PM_BASE + ACPI_PM_TMR_OFFSET, 4));
    outw(MOVED_BASE + 2, STS_RTC);
    g_assert_cmphex(inw(MOVED_BASE + 2), ==, STS_RTC);
    /* The 64-byte space's holes read all ones, as unassigned ports. */
    g_assert_true(port_unassigned(MOVED_BASE + 0x20, 4));

    /* A byte write of PMREGMISC turns decoding off, then on again. */
    pm_cfg_write(PMREGMISC, 0, 1);
    g_assert_false(pm_timer_at(MOVED_BASE));
    g_assert_true(port_unassigned(MOVED_BASE + 2, 2));
    pm_cfg_write(PMREGMISC, 1, 1);
    g_assert_true(pm_timer_at(MOVED_BASE));
    g_assert_cmphex(inw(MOVED_BASE + 2), ==, STS_RTC);     /* the registers kept */

    /* Only bits 15:6 place it; a byte write of PMBA's high byte moves it. */
    pm_cfg_write(PMBA + 1, 0xc0, 1);
    g_assert_true(pm_timer_at(0xc000));
    pm_cfg_write(PMBA, 0x0000b03f, 4);
    g_assert_true(pm_timer_at(MOVED_BASE));

    pm_reset();
    g_assert_cmphex(pm_cfg(PMBA, 4), ==, 0x601);
    g_assert_cmphex(pm_cfg(PMREGMISC, 1), ==, 1);
    g_assert_true(pm_timer_at(ACPI_PM_BASE));
    g_assert_false(pm_timer_at(MOVED_BASE));
    g_assert_cmphex(inw(PM1_EN), ==, 0);
}

/* Odd PMBA values are kept (as QEMU keeps them) and logged; a PM space
 * moved over another device loses to it and says so. */
static void test_pm_function_odd_pmba_logged(void)
{
    if (!g_test_subprocess()) {
        g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
        g_test_trap_assert_passed();
        g_test_trap_assert_stderr("*PMBA 0xffffb001: bits 0xffff0000 are not part of the "
                                  "I/O base*");
        g_test_trap_assert_stderr("*PM I/O at 0x3c0 overlaps blocker, which hides it*");
        return;
    }
    qemu_loglevel = LOG_GUEST_ERROR;
    pm_cfg_write(PMBA, 0xffffb001, 4);
    g_assert_cmphex(pm_cfg(PMBA, 4), ==, 0xffffb001);
    g_assert_true(pm_timer_at(MOVED_BASE));

    static const MemoryRegionOps blocker_ops = { .max_access_size = 1 };
    static MemoryRegion blocker;
    static QEMUDevice blocker_dev;
    device_init(&blocker_dev, "blocker", "blocker");
    memory_region_init_io(&blocker, &blocker_dev, &blocker_ops, NULL, "blocker", 8);
    address_space_map(address_space_io, &blocker, 0x3c0, 0);
    pm_cfg_write(PMBA, 0x3c1, 4);
    uint64_t offset;
    g_assert_true(address_space_lookup(address_space_io, 0x3c0, &offset) == &blocker);
    g_assert_true(pm_timer_at(0x3c0));     /* what the blocker leaves uncovered still decodes */
}

/* DEVRESC tells which COM ports the machine has, as QEMU's does. */
static void test_pm_function_devresc(void)
{
    acpi_pm_machine_done(pm);
    g_assert_cmphex(pm_cfg(DEVRESC, 4), ==, 0);
    static MemoryRegion com;
    static QEMUDevice com_dev;
    static const MemoryRegionOps com_ops = { .max_access_size = 1 };
    device_init(&com_dev, "com", "com");
    memory_region_init_io(&com, &com_dev, &com_ops, NULL, "com2", 8);
    address_space_map(address_space_io, &com, 0x2f8, 0);
    acpi_pm_machine_done(pm);
    g_assert_cmphex(pm_cfg(DEVRESC, 4), ==, 0x90000000);
    address_space_unmap(address_space_io, &com);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    Error *err = NULL;
    pm_bus = pci_bus_new(NULL);
    pm = acpi_pm_new(pm_bus, &err);
    g_assert_null(err);
    g_assert_nonnull(pm);

    g_test_add_func("/acpi/aml/integers", test_aml_integers);
    g_test_add_func("/acpi/aml/pkg-length", test_aml_pkg_length);
    g_test_add_func("/acpi/aml/names", test_aml_names);
    g_test_add_func("/acpi/aml/containers", test_aml_containers);
    g_test_add_func("/acpi/aml/eisaid", test_aml_eisaid);
    g_test_add_func("/acpi/aml/resources", test_aml_resources);
    g_test_add_func("/acpi/tables/rsdt-xsdt", test_tables_rsdt_xsdt);
    g_test_add_func("/acpi/tables/fadt", test_tables_fadt);
    g_test_add_func("/acpi/tables/madt", test_tables_madt);
    g_test_add_func("/acpi/tables/dsdt", test_tables_dsdt);
    g_test_add_func("/acpi/tables/errors", test_tables_errors);
    g_test_add_func("/acpi/tables/many-cpus", test_tables_many_cpus);
    g_test_add_func("/acpi/tables/dsdt-iasl", test_dsdt_iasl);
    g_test_add_func("/acpi/pm/timer", test_pm_timer);
    g_test_add_func("/acpi/pm/timer-lockless", test_pm_timer_lockless);
    g_test_add_func("/acpi/pm/timer-concurrent", test_pm_timer_concurrent);
    g_test_add_func("/acpi/pm/control", test_pm_control);
    g_test_add_func("/acpi/pm/status-sci", test_pm_status_and_sci);
    g_test_add_func("/acpi/pm/second-device", test_pm_second_device_refused);
    g_test_add_func("/acpi/pm/function-config", test_pm_function_config);
    g_test_add_func("/acpi/pm/function-sci-not-intx", test_pm_function_sci_is_not_intx);
    g_test_add_func("/acpi/pm/function-moves-io", test_pm_function_moves_io);
    g_test_add_func("/acpi/pm/function-odd-pmba-logged", test_pm_function_odd_pmba_logged);
    g_test_add_func("/acpi/pm/function-devresc", test_pm_function_devresc);
    return g_test_run();
}
