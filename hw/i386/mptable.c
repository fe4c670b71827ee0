/*
 * Intel MultiProcessor Specification 1.4 tables: the floating pointer
 * structure followed by a base configuration table with processor, bus,
 * I/O APIC, I/O interrupt and local interrupt entries (in that order, as
 * the spec requires entries to be sorted by type).
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include "hw/i386/mptable.h"
#include "qemu/bytesum.h"

#define MP_SPEC_REV             4       /* MP spec 1.4 */
#define MP_LAPIC_VERSION        0x14    /* integrated xAPIC, as KVM emulates */
#define MP_IOAPIC_VERSION       0x11    /* the 82093AA-style IOAPIC KVM emulates */
#define MP_APIC_ID_ALL          0xff    /* a local interrupt entry for every CPU */
/* The PCI bus's MP id is its bus number, 0: Linux looks PCI interrupt
 * routes up by bus number in the MP ids. The ISA bus takes the next id. */
#define MP_PCI_BUS_ID           0
#define MP_PCI_FIRST_SLOT       1       /* slot 0, the host bridge, interrupts nobody */
#define MP_PCI_PINS             4
#define MP_PCI_ROUTES           ((PCI_SLOT_MAX - MP_PCI_FIRST_SLOT) * MP_PCI_PINS)
#define MP_ISA_IRQS             16
#define MP_ISA_CASCADE_IRQ      2       /* the 8259 cascade: no IOAPIC pin */
#define MP_PIT_IRQ              0
#define MP_PIT_IOAPIC_PIN       2       /* where PC chipsets wire the PIT */

enum {
    MP_ENTRY_PROCESSOR = 0,
    MP_ENTRY_BUS = 1,
    MP_ENTRY_IOAPIC = 2,
    MP_ENTRY_IO_INTERRUPT = 3,
    MP_ENTRY_LOCAL_INTERRUPT = 4,
};

enum {
    MP_INT_INT = 0,
    MP_INT_NMI = 1,
    MP_INT_EXTINT = 3,
};

#define MP_CPU_ENABLED          0x01
#define MP_CPU_BOOT_PROCESSOR   0x02
#define MP_IOAPIC_ENABLED       0x01
#define MP_IRQ_FLAGS_CONFORM    0x0000  /* polarity and trigger of the bus (ISA: edge, high) */
#define MP_IRQ_FLAGS_PCI        0x000f  /* active low (3), level triggered (3 << 2) */

typedef struct __attribute__((packed)) MPFloatingPointer {
    char signature[4];          /* "_MP_" */
    uint32_t config_table_addr;
    uint8_t length_paragraphs;  /* in 16-byte units */
    uint8_t spec_rev;
    uint8_t checksum;
    uint8_t features[5];        /* all 0: a configuration table is present */
} MPFloatingPointer;

typedef struct __attribute__((packed)) MPConfigHeader {
    char signature[4];          /* "PCMP" */
    uint16_t base_table_length;
    uint8_t spec_rev;
    uint8_t checksum;
    char oem_id[8];
    char product_id[12];
    uint32_t oem_table_addr;
    uint16_t oem_table_size;
    uint16_t entry_count;
    uint32_t lapic_addr;
    uint16_t ext_table_length;
    uint8_t ext_table_checksum;
    uint8_t reserved;
} MPConfigHeader;

typedef struct __attribute__((packed)) MPProcessorEntry {
    uint8_t type;
    uint8_t lapic_id;
    uint8_t lapic_version;
    uint8_t cpu_flags;
    uint32_t cpu_signature;
    uint32_t feature_flags;
    uint8_t reserved[8];
} MPProcessorEntry;

typedef struct __attribute__((packed)) MPBusEntry {
    uint8_t type;
    uint8_t bus_id;
    char bus_type[6];
} MPBusEntry;

typedef struct __attribute__((packed)) MPIOAPICEntry {
    uint8_t type;
    uint8_t ioapic_id;
    uint8_t ioapic_version;
    uint8_t flags;
    uint32_t addr;
} MPIOAPICEntry;

