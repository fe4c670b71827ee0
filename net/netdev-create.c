/*
 * The netdev backend types, and the creation of the netdevs the command
 * line kept (include/net/netdev-create.h). Main thread, at machine build.
 */
#include <stdarg.h>
#include <string.h>
#include "net/net.h"
#include "net/netdev-create.h"

typedef struct NetdevType {
    const char *name;
    bool (*init)(const NetdevConfig *cfg, Error **errp);
} NetdevType;

/* In QEMU's order of `-netdev help`. */
static const NetdevType netdev_types[] = {
    { "socket", net_socket_init },
    { "tap", net_tap_init },
    { "user", net_user_init },
};

static const NetdevType *netdev_type_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(netdev_types); i++) {
        if (strcmp(netdev_types[i].name, name) == 0) {
            return &netdev_types[i];
        }
    }
    return NULL;
}

bool netdev_type_is_known(const char *type)
{
    return netdev_type_find(type) != NULL;
}

void netdev_types_print(FILE *out)
{
    fprintf(out, "Available netdev backend types:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(netdev_types); i++) {
        fprintf(out, "%s\n", netdev_types[i].name);
    }
}

bool netdev_create(const NetdevConfig *cfg, Error **errp)
{
    const NetdevType *type = netdev_type_find(cfg->type);
    Error *err = NULL;
    if (!type) {
        /* The command line checked it; a config made elsewhere may not be. */
        error_setg(&err, "Parameter 'type' expects a netdev backend type");
    } else if (type->init(cfg, &err)) {
        return true;
    }
    error_prepend(&err, "%s: ", cfg->origin);
    error_propagate(errp, err);
    return false;
}

bool netdevs_create(GPtrArray *cfgs, Error **errp)
{
    for (guint i = 0; i < cfgs->len; i++) {
        if (!netdev_create(g_ptr_array_index(cfgs, i), errp)) {
            return false;
        }
    }
    return true;
}

void netdevs_warn_unclaimed(GPtrArray *cfgs)
{
    for (guint i = 0; i < cfgs->len; i++) {
        const NetdevConfig *cfg = g_ptr_array_index(cfgs, i);
        NetDev *nd = netdev_find(cfg->id);
        if (nd && !nd->claimed_by) {
            net_warn("netdev %s has no peer", cfg->id);
        }
    }
}

/* ---- the config ---- */

static void keyval_item_free(gpointer data)
{
    KeyvalItem *item = data;
    g_free(item->key);
    g_free(item->value);
    g_free(item);
}

NetdevConfig *netdev_config_new(const char *type, const char *id, const char *origin)
{
    NetdevConfig *cfg = g_new0(NetdevConfig, 1);
    cfg->type = g_strdup(type);
    cfg->id = g_strdup(id);
    cfg->items = g_ptr_array_new_with_free_func(keyval_item_free);
    cfg->origin = g_strdup(origin);
    return cfg;
}

void netdev_config_free(NetdevConfig *cfg)
{
    if (cfg) {
        g_free(cfg->type);
        g_free(cfg->id);
        g_ptr_array_unref(cfg->items);
        g_free(cfg->origin);
        g_free(cfg);
    }
}

const char *netdev_config_get(const NetdevConfig *cfg, const char *key)
{
    const char *value = NULL;
    for (guint i = 0; i < cfg->items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(cfg->items, i);
        if (strcmp(item->key, key) == 0) {
            value = item->value;
        }
    }
    return value;
}

bool netdev_config_check_keys(const NetdevConfig *cfg, const char *const *allowed,
                              Error **errp)
{
    for (guint i = 0; i < cfg->items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(cfg->items, i);
        if (!g_strv_contains(allowed, item->key)) {
            error_setg(errp, "Invalid parameter '%s'", item->key);
            return false;
        }
        if (!item->value) {
            error_setg(errp, "Parameter '%s' expects a value", item->key);
            return false;
        }
    }
    return true;
}

bool netdev_config_get_bool(const NetdevConfig *cfg, const char *key, bool dflt,
                            bool *value, Error **errp)
{
    const char *text = netdev_config_get(cfg, key);
    *value = dflt;
    if (text && !parse_bool(text, value)) {
        error_setg(errp, "Parameter '%s' expects 'on' or 'off'", key);
        return false;
    }
    return true;
}

void net_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "qemu-system-x86_64: warning: %s\n", msg);
}
