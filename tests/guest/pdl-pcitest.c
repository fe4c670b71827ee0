/*
 * pdl-pcitest: guest-side checks of pdl-testdev (7e57:0001), run as root
 * inside a Linux guest. It talks to the device through sysfs, /dev/mem and
 * uio_pci_generic only, so the guest needs no driver of its own.
 *
 *   pdl-pcitest regs | dma | intx | msi [vector] | bar-move [address] |
 *               fastpaths | all
 *
 * Prints "PASS <check>" or "FAIL <check>: why" per check (and "INFO ..."
 * lines saying what it did) and exits 1 if any check failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "hw/misc/pdl-testdev-regs.h"

#define SYSFS_PCI_DEVICES   "/sys/bus/pci/devices"
#define UIO_DRIVER          "/sys/bus/pci/drivers/uio_pci_generic"
#define PAGE_SIZE_4K        4096u

/* Config space (PCI Local Bus Specification 3.0). */
#define CFG_COMMAND         0x04
#define  CMD_IO                 0x0001
#define  CMD_MEMORY             0x0002
#define  CMD_MASTER             0x0004
#define  CMD_INTX_DISABLE       0x0400
#define CFG_STATUS          0x06
#define  STATUS_CAP_LIST        0x0010
#define CFG_BAR0            0x10
#define CFG_CAP_LIST        0x34
#define CAP_ID_MSI          0x05
#define CAP_ID_MSIX         0x11
#define MSI_CONTROL         2
#define  MSI_ENABLE             0x0001
#define  MSI_64BIT              0x0080
#define MSIX_CONTROL        2
#define  MSIX_ENABLE            0x8000
#define  MSIX_FUNCTION_MASK     0x4000
#define MSIX_TABLE          4
#define MSIX_PBA            8
#define MSI_ADDRESS         0xfee00000u     /* LAPIC window, destination APIC id 0 */
#define DEFAULT_MSI_VECTOR  0xd1            /* device range, unused by a small guest */

static char dev_dir[PATH_MAX];
static int config_fd = -1;
static int failures;

/* ---- reporting ---- */

static bool check(bool ok, const char *name, const char *why_fmt, ...)
{
    if (ok) {
        printf("PASS %s\n", name);
        return true;
    }
    va_list ap;
    va_start(ap, why_fmt);
    printf("FAIL %s: ", name);
    vprintf(why_fmt, ap);
    putchar('\n');
    va_end(ap);
    failures++;
    return false;
}

#define fail(name, ...) check(false, name, __VA_ARGS__)

/* ---- sysfs and config space ---- */

static bool read_file_ulong(const char *path, unsigned long *value)
{
    char buf[64];
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        return false;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return false;
    }
    buf[n] = '\0';
    *value = strtoul(buf, NULL, 0);
    return true;
}

/* 0 or -errno. */
static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0) {
        return -errno;
    }
    int ret = write(fd, text, strlen(text)) < 0 ? -errno : 0;
    close(fd);
    return ret;
}

static const char *dev_path(const char *file)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dev_dir, file);
    return path;
}

static bool find_device(void)
{
    DIR *dir = opendir(SYSFS_PCI_DEVICES);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        unsigned long vendor, device;
        snprintf(dev_dir, sizeof(dev_dir), "%s/%s", SYSFS_PCI_DEVICES, e->d_name);
        if (read_file_ulong(dev_path("vendor"), &vendor) && vendor == PDL_TESTDEV_VENDOR_ID &&
            read_file_ulong(dev_path("device"), &device) && device == PDL_TESTDEV_DEVICE_ID) {
            closedir(dir);
            config_fd = open(dev_path("config"), O_RDWR);
            return check(config_fd >= 0, "find-device", "cannot open %s: %s",
                         dev_path("config"), strerror(errno));
        }
    }
    if (dir) {
        closedir(dir);
    }
    return fail("find-device", "no %04x:%04x in %s", PDL_TESTDEV_VENDOR_ID,
                PDL_TESTDEV_DEVICE_ID, SYSFS_PCI_DEVICES);
}

static uint32_t cfg_read(unsigned offset, unsigned len)
{
    uint32_t value = 0;
    if (pread(config_fd, &value, len, offset) != (ssize_t)len) {
        return UINT32_MAX;
    }
    return value;
}

static void cfg_write(unsigned offset, uint32_t value, unsigned len)
{
    if (pwrite(config_fd, &value, len, offset) != (ssize_t)len) {
        printf("INFO config write of %u bytes at 0x%x failed: %s\n", len, offset,
               strerror(errno));
    }
}

static void cfg_set_command_bits(uint16_t bits, bool on)
{
    uint16_t command = cfg_read(CFG_COMMAND, 2);
    cfg_write(CFG_COMMAND, on ? command | bits : command & ~bits, 2);
}

