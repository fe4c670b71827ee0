/* The BIOS-style memory map (e820) handed to the guest. */
#ifndef HW_I386_E820_H
#define HW_I386_E820_H

#include <stdbool.h>
#include <stdint.h>

enum {
    E820_RAM = 1,
    E820_RESERVED = 2,
    E820_ACPI = 3,
    E820_NVS = 4,
};

#define E820_MAX_ENTRIES 32

typedef struct E820Entry {
    uint64_t addr;
    uint64_t size;
    uint32_t type;
} E820Entry;

typedef struct E820Table {
    E820Entry entries[E820_MAX_ENTRIES];
    unsigned count;
} E820Table;

/* Append an entry (entries are kept in the order added; callers add them in
 * address order). Returns false if the table is full. */
bool e820_add(E820Table *table, uint64_t addr, uint64_t size, uint32_t type);

#endif
