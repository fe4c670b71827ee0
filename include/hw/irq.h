/*
 * Interrupt lines (GSIs of the in-kernel PIC/IOAPIC).
 *
 * Raising an interrupt needs no device lock and may be done from any
 * thread. Several devices may share a level-triggered line: each owns a
 * source bit, the line's level is the OR of them, and a small per-line
 * mutex keeps "update the sources, tell KVM" atomic so that two threads can
 * never deliver levels to KVM out of order.
 */
#ifndef HW_IRQ_H
#define HW_IRQ_H

#include <stdbool.h>
#include <stdint.h>

#define IRQ_MAX_GSI 24

/* Backend that delivers a line level (KVM_IRQ_LINE) and a message-signalled
 * interrupt (KVM_SIGNAL_MSI). */
typedef struct IrqBackend {
    void (*set_level)(void *opaque, unsigned gsi, bool level);
    void (*send_msi)(void *opaque, uint64_t address, uint32_t data);
    void *opaque;
} IrqBackend;

void irq_set_backend(const IrqBackend *backend);

typedef struct IrqSource {
    unsigned gsi;
    unsigned bit;
} IrqSource;

/* Claim a source on gsi (aborts if more than 64 sources share a line). */
IrqSource irq_source_claim(unsigned gsi);
void irq_source_set(IrqSource src, bool level);
/* Current level of a line (the OR of its sources), for tests. */
bool irq_line_level(unsigned gsi);
/* Deliver an MSI (address/data as the guest programmed them); any thread,
 * no lock needed, no shared counter touched. Messages not aimed at the
 * LAPIC window 0xfeexxxxx are dropped and logged as a guest error. */
void msi_send_message(uint64_t address, uint32_t data);

/* Drop every source's level (machine reset). */
void irq_reset_all(void);

#endif
