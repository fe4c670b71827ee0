/*
 * -chardev BACKEND,id=ID[,...]: a character backend that a device names
 * with chardev=ID, or -serial with chardev:ID. The backends are those of
 * -serial (chardev/char.h), under QEMU's -chardev spelling:
 *   null,id=ID   file,id=ID,path=PATH   stdio,id=ID[,mux=on|off]
 *   socket,id=ID,path=PATH|host=HOST,port=PORT,server=on,wait=off
 * (stdio with mux=on is -serial mon:stdio: Ctrl-a escapes; a socket is
 * -serial unix:PATH,... or tcp:HOST:PORT,...). QEMU's other backends (pty,
 * pipe, ...) and options are refused by name.
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
    static const char *const socket_keys[] = { "path", "host", "port", "server", "wait", NULL };
    return (strcmp(backend, "file") == 0 && strcmp(key, "path") == 0) ||
           (strcmp(backend, "stdio") == 0 && strcmp(key, "mux") == 0) ||
           (strcmp(backend, "socket") == 0 && g_strv_contains(socket_keys, key));
}

/* What -chardev said, beyond the backend and id. */
typedef struct ChardevOptions {
    const char *path, *host, *port;
    bool mux, server, wait;
} ChardevOptions;

/* A socket in -serial's spelling. Only a server that does not wait for
 * its first client is supported. */
static char *socket_spec(const ChardevOptions *o, Error **errp)
{
    if (!o->server) {
        error_setg(errp, "chardev: socket: client mode is not supported (use server=on,wait=off)");
        return NULL;
    }
    if (o->wait) {
        error_setg(errp, "chardev: socket: waiting for a client at start-up is not "
                   "supported (add wait=off)");
        return NULL;
    }
    if (o->path && !o->host && !o->port) {
        return g_strdup_printf("unix:%s,server=on,wait=off", o->path);
    }
    if (!o->path && o->port) {
        return g_strdup_printf("tcp:%s:%s,server=on,wait=off", o->host ? o->host : "", o->port);
    }
    error_setg(errp, "chardev: socket: give path=PATH (unix) or [host=HOST,]port=PORT (tcp)");
    return NULL;
}

/* The -serial spelling of the backend, or NULL and *errp. */
static char *chardev_spec(const char *backend, const ChardevOptions *o, Error **errp)
{
    if (strcmp(backend, "null") == 0) {
        return g_strdup("null");
    }
    if (strcmp(backend, "stdio") == 0) {
        return g_strdup(o->mux ? "mon:stdio" : "stdio");
    }
    if (strcmp(backend, "socket") == 0) {
        return socket_spec(o, errp);
    }
    const char *path = o->path;
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
        fprintf(out, "Available chardev backend types:\n  file\n  null\n  socket\n  stdio\n");
        return CMDLINE_EXIT_OK;
    }
    if (!backend || (strcmp(backend, "null") && strcmp(backend, "file") &&
                     strcmp(backend, "stdio") && strcmp(backend, "socket"))) {
        error_setg(errp, "'%s' is not a valid char driver name (this VMM has null, file, "
                   "socket and stdio)", backend ? backend : "");
        return CMDLINE_ERROR;
    }
    const char *id = NULL;
    ChardevOptions o = { .wait = true };
    for (guint i = 1; i < items->len; i++) {
        const KeyvalItem *item = keyval_item_at(items, i);
        if (strcmp(item->key, "id") == 0) {
            id = item->value;
        } else if (!chardev_key_allowed(backend, item->key)) {
            error_setg(errp, "Invalid parameter '%s' for chardev backend '%s'", item->key,
                       backend);
            return CMDLINE_ERROR;
        } else if (strcmp(item->key, "path") == 0) {
            o.path = item->value;
        } else if (strcmp(item->key, "host") == 0) {
            o.host = item->value;
        } else if (strcmp(item->key, "port") == 0) {
            o.port = item->value;
        } else if (!keyval_item_bool(item, strcmp(item->key, "mux") == 0 ? &o.mux :
                                           strcmp(item->key, "server") == 0 ? &o.server :
                                           &o.wait, errp)) {
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
    char *spec = chardev_spec(backend, &o, errp);
    if (!spec) {
        return CMDLINE_ERROR;
    }
    ChardevConfig *c = g_new0(ChardevConfig, 1);
    c->id = g_strdup(id);
    c->spec = spec;
    g_ptr_array_add(cfg->chardevs, c);
    return CMDLINE_RUN;
}
