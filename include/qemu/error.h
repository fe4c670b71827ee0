/*
 * Errors are values: a function that can fail takes `Error **errp` as its
 * last argument, fills it with error_setg() and returns a failure value;
 * the caller decides what to do. Only main() turns an Error into an exit.
 */
#ifndef QEMU_ERROR_H
#define QEMU_ERROR_H

#include <glib.h>

typedef struct Error {
    char *msg;
} Error;

/* Set *errp (if errp is not NULL; it must not already hold an error). */
void error_setg(Error **errp, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* As error_setg, with ": strerror(errnum)" appended. */
void error_setg_errno(Error **errp, int errnum, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Prepend "prefix" to the message of *errp, if any. */
void error_prepend(Error **errp, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void error_free(Error *err);
/* Hand local_err to *dst (or free it if dst is NULL). */
void error_propagate(Error **dst, Error *local_err);

/* "qemu-system-x86_64: <message>" on stderr, one line. */
void error_report(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* error_report() of err's message, then error_free(). */
void error_report_err(Error *err);

#endif