static unsigned find_capability(uint8_t id)
{
    if (!(cfg_read(CFG_STATUS, 2) & STATUS_CAP_LIST)) {
        return 0;
    }
    unsigned pos = cfg_read(CFG_CAP_LIST, 1) & ~3u;
    for (int hops = 0; pos && hops < 48; hops++) {
        if (cfg_read(pos, 1) == id) {
            return pos;
        }
        pos = cfg_read(pos + 1, 1) & ~3u;
    }
    return 0;
}

static bool enable_device(void)
{
    unsigned long enabled = 0;
    if (read_file_ulong(dev_path("enable"), &enabled) && enabled) {
        return true;
    }
    int err = write_file(dev_path("enable"), "1");
    return check(err == 0, "enable", "writing 1 to %s: %s", dev_path("enable"), strerror(-err));
}

/* Map a whole sysfs resource file (a BAR), or NULL. */
static volatile uint32_t *map_resource(unsigned bar, size_t *size)
{
    char name[16];
    struct stat st;
    snprintf(name, sizeof(name), "resource%u", bar);
    int fd = open(dev_path(name), O_RDWR | O_SYNC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        fail("map-bar", "%s: %s", dev_path(name), strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    void *p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fail("map-bar", "mmap of %s: %s", dev_path(name), strerror(errno));
        return NULL;
    }
    *size = st.st_size;
    return p;
}

static volatile uint32_t *map_bar0(void)
{
    size_t size;
    volatile uint32_t *regs = map_resource(PDL_TESTDEV_MMIO_BAR, &size);
    if (regs && size < PDL_TESTDEV_MMIO_SIZE) {
        fail("map-bar", "BAR0 is %zu bytes, expected %u", size, PDL_TESTDEV_MMIO_SIZE);
        munmap((void *)regs, size);
        return NULL;
    }
    return regs;
}

static uint32_t reg(volatile uint32_t *regs, unsigned offset)
{
    return regs[offset / 4];
}

static void reg_set(volatile uint32_t *regs, unsigned offset, uint32_t value)
{
    regs[offset / 4] = value;
}

/* ---- regs ---- */

static bool io_bar_access(int fd, unsigned offset, uint32_t *value, bool is_write)
{
    ssize_t n = is_write ? pwrite(fd, value, 4, offset) : pread(fd, value, 4, offset);
    return n == 4;
}

static void test_regs_io_bar(volatile uint32_t *regs)
{
    uint32_t id = 0, scratch = 0x0badf00d, readback = 0, accesses[2] = { 0, 0 };
    int fd = open(dev_path("resource1"), O_RDWR);
    if (fd < 0) {
        fail("io-bar", "%s: %s", dev_path("resource1"), strerror(errno));
        return;
    }
    bool ok = io_bar_access(fd, PDL_REG_ID, &id, false) &&
              io_bar_access(fd, PDL_REG_SCRATCH, &scratch, true) &&
              io_bar_access(fd, PDL_REG_SCRATCH, &readback, false) &&
              io_bar_access(fd, PDL_REG_ACCESSES, &accesses[0], false) &&
              io_bar_access(fd, PDL_REG_ACCESSES, &accesses[1], false);
    int err = errno;
    close(fd);
    if (!check(ok, "io-bar", "4-byte read/write of resource1: %s", strerror(err))) {
        return;
    }
    check(id == PDL_TESTDEV_MAGIC, "io-id", "read 0x%08x, expected 0x%08x", id, PDL_TESTDEV_MAGIC);
    check(readback == scratch && reg(regs, PDL_REG_SCRATCH) == scratch, "io-scratch",
          "wrote 0x%08x, read 0x%08x (BAR0 shows 0x%08x)", scratch, readback,
          reg(regs, PDL_REG_SCRATCH));
    check(accesses[1] == accesses[0] + 1, "io-accesses", "counter went %u -> %u",
          accesses[0], accesses[1]);
}

static void test_regs(void)
{
    volatile uint32_t *regs;
    if (!enable_device() || !(regs = map_bar0())) {
        return;
    }
    uint32_t id = reg(regs, PDL_REG_ID);
    check(id == PDL_TESTDEV_MAGIC, "mmio-id", "read 0x%08x, expected 0x%08x", id,
          PDL_TESTDEV_MAGIC);
    reg_set(regs, PDL_REG_SCRATCH, 0x5a5a1234);
    uint32_t scratch = reg(regs, PDL_REG_SCRATCH);
    check(scratch == 0x5a5a1234, "mmio-scratch", "wrote 0x5a5a1234, read 0x%08x", scratch);
    uint32_t a = reg(regs, PDL_REG_ACCESSES), b = reg(regs, PDL_REG_ACCESSES);
    check(b == a + 1, "mmio-accesses", "counter went %u -> %u", a, b);
    test_regs_io_bar(regs);
    munmap((void *)regs, PDL_TESTDEV_MMIO_SIZE);
}

/* ---- dma ---- */

/* Guest-physical address of a locked page of ours, or 0. */
static uint64_t virt_to_phys(const void *p)
{
    uint64_t entry = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    off_t offset = (off_t)((uintptr_t)p / PAGE_SIZE_4K) * sizeof(entry);
    bool ok = fd >= 0 && pread(fd, &entry, sizeof(entry), offset) == sizeof(entry);
    if (fd >= 0) {
        close(fd);
    }
    uint64_t pfn = entry & ((1ULL << 55) - 1);
    if (!ok || !(entry >> 63) || pfn == 0) {
        return 0;   /* not present, or PFNs hidden (not root) */
    }
    return pfn * PAGE_SIZE_4K + (uintptr_t)p % PAGE_SIZE_4K;
}

static uint32_t run_dma(volatile uint32_t *regs, uint64_t addr, uint32_t len, uint32_t command)
{
    reg_set(regs, PDL_REG_DMA_ADDR_LO, (uint32_t)addr);
    reg_set(regs, PDL_REG_DMA_ADDR_HI, addr >> 32);
    reg_set(regs, PDL_REG_DMA_LEN, len);
    reg_set(regs, PDL_REG_DMA_DOORBELL, command);
    uint32_t status = reg(regs, PDL_REG_DMA_STATUS);
    /* The device changed our buffer behind the compiler's back. */
    __asm__ volatile("" ::: "memory");
    return status;
}

static size_t count_bytes_not(const uint8_t *buf, size_t len, uint8_t value)
{
    size_t bad = 0;
    for (size_t i = 0; i < len; i++) {
        bad += buf[i] != value;
    }
    return bad;
}

static void test_dma_with(volatile uint32_t *regs, uint8_t *buf, uint64_t phys)
{
    memset(buf, 0, PAGE_SIZE_4K);
    reg_set(regs, PDL_REG_DMA_PATTERN, 0x3c);
    uint32_t status = run_dma(regs, phys, PAGE_SIZE_4K, PDL_DMA_FILL);
    size_t bad = count_bytes_not(buf, PAGE_SIZE_4K, 0x3c);
    check(status == PDL_DMA_STATUS_DONE && bad == 0, "dma-fill",
          "status %u, %zu of %u bytes are not 0x3c", status, bad, PAGE_SIZE_4K);

    uint32_t expected = 0;
    for (unsigned i = 0; i < PAGE_SIZE_4K; i++) {
        buf[i] = (uint8_t)(i * 13 + 7);
        expected += buf[i];
    }
    status = run_dma(regs, phys, PAGE_SIZE_4K, PDL_DMA_SUM);
    uint32_t result = reg(regs, PDL_REG_DMA_RESULT);
    check(status == PDL_DMA_STATUS_DONE && result == expected, "dma-sum",
          "status %u, sum 0x%x, expected 0x%x", status, result, expected);

    cfg_set_command_bits(CMD_MASTER, false);
    memset(buf, 0, PAGE_SIZE_4K);
    status = run_dma(regs, phys, PAGE_SIZE_4K, PDL_DMA_FILL);
    bad = count_bytes_not(buf, PAGE_SIZE_4K, 0);
    check(status == PDL_DMA_STATUS_ERROR && bad == 0, "dma-needs-master",
          "without bus mastering: status %u, %zu bytes changed", status, bad);
    cfg_set_command_bits(CMD_MASTER, true);
}

static void test_dma(void)
{
    volatile uint32_t *regs;
    if (!enable_device() || !(regs = map_bar0())) {
        return;
    }
    cfg_set_command_bits(CMD_MASTER, true);
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, PAGE_SIZE_4K, PAGE_SIZE_4K) != 0 ||
        mlock(buf, PAGE_SIZE_4K) != 0) {
        fail("dma-buffer", "cannot allocate and lock a page: %s", strerror(errno));
    } else {
        memset(buf, 0xff, PAGE_SIZE_4K);    /* fault it in before asking for its PFN */
        uint64_t phys = virt_to_phys(buf);
        if (check(phys != 0, "dma-buffer", "no physical address in /proc/self/pagemap")) {
            printf("INFO dma: buffer at guest-physical 0x%llx\n", (unsigned long long)phys);
            test_dma_with(regs, buf, phys);
        }
        munlock(buf, PAGE_SIZE_4K);
    }
    free(buf);
    munmap((void *)regs, PDL_TESTDEV_MMIO_SIZE);
}

