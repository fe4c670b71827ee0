/*
 * The 82540EM's EEPROM and PHY as the driver reaches them.
 *
 * EEPROM: 64 16-bit words (EECD.SIZE clear: a 93C46-style Microwire part
 * with 6 address bits) holding the MAC in words 0..2, the PCI ids, and in
 * word 0x3f the value that makes words 0..0x3f sum to 0xbaba, which
 * Linux checks. Read through EERD (START, then DONE with the data), or
 * bit by bit through EECD: with CS high, each rising SK edge clocks DI in
 * (a start bit 1, the opcode 10b for READ, the address MSB first) and
 * then clocks the word out on DO, MSB first, continuing with the next
 * word until CS falls. EE_GNT follows EE_REQ at once: no firmware
 * competes for the EEPROM. Writes to the EEPROM are ignored.
 *
 * PHY: a Marvell M88E1011 at MDIO address 1, reached through MDIC, whose
 * link is up (auto-negotiation complete at 1000 Mb/s full duplex against
 * a partner that offers everything) whenever the NIC's backend link is.
 */
#include <string.h>
#include <glib.h>
#include "e1000-internal.h"
#include "qemu/log.h"

/* ---- EEPROM ---- */

#define EE_COMMAND_BITS     (1 + 2 + E1000_EEPROM_ADDR_BITS)
#define EE_IGNORING         UINT32_MAX  /* ee_in_bits: a command we do not serve */

void e1000_eeprom_init(E1000State *s)
{
    uint16_t *w = s->eeprom;
    memset(s->eeprom, 0, sizeof(s->eeprom));
    for (int i = 0; i < 3; i++) {
        w[i] = s->mac.a[2 * i] | s->mac.a[2 * i + 1] << 8;
    }
    w[E1000_EEPROM_ID_LED] = 0xffff;    /* the driver's default LED modes */
    w[E1000_EEPROM_SUBSYS_ID] = pci_get_word(&s->pci, PCI_SUBSYSTEM_ID);
    w[E1000_EEPROM_SUBSYS_VEN] = pci_get_word(&s->pci, PCI_SUBSYSTEM_VENDOR_ID);
    w[E1000_EEPROM_DEVICE_ID] = E1000_DEV_ID_82540EM;
    w[E1000_EEPROM_VENDOR_ID] = E1000_VENDOR_INTEL;
    uint16_t sum = 0;
    for (int i = 0; i < E1000_EEPROM_CHECKSUM; i++) {
        sum += w[i];
    }
    w[E1000_EEPROM_CHECKSUM] = (uint16_t)(E1000_EEPROM_SUM - sum);
}

static void eeprom_deselect(E1000State *s)
{
    s->ee_in = 0;
    s->ee_in_bits = 0;
    s->ee_reading = false;
    s->ee_out_bits = 0;
}

static void eeprom_load_word(E1000State *s, unsigned addr)
{
    s->ee_out = s->eeprom[addr % E1000_EEPROM_WORDS];
    s->ee_out_bits = 16;
}

/* One rising edge of SK with CS high; returns the new DO. */
static bool eeprom_clock(E1000State *s, bool di)
{
    if (s->ee_reading) {
        if (!s->ee_out_bits) {
            /* Sequential read: the next word follows. */
            eeprom_load_word(s, (s->ee_in & (E1000_EEPROM_WORDS - 1)) + 1);
            s->ee_in++;
        }
        bool bit = s->ee_out & 0x8000;
        s->ee_out <<= 1;
        s->ee_out_bits--;
        return bit;
    }
    if (s->ee_in_bits == EE_IGNORING || (!s->ee_in_bits && !di)) {
        return true;        /* idle before the start bit, or ignoring */
    }
    s->ee_in = s->ee_in << 1 | di;
    if (++s->ee_in_bits < EE_COMMAND_BITS) {
        return true;
    }
    unsigned opcode = (s->ee_in >> E1000_EEPROM_ADDR_BITS) & 3;
    if (opcode != E1000_EEPROM_READ_OP) {
        qemu_log_mask(LOG_UNIMP, "e1000: EEPROM command %u ignored (read-only)\n", opcode);
        s->ee_in_bits = EE_IGNORING;
        return true;
    }
    s->ee_in &= E1000_EEPROM_WORDS - 1;
    eeprom_load_word(s, s->ee_in);
    s->ee_reading = true;
    return false;           /* the dummy 0 that ends the address */
}

void e1000_eecd_write(E1000State *s, uint32_t value)
{
    const uint32_t pins = E1000_EECD_SK | E1000_EECD_CS | E1000_EECD_DI;
    uint32_t eecd = E1000_REG(s, E1000_EECD);
    bool do_bit = eecd & E1000_EECD_DO;
    if (!(value & E1000_EECD_CS)) {
        eeprom_deselect(s);
        do_bit = true;
    } else if ((value & E1000_EECD_SK) && !(s->eecd_last & E1000_EECD_SK)) {
        do_bit = eeprom_clock(s, value & E1000_EECD_DI);
    }
    s->eecd_last = value & pins;
    eecd = (value & (pins | E1000_EECD_FWE_MASK | E1000_EECD_REQ)) | E1000_EECD_PRES;
    if (value & E1000_EECD_REQ) {
        eecd |= E1000_EECD_GNT;
    }
    E1000_REG(s, E1000_EECD) = do_bit ? eecd | E1000_EECD_DO : eecd;
}

uint32_t e1000_eecd_read(E1000State *s)
{
    return E1000_REG(s, E1000_EECD);
}

