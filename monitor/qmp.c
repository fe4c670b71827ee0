/*
 * The QMP server (monitor/monitor.h: qmp_monitor_new): one per -qmp or
 * -mon mode=control, on its chardev, speaking to whichever client is
 * connected, as QEMU 7.2 does:
 *
 * - on connection (chardev OPENED) the greeting, then capabilities
 *   negotiation: only qmp_capabilities runs, anything else is refused with
 *   CommandNotFound; every new connection negotiates again;
 * - each JSON value of the input (json-splitter.c) is one request, checked
 *   (qmp-request.c) and run through qmp_dispatch() on the main loop; the
 *   response echoes "id" and is one line ("\r\n" ended, QEMU's newline);
 * - events go only to negotiated connections.
 *
 * Order: requests run one at a time, and each response is sent only once
 * the main loop has acted on the run-state requests the command made
 * (runstate_call_after_requests), as QEMU's monitor answers after its main
 * loop's turn: system_reset's RESET, quit's SHUTDOWN and system_powerdown's
 * POWERDOWN reach the client before the command's "return", as from QEMU
 * (stop's STOP and cont's RESUME are sent by the command itself, so they
 * come first anyway). The next request runs after that response went out.
 *
 * Output: every message is appended whole to the monitor's own buffer,
 * under out_lock (events come from any thread), and moved into the chardev
 * on the main loop no faster than the chardev takes it, so a slow client
 * never sees half a message and a sender never blocks. The buffer is
 * dropped with the connection.
 */
#include <pthread.h>
#include <string.h>
#include "monitor/monitor.h"
#include "monitor/qmp.h"
#include "monitor/qmp-protocol.h"
#include "monitor/qmp-tables.h"
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"

/* What query-version and the greeting report: QEMU 7.2.0's interface;
 * "package" names this VMM, as -version does. */
#define QMP_VERSION_MAJOR 7
#define QMP_VERSION_MINOR 2
#define QMP_VERSION_MICRO 0
#define QMP_PACKAGE "qemu-pdl"

#define QMP_NEWLINE "\r\n"
/* Input taken per read: the splitter buffers, so any amount will do. */
#define QMP_READ_CHUNK 4096
/* Values waiting for their turn beyond which input is no longer read (a
 * client that sends faster than commands run waits in its socket). */
#define QMP_PENDING_MAX 8

/* A value of the input not run yet, or the splitter's error for it. */
typedef struct QmpPendingInput {
    char *text;
    size_t len;
    Error *err;
} QmpPendingInput;

typedef struct QmpMonitor {
    Chardev *chr;
    bool pretty;
    JsonSplitter *splitter;         /* main loop only, as the next five */
    bool oob_enabled;
    GQueue pending;                 /* of QmpPendingInput *, oldest first */
    bool answering;                 /* a response waits for the run-state check */
    unsigned connection;            /* counts connections (a late answer is dropped) */
    GSource *next_source;           /* runs the next pending value */

    pthread_mutex_t out_lock;       /* the members below; any thread */
    bool connected;
    bool negotiated;                /* events are sent only when set */
    GString *out;
    size_t out_pos;                 /* out[0..out_pos) is in the chardev */
    GSource *flush_source;          /* a flush scheduled from another thread */
} QmpMonitor;

static GPtrArray *qmp_monitors;     /* of QmpMonitor *; main loop */

/* ---- output ---- */

/* Move what the chardev takes now. Main loop. */
static void qmp_flush(QmpMonitor *mon)
{
    pthread_mutex_lock(&mon->out_lock);
    size_t pending = mon->out->len - mon->out_pos;
    size_t n = MIN(pending, chardev_write_room(mon->chr));
    if (n) {
        chardev_write(mon->chr, (const uint8_t *)mon->out->str + mon->out_pos, n);
        mon->out_pos += n;
    }
    if (mon->out_pos == mon->out->len) {
        g_string_truncate(mon->out, 0);
        mon->out_pos = 0;
    }
    pthread_mutex_unlock(&mon->out_lock);
}

