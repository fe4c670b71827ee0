/*
 * The Intel 82540EM Gigabit Ethernet controller (8086:100e), QEMU's
 * "e1000": `-device e1000,netdev=ID[,mac=MAC][,addr=SLOT]
 * [,x-coalesced-mmio=on|off][,x-tx-defer=on|off][,x-host-offloads=on|off]` (also spelt
 * e1000-82540em, QEMU's alias). docs/network.md ("e1000") describes what
 * the model implements and its threads.
 */
#ifndef HW_NET_E1000_H
#define HW_NET_E1000_H

#include <stdbool.h>
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-registry.h"
#include "net/net.h"
#include "qemu/error.h"

typedef struct E1000Conf {
    NetDev *netdev;             /* NULL: no backend, frames are dropped */
    MACAddr mac;
    /* Writes that need no immediate answer go through KVM's coalesced
     * MMIO ring (everything but MDIC, ICR, ICS, IMS, IMC, TCTL, TDT). */
    bool coalesced_mmio;
    /* TX runs on the device's context (a bottom half kicked by TDT),
     * not on the vCPU that wrote TDT. */
    bool tx_deferred;
    /* On a tap with a vnet header: the host may hand over large (GSO) and
     * unchecksummed packets, which the device cuts into frames and
     * completes as it receives them (hw/net/e1000-rx-offload.c), and TSO
     * sends go to it whole, for the host to cut (hw/net/e1000-tx.c). */
    bool host_offloads;
} E1000Conf;

/* An e1000 at devfn (-1: the first free slot) on the main loop's context,
 * its NIC client named after the device. */
QEMUDevice *e1000_new(PCIBus *bus, int devfn, const E1000Conf *conf, Error **errp);
/* The device's NIC client (tests: the peer's view). */
NetClientState *e1000_net_client(QEMUDevice *dev);

extern const DeviceTypeInfo e1000_type;

#endif
