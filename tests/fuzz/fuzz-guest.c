/*
 * The harness's guest: every access goes through address_space_read/write
 * on the port I/O or memory space (flat-view lookup, the owner's device
 * lock, the region's ops), as a vCPU exit would.
 */
#include <inttypes.h>
#include <stdio.h>
#include "fuzz.h"
#include "hw/pci-host/i440fx.h"

#define PCI_CONFIG_ENABLE   0x80000000u

bool fuzz_trace;

uint64_t input_take(FuzzInput *in, unsigned n)
{
    uint64_t value = 0;
    for (unsigned i = 0; i < n && in->size; i++, in->data++, in->size--) {
        value |= (uint64_t)in->data[0] << (8 * i);
    }
    return value;
}

uint64_t guest_read(AddressSpace *as, uint64_t addr, unsigned size)
{
    uint64_t value = 0;
    address_space_read(as, addr, &value, size);
    if (fuzz_trace) {
        fprintf(stderr, "  %s read  0x%" PRIx64 "/%u = 0x%" PRIx64 "\n",
                as == address_space_io ? "io " : "mem", addr, size, value);
    }
    return value;
}

void guest_write(AddressSpace *as, uint64_t addr, uint64_t value, unsigned size)
{
    if (fuzz_trace) {
        fprintf(stderr, "  %s write 0x%" PRIx64 "/%u <- 0x%" PRIx64 "\n",
                as == address_space_io ? "io " : "mem", addr, size, value);
    }
    address_space_write(as, addr, &value, size);
}

void guest_write_block(uint64_t addr, const void *buf, size_t len)
{
    if (fuzz_trace) {
        fprintf(stderr, "  mem write 0x%" PRIx64 "+%zu\n", addr, len);
    }
    address_space_write(address_space_memory, addr, buf, len);
}

static void pci_config_select(unsigned devfn, unsigned offset)
{
    guest_write(address_space_io, I440FX_CONFIG_ADDRESS,
                PCI_CONFIG_ENABLE | devfn << 8 | (offset & 0xfc), 4);
}

uint32_t pci_config_read_port(unsigned devfn, unsigned offset, unsigned size)
{
    pci_config_select(devfn, offset);
    return guest_read(address_space_io, I440FX_CONFIG_DATA + (offset & 3), size);
}

void pci_config_write_port(unsigned devfn, unsigned offset, uint32_t value, unsigned size)
{
    pci_config_select(devfn, offset);
    guest_write(address_space_io, I440FX_CONFIG_DATA + (offset & 3), value, size);
}

void pci_enable(unsigned devfn, uint16_t command_bits)
{
    uint16_t command = pci_config_read_port(devfn, PCI_COMMAND, 2);
    if ((command & command_bits) != command_bits) {
        pci_config_write_port(devfn, PCI_COMMAND, command | command_bits, 2);
    }
}

FuzzBar pci_bar(unsigned devfn, unsigned nr)
{
    unsigned offset = PCI_BASE_ADDRESS_0 + 4 * (nr % 6);
    uint32_t low = pci_config_read_port(devfn, offset, 4);
    if (low & PCI_BASE_ADDRESS_SPACE_IO) {
        return (FuzzBar) { address_space_io, low & ~3u };
    }
    uint64_t addr = low & ~0xfu;
    if ((low & PCI_BASE_ADDRESS_MEM_TYPE_64) && offset < PCI_BASE_ADDRESS_0 + 20) {
        addr |= (uint64_t)pci_config_read_port(devfn, offset + 4, 4) << 32;
    }
    return (FuzzBar) { address_space_memory, addr };
}