static void qmp_write_ready(void *opaque)
{
    qmp_flush(opaque);
}

static gboolean qmp_scheduled_flush(gpointer opaque)
{
    QmpMonitor *mon = opaque;
    pthread_mutex_lock(&mon->out_lock);
    mon->flush_source = NULL;
    pthread_mutex_unlock(&mon->out_lock);
    qmp_flush(mon);
    return G_SOURCE_REMOVE;
}

/* One message, whole, at the end of the buffer. out_lock held. */
static void qmp_append_locked(QmpMonitor *mon, JsonNode *msg)
{
    qmp_json_append(mon->out, msg, mon->pretty, QMP_NEWLINE);
    g_string_append(mon->out, QMP_NEWLINE);
}

/* A response or the greeting, on the main loop; takes msg. */
static void qmp_send(QmpMonitor *mon, JsonObject *msg)
{
    g_autoptr(JsonNode) node = qmp_node_object(msg);
    pthread_mutex_lock(&mon->out_lock);
    if (mon->connected) {
        qmp_append_locked(mon, node);
    }
    pthread_mutex_unlock(&mon->out_lock);
    qmp_flush(mon);
}

/* ---- events ---- */

static JsonObject *qmp_event_message(const char *name, JsonObject *data, int64_t timestamp_us)
{
    JsonObject *ts = json_object_new();
    json_object_set_int_member(ts, "seconds", timestamp_us / G_USEC_PER_SEC);
    json_object_set_int_member(ts, "microseconds", timestamp_us % G_USEC_PER_SEC);
    JsonObject *msg = json_object_new();
    json_object_set_object_member(msg, "timestamp", ts);
    json_object_set_string_member(msg, "event", name);
    /* QEMU leaves "data" out of an event that has no members (STOP). */
    if (json_object_get_size(data)) {
        json_object_set_object_member(msg, "data", json_object_ref(data));
    }
    return msg;
}

/* The event sink: any thread, must not block; the main loop writes. */
static void qmp_event_sink(const char *name, JsonObject *data, int64_t timestamp_us,
                           void *opaque)
{
    QmpMonitor *mon = opaque;
    pthread_mutex_lock(&mon->out_lock);
    if (mon->connected && mon->negotiated) {
        g_autoptr(JsonNode) node = qmp_node_object(qmp_event_message(name, data, timestamp_us));
        qmp_append_locked(mon, node);
        if (!mon->flush_source) {
            mon->flush_source = g_idle_source_new();
            g_source_set_callback(mon->flush_source, qmp_scheduled_flush, mon, NULL);
            g_source_attach(mon->flush_source, main_loop_context());
            g_source_unref(mon->flush_source);
        }
    }
    pthread_mutex_unlock(&mon->out_lock);
}

/* ---- commands ---- */

static JsonObject *qmp_version_object(void)
{
    JsonObject *qemu = json_object_new();
    json_object_set_int_member(qemu, "micro", QMP_VERSION_MICRO);
    json_object_set_int_member(qemu, "minor", QMP_VERSION_MINOR);
    json_object_set_int_member(qemu, "major", QMP_VERSION_MAJOR);
    JsonObject *version = json_object_new();
    json_object_set_object_member(version, "qemu", qemu);
    json_object_set_string_member(version, "package", QMP_PACKAGE);
    return version;
}

static JsonNode *qmp_query_version(JsonObject *args, Error **errp)
{
    return qmp_node_object(qmp_version_object());
}

#define QMP_CAPABILITIES_ARGS "enable:a?"

/* After negotiation (the table's entry): QEMU refuses a second one. */
static JsonNode *qmp_capabilities_again(JsonObject *args, Error **errp)
{
    error_set(errp, ERROR_CLASS_COMMAND_NOT_FOUND,
              "Capabilities negotiation is already complete, command ignored");
    return NULL;
}

