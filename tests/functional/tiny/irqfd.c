/*
 * "irqfd" on the tiny guest's command line: pdl-testdev's MSI-X vector
 * PDL_TESTDEV_IRQFD_VECTOR, which the VMM's main loop raises through an
 * irqfd when the guest writes IRQFD_TRIGGER (no vCPU on the interrupt's
 * path), received by an IDT handler. Each round prints
 *   tiny: irqfd <round> signalled=S delivered=D pending=P in-kernel=K
 * S: the device signalled its notifier; D: interrupts the handler saw
 * since the round began; P: the vector's PBA bit; K: pdl-testdev's
 * IRQFD_STATUS (1 while KVM delivers the vector through the irqfd). The
 * rounds: unmasked, masked (entry mask bit), unmask, function-masked,
 * function-unmask, unmasked-again, retargeted (the entry's data changed to
 * another vector while unmasked: "retargeted-vector delivered=1" and none
 * on the old one); then "tiny: irqfd strays=N" counts interrupts on any
 * other vector.
 */
#include "hw/misc/pdl-testdev-regs.h"
#include "tiny.h"

#define IRQFD_IDT_VECTOR    0x61
#define RETARGET_IDT_VECTOR 0x62        /* the message changed while unmasked */
#define LAPIC_SVR           0x0f0
#define PIC1_DATA           0x21
#define PIC2_DATA           0xa1
#define PCI_ID              0x00
#define PCI_COMMAND         0x04
#define PCI_BAR0            0x10
#define PCI_CAP_POINTER     0x34
#define PCI_CAP_ID_MSIX     0x11
/* In the capability's first dword, whose upper half is Message Control. */
#define MSIX_ENABLE         (1u << 31)
#define MSIX_FUNCTION_MASK  (1u << 30)
#define MSIX_TABLE_BIR      4
#define MSIX_PBA_BIR        8
#define MSIX_ENTRY_DWORDS   4
#define MSIX_ENTRY_CONTROL  3
#define PDL_TESTDEV_ID      0x00017e57u
/* How long to wait for what must come, and for what must not. */
#define WAIT_CYCLES         3000000000ull
#define QUIET_CYCLES        100000000ull

volatile uint32_t irqfd_interrupts, retarget_interrupts, stray_interrupts;
static uint64_t idt[256] __attribute__((aligned(8)));

/*
 * Count, acknowledge at the LAPIC (EOI at 0xfee000b0), return. Not with
 * IRET: KVM's instruction emulator, which runs this unpaged guest under
 * kvm_pvm, can IRET in real mode only. The frame (EIP, CS, EFLAGS) is
 * turned into EFLAGS, EIP for POPF and RET; both stay on the stack, so a
 * nested interrupt after the POPF returns the same way.
 */
__asm__(".text\n"
        "irqfd_isr:\n"
        "  lock incl irqfd_interrupts\n"
        "  jmp isr_return\n"
        "retarget_isr:\n"
        "  lock incl retarget_interrupts\n"
        "  jmp isr_return\n"
        "stray_isr:\n"
        "  lock incl stray_interrupts\n"
        "isr_return:\n"
        "  movl $0, 0xfee000b0\n"
        "  pushl %eax\n"
        "  movl 4(%esp), %eax\n"       /* EIP */
        "  xchgl %eax, 12(%esp)\n"     /* EIP where EFLAGS was */
        "  movl %eax, 8(%esp)\n"       /* EFLAGS where CS was */
        "  popl %eax\n"
        "  addl $4, %esp\n"
        "  popfl\n"
        "  ret\n");
void irqfd_isr(void);
void retarget_isr(void);
void stray_isr(void);

static struct {
    unsigned slot;
    volatile uint32_t *regs;    /* BAR0 */
    volatile uint32_t *entry;   /* the vector's MSI-X table entry */
    volatile uint32_t *pba;
    unsigned cap;
} dev;

static uint32_t cfg_read(unsigned offset)
{
    outl(PCI_CONFIG_ADDRESS, pci_config_address(dev.slot, offset));
    return inl(PCI_CONFIG_DATA);
}

static void cfg_write(unsigned offset, uint32_t value)
{
    outl(PCI_CONFIG_ADDRESS, pci_config_address(dev.slot, offset));
    outl(PCI_CONFIG_DATA, value);
}

/* 32-bit interrupt gates: every vector counts as a stray but ours. */
static void idt_install(void)
{
    uint16_t cs;
    __asm__ volatile("mov %%cs, %0" : "=r"(cs));
    for (unsigned vector = 0; vector < 256; vector++) {
        uint32_t handler = (uint32_t)(vector == IRQFD_IDT_VECTOR ? irqfd_isr :
                                      vector == RETARGET_IDT_VECTOR ? retarget_isr : stray_isr);
        idt[vector] = (handler & 0xffff) | (uint32_t)cs << 16 |
                      (uint64_t)((handler & 0xffff0000u) | 0x8e00) << 32;
    }
    struct {
        uint16_t limit;
        uint32_t base;
    } __attribute__((packed)) idtr = { sizeof(idt) - 1, (uint32_t)idt };
    __asm__ volatile("lidt %0" : : "m"(idtr));
}

