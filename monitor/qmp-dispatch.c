/*
 * Finding a command, checking its arguments against its declared rules and
 * running it (monitor/qmp.h). The messages are QEMU's, so a client that
 * matches on them behaves the same against both.
 */
#include <string.h>
#include "monitor/qmp.h"

const QmpCommandInfo *qmp_command_find(const char *name)
{
    for (size_t t = 0; t < qmp_command_tables_count; t++) {
        for (const QmpCommandInfo *cmd = qmp_command_tables[t]; cmd->name; cmd++) {
            if (!strcmp(cmd->name, name)) {
                return cmd;
            }
        }
    }
    return NULL;
}

void qmp_command_foreach(void (*fn)(const QmpCommandInfo *cmd, void *opaque), void *opaque)
{
    for (size_t t = 0; t < qmp_command_tables_count; t++) {
        for (const QmpCommandInfo *cmd = qmp_command_tables[t]; cmd->name; cmd++) {
            fn(cmd, opaque);
        }
    }
}

/* One "name:type[?]" item of QmpCommandInfo.args, parsed. */
typedef struct ArgRule {
    char name[64];
    char type;
    bool optional;
} ArgRule;

/* The next rule of *spec (advanced past it); false at the end. The rules
 * are written by us, so a malformed one is a programming error. */
static bool next_arg_rule(const char **spec, ArgRule *rule)
{
    if (!*spec || !**spec) {
        return false;
    }
    const char *colon = strchr(*spec, ':');
    g_assert(colon && (size_t)(colon - *spec) < sizeof(rule->name));
    memcpy(rule->name, *spec, colon - *spec);
    rule->name[colon - *spec] = '\0';
    rule->type = colon[1];
    g_assert(strchr("sinboav", rule->type) && rule->type);
    const char *p = colon + 2;
    rule->optional = *p == '?';
    p += rule->optional;
    g_assert(*p == ',' || *p == '\0');
    *spec = *p ? p + 1 : p;
    return true;
}

static const char *arg_type_name(char type)
{
    switch (type) {
    case 's': return "string";
    case 'i': return "integer";
    case 'n': return "number";
    case 'b': return "boolean";
    case 'o': return "object";
    case 'a': return "array";
    default:  return "value";
    }
}

static bool arg_has_type(JsonNode *node, char type)
{
    GType value_type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_NONE;
    switch (type) {
    case 's': return value_type == G_TYPE_STRING;
    case 'i': return value_type == G_TYPE_INT64;
    case 'n': return value_type == G_TYPE_INT64 || value_type == G_TYPE_DOUBLE;
    case 'b': return value_type == G_TYPE_BOOLEAN;
    case 'o': return JSON_NODE_HOLDS_OBJECT(node);
    case 'a': return JSON_NODE_HOLDS_ARRAY(node);
    default:  return true;
    }
}

static bool rules_name(const char *spec, const char *name)
{
    ArgRule rule;
    while (next_arg_rule(&spec, &rule)) {
        if (!strcmp(rule.name, name)) {
            return true;
        }
    }
    return false;
}

static bool check_args(const QmpCommandInfo *cmd, JsonObject *args, Error **errp)
{
    const char *spec = cmd->args;
    ArgRule rule;
    while (next_arg_rule(&spec, &rule)) {
        JsonNode *node = json_object_get_member(args, rule.name);
        if (!node) {
            if (!rule.optional) {
                error_setg(errp, "Parameter '%s' is missing", rule.name);
                return false;
            }
        } else if (!arg_has_type(node, rule.type)) {
            error_setg(errp, "Invalid parameter type for '%s', expected: %s", rule.name,
                       arg_type_name(rule.type));
            return false;
        }
    }
    g_autoptr(GList) members = json_object_get_members(args);
    for (GList *m = members; m; m = m->next) {
        if (!rules_name(cmd->args, m->data)) {
            error_setg(errp, "Parameter '%s' is unexpected", (const char *)m->data);
            return false;
        }
    }
    return true;
}

JsonNode *qmp_dispatch(const char *name, JsonObject *args, Error **errp)
{
    const QmpCommandInfo *cmd = qmp_command_find(name);
    if (!cmd) {
        error_set(errp, ERROR_CLASS_COMMAND_NOT_FOUND, "The command %s has not been found", name);
        return NULL;
    }
    return qmp_dispatch_command(cmd, args, errp);
}

JsonNode *qmp_dispatch_command(const QmpCommandInfo *cmd, JsonObject *args, Error **errp)
{
    g_autoptr(JsonObject) none = args ? NULL : json_object_new();
    if (!args) {
        args = none;
    }
    if (!check_args(cmd, args, errp)) {
        return NULL;
    }
    Error *err = NULL;
    JsonNode *ret = cmd->fn(args, &err);
    if (err) {
        g_assert(!ret);
        error_propagate(errp, err);
        return NULL;
    }
    return ret ? ret : qmp_node_object(json_object_new());
}

JsonNode *qmp_node_object(JsonObject *obj)
{
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, obj);
    return node;
}

JsonNode *qmp_node_array(JsonArray *arr)
{
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);
    json_node_take_array(node, arr);
    return node;
}

const char *qmp_arg_str(JsonObject *args, const char *name)
{
    JsonNode *node = json_object_get_member(args, name);
    return node ? json_node_get_string(node) : NULL;
}

bool qmp_arg_bool(JsonObject *args, const char *name, bool dflt)
{
    JsonNode *node = json_object_get_member(args, name);
    return node ? json_node_get_boolean(node) : dflt;
}

int64_t qmp_arg_int(JsonObject *args, const char *name, int64_t dflt)
{
    JsonNode *node = json_object_get_member(args, name);
    return node ? json_node_get_int(node) : dflt;
}
