/*
 * The e1000's transmit path without a guest: a "vCPU" thread fills the TX
 * ring with 1514-byte frames and writes TDT after each one, as Linux's
 * driver does, while the main loop serves the device's context; the
 * backend writes every frame to a datagram socket that a third thread
 * drains, standing in for a tap. Run once with TX on the vCPU
 * (x-tx-defer=off) and once deferred to the device's context (on).
 *
 *   build/tests/bench/e1000-tx [FRAMES]
 *
 * Prints frames per second and the vCPU's time per TDT write (what the
 * guest loses to the TDT exit's handler), with one frame and with 32
 * frames per TDT write. Never part of the pass/fail suite
 * (docs/benchmarks.md).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/net/e1000-regs.h"
#include "hw/net/e1000.h"
#include "hw/pci/pci.h"
#include "net/net.h"
#include "qemu/main-loop.h"

#define RAM_BASE        0x100000ULL
#define RAM_SIZE        (8 << 20)
#define TX_RING         RAM_BASE
#define TX_COUNT        256
#define TX_BUF          (RAM_BASE + 0x10000)
#define FRAME           1514

static uint8_t *ram;
static int sink[2];
static atomic_bool stop;

static void no_level(void *opaque, unsigned gsi, bool level)
{
}

static void no_msi(void *opaque, uint64_t address, uint32_t data)
{
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return 16 + (slot + pin - 1) % 4;
}

static ssize_t sink_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    ssize_t n = writev(sink[0], iov, iovcnt);
    return n < 0 ? 1 : n;       /* a full socket drops, as a tap without room */
}

static const NetClientInfo sink_info = { .type = "sink", .receive = sink_receive };

static gpointer drain_sink(gpointer opaque)
{
    uint8_t buf[2048];
    while (read(sink[1], buf, sizeof(buf)) > 0) {
    }
    return NULL;
}

static gpointer run_main_loop(gpointer opaque)
{
    while (!atomic_load(&stop)) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    return NULL;
}

static void reg_write(uint64_t bar, unsigned reg, uint32_t value)
{
    address_space_write(address_space_memory, bar + reg, &value, 4);
}

static void run(PCIBus *bus, bool deferred, unsigned frames, unsigned batch)
{
    static unsigned n;
    g_autofree char *id = g_strdup_printf("sink%u", n++);
    Error *err = NULL;
    NetDev *nd = netdev_new("sink", id, 1, &sink_info, &err);
    E1000Conf conf = { .netdev = nd, .mac = { { 0x52, 0x54, 0, 0x12, 0x34, 0x56 } },
                       .tx_deferred = deferred };
    QEMUDevice *dev = e1000_new(bus, -1, &conf, &err);
    if (!dev || !pci_bus_assign_resources(bus, 0xc000, 0xffff, 0xe0000000, 0xfebfffff, &err)) {
        error_prepend(&err, "e1000-tx: ");
        error_report_err(err);
        exit(1);
    }
    unsigned devfn = ((PCIDevice *)dev)->devfn;
    pci_bus_config_write(bus, devfn, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
    uint64_t bar = pci_bus_config_read(bus, devfn, PCI_BASE_ADDRESS_0, 4) & ~0xfu;
    memset(ram, 0, RAM_SIZE);
    reg_write(bar, E1000_TDBAL, TX_RING);
    reg_write(bar, E1000_TDLEN, TX_COUNT * 16);
    reg_write(bar, E1000_TCTL, E1000_TCTL_EN);
    uint8_t *ring = ram + (TX_RING - RAM_BASE);
    gint64 in_handler = 0, start = g_get_monotonic_time();
    for (unsigned i = 0; i < frames; i++) {
        unsigned slot = i % TX_COUNT;
        volatile uint8_t *d = ring + 16 * slot;
        /* As a driver does, keep one descriptor free (TDT == TDH is an
         * empty ring): frame i - 255, in the next slot, must be done. */
        volatile uint8_t *oldest = ring + 16 * ((slot + 1) % TX_COUNT);
        while (i >= TX_COUNT - 1 && !(oldest[12] & E1000_TXD_STAT_DD)) {
            g_usleep(1);
        }
        uint64_t addr = TX_BUF + (uint64_t)slot * 2048;
        uint32_t lower = FRAME | E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS | E1000_TXD_CMD_RS;
        memcpy((uint8_t *)d, &addr, 8);
        memcpy((uint8_t *)d + 8, &lower, 4);
        memset((uint8_t *)d + 12, 0, 4);
        if ((i + 1) % batch && i + 1 < frames) {
            continue;
        }
        gint64 t0 = g_get_monotonic_time();
        reg_write(bar, E1000_TDT, (slot + 1) % TX_COUNT);
        in_handler += g_get_monotonic_time() - t0;
    }
    volatile uint8_t *last = ring + 16 * ((frames - 1) % TX_COUNT);
    while (!(last[12] & E1000_TXD_STAT_DD)) {
        g_usleep(1);
    }
    double secs = (g_get_monotonic_time() - start) / 1e6;
    printf("x-tx-defer=%-3s  %2u frames per TDT write  %8.0f frames/s  %7.2f us of vCPU "
           "per TDT write\n", deferred ? "on" : "off", batch, frames / secs,
           (double)in_handler * batch / frames);
    pci_bus_config_write(bus, devfn, PCI_COMMAND, 0, 2);
}

int main(int argc, char **argv)
{
    unsigned frames = argc > 1 ? atoi(argv[1]) : 200000;
    memory_init();
    static const IrqBackend backend = { .set_level = no_level, .send_msi = no_msi };
    irq_set_backend(&backend);
    static MemoryRegion ram_region;
    ram = g_malloc0(RAM_SIZE);
    memory_region_init_ram(&ram_region, "ram", RAM_SIZE, ram);
    address_space_map(address_space_memory, &ram_region, RAM_BASE, 0);
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sink)) {
        perror("socketpair");
        return 1;
    }
    GThread *drain = g_thread_new("sink", drain_sink, NULL);
    GThread *loop = g_thread_new("main-loop", run_main_loop, NULL);
    PCIBus *bus = pci_bus_new(map_irq);
    /* One frame per TDT write, and 32 (a TSO send of 45 segments, or
     * xmit_more batching, costs the handler about as much). */
    for (int round = 0; round < 2; round++) {
        for (unsigned batch = 1; batch <= 32; batch *= 32) {
            run(bus, false, frames, batch);
            run(bus, true, frames, batch);
        }
    }
    atomic_store(&stop, true);
    g_main_context_wakeup(main_loop_context());
    g_thread_join(loop);
    shutdown(sink[0], SHUT_RDWR);
    close(sink[0]);
    g_thread_join(drain);
    return 0;
}