/* The capabilities asked for (args may be NULL), checked with QEMU's
 * messages (its "null" is how QEMU names a list element of an enum).
 * Sets *oob. */
static bool qmp_check_capabilities(JsonObject *args, bool *oob, Error **errp)
{
    JsonArray *enable = args && json_object_has_member(args, "enable") ?
        json_object_get_array_member(args, "enable") : NULL;
    *oob = false;
    for (guint i = 0; enable && i < json_array_get_length(enable); i++) {
        JsonNode *cap = json_array_get_element(enable, i);
        if (!JSON_NODE_HOLDS_VALUE(cap) || json_node_get_value_type(cap) != G_TYPE_STRING) {
            error_setg(errp, "Invalid parameter type for 'enable[%u]', expected: string", i);
            return false;
        }
        if (strcmp(json_node_get_string(cap), "oob") != 0) {
            error_setg(errp, "Parameter 'null' does not accept value '%s'",
                       json_node_get_string(cap));
            return false;
        }
        *oob = true;
    }
    return true;
}

static JsonNode *qmp_capabilities_check_only(JsonObject *args, Error **errp)
{
    bool oob;
    return qmp_check_capabilities(args, &oob, errp) ? qmp_node_object(json_object_new()) : NULL;
}

/* In negotiation mode qmp_capabilities checks its arguments like any
 * command, then the server leaves the mode. */
static const QmpCommandInfo qmp_capabilities_negotiation = {
    "qmp_capabilities", qmp_capabilities_check_only, QMP_CAPABILITIES_ARGS,
    QMP_CMD_BEFORE_NEGOTIATION,
};

const QmpCommandInfo qmp_server_qmp_commands[] = {
    { "qmp_capabilities", qmp_capabilities_again, QMP_CAPABILITIES_ARGS,
      QMP_CMD_BEFORE_NEGOTIATION },
    { "query-version", qmp_query_version },
    { NULL },
};

static JsonNode *qmp_run(QmpMonitor *mon, const QmpRequest *req, Error **errp)
{
    const QmpCommandInfo *cmd = qmp_command_find(req->command);
    bool negotiated;
    pthread_mutex_lock(&mon->out_lock);
    negotiated = mon->negotiated;
    pthread_mutex_unlock(&mon->out_lock);

    if (!negotiated) {
        if (!cmd || !(cmd->flags & QMP_CMD_BEFORE_NEGOTIATION)) {
            error_set(errp, ERROR_CLASS_COMMAND_NOT_FOUND,
                      "Expecting capabilities negotiation with 'qmp_capabilities'");
            return NULL;
        }
        JsonNode *ret = qmp_dispatch_command(&qmp_capabilities_negotiation, req->args, errp);
        if (ret) {
            qmp_check_capabilities(req->args, &mon->oob_enabled, NULL);
            pthread_mutex_lock(&mon->out_lock);
            mon->negotiated = true;
            pthread_mutex_unlock(&mon->out_lock);
        }
        return ret;
    }
    if (cmd && req->oob) {
        /* No command here may overtake the queue. */
        error_setg(errp, "The command %s does not support OOB", req->command);
        return NULL;
    }
    return qmp_dispatch(req->command, req->args, errp);
}

/* {"return": R, "id": ID} or {"id": ID, "error": {...}}: QEMU's member
 * order in each. */
static JsonObject *qmp_response(JsonNode *ret, Error *err, JsonNode *id)
{
    JsonObject *rsp = json_object_new();
    if (err) {
        if (id) {
            json_object_set_member(rsp, "id", json_node_copy(id));
        }
        JsonObject *error = json_object_new();
        json_object_set_string_member(error, "class", error_class_name(err->cls));
        json_object_set_string_member(error, "desc", err->msg);
        json_object_set_object_member(rsp, "error", error);
    } else {
        json_object_set_member(rsp, "return", ret);
        if (id) {
            json_object_set_member(rsp, "id", json_node_copy(id));
        }
    }
    return rsp;
}

