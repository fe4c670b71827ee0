/*
 * Errors are values: a function that can fail takes `Error **errp` as its
 * last argument, fills it with error_setg() and returns a failure value;
 * the caller decides what to do. Only main() turns an Error into an exit.
 */
#ifndef QEMU_ERROR_H
#define QEMU_ERROR_H

#include <glib.h>

/* The classes QMP reports errors in (QMP spec, "error" response). Almost
 * everything is GENERIC_ERROR: QEMU keeps the others for the few cases
 * clients tell apart. */
typedef enum ErrorClass {
    ERROR_CLASS_GENERIC_ERROR,
    ERROR_CLASS_COMMAND_NOT_FOUND,
    ERROR_CLASS_DEVICE_NOT_ACTIVE,
    ERROR_CLASS_DEVICE_NOT_FOUND,
    ERROR_CLASS_KVM_MISSING_CAP,
} ErrorClass;

typedef struct Error {
    char *msg;
    ErrorClass cls;
} Error;

/* Set *errp (if errp is not NULL; it must not already hold an error). */
void error_setg(Error **errp, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* As error_setg, with a class other than GENERIC_ERROR. */
void error_set(Error **errp, ErrorClass cls, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* "GenericError", "CommandNotFound"...: the class as QMP spells it. */
const char *error_class_name(ErrorClass cls);
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
