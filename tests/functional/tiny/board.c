/*
 * "board" on the tiny guest's command line: what a libvirt-style command
 * line (bus=pci.0,addr=..., multifunction=, -global PIIX4_PM.disable_s3=1)
 * gives the guest, printed so that runs under two VMMs compare line by
 * line:
 *   tiny: board sleep-state S3 yes|no    (\_S3 / \_S4 / \_S5 in the DSDT,
 *   tiny: board sleep-state S4 yes|no     as an OS decides which states
 *   tiny: board sleep-state S5 yes|no     it offers)
 *   tiny: board pci <slot> <vendor:device> header <type>   (bus 0, function
 *                                                           0 of each slot)
 */
#include "tiny.h"

#define FADT_DSDT           40
#define ACPI_HEADER_LEN     36
#define AML_NAME_OP         0x08
#define PCI_VENDOR_DEVICE   0x00
#define PCI_HEADER_TYPE_REG 0x0c        /* the dword holding byte 0x0e */
#define PCI_SLOTS           32

/* Name(_Sx_, ...) at the top level of the DSDT, as the OS reads it. */
static int dsdt_names(uint32_t dsdt, const char name[4])
{
    const uint8_t *p = (const uint8_t *)dsdt;
    uint32_t len = rd32(dsdt + 4);
    for (uint32_t i = ACPI_HEADER_LEN; i + 5 <= len; i++) {
        if (p[i] == AML_NAME_OP && p[i + 1] == name[0] && p[i + 2] == name[1] &&
            p[i + 3] == name[2] && p[i + 4] == name[3]) {
            return 1;
        }
    }
    return 0;
}

static void report_sleep_states(void)
{
    uint32_t fadt = find_fadt();
    if (!fadt) {
        puts_serial("tiny: board no FADT\n");
        return;
    }
    uint32_t dsdt = rd32(fadt + FADT_DSDT);
    static const char states[][5] = { "_S3_", "_S4_", "_S5_" };
    for (unsigned i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        puts_serial("tiny: board sleep-state S");
        putc_serial(states[i][2]);
        puts_serial(dsdt_names(dsdt, states[i]) ? " yes\n" : " no\n");
    }
}

static void report_pci_slots(void)
{
    for (unsigned slot = 0; slot < PCI_SLOTS; slot++) {
        outl(PCI_CONFIG_ADDRESS, pci_config_address(slot, PCI_VENDOR_DEVICE));
        uint32_t id = inl(PCI_CONFIG_DATA);
        if ((id & 0xffff) == 0xffff) {
            continue;
        }
        outl(PCI_CONFIG_ADDRESS, pci_config_address(slot, PCI_HEADER_TYPE_REG));
        uint32_t header = (inl(PCI_CONFIG_DATA) >> 16) & 0xff;
        puts_serial("tiny: board pci ");
        put_dec(slot);
        puts_serial(" ");
        put_hex(id);
        puts_serial(" header ");
        put_hex(header);
        putc_serial('\n');
    }
}

void run_board(void)
{
    report_sleep_states();
    report_pci_slots();
}
