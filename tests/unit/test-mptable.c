/*
 * hw/i386/mptable.c: the tables are parsed back the way an OS finds and
 * walks them (MP spec 1.4, section 4), independently of the writer.
 */
#include <string.h>
#include <glib.h>
#include "hw/i386/mptable.h"
#include "qemu/byte-order.h"
#include "qemu/bytesum.h"

#define RAM_1M          0x100000ULL
#define BIOS_AREA_START 0xf0000ULL
#define BIOS_AREA_END   0x100000ULL
#define MAX_CPUS        255
#define MAX_ROUTES      160

typedef struct ParsedCpu {
    uint8_t apic_id, apic_version, flags;
    uint32_t signature, features;
} ParsedCpu;

typedef struct ParsedRoute {
    uint8_t irq_type;
    uint16_t flags;
    uint8_t bus, bus_irq, dest_id, dest_pin;
} ParsedRoute;

typedef struct ParsedMP {
    uint32_t table_addr;
    uint8_t fp_spec_rev;
    uint8_t fp_features[5];
    uint8_t spec_rev;
    char oem_id[9];
    uint32_t oem_table_addr;
    uint16_t oem_table_size, ext_length;
    uint32_t lapic_addr;
    unsigned ncpus, nbuses, nioapics, nio_routes, nlocal_routes;
    ParsedCpu cpus[MAX_CPUS];
    uint8_t bus_id;
    char bus_type[7];
    uint8_t ioapic_id, ioapic_version, ioapic_flags;
    uint32_t ioapic_addr;
    ParsedRoute io_routes[MAX_ROUTES];
    ParsedRoute local_routes[MAX_ROUTES];
} ParsedMP;

typedef struct Guest {
    uint8_t *ram;
    GuestMemory mem;
} Guest;

/* RAM starts as garbage so that a byte the builder forgets shows up. */
#define RAM_POISON 0xa5

static void guest_init(Guest *g, uint64_t size)
{
    g->ram = g_malloc(size);
    memset(g->ram, RAM_POISON, size);
    g->mem = (GuestMemory){ .host = g->ram, .below_4g = size };
}

static void assert_zero(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        g_assert_cmpuint(p[i], ==, 0);
    }
}

static void parse_route(const uint8_t *e, ParsedRoute *r)
{
    *r = (ParsedRoute){
        .irq_type = e[1], .flags = get_le16(e + 2), .bus = e[4],
        .bus_irq = e[5], .dest_id = e[6], .dest_pin = e[7],
    };
}

/* One configuration table entry; returns its size, asserting the spec's
 * ordering by type. */
static size_t parse_entry(ParsedMP *mp, const uint8_t *e, uint8_t *last_type)
{
    g_assert_cmpuint(e[0], >=, *last_type);
    *last_type = e[0];
    switch (e[0]) {
    case 0:
        assert_zero(e + 12, 8);     /* reserved */
        g_assert_cmpuint(mp->ncpus, <, MAX_CPUS);
        mp->cpus[mp->ncpus++] = (ParsedCpu){
            .apic_id = e[1], .apic_version = e[2], .flags = e[3],
            .signature = get_le32(e + 4), .features = get_le32(e + 8),
        };
        return 20;
    case 1:
        mp->nbuses++;
        mp->bus_id = e[1];
        memcpy(mp->bus_type, e + 2, 6);
        return 8;
    case 2:
        mp->nioapics++;
        mp->ioapic_id = e[1];
        mp->ioapic_version = e[2];
        mp->ioapic_flags = e[3];
        mp->ioapic_addr = get_le32(e + 4);
        return 8;
    case 3:
        g_assert_cmpuint(mp->nio_routes, <, MAX_ROUTES);
        parse_route(e, &mp->io_routes[mp->nio_routes++]);
        return 8;
    case 4:
        g_assert_cmpuint(mp->nlocal_routes, <, MAX_ROUTES);
        parse_route(e, &mp->local_routes[mp->nlocal_routes++]);
        return 8;
    default:
        g_assert_not_reached();
    }
}

