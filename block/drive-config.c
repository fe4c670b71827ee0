/*
 * -drive, -hda..-hdd and -cdrom into DriveConfig (block/drive-config.h).
 * Option names, defaults, placement rules and default ids follow QEMU's
 * documented -drive behaviour; the messages for what this VMM lacks say so.
 */
#include <string.h>
#include "block/drive-config.h"
#include "qemu/keyval.h"

/* A drive as parsed, before placement: -1 where the user gave nothing. */
typedef struct DriveRequest {
    DriveConfig *cfg;
    int index, bus, unit;
} DriveRequest;

typedef struct NamedValue {
    const char *name;
    int value;
} NamedValue;

static const NamedValue interface_names[] = {
    { "ide", DRIVE_IF_IDE }, { "virtio", DRIVE_IF_VIRTIO }, { "none", DRIVE_IF_NONE },
    { NULL, 0 },
};
static const NamedValue media_names[] = {
    { "disk", DRIVE_MEDIA_DISK }, { "cdrom", DRIVE_MEDIA_CDROM }, { NULL, 0 },
};
static const NamedValue cache_names[] = {
    { "writeback", DRIVE_CACHE_WRITEBACK }, { "none", DRIVE_CACHE_NONE },
    { "writethrough", DRIVE_CACHE_WRITETHROUGH }, { "directsync", DRIVE_CACHE_DIRECTSYNC },
    { "unsafe", DRIVE_CACHE_UNSAFE }, { NULL, 0 },
};
static const NamedValue aio_names[] = {
    { "threads", DRIVE_AIO_THREADS }, { "native", DRIVE_AIO_NATIVE },
    { "io_uring", DRIVE_AIO_IO_URING }, { NULL, 0 },
};
/* QEMU takes off/on as synonyms of ignore/unmap. */
static const NamedValue discard_names[] = {
    { "ignore", DRIVE_DISCARD_IGNORE }, { "off", DRIVE_DISCARD_IGNORE },
    { "unmap", DRIVE_DISCARD_UNMAP }, { "on", DRIVE_DISCARD_UNMAP }, { NULL, 0 },
};

static bool lookup_name(const NamedValue *table, const char *name, int *value)
{
    for (const NamedValue *entry = table; entry->name; entry++) {
        if (name && strcmp(entry->name, name) == 0) {
            *value = entry->value;
            return true;
        }
    }
    return false;
}

static const char *name_of(const NamedValue *table, int value)
{
    for (const NamedValue *entry = table; entry->name; entry++) {
        if (entry->value == value) {
            return entry->name;
        }
    }
    g_assert_not_reached();
}

const char *drive_cache_mode_name(DriveCacheMode mode)
{
    return name_of(cache_names, mode);
}

const char *drive_aio_mode_name(DriveAioMode mode)
{
    return name_of(aio_names, mode);
}

const char *drive_interface_name(DriveInterface interface)
{
    return name_of(interface_names, interface);
}

/* QEMU's cache mode table (qemu-system-x86_64 -drive documentation). */
DriveCacheFlags drive_cache_flags(DriveCacheMode mode)
{
    switch (mode) {
    case DRIVE_CACHE_WRITEBACK:
        return (DriveCacheFlags) { .writeback = true };
    case DRIVE_CACHE_NONE:
        return (DriveCacheFlags) { .writeback = true, .direct = true };
    case DRIVE_CACHE_WRITETHROUGH:
        return (DriveCacheFlags) { 0 };
    case DRIVE_CACHE_DIRECTSYNC:
        return (DriveCacheFlags) { .direct = true };
    case DRIVE_CACHE_UNSAFE:
        return (DriveCacheFlags) { .writeback = true, .no_flush = true };
    }
    g_assert_not_reached();
}

static void drive_config_free(gpointer data)
{
    DriveConfig *cfg = data;
    g_free(cfg->id);
    g_free(cfg->file);
    g_free(cfg->origin);
    g_free(cfg);
}

GPtrArray *drive_config_list_new(void)
{
    return g_ptr_array_new_with_free_func(drive_config_free);
}

DriveConfig *drive_config_find(GPtrArray *drives, const char *id)
{
    for (guint i = 0; i < drives->len; i++) {
        DriveConfig *cfg = g_ptr_array_index(drives, i);
        if (strcmp(cfg->id, id) == 0) {
            return cfg;
        }
    }
    return NULL;
}

