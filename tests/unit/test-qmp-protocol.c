/*
 * QMP's wire format (monitor/qmp-protocol.h): the input splitter fed in
 * every chunking down to single bytes, the request checks with QEMU 7.2's
 * messages (compared with Debian's QEMU), and the JSON writer's spacing,
 * escapes and pretty layout.
 */
#include <string.h>
#include <glib.h>
#include "monitor/qmp-protocol.h"

/* What the splitter emitted: texts as they were, errors as "ERR:msg". */
static void collect(void *opaque, const char *text, size_t len, Error *err)
{
    GPtrArray *out = opaque;
    if (err) {
        g_ptr_array_add(out, g_strdup_printf("ERR:%s", err->msg));
        error_free(err);
    } else {
        g_ptr_array_add(out, g_strndup(text, len));
    }
}

/* Split input fed in chunks of `chunk` bytes (0: all at once). */
static GPtrArray *split(const char *input, size_t len, size_t chunk)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    JsonSplitter *s = json_splitter_new(collect, out);
    size_t step = chunk ? chunk : len;
    for (size_t i = 0; i < len; i += step) {
        json_splitter_feed(s, (const uint8_t *)input + i, MIN(step, len - i));
    }
    json_splitter_free(s);
    return out;
}

/* input gives exactly `expected` (NULL-terminated) whatever the chunking. */
static void assert_split(const char *input, const char *const *expected)
{
    static const size_t chunks[] = { 0, 1, 2, 3, 7 };
    for (size_t c = 0; c < G_N_ELEMENTS(chunks); c++) {
        g_autoptr(GPtrArray) out = split(input, strlen(input), chunks[c]);
        guint n = g_strv_length((char **)expected);
        g_assert_cmpuint(out->len, ==, n);
        for (guint i = 0; i < n; i++) {
            g_assert_cmpstr(g_ptr_array_index(out, i), ==, expected[i]);
        }
    }
}

static void test_split_objects_and_whitespace(void)
{
    assert_split(" {\"a\": 1}\r\n\t[1, [2]]  {}",
                 (const char *const[]) { "{\"a\": 1}", "[1, [2]]", "{}", NULL });
}

static void test_split_braces_in_strings(void)
{
    /* Braces, brackets and escaped quotes inside strings count for nothing. */
    assert_split("{\"id\": \"}{][\\\"}\", \"x\": \"\\\\\"}{\"b\": \"\\u007b\"}",
                 (const char *const[]) { "{\"id\": \"}{][\\\"}\", \"x\": \"\\\\\"}",
                                         "{\"b\": \"\\u007b\"}", NULL });
}

static void test_split_single_quotes(void)
{
    /* QEMU's single-quoted strings come out as standard JSON. */
    assert_split("{'a': 'it\\'s \"x\"'}",
                 (const char *const[]) { "{\"a\": \"it's \\\"x\\\"\"}", NULL });
}

static void test_split_scalars(void)
{
    /* A scalar ends with the byte after it, which may start the next value. */
    assert_split("123 \"s\" nul{}true[]",
                 (const char *const[]) { "123", "\"s\"", "nul", "{}", "true", "[]", NULL });
    /* Not yet ended: nothing. */
    assert_split("123", (const char *const[]) { NULL });
    assert_split("{\"a\": [1, {", (const char *const[]) { NULL });
}

static void test_split_stray_bytes(void)
{
    /* As QEMU: after a stray byte, everything up to the next '{' or '['
     * is skipped, in a value or between values. */
    assert_split("}\x01] nul {}",
                 (const char *const[]) { "ERR:JSON parse error, expecting value",
                                         "ERR:JSON parse error, stray '\x01'", "{}", NULL });
    assert_split("{\"a\": \x02} 12 [1]",
                 (const char *const[]) { "ERR:JSON parse error, stray '\x02'", "[1]", NULL });
    /* Inside a string any byte is the string's, bar control characters. */
    assert_split("{\"a\": \"\x7f#\"}",
                 (const char *const[]) { "{\"a\": \"\x7f#\"}", NULL });
    assert_split("{\"a\": \"x\ty\"} {}",
                 (const char *const[]) { "ERR:JSON parse error, stray '\t'", "{}", NULL });
}

static void test_split_integers_outside_int64(void)
{
    /* json-glib would wrap these around; as floating-point numbers they
     * keep their magnitude, as QEMU reads the negative one. */
    assert_split("[9223372036854775807, -9223372036854775808, 9223372036854775808, "
                 "-9223372036854775809, 1e3, 18446744073709551615]",
                 (const char *const[]) { "[9223372036854775807, -9223372036854775808, "
                                         "9223372036854775808.0, -9223372036854775809.0, "
                                         "1e3, 18446744073709551615.0]", NULL });
}

