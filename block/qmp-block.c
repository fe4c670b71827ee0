/*
 * QMP's block commands, with QEMU 7.2's members and messages:
 * query-block and query-blockstats (one entry per drive, in command-line
 * order), eject and blockdev-change-medium (a removable drive, named by
 * its drive id or its device's id). They run on the main loop with no
 * lock held; device state comes through the drive's medium ops (each
 * takes its device's lock for a moment) and the counters are atomics.
 *
 * What QEMU has and this block layer does not (a protocol node under the
 * format node, I/O throttling, backing files, encryption) is reported as
 * QEMU reports it when it is absent or off; query-blockstats leaves out
 * "parent" (the protocol node's own counters, which do not exist here).
 */
#include <string.h>
#include "hw/qdev.h"
#include "monitor/qmp-tables.h"
#include "sysemu/drives.h"

/* ---- query-block ---- */

static JsonObject *image_info(const BlockBackend *blk)
{
    JsonObject *image = json_object_new();
    json_object_set_int_member(image, "virtual-size", blk_getlength(blk));
    json_object_set_string_member(image, "filename", blk_filename(blk));
    json_object_set_string_member(image, "format", "raw");
    json_object_set_int_member(image, "actual-size", blk_allocated_size(blk));
    json_object_set_boolean_member(image, "dirty-flag", false);
    return image;
}

static JsonObject *inserted_info(const BlockBackend *blk)
{
    static const char *const no_throttling[] = {
        "bps", "bps_rd", "bps_wr", "iops", "iops_rd", "iops_wr", "write_threshold",
    };
    JsonObject *ins = json_object_new();
    DriveCacheFlags cache = blk_cache_flags(blk);
    JsonObject *cache_info = json_object_new();
    /* QEMU's writeback is the guest-visible write cache, as the guest set it. */
    json_object_set_boolean_member(cache_info, "writeback", blk_enable_write_cache(blk));
    json_object_set_boolean_member(cache_info, "direct", cache.direct);
    json_object_set_boolean_member(cache_info, "no-flush", cache.no_flush);
    json_object_set_string_member(ins, "file", blk_filename(blk));
    json_object_set_string_member(ins, "node-name", blk_node_name(blk));
    json_object_set_boolean_member(ins, "ro", blk_is_read_only(blk));
    json_object_set_string_member(ins, "drv", "raw");
    json_object_set_int_member(ins, "backing_file_depth", 0);
    json_object_set_boolean_member(ins, "encrypted", false);
    json_object_set_string_member(ins, "detect_zeroes", "off");
    for (size_t i = 0; i < G_N_ELEMENTS(no_throttling); i++) {
        json_object_set_int_member(ins, no_throttling[i], 0);
    }
    json_object_set_object_member(ins, "image", image_info(blk));
    json_object_set_object_member(ins, "cache", cache_info);
    return ins;
}

static void add_block_info(DriveInfo *drive, void *opaque)
{
    JsonArray *list = opaque;
    const DriveMediumOps *ops = drive->medium_ops;
    JsonObject *info = json_object_new();
    json_object_set_string_member(info, "device", drive->cfg->id);
    if (drive->dev) {
        json_object_set_string_member(info, "qdev", drive->dev->id);
    }
    /* QEMU keeps an io-status for a drive a device has whose errors may
     * stop the VM; a stop for an error changes it until cont. */
    if (drive->dev && drive_error_may_stop(drive->rerror, drive->werror)) {
        json_object_set_string_member(info, "io-status",
                                      drive->blk ? blk_io_status(drive->blk) : "ok");
    }
    json_object_set_boolean_member(info, "locked", ops && ops->is_locked(drive->medium_opaque));
    /* As QEMU: a drive no device has is removable too. */
    json_object_set_boolean_member(info, "removable", ops || !drive->dev);
    if (ops) {
        json_object_set_boolean_member(info, "tray_open", ops->is_tray_open(drive->medium_opaque));
    }
    if (drive->blk) {
        json_object_set_object_member(info, "inserted", inserted_info(drive->blk));
    }
    json_object_set_string_member(info, "type", "unknown");
    json_array_add_object_element(list, info);
}

static JsonNode *qmp_query_block(JsonObject *args, Error **errp)
{
    JsonArray *list = json_array_new();
    drives_foreach(add_block_info, list);
    return qmp_node_array(list);
}

/* ---- query-blockstats ---- */

