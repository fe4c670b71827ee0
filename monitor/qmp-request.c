/*
 * One QMP request, parsed and checked before anything looks at the command
 * (monitor/qmp-protocol.h). The messages are QEMU 7.2's, compared with
 * Debian's qemu-system-x86_64 one by one; so is the order of the checks:
 * JSON, then the members, then what is missing.
 */
#include <string.h>
#include "monitor/qmp-protocol.h"

void qmp_request_clear(QmpRequest *req)
{
    g_free(req->command);
    g_clear_pointer(&req->args, json_object_unref);
    g_clear_pointer(&req->id, json_node_unref);
    memset(req, 0, sizeof(*req));
}

/* json-glib's "<data>:1:9: Parse error: unexpected ..." as QEMU words
 * parse errors: "JSON parse error, unexpected ...". */
static void set_parse_error(Error **errp, const char *message)
{
    const char *p = strstr(message, "Parse error: ");
    p = p ? p + strlen("Parse error: ") : message;
    g_autofree char *lower = g_strdup(p);
    if (g_ascii_islower(lower[1])) {    /* "Unexpected", not "JSON" */
        lower[0] = g_ascii_tolower(lower[0]);
    }
    error_setg(errp, "JSON parse error, %s", lower);
}

/* json-glib keeps the last of two members with one name; QEMU refuses the
 * message. Each member parsed is noted as "object/name". */
static void note_member(JsonParser *parser, JsonObject *object, const char *name,
                        gpointer opaque)
{
    GHashTable *seen = opaque;
    char *key = g_strdup_printf("%p/%s", (void *)object, name);
    if (!g_hash_table_add(seen, key)) {
        g_hash_table_add(seen, g_strdup("duplicate"));
    }
}

static JsonNode *parse_json(const char *text, size_t len, Error **errp)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_signal_connect(parser, "object-member", G_CALLBACK(note_member), seen);
    GError *gerr = NULL;
    if (!json_parser_load_from_data(parser, text, len, &gerr)) {
        set_parse_error(errp, gerr->message);
        g_error_free(gerr);
        return NULL;
    }
    if (g_hash_table_contains(seen, "duplicate")) {
        error_setg(errp, "JSON parse error, duplicate key");
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    return root ? json_node_ref(root) : NULL;
}

/* A lone word that is not a JSON keyword: QEMU's lexer rejects it by name. */
static bool is_invalid_keyword(const char *text, size_t len)
{
    if (!len || !g_ascii_isalpha(text[0])) {
        return false;
    }
    static const char *const keywords[] = { "true", "false", "null" };
    for (size_t i = 0; i < G_N_ELEMENTS(keywords); i++) {
        if (len == strlen(keywords[i]) && !memcmp(text, keywords[i], len)) {
            return false;
        }
    }
    return true;
}

static bool check_member(const char *name, JsonNode *value, bool allow_oob, Error **errp)
{
    if (!strcmp(name, "execute") || (allow_oob && !strcmp(name, "exec-oob"))) {
        if (!JSON_NODE_HOLDS_VALUE(value) || json_node_get_value_type(value) != G_TYPE_STRING) {
            error_setg(errp, "QMP input member '%s' must be a string", name);
            return false;
        }
    } else if (!strcmp(name, "arguments")) {
        if (!JSON_NODE_HOLDS_OBJECT(value)) {
            error_setg(errp, "QMP input member 'arguments' must be an object");
            return false;
        }
    } else if (strcmp(name, "id") != 0) {
        error_setg(errp, "QMP input member '%s' is unexpected", name);
        return false;
    }
    return true;
}

static bool check_request(JsonObject *obj, bool allow_oob, QmpRequest *req, Error **errp)
{
    g_autoptr(GList) members = json_object_get_members(obj);
    for (GList *m = members; m; m = m->next) {
        if (!check_member(m->data, json_object_get_member(obj, m->data), allow_oob, errp)) {
            return false;
        }
    }
    const char *execute = json_object_get_string_member_with_default(obj, "execute", NULL);
    const char *exec_oob = allow_oob ?
        json_object_get_string_member_with_default(obj, "exec-oob", NULL) : NULL;
    if (execute && exec_oob) {
        error_setg(errp, "QMP input member 'execute' clashes with 'exec-oob'");
        return false;
    }
    if (!execute && !exec_oob) {
        error_setg(errp, "QMP input lacks member 'execute'");
        return false;
    }
    req->command = g_strdup(execute ? execute : exec_oob);
    req->oob = exec_oob != NULL;
    if (json_object_has_member(obj, "arguments")) {
        req->args = json_object_ref(json_object_get_object_member(obj, "arguments"));
    }
    return true;
}

bool qmp_request_parse(const char *text, size_t len, bool allow_oob, QmpRequest *req,
                       Error **errp)
{
    memset(req, 0, sizeof(*req));
    if (is_invalid_keyword(text, len)) {
        g_autofree char *word = g_strndup(text, len);
        error_setg(errp, "JSON parse error, invalid keyword '%s'", word);
        return false;
    }
    g_autoptr(JsonNode) root = parse_json(text, len, errp);
    if (!root) {
        return false;
    }
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        error_setg(errp, "QMP input must be a JSON object");
        return false;
    }
    JsonObject *obj = json_node_get_object(root);
    JsonNode *id = json_object_get_member(obj, "id");
    req->id = id ? json_node_copy(id) : NULL;
    return check_request(obj, allow_oob, req, errp);
}