static void test_split_nesting_limit(void)
{
    GString *deep = g_string_new(NULL);
    for (int i = 0; i < JSON_MESSAGE_MAX_DEPTH + 10; i++) {
        g_string_append_c(deep, '[');
    }
    for (int i = 0; i < JSON_MESSAGE_MAX_DEPTH + 10; i++) {
        g_string_append_c(deep, ']');
    }
    g_string_append(deep, "{\"after\": 1}");
    g_autoptr(GPtrArray) out = split(deep->str, deep->len, 4096);
    /* One error for the whole value, then the next message is intact. */
    g_assert_cmpuint(out->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(out, 0), ==, "ERR:JSON nesting depth limit exceeded");
    g_assert_cmpstr(g_ptr_array_index(out, 1), ==, "{\"after\": 1}");
    g_string_free(deep, true);

    /* At the limit itself the value passes. */
    GString *ok = g_string_new(NULL);
    for (int i = 0; i < JSON_MESSAGE_MAX_DEPTH; i++) {
        g_string_append_c(ok, '[');
    }
    for (int i = 0; i < JSON_MESSAGE_MAX_DEPTH; i++) {
        g_string_append_c(ok, ']');
    }
    g_autoptr(GPtrArray) out2 = split(ok->str, ok->len, 0);
    g_assert_cmpuint(out2->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(out2, 0), ==, ok->str);
    g_string_free(ok, true);
}

static void test_split_size_limit(void)
{
    /* Just over 64 MiB in one string, then a small message. */
    g_autofree char *filler = g_strnfill(JSON_MESSAGE_MAX_SIZE + 6, 'A');
    g_autofree char *input = g_strconcat("{\"id\": \"", filler, "\"}{\"n\": 2}", NULL);
    g_autoptr(GPtrArray) out = split(input, strlen(input), 1 << 20);
    g_assert_cmpuint(out->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(out, 0), ==, "ERR:JSON token size limit exceeded");
    g_assert_cmpstr(g_ptr_array_index(out, 1), ==, "{\"n\": 2}");
}

/* [1,1,...] with n ones inside {"id": ...}: 2n + 5 tokens. */
static GString *array_message(size_t n)
{
    GString *msg = g_string_new("{\"id\": [1");
    for (size_t i = 1; i < n; i++) {
        g_string_append(msg, ",1");
    }
    g_string_append(msg, "]}");
    return msg;
}

static void test_split_token_limit(void)
{
    /* Exactly QEMU's limit passes, one token more does not (the boundary
     * was measured against Debian's QEMU). */
    size_t n = (JSON_MESSAGE_MAX_TOKENS - 5) / 2;
    g_autoptr(GString) at = array_message(n);
    g_autoptr(GString) over = array_message(n + 1);
    g_string_append(over, "{}");
    g_autoptr(GPtrArray) ok = split(at->str, at->len, 65536);
    g_assert_cmpuint(ok->len, ==, 1);
    g_assert_cmpuint(strlen(g_ptr_array_index(ok, 0)), ==, at->len);
    g_autoptr(GPtrArray) out = split(over->str, over->len, 65536);
    g_assert_cmpuint(out->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(out, 0), ==, "ERR:JSON token count limit exceeded");
    g_assert_cmpstr(g_ptr_array_index(out, 1), ==, "{}");
}

static void test_split_reset_drops_partial(void)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);
    JsonSplitter *s = json_splitter_new(collect, out);
    json_splitter_feed(s, (const uint8_t *)"{\"execute\": \"q", 14);
    json_splitter_reset(s);
    json_splitter_feed(s, (const uint8_t *)"{}", 2);
    json_splitter_free(s);
    g_assert_cmpuint(out->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(out, 0), ==, "{}");
}

/* ---- requests ---- */

/* The refusal of text as a request (NULL: accepted). */
static char *request_error(const char *text, bool allow_oob, QmpRequest *req)
{
    Error *err = NULL;
    if (qmp_request_parse(text, strlen(text), allow_oob, req, &err)) {
        return NULL;
    }
    g_assert_cmpint(err->cls, ==, ERROR_CLASS_GENERIC_ERROR);
    char *msg = g_strdup(err->msg);
    error_free(err);
    return msg;
}

static void assert_refused(const char *text, const char *message)
{
    QmpRequest req;
    g_autofree char *msg = request_error(text, false, &req);
    g_assert_cmpstr(msg, ==, message);
    qmp_request_clear(&req);
}

static void test_request_refusals(void)
{
    assert_refused("[1, 2]", "QMP input must be a JSON object");
    assert_refused("\"str\"", "QMP input must be a JSON object");
    assert_refused("123", "QMP input must be a JSON object");
    assert_refused("nul", "JSON parse error, invalid keyword 'nul'");
    assert_refused("{\"foo\": 1}", "QMP input member 'foo' is unexpected");
    assert_refused("{\"execute\": 1}", "QMP input member 'execute' must be a string");
    assert_refused("{\"execute\": \"x\", \"arguments\": []}",
                   "QMP input member 'arguments' must be an object");
    assert_refused("{\"execute\": \"x\", \"arguments\": null}",
                   "QMP input member 'arguments' must be an object");
    assert_refused("{\"id\": 5}", "QMP input lacks member 'execute'");
    assert_refused("{\"execute\": \"x\", \"control\": {}}",
                   "QMP input member 'control' is unexpected");
    /* Without the oob capability exec-oob is just another member. */
    assert_refused("{\"exec-oob\": \"x\"}", "QMP input member 'exec-oob' is unexpected");
    assert_refused("{\"execute\": \"x\", \"id\": {\"a\": 1, \"a\": 2}}",
                   "JSON parse error, duplicate key");
}