/* ---- one request at a time ---- */

/* A response held until the main loop has acted on the command's
 * run-state requests. */
typedef struct QmpDeferredAnswer {
    QmpMonitor *mon;
    unsigned connection;
    JsonObject *rsp;
} QmpDeferredAnswer;

static void qmp_run_next(QmpMonitor *mon);

static gboolean qmp_next_source_cb(gpointer opaque)
{
    QmpMonitor *mon = opaque;
    mon->next_source = NULL;
    qmp_run_next(mon);
    return G_SOURCE_REMOVE;
}

static void qmp_send_deferred_answer(void *opaque)
{
    QmpDeferredAnswer *answer = opaque;
    QmpMonitor *mon = answer->mon;
    if (answer->connection == mon->connection) {
        mon->answering = false;
        qmp_send(mon, answer->rsp);
        /* The next request runs from the main loop, not from inside the
         * run-state check. */
        if (!g_queue_is_empty(&mon->pending) && !mon->next_source) {
            mon->next_source = g_idle_source_new();
            g_source_set_callback(mon->next_source, qmp_next_source_cb, mon, NULL);
            g_source_attach(mon->next_source, main_loop_context());
            g_source_unref(mon->next_source);
        }
    } else {
        json_object_unref(answer->rsp);     /* its client has gone */
    }
    g_free(answer);
}

static void qmp_pending_input_free(gpointer data)
{
    QmpPendingInput *in = data;
    g_free(in->text);
    error_free(in->err);
    g_free(in);
}

/* Run the oldest pending value, unless a response is still held. */
static void qmp_run_next(QmpMonitor *mon)
{
    if (mon->answering || g_queue_is_empty(&mon->pending)) {
        return;
    }
    QmpPendingInput *in = g_queue_pop_head(&mon->pending);
    if (g_queue_get_length(&mon->pending) == QMP_PENDING_MAX - 1) {
        chardev_accept_input(mon->chr);
    }
    QmpRequest req = { 0 };
    JsonNode *ret = NULL;
    Error *err = g_steal_pointer(&in->err);
    if (!err && qmp_request_parse(in->text, in->len, mon->oob_enabled, &req, &err)) {
        ret = qmp_run(mon, &req, &err);
    }
    QmpDeferredAnswer *answer = g_new(QmpDeferredAnswer, 1);
    *answer = (QmpDeferredAnswer) { mon, mon->connection, qmp_response(ret, err, req.id) };
    mon->answering = true;
    runstate_call_after_requests(qmp_send_deferred_answer, answer);
    error_free(err);
    qmp_request_clear(&req);
    qmp_pending_input_free(in);
}

/* One value of the input (or the splitter's error). Main loop. */
static void qmp_handle_message(void *opaque, const char *text, size_t len, Error *err)
{
    QmpMonitor *mon = opaque;
    QmpPendingInput *in = g_new(QmpPendingInput, 1);
    *in = (QmpPendingInput) { g_strndup(text, len), len, err };
    g_queue_push_tail(&mon->pending, in);
    qmp_run_next(mon);
}

/* ---- the connection ---- */

static size_t qmp_can_read(void *opaque)
{
    QmpMonitor *mon = opaque;
    return g_queue_get_length(&mon->pending) < QMP_PENDING_MAX ? QMP_READ_CHUNK : 0;
}

static void qmp_read(void *opaque, const uint8_t *buf, size_t len)
{
    QmpMonitor *mon = opaque;
    json_splitter_feed(mon->splitter, buf, len);
}

/* Every connection starts afresh: nothing half-read, unrun or unsent
 * from the last one, negotiation again. */