static int find_device(void)
{
    for (dev.slot = 0; dev.slot < 32; dev.slot++) {
        if (cfg_read(PCI_ID) == PDL_TESTDEV_ID) {
            break;
        }
    }
    if (dev.slot == 32) {
        return 0;
    }
    cfg_write(PCI_COMMAND, (cfg_read(PCI_COMMAND) & 0xffff) | PCI_COMMAND_MEMORY |
              PCI_COMMAND_MASTER);
    dev.regs = (volatile uint32_t *)(cfg_read(PCI_BAR0 + 4 * PDL_TESTDEV_MMIO_BAR) & ~0xfu);
    uint32_t msix_bar = cfg_read(PCI_BAR0 + 4 * PDL_TESTDEV_MSIX_BAR) & ~0xfu;
    for (dev.cap = cfg_read(PCI_CAP_POINTER) & 0xfc; dev.cap;
         dev.cap = (cfg_read(dev.cap) >> 8) & 0xfc) {
        if ((cfg_read(dev.cap) & 0xff) == PCI_CAP_ID_MSIX) {
            break;
        }
    }
    if (!dev.cap) {
        return 0;
    }
    dev.entry = (volatile uint32_t *)(msix_bar + (cfg_read(dev.cap + MSIX_TABLE_BIR) & ~7u)) +
                PDL_TESTDEV_IRQFD_VECTOR * MSIX_ENTRY_DWORDS;
    dev.pba = (volatile uint32_t *)(msix_bar + (cfg_read(dev.cap + MSIX_PBA_BIR) & ~7u));
    return 1;
}

static void msix_control(uint32_t set, uint32_t clear)
{
    cfg_write(dev.cap, (cfg_read(dev.cap) | set) & ~clear);
}

/* Wait until *counter moves past start, at most `cycles`. */
static void wait_past(volatile uint32_t *counter, uint32_t start, uint64_t cycles)
{
    uint64_t begin = rdtsc();
    while (*counter == start && rdtsc() - begin < cycles) {
        __asm__ volatile("pause");
    }
}

static void report(const char *round, int signalled, uint32_t delivered_since)
{
    puts_serial("tiny: irqfd ");
    puts_serial(round);
    if (signalled >= 0) {
        puts_serial(" signalled=");
        put_dec(signalled);
    }
    puts_serial(" delivered=");
    put_dec(irqfd_interrupts - delivered_since);
    puts_serial(" pending=");
    put_dec((*dev.pba >> PDL_TESTDEV_IRQFD_VECTOR) & 1);
    puts_serial(" in-kernel=");
    put_dec(dev.regs[PDL_REG_IRQFD_STATUS / 4] & PDL_IRQFD_IN_KERNEL);
    putc_serial('\n');
}

/* Ask the device to signal; wait for the signal, then for an interrupt
 * (a short while only if none may come). */
static void trigger_round(const char *round, int expect_interrupt)
{
    uint32_t delivered = irqfd_interrupts;
    uint32_t signals = dev.regs[PDL_REG_IRQFD_SIGNALS / 4];
    dev.regs[PDL_REG_IRQFD_TRIGGER / 4] = 1;
    wait_past(&dev.regs[PDL_REG_IRQFD_SIGNALS / 4], signals, WAIT_CYCLES);
    int signalled = dev.regs[PDL_REG_IRQFD_SIGNALS / 4] != signals;
    wait_past(&irqfd_interrupts, delivered, expect_interrupt ? WAIT_CYCLES : QUIET_CYCLES);
    report(round, signalled, delivered);
}

/* An unmask must deliver what waited in the PBA. */
static void unmask_round(const char *round, volatile uint32_t *reg_or_null, uint32_t clear)
{
    uint32_t delivered = irqfd_interrupts;
    if (reg_or_null) {
        *reg_or_null = 0;
    } else {
        msix_control(0, clear);
    }
    wait_past(&irqfd_interrupts, delivered, WAIT_CYCLES);
    report(round, -1, delivered);
}

void run_irqfd(void)
{
    if (!find_device()) {
        puts_serial("tiny: irqfd found no pdl-testdev with MSI-X\n");
        return;
    }
    idt_install();
    outb(PIC1_DATA, 0xff);              /* nothing from the 8259s */
    outb(PIC2_DATA, 0xff);
    lapic_write(LAPIC_SVR, 0x1ff);      /* software-enabled, spurious 0xff */
    __asm__ volatile("sti");

    /* Fixed delivery to APIC id 0 (this CPU), edge. */
    dev.entry[0] = LAPIC_BASE;
    dev.entry[1] = 0;
    dev.entry[2] = IRQFD_IDT_VECTOR;
    dev.entry[MSIX_ENTRY_CONTROL] = 0;
    msix_control(MSIX_ENABLE, MSIX_FUNCTION_MASK);
    trigger_round("unmasked", 1);

    dev.entry[MSIX_ENTRY_CONTROL] = 1;
    trigger_round("masked", 0);
    unmask_round("unmask", &dev.entry[MSIX_ENTRY_CONTROL], 0);

    msix_control(MSIX_FUNCTION_MASK, 0);
    trigger_round("function-masked", 0);
    unmask_round("function-unmask", 0, MSIX_FUNCTION_MASK);

    trigger_round("unmasked-again", 1);

    /* A new message while unmasked: the route follows it. */
    uint32_t retargeted = retarget_interrupts;
    dev.entry[2] = RETARGET_IDT_VECTOR;
    trigger_round("retargeted", 0);
    wait_past(&retarget_interrupts, retargeted, WAIT_CYCLES);
    puts_serial("tiny: irqfd retargeted-vector delivered=");
    put_dec(retarget_interrupts - retargeted);
    putc_serial('\n');
    dev.entry[2] = IRQFD_IDT_VECTOR;
    puts_serial("tiny: irqfd strays=");
    put_dec(stray_interrupts);
    putc_serial('\n');
    /* Left enabled and unmasked: a reset must take the irqfd down. */
}