static const uint8_t *find_floating_pointer(const Guest *g)
{
    for (uint64_t addr = BIOS_AREA_START; addr < BIOS_AREA_END; addr += 16) {
        const uint8_t *p = g->ram + addr;
        size_t length = p[8] * 16;
        if (memcmp(p, "_MP_", 4) == 0 && length && addr + length <= BIOS_AREA_END &&
            byte_sum(p, length) == 0) {
            return p;
        }
    }
    return NULL;
}

static void parse_mp(const Guest *g, ParsedMP *mp)
{
    memset(mp, 0, sizeof(*mp));
    const uint8_t *fp = find_floating_pointer(g);
    g_assert_nonnull(fp);
    g_assert_cmpuint(fp[8], ==, 1);
    mp->fp_spec_rev = fp[9];
    memcpy(mp->fp_features, fp + 11, 5);
    mp->table_addr = get_le32(fp + 4);

    g_assert_cmpuint(mp->table_addr, <, g->mem.below_4g - 44);
    const uint8_t *hdr = g->ram + mp->table_addr;
    g_assert_cmpmem(hdr, 4, "PCMP", 4);
    uint16_t length = get_le16(hdr + 4);
    g_assert_cmpuint(mp->table_addr + length, <=, g->mem.below_4g);
    g_assert_cmpuint(byte_sum(hdr, length), ==, 0);
    mp->spec_rev = hdr[6];
    memcpy(mp->oem_id, hdr + 8, 8);
    mp->oem_table_addr = get_le32(hdr + 28);
    mp->oem_table_size = get_le16(hdr + 32);
    mp->lapic_addr = get_le32(hdr + 36);
    mp->ext_length = get_le16(hdr + 40);
    assert_zero(hdr + 42, 2);       /* extended checksum, reserved */

    uint16_t count = get_le16(hdr + 34);
    size_t offset = 44;
    uint8_t last_type = 0;
    for (uint16_t i = 0; i < count; i++) {
        g_assert_cmpuint(offset, <, length);
        offset += parse_entry(mp, hdr + offset, &last_type);
    }
    g_assert_cmpuint(offset, ==, length);
}

static void build_and_check(const uint32_t *apic_ids, unsigned ncpus)
{
    Guest g;
    guest_init(&g, RAM_1M);
    MPTableConfig cfg = {
        .ncpus = ncpus, .apic_ids = apic_ids,
        .cpu_signature = 0x000806f8, .cpu_features = 0x178bfbff,
    };
    uint8_t ioapic_id = 0;
    Error *err = NULL;
    g_assert_true(mptable_build(&g.mem, &cfg, &ioapic_id, &err));
    g_assert_null(err);

    ParsedMP mp;
    parse_mp(&g, &mp);
    g_assert_true(find_floating_pointer(&g) == g.ram + MPTABLE_ADDR);
    g_assert_cmpuint(mp.table_addr, ==, MPTABLE_ADDR + 16);
    g_assert_cmpuint(mp.fp_spec_rev, ==, 4);
    assert_zero(mp.fp_features, sizeof(mp.fp_features));
    g_assert_cmpuint(mp.spec_rev, ==, 4);
    g_assert_cmpstr(mp.oem_id, ==, "QEMUPDL ");
    g_assert_cmpuint(mp.oem_table_addr, ==, 0);
    g_assert_cmpuint(mp.oem_table_size, ==, 0);
    g_assert_cmpuint(mp.ext_length, ==, 0);
    g_assert_cmpuint(mp.lapic_addr, ==, 0xfee00000);

    uint32_t max_apic_id = 0;
    g_assert_cmpuint(mp.ncpus, ==, ncpus);
    for (unsigned i = 0; i < ncpus; i++) {
        g_assert_cmpuint(mp.cpus[i].apic_id, ==, apic_ids[i]);
        g_assert_cmpuint(mp.cpus[i].apic_version, ==, 0x14);
        g_assert_cmpuint(mp.cpus[i].flags, ==, i == 0 ? 0x3 : 0x1);
        g_assert_cmpuint(mp.cpus[i].signature, ==, 0x000806f8);
        g_assert_cmpuint(mp.cpus[i].features, ==, 0x178bfbff);
        max_apic_id = MAX(max_apic_id, apic_ids[i]);
    }

    g_assert_cmpuint(mp.nbuses, ==, 1);
    g_assert_cmpuint(mp.bus_id, ==, 0);
    g_assert_cmpstr(mp.bus_type, ==, "ISA   ");

    g_assert_cmpuint(mp.nioapics, ==, 1);
    g_assert_cmpuint(mp.ioapic_id, ==, max_apic_id + 1);
    g_assert_cmpuint(ioapic_id, ==, max_apic_id + 1);
    g_assert_cmpuint(mp.ioapic_version, ==, 0x11);
    g_assert_cmpuint(mp.ioapic_flags, ==, 1);
    g_assert_cmpuint(mp.ioapic_addr, ==, 0xfec00000);

    /* ISA IRQs 0-15 but the cascade, in order; IRQ 0 on pin 2. */
    g_assert_cmpuint(mp.nio_routes, ==, 15);
    for (unsigned i = 0; i < mp.nio_routes; i++) {
        const ParsedRoute *r = &mp.io_routes[i];
        unsigned irq = i < 2 ? i : i + 1;
        g_assert_cmpuint(r->irq_type, ==, 0);
        g_assert_cmpuint(r->flags, ==, 0);
        g_assert_cmpuint(r->bus, ==, 0);
        g_assert_cmpuint(r->bus_irq, ==, irq);
        g_assert_cmpuint(r->dest_id, ==, mp.ioapic_id);
        g_assert_cmpuint(r->dest_pin, ==, irq == 0 ? 2 : irq);
    }

    g_assert_cmpuint(mp.nlocal_routes, ==, 2);
    g_assert_cmpuint(mp.local_routes[0].irq_type, ==, 3);   /* ExtINT */
    g_assert_cmpuint(mp.local_routes[0].dest_pin, ==, 0);
    g_assert_cmpuint(mp.local_routes[1].irq_type, ==, 1);   /* NMI */
    g_assert_cmpuint(mp.local_routes[1].dest_pin, ==, 1);
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(mp.local_routes[i].dest_id, ==, 0xff);
        g_assert_cmpuint(mp.local_routes[i].flags, ==, 0);
    }
    g_free(g.ram);
}

