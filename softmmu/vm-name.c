/*
 * The guest's name (sysemu/vm-name.h) and QMP's query-name, which answers
 * {"name": NAME}, or {} when -name gave none, as QEMU does.
 */
#include <glib.h>
#include "monitor/qmp-tables.h"
#include "sysemu/vm-name.h"

/* Written by main before any monitor or thread reads it, never after. */
static char *guest_name;

void vm_name_set(const char *name)
{
    g_free(guest_name);
    guest_name = g_strdup(name);
}

const char *vm_name(void)
{
    return guest_name;
}

static JsonNode *qmp_query_name(JsonObject *args, Error **errp)
{
    JsonObject *ret = json_object_new();
    if (guest_name) {
        json_object_set_string_member(ret, "name", guest_name);
    }
    return qmp_node_object(ret);
}

const QmpCommandInfo vm_name_qmp_commands[] = {
    { "query-name", qmp_query_name },
    { NULL },
};
