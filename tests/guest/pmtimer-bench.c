/*
 * pmtimer-bench: the PM-timer side of the lock benchmark, in a Linux guest.
 *
 *   pmtimer-bench [READS [dma:KIB]]
 *
 * Times READS (default 20000) reads of the ACPI PM timer port (0x608: PM
 * base 0x600, as on QEMU's pc machine and ours) on CPU 0 with the TSC,
 * each a one-byte read of /dev/port, so one IN done by the kernel. (Port
 * I/O from user space through ioperm/iopl faults in a guest of Debian's
 * QEMU on the bench, so the reference column could not run it.) It
 * measures first idle, then while a thread on CPU 1 keeps reading BAR0 of a PCI test
 * device (ours, 7e57:0001, or QEMU's pci-testdev, 1b36:0005) through its
 * sysfs resource0 mapping. With dma:KIB the thread instead rings
 * pdl-testdev's DMA doorbell, each time filling KIB KiB (at most 2048) of a
 * huge page: a register whose handler holds the device lock for long.
 * Prints
 *   pmbench idle reads=N cycles=C
 *   pmbench loaded reads=N cycles=C hammer=H
 * which tests/bench/pm_timer.py compares. Runs as root (/dev/port, sysfs).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hw/misc/pdl-testdev-regs.h"

#define PM_TIMER_PORT   0x608
#define SYSFS_PCI       "/sys/bus/pci/devices"
#define BAR0_MAP_SIZE   4096
#define HUGE_PAGE_SIZE  (2u << 20)
#define PCI_COMMAND     4
#define PCI_COMMAND_MASTER 0x4

static atomic_bool hammer_stop;
static atomic_uint_fast64_t hammer_reads;
static char device_dir[320];    /* sysfs directory of the device found */
static bool device_is_pdl;

static void pin_to_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        perror("pmtimer-bench: sched_setaffinity");
        exit(1);
    }
}

static unsigned long read_hex_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    unsigned long value = 0;
    if (f) {
        if (fscanf(f, "%lx", &value) != 1) {
            value = 0;
        }
        fclose(f);
    }
    return value;
}

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int is_test_device(unsigned long vendor, unsigned long device)
{
    return (vendor == 0x7e57 && device == 0x0001) || (vendor == 0x1b36 && device == 0x0005);
}