static void test_one_cpu(void)
{
    static const uint32_t ids[] = { 0 };
    build_and_check(ids, G_N_ELEMENTS(ids));
}

static void test_two_cpus(void)
{
    static const uint32_t ids[] = { 0, 1 };
    build_and_check(ids, G_N_ELEMENTS(ids));
}

static void test_sparse_apic_ids(void)
{
    static const uint32_t ids[] = { 0, 1, 4, 5 };
    build_and_check(ids, G_N_ELEMENTS(ids));
}

/* The BSP need not have the lowest APIC id; the maximum sets the IOAPIC id. */
static void test_bsp_not_lowest(void)
{
    static const uint32_t ids[] = { 6, 2, 0 };
    build_and_check(ids, G_N_ELEMENTS(ids));
}

static void test_max_cpus(void)
{
    uint32_t ids[MAX_CPUS];
    for (unsigned i = 0; i < MAX_CPUS; i++) {
        ids[i] = i;
    }
    build_and_check(ids, MAX_CPUS);
}

static void expect_failure(Guest *g, const uint32_t *ids, unsigned ncpus,
                           const char *message_part)
{
    MPTableConfig cfg = { .ncpus = ncpus, .apic_ids = ids };
    uint8_t ioapic_id = 0x42;
    Error *err = NULL;
    g_assert_false(mptable_build(&g->mem, &cfg, &ioapic_id, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, message_part));
    g_assert_cmpuint(ioapic_id, ==, 0x42);
    error_free(err);
    /* Nothing was written: no OS would find a half-built table. */
    g_assert_null(find_floating_pointer(g));
}

static void test_ram_too_small(void)
{
    static const uint32_t ids[] = { 0, 1 };
    Guest g;
    guest_init(&g, RAM_1M);
    g.mem.below_4g = 512 * 1024;
    expect_failure(&g, ids, G_N_ELEMENTS(ids), "guest RAM");

    /* Room for the floating pointer but not the whole table. */
    g.mem.below_4g = MPTABLE_ADDR + 0x40;
    expect_failure(&g, ids, G_N_ELEMENTS(ids), "guest RAM");
    g_free(g.ram);
}

