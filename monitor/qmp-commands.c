/*
 * Every QMP command table (monitor/qmp.h). A file that adds commands
 * declares its table in monitor/qmp-tables.h and adds one line here.
 * query-commands lives here because it reads this list.
 */
#include "monitor/qmp.h"
#include "monitor/qmp-tables.h"

typedef struct CommandListBuilder {
    JsonArray *list;
} CommandListBuilder;

static void add_command_name(const QmpCommandInfo *cmd, void *opaque)
{
    CommandListBuilder *b = opaque;
    JsonObject *entry = json_object_new();
    json_object_set_string_member(entry, "name", cmd->name);
    json_array_add_object_element(b->list, entry);
}

static JsonNode *qmp_query_commands(JsonObject *args, Error **errp)
{
    CommandListBuilder b = { json_array_new() };
    qmp_command_foreach(add_command_name, &b);
    return qmp_node_array(b.list);
}

static const QmpCommandInfo introspection_commands[] = {
    { "query-commands", qmp_query_commands },
    { NULL },
};

const QmpCommandInfo *const qmp_command_tables[] = {
    introspection_commands,
    device_lock_qmp_commands,
    pci_qmp_commands,
    chardev_qmp_commands,
    iothread_qmp_commands,
    net_qmp_commands,
    hmp_qmp_commands,
    vm_name_qmp_commands,
    qmp_server_qmp_commands,
    runstate_qmp_commands,
    kvm_qmp_commands,
    block_qmp_commands,
};

const size_t qmp_command_tables_count = G_N_ELEMENTS(qmp_command_tables);
