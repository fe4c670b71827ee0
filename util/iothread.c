/*
 * I/O threads, each looping on its own GLib main context (sysemu/iothread.h).
 *
 * Calls from other threads (iothread_run_sync) go through a queue and an
 * event notifier watched since before the thread started, so no GLib source
 * is ever attached to or destroyed in a running context from outside: GLib
 * orders those with its own locks, which ThreadSanitizer cannot see.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>
#include <urcu/compiler.h>
#include "qemu/event-notifier.h"
#include "monitor/qmp-tables.h"
#include "qemu/thread-naming.h"
#include "sysemu/iothread.h"

typedef struct SyncCall {
    void (*fn)(void *opaque);
    void *opaque;
    bool done;                  /* under the IOThread's lock */
} SyncCall;

struct IOThread {
    char *id;
    GMainContext *ctx;
    TimerList *timers;
    pthread_t thread;
    atomic_int thread_id;       /* the kernel's id of thread (query-iothreads) */
    atomic_bool stopping;
    EventNotifier calls_notifier;
    pthread_mutex_t lock;       /* not GMutex: ThreadSanitizer sees pthreads */
    pthread_cond_t call_done;
    GQueue calls;               /* of SyncCall, under lock */
};

/* Changed on the main thread only (machine start and exit). */
static GPtrArray *iothreads;

static void iothread_run_calls(EventNotifier *e)
{
    IOThread *t = caa_container_of(e, IOThread, calls_notifier);
    event_notifier_test_and_clear(e);
    pthread_mutex_lock(&t->lock);
    SyncCall *call;
    while ((call = g_queue_pop_head(&t->calls))) {
        pthread_mutex_unlock(&t->lock);
        call->fn(call->opaque);
        pthread_mutex_lock(&t->lock);
        call->done = true;
        pthread_cond_broadcast(&t->call_done);
    }
    pthread_mutex_unlock(&t->lock);
}

static void *iothread_run(void *opaque)
{
    IOThread *t = opaque;
    atomic_store(&t->thread_id, gettid());
    g_main_context_push_thread_default(t->ctx);
    while (!atomic_load(&t->stopping)) {
        g_main_context_iteration(t->ctx, TRUE);
    }
    g_main_context_pop_thread_default(t->ctx);
    return NULL;
}

static void iothread_started(void *opaque)
{
}

IOThread *iothread_new(const char *id, Error **errp)
{
    if (iothread_find(id)) {
        error_setg(errp, "-object iothread: id '%s' is already used", id);
        return NULL;
    }
    IOThread *t = g_new0(IOThread, 1);
    if (!event_notifier_init(&t->calls_notifier, errp)) {
        g_free(t);
        return NULL;
    }
    t->id = g_strdup(id);
    t->ctx = g_main_context_new();
    atomic_init(&t->stopping, false);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->call_done, NULL);
    g_queue_init(&t->calls);
    event_notifier_set_handler(&t->calls_notifier, t->ctx, iothread_run_calls);
    t->timers = timer_list_new(t->ctx);
    int err = pthread_create(&t->thread, NULL, iothread_run, t);
    if (err) {
        error_setg_errno(errp, err, "-object iothread,id=%s: creating its thread", id);
        timer_list_free(t->timers);
        event_notifier_cleanup(&t->calls_notifier);
        g_main_context_unref(t->ctx);
        g_free(t->id);
        g_free(t);
        return NULL;
    }
    g_autofree char *name = g_strdup_printf("IO %s", id);
    thread_set_debug_name(t->thread, name);
    if (!iothreads) {
        iothreads = g_ptr_array_new();
    }
    g_ptr_array_add(iothreads, t);
    /* Once a call has run there, the thread has published its id. */
    iothread_run_sync(t, iothread_started, NULL);
    return t;
}

IOThread *iothread_find(const char *id)
{
    for (guint i = 0; iothreads && i < iothreads->len; i++) {
        IOThread *t = g_ptr_array_index(iothreads, i);
        if (g_str_equal(t->id, id)) {
            return t;
        }
    }
    return NULL;
}

const char *iothread_id(const IOThread *t)
{
    return t->id;
}

GMainContext *iothread_context(IOThread *t)
{
    return t->ctx;
}

TimerList *iothread_timers(IOThread *t)
{
    return t->timers;
}

void iothread_run_sync(IOThread *t, void (*fn)(void *opaque), void *opaque)
{
    SyncCall call = { .fn = fn, .opaque = opaque };
    pthread_mutex_lock(&t->lock);
    g_queue_push_tail(&t->calls, &call);
    event_notifier_set(&t->calls_notifier);
    while (!call.done) {
        pthread_cond_wait(&t->call_done, &t->lock);
    }
    pthread_mutex_unlock(&t->lock);
}

bool iothreads_create(GPtrArray *ids, Error **errp)
{
    for (guint i = 0; i < ids->len; i++) {
        if (!iothread_new(g_ptr_array_index(ids, i), errp)) {
            return false;
        }
    }
    return true;
}

void iothreads_free_all(void)
{
    while (iothreads && iothreads->len) {
        iothread_free(g_ptr_array_index(iothreads, iothreads->len - 1));
    }
}

void iothread_free(IOThread *t)
{
    atomic_store(&t->stopping, true);
    event_notifier_set(&t->calls_notifier);     /* wake its poll */
    pthread_join(t->thread, NULL);
    g_ptr_array_remove(iothreads, t);
    timer_list_free(t->timers);
    event_notifier_cleanup(&t->calls_notifier);
    pthread_cond_destroy(&t->call_done);
    pthread_mutex_destroy(&t->lock);
    g_main_context_unref(t->ctx);
    g_free(t->id);
    g_free(t);
}

/*
 * query-iothreads, in QEMU's shape. The polling members are QEMU's
 * tunables; our threads never busy-poll (each sleeps in poll(2) on its
 * GLib context) and do not batch, so we report them as QEMU reports a
 * thread with polling off: poll-max-ns 0 and the rest 0.
 */
static JsonNode *qmp_query_iothreads(JsonObject *args, Error **errp)
{
    JsonArray *list = json_array_new();
    for (guint i = 0; iothreads && i < iothreads->len; i++) {
        IOThread *t = g_ptr_array_index(iothreads, i);
        JsonObject *info = json_object_new();
        json_object_set_string_member(info, "id", t->id);
        json_object_set_int_member(info, "thread-id", atomic_load(&t->thread_id));
        json_object_set_int_member(info, "poll-max-ns", 0);
        json_object_set_int_member(info, "poll-grow", 0);
        json_object_set_int_member(info, "poll-shrink", 0);
        json_object_set_int_member(info, "aio-max-batch", 0);
        json_array_add_object_element(list, info);
    }
    return qmp_node_array(list);
}

const QmpCommandInfo iothread_qmp_commands[] = {
    { "query-iothreads", qmp_query_iothreads },
    { NULL },
};
