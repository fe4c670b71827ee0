/*
 * The human monitor's text for QMP answers: each function turns the
 * "return" value of one query command into the lines QEMU 7.2's monitor
 * prints for the matching "info" command. Pure functions of the JSON, so
 * tests can feed them answers QEMU gave. Members that are missing are
 * treated as QEMU treats absent optional members (the line is left out).
 */
#ifndef MONITOR_HMP_FORMAT_H
#define MONITOR_HMP_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include "qemu/error.h"

typedef void HmpFormatFn(JsonNode *ret, GString *out);

void hmp_format_status(JsonNode *ret, GString *out);       /* query-status */
void hmp_format_version(JsonNode *ret, GString *out);      /* query-version */
void hmp_format_kvm(JsonNode *ret, GString *out);          /* query-kvm */
void hmp_format_name(JsonNode *ret, GString *out);         /* query-name */
void hmp_format_iothreads(JsonNode *ret, GString *out);    /* query-iothreads */
void hmp_format_chardev(JsonNode *ret, GString *out);      /* query-chardev */
void hmp_format_pci(JsonNode *ret, GString *out);          /* query-pci */
void hmp_format_block(JsonNode *ret, GString *out);        /* query-block */
void hmp_format_locks(JsonNode *ret, GString *out);        /* x-query-device-locks */
/* query-cpus-fast; current_cpu gets QEMU's '*'. */
void hmp_format_cpus(JsonNode *ret, int64_t current_cpu, GString *out);

/* A failed command: "Error: MESSAGE". */
void hmp_format_error(const Error *err, GString *out);

#endif
