/* -object: the backend objects of the command line (cmdline-object.h). */
#include <inttypes.h>
#include <string.h>
#include "cmdline-object.h"

/*
 * QEMU's iothread tunables. This VMM's I/O threads sleep in poll(2) until
 * an fd is ready and never busy-poll, i.e. they behave as poll-max-ns=0;
 * poll-grow and poll-shrink only change how a polling window adapts, so
 * any value is accepted. Block requests go to the kernel in the batches
 * the device submits, with no cap to set, so aio-max-batch takes only 0
 * (QEMU's "the engine's default"). docs/design.md, "Event loop".
 */
typedef struct IOThreadTunable {
    const char *name;
    const char *refusal;        /* why a value above 0 is refused; NULL: accepted */
} IOThreadTunable;

static const IOThreadTunable iothread_tunables[] = {
    { "aio-max-batch", "a cap on the requests submitted at once is not implemented (block "
                       "requests go to the kernel in the batches a device submits)" },
    { "poll-grow", NULL },
    { "poll-max-ns", "polling is not implemented (I/O threads sleep until an event, as "
                     "QEMU's with poll-max-ns=0)" },
    { "poll-shrink", NULL },
};

static const IOThreadTunable *find_tunable(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(iothread_tunables); i++) {
        if (strcmp(iothread_tunables[i].name, name) == 0) {
            return &iothread_tunables[i];
        }
    }
    return NULL;
}

/* QEMU's words for a value that is no int64, or a negative one. */
static bool check_tunable(const IOThreadTunable *t, const char *text, Error **errp)
{
    bool negative = text && text[0] == '-';
    uint64_t value;
    if (!text || !parse_uint(text + negative, negative ? (uint64_t)INT64_MAX + 1 : INT64_MAX,
                             &value)) {
        error_setg(errp, "Parameter '%s' expects an int64 value", t->name);
        return false;
    }
    if (negative && value) {
        error_setg(errp, "%s value must be in range [0, %" PRId64 "]", t->name, INT64_MAX);
        return false;
    }
    if (value && t->refusal) {
        error_setg(errp, "%s; use %s=0", t->refusal, t->name);
        return false;
    }
    return true;
}

static ObjectParseResult print_iothread_help(FILE *out)
{
    fprintf(out, "iothread options:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(iothread_tunables); i++) {
        fprintf(out, "  %s=<int>\n", iothread_tunables[i].name);
    }
    return OBJECT_PARSE_HELP;
}

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
    if (keyval_wants_help(items)) {
        return print_iothread_help(out);
    }
    const char *id = NULL;
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        const IOThreadTunable *tunable;
        if (strcmp(item->key, "qom-type") == 0) {
            continue;
        }
        if ((tunable = find_tunable(item->key))) {
            if (!check_tunable(tunable, item->value, errp)) {
                return OBJECT_PARSE_ERROR;
            }
            continue;
        }
        if (strcmp(item->key, "id") != 0) {
            error_setg(errp, "Invalid parameter '%s'", item->key);
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
