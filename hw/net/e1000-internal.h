/*
 * What the e1000 model's files share: the device state and the functions
 * one part calls in another (registers and interrupts in e1000.c, the
 * EEPROM and PHY in e1000-eeprom-phy.c, the rings in e1000-tx.c and
 * e1000-rx.c, the host's GSO packets in e1000-rx-offload.c). Everything
 * here runs with the device lock held unless its comment says otherwise.
 */
#ifndef HW_NET_E1000_INTERNAL_H
#define HW_NET_E1000_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "exec/memory.h"
#include "hw/net/e1000-regs.h"
#include "hw/net/e1000.h"
#include "hw/pci/pci.h"
#include "net/net.h"
#include "net/tcp-segment.h"
#include "qemu/bh.h"
#include "qemu/byte-order.h"  /* descriptors are little-endian, headers big */
#include "qemu/timer.h"

/* Registers below this offset are kept in E1000State.regs; the BAR's
 * remaining addresses (flash, reserved) read 0. */
#define E1000_REGS_SIZE         0x6000
#define E1000_REG(s, off)       ((s)->regs[(off) >> 2])

/* The largest packet a TSO send may gather (64 KiB of payload plus the
 * headers), the largest frame a packet without TSO may be (the 8254x's
 * 16 KiB long-packet limit, as LPE's on receive; without the VLAN tag the
 * NIC may insert and without the CRC), and the largest received frame. */
#define E1000_TX_MAX_PACKET     (65536 + 256)
#define E1000_TX_MAX_FRAME      16384
#define E1000_RX_MAX_FRAME      16384
#define E1000_MAX_DESC_DATA     16384   /* one descriptor's buffer, at most */
#define E1000_TX_MAX_SEGMENT    (16384 + 256)   /* headers + MSS of one TSO segment */
/* The largest GSO packet a tap hands over (net/tap.c reads that much). */
#define E1000_RX_MAX_GSO_PACKET (65536 + 4096)

/* An interrupt cause held back by a packet timer and an absolute timer
 * (RDTR/RADV for RXT0, TIDV/TADV for TXDW). */
typedef struct E1000Delay {
    struct E1000State *s;
    QEMUTimer *packet;
    QEMUTimer *absolute;
    uint32_t cause;
    bool pending;               /* false: a firing timer was cancelled */
} E1000Delay;

/* The TSO/checksum context the last context descriptor set. */
typedef struct E1000TxContext {
    uint8_t ipcss, ipcso, tucss, tucso;
    uint16_t ipcse, tucse;
    uint32_t paylen;
    uint8_t hdr_len;
    uint16_t mss;
    bool tcp, ipv4, tse;
} E1000TxContext;

/* A host's GSO packet being cut into frames in the RX ring
 * (e1000-rx-offload.c). */
typedef struct E1000RxGso {
    NetTcpHeaders h;
    size_t len;                 /* headers and payload */
    uint16_t mss;
    unsigned next;              /* the next segment to store */
    /* The ring filled up partway: the rest waits in buf (len bytes of
     * E1000_RX_MAX_GSO_PACKET) for the next RDT. */
    bool pending;
    uint8_t *buf;
} E1000RxGso;

/* The packet being gathered from TX descriptors. */
typedef struct E1000TxPacket {
    uint8_t *buf;               /* E1000_TX_MAX_PACKET bytes */
    uint8_t *seg;               /* a TSO segment: E1000_TX_MAX_SEGMENT bytes */
    uint32_t len;
    bool bad;                   /* a descriptor was refused: drop at EOP */
    bool tse, ixsm, txsm, vle, legacy_ic;
    uint8_t css, cso;           /* legacy IC */
    uint16_t vlan_tci;
    bool send_pending;          /* gathered up to TDH's EOP, not yet taken by the peer */
    unsigned segs_sent;         /* of a TSO send interrupted by a full backend */
} E1000TxPacket;