static JsonObject *stats_info(const BlockAcct *acct)
{
    static const char *const prefix[BLOCK_ACCT_TYPES] = {
        [BLOCK_ACCT_READ] = "rd", [BLOCK_ACCT_WRITE] = "wr",
        [BLOCK_ACCT_FLUSH] = "flush", [BLOCK_ACCT_UNMAP] = "unmap",
    };
    BlockAcctSnapshot snap;
    block_acct_snapshot(acct, &snap);
    JsonObject *stats = json_object_new();
    for (int t = 0; t < BLOCK_ACCT_TYPES; t++) {
        const BlockAcctKindStats *k = &snap.kind[t];
        const char *p = prefix[t];
        g_autofree char *ops = g_strdup_printf("%s_operations", p);
        g_autofree char *failed = g_strdup_printf("failed_%s_operations", p);
        g_autofree char *invalid = g_strdup_printf("invalid_%s_operations", p);
        g_autofree char *time = g_strdup_printf("%s_total_time_ns", p);
        json_object_set_int_member(stats, ops, k->ops);
        json_object_set_int_member(stats, failed, k->failed_ops);
        json_object_set_int_member(stats, invalid, k->invalid_ops);
        json_object_set_int_member(stats, time, k->total_time_ns);
        if (t != BLOCK_ACCT_FLUSH) {
            g_autofree char *bytes = g_strdup_printf("%s_bytes", p);
            g_autofree char *merged = g_strdup_printf("%s_merged", p);
            json_object_set_int_member(stats, bytes, k->bytes);
            json_object_set_int_member(stats, merged, 0);   /* requests are never merged */
        }
    }
    json_object_set_int_member(stats, "wr_highest_offset", snap.wr_highest_offset);
    if (snap.accessed) {
        json_object_set_int_member(stats, "idle_time_ns", snap.idle_time_ns);
    }
    /* QEMU's defaults for -drive: invalid and failed requests are counted. */
    json_object_set_boolean_member(stats, "account_invalid", true);
    json_object_set_boolean_member(stats, "account_failed", true);
    json_object_set_array_member(stats, "timed_stats", json_array_new());
    return stats;
}

static void add_block_stats(DriveInfo *drive, void *opaque)
{
    JsonArray *list = opaque;
    JsonObject *entry = json_object_new();
    json_object_set_string_member(entry, "device", drive->cfg->id);
    if (drive->blk) {
        json_object_set_string_member(entry, "node-name", blk_node_name(drive->blk));
    }
    if (drive->dev) {
        json_object_set_string_member(entry, "qdev", drive->dev->id);
    }
    json_object_set_object_member(entry, "stats", stats_info(drive->acct));
    json_array_add_object_element(list, entry);
}

static JsonNode *qmp_query_blockstats(JsonObject *args, Error **errp)
{
    JsonArray *list = json_array_new();
    drives_foreach(add_block_stats, list);
    return qmp_node_array(list);
}

/* ---- eject, blockdev-change-medium ---- */

typedef struct DriveByDevice {
    QEMUDevice *dev;
    DriveInfo *found;
} DriveByDevice;

static void match_device(DriveInfo *drive, void *opaque)
{
    DriveByDevice *m = opaque;
    if (drive->dev == m->dev) {
        m->found = drive;
    }
}

/* The drive named by exactly one of "device" (the drive's id) and "id"
 * (its device's), as QEMU finds it. */
static DriveInfo *find_drive(JsonObject *args, Error **errp)
{
    const char *device = qmp_arg_str(args, "device");
    const char *id = qmp_arg_str(args, "id");
    if (!device == !id) {
        error_setg(errp, "Need exactly one of 'device' and 'id'");
        return NULL;
    }
    DriveInfo *drive = NULL;
    if (device) {
        drive = drive_info_find(device);
    } else {
        DriveByDevice m = { device_find(id), NULL };
        if (m.dev) {
            drives_foreach(match_device, &m);
        }
        drive = m.found;
    }
    if (!drive) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", device ?: id);
    }
    return drive;
}

static JsonNode *qmp_eject(JsonObject *args, Error **errp)
{
    DriveInfo *drive = find_drive(args, errp);
    if (drive) {
        drive_eject(drive, qmp_arg_bool(args, "force", false), errp);
    }
    return NULL;
}

static bool parse_read_only_mode(const char *text, DriveReadOnlyMode *mode, Error **errp)
{
    static const char *const names[] = {
        [DRIVE_RO_RETAIN] = "retain", [DRIVE_RO_READ_ONLY] = "read-only",
        [DRIVE_RO_READ_WRITE] = "read-write",
    };
    *mode = DRIVE_RO_RETAIN;
    for (size_t i = 0; text && i < G_N_ELEMENTS(names); i++) {
        if (strcmp(text, names[i]) == 0) {
            *mode = (DriveReadOnlyMode)i;
            return true;
        }
    }
    if (text) {
        error_setg(errp, "Parameter 'read-only-mode' does not accept value '%s'", text);
        return false;
    }
    return true;
}

static JsonNode *qmp_blockdev_change_medium(JsonObject *args, Error **errp)
{
    DriveReadOnlyMode mode;
    if (!parse_read_only_mode(qmp_arg_str(args, "read-only-mode"), &mode, errp)) {
        return NULL;
    }
    DriveInfo *drive = find_drive(args, errp);
    if (drive) {
        drive_change_medium(drive, qmp_arg_str(args, "filename"), qmp_arg_str(args, "format"),
                            mode, qmp_arg_bool(args, "force", false), errp);
    }
    return NULL;
}

const QmpCommandInfo block_qmp_commands[] = {
    { "query-block", qmp_query_block },
    { "query-blockstats", qmp_query_blockstats },
    { "eject", qmp_eject, "device:s?,id:s?,force:b?" },
    { "blockdev-change-medium", qmp_blockdev_change_medium,
      "device:s?,id:s?,filename:s,format:s?,read-only-mode:s?,force:b?" },
    { NULL },
};