static void qmp_reset_connection(QmpMonitor *mon, bool connected)
{
    json_splitter_reset(mon->splitter);
    mon->oob_enabled = false;
    if (g_queue_get_length(&mon->pending) >= QMP_PENDING_MAX) {
        chardev_accept_input(mon->chr);     /* reading was paused for it */
    }
    g_queue_clear_full(&mon->pending, qmp_pending_input_free);
    mon->answering = false;
    mon->connection++;
    if (mon->next_source) {
        g_source_destroy(mon->next_source);
        mon->next_source = NULL;
    }
    pthread_mutex_lock(&mon->out_lock);
    mon->connected = connected;
    mon->negotiated = false;
    g_string_truncate(mon->out, 0);
    mon->out_pos = 0;
    pthread_mutex_unlock(&mon->out_lock);
}

static void qmp_send_greeting(QmpMonitor *mon)
{
    JsonObject *qmp = json_object_new();
    json_object_set_object_member(qmp, "version", qmp_version_object());
    JsonArray *caps = json_array_new();
    json_array_add_string_element(caps, "oob");
    json_object_set_array_member(qmp, "capabilities", caps);
    JsonObject *greeting = json_object_new();
    json_object_set_object_member(greeting, "QMP", qmp);
    qmp_send(mon, greeting);
}

static void qmp_chardev_event(void *opaque, ChardevEvent event)
{
    QmpMonitor *mon = opaque;
    qmp_reset_connection(mon, event == CHR_EVENT_OPENED);
    if (event == CHR_EVENT_OPENED) {
        qmp_send_greeting(mon);
    }
}

bool qmp_monitor_new(Chardev *chr, bool pretty, Error **errp)
{
    QmpMonitor *mon = g_new0(QmpMonitor, 1);
    mon->chr = chr;
    mon->pretty = pretty;
    mon->splitter = json_splitter_new(qmp_handle_message, mon);
    g_queue_init(&mon->pending);
    pthread_mutex_init(&mon->out_lock, NULL);
    mon->out = g_string_new(NULL);
    if (!qmp_monitors) {
        qmp_monitors = g_ptr_array_new();
    }
    g_ptr_array_add(qmp_monitors, mon);
    qmp_event_add_sink(qmp_event_sink, mon);
    chardev_set_write_ready_handler(chr, qmp_write_ready, mon);
    chardev_set_handlers(chr, qmp_can_read, qmp_read, mon);
    chardev_set_event_handler(chr, qmp_chardev_event, mon);
    return true;
}

static void qmp_monitor_free(QmpMonitor *mon)
{
    qmp_event_remove_sink(qmp_event_sink, mon);
    chardev_set_event_handler(mon->chr, NULL, NULL);
    chardev_set_handlers(mon->chr, NULL, NULL, NULL);
    chardev_set_write_ready_handler(mon->chr, NULL, NULL);
    /* The last events (SHUTDOWN) reach the client before the VMM exits:
     * the buffer goes through the chardev's ring as fast as the client
     * reads (chardev_flush gives up on one that stalls). */
    for (size_t left = SIZE_MAX; ;) {
        qmp_flush(mon);
        chardev_flush(mon->chr);
        pthread_mutex_lock(&mon->out_lock);
        size_t now = mon->out->len - mon->out_pos;
        pthread_mutex_unlock(&mon->out_lock);
        if (!now || now == left) {
            break;
        }
        left = now;
    }
    if (mon->flush_source) {
        g_source_destroy(mon->flush_source);
    }
    if (mon->next_source) {
        g_source_destroy(mon->next_source);
    }
    g_queue_clear_full(&mon->pending, qmp_pending_input_free);
    json_splitter_free(mon->splitter);
    g_string_free(mon->out, true);
    pthread_mutex_destroy(&mon->out_lock);
    g_free(mon);
}

void qmp_monitors_free_all(void)
{
    if (qmp_monitors) {
        for (guint i = 0; i < qmp_monitors->len; i++) {
            qmp_monitor_free(g_ptr_array_index(qmp_monitors, i));
        }
        g_clear_pointer(&qmp_monitors, g_ptr_array_unref);
    }
}