/* ---- intx (through uio_pci_generic) ---- */

/* The device's /dev/uioN, made from its sysfs dev numbers if no one has. */
static int open_uio(void)
{
    for (int tries = 0; tries < 20; tries++) {
        DIR *dir = opendir(dev_path("uio"));
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            if (strncmp(e->d_name, "uio", 3) != 0) {
                continue;
            }
            char node[300], dev_file[PATH_MAX + 300];
            unsigned major_nr, minor_nr;
            snprintf(node, sizeof(node), "/dev/%s", e->d_name);
            snprintf(dev_file, sizeof(dev_file), "%s/uio/%s/dev", dev_dir, e->d_name);
            FILE *f = fopen(dev_file, "r");
            if (access(node, F_OK) != 0 && f && fscanf(f, "%u:%u", &major_nr, &minor_nr) == 2) {
                mknod(node, S_IFCHR | 0600, makedev(major_nr, minor_nr));
            }
            if (f) {
                fclose(f);
            }
            closedir(dir);
            return open(node, O_RDWR);
        }
        if (dir) {
            closedir(dir);
        }
        usleep(100 * 1000);
    }
    errno = ENOENT;
    return -1;
}

/* Unmask INTx (uio_pci_generic's handler masks it with COMMAND.INTX_DISABLE
 * and has no irqcontrol: user space clears the bit in config space, as
 * the UIO documentation says), raise it, wait for uio's event count to
 * pass *events. */
