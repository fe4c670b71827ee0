/*
 * QMP commands and events, apart from any connection: the table of
 * commands with their argument rules, the dispatcher that checks a call
 * against them, and the event fan-out. The QMP server (monitor/qmp.c), the
 * human monitor and human-monitor-command all run commands through
 * qmp_dispatch(), so argument checking and error classes are the same
 * whichever way a command arrives.
 *
 * Threads and locks: commands run on the I/O thread (the main loop) with no
 * device lock held. A handler takes the locks it needs itself, one at a
 * time (docs/locking.md), and never waits for a vCPU while holding one.
 */
#ifndef MONITOR_QMP_H
#define MONITOR_QMP_H

#include <stdbool.h>
#include <stdint.h>
#include <json-glib/json-glib.h>
#include "qemu/error.h"

/* A command's "return" value, or NULL and *errp. NULL without an error
 * stands for the empty object most commands return. args is never NULL:
 * an empty object when the call had no "arguments". */
typedef JsonNode *QmpCommandFn(JsonObject *args, Error **errp);

typedef enum QmpCommandFlags {
    /* May run before capabilities negotiation (qmp_capabilities only). */
    QMP_CMD_BEFORE_NEGOTIATION = 1 << 0,
} QmpCommandFlags;

typedef struct QmpCommandInfo {
    const char *name;
    QmpCommandFn *fn;
    /*
     * The arguments, "name:type" separated by commas, a '?' after the type
     * for an optional one: "device:s,force:b?". Types: s string, i integer,
     * n number (integer or not), b boolean, o object, a array, v any value.
     * The dispatcher refuses a call with a missing, unexpected or mistyped
     * argument with QEMU's messages before the handler runs. NULL: none.
     */
    const char *args;
    unsigned flags;     /* QmpCommandFlags */
} QmpCommandInfo;

/* Every command: each owning file defines a table ending in { NULL } and
 * monitor/qmp-commands.c lists the tables (explicitly, as
 * hw/core/device-types.c lists device types, for the same linker reason). */
extern const QmpCommandInfo *const qmp_command_tables[];
extern const size_t qmp_command_tables_count;

const QmpCommandInfo *qmp_command_find(const char *name);
/* Each command once, in table order. */
void qmp_command_foreach(void (*fn)(const QmpCommandInfo *cmd, void *opaque), void *opaque);

/*
 * Run a command: CommandNotFound ("The command NAME has not been found")
 * for an unknown name, GenericError for bad arguments, else whatever the
 * handler says. args may be NULL (no arguments). Returns the "return"
 * value (never NULL on success) or NULL and *errp. I/O thread only.
 * Capabilities negotiation is the QMP server's business, not checked here.
 */
JsonNode *qmp_dispatch(const char *name, JsonObject *args, Error **errp);
/* The same for a command already found (or a test's own). */
JsonNode *qmp_dispatch_command(const QmpCommandInfo *cmd, JsonObject *args, Error **errp);

/* A node holding obj (arr), taking over the caller's reference: what a
 * handler returns. (json_node_init_object/_array take a reference of their
 * own, so a fresh object passed to them would leak.) */
JsonNode *qmp_node_object(JsonObject *obj);
JsonNode *qmp_node_array(JsonArray *arr);

/* Typed reads of arguments the dispatcher has checked: absent optional
 * arguments give the default (NULL for strings). */
const char *qmp_arg_str(JsonObject *args, const char *name);
bool qmp_arg_bool(JsonObject *args, const char *name, bool dflt);
int64_t qmp_arg_int(JsonObject *args, const char *name, int64_t dflt);

/*
 * Events. qmp_event_send() may be called from any thread (a vCPU in a
 * device handler, an I/O thread, the main loop); it takes ownership of
 * data (NULL: the event has none) and stamps the time at the call. Every
 * sink is called synchronously on the calling thread, in the order sinks
 * were added, with the sinks' lock held: a sink must not block and must not
 * send an event itself. The QMP server's sink queues the text for each
 * negotiated monitor; tests add their own sinks to see what was sent.
 */
typedef void QmpEventSink(const char *name, JsonObject *data, int64_t timestamp_us,
                          void *opaque);
void qmp_event_send(const char *name, JsonObject *data);
void qmp_event_add_sink(QmpEventSink *sink, void *opaque);
void qmp_event_remove_sink(QmpEventSink *sink, void *opaque);

#endif