DriveConfig *drive_config_at(GPtrArray *drives, DriveInterface interface, int bus, int unit)
{
    for (guint i = 0; i < drives->len; i++) {
        DriveConfig *cfg = g_ptr_array_index(drives, i);
        if (cfg->interface == interface && cfg->bus == bus && cfg->unit == unit) {
            return cfg;
        }
    }
    return NULL;
}

static const char *const error_action_names[] = {
    [DRIVE_ERROR_REPORT] = "report", [DRIVE_ERROR_IGNORE] = "ignore",
    [DRIVE_ERROR_STOP] = "stop", [DRIVE_ERROR_ENOSPC] = "enospc",
};

const char *drive_error_action_name(DriveErrorAction action)
{
    return error_action_names[action];
}

bool drive_error_may_stop(DriveErrorAction rerror, DriveErrorAction werror)
{
    return rerror == DRIVE_ERROR_STOP || werror == DRIVE_ERROR_STOP ||
           werror == DRIVE_ERROR_ENOSPC;
}

/* QEMU's werror= and rerror= values; enospc is for writes only. */
static bool parse_error_action(const KeyvalItem *item, bool for_writes,
                               DriveErrorAction *action, Error **errp)
{
    const char *value = item->value ? item->value : "";
    for (size_t i = 0; i < G_N_ELEMENTS(error_action_names); i++) {
        if (strcmp(value, error_action_names[i]) == 0 &&
            (for_writes || i != DRIVE_ERROR_ENOSPC)) {
            *action = (DriveErrorAction)i;
            return true;
        }
    }
    error_setg(errp, "'%s' invalid %s error action", value, for_writes ? "write" : "read");
    return false;
}

/* The first character a letter, then letters, digits, '-', '.', '_' (QEMU's ids). */
static bool is_valid_id(const char *id)
{
    if (!g_ascii_isalpha(id[0])) {
        return false;
    }
    for (const char *p = id; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-._", *p)) {
            return false;
        }
    }
    return true;
}

static bool parse_int_item(const KeyvalItem *item, int max, int *value, Error **errp)
{
    uint64_t number;
    if (!keyval_item_uint(item, 0, max, &number, errp)) {
        return false;
    }
    *value = (int)number;
    return true;
}

/* Values named in a table: the message is QEMU's for that key. */
static bool parse_named_item(const KeyvalItem *item, const NamedValue *table,
                             const char *what, int *value, Error **errp)
{
    if (lookup_name(table, item->value, value)) {
        return true;
    }
    GString *names = g_string_new(NULL);
    for (const NamedValue *entry = table; entry->name; entry++) {
        g_string_append_printf(names, "%s%s", names->len ? ", " : "", entry->name);
    }
    error_setg(errp, "invalid %s '%s' (expected %s)", what, item->value ? item->value : "",
               names->str);
    g_string_free(names, TRUE);
    return false;
}

static bool parse_format(const KeyvalItem *item, DriveFormat *format, Error **errp)
{
    if (item->value && strcmp(item->value, "raw") == 0) {
        *format = DRIVE_FORMAT_RAW;
        return true;
    }
    error_setg(errp, "format '%s' is not supported: only raw images are (convert with "
               "'qemu-img convert -O raw')", item->value ? item->value : "");
    return false;
}

static bool parse_interface(const KeyvalItem *item, DriveInterface *interface, Error **errp)
{
    int value;
    if (!lookup_name(interface_names, item->value, &value)) {
        error_setg(errp, "unsupported bus type '%s' (supported: ide, virtio, none)",
                   item->value ? item->value : "");
        return false;
    }
    *interface = value;
    return true;
}

static bool parse_snapshot(const KeyvalItem *item, Error **errp)
{
    bool snapshot;
    if (!keyval_item_bool(item, &snapshot, errp)) {
        return false;
    }
    if (snapshot) {
        error_setg(errp, "snapshot=on is not supported (it needs a temporary qcow2 "
                   "overlay; only raw images are supported)");
        return false;
    }
    return true;
}

/* Index, bus and unit numbers: far beyond any machine, small enough for ids. */
#define DRIVE_NUMBER_MAX 9999