static void test_request_parse_error(void)
{
    QmpRequest req;
    g_autofree char *msg = request_error("{\"execute\": tru}", false, &req);
    g_assert_true(g_str_has_prefix(msg, "JSON parse error, "));
    g_assert_null(req.id);
}

static void test_request_id_kept_on_refusal(void)
{
    QmpRequest req;
    g_autofree char *msg = request_error("{\"foo\": 1, \"id\": [1, {\"a\": null}]}", false,
                                         &req);
    g_assert_cmpstr(msg, ==, "QMP input member 'foo' is unexpected");
    g_assert_nonnull(req.id);
    g_assert_true(JSON_NODE_HOLDS_ARRAY(req.id));
    qmp_request_clear(&req);
}

static void test_request_accepted(void)
{
    QmpRequest req;
    g_assert_null(request_error("{\"execute\": \"query-x\", \"arguments\": {\"a\": 1}, "
                                "\"id\": \"i\"}", false, &req));
    g_assert_cmpstr(req.command, ==, "query-x");
    g_assert_cmpint(json_object_get_int_member(req.args, "a"), ==, 1);
    g_assert_cmpstr(json_node_get_string(req.id), ==, "i");
    g_assert_false(req.oob);
    qmp_request_clear(&req);

    g_assert_null(request_error("{\"exec-oob\": \"query-x\"}", true, &req));
    g_assert_true(req.oob);
    g_assert_null(req.args);
    qmp_request_clear(&req);

    g_autofree char *clash = request_error("{\"exec-oob\": \"a\", \"execute\": \"a\"}", true,
                                           &req);
    g_assert_cmpstr(clash, ==, "QMP input member 'execute' clashes with 'exec-oob'");
    qmp_request_clear(&req);
}

/* ---- the writer ---- */

static char *write_json(const char *text, bool pretty)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(parser, text, -1, NULL));
    GString *out = g_string_new(NULL);
    qmp_json_append(out, json_parser_get_root(parser), pretty, "\n");
    return g_string_free(out, false);
}

static void test_writer_compact(void)
{
    g_autofree char *s = write_json("{\"return\":{},\"id\":[1,2.5,true,null,\"x\"]}", false);
    g_assert_cmpstr(s, ==, "{\"return\": {}, \"id\": [1, 2.5, true, null, \"x\"]}");
    g_autofree char *n = write_json("[1.5e3, 0.1]", false);
    g_assert_cmpstr(n, ==, "[1500, 0.10000000000000001]");
}

static void test_writer_escapes(void)
{
    /* As Debian's QEMU echoes the id "é/\n\x7f😀". */
    g_autofree char *s = write_json("[\"\xc3\xa9/\\n\x7f\xf0\x9f\x98\x80\\\"\\\\\\t\"]", false);
    g_assert_cmpstr(s, ==, "[\"\\u00E9/\\n\\u007F\\uD83D\\uDE00\\\"\\\\\\t\"]");
}

static void test_writer_pretty(void)
{
    g_autofree char *s = write_json("{\"return\": {}, \"id\": [1, {\"a\": 2}]}", true);
    g_assert_cmpstr(s, ==,
                    "{\n"
                    "    \"return\": {\n"
                    "    },\n"
                    "    \"id\": [\n"
                    "        1,\n"
                    "        {\n"
                    "            \"a\": 2\n"
                    "        }\n"
                    "    ]\n"
                    "}");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp-protocol/split/objects-whitespace", test_split_objects_and_whitespace);
    g_test_add_func("/qmp-protocol/split/braces-in-strings", test_split_braces_in_strings);
    g_test_add_func("/qmp-protocol/split/single-quotes", test_split_single_quotes);
    g_test_add_func("/qmp-protocol/split/scalars", test_split_scalars);
    g_test_add_func("/qmp-protocol/split/stray-bytes", test_split_stray_bytes);
    g_test_add_func("/qmp-protocol/split/integers-outside-int64",
                    test_split_integers_outside_int64);
    g_test_add_func("/qmp-protocol/split/nesting-limit", test_split_nesting_limit);
    g_test_add_func("/qmp-protocol/split/size-limit", test_split_size_limit);
    g_test_add_func("/qmp-protocol/split/token-limit", test_split_token_limit);
    g_test_add_func("/qmp-protocol/split/reset", test_split_reset_drops_partial);
    g_test_add_func("/qmp-protocol/request/refusals", test_request_refusals);
    g_test_add_func("/qmp-protocol/request/parse-error", test_request_parse_error);
    g_test_add_func("/qmp-protocol/request/id-on-refusal", test_request_id_kept_on_refusal);
    g_test_add_func("/qmp-protocol/request/accepted", test_request_accepted);
    g_test_add_func("/qmp-protocol/writer/compact", test_writer_compact);
    g_test_add_func("/qmp-protocol/writer/escapes", test_writer_escapes);
    g_test_add_func("/qmp-protocol/writer/pretty", test_writer_pretty);
    return g_test_run();
}
