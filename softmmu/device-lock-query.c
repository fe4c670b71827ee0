/*
 * x-query-device-locks (ours, not QEMU's): the statistics that
 * -machine lock-stats=on prints at exit, live, and optionally reset.
 *
 *   -> { "execute": "x-query-device-locks", "arguments": { "reset": true } }
 *   <- { "return": { "device-lock": "on",
 *                    "locks": [ { "name": "global", "type": "(global)",
 *                                 "acquisitions": 0, "contended": 0, "wait-ns": 0 },
 *                               { "name": "serial0", "type": "isa-serial", ... },
 *                               { "name": "virtio-net0.qp0", "type": "virtio-net-pci",
 *                                 "device": "virtio-net0", ... } ] } }
 * A sub-lock (hw/qdev.h: a queue pair's) follows its device's lock and
 * names that device in "device".
 *
 * The counters are atomics read one by one (a reset moves the readers'
 * starting point and writes nothing into them): no device lock is taken,
 * so a vCPU inside a handler is never made to wait for the monitor, and
 * the JSON is built from the copies.
 */
#include "hw/qdev.h"
#include "monitor/qmp-tables.h"

typedef struct LockListBuilder {
    JsonArray *locks;
    bool reset;
} LockListBuilder;

static void add_lock_entry(const char *type, DeviceLock *lock, void *opaque)
{
    LockListBuilder *b = opaque;
    DeviceLockStats st = device_lock_stats_read(lock, b->reset);
    JsonObject *entry = json_object_new();
    json_object_set_string_member(entry, "name", lock->name);
    json_object_set_string_member(entry, "type", type);
    if (lock->owner) {
        json_object_set_string_member(entry, "device", lock->owner->id);
    }
    json_object_set_int_member(entry, "acquisitions", (int64_t)st.acquisitions);
    json_object_set_int_member(entry, "contended", (int64_t)st.contended);
    json_object_set_int_member(entry, "wait-ns", (int64_t)st.wait_ns);
    json_array_add_object_element(b->locks, entry);
}

static JsonNode *qmp_x_query_device_locks(JsonObject *args, Error **errp)
{
    LockListBuilder b = { json_array_new(), qmp_arg_bool(args, "reset", false) };
    device_lock_foreach(add_lock_entry, &b);
    JsonObject *ret = json_object_new();
    json_object_set_string_member(ret, "device-lock", device_lock_is_per_device() ? "on" : "off");
    json_object_set_array_member(ret, "locks", b.locks);
    return qmp_node_object(ret);
}

const QmpCommandInfo device_lock_qmp_commands[] = {
    { "x-query-device-locks", qmp_x_query_device_locks, "reset:b?" },
    { NULL },
};