/* Layout shared by I/O interrupt (type 3) and local interrupt (type 4)
 * entries; dest_apic_id/dest_pin are the IOAPIC id and INTIN# for the
 * former, the local APIC id and LINTIN# for the latter. */
typedef struct __attribute__((packed)) MPInterruptEntry {
    uint8_t type;
    uint8_t interrupt_type;
    uint16_t flags;
    uint8_t source_bus_id;
    uint8_t source_bus_irq;
    uint8_t dest_apic_id;
    uint8_t dest_pin;
} MPInterruptEntry;

_Static_assert(sizeof(MPFloatingPointer) == 16, "MP floating pointer is 16 bytes");
_Static_assert(sizeof(MPConfigHeader) == 44, "MP configuration table header is 44 bytes");
_Static_assert(sizeof(MPProcessorEntry) == 20, "MP processor entry is 20 bytes");
_Static_assert(sizeof(MPBusEntry) == 8, "MP bus entry is 8 bytes");
_Static_assert(sizeof(MPIOAPICEntry) == 8, "MP I/O APIC entry is 8 bytes");
_Static_assert(sizeof(MPInterruptEntry) == 8, "MP interrupt entry is 8 bytes");

#define MP_IO_INTERRUPT_ENTRIES  (MP_ISA_IRQS - 1)     /* all but the cascade */
#define MP_LOCAL_INTERRUPT_ENTRIES 2                    /* ExtINT and NMI */
#define MP_CONFIG_TABLE_ADDR     (MPTABLE_ADDR + sizeof(MPFloatingPointer))

/* Bytes of the base configuration table (header and entries) for ncpus. */
static uint64_t mp_config_table_size(const MPTableConfig *cfg)
{
    uint64_t pci = cfg->pci_map_irq ?
        sizeof(MPBusEntry) + MP_PCI_ROUTES * sizeof(MPInterruptEntry) : 0;
    return sizeof(MPConfigHeader) +
           (uint64_t)cfg->ncpus * sizeof(MPProcessorEntry) +
           sizeof(MPBusEntry) + sizeof(MPIOAPICEntry) +
           MP_IO_INTERRUPT_ENTRIES * sizeof(MPInterruptEntry) + pci +
           MP_LOCAL_INTERRUPT_ENTRIES * sizeof(MPInterruptEntry);
}

/* The IOAPIC takes the first id above every local APIC id, so the two
 * never collide on the APIC bus. */
static bool mp_choose_ioapic_id(const MPTableConfig *cfg, uint8_t *ioapic_id,
                                Error **errp)
{
    uint32_t max_apic_id = 0;

    for (unsigned i = 0; i < cfg->ncpus; i++) {
        if (cfg->apic_ids[i] > max_apic_id) {
            max_apic_id = cfg->apic_ids[i];
        }
    }
    if (max_apic_id >= UINT8_MAX) {
        error_setg(errp, "MP table: APIC id %" PRIu32 " leaves no 8-bit id "
                   "for the IOAPIC (APIC ids must be below 255)", max_apic_id);
        return false;
    }
    *ioapic_id = max_apic_id + 1;
    return true;
}

/* Appends entries to the configuration table being built in guest RAM. */
typedef struct MPWriter {
    uint8_t *cursor;
    uint16_t entry_count;
} MPWriter;

static void mp_append(MPWriter *w, const void *entry, size_t size)
{
    memcpy(w->cursor, entry, size);
    w->cursor += size;
    w->entry_count++;
}

static void mp_append_processors(MPWriter *w, const MPTableConfig *cfg)
{
    for (unsigned i = 0; i < cfg->ncpus; i++) {
        MPProcessorEntry cpu = {
            .type = MP_ENTRY_PROCESSOR,
            .lapic_id = cfg->apic_ids[i],
            .lapic_version = MP_LAPIC_VERSION,
            .cpu_flags = MP_CPU_ENABLED | (i == 0 ? MP_CPU_BOOT_PROCESSOR : 0),
            .cpu_signature = cfg->cpu_signature,
            .feature_flags = cfg->cpu_features,
        };
        mp_append(w, &cpu, sizeof(cpu));
    }
}