typedef struct E1000State {
    PCIDevice pci;
    MemoryRegion mmio;
    MemoryRegion io;
    NetClientState *nc;
    MACAddr mac;
    GMainContext *ctx;          /* the device's: RX, deferred TX, timers */
    bool tx_deferred;           /* x-tx-defer: TX runs on ctx, not the vCPU */
    bool coalesced_mmio;
    /* Frames to and from the peer carry a virtio-net header, and the host
     * may offload checksums and TCP segmentation to us (e1000-rx-offload.c). */
    bool host_offloads;

    uint32_t regs[E1000_REGS_SIZE / 4];
    uint32_t ioaddr;            /* BAR1's IOADDR latch */

    uint16_t eeprom[E1000_EEPROM_WORDS];
    /* Microwire state: bits clocked in since CS rose, and the word being
     * shifted out (bits_out left to go). */
    uint32_t ee_in;
    unsigned ee_in_bits;
    uint16_t ee_out;
    unsigned ee_out_bits;
    bool ee_reading;
    uint32_t eecd_last;         /* SK/CS/DI as the guest last wrote them */
    uint16_t phy[E1000_PHY_REGS];

    /* Interrupts: the line's level and the ITR throttle. */
    bool irq_level;
    int64_t irq_last_ns;        /* when the line was last raised (0: never) */
    QEMUTimer *itr_timer;
    E1000Delay rx_delay, tx_delay;

    /* Rings: error flags stop a ring until the guest reprograms it. */
    bool rx_ring_error, tx_ring_error;
    bool rx_blocked;            /* receive returned 0: tell the peer at RDT */
    bool tx_waiting;            /* the peer refused a frame: wait for send_ready */
    /* Moves at a reset and at every write of TDBAL, TDBAH, TDLEN or TDH:
     * a pass that sent a frame unlocked ends if it moved (e1000-tx.c). */
    unsigned tx_ring_epoch;
    QEMUBH *tx_bh;
    E1000TxContext txc;
    E1000TxPacket txp;
    uint8_t *rx_frame;          /* E1000_RX_MAX_FRAME + 4 bytes */
    E1000RxGso rx_gso;
    QEMUBH *rx_gso_bh;          /* resumes a pending GSO packet on ctx */
} E1000State;

/* e1000.c */
void e1000_set_interrupt_cause(E1000State *s, uint32_t cause);
void e1000_update_irq(E1000State *s);
void e1000_delay_init(E1000State *s, E1000Delay *d, uint32_t cause);
/* A cause that waits for its packet timer (re-armed on every call) and its
 * absolute timer (armed once), in 1.024 us units; 0 packet delay: now. */
void e1000_delay_cause(E1000State *s, E1000Delay *d, uint32_t packet_units,
                       uint32_t absolute_units);
void e1000_delay_cancel(E1000Delay *d);
/* Count a statistic (32 bits, saturating as the hardware's do) and a
 * 64-bit low/high pair. */
void e1000_stat_inc(E1000State *s, unsigned reg);
void e1000_stat_add64(E1000State *s, unsigned low_reg, uint64_t value);
bool e1000_link_up(const E1000State *s);

/* e1000-eeprom-phy.c */
void e1000_eeprom_init(E1000State *s);
void e1000_eecd_write(E1000State *s, uint32_t value);
uint32_t e1000_eecd_read(E1000State *s);
void e1000_eerd_write(E1000State *s, uint32_t value);
void e1000_mdic_write(E1000State *s, uint32_t value);
void e1000_phy_reset(E1000State *s);
/* The link went up or down: the PHY's status registers follow it, what the
 * driver programmed stays. */
void e1000_phy_link_update(E1000State *s);

/* Where a descriptor ring is, checked: false (logged) if the guest's
 * base/length/head/tail cannot be a ring in RAM. */
typedef struct E1000Ring {
    uint64_t base;
    uint32_t count;             /* descriptors */
    uint32_t head, tail;
} E1000Ring;
bool e1000_ring_get(E1000State *s, unsigned bal_reg, const char *what, E1000Ring *ring);

/* e1000-tx.c */
void e1000_tx_init(E1000State *s);
void e1000_tx_reset(E1000State *s);
/* The guest wrote TDT (or enabled TCTL): transmit now or on ctx. */
void e1000_tx_kick(E1000State *s);
/* On ctx, lock held: the peer takes frames again. */
void e1000_tx_resume(E1000State *s);

/* e1000-rx.c */
/* NetClientInfo.receive: on ctx, no lock held. */
ssize_t e1000_receive(NetClientState *nc, const struct iovec *iov, int iovcnt);
/* The guest gave the receive ring buffers (RDT, RCTL.EN): a pending GSO
 * packet goes on, a peer that was refused may send again. */
void e1000_rx_ring_refilled(E1000State *s);
/*
 * Receive the len bytes in s->rx_frame (which has room for the CRC after
 * them) as one frame off the wire: false, with nothing stored, when the
 * ring has no room for it now (rx_blocked is set). Otherwise it is stored,
 * or dropped as the wire drops it (receiver off, filtered, too long: a
 * frame over E1000_RX_MAX_FRAME is dropped before its bytes are read, so
 * the caller need not copy it). l4_sum_good: the TCP/UDP checksum is known
 * to be right (the host computed or checked it), RXCSUM need not sum it.
 */
bool e1000_rx_put(E1000State *s, size_t len, bool l4_sum_good);

/* e1000-rx-offload.c */
/* Take the tap's vnet header and offloads, if it has them (realize). */
void e1000_rx_offload_init(E1000State *s, bool wanted);
/* A frame with its vnet header: as e1000_receive, lock held. */
ssize_t e1000_rx_offloaded(E1000State *s, const struct iovec *iov, int iovcnt, size_t size);
/* RDT: a pending GSO packet goes on (false: there is none). */
bool e1000_rx_gso_resume(E1000State *s);
void e1000_rx_offload_reset(E1000State *s);

#endif
