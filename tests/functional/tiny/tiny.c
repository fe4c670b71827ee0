/*
 * A tiny multiboot guest that reports what the VMM gave it, on COM1:
 *   tiny: hello
 *   tiny: cmdline=<the multiboot command line>
 *   tiny: mmap <base> <length> <type>     (one line per memory map entry)
 *   tiny: ram=<KiB of usable RAM>
 * With "smp" on its command line it wakes the application processor with
 * APIC id 1 (INIT-SIPI-SIPI) and both print "tiny: cpu <apic id> up".
 * With "bench=KIND:N[,KIND:N...]" it makes N writes of each kind in turn
 * and prints for each
 *   tiny: bench <kind> exits=N cycles=<TSC cycles for all of them>
 * Kinds: pio and mmio exit to the VMM (the serial port's scratch register,
 * a trivial register behind a device lock; an unassigned MMIO address);
 * kpio and kmmio exit to KVM only (the PIC's mask register, the IOAPIC's
 * index register); pdl-doorbell-pio/-mmio ring pdl-testdev's doorbell (an
 * ioeventfd), pdl-array-pio/-mmio write its coalesced array;
 * pci-eventfd-pio/-mmio hit QEMU's pci-testdev wildcard-eventfd tests,
 * pci-user-pio/-mmio its no-eventfd tests (handled in user space).
 * With "fastpaths" it checks pdl-testdev's KVM fast paths and prints
 *   tiny: pdl fast paths <PDL_FAST_* bits>
 *   tiny: pdl doorbell rings=R counted=C exits=E     (E: exits for them)
 *   tiny: pdl coalesced <mmio|pio> writes=W applied=A in-order=<yes|no>
 *         readback=<ok|bad> exits=E
 *   tiny: pdl coalesced <mmio|pio> after-clear applied=A in-order=<yes|no>
 * or "tiny: pdl skip <what>: no <KVM capability>" where KVM lacks one.
 * With "pmbench=N" it times N reads of the ACPI PM timer (port 0x608) on
 * the BSP, first idle, then while the AP hammers BAR0 of a PCI test device
 * (ours, 7e57:0001, or QEMU's pci-testdev, 1b36:0005), and prints
 *   tiny: pmbench idle reads=N cycles=<TSC cycles>
 *   tiny: pmbench loaded reads=N cycles=<TSC cycles> hammer=<AP's accesses>
 * With "hammer=dma:K" as well, the AP instead rings pdl-testdev's DMA
 * doorbell, each time filling K KiB of RAM at 16 MiB: a register whose
 * handler holds the device's lock for a long time.
 * With "testdevs" it exercises QEMU's test devices as guest suites do and
 * prints what it reads, one "tiny: testdev ..." line per fact, so that runs
 * under two VMMs can be compared line by line: pc-testdev's scratch port
 * 0xe0 and memory window, and each pci-testdev test's header and the
 * count that its hits, misses and a two-byte write leave.
 * With "emulfail" it loads an x87 operand from an unassigned MMIO address,
 * an instruction KVM's emulator cannot perform: KVM reports an internal
 * error (emulation failure) and the VMM must say so and exit.
 * With "s3" it suspends the machine to ACPI S3 with the RTC alarm armed to
 * wake it a few seconds later, its FACS waking vector pointing at real-mode
 * code (entry.S) that reports how it finds low memory through DS and exits.
 * With "uarts" it prints which of the four COM ports has a UART ("tiny:
 * uart 0x2f8 present"), told by its scratch register keeping a value.
 * With "pmconf" it prints the PIIX4 PM function 00:01.3's configuration
 * space and moves its I/O block (pmconf.c has what it prints).
 * With "irqfd" it takes pdl-testdev's MSI-X vector on irqfd through
 * masking and unmasking (irqfd.c has what it prints), before "reboot".
 * With "cdrom" it watches the secondary master CD-ROM through a media
 * change (cdrom.c has what it prints).
 * With "diskwrite" it writes 8 sectors to the primary master ATA disk, for
 * the werror tests (disk.c has what it prints).
 * With "reboot" it resets the machine through the keyboard controller the
 * first time (marking CMOS byte 0x40, which survives a reset) and prints
 * "tiny: second boot" the next time.
 * With "count", "powerbutton" or "poweroff" it runs the run-state tests'
 * guests (runstate.c has what they print).
 * With "exit=N" it ends by writing N to isa-debug-exit at port 0xf4, so the
 * VMM exits with status (N << 1) | 1; otherwise it halts.
 */
#include <stdint.h>
#include "hw/misc/pdl-testdev-regs.h"
#include "tiny.h"

