/*
 * The QMP dispatcher (monitor/qmp.h): argument rules checked with QEMU's
 * messages before a handler runs, error classes, the command list and the
 * event fan-out.
 */
#include <string.h>
#include <glib.h>
#include "monitor/qmp.h"

static int handler_calls;

static JsonNode *echo_handler(JsonObject *args, Error **errp)
{
    handler_calls++;
    const char *device = qmp_arg_str(args, "device");
    if (!strcmp(device, "missing")) {
        error_set(errp, ERROR_CLASS_DEVICE_NOT_FOUND, "Device '%s' not found", device);
        return NULL;
    }
    JsonObject *ret = json_object_new();
    json_object_set_string_member(ret, "device", device);
    json_object_set_boolean_member(ret, "force", qmp_arg_bool(args, "force", false));
    json_object_set_int_member(ret, "count", qmp_arg_int(args, "count", 7));
    return qmp_node_object(ret);
}

static const QmpCommandInfo echo_command = {
    "x-echo", echo_handler, "device:s,force:b?,count:i?,ratio:n?,opts:o?,list:a?,any:v?",
};

static JsonObject *parse_object(const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(parser, text, -1, NULL));
    return json_object_ref(json_node_get_object(json_parser_get_root(parser)));
}

/* Run x-echo with args given as JSON text; the error message (or NULL). */
static char *call_echo(const char *args_json, JsonNode **ret)
{
    g_autoptr(JsonObject) args = parse_object(args_json);
    Error *err = NULL;
    *ret = qmp_dispatch_command(&echo_command, args, &err);
    g_assert_true((*ret == NULL) == (err != NULL));
    if (!err) {
        return NULL;
    }
    g_assert_cmpint(err->cls, ==, ERROR_CLASS_GENERIC_ERROR);
    char *msg = g_strdup(err->msg);
    error_free(err);
    return msg;
}

static void test_arguments_checked_before_the_handler(void)
{
    static const struct {
        const char *args, *msg;
    } bad[] = {
        { "{}", "Parameter 'device' is missing" },
        { "{\"device\": 3}", "Invalid parameter type for 'device', expected: string" },
        { "{\"device\": \"d\", \"force\": \"yes\"}",
          "Invalid parameter type for 'force', expected: boolean" },
        { "{\"device\": \"d\", \"count\": 1.5}",
          "Invalid parameter type for 'count', expected: integer" },
        { "{\"device\": \"d\", \"ratio\": true}",
          "Invalid parameter type for 'ratio', expected: number" },
        { "{\"device\": \"d\", \"opts\": []}", "Invalid parameter type for 'opts', expected: object" },
        { "{\"device\": \"d\", \"list\": {}}", "Invalid parameter type for 'list', expected: array" },
        { "{\"device\": \"d\", \"colour\": 1}", "Parameter 'colour' is unexpected" },
        { "{\"device\": null}", "Invalid parameter type for 'device', expected: string" },
    };
    handler_calls = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        JsonNode *ret;
        g_autofree char *msg = call_echo(bad[i].args, &ret);
        g_assert_cmpstr(msg, ==, bad[i].msg);
    }
    g_assert_cmpint(handler_calls, ==, 0);
}

static void test_good_call_reaches_the_handler_with_defaults(void)
{
    JsonNode *ret;
    g_assert_null(call_echo("{\"device\": \"ide0\", \"ratio\": 2, \"any\": [1], \"opts\": {}}", &ret));
    JsonObject *o = json_node_get_object(ret);
    g_assert_cmpstr(json_object_get_string_member(o, "device"), ==, "ide0");
    g_assert_false(json_object_get_boolean_member(o, "force"));
    g_assert_cmpint(json_object_get_int_member(o, "count"), ==, 7);
    json_node_unref(ret);

    g_assert_null(call_echo("{\"device\": \"ide0\", \"force\": true, \"count\": -3}", &ret));
    o = json_node_get_object(ret);
    g_assert_true(json_object_get_boolean_member(o, "force"));
    g_assert_cmpint(json_object_get_int_member(o, "count"), ==, -3);
    json_node_unref(ret);
}