static bool parse_item(DriveRequest *req, const KeyvalItem *item, Error **errp)
{
    DriveConfig *cfg = req->cfg;
    const char *key = item->key;
    int value;

    if (strcmp(key, "file") == 0) {
        g_free(cfg->file);
        cfg->file = g_strdup(item->value && item->value[0] ? item->value : NULL);
        return true;
    } else if (strcmp(key, "id") == 0) {
        if (!item->value || !is_valid_id(item->value)) {
            error_setg(errp, "parameter 'id' expects an identifier (a letter, then "
                       "letters, digits, '-', '.', '_')");
            return false;
        }
        g_free(cfg->id);
        cfg->id = g_strdup(item->value);
        return true;
    } else if (strcmp(key, "format") == 0) {
        return parse_format(item, &cfg->format, errp);
    } else if (strcmp(key, "if") == 0) {
        return parse_interface(item, &cfg->interface, errp);
    } else if (strcmp(key, "media") == 0) {
        if (!lookup_name(media_names, item->value, &value)) {
            error_setg(errp, "'%s' invalid media (disk or cdrom)",
                       item->value ? item->value : "");
            return false;
        }
        cfg->media = value;
        return true;
    } else if (strcmp(key, "cache") == 0) {
        if (!parse_named_item(item, cache_names, "cache option", &value, errp)) {
            return false;
        }
        cfg->cache = value;
        return true;
    } else if (strcmp(key, "aio") == 0) {
        if (!parse_named_item(item, aio_names, "aio option", &value, errp)) {
            return false;
        }
        cfg->aio = value;
        return true;
    } else if (strcmp(key, "discard") == 0) {
        if (!parse_named_item(item, discard_names, "discard option", &value, errp)) {
            return false;
        }
        cfg->discard = value;
        return true;
    } else if (strcmp(key, "readonly") == 0 || strcmp(key, "read-only") == 0) {
        return keyval_item_bool(item, &cfg->read_only, errp);
    } else if (strcmp(key, "werror") == 0) {
        return parse_error_action(item, true, &cfg->werror, errp);
    } else if (strcmp(key, "rerror") == 0) {
        return parse_error_action(item, false, &cfg->rerror, errp);
    } else if (strcmp(key, "snapshot") == 0) {
        return parse_snapshot(item, errp);
    } else if (strcmp(key, "index") == 0) {
        return parse_int_item(item, DRIVE_NUMBER_MAX, &req->index, errp);
    } else if (strcmp(key, "bus") == 0) {
        return parse_int_item(item, DRIVE_NUMBER_MAX, &req->bus, errp);
    } else if (strcmp(key, "unit") == 0) {
        return parse_int_item(item, DRIVE_NUMBER_MAX, &req->unit, errp);
    }
    error_setg(errp, "unsupported parameter '%s' (supported: file, format, if, index, bus, "
               "unit, media, cache, aio, readonly, id, discard, werror, rerror, snapshot)",
               key);
    return false;
}

static DriveConfig *drive_config_new_default(void)
{
    DriveConfig *cfg = g_new0(DriveConfig, 1);
    cfg->interface = DRIVE_IF_IDE;      /* the pc machine's default, as in QEMU */
    cfg->media = DRIVE_MEDIA_DISK;
    cfg->format = DRIVE_FORMAT_PROBE;
    cfg->cache = DRIVE_CACHE_WRITEBACK;
    cfg->aio = DRIVE_AIO_THREADS;
    cfg->discard = DRIVE_DISCARD_IGNORE;
    cfg->werror = DRIVE_ERROR_ENOSPC;     /* QEMU's defaults */
    cfg->rerror = DRIVE_ERROR_REPORT;
    return cfg;
}

/* Units per bus: IDE's two; 0 where every drive is a bus of its own. */
static int units_per_bus(DriveInterface interface)
{
    return interface == DRIVE_IF_IDE ? DRIVE_IDE_UNITS_PER_BUS : 0;
}

/* QEMU's rules: index is bus * units + unit; without either, the first free
 * unit, moving on to the next bus when one is full. */