#define COM1            0x3f8
#define DEBUG_EXIT_PORT 0xf4
#define LAPIC_ID        0x020
#define LAPIC_SVR       0x0f0
#define LAPIC_ICR_LOW   0x300
#define LAPIC_ICR_HIGH  0x310
#define TRAMPOLINE_ADDR 0x8000u
#define COM1_SCRATCH    (COM1 + 7)
#define CMOS_INDEX      0x70
#define CMOS_DATA       0x71
#define CMOS_BOOT_MARK  0x40
#define KBC_COMMAND     0x64
#define UNASSIGNED_MMIO 0xfe000000u     /* in the PCI hole: nothing there */
#define PIC_MASTER_IMR  0x21            /* the in-kernel PIC's */
#define IOAPIC_IOREGSEL 0xfec00000u     /* the in-kernel IOAPIC's */
#define PCI_COMMAND_IO     0x1
#define HAMMER_DMA_ADDR 0x1000000u      /* 16 MiB: free RAM in a tiny guest */
#define ACPI_PM_TIMER   0x608           /* QEMU's and our PM base 0x600, + 8 */
#define RESUME_ADDR     0x2000u         /* waking vector: CS:IP = 0x200:0 */
#define RESUME_FLAG_ADDR 0x1f00u        /* read by the resume code through DS */
#define RESUME_FLAG     0x33535233u
#define ACPI_SLP_TYP_S3 1               /* _S3 of both DSDTs: Package(){1, 1, 0, 0} */
#define PM1_SLP_EN      (1u << 13)
#define PM1_RTC         (1u << 10)      /* RTC_STS / RTC_EN */
#define PM1_WAK_STS     (1u << 15)

struct multiboot_info {
    uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
    uint32_t mods_count, mods_addr, syms[4], mmap_length, mmap_addr;
};

struct multiboot_mmap_entry {
    uint32_t size;
    uint64_t addr, len;
    uint32_t type;
} __attribute__((packed));

extern char trampoline_start[], trampoline_end[];
uint32_t ap_stack_top;
static volatile int ap_started;
static uint8_t ap_stack[4096] __attribute__((aligned(16)));
/* What the AP does once up; NULL: report and halt. */
static void (*volatile ap_job)(void);

void putc_serial(char c)
{
    while (!(inb(COM1 + 5) & 0x20)) {     /* LSR.THRE */
    }
    outb(COM1, c);
}

void puts_serial(const char *s)
{
    while (*s) {
        putc_serial(*s++);
    }
}

void put_hex(uint64_t v)
{
    puts_serial("0x");
    for (int shift = 60; shift >= 0; shift -= 4) {
        putc_serial("0123456789abcdef"[(v >> shift) & 0xf]);
    }
}

void put_dec(uint32_t v)
{
    char buf[11];
    int i = sizeof(buf) - 1;
    buf[i] = 0;
    do {
        buf[--i] = '0' + v % 10;
        v /= 10;
    } while (v);
    puts_serial(buf + i);
}

static uint32_t parse_dec(const char **p)
{
    uint32_t v = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        v = v * 10 + (**p - '0');
    }
    return v;
}

/* Find "key" as a word of the command line; returns what follows it. */
const char *cmdline_find(const char *cmdline, const char *key)
{
    for (const char *p = cmdline; p && *p; p++) {
        if (p != cmdline && p[-1] != ' ') {
            continue;
        }
        const char *k = key, *q = p;
        while (*k && *q == *k) {
            k++;
            q++;
        }
        if (!*k && (*q == ' ' || *q == '=' || !*q)) {
            return q;
        }
    }
    return 0;
}

void ap_main(void)
{
    puts_serial("tiny: cpu ");
    put_dec(lapic_read(LAPIC_ID) >> 24);
    puts_serial(" up\n");
    ap_started = 1;
    if (ap_job) {
        ap_job();
    }
    for (;;) {
        __asm__ volatile("cli; hlt");
    }
}

/* ---- PCI, as guest suites written for QEMU find their devices ---- */

#define PDL_TESTDEV_ID      0x00017e57u
#define PCI_TESTDEV_ID      0x00051b36u
#define PCI_TESTDEV_HDR_OFFSET 4
#define PCI_TESTDEV_HDR_DATA   8
#define PCI_TESTDEV_HDR_COUNT  12
#define PCI_TESTDEV_HDR_NAME   16

uint32_t pci_config_address(unsigned slot, unsigned offset)
{
    return 0x80000000u | slot << 11 | offset;
}

/* The configuration address of the first function on bus 0 with id
 * (vendor in the low half), its I/O and memory decoding and bus mastering
 * enabled; 0 if there is none. */
