/* The e820 memory map handed to the guest, and the loaders' queries of it. */
#include "hw/i386/e820.h"
#include "loader-internal.h"

bool e820_add(E820Table *table, uint64_t addr, uint64_t size, uint32_t type)
{
    if (table->count >= E820_MAX_ENTRIES) {
        return false;
    }
    table->entries[table->count++] = (E820Entry) {
        .addr = addr, .size = size, .type = type,
    };
    return true;
}

static const E820Entry *e820_ram_entry_at(const E820Table *e820, uint64_t addr)
{
    for (unsigned i = 0; i < e820->count; i++) {
        const E820Entry *e = &e820->entries[i];
        if (e->type == E820_RAM && addr >= e->addr && addr - e->addr < e->size) {
            return e;
        }
    }
    return NULL;
}

uint64_t e820_ram_run_end(const E820Table *e820, uint64_t addr)
{
    const E820Entry *e = e820_ram_entry_at(e820, addr);
    uint64_t end = 0;
    /* Entries may split one RAM range in pieces: follow adjacent ones. The
     * entry count bounds the walk even if the table is malformed. */
    for (unsigned steps = 0; e && steps <= e820->count; steps++) {
        if (e->addr + e->size < e->addr) {
            return UINT64_MAX;
        }
        end = e->addr + e->size;
        e = e820_ram_entry_at(e820, end);
    }
    return end;
}

bool e820_range_is_ram(const E820Table *e820, uint64_t addr, uint64_t len)
{
    uint64_t end = e820_ram_run_end(e820, addr);
    return end != 0 && len <= end - addr;
}