static bool intx_round(volatile uint32_t *regs, int uio, unsigned round, uint32_t *events)
{
    char name[32];
    uint32_t before = *events;
    snprintf(name, sizeof(name), "intx-%u", round);
    cfg_set_command_bits(CMD_INTX_DISABLE, false);
    uint32_t raised = reg(regs, PDL_REG_IRQ_COUNT);
    reg_set(regs, PDL_REG_IRQ_RAISE, PDL_IRQ_INTX);
    struct pollfd pfd = { .fd = uio, .events = POLLIN };
    int ready = poll(&pfd, 1, 5000);
    bool got = ready == 1 && read(uio, events, sizeof(*events)) == sizeof(*events);
    reg_set(regs, PDL_REG_IRQ_ACK, 0);
    return check(got && *events > before && reg(regs, PDL_REG_IRQ_COUNT) == raised + 1, name,
                 "no interrupt within 5 s (poll %d, uio count %u -> %u, device raised %u)",
                 ready, before, *events, reg(regs, PDL_REG_IRQ_COUNT) - raised);
}

static void test_intx(void)
{
    volatile uint32_t *regs;
    const char *bdf = strrchr(dev_dir, '/') + 1;
    int err = write_file(UIO_DRIVER "/new_id", "7e57 0001");
    if (err && err != -EEXIST) {
        fail("intx-bind", "%s/new_id: %s (is uio_pci_generic loaded?)", UIO_DRIVER,
             strerror(-err));
        return;
    }
    /* An id added by an earlier run probes nothing: bind by address too. */
    write_file(UIO_DRIVER "/bind", bdf);
    int uio = open_uio();
    if (check(uio >= 0, "intx-bind", "no /dev/uio for %s: %s", bdf, strerror(errno)) &&
        (regs = map_bar0())) {
        uint32_t events = 0;
        if (intx_round(regs, uio, 1, &events)) {
            intx_round(regs, uio, 2, &events);
        }
        munmap((void *)regs, PDL_TESTDEV_MMIO_SIZE);
    }
    if (uio >= 0) {
        close(uio);
    }
    /* Give the device back, so the next checks find it without a driver,
     * with INTx unmasked again (the driver's handler left it masked). */
    write_file(UIO_DRIVER "/remove_id", "7e57 0001");
    write_file(UIO_DRIVER "/unbind", bdf);
    cfg_set_command_bits(CMD_INTX_DISABLE, false);
}

/* ---- msi and msi-x (programmed by hand; the guest has no handler) ---- */

static void expect_unhandled(const char *what, unsigned vector)
{
    printf("INFO %s: sent vector 0x%x to APIC 0; the guest kernel should log "
           "\"0.%u No irq handler for vector\"\n", what, vector, vector);
}

static void test_msi(volatile uint32_t *regs, unsigned vector)
{
    unsigned cap = find_capability(CAP_ID_MSI);
    if (!check(cap != 0, "msi-capability", "no MSI capability in config space")) {
        return;
    }
    uint16_t control = cfg_read(cap + MSI_CONTROL, 2);
    unsigned data_offset = control & MSI_64BIT ? 12 : 8;
    cfg_write(cap + 4, MSI_ADDRESS, 4);
    if (control & MSI_64BIT) {
        cfg_write(cap + 8, 0, 4);
    }
    cfg_write(cap + data_offset, vector, 2);
    cfg_write(cap + MSI_CONTROL, control | MSI_ENABLE, 2);
    uint32_t raised = reg(regs, PDL_REG_IRQ_COUNT);
    reg_set(regs, PDL_REG_IRQ_RAISE, PDL_IRQ_MSI);
    check(reg(regs, PDL_REG_IRQ_COUNT) == raised + 1, "msi-sent",
          "the device did not send (MSI control 0x%04x)", cfg_read(cap + MSI_CONTROL, 2));
    expect_unhandled("msi", vector);
    cfg_write(cap + MSI_CONTROL, control & ~MSI_ENABLE, 2);
}

/* Wait (2 s at most) for the VMM's main loop to signal the irqfd vector's
 * notifier after a write to IRQFD_TRIGGER. */