static uint32_t pci_find(uint32_t id)
{
    for (unsigned slot = 0; slot < 32; slot++) {
        outl(PCI_CONFIG_ADDRESS, pci_config_address(slot, 0));
        if (inl(PCI_CONFIG_DATA) == id) {
            outl(PCI_CONFIG_ADDRESS, pci_config_address(slot, 4));
            uint32_t command = inl(PCI_CONFIG_DATA) & 0xffff;
            outl(PCI_CONFIG_DATA,
                 command | PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
            return pci_config_address(slot, 0);
        }
    }
    return 0;
}

/* BAR nr of the function at dev: its port or address. */
static uint32_t pci_bar(uint32_t dev, unsigned nr)
{
    outl(PCI_CONFIG_ADDRESS, dev | (0x10 + 4 * nr));
    uint32_t bar = inl(PCI_CONFIG_DATA);
    return bar & (bar & 1 ? ~0x3u : ~0xfu);
}

/* The device id of the first function on bus 0 whose vendor id is vendor,
 * read as guest suites written for QEMU read it: CONFIG_ADDRESS with the
 * register offset's low bits set (0x02), then a word at CONFIG_DATA. */
static uint16_t find_device_id_via_low_bits(uint16_t vendor)
{
    for (unsigned slot = 0; slot < 32; slot++) {
        outl(PCI_CONFIG_ADDRESS, pci_config_address(slot, 0));
        if (inw(PCI_CONFIG_DATA) == vendor) {
            outl(PCI_CONFIG_ADDRESS, pci_config_address(slot, 2));
            return inw(PCI_CONFIG_DATA);
        }
    }
    return 0xffff;
}

/* pci-testdev: writing T at offset 0 of BAR0 selects mmio test T, of BAR1
 * portio test T + 3; the selected test's header then reads at BAR0. */
static void pci_testdev_select(uint32_t bar, int is_port, uint8_t test)
{
    if (is_port) {
        outb(bar, test);
    } else {
        *(volatile uint8_t *)bar = test;
    }
}

static uint32_t pci_testdev_header32(uint32_t bar0, unsigned field)
{
    volatile uint8_t *hdr = (volatile uint8_t *)bar0 + field;
    return hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (uint32_t)hdr[3] << 24;
}

static unsigned strlen_tiny(const char *s)
{
    unsigned n = 0;
    while (s[n]) {
        n++;
    }
    return n;
}

static int str_starts(const char *s, const char *prefix)
{
    while (*prefix && *s == *prefix) {
        s++;
        prefix++;
    }
    return !*prefix;
}

enum bench_device { BENCH_FIXED, BENCH_PDL, BENCH_PCI_TESTDEV };

/* Where each kind of bench write goes and what it writes (32 bits to
 * pdl-testdev, whose registers take nothing else; a byte elsewhere). */
static const struct bench_kind {
    const char *name;
    enum bench_device device;
    int is_port;
    uint32_t where;     /* FIXED: port or address; PDL: register; PCI: test 0 or 1 */
    uint32_t value;
} bench_kinds[] = {
    { "pio", BENCH_FIXED, 1, COM1_SCRATCH, 0x5a },
    { "mmio", BENCH_FIXED, 0, UNASSIGNED_MMIO, 0 },
    { "kpio", BENCH_FIXED, 1, PIC_MASTER_IMR, 0xff },       /* all masked, as it is */
    { "kmmio", BENCH_FIXED, 0, IOAPIC_IOREGSEL, 0 },
    { "pdl-doorbell-pio", BENCH_PDL, 1, PDL_REG_DOORBELL, 1 },
    { "pdl-doorbell-mmio", BENCH_PDL, 0, PDL_REG_DOORBELL, 1 },
    { "pdl-array-pio", BENCH_PDL, 1, PDL_REG_ARRAY, 1 },
    { "pdl-array-mmio", BENCH_PDL, 0, PDL_REG_ARRAY, 1 },
    { "pci-eventfd-pio", BENCH_PCI_TESTDEV, 1, 1, 0xce },  /* wildcard-eventfd */
    { "pci-eventfd-mmio", BENCH_PCI_TESTDEV, 0, 1, 0xce },
    { "pci-user-pio", BENCH_PCI_TESTDEV, 1, 0, 0xfa },     /* no-eventfd */
    { "pci-user-mmio", BENCH_PCI_TESTDEV, 0, 0, 0xfa },
};

/* The address kind's writes go to (its device found and set up), or 0. */
static uint32_t bench_address(const struct bench_kind *kind)
{
    uint32_t slot;
    switch (kind->device) {
    case BENCH_FIXED:
        return kind->where;
    case BENCH_PDL:
        slot = pci_find(PDL_TESTDEV_ID);
        return slot ? pci_bar(slot, kind->is_port ? PDL_TESTDEV_IO_BAR
                                                  : PDL_TESTDEV_MMIO_BAR) + kind->where : 0;
    case BENCH_PCI_TESTDEV:
        slot = pci_find(PCI_TESTDEV_ID);
        if (!slot) {
            return 0;
        }
        uint32_t bar = pci_bar(slot, kind->is_port ? 1 : 0);
        pci_testdev_select(bar, kind->is_port, kind->where);
        return bar + pci_testdev_header32(pci_bar(slot, 0), PCI_TESTDEV_HDR_OFFSET);
    }
    return 0;
}

static void bench_write(const struct bench_kind *kind, uint32_t addr)
{
    if (kind->device == BENCH_PDL && kind->is_port) {
        outl(addr, kind->value);
    } else if (kind->device == BENCH_PDL) {
        *(volatile uint32_t *)addr = kind->value;
    } else if (kind->is_port) {
        outb(addr, kind->value);
    } else {
        *(volatile uint8_t *)addr = kind->value;
    }
}

/* One "KIND:N" of "bench=KIND:N,KIND:N..."; returns what follows it. */
static const char *run_bench(const char *spec)
{
    const struct bench_kind *kind = 0;
    for (unsigned i = 0; i < sizeof(bench_kinds) / sizeof(bench_kinds[0]); i++) {
        if (str_starts(spec, bench_kinds[i].name) &&
            spec[strlen_tiny(bench_kinds[i].name)] == ':') {
            kind = &bench_kinds[i];
        }
    }
    puts_serial("tiny: bench ");
    if (!kind) {
        puts_serial("unknown kind\n");
        return "";
    }
    puts_serial(kind->name);
    const char *count = spec + strlen_tiny(kind->name) + 1;
    uint32_t n = parse_dec(&count);
    uint32_t addr = bench_address(kind);
    if (!addr) {
        puts_serial(" no such device\n");
        return count;
    }
    uint64_t start = rdtsc();
    for (uint32_t i = 0; i < n; i++) {
        bench_write(kind, addr);
    }
    uint64_t cycles = rdtsc() - start;
    puts_serial(" exits=");
    put_dec(n);
    puts_serial(" cycles=");
    put_hex(cycles);
    putc_serial('\n');
    return count;
}

static void start_ap(uint32_t apic_id);

/* A 16550's scratch register (offset 7) keeps what is written to it; an
 * empty port reads all ones. */
static void report_uarts(void)
{
    static const uint16_t com_ports[] = { 0x3f8, 0x2f8, 0x3e8, 0x2e8 };
    for (unsigned i = 0; i < sizeof(com_ports) / sizeof(com_ports[0]); i++) {
        outb(com_ports[i] + 7, 0x5a);
        int present = inb(com_ports[i] + 7) == 0x5a;
        outb(com_ports[i] + 7, 0xa5);
        present = present && inb(com_ports[i] + 7) == 0xa5;
        puts_serial("tiny: uart ");
        put_hex(com_ports[i]);
        puts_serial(present ? " present\n" : " absent\n");
    }
}

#define PC_TESTDEV_PORT     0xe0
#define PC_TESTDEV_IOMEM    0xff000000u
#define PCI_TESTDEV_TESTS_PER_BAR 3

static void report_testdev(const char *what, uint32_t value)
{
    puts_serial("tiny: testdev ");
    puts_serial(what);
    putc_serial(' ');
    put_hex(value);
    putc_serial('\n');
}

static void pci_testdev_write(uint32_t addr, int is_port, uint16_t value, unsigned size)
{
    if (is_port && size == 1) {
        outb(addr, value);
    } else if (is_port) {
        outw(addr, value);
    } else if (size == 1) {
        *(volatile uint8_t *)addr = value;
    } else {
        *(volatile uint16_t *)addr = value;
    }
}

/* Each pci-testdev test, selected through the BAR of its kind: its header
 * (test, width, offset, data, name), then what three writes at its offset
 * through that BAR leave in its count: the test's data (a hit: under KVM
 * an eventfd test's goes to its ioeventfd, which QEMU does not count),
 * other data (no hit; the wildcard's ioeventfd takes it) and a two-byte
 * write with the data in its low byte (no ioeventfd's: the handler counts
 * it). */
static void run_pci_testdev(uint32_t bar0, uint32_t bar1)
{
    volatile uint8_t *hdr = (volatile uint8_t *)bar0;
    for (uint8_t test = 0; test < 2 * PCI_TESTDEV_TESTS_PER_BAR; test++) {
        int is_port = test >= PCI_TESTDEV_TESTS_PER_BAR;
        uint32_t bar = is_port ? bar1 : bar0;
        pci_testdev_select(bar, is_port, test % PCI_TESTDEV_TESTS_PER_BAR);
        uint32_t offset = pci_testdev_header32(bar0, PCI_TESTDEV_HDR_OFFSET);
        uint8_t data = hdr[PCI_TESTDEV_HDR_DATA];
        puts_serial("tiny: testdev pci test=");
        put_dec(hdr[0]);
        puts_serial(" width=");
        put_dec(hdr[1]);
        puts_serial(" offset=");
        put_dec(offset);
        puts_serial(" data=");
        put_dec(data);
        puts_serial(" name=");
        for (unsigned i = PCI_TESTDEV_HDR_NAME; i < 64 && hdr[i]; i++) {
            putc_serial(hdr[i]);
        }
        pci_testdev_write(bar + offset, is_port, data, 1);
        pci_testdev_write(bar + offset, is_port, 0x17, 1);
        pci_testdev_write(bar + offset, is_port, 0x1700 | data, 2);
        puts_serial(" count=");
        put_dec(pci_testdev_header32(bar0, PCI_TESTDEV_HDR_COUNT));
        putc_serial('\n');
    }
    pci_testdev_select(bar0, 0, 0xff);     /* deselect */
}

static void run_testdevs(void)
{
    outl(PC_TESTDEV_PORT, 0xc0ffee42u);
    report_testdev("port 0xe0", inl(PC_TESTDEV_PORT));
    outb(PC_TESTDEV_PORT + 1, 0x5a);
    report_testdev("port 0xe0 after byte 1", inl(PC_TESTDEV_PORT));
    *(volatile uint32_t *)(PC_TESTDEV_IOMEM + 0x100) = 0x12345678u;
    report_testdev("iomem", *(volatile uint32_t *)(PC_TESTDEV_IOMEM + 0x100));
    report_testdev("pci-testdev device id via CONFIG_ADDRESS | 2",
                   find_device_id_via_low_bits(PCI_TESTDEV_ID & 0xffff));
    uint32_t dev = pci_find(PCI_TESTDEV_ID);
    if (!dev) {
        puts_serial("tiny: testdev no pci-testdev\n");
        return;
    }
    run_pci_testdev(pci_bar(dev, 0), pci_bar(dev, 1));
}

/* ---- pdl-testdev's KVM fast paths ---- */

#define FASTPATH_RINGS          1000    /* per BAR */
#define FASTPATH_BURST          500     /* about three times KVM's ring */

/* One of pdl-testdev's BARs, its 32-bit registers through port or MMIO. */
struct pdl_bar {
    uint32_t base;
    int is_port;
};

static uint32_t pdl_rd(struct pdl_bar bar, uint32_t reg)
{
    return bar.is_port ? inl(bar.base + reg) : *(volatile uint32_t *)(bar.base + reg);
}

static void pdl_wr(struct pdl_bar bar, uint32_t reg, uint32_t value)
{
    if (bar.is_port) {
        outl(bar.base + reg, value);
    } else {
        *(volatile uint32_t *)(bar.base + reg) = value;
    }
}

static void report_skip(const char *what, const char *capability)
{
    puts_serial("tiny: pdl skip ");
    puts_serial(what);
    puts_serial(": no ");
    puts_serial(capability);
    putc_serial('\n');
}

/* Ring through both BARs; exits are counted by the vCPU (this one), the
 * rings by the device as it consumes its ioeventfd. */
static void check_doorbell(struct pdl_bar mmio, struct pdl_bar io)
{
    uint32_t counted = pdl_rd(mmio, PDL_REG_DOORBELL_COUNT);
    uint32_t exits = pdl_rd(mmio, PDL_REG_VCPU_EXITS);
    for (uint32_t i = 0; i < FASTPATH_RINGS; i++) {
        pdl_wr(mmio, PDL_REG_DOORBELL, i);
        pdl_wr(io, PDL_REG_DOORBELL, i);
    }
    /* This read is an exit itself. */
    exits = pdl_rd(mmio, PDL_REG_VCPU_EXITS) - exits - 1;
    counted = pdl_rd(mmio, PDL_REG_DOORBELL_COUNT) - counted;
    puts_serial("tiny: pdl doorbell rings=");
    put_dec(2 * FASTPATH_RINGS);
    puts_serial(" counted=");
    put_dec(counted);
    puts_serial(" exits=");
    put_dec(exits);
    putc_serial('\n');
}

/* n writes to the array, each value unique; returns their digest. */
static uint32_t array_burst(struct pdl_bar bar, uint32_t n, uint32_t seed)
{
    uint32_t digest = PDL_LOG_DIGEST_INIT;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t index = i % PDL_ARRAY_ENTRIES, value = seed + i * 0x9e3779b9u;
        pdl_wr(bar, PDL_REG_ARRAY + 4 * index, value);
        digest = pdl_log_digest_step(digest, index, value);
    }
    return digest;
}

