/*
 * Character backends by id (chardev/char.h): -chardev BACKEND,id=ID, and
 * the backends -serial makes ("serial0"...), which devices name with
 * chardev=ID and which are flushed together at exit. The table changes
 * only while the machine is built (main thread). query-chardev lists it.
 */
#include <glib.h>
#include "char-internal.h"
#include "monitor/qmp-tables.h"

typedef struct NamedChardev {
    char *id;
    Chardev *chr;
    unsigned claims;            /* frontends using it (several: a mux) */
} NamedChardev;

static GPtrArray *named_chardevs;     /* of NamedChardev */

static NamedChardev *named_chardev_find(const char *id)
{
    for (guint i = 0; named_chardevs && i < named_chardevs->len; i++) {
        NamedChardev *n = g_ptr_array_index(named_chardevs, i);
        if (g_str_equal(n->id, id)) {
            return n;
        }
    }
    return NULL;
}

Chardev *chardev_add(const char *id, const char *spec, Error **errp)
{
    if (named_chardev_find(id)) {
        error_setg(errp, "attempt to add duplicate chardev '%s'", id);
        return NULL;
    }
    Chardev *chr = chardev_new(spec, errp);
    if (!chr) {
        return NULL;
    }
    if (!named_chardevs) {
        named_chardevs = g_ptr_array_new();
    }
    NamedChardev *n = g_new0(NamedChardev, 1);
    n->id = g_strdup(id);
    n->chr = chr;
    g_ptr_array_add(named_chardevs, n);
    return chr;
}

Chardev *chardev_find(const char *id)
{
    NamedChardev *n = named_chardev_find(id);
    return n ? n->chr : NULL;
}

bool chardev_claim(const char *id, Error **errp)
{
    NamedChardev *n = named_chardev_find(id);
    g_assert(n);
    if (n->claims == (chardev_is_mux(n->chr) ? CHARDEV_MUX_MAX : 1)) {
        error_setg(errp, "Device '%s' is in use", id);
        return false;
    }
    n->claims++;
    return true;
}

void chardev_flush_all(void)
{
    for (guint i = 0; named_chardevs && i < named_chardevs->len; i++) {
        chardev_flush(((NamedChardev *)g_ptr_array_index(named_chardevs, i))->chr);
    }
}

static void add_chardev_info(JsonArray *list, const char *label, const char *filename,
                             bool frontend_open)
{
    JsonObject *info = json_object_new();
    json_object_set_string_member(info, "label", label);
    json_object_set_string_member(info, "filename", filename);
    json_object_set_boolean_member(info, "frontend-open", frontend_open);
    json_array_add_object_element(list, info);
}

/*
 * query-chardev: [{ "label", "filename", "frontend-open" }] for every
 * backend with an id, in creation order (QEMU's order is its hash
 * table's). A frontend is open once a device or monitor claimed the
 * backend or took its input.
 */
static JsonNode *qmp_query_chardev(JsonObject *args, Error **errp)
{
    JsonArray *list = json_array_new();
    for (guint i = 0; named_chardevs && i < named_chardevs->len; i++) {
        NamedChardev *n = g_ptr_array_index(named_chardevs, i);
        bool open = n->claims > 0 || n->chr->read;
        add_chardev_info(list, n->id, n->chr->filename ? n->chr->filename : "", open);
        if (chardev_is_mux(n->chr)) {   /* QEMU lists the mux's "stdio" base too */
            g_autofree char *base = g_strdup_printf("%s-base", n->id);
            add_chardev_info(list, base, "stdio", true);    /* the mux is its frontend */
        }
    }
    return qmp_node_array(list);
}

const QmpCommandInfo chardev_qmp_commands[] = {
    { "query-chardev", qmp_query_chardev },
    { NULL },
};

void chardev_free_all(void)
{
    for (guint i = 0; named_chardevs && i < named_chardevs->len; i++) {
        NamedChardev *n = g_ptr_array_index(named_chardevs, i);
        chardev_free(n->chr);
        g_free(n->id);
        g_free(n);
    }
    g_clear_pointer(&named_chardevs, g_ptr_array_unref);
}
