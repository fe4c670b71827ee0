/* Error values and one-line user-facing reports (see qemu/error.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "qemu/error.h"

static const char *const program_name = "qemu-system-x86_64";

static void error_setv(Error **errp, ErrorClass cls, const char *suffix, const char *fmt,
                       va_list ap)
{
    if (!errp) {
        return;
    }
    g_assert(*errp == NULL);
    char *msg = g_strdup_vprintf(fmt, ap);
    Error *err = g_new0(Error, 1);
    err->msg = suffix ? g_strconcat(msg, ": ", suffix, NULL) : g_strdup(msg);
    err->cls = cls;
    g_free(msg);
    *errp = err;
}

void error_setg(Error **errp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(errp, ERROR_CLASS_GENERIC_ERROR, NULL, fmt, ap);
    va_end(ap);
}

void error_set(Error **errp, ErrorClass cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(errp, cls, NULL, fmt, ap);
    va_end(ap);
}

const char *error_class_name(ErrorClass cls)
{
    static const char *const names[] = {
        [ERROR_CLASS_GENERIC_ERROR] = "GenericError",
        [ERROR_CLASS_COMMAND_NOT_FOUND] = "CommandNotFound",
        [ERROR_CLASS_DEVICE_NOT_ACTIVE] = "DeviceNotActive",
        [ERROR_CLASS_DEVICE_NOT_FOUND] = "DeviceNotFound",
        [ERROR_CLASS_KVM_MISSING_CAP] = "KVMMissingCap",
    };
    return cls < G_N_ELEMENTS(names) ? names[cls] : names[ERROR_CLASS_GENERIC_ERROR];
}

void error_setg_errno(Error **errp, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(errp, ERROR_CLASS_GENERIC_ERROR, strerror(errnum), fmt, ap);
    va_end(ap);
}

void error_prepend(Error **errp, const char *fmt, ...)
{
    if (!errp || !*errp) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *prefix = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    char *msg = g_strconcat(prefix, (*errp)->msg, NULL);
    g_free(prefix);
    g_free((*errp)->msg);
    (*errp)->msg = msg;
}

void error_free(Error *err)
{
    if (err) {
        g_free(err->msg);
        g_free(err);
    }
}

void error_propagate(Error **dst, Error *local_err)
{
    if (dst && !*dst) {
        *dst = local_err;
    } else {
        error_free(local_err);
    }
}

static void report(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: %s", program_name, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void error_report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("", fmt, ap);
    va_end(ap);
}

void error_report_err(Error *err)
{
    error_report("%s", err->msg);
    error_free(err);
}
