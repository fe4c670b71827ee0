/* -object: the backend objects of the command line (cmdline-object.h). */
#include <string.h>
#include "cmdline-object.h"

ObjectParseResult object_config_parse(MachineConfig *cfg, GPtrArray *items, FILE *out,
                                      Error **errp)
{
    const char *type = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        if (strcmp(item->key, "qom-type") == 0) {
            type = item->value;
        }
    }
    if (type && keyval_is_help(type)) {
        fprintf(out, "List of user creatable objects:\n  iothread\n");
        return OBJECT_PARSE_HELP;
    }
    if (!type || strcmp(type, "iothread") != 0) {
        error_setg(errp, "object type '%s' is not supported (only iothread)",
                   type ? type : "");
        return OBJECT_PARSE_ERROR;
    }
    const char *id = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        if (strcmp(item->key, "qom-type") == 0) {
            continue;
        }
        if (strcmp(item->key, "id") != 0) {
            /* QEMU's iothread also takes polling and batching tunables,
             * which this VMM's I/O threads do not have. */
            error_setg(errp, "property '%s' is not supported (iothread takes only id=)",
                       item->key);
            return OBJECT_PARSE_ERROR;
        }
        if (!item->value) {
            error_setg(errp, "parameter 'id' needs a value");
            return OBJECT_PARSE_ERROR;
        }
        id = item->value;
    }
    if (!id) {
        error_setg(errp, "parameter 'id' is missing");
        return OBJECT_PARSE_ERROR;
    }
    if (!keyval_check_id(id, errp)) {
        return OBJECT_PARSE_ERROR;
    }
    if (g_ptr_array_find_with_equal_func(cfg->iothread_ids, id, g_str_equal, NULL)) {
        error_setg(errp, "duplicate object id '%s'", id);
        return OBJECT_PARSE_ERROR;
    }
    g_ptr_array_add(cfg->iothread_ids, g_strdup(id));
    return OBJECT_PARSE_ADDED;
}
