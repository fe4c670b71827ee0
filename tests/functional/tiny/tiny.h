/* What the parts of the tiny guest share: port and LAPIC access, COM1
 * output, the command line, PCI configuration addresses. */
#ifndef TINY_H
#define TINY_H

#include <stdint.h>

#define LAPIC_BASE      0xfee00000u
#define PCI_CONFIG_ADDRESS 0xcf8
#define PCI_CONFIG_DATA    0xcfc
#define PCI_COMMAND_MEMORY 0x2
#define PCI_COMMAND_MASTER 0x4

static inline void outb(uint16_t port, uint8_t value)
{
    __asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t value;
    __asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

static inline void outl(uint16_t port, uint32_t value)
{
    __asm__ volatile("outl %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint16_t inw(uint16_t port)
{
    uint16_t value;
    __asm__ volatile("inw %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

static inline void outw(uint16_t port, uint16_t value)
{
    __asm__ volatile("outw %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
    uint32_t value;
    __asm__ volatile("inl %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

static inline uint32_t lapic_read(uint32_t reg)
{
    return *(volatile uint32_t *)(LAPIC_BASE + reg);
}

static inline void lapic_write(uint32_t reg, uint32_t value)
{
    *(volatile uint32_t *)(LAPIC_BASE + reg) = value;
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* Spin for about this many TSC cycles. */
static inline void pause_cycles(uint64_t cycles)
{
    uint64_t start = rdtsc();
    while (rdtsc() - start < cycles) {
        __asm__ volatile("pause");
    }
}

void putc_serial(char c);
void puts_serial(const char *s);
void put_hex(uint64_t v);
void put_dec(uint32_t v);
/* Find "key" as a word of the command line; returns what follows it. */
const char *cmdline_find(const char *cmdline, const char *key);
/* CONFIG_ADDRESS of a register of function 0 of a slot on bus 0. */
uint32_t pci_config_address(unsigned slot, unsigned offset);
uint32_t rd32(uint32_t addr);
/* The FADT through the RSDP (in the BIOS area) and the RSDT, or 0. */
uint32_t find_fadt(void);
/* irqfd.c */
void run_irqfd(void);
/* runstate.c */
void run_count(int answer_power_button);
void power_off(void);
/* cdrom.c */
void run_cdrom(void);
/* disk.c */
void run_diskwrite(void);
/* pmconf.c */
void run_pmconf(void);
/* board.c */
void run_board(void);

#endif