static uint8_t mp_isa_bus_id(const MPTableConfig *cfg)
{
    return cfg->pci_map_irq ? MP_PCI_BUS_ID + 1 : 0;
}

static void mp_append_bus(MPWriter *w, uint8_t bus_id, const char type[6])
{
    MPBusEntry bus = {
        .type = MP_ENTRY_BUS,
        .bus_id = bus_id,
    };
    /* The bus type is blank-padded and not NUL-terminated. */
    memcpy(bus.bus_type, type, sizeof(bus.bus_type));
    mp_append(w, &bus, sizeof(bus));
}

static void mp_append_buses_and_ioapic(MPWriter *w, const MPTableConfig *cfg,
                                       uint8_t ioapic_id)
{
    if (cfg->pci_map_irq) {
        mp_append_bus(w, MP_PCI_BUS_ID, "PCI   ");
    }
    mp_append_bus(w, mp_isa_bus_id(cfg), "ISA   ");

    MPIOAPICEntry ioapic = {
        .type = MP_ENTRY_IOAPIC,
        .ioapic_id = ioapic_id,
        .ioapic_version = MP_IOAPIC_VERSION,
        .flags = MP_IOAPIC_ENABLED,
        .addr = IOAPIC_ADDR,
    };
    mp_append(w, &ioapic, sizeof(ioapic));
}

static void mp_append_isa_irq_routes(MPWriter *w, uint8_t isa_bus_id, uint8_t ioapic_id)
{
    for (uint8_t irq = 0; irq < MP_ISA_IRQS; irq++) {
        if (irq == MP_ISA_CASCADE_IRQ) {
            continue;
        }
        MPInterruptEntry route = {
            .type = MP_ENTRY_IO_INTERRUPT,
            .interrupt_type = MP_INT_INT,
            .flags = MP_IRQ_FLAGS_CONFORM,
            .source_bus_id = isa_bus_id,
            .source_bus_irq = irq,
            .dest_apic_id = ioapic_id,
            .dest_pin = irq == MP_PIT_IRQ ? MP_PIT_IOAPIC_PIN : irq,
        };
        mp_append(w, &route, sizeof(route));
    }
}

/* A PCI source is (slot << 2) | (pin - 1), INTA being pin 1. */
static void mp_append_pci_irq_routes(MPWriter *w, PCIMapIrqFn map_irq, uint8_t ioapic_id)
{
    for (unsigned slot = MP_PCI_FIRST_SLOT; slot < PCI_SLOT_MAX; slot++) {
        for (unsigned pin = 1; pin <= MP_PCI_PINS; pin++) {
            MPInterruptEntry route = {
                .type = MP_ENTRY_IO_INTERRUPT,
                .interrupt_type = MP_INT_INT,
                .flags = MP_IRQ_FLAGS_PCI,
                .source_bus_id = MP_PCI_BUS_ID,
                .source_bus_irq = (slot << 2) | (pin - 1),
                .dest_apic_id = ioapic_id,
                .dest_pin = map_irq(slot, pin),
            };
            mp_append(w, &route, sizeof(route));
        }
    }
}

/* Virtual wire mode as on a PC: the 8259 reaches every CPU's LINT0 as
 * ExtINT, NMI arrives on LINT1. */