static bool wait_irqfd_signal(volatile uint32_t *regs, uint32_t before)
{
    for (int i = 0; i < 2000 && reg(regs, PDL_REG_IRQFD_SIGNALS) == before; i++) {
        usleep(1000);
    }
    return reg(regs, PDL_REG_IRQFD_SIGNALS) != before;
}

static bool irqfd_in_kernel(volatile uint32_t *regs)
{
    return reg(regs, PDL_REG_IRQFD_STATUS) & PDL_IRQFD_IN_KERNEL;
}

/*
 * The vector the VMM's main loop raises through its irqfd: KVM delivers it
 * with no vCPU on its path; masked, it waits in the PBA, and the unmask
 * sends it. The guest logs each arrival, as for the others.
 *
 * What proves the irqfd (as the tiny guest's "in-kernel=1" does):
 * IRQFD_STATUS says the irqfd is assigned in KVM, and while it is, the
 * VMM does not watch the notifier at all (hw/pci/msi-irqfd.c), so KVM is
 * the only reader of the signal. A signal sent with the flag up before
 * and still up after the signal went out, with nothing in the PBA, was
 * delivered by KVM's irqfd: a user-space MSI (KVM_SIGNAL_MSI) needs the
 * flag down. The message the unmask sends is the one signal that waited
 * in user space, so it is a user-space MSI by design; after it the irqfd
 * must be assigned again.
 */
static void test_msix_irqfd(volatile uint32_t *regs, volatile uint32_t *table,
                            volatile uint32_t *pending, unsigned vector)
{
    volatile uint32_t *entry = table + PDL_TESTDEV_IRQFD_VECTOR * 4;
    uint32_t bit = 1u << PDL_TESTDEV_IRQFD_VECTOR;
    entry[0] = MSI_ADDRESS;
    entry[1] = 0;
    entry[2] = vector;
    entry[3] = 0;
    printf("INFO msix-irqfd: entry %u -> 0x%x data 0x%x, raised by the VMM's main loop\n",
           PDL_TESTDEV_IRQFD_VECTOR, MSI_ADDRESS, vector);
    bool in_kernel_before = irqfd_in_kernel(regs);
    check(in_kernel_before, "msix-irqfd-in-kernel",
          "IRQFD_STATUS 0x%x: KVM does not deliver the vector (no KVM_CAP_IRQFD?)",
          reg(regs, PDL_REG_IRQFD_STATUS));
    uint32_t signals = reg(regs, PDL_REG_IRQFD_SIGNALS);
    reg_set(regs, PDL_REG_IRQFD_TRIGGER, 1);
    bool signalled = wait_irqfd_signal(regs, signals);
    bool in_kernel_after = irqfd_in_kernel(regs);
    check(signalled && in_kernel_before && in_kernel_after && !(pending[0] & bit),
          "msix-irqfd-sent", "signals %u -> %u, PBA 0x%x, irqfd in KVM before %d after %d",
          signals, reg(regs, PDL_REG_IRQFD_SIGNALS), pending[0], in_kernel_before,
          in_kernel_after);
    expect_unhandled("msix-irqfd", vector);

    entry[3] = 1;
    signals = reg(regs, PDL_REG_IRQFD_SIGNALS);
    reg_set(regs, PDL_REG_IRQFD_TRIGGER, 1);
    check(wait_irqfd_signal(regs, signals) && (pending[0] & bit) && !irqfd_in_kernel(regs),
          "msix-irqfd-masked-pending", "masked: signals %u -> %u, PBA 0x%x, IRQFD_STATUS 0x%x",
          signals, reg(regs, PDL_REG_IRQFD_SIGNALS), pending[0],
          reg(regs, PDL_REG_IRQFD_STATUS));
    entry[3] = 0;
    check(!(pending[0] & bit) && irqfd_in_kernel(regs), "msix-irqfd-unmask-delivers",
          "PBA 0x%x after the unmask, IRQFD_STATUS 0x%x", pending[0],
          reg(regs, PDL_REG_IRQFD_STATUS));
    expect_unhandled("msix-irqfd (on unmask)", vector);
    entry[3] = 1;
}