static void report_applied(struct pdl_bar bar, uint32_t digest)
{
    puts_serial(" applied=");
    put_dec(pdl_rd(bar, PDL_REG_LOG_COUNT));
    puts_serial(pdl_rd(bar, PDL_REG_LOG_DIGEST) == digest ? " in-order=yes" : " in-order=no");
}

/* A burst written through bar, then read back: applied in order, once
 * each, with few exits. Then a burst, a clear of the log (not coalesced:
 * it must come after the burst) and a second burst: only the second
 * remains. */
static void check_coalesced(struct pdl_bar bar)
{
    const char *kind = bar.is_port ? "pio" : "mmio";
    pdl_wr(bar, PDL_REG_LOG_COUNT, 0);
    uint32_t exits = pdl_rd(bar, PDL_REG_VCPU_EXITS);
    uint32_t digest = array_burst(bar, FASTPATH_BURST, 0x1234);
    exits = pdl_rd(bar, PDL_REG_VCPU_EXITS) - exits - 1;
    puts_serial("tiny: pdl coalesced ");
    puts_serial(kind);
    puts_serial(" writes=");
    put_dec(FASTPATH_BURST);
    report_applied(bar, digest);
    int readback_ok = 1;
    for (uint32_t i = FASTPATH_BURST - PDL_ARRAY_ENTRIES; i < FASTPATH_BURST; i++) {
        readback_ok &= pdl_rd(bar, PDL_REG_ARRAY + 4 * (i % PDL_ARRAY_ENTRIES)) ==
                       0x1234 + i * 0x9e3779b9u;
    }
    puts_serial(readback_ok ? " readback=ok" : " readback=bad");
    puts_serial(" exits=");
    put_dec(exits);
    putc_serial('\n');

    array_burst(bar, 100, 0x5678);
    pdl_wr(bar, PDL_REG_LOG_COUNT, 0);
    digest = array_burst(bar, 100, 0x9abc);
    puts_serial("tiny: pdl coalesced ");
    puts_serial(kind);
    puts_serial(" after-clear");
    report_applied(bar, digest);
    putc_serial('\n');
}

