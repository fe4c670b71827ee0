/*
 * JSON text as QEMU's QMP writes it (monitor/qmp-protocol.h), so a client
 * that compares bytes, or a person reading a log, sees the same thing from
 * both: {"a": 1, "b": [2, 3]}, strings ASCII-only with \uXXXX escapes
 * (upper-case hex, surrogate pairs above U+FFFF), numbers with 17
 * significant digits. json-glib's own generator spaces and escapes
 * differently.
 */
#include <stdio.h>
#include "monitor/qmp-protocol.h"

static void append_escaped_unit(GString *out, gunichar unit)
{
    g_string_append_printf(out, "\\u%04X", unit);
}

static void append_string(GString *out, const char *str)
{
    g_string_append_c(out, '"');
    for (const char *p = str; *p;) {
        gunichar c = g_utf8_get_char_validated(p, -1);
        if (c == (gunichar)-1 || c == (gunichar)-2) {
            /* Not UTF-8 (a stray byte quoted in an error): the
             * replacement character, one byte consumed. */
            append_escaped_unit(out, 0xFFFD);
            p++;
            continue;
        }
        p = g_utf8_next_char(p);
        switch (c) {
        case '"':  g_string_append(out, "\\\""); break;
        case '\\': g_string_append(out, "\\\\"); break;
        case '\b': g_string_append(out, "\\b"); break;
        case '\f': g_string_append(out, "\\f"); break;
        case '\n': g_string_append(out, "\\n"); break;
        case '\r': g_string_append(out, "\\r"); break;
        case '\t': g_string_append(out, "\\t"); break;
        default:
            if (c >= 0x20 && c < 0x7f) {
                g_string_append_c(out, (char)c);
            } else if (c > 0xFFFF) {
                c -= 0x10000;
                append_escaped_unit(out, 0xD800 | (c >> 10));
                append_escaped_unit(out, 0xDC00 | (c & 0x3FF));
            } else {
                append_escaped_unit(out, c);
            }
        }
    }
    g_string_append_c(out, '"');
}

static void append_scalar(GString *out, JsonNode *node)
{
    if (JSON_NODE_HOLDS_NULL(node)) {
        g_string_append(out, "null");
        return;
    }
    switch (json_node_get_value_type(node)) {
    case G_TYPE_STRING:
        append_string(out, json_node_get_string(node));
        break;
    case G_TYPE_BOOLEAN:
        g_string_append(out, json_node_get_boolean(node) ? "true" : "false");
        break;
    case G_TYPE_DOUBLE: {
        char num[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(num, sizeof(num), "%.17g", json_node_get_double(node));
        g_string_append(out, num);
        break;
    }
    default:
        g_string_append_printf(out, "%" G_GINT64_FORMAT, json_node_get_int(node));
        break;
    }
}

typedef struct Writer {
    GString *out;
    bool pretty;
    const char *newline;
} Writer;

static void write_node(Writer *w, JsonNode *node, unsigned level);

/* Before an item of a container at level: a comma after the first, then
 * in pretty mode a new line indented one step deeper. */
static void item_separator(Writer *w, bool first, unsigned level)
{
    if (!first) {
        g_string_append_c(w->out, ',');
    }
    if (w->pretty) {
        g_string_append(w->out, w->newline);
        g_string_append_printf(w->out, "%*s", (int)(level + 1) * 4, "");
    } else if (!first) {
        g_string_append_c(w->out, ' ');
    }
}

/* QEMU closes even an empty container on its own line when pretty. */
static void close_container(Writer *w, char close, unsigned level)
{
    if (w->pretty) {
        g_string_append(w->out, w->newline);
        g_string_append_printf(w->out, "%*s", (int)level * 4, "");
    }
    g_string_append_c(w->out, close);
}

static void write_object(Writer *w, JsonObject *obj, unsigned level)
{
    g_string_append_c(w->out, '{');
    g_autoptr(GList) members = json_object_get_members(obj);
    for (GList *m = members; m; m = m->next) {
        item_separator(w, m == members, level);
        append_string(w->out, m->data);
        g_string_append(w->out, ": ");
        write_node(w, json_object_get_member(obj, m->data), level + 1);
    }
    close_container(w, '}', level);
}

static void write_array(Writer *w, JsonArray *arr, unsigned level)
{
    g_string_append_c(w->out, '[');
    for (guint i = 0; i < json_array_get_length(arr); i++) {
        item_separator(w, i == 0, level);
        write_node(w, json_array_get_element(arr, i), level + 1);
    }
    close_container(w, ']', level);
}

static void write_node(Writer *w, JsonNode *node, unsigned level)
{
    if (JSON_NODE_HOLDS_OBJECT(node)) {
        write_object(w, json_node_get_object(node), level);
    } else if (JSON_NODE_HOLDS_ARRAY(node)) {
        write_array(w, json_node_get_array(node), level);
    } else {
        append_scalar(w->out, node);
    }
}

void qmp_json_append(GString *out, JsonNode *node, bool pretty, const char *newline)
{
    Writer w = { out, pretty, newline };
    write_node(&w, node, 0);
}