static void test_msix(volatile uint32_t *regs, unsigned vector)
{
    unsigned cap = find_capability(CAP_ID_MSIX);
    if (!check(cap != 0, "msix-capability", "no MSI-X capability in config space")) {
        return;
    }
    uint32_t table = cfg_read(cap + MSIX_TABLE, 4), pba = cfg_read(cap + MSIX_PBA, 4);
    size_t size;
    volatile uint32_t *bar = map_resource(table & 7, &size);
    if (!bar) {
        return;
    }
    if (!check((table & ~7u) + 16 <= size && (pba & ~7u) + 8 <= size && (pba & 7) == (table & 7),
               "msix-layout", "table 0x%x / PBA 0x%x do not fit BAR%u of %zu bytes",
               table, pba, table & 7, size)) {
        munmap((void *)bar, size);
        return;
    }
    volatile uint32_t *entry0 = bar + (table & ~7u) / 4;
    volatile uint32_t *pending = bar + (pba & ~7u) / 4;
    uint16_t control = cfg_read(cap + MSIX_CONTROL, 2);
    cfg_write(cap + MSIX_CONTROL, (control | MSIX_ENABLE) & ~MSIX_FUNCTION_MASK, 2);
    entry0[0] = MSI_ADDRESS;
    entry0[1] = 0;
    entry0[2] = vector;
    entry0[3] = 0;      /* unmask */
    printf("INFO msix: BAR%u entry 0 -> 0x%x data 0x%x, unmasked, MSI-X enabled\n",
           table & 7, MSI_ADDRESS, vector);
    uint32_t raised = reg(regs, PDL_REG_IRQ_COUNT);
    reg_set(regs, PDL_REG_IRQ_RAISE, PDL_IRQ_MSIX);
    check(reg(regs, PDL_REG_IRQ_COUNT) == raised + 1 && !(pending[0] & 1), "msix-sent",
          "raised %u, PBA 0x%x (1: left pending)", reg(regs, PDL_REG_IRQ_COUNT) - raised,
          pending[0]);
    expect_unhandled("msix", vector);
    entry0[3] = 1;
    test_msix_irqfd(regs, entry0, pending, vector + 1);
    cfg_write(cap + MSIX_CONTROL, control & ~MSIX_ENABLE, 2);
    munmap((void *)bar, size);
}

static void test_msi_all(unsigned vector)
{
    volatile uint32_t *regs;
    if (!enable_device() || !(regs = map_bar0())) {
        return;
    }
    cfg_set_command_bits(CMD_MASTER, true);     /* messages are bus-master writes */
    test_msi(regs, vector);
    test_msix(regs, vector + 1);     /* and its irqfd vector, vector + 2 */
    munmap((void *)regs, PDL_TESTDEV_MMIO_SIZE);
}

/* ---- fastpaths: the doorbell on an ioeventfd, the coalesced array ---- */

#define DOORBELL_RINGS      10000
#define COALESCED_BURST     2000
/* A coalesced burst exits whenever KVM's ring is full; besides, exits this
 * thread's CPU may make for others meanwhile (the kernel's own port I/O,
 * a console line) are allowed: one per 100 writes. The doorbell's check
 * allows none (test_doorbell). */
#define EXITS_ALLOWED(n)    ((n) / 100)

/* A BAR's registers: BAR0 mapped, or BAR1 through resource1, where each
 * 4-byte pread/pwrite is one port access. */
typedef struct PdlRegs {
    volatile uint32_t *mmio;
    int io_fd;
} PdlRegs;

static uint32_t pdl_get(PdlRegs r, unsigned offset)
{
    uint32_t value = 0;
    if (r.mmio) {
        return reg(r.mmio, offset);
    }
    if (!io_bar_access(r.io_fd, offset, &value, false)) {
        fail("io-bar", "read of resource1 at 0x%x: %s", offset, strerror(errno));
    }
    return value;
}

static void pdl_set(PdlRegs r, unsigned offset, uint32_t value)
{
    if (r.mmio) {
        reg_set(r.mmio, offset, value);
    } else if (!io_bar_access(r.io_fd, offset, &value, true)) {
        fail("io-bar", "write of resource1 at 0x%x: %s", offset, strerror(errno));
    }
}

/*
 * Doorbell rings through r: counted by the device, and not one of them
 * left the kernel. EVENTFD_EXITS counts the writes of this CPU's vCPU
 * (this thread stays on CPU 0) that reached user space although an
 * ioeventfd matched them: each is a ring KVM did not keep, and only those
 * count, so the check allows none. (Any other ioeventfd write on this CPU,
 * a virtio kick by another task, would count too and be the same failure
 * of the fast path.) VCPU_EXITS, every exit of this CPU to user space
 * meanwhile (the kernel's own port I/O, a console line, other tasks'), is
 * printed for information only.
 */
static void test_doorbell(PdlRegs r, const char *kind, unsigned rings)
{
    uint32_t counted = pdl_get(r, PDL_REG_DOORBELL_COUNT);
    uint32_t ring_exits = pdl_get(r, PDL_REG_EVENTFD_EXITS);
    uint32_t exits = pdl_get(r, PDL_REG_VCPU_EXITS);
    for (unsigned i = 0; i < rings; i++) {
        pdl_set(r, PDL_REG_DOORBELL, i);
    }
    exits = pdl_get(r, PDL_REG_VCPU_EXITS) - exits - 1;     /* not this read */
    ring_exits = pdl_get(r, PDL_REG_EVENTFD_EXITS) - ring_exits;
    counted = pdl_get(r, PDL_REG_DOORBELL_COUNT) - counted;
    printf("INFO doorbell-%s rings=%u counted=%u ring-exits=%u cpu-exits=%u\n", kind, rings,
           counted, ring_exits, exits);
    char name[32];
    snprintf(name, sizeof(name), "doorbell-%s-counted", kind);
    check(counted == rings, name, "%u rings, the device counted %u", rings, counted);
    snprintf(name, sizeof(name), "doorbell-%s-no-exits", kind);
    check(ring_exits == 0, name, "%u of %u rings exited to user space", ring_exits, rings);
}