static void run_fastpaths(void)
{
    uint32_t dev = pci_find(PDL_TESTDEV_ID);
    if (!dev) {
        puts_serial("tiny: pdl no pdl-testdev\n");
        return;
    }
    struct pdl_bar mmio = { pci_bar(dev, PDL_TESTDEV_MMIO_BAR), 0 };
    struct pdl_bar io = { pci_bar(dev, PDL_TESTDEV_IO_BAR), 1 };
    uint32_t fast = pdl_rd(mmio, PDL_REG_FAST_PATHS);
    puts_serial("tiny: pdl fast paths ");
    put_hex(fast);
    putc_serial('\n');
    if (fast & PDL_FAST_IOEVENTFD) {
        check_doorbell(mmio, io);
    } else {
        report_skip("doorbell", "KVM_CAP_IOEVENTFD");
    }
    if (fast & PDL_FAST_COALESCED_MMIO) {
        check_coalesced(mmio);
    } else {
        report_skip("coalesced mmio", "KVM_CAP_COALESCED_MMIO");
    }
    if (fast & PDL_FAST_COALESCED_PIO) {
        check_coalesced(io);
    } else {
        report_skip("coalesced pio", "KVM_CAP_COALESCED_PIO");
    }
}

static volatile uint32_t *hammer_regs;
static volatile uint32_t hammer_count, hammer_stop;

