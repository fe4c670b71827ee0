/*
 * werror= and rerror=: what a request the host fails does, as QEMU's
 * -drive options say (block/block-internal.h, BlockErrorState).
 *
 *   report  the device gets the error
 *   ignore  the device gets success
 *   stop    the request is kept here, the VM stops with run state
 *           io-error, and when it runs again (cont) the request goes to
 *           the host again from where it failed: the device, and the
 *           guest, only see a request that took long
 *   enospc  stop for ENOSPC, report the other errors
 *
 * Each sends BLOCK_IO_ERROR first, with the action taken. Kept requests
 * stay "in flight" for the device and blk_drain; a drain (reset, exit)
 * gives them back to the device with their errors, since nothing would
 * ever finish them otherwise. The re-submission runs on the main loop,
 * from vm_start's hook, and never waits for the host.
 */
#include <errno.h>
#include <pthread.h>
#include "block-internal.h"
#include "monitor/qmp.h"
#include "sysemu/runstate.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static GList *registry;             /* BlockErrorState *, under registry_lock */

static void resubmit_kept_requests(void *opaque);

void block_error_init(BlockErrorState *state)
{
    static bool hooked;             /* main thread only */
    *state = (BlockErrorState) { .rerror = DRIVE_ERROR_REPORT,
                                 .werror = DRIVE_ERROR_REPORT };
    pthread_mutex_init(&state->lock, NULL);
    g_queue_init(&state->parked);
    if (!hooked) {
        vm_add_start_hook(resubmit_kept_requests, NULL);
        hooked = true;
    }
    pthread_mutex_lock(&registry_lock);
    registry = g_list_prepend(registry, state);
    pthread_mutex_unlock(&registry_lock);
}

void block_error_destroy(BlockErrorState *state)
{
    pthread_mutex_lock(&registry_lock);
    registry = g_list_remove(registry, state);
    pthread_mutex_unlock(&registry_lock);
    g_assert(g_queue_is_empty(&state->parked));
    pthread_mutex_destroy(&state->lock);
}

void blk_set_on_error(BlockBackend *blk, DriveErrorAction rerror, DriveErrorAction werror)
{
    BlockErrorState *state = blk_error_state(blk);
    pthread_mutex_lock(&state->lock);
    state->rerror = rerror;
    state->werror = werror;
    pthread_mutex_unlock(&state->lock);
}

/* The action for this request and error: enospc resolved. */
static DriveErrorAction action_for(const BlockErrorState *state, const BlockRequest *req,
                                   int ret)
{
    DriveErrorAction action = req->acct_type == BLOCK_ACCT_READ ? state->rerror
                                                                : state->werror;
    if (action == DRIVE_ERROR_ENOSPC) {
        return ret == -ENOSPC ? DRIVE_ERROR_STOP : DRIVE_ERROR_REPORT;
    }
    return action;
}

/* BLOCK_IO_ERROR with QEMU 7.2's members ("nospace" only where an
 * error may stop the VM, as QEMU has it only then); sent before the device hears
 * of the error (and before the STOP), so a management tool sees the
 * event no later than the guest sees the outcome. */
static void send_io_error_event(const BlockRequest *req, DriveErrorAction action, int ret,
                                bool with_nospace)
{
    JsonObject *data = json_object_new();
    json_object_set_string_member(data, "device", blk_name(req->blk));
    json_object_set_string_member(data, "node-name", blk_node_name(req->blk));
    json_object_set_string_member(data, "operation",
                                  req->acct_type == BLOCK_ACCT_READ ? "read" : "write");
    json_object_set_string_member(data, "action", drive_error_action_name(action));
    if (with_nospace) {
        json_object_set_boolean_member(data, "nospace", ret == -ENOSPC);
    }
    json_object_set_string_member(data, "reason", g_strerror(-ret));
    qmp_event_send("BLOCK_IO_ERROR", data);
}

bool block_error_handle(BlockErrorState *state, BlockRequest *req, int *ret)
{
    if (req->error_handled) {
        return false;               /* given back by a drain: its error stands */
    }
    req->error_handled = true;
    pthread_mutex_lock(&state->lock);
    DriveErrorAction action = action_for(state, req, *ret);
    bool with_nospace = drive_error_may_stop(state->rerror, state->werror);
    bool keep = action == DRIVE_ERROR_STOP && !state->draining;
    if (action == DRIVE_ERROR_STOP && state->io_status == 0) {
        state->io_status = -*ret;   /* the first error shows until cont */
    }
    if (keep) {
        req->ret = *ret;
        g_queue_push_tail(&state->parked, req);
    }
    pthread_mutex_unlock(&state->lock);
    if (action == DRIVE_ERROR_STOP) {
        /* The request first, then the event: the STOP the main loop sends
         * comes after BLOCK_IO_ERROR, as in QEMU. */
        qemu_system_vm_stop_request(RUN_STATE_IO_ERROR);
    }
    send_io_error_event(req, action, *ret, with_nospace);
    if (keep) {
        return true;
    }
    if (action == DRIVE_ERROR_IGNORE) {
        *ret = 0;
    }
    return false;
}

void block_error_drain_begin(BlockErrorState *state)
{
    pthread_mutex_lock(&state->lock);
    state->draining++;
    GQueue kept = state->parked;
    g_queue_init(&state->parked);
    pthread_mutex_unlock(&state->lock);
    for (GList *l = kept.head; l; l = l->next) {
        BlockRequest *req = l->data;
        block_request_fail(req, req->ret);
    }
    g_queue_clear(&kept);
}

void block_error_drain_end(BlockErrorState *state)
{
    pthread_mutex_lock(&state->lock);
    state->draining--;
    pthread_mutex_unlock(&state->lock);
}

const char *block_error_io_status(BlockErrorState *state)
{
    pthread_mutex_lock(&state->lock);
    int err = state->io_status;
    pthread_mutex_unlock(&state->lock);
    return err == 0 ? "ok" : err == ENOSPC ? "nospace" : "failed";
}

/* vm_start's hook, on the main loop: every drive's io-status back to ok
 * (as QEMU's cont does) and its kept requests to the host again. One that
 * fails again stops the VM again. */
static void resubmit_kept_requests(void *opaque)
{
    GQueue kept = G_QUEUE_INIT;
    pthread_mutex_lock(&registry_lock);
    for (GList *l = registry; l; l = l->next) {
        BlockErrorState *state = l->data;
        pthread_mutex_lock(&state->lock);
        state->io_status = 0;
        while (!g_queue_is_empty(&state->parked)) {
            g_queue_push_tail(&kept, g_queue_pop_head(&state->parked));
        }
        pthread_mutex_unlock(&state->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    for (BlockRequest *req; (req = g_queue_pop_head(&kept));) {
        req->error_handled = false;
        block_request_resubmit(req);
    }
}