static uint32_t array_burst(PdlRegs r, unsigned n, uint32_t seed)
{
    uint32_t digest = PDL_LOG_DIGEST_INIT;
    for (unsigned i = 0; i < n; i++) {
        uint32_t index = i % PDL_ARRAY_ENTRIES, value = seed + i * 0x9e3779b9u;
        pdl_set(r, PDL_REG_ARRAY + 4 * index, value);
        digest = pdl_log_digest_step(digest, index, value);
    }
    return digest;
}

/* A burst is applied once each and in order, with an exit only when KVM's
 * ring is full; a clear of the log between two bursts lands between them. */
static void test_coalesced(PdlRegs r, const char *kind, unsigned burst)
{
    char name[40];
    pdl_set(r, PDL_REG_LOG_COUNT, 0);
    uint32_t exits = pdl_get(r, PDL_REG_VCPU_EXITS);
    uint32_t digest = array_burst(r, burst, 0x1234);
    exits = pdl_get(r, PDL_REG_VCPU_EXITS) - exits - 1;
    uint32_t applied = pdl_get(r, PDL_REG_LOG_COUNT), got = pdl_get(r, PDL_REG_LOG_DIGEST);
    printf("INFO coalesced-%s writes=%u applied=%u exits=%u\n", kind, burst, applied, exits);
    snprintf(name, sizeof(name), "coalesced-%s-in-order", kind);
    check(applied == burst && got == digest, name,
          "%u writes: %u applied, digest 0x%08x, expected 0x%08x", burst, applied, got, digest);
    snprintf(name, sizeof(name), "coalesced-%s-few-exits", kind);
    check(exits <= EXITS_ALLOWED(burst) + burst / 100, name,
          "%u exits to user space for %u writes", exits, burst);

    array_burst(r, 100, 0x5678);
    pdl_set(r, PDL_REG_LOG_COUNT, 0);
    digest = array_burst(r, 100, 0x9abc);
    applied = pdl_get(r, PDL_REG_LOG_COUNT);
    got = pdl_get(r, PDL_REG_LOG_DIGEST);
    snprintf(name, sizeof(name), "coalesced-%s-after-clear", kind);
    check(applied == 100 && got == digest, name, "%u applied after the clear, expected 100%s",
          applied, got == digest ? "" : " (and another digest)");
}

static void test_fastpaths(void)
{
    volatile uint32_t *regs;
    if (!enable_device() || !(regs = map_bar0())) {
        return;
    }
    cfg_set_command_bits(CMD_IO, true);
    int io_fd = open(dev_path("resource1"), O_RDWR);
    if (!check(io_fd >= 0, "fastpaths-io-bar", "%s: %s", dev_path("resource1"), strerror(errno))) {
        munmap((void *)regs, PDL_TESTDEV_MMIO_SIZE);
        return;
    }
    PdlRegs mmio = { regs, -1 }, io = { NULL, io_fd };
    uint32_t fast = reg(regs, PDL_REG_FAST_PATHS);
    printf("INFO fast paths 0x%x\n", fast);
    if (fast & PDL_FAST_IOEVENTFD) {
        test_doorbell(mmio, "mmio", DOORBELL_RINGS);
        test_doorbell(io, "pio", DOORBELL_RINGS / 10);
    } else {
        printf("SKIP doorbell: no KVM_CAP_IOEVENTFD\n");
    }
    if (fast & PDL_FAST_COALESCED_MMIO) {
        test_coalesced(mmio, "mmio", COALESCED_BURST);
    } else {
        printf("SKIP coalesced-mmio: no KVM_CAP_COALESCED_MMIO\n");
    }
    if (fast & PDL_FAST_COALESCED_PIO) {
        test_coalesced(io, "pio", COALESCED_BURST / 4);
    } else {
        printf("SKIP coalesced-pio: no KVM_CAP_COALESCED_PIO\n");
    }
    close(io_fd);
    munmap((void *)regs, PDL_TESTDEV_MMIO_SIZE);
}

/* ---- bar-move ---- */

/* Read a dword at a physical address through /dev/mem. */
static bool phys_read32(uint64_t addr, uint32_t *value)
{
    int fd = open("/dev/mem", O_RDONLY | O_SYNC);
    if (fd < 0) {
        return false;
    }
    void *p = mmap(NULL, PAGE_SIZE_4K, PROT_READ, MAP_SHARED, fd, addr & ~(uint64_t)4095);
    close(fd);
    if (p == MAP_FAILED) {
        return false;
    }
    *value = *(volatile uint32_t *)((uint8_t *)p + (addr & 4095));
    munmap(p, PAGE_SIZE_4K);
    return true;
}