static void hammer_registers(void)
{
    while (!hammer_stop) {
        (void)hammer_regs[0];
        hammer_count++;
    }
}

static void hammer_dma_doorbell(void)
{
    while (!hammer_stop) {
        hammer_regs[PDL_REG_DMA_DOORBELL / 4] = PDL_DMA_FILL;
        hammer_count++;
    }
}

static uint64_t time_pm_timer_reads(uint32_t n)
{
    uint64_t start = rdtsc();
    for (uint32_t i = 0; i < n; i++) {
        (void)inl(ACPI_PM_TIMER);
    }
    return rdtsc() - start;
}

static void report_pmbench(const char *phase, uint32_t n, uint64_t cycles)
{
    puts_serial("tiny: pmbench ");
    puts_serial(phase);
    puts_serial(" reads=");
    put_dec(n);
    puts_serial(" cycles=");
    put_hex(cycles);
}

/* "dma:K" after "hammer=", or NULL for register reads. */
static void run_pmbench(const char *count, const char *hammer)
{
    uint32_t n = parse_dec(&count);
    report_pmbench("idle", n, time_pm_timer_reads(n));
    putc_serial('\n');
    uint32_t pdl = pci_find(PDL_TESTDEV_ID);
    uint32_t dev = pdl ? pdl : pci_find(PCI_TESTDEV_ID);
    if (!dev) {
        puts_serial("tiny: pmbench found no PCI test device\n");
        return;
    }
    hammer_regs = (volatile uint32_t *)pci_bar(dev, 0);
    ap_job = hammer_registers;
    if (hammer && pdl) {
        const char *kib = hammer + 4;
        hammer_regs[PDL_REG_DMA_ADDR_LO / 4] = HAMMER_DMA_ADDR;
        hammer_regs[PDL_REG_DMA_ADDR_HI / 4] = 0;
        hammer_regs[PDL_REG_DMA_LEN / 4] = parse_dec(&kib) << 10;
        ap_job = hammer_dma_doorbell;
    }
    start_ap(1);
    while (ap_started && hammer_count < 1000) {
        __asm__ volatile("pause");
    }
    uint64_t cycles = time_pm_timer_reads(n);
    uint32_t hammered = hammer_count;
    hammer_stop = 1;
    report_pmbench("loaded", n, cycles);
    puts_serial(" hammer=");
    put_dec(hammered);
    putc_serial('\n');
}

