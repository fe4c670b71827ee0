/* -d logging categories (see qemu/log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "qemu/log.h"

int qemu_loglevel;

static const struct {
    const char *name;
    int mask;
    const char *help;
} log_categories[] = {
    { "guest_errors", LOG_GUEST_ERROR, "log when the guest programs a device wrongly" },
    { "unimp", LOG_UNIMP, "log accesses to unimplemented functionality" },
    { "exits", LOG_EXITS, "print each vCPU's exits to user space (io, mmio, other) at exit" },
};

bool qemu_log_parse(const char *arg, Error **errp)
{
    int mask = 0;
    gchar **items = g_strsplit(arg, ",", -1);
    bool ok = true;
    for (gchar **item = items; *item && ok; item++) {
        size_t i;
        for (i = 0; i < G_N_ELEMENTS(log_categories); i++) {
            if (strcmp(*item, log_categories[i].name) == 0) {
                mask |= log_categories[i].mask;
                break;
            }
        }
        if (i == G_N_ELEMENTS(log_categories)) {
            error_setg(errp, "-d: unknown log category '%s' (try -d help)", *item);
            ok = false;
        }
    }
    g_strfreev(items);
    if (ok) {
        qemu_loglevel |= mask;
    }
    return ok;
}

void qemu_log_print_help(void)
{
    printf("Log items (comma separated):\n");
    for (size_t i = 0; i < G_N_ELEMENTS(log_categories); i++) {
        printf("%-15s %s\n", log_categories[i].name, log_categories[i].help);
    }
}

void qemu_log_mask(int mask, const char *fmt, ...)
{
    if (!qemu_loglevel_mask(mask)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
