/*
 * Character backends by id (chardev/char.h): -chardev BACKEND,id=ID, and
 * the backends -serial makes ("serial0"...), which devices name with
 * chardev=ID and which are flushed together at exit. The table changes
 * only while the machine is built (main thread).
 */
#include <glib.h>
#include "char-internal.h"

typedef struct NamedChardev {
    char *id;
    Chardev *chr;
    bool claimed;               /* a frontend uses it */
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
    if (n->claimed) {
        error_setg(errp, "Device '%s' is in use", id);
        return false;
    }
    n->claimed = true;
    return true;
}

void chardev_flush_all(void)
{
    for (guint i = 0; named_chardevs && i < named_chardevs->len; i++) {
        chardev_flush(((NamedChardev *)g_ptr_array_index(named_chardevs, i))->chr);
    }
}

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