/* BAR0 of the first PCI test device, mapped; NULL if there is none. */
static volatile uint32_t *map_test_device_bar0(void)
{
    DIR *dir = opendir(SYSFS_PCI);
    if (!dir) {
        return NULL;
    }
    volatile uint32_t *bar0 = NULL;
    struct dirent *entry;
    while (!bar0 && (entry = readdir(dir)) != NULL) {
        char path[320];
        snprintf(path, sizeof(path), SYSFS_PCI "/%.256s", entry->d_name);
        if (entry->d_name[0] == '.' ||
            !is_test_device(read_hex_file(path, "vendor"), read_hex_file(path, "device"))) {
            continue;
        }
        write_file(path, "enable", "1");
        snprintf(device_dir, sizeof(device_dir), "%s", path);
        device_is_pdl = read_hex_file(path, "vendor") == PDL_TESTDEV_VENDOR_ID;
        strncat(path, "/resource0", sizeof(path) - strlen(path) - 1);
        int fd = open(path, O_RDWR | O_SYNC);
        if (fd < 0) {
            continue;
        }
        void *map = mmap(NULL, BAR0_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (map != MAP_FAILED) {
            bar0 = map;
        }
    }
    closedir(dir);
    return bar0;
}

static void *hammer_registers(void *opaque)
{
    volatile uint32_t *bar0 = opaque;
    pin_to_cpu(1);
    while (!atomic_load_explicit(&hammer_stop, memory_order_relaxed)) {
        (void)bar0[0];
        atomic_fetch_add_explicit(&hammer_reads, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *hammer_dma_doorbell(void *opaque)
{
    volatile uint32_t *bar0 = opaque;
    pin_to_cpu(1);
    while (!atomic_load_explicit(&hammer_stop, memory_order_relaxed)) {
        bar0[PDL_REG_DMA_DOORBELL / 4] = PDL_DMA_FILL;
        atomic_fetch_add_explicit(&hammer_reads, 1, memory_order_relaxed);
    }
    return NULL;
}

/* A locked huge page (physically contiguous, as one DMA needs) and its
 * guest-physical address; 0 on failure. */
static uint64_t huge_page_for_dma(void)
{
    write_file("/proc/sys/vm", "nr_hugepages", "1");
    void *page = mmap(NULL, HUGE_PAGE_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_LOCKED, -1, 0);
    if (page == MAP_FAILED) {
        perror("pmtimer-bench: huge page");
        return 0;
    }
    memset(page, 0, HUGE_PAGE_SIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t entry = 0;
    off_t offset = (off_t)((uintptr_t)page / 4096) * sizeof(entry);
    if (fd < 0 || pread(fd, &entry, sizeof(entry), offset) != sizeof(entry)) {
        perror("pmtimer-bench: pagemap");
        entry = 0;
    }
    if (fd >= 0) {
        close(fd);
    }
    /* Bit 63: present; bits 0-54: the page frame number. */
    return (entry >> 63) ? (entry & ((1ULL << 55) - 1)) * 4096 : 0;
}

/* Point pdl-testdev's DMA at a huge page and let it master the bus. */
static bool setup_dma_hammer(volatile uint32_t *bar0, unsigned kib)
{
    uint64_t phys = huge_page_for_dma();
    char path[400];
    snprintf(path, sizeof(path), "%s/config", device_dir);
    int fd = open(path, O_RDWR);
    uint16_t command = 0;
    bool ok = phys && fd >= 0 && pread(fd, &command, 2, PCI_COMMAND) == 2;
    command |= PCI_COMMAND_MASTER;
    ok = ok && pwrite(fd, &command, 2, PCI_COMMAND) == 2;
    if (fd >= 0) {
        close(fd);
    }
    if (!ok) {
        fprintf(stderr, "pmtimer-bench: cannot set up DMA\n");
        return false;
    }
    bar0[PDL_REG_DMA_ADDR_LO / 4] = (uint32_t)phys;
    bar0[PDL_REG_DMA_ADDR_HI / 4] = (uint32_t)(phys >> 32);
    bar0[PDL_REG_DMA_LEN / 4] = kib << 10;
    return true;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static uint64_t time_pm_timer_reads(int port_fd, unsigned n)
{
    uint8_t byte;
    uint64_t start = rdtsc();
    for (unsigned i = 0; i < n; i++) {
        if (pread(port_fd, &byte, 1, PM_TIMER_PORT) != 1) {
            perror("pmtimer-bench: /dev/port");
            exit(1);
        }
    }
    return rdtsc() - start;
}

int main(int argc, char **argv)
{
    unsigned reads = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
    unsigned dma_kib = 0;
    if (argc > 2 && (sscanf(argv[2], "dma:%u", &dma_kib) != 1 || dma_kib == 0 ||
                     dma_kib > HUGE_PAGE_SIZE / 1024)) {
        fprintf(stderr, "usage: pmtimer-bench [READS [dma:KIB]] (KIB 1..2048)\n");
        return 2;
    }
    int port_fd = open("/dev/port", O_RDONLY);
    if (port_fd < 0) {
        perror("pmtimer-bench: /dev/port");
        return 1;
    }
    pin_to_cpu(0);
    printf("pmbench idle reads=%u cycles=%llu\n", reads,
           (unsigned long long)time_pm_timer_reads(port_fd, reads));
    fflush(stdout);

    volatile uint32_t *bar0 = map_test_device_bar0();
    if (!bar0) {
        fprintf(stderr, "pmtimer-bench: no PCI test device (7e57:0001 or 1b36:0005)\n");
        return 1;
    }
    void *(*hammer)(void *) = hammer_registers;
    if (dma_kib) {
        if (!device_is_pdl || !setup_dma_hammer(bar0, dma_kib)) {
            fprintf(stderr, "pmtimer-bench: dma:KIB needs pdl-testdev and a huge page\n");
            return 1;
        }
        hammer = hammer_dma_doorbell;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, hammer, (void *)bar0) != 0) {
        fprintf(stderr, "pmtimer-bench: cannot start the hammer thread\n");
        return 1;
    }
    while (atomic_load(&hammer_reads) < 1000) {
        sched_yield();
    }
    uint64_t cycles = time_pm_timer_reads(port_fd, reads);
    uint64_t hammered = atomic_load(&hammer_reads);
    atomic_store(&hammer_stop, true);
    pthread_join(thread, NULL);
    printf("pmbench loaded reads=%u cycles=%llu hammer=%llu\n", reads,
           (unsigned long long)cycles, (unsigned long long)hammered);
    return 0;
}
