/* The event fan-out of monitor/qmp.h: a list of sinks under one lock. */
#include <pthread.h>
#include "monitor/qmp.h"

typedef struct EventSinkEntry {
    QmpEventSink *sink;
    void *opaque;
} EventSinkEntry;

static pthread_mutex_t sinks_lock = PTHREAD_MUTEX_INITIALIZER;
static GArray *sinks;   /* of EventSinkEntry */

void qmp_event_add_sink(QmpEventSink *sink, void *opaque)
{
    pthread_mutex_lock(&sinks_lock);
    if (!sinks) {
        sinks = g_array_new(false, false, sizeof(EventSinkEntry));
    }
    g_array_append_val(sinks, ((EventSinkEntry) { sink, opaque }));
    pthread_mutex_unlock(&sinks_lock);
}

void qmp_event_remove_sink(QmpEventSink *sink, void *opaque)
{
    pthread_mutex_lock(&sinks_lock);
    for (guint i = 0; sinks && i < sinks->len; i++) {
        EventSinkEntry *e = &g_array_index(sinks, EventSinkEntry, i);
        if (e->sink == sink && e->opaque == opaque) {
            g_array_remove_index(sinks, i);
            break;
        }
    }
    pthread_mutex_unlock(&sinks_lock);
}

void qmp_event_send(const char *name, JsonObject *data)
{
    int64_t now = g_get_real_time();
    /* Sinks see an object even for an event without data; the server
     * leaves an empty one out, as QEMU does. */
    g_autoptr(JsonObject) owned = data ? data : json_object_new();
    pthread_mutex_lock(&sinks_lock);
    for (guint i = 0; sinks && i < sinks->len; i++) {
        EventSinkEntry *e = &g_array_index(sinks, EventSinkEntry, i);
        e->sink(name, owned, now, e->opaque);
    }
    pthread_mutex_unlock(&sinks_lock);
}
