/*
 * -chardev BACKEND,id=ID[,...]: a character backend that a device names
 * with chardev=ID, or -serial with chardev:ID. The backends are those of
 * -serial (chardev/char.h), under QEMU's -chardev spelling:
 *   null,id=ID   file,id=ID,path=PATH   stdio,id=ID[,mux=on|off]
 * (stdio with mux=on is -serial mon:stdio: Ctrl-a escapes). QEMU's other
 * backends (socket, pty, pipe, ...) and options are refused by name.
 */
#include <string.h>
#include "cmdline-internal.h"

void chardev_config_free(gpointer data)
{
    ChardevConfig *c = data;
    g_free(c->id);
    g_free(c->spec);
    g_free(c);
}

/* The keys a backend takes beyond id=. */
static bool chardev_key_allowed(const char *backend, const char *key)
{
    return (strcmp(backend, "file") == 0 && strcmp(key, "path") == 0) ||
           (strcmp(backend, "stdio") == 0 && strcmp(key, "mux") == 0);
}

/* The -serial spelling of the backend, or NULL and *errp. */
static char *chardev_spec(const char *backend, const char *path, bool mux, Error **errp)
{
    if (strcmp(backend, "null") == 0) {
        return g_strdup("null");
    }
    if (strcmp(backend, "stdio") == 0) {
        return g_strdup(mux ? "mon:stdio" : "stdio");
    }
    if (!path) {
        error_setg(errp, "chardev: file: no filename given (path=PATH)");
        return NULL;
    }
    return g_strdup_printf("file:%s", path);
}

CmdlineResult chardev_config_parse(MachineConfig *cfg, GPtrArray *items, FILE *out,
                                   Error **errp)
{
    const char *backend = keyval_item_at(items, 0)->value;
    if (backend && keyval_is_help(backend)) {
        fprintf(out, "Available chardev backend types:\n  file\n  null\n  stdio\n");
        return CMDLINE_EXIT_OK;
    }
    if (!backend || (strcmp(backend, "null") && strcmp(backend, "file") &&
                     strcmp(backend, "stdio"))) {
        error_setg(errp, "'%s' is not a valid char driver name (this VMM has null, file "
                   "and stdio)", backend ? backend : "");
        return CMDLINE_ERROR;
    }
    const char *id = NULL, *path = NULL;
    bool mux = false;
    for (guint i = 1; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (strcmp(item->key, "id") == 0) {
            id = item->value;
        } else if (!chardev_key_allowed(backend, item->key)) {
            error_setg(errp, "Invalid parameter '%s' for chardev backend '%s'", item->key,
                       backend);
            return CMDLINE_ERROR;
        } else if (strcmp(item->key, "path") == 0) {
            path = item->value;
        } else if (!keyval_item_bool(item, &mux, errp)) {
            return CMDLINE_ERROR;
        }
    }
    if (!id) {
        error_setg(errp, "chardev: no id specified");
        return CMDLINE_ERROR;
    }
    if (!keyval_check_id(id, errp)) {
        return CMDLINE_ERROR;
    }
    for (guint i = 0; i < cfg->chardevs->len; i++) {
        if (strcmp(((ChardevConfig *)g_ptr_array_index(cfg->chardevs, i))->id, id) == 0) {
            error_setg(errp, "attempt to add duplicate chardev '%s'", id);
            return CMDLINE_ERROR;
        }
    }
    char *spec = chardev_spec(backend, path, mux, errp);
    if (!spec) {
        return CMDLINE_ERROR;
    }
    ChardevConfig *c = g_new0(ChardevConfig, 1);
    c->id = g_strdup(id);
    c->spec = spec;
    g_ptr_array_add(cfg->chardevs, c);
    return CMDLINE_RUN;
}