static void test_bar_move(uint64_t new_addr)
{
    if (!enable_device()) {
        return;
    }
    cfg_set_command_bits(CMD_MEMORY, true);
    uint32_t bar = cfg_read(CFG_BAR0, 4);
    uint32_t old_addr = bar & ~0xfu;
    if (!check(!(bar & 1) && !(bar & 4) && old_addr, "bar-move-setup",
               "BAR0 0x%08x is not an assigned 32-bit memory BAR", bar)) {
        return;
    }
    if (!new_addr) {
        new_addr = old_addr + 0x100000;
    }
    uint32_t at_new = 0, at_old = 0;
    if (!check(phys_read32(new_addr, &at_new) && at_new == UINT32_MAX, "bar-move-free",
               "0x%llx is in use (reads 0x%08x): pass a free address",
               (unsigned long long)new_addr, at_new)) {
        return;
    }
    printf("INFO bar-move: BAR0 0x%x -> 0x%llx\n", old_addr, (unsigned long long)new_addr);
    cfg_write(CFG_BAR0, (uint32_t)new_addr, 4);
    bool read_new = phys_read32(new_addr + PDL_REG_ID, &at_new);
    bool read_old = phys_read32(old_addr + PDL_REG_ID, &at_old);
    check(read_new && at_new == PDL_TESTDEV_MAGIC, "bar-move-new",
          "ID at the new address reads 0x%08x%s", at_new, read_new ? "" : " (no /dev/mem)");
    check(read_old && at_old == UINT32_MAX, "bar-move-old",
          "the old address reads 0x%08x, expected 0xffffffff", at_old);
    cfg_write(CFG_BAR0, bar, 4);
    uint32_t restored = 0;
    check(phys_read32(old_addr + PDL_REG_ID, &restored) && restored == PDL_TESTDEV_MAGIC,
          "bar-move-restore", "ID at the restored address reads 0x%08x", restored);
}

/* ---- main ---- */

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s regs | dma | intx | msi [vector] | bar-move [address] | "
            "fastpaths | all\n"
            "  vector: hex, 0x20..0xfc (MSI uses it, MSI-X the next two)\n"
            "  address: hex, 4 KiB aligned, below 4 GiB (default: BAR0 + 1 MiB)\n", argv0);
    return 2;
}

/* The optional hex argument, or 0; false if it is malformed. */
static bool parse_hex_arg(int argc, char **argv, uint64_t *value)
{
    char *end;
    *value = 0;
    if (argc <= 2) {
        return true;
    }
    errno = 0;
    *value = strtoull(argv[2], &end, 16);
    return errno == 0 && end != argv[2] && *end == '\0';
}

/*
 * Every message this program sends targets APIC 0, and the fast-path
 * counters are those of the vCPU it runs on: run on CPU 0. There, a vector
 * raised by another thread is taken at the vCPU's next entry, before the
 * program's next step; on another CPU it could still wait in APIC 0's IRR
 * when the same vector arrives again, and the two would merge into one.
 */
static bool run_on_cpu0(void)
{
    cpu_set_t cpu0;
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    return check(sched_setaffinity(0, sizeof(cpu0), &cpu0) == 0, "cpu0",
                 "sched_setaffinity: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *cmd = argc > 1 ? argv[1] : "";
    bool all = strcmp(cmd, "all") == 0;
    uint64_t arg;
    if ((!all && strcmp(cmd, "regs") && strcmp(cmd, "dma") && strcmp(cmd, "intx") &&
         strcmp(cmd, "msi") && strcmp(cmd, "bar-move") && strcmp(cmd, "fastpaths")) ||
        !parse_hex_arg(argc, argv, &arg)) {
        return usage(argv[0]);
    }
    unsigned vector = !strcmp(cmd, "msi") && arg ? (unsigned)arg : DEFAULT_MSI_VECTOR;
    uint64_t new_bar = !strcmp(cmd, "bar-move") ? arg : 0;
    if (vector < 0x20 || vector > 0xfc || new_bar % PAGE_SIZE_4K || new_bar >= (1ULL << 32)) {
        return usage(argv[0]);
    }
    if (!run_on_cpu0() || !find_device()) {
        return 1;
    }
    printf("INFO device %s\n", dev_dir);
    if (all || !strcmp(cmd, "regs")) {
        test_regs();
    }
    if (all || !strcmp(cmd, "dma")) {
        test_dma();
    }
    if (all || !strcmp(cmd, "intx")) {
        test_intx();
    }
    if (all || !strcmp(cmd, "msi")) {
        test_msi_all(vector);
    }
    if (all || !strcmp(cmd, "bar-move")) {
        test_bar_move(new_bar);
    }
    if (all || !strcmp(cmd, "fastpaths")) {
        test_fastpaths();
    }
    printf("SUMMARY %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