static void test_handler_error_keeps_its_class(void)
{
    g_autoptr(JsonObject) args = parse_object("{\"device\": \"missing\"}");
    Error *err = NULL;
    g_assert_null(qmp_dispatch_command(&echo_command, args, &err));
    g_assert_cmpint(err->cls, ==, ERROR_CLASS_DEVICE_NOT_FOUND);
    g_assert_cmpstr(error_class_name(err->cls), ==, "DeviceNotFound");
    g_assert_cmpstr(err->msg, ==, "Device 'missing' not found");
    error_free(err);
}

static void test_unknown_command_is_command_not_found(void)
{
    Error *err = NULL;
    g_assert_null(qmp_dispatch("no-such-command", NULL, &err));
    g_assert_cmpint(err->cls, ==, ERROR_CLASS_COMMAND_NOT_FOUND);
    g_assert_cmpstr(error_class_name(err->cls), ==, "CommandNotFound");
    g_assert_cmpstr(err->msg, ==, "The command no-such-command has not been found");
    error_free(err);
}

static void test_query_commands_lists_every_command_once(void)
{
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch("query-commands", NULL, &err);
    g_assert_null(err);
    JsonArray *list = json_node_get_array(ret);
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < json_array_get_length(list); i++) {
        const char *name = json_object_get_string_member(json_array_get_object_element(list, i),
                                                         "name");
        g_assert_nonnull(qmp_command_find(name));
        g_assert_true(g_hash_table_add(seen, (gpointer)name));
    }
    g_assert_true(g_hash_table_contains(seen, "query-commands"));
    json_node_unref(ret);

    /* Arguments it does not take are refused like any other command's. */
    g_autoptr(JsonObject) args = parse_object("{\"verbose\": true}");
    g_assert_null(qmp_dispatch("query-commands", args, &err));
    g_assert_cmpstr(err->msg, ==, "Parameter 'verbose' is unexpected");
    error_free(err);
}

typedef struct SeenEvents {
    GString *log;
} SeenEvents;

static void record_event(const char *name, JsonObject *data, int64_t timestamp_us, void *opaque)
{
    SeenEvents *seen = opaque;
    g_assert_cmpint(timestamp_us, >, 0);
    g_string_append_printf(seen->log, "%s(%u);", name, json_object_get_size(data));
}

static void test_events_reach_every_sink_in_order(void)
{
    SeenEvents a = { g_string_new("") }, b = { g_string_new("") };
    qmp_event_add_sink(record_event, &a);
    qmp_event_add_sink(record_event, &b);
    qmp_event_send("STOP", NULL);
    JsonObject *data = json_object_new();
    json_object_set_boolean_member(data, "guest", true);
    json_object_set_string_member(data, "reason", "guest-shutdown");
    qmp_event_send("SHUTDOWN", data);
    qmp_event_remove_sink(record_event, &a);
    qmp_event_send("RESUME", NULL);
    qmp_event_remove_sink(record_event, &b);
    qmp_event_send("RESET", NULL);
    g_assert_cmpstr(a.log->str, ==, "STOP(0);SHUTDOWN(2);");
    g_assert_cmpstr(b.log->str, ==, "STOP(0);SHUTDOWN(2);RESUME(0);");
    g_string_free(a.log, true);
    g_string_free(b.log, true);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/arguments-checked-before-the-handler",
                    test_arguments_checked_before_the_handler);
    g_test_add_func("/qmp/good-call-reaches-the-handler-with-defaults",
                    test_good_call_reaches_the_handler_with_defaults);
    g_test_add_func("/qmp/handler-error-keeps-its-class", test_handler_error_keeps_its_class);
    g_test_add_func("/qmp/unknown-command-is-command-not-found",
                    test_unknown_command_is_command_not_found);
    g_test_add_func("/qmp/query-commands-lists-every-command-once",
                    test_query_commands_lists_every_command_once);
    g_test_add_func("/qmp/events-reach-every-sink-in-order", test_events_reach_every_sink_in_order);
    return g_test_run();
}