static void reboot_once(void)
{
    outb(CMOS_INDEX, CMOS_BOOT_MARK);
    if (inb(CMOS_DATA) == 0x5a) {
        puts_serial("tiny: second boot\n");
        return;
    }
    outb(CMOS_INDEX, CMOS_BOOT_MARK);
    outb(CMOS_DATA, 0x5a);
    puts_serial("tiny: resetting\n");
    outb(KBC_COMMAND, 0xfe);        /* pulse the reset line */
    for (;;) {
        __asm__ volatile("hlt");
    }
}

static void start_ap(uint32_t apic_id)
{
    for (char *src = trampoline_start, *dst = (char *)TRAMPOLINE_ADDR; src < trampoline_end;) {
        *dst++ = *src++;
    }
    ap_stack_top = (uint32_t)(ap_stack + sizeof(ap_stack));
    /* Software-enable the local APIC (spurious vector 0xff), as firmware
     * leaves it: KVM drops IPIs from a disabled one. */
    lapic_write(LAPIC_SVR, 0x1ff);
    lapic_write(LAPIC_ICR_HIGH, apic_id << 24);
    lapic_write(LAPIC_ICR_LOW, 0x00004500);                 /* INIT, assert */
    for (int i = 0; i < 2; i++) {
        lapic_write(LAPIC_ICR_HIGH, apic_id << 24);
        lapic_write(LAPIC_ICR_LOW, 0x00004600 | (TRAMPOLINE_ADDR >> 12));   /* SIPI */
    }
    for (uint32_t spins = 0; !ap_started && spins < 2000000000u; spins++) {
        __asm__ volatile("pause");
    }
}

/* ---- ACPI S3 with an RTC wake-up ---- */

extern char resume_start[], resume_end[];

static int bytes_equal(const void *a, const char *b, unsigned n)
{
    const char *p = a;
    for (unsigned i = 0; i < n; i++) {
        if (p[i] != b[i]) {
            return 0;
        }
    }
    return 1;
}

uint32_t rd32(uint32_t addr)
{
    return *(volatile uint32_t *)addr;
}

uint32_t find_fadt(void)
{
    for (uint32_t rsdp = 0xe0000; rsdp < 0x100000; rsdp += 16) {
        if (!bytes_equal((void *)rsdp, "RSD PTR ", 8)) {
            continue;
        }
        uint32_t rsdt = rd32(rsdp + 16);
        for (uint32_t e = rsdt + 36; e < rsdt + rd32(rsdt + 4); e += 4) {
            if (bytes_equal((void *)rd32(e), "FACP", 4)) {
                return rd32(e);
            }
        }
    }
    return 0;
}

static uint8_t cmos_read(uint8_t index)
{
    outb(CMOS_INDEX, index);
    return inb(CMOS_DATA);
}

static void cmos_write(uint8_t index, uint8_t value)
{
    outb(CMOS_INDEX, index);
    outb(CMOS_DATA, value);
}

/* Alarm in 4-5 seconds (seconds only: hour and minute "don't care"):
 * long enough for a monitor to see the machine asleep. */
static void rtc_arm_alarm(void)
{
    int bcd = !(cmos_read(0x0b) & 0x04);
    uint8_t raw = cmos_read(0x00);
    uint8_t seconds = bcd ? (raw >> 4) * 10 + (raw & 0xf) : raw;
    seconds = (seconds + 5) % 60;
    cmos_write(0x01, bcd ? (seconds / 10) << 4 | seconds % 10 : seconds);
    cmos_write(0x03, 0xff);
    cmos_write(0x05, 0xff);
    cmos_read(0x0c);                                    /* clear pending flags */
    cmos_write(0x0b, cmos_read(0x0b) | 0x20);           /* AIE */
}

