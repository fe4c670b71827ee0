/*
 * The run-state commands of QMP (QEMU 7.2's answers): stop, cont,
 * system_reset, system_powerdown, quit and query-status. They run on the
 * I/O thread; the ones that reset, power down or quit only post a request,
 * so that the answer goes out first and the main loop acts after it
 * (softmmu/runstate-actions.c), as QEMU does.
 */
#include "monitor/qmp.h"
#include "monitor/qmp-tables.h"
#include "sysemu/runstate.h"

static JsonNode *qmp_stop(JsonObject *args, Error **errp)
{
    vm_stop(RUN_STATE_PAUSED);
    return NULL;
}

static JsonNode *qmp_cont(JsonObject *args, Error **errp)
{
    vm_cont(errp);
    return NULL;
}

static JsonNode *qmp_system_reset(JsonObject *args, Error **errp)
{
    qemu_system_reset_request(SHUTDOWN_CAUSE_HOST_QMP_SYSTEM_RESET);
    return NULL;
}

static JsonNode *qmp_system_powerdown(JsonObject *args, Error **errp)
{
    qemu_system_powerdown_request();
    return NULL;
}

static JsonNode *qmp_quit(JsonObject *args, Error **errp)
{
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_QMP_QUIT);
    return NULL;
}

static JsonNode *qmp_query_status(JsonObject *args, Error **errp)
{
    RunState state = runstate_get();
    JsonObject *ret = json_object_new();
    json_object_set_string_member(ret, "status", runstate_name(state));
    /* QEMU 7.2 still reports TCG's single-step mode; never on with KVM. */
    json_object_set_boolean_member(ret, "singlestep", false);
    json_object_set_boolean_member(ret, "running", state == RUN_STATE_RUNNING);
    return qmp_node_object(ret);
}

const QmpCommandInfo runstate_qmp_commands[] = {
    { "stop", qmp_stop },
    { "cont", qmp_cont },
    { "system_reset", qmp_system_reset },
    { "system_powerdown", qmp_system_powerdown },
    { "quit", qmp_quit },
    { "query-status", qmp_query_status },
    { NULL },
};