void e1000_eerd_write(E1000State *s, uint32_t value)
{
    unsigned addr = (value >> E1000_EERD_ADDR_SHIFT) & 0xff;
    if (!(value & E1000_EERD_START)) {
        E1000_REG(s, E1000_EERD) = value & ~E1000_EERD_DONE;
        return;
    }
    uint16_t data = 0;
    if (addr < E1000_EEPROM_WORDS) {
        data = s->eeprom[addr];
    } else {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: EERD read of word 0x%x beyond the EEPROM\n",
                      addr);
    }
    E1000_REG(s, E1000_EERD) = (uint32_t)data << E1000_EERD_DATA_SHIFT |
                               addr << E1000_EERD_ADDR_SHIFT | E1000_EERD_DONE;
}

/* ---- PHY ---- */

/* BMSR's fixed abilities: 10/100 half/full, extended status, preamble
 * suppression, auto-negotiation able, extended registers. */
#define PHY_BMSR_ABILITIES      0x7949
#define PHY_BMSR_AN_COMPLETE    0x0020
#define PHY_BMSR_LINK           0x0004

/*
 * Only what the wire decides follows the link (IEEE 802.3 clause 22 and
 * 28): link status and auto-negotiation complete in BMSR, what the partner
 * offered (ANLPAR, ANER, 1000BASE-T status) and the M88's resolved
 * speed/duplex/link. Control and advertisement registers are the driver's
 * and keep what it wrote; only a PHY reset takes them back.
 */
void e1000_phy_link_update(E1000State *s)
{
    bool up = e1000_link_up(s);
    uint16_t *p = s->phy;
    p[MII_BMSR] = PHY_BMSR_ABILITIES | (up ? PHY_BMSR_AN_COMPLETE | PHY_BMSR_LINK : 0);
    p[MII_ANLPAR] = up ? 0x45e1 : 0;    /* acknowledged, 10/100 both, pause */
    p[MII_ANER] = up ? 0x0001 : 0;      /* the partner negotiates */
    p[MII_STAT1000] = up ? 0x3c00 : 0;  /* partner 1000 half/full, receivers OK */
    /* 1000 Mb/s, full duplex, speed/duplex resolved, link up. */
    p[M88_PHY_SPEC_STATUS] = up ? 0xac00 : 0;
}

void e1000_phy_reset(E1000State *s)
{
    uint16_t *p = s->phy;
    memset(s->phy, 0, sizeof(s->phy));
    p[MII_BMCR] = 0x1140;           /* auto-negotiation on, full duplex, 1000 */
    p[MII_PHYID1] = M88E1011_PHY_ID1;
    p[MII_PHYID2] = M88E1011_PHY_ID2;
    p[MII_ANAR] = 0x0de1;
    p[MII_CTRL1000] = 0x0e00;
    p[MII_EXTSTAT] = 0x3000;            /* 1000BASE-T half/full */
    p[M88_PHY_SPEC_CTRL] = 0x0068;
    p[M88_EXT_PHY_SPEC_CTRL] = 0x0d60;
    e1000_phy_link_update(s);
}

static bool phy_reg_read_only(unsigned reg)
{
    switch (reg) {
    case MII_BMSR:
    case MII_PHYID1:
    case MII_PHYID2:
    case MII_ANLPAR:
    case MII_ANER:
    case MII_STAT1000:
    case MII_EXTSTAT:
    case M88_PHY_SPEC_STATUS:
        return true;
    default:
        return false;
    }
}

static void phy_write(E1000State *s, unsigned reg, uint16_t value)
{
    if (reg == MII_BMCR && (value & MII_BMCR_RESET)) {
        uint16_t anar = s->phy[MII_ANAR], ctrl1000 = s->phy[MII_CTRL1000];
        e1000_phy_reset(s);
        /* A PHY reset keeps what the driver advertises. */
        s->phy[MII_ANAR] = anar;
        s->phy[MII_CTRL1000] = ctrl1000;
        return;
    }
    if (phy_reg_read_only(reg)) {
        qemu_log_mask(LOG_GUEST_ERROR, "e1000: write to read-only PHY register %u\n", reg);
        return;
    }
    /* Reset and restart-negotiation bits clear themselves; negotiation
     * completes at once on a virtual link. */
    s->phy[reg] = reg == MII_BMCR ? value & ~(MII_BMCR_RESET | MII_BMCR_ANRESTART) : value;
}

void e1000_mdic_write(E1000State *s, uint32_t value)
{
    unsigned phy_addr = (value >> E1000_MDIC_PHY_SHIFT) & 0x1f;
    unsigned reg = (value >> E1000_MDIC_REG_SHIFT) & 0x1f;
    uint32_t op = value & (3u << 26);
    uint32_t result = value & ~(E1000_MDIC_READY | E1000_MDIC_ERROR);
    if (phy_addr != E1000_PHY_ADDR || (op != E1000_MDIC_OP_READ && op != E1000_MDIC_OP_WRITE)) {
        /* No PHY answers there: the MDIO read fails, as with no PHY. */
        result |= E1000_MDIC_ERROR;
    } else if (op == E1000_MDIC_OP_READ) {
        result = (result & ~E1000_MDIC_DATA_MASK) | s->phy[reg];
    } else {
        phy_write(s, reg, value & E1000_MDIC_DATA_MASK);
    }
    E1000_REG(s, E1000_MDIC) = result | E1000_MDIC_READY;
    if (value & E1000_MDIC_INT_EN) {
        e1000_set_interrupt_cause(s, E1000_ICR_MDAC);
    }
}