static void suspend_to_s3(void)
{
    uint32_t fadt = find_fadt();
    if (!fadt) {
        puts_serial("tiny: no FADT\n");
        return;
    }
    uint32_t facs = rd32(fadt + 36);
    uint16_t pm1a_evt = rd32(fadt + 56), pm1a_cnt = rd32(fadt + 64);
    for (char *src = resume_start, *dst = (char *)RESUME_ADDR; src < resume_end;) {
        *dst++ = *src++;
    }
    *(volatile uint32_t *)RESUME_FLAG_ADDR = RESUME_FLAG;
    *(volatile uint32_t *)(facs + 12) = RESUME_ADDR;       /* Firmware_Waking_Vector */
    rtc_arm_alarm();
    outw(pm1a_evt, PM1_WAK_STS | PM1_RTC);                  /* clear */
    outw(pm1a_evt + 2, PM1_RTC);                            /* RTC_EN */
    puts_serial("tiny: suspending to S3\n");
    uint16_t cnt = inw(pm1a_cnt) & ~(7u << 10);
    outw(pm1a_cnt, cnt | ACPI_SLP_TYP_S3 << 10 | PM1_SLP_EN);
    for (int i = 0; i < 1000000; i++) {
        __asm__ volatile("pause");
    }
    puts_serial("tiny: still awake after the S3 request\n");
}

void tiny_main(uint32_t magic, const struct multiboot_info *info)
{
    puts_serial("tiny: hello\n");
    if (magic != 0x2BADB002) {
        puts_serial("tiny: bad multiboot magic\n");
        return;
    }
    const char *cmdline = (info->flags & (1 << 2)) ? (const char *)info->cmdline : "";
    puts_serial("tiny: cmdline=");
    puts_serial(cmdline);
    putc_serial('\n');

    uint64_t usable = 0;
    if (info->flags & (1 << 6)) {
        uint32_t offset = 0;
        while (offset < info->mmap_length) {
            const struct multiboot_mmap_entry *e =
                (const void *)(info->mmap_addr + offset);
            puts_serial("tiny: mmap ");
            put_hex(e->addr);
            putc_serial(' ');
            put_hex(e->len);
            putc_serial(' ');
            put_dec(e->type);
            putc_serial('\n');
            if (e->type == 1) {
                usable += e->len;
            }
            offset += e->size + 4;
        }
    }
    puts_serial("tiny: ram=");
    put_dec((uint32_t)(usable >> 10));
    puts_serial("\n");

    if (cmdline_find(cmdline, "smp")) {
        puts_serial("tiny: cpu ");
        put_dec(lapic_read(LAPIC_ID) >> 24);
        puts_serial(" up\n");
        start_ap(1);
        if (!ap_started) {
            puts_serial("tiny: the AP did not start\n");
        }
    }
    if (cmdline_find(cmdline, "irqfd")) {
        run_irqfd();
    }
    if (cmdline_find(cmdline, "cdrom")) {
        run_cdrom();
    }
    if (cmdline_find(cmdline, "diskwrite")) {
        run_diskwrite();
    }
    if (cmdline_find(cmdline, "reboot")) {
        reboot_once();
    }
    const char *bench = cmdline_find(cmdline, "bench");
    if (bench && *bench == '=') {
        for (const char *spec = run_bench(bench + 1); *spec == ','; spec = run_bench(spec + 1)) {
        }
    }
    if (cmdline_find(cmdline, "emulfail")) {
        puts_serial("tiny: loading an x87 operand from MMIO\n");
        __asm__ volatile("fldl (%0)" : : "r"(UNASSIGNED_MMIO) : "memory");
        puts_serial("tiny: the load was emulated\n");
    }
    if (cmdline_find(cmdline, "testdevs")) {
        run_testdevs();
    }
    if (cmdline_find(cmdline, "fastpaths")) {
        run_fastpaths();
    }
    if (cmdline_find(cmdline, "uarts")) {
        report_uarts();
    }
    if (cmdline_find(cmdline, "pmconf")) {
        run_pmconf();
    }
    if (cmdline_find(cmdline, "board")) {
        run_board();
    }
    if (cmdline_find(cmdline, "s3")) {
        suspend_to_s3();
    }
    const char *pmbench = cmdline_find(cmdline, "pmbench");
    const char *hammer = cmdline_find(cmdline, "hammer");
    if (pmbench && *pmbench == '=') {
        run_pmbench(pmbench + 1, hammer && *hammer == '=' ? hammer + 1 : 0);
    }
    if (cmdline_find(cmdline, "poweroff")) {
        power_off();
    }
    if (cmdline_find(cmdline, "count")) {
        run_count(cmdline_find(cmdline, "powerbutton") != 0);
    }
    const char *exit = cmdline_find(cmdline, "exit");
    if (exit && *exit == '=') {
        exit++;
        outb(DEBUG_EXIT_PORT, parse_dec(&exit));
    }
}