static void test_ioapic_id_overflow(void)
{
    static const uint32_t ids[] = { 0, 255 };
    static const uint32_t wide_ids[] = { 0, 0x100 };
    Guest g;
    guest_init(&g, RAM_1M);
    expect_failure(&g, ids, G_N_ELEMENTS(ids), "IOAPIC");
    expect_failure(&g, wide_ids, G_N_ELEMENTS(wide_ids), "IOAPIC");
    g_free(g.ram);
}

static void test_highest_usable_apic_id(void)
{
    static const uint32_t ids[] = { 0, 254 };
    build_and_check(ids, G_N_ELEMENTS(ids));
}

static void test_no_cpus(void)
{
    Guest g;
    guest_init(&g, RAM_1M);
    expect_failure(&g, NULL, 0, "no vCPUs");
    g_free(g.ram);
}

static void test_too_many_cpus(void)
{
    /* 4000 processor entries overflow the 64 KiB BIOS area. */
    enum { N = 4000 };
    uint32_t *ids = g_new0(uint32_t, N);
    Guest g;
    guest_init(&g, RAM_1M);
    expect_failure(&g, ids, N, "bytes");
    g_free(ids);
    g_free(g.ram);
}

static unsigned swizzle_to_gsi(unsigned slot, unsigned pin)
{
    return 16 + ((slot + pin - 1) & 3);
}

/* With a PCI bus: PCI is MP bus 0 (Linux takes MP bus ids for PCI bus
 * numbers) and ISA bus 1; after the ISA routes, one level/active-low route
 * per slot 1-31 and pin, to the GSI map_irq names. */
static void test_pci_routes(void)
{
    static const uint32_t ids[] = { 0 };
    Guest g;
    guest_init(&g, RAM_1M);
    MPTableConfig cfg = { .ncpus = 1, .apic_ids = ids, .pci_map_irq = swizzle_to_gsi };
    Error *err = NULL;
    g_assert_true(mptable_build(&g.mem, &cfg, NULL, &err));

    ParsedMP mp;
    parse_mp(&g, &mp);
    g_assert_cmpuint(mp.nbuses, ==, 2);
    g_assert_cmpuint(mp.bus_id, ==, 1);     /* the last bus entry */
    g_assert_cmpstr(mp.bus_type, ==, "ISA   ");
    g_assert_cmpuint(mp.nio_routes, ==, 15 + 31 * 4);
    for (unsigned i = 0; i < 15; i++) {
        g_assert_cmpuint(mp.io_routes[i].bus, ==, 1);
    }
    g_assert_cmpuint(mp.local_routes[0].bus, ==, 1);
    for (unsigned i = 15; i < mp.nio_routes; i++) {
        const ParsedRoute *r = &mp.io_routes[i];
        unsigned slot = (i - 15) / 4 + 1, pin = (i - 15) % 4 + 1;
        g_assert_cmpuint(r->bus, ==, 0);
        g_assert_cmpuint(r->flags, ==, 0xf);
        g_assert_cmpuint(r->bus_irq, ==, (slot << 2) | (pin - 1));
        g_assert_cmpuint(r->dest_id, ==, mp.ioapic_id);
        g_assert_cmpuint(r->dest_pin, ==, swizzle_to_gsi(slot, pin));
    }
    g_free(g.ram);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mptable/one-cpu", test_one_cpu);
    g_test_add_func("/mptable/two-cpus", test_two_cpus);
    g_test_add_func("/mptable/sparse-apic-ids", test_sparse_apic_ids);
    g_test_add_func("/mptable/bsp-not-lowest", test_bsp_not_lowest);
    g_test_add_func("/mptable/max-cpus", test_max_cpus);
    g_test_add_func("/mptable/highest-usable-apic-id", test_highest_usable_apic_id);
    g_test_add_func("/mptable/ram-too-small", test_ram_too_small);
    g_test_add_func("/mptable/ioapic-id-overflow", test_ioapic_id_overflow);
    g_test_add_func("/mptable/no-cpus", test_no_cpus);
    g_test_add_func("/mptable/too-many-cpus", test_too_many_cpus);
    g_test_add_func("/mptable/pci-routes", test_pci_routes);
    return g_test_run();
}
