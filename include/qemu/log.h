/*
 * Diagnostic logging selected with -d. A guest's mistakes (bad register
 * values, bad descriptors, out-of-range DMA) are logged under
 * LOG_GUEST_ERROR and otherwise ignored: they never crash the VMM.
 */
#ifndef QEMU_LOG_H
#define QEMU_LOG_H

#include <stdbool.h>
#include "qemu/error.h"

enum {
    LOG_GUEST_ERROR = 1 << 0,   /* -d guest_errors */
    LOG_UNIMP       = 1 << 1,   /* -d unimp: accesses to unimplemented features */
    LOG_EXITS       = 1 << 2,   /* -d exits: each vCPU's exits to user space, at exit */
};

extern int qemu_loglevel;

static inline bool qemu_loglevel_mask(int mask)
{
    return (qemu_loglevel & mask) != 0;
}

/* Parse a -d argument ("guest_errors,unimp" or "help"). */
bool qemu_log_parse(const char *arg, Error **errp);
/* Print the categories -d accepts. */
void qemu_log_print_help(void);
/* Log to stderr if any bit of mask is enabled. */
void qemu_log_mask(int mask, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

#endif