static bool drive_place(GPtrArray *drives, DriveRequest *req, Error **errp)
{
    DriveConfig *cfg = req->cfg;
    int max_units = units_per_bus(cfg->interface);
    int bus = req->bus < 0 ? 0 : req->bus;
    int unit = req->unit;

    if (req->index >= 0) {
        if (req->bus >= 0 || req->unit >= 0) {
            error_setg(errp, "index cannot be used with bus and unit");
            return false;
        }
        bus = max_units ? req->index / max_units : 0;
        unit = max_units ? req->index % max_units : req->index;
    } else if (unit < 0) {
        unit = 0;
        while (drive_config_at(drives, cfg->interface, bus, unit)) {
            unit++;
            if (max_units && unit >= max_units) {
                unit -= max_units;
                bus++;
            }
        }
    }
    if (max_units && unit >= max_units) {
        error_setg(errp, "unit %d too big (max is %d)", unit, max_units - 1);
        return false;
    }
    if (cfg->interface == DRIVE_IF_IDE && bus >= DRIVE_IDE_BUSES) {
        error_setg(errp, "machine type does not support if=ide,bus=%d,unit=%d", bus, unit);
        return false;
    }
    if (cfg->interface != DRIVE_IF_IDE && bus != 0) {
        error_setg(errp, "if=%s has one drive per bus: use index= or unit=, not bus=%d",
                   drive_interface_name(cfg->interface), bus);
        return false;
    }
    cfg->bus = bus;
    cfg->unit = unit;
    cfg->index = max_units ? bus * max_units + unit : unit;
    if (drive_config_at(drives, cfg->interface, bus, unit)) {
        error_setg(errp, "drive with bus=%d, unit=%d (index=%d) exists", bus, unit,
                   cfg->index);
        return false;
    }
    return true;
}

static char *drive_default_id(const DriveConfig *cfg)
{
    if (cfg->interface == DRIVE_IF_IDE) {
        return g_strdup_printf("ide%d-%s%d", cfg->bus,
                               cfg->media == DRIVE_MEDIA_CDROM ? "cd" : "hd", cfg->unit);
    }
    return g_strdup_printf("%s%d", drive_interface_name(cfg->interface), cfg->unit);
}

/* Checks that involve several keys, then placement and the id. */
static bool drive_complete(GPtrArray *drives, DriveRequest *req, Error **errp)
{
    DriveConfig *cfg = req->cfg;
    if (cfg->media == DRIVE_MEDIA_CDROM) {
        cfg->read_only = true;
    } else if (!cfg->file) {
        error_setg(errp, "a disk needs file= (only a media=cdrom drive can be empty)");
        return false;
    }
    if (cfg->aio == DRIVE_AIO_NATIVE && !drive_cache_flags(cfg->cache).direct) {
        /* QEMU's words: Linux AIO is only asynchronous with O_DIRECT. */
        error_setg(errp, "aio=native was specified, but it requires cache.direct=on, "
                   "which was not specified.");
        return false;
    }
    if (!drive_place(drives, req, errp)) {
        return false;
    }
    if (!cfg->id) {
        cfg->id = drive_default_id(cfg);
    }
    if (drive_config_find(drives, cfg->id)) {
        error_setg(errp, "Duplicate ID '%s' for drive", cfg->id);
        return false;
    }
    return true;
}

static bool drive_request_add(GPtrArray *drives, DriveRequest *req, Error **errp)
{
    if (!drive_complete(drives, req, errp)) {
        drive_config_free(req->cfg);
        return false;
    }
    g_ptr_array_add(drives, req->cfg);
    return true;
}

bool drive_add(GPtrArray *drives, const char *optstr, Error **errp)
{
    GPtrArray *items = keyval_parse(optstr, NULL, errp);
    if (!items) {
        return false;
    }
    DriveRequest req = { .cfg = drive_config_new_default(), .index = -1, .bus = -1,
                         .unit = -1 };
    bool ok = true;
    for (guint i = 0; ok && i < items->len; i++) {
        ok = parse_item(&req, g_ptr_array_index(items, i), errp);
    }
    g_ptr_array_unref(items);
    if (!ok) {
        drive_config_free(req.cfg);
        return false;
    }
    return drive_request_add(drives, &req, errp);
}

static const char *const shorthand_options[] = { "hda", "hdb", "hdc", "hdd", "cdrom", NULL };

bool drive_is_shorthand_option(const char *option)
{
    return g_strv_contains(shorthand_options, option);
}

/* QEMU: -hdX FILE is -drive file=FILE,index=X,media=disk; -cdrom FILE is
 * -drive file=FILE,index=2,media=cdrom (a file name, so commas are literal). */
bool drive_add_shorthand(GPtrArray *drives, const char *option, const char *file,
                         Error **errp)
{
    g_assert(drive_is_shorthand_option(option));
    bool cdrom = strcmp(option, "cdrom") == 0;
    DriveRequest req = { .cfg = drive_config_new_default(), .bus = -1, .unit = -1 };
    req.index = cdrom ? 2 : option[2] - 'a';
    req.cfg->media = cdrom ? DRIVE_MEDIA_CDROM : DRIVE_MEDIA_DISK;
    req.cfg->file = g_strdup(file[0] ? file : NULL);
    return drive_request_add(drives, &req, errp);
}
