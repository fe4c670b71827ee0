/*
 * Interrupt lines with level sharing (hw/irq.h).
 *
 * Each GSI keeps a bitmap of asserted sources under its own small mutex, so
 * "update my bit, compute the OR, tell KVM if it changed" is atomic per
 * line: two devices on one line can never deliver levels to KVM out of
 * order. No device lock is involved; any thread may call these.
 */
#include <pthread.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <glib.h>
#include "hw/irq.h"
#include "qemu/log.h"

typedef struct IrqLine {
    pthread_mutex_t lock;
    uint64_t asserted;          /* bit per source */
    unsigned sources;           /* claimed so far */
    bool level;                 /* last level given to the backend */
} IrqLine;

static IrqLine lines[IRQ_MAX_GSI];
static IrqBackend backend;
static pthread_once_t lines_once = PTHREAD_ONCE_INIT;

static void lines_init(void)
{
    for (unsigned i = 0; i < IRQ_MAX_GSI; i++) {
        pthread_mutex_init(&lines[i].lock, NULL);
    }
}

static IrqLine *line_get(unsigned gsi)
{
    g_assert(gsi < IRQ_MAX_GSI);
    pthread_once(&lines_once, lines_init);
    return &lines[gsi];
}

void irq_set_backend(const IrqBackend *b)
{
    backend = *b;
}

IrqSource irq_source_claim(unsigned gsi)
{
    IrqLine *line = line_get(gsi);
    pthread_mutex_lock(&line->lock);
    g_assert(line->sources < 64);
    IrqSource src = { .gsi = gsi, .bit = line->sources++ };
    pthread_mutex_unlock(&line->lock);
    return src;
}

void irq_source_set(IrqSource src, bool level)
{
    IrqLine *line = line_get(src.gsi);
    pthread_mutex_lock(&line->lock);
    if (level) {
        line->asserted |= 1ULL << src.bit;
    } else {
        line->asserted &= ~(1ULL << src.bit);
    }
    bool new_level = line->asserted != 0;
    if (new_level != line->level) {
        line->level = new_level;
        if (backend.set_level) {
            backend.set_level(backend.opaque, src.gsi, new_level);
        }
    }
    pthread_mutex_unlock(&line->lock);
}

bool irq_line_level(unsigned gsi)
{
    IrqLine *line = line_get(gsi);
    pthread_mutex_lock(&line->lock);
    bool level = line->level;
    pthread_mutex_unlock(&line->lock);
    return level;
}

void irq_reset_all(void)
{
    for (unsigned gsi = 0; gsi < IRQ_MAX_GSI; gsi++) {
        IrqLine *line = line_get(gsi);
        pthread_mutex_lock(&line->lock);
        line->asserted = 0;
        if (line->level && backend.set_level) {
            backend.set_level(backend.opaque, gsi, false);
        }
        line->level = false;
        pthread_mutex_unlock(&line->lock);
    }
}

/* The LAPIC's message window (Intel SDM 10.11.1): address bits 31-20. */
#define MSI_ADDRESS_WINDOW_MASK 0xfff00000ULL
#define MSI_ADDRESS_WINDOW      0xfee00000ULL

void msi_send_message(uint64_t address, uint32_t data)
{
    if ((address & MSI_ADDRESS_WINDOW_MASK) != MSI_ADDRESS_WINDOW) {
        qemu_log_mask(LOG_GUEST_ERROR, "MSI to 0x%" PRIx64 " (data 0x%x) is outside the LAPIC "
                             "window 0xfee00000: dropped\n", address, data);
        return;
    }
    if (backend.send_msi) {
        backend.send_msi(backend.opaque, address, data);
    }
}