static void mp_append_local_interrupts(MPWriter *w, uint8_t isa_bus_id)
{
    static const uint8_t types[MP_LOCAL_INTERRUPT_ENTRIES] = {
        MP_INT_EXTINT, MP_INT_NMI,
    };

    for (uint8_t lint = 0; lint < MP_LOCAL_INTERRUPT_ENTRIES; lint++) {
        MPInterruptEntry entry = {
            .type = MP_ENTRY_LOCAL_INTERRUPT,
            .interrupt_type = types[lint],
            .flags = MP_IRQ_FLAGS_CONFORM,
            .source_bus_id = isa_bus_id,
            .dest_apic_id = MP_APIC_ID_ALL,
            .dest_pin = lint,
        };
        mp_append(w, &entry, sizeof(entry));
    }
}

static void mp_write_floating_pointer(uint8_t *dst)
{
    MPFloatingPointer fp = {
        .config_table_addr = MP_CONFIG_TABLE_ADDR,
        .length_paragraphs = sizeof(MPFloatingPointer) / 16,
        .spec_rev = MP_SPEC_REV,
    };
    memcpy(fp.signature, "_MP_", sizeof(fp.signature));
    fp.checksum = byte_sum_checksum(&fp, sizeof(fp));
    memcpy(dst, &fp, sizeof(fp));
}

static void mp_write_config_header(uint8_t *dst, uint16_t table_length,
                                   uint16_t entry_count)
{
    MPConfigHeader hdr = {
        .base_table_length = table_length,
        .spec_rev = MP_SPEC_REV,
        .entry_count = entry_count,
        .lapic_addr = LAPIC_ADDR,
    };
    memcpy(hdr.signature, "PCMP", sizeof(hdr.signature));
    memcpy(hdr.oem_id, "QEMUPDL ", sizeof(hdr.oem_id));
    memcpy(hdr.product_id, "PC          ", sizeof(hdr.product_id));
    memcpy(dst, &hdr, sizeof(hdr));
    /* The checksum covers the whole base table, entries included. */
    dst[offsetof(MPConfigHeader, checksum)] = byte_sum_checksum(dst, table_length);
}

bool mptable_build(GuestMemory *mem, const MPTableConfig *cfg, uint8_t *ioapic_id,
                   Error **errp)
{
    uint8_t chosen_ioapic_id;

    if (cfg->ncpus == 0 || !cfg->apic_ids) {
        error_setg(errp, "MP table: no vCPUs to describe");
        return false;
    }
    if (!mp_choose_ioapic_id(cfg, &chosen_ioapic_id, errp)) {
        return false;
    }

    uint64_t table_size = mp_config_table_size(cfg);
    uint64_t total_size = sizeof(MPFloatingPointer) + table_size;
    if (total_size > MPTABLE_MAX_SIZE) {
        error_setg(errp, "MP table: %u vCPUs need %" PRIu64 " bytes, more than "
                   "the %llu bytes reserved at 0x%llx", cfg->ncpus, total_size,
                   MPTABLE_MAX_SIZE, MPTABLE_ADDR);
        return false;
    }
    uint8_t *dst = guest_memory_ptr(mem, MPTABLE_ADDR, total_size);
    if (!dst) {
        error_setg(errp, "MP table: guest RAM does not cover 0x%llx-0x%llx",
                   MPTABLE_ADDR, MPTABLE_ADDR + total_size - 1);
        return false;
    }

    uint8_t *table = dst + sizeof(MPFloatingPointer);
    MPWriter w = { .cursor = table + sizeof(MPConfigHeader) };
    mp_append_processors(&w, cfg);
    mp_append_buses_and_ioapic(&w, cfg, chosen_ioapic_id);
    mp_append_isa_irq_routes(&w, mp_isa_bus_id(cfg), chosen_ioapic_id);
    if (cfg->pci_map_irq) {
        mp_append_pci_irq_routes(&w, cfg->pci_map_irq, chosen_ioapic_id);
    }
    mp_append_local_interrupts(&w, mp_isa_bus_id(cfg));
    g_assert(w.cursor == table + table_size);

    mp_write_config_header(table, table_size, w.entry_count);
    mp_write_floating_pointer(dst);
    if (ioapic_id) {
        *ioapic_id = chosen_ioapic_id;
    }
    return true;
}
