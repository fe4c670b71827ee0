/*
 * The run-state commands and events through qmp_dispatch, on a fake
 * machine that logs what the run-state machine asks of it, with an event
 * sink logging what QMP clients would see. The answers and event order
 * are QEMU 7.2's (checked side by side: tests/functional/
 * test_qmp_runstate.py runs the same scenarios on both VMMs).
 * query-cpus-fast and query-kvm with real vCPUs need /dev/kvm (kvm_pvm
 * will do); that case is skipped without it.
 */
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include "monitor/qmp.h"
#include "sysemu/kvm.h"
#include "qemu/thread-naming.h"
#include "sysemu/runstate.h"

static GString *machine_log;    /* "pause;reset;resume;" */
static GString *event_log;      /* "STOP;RESET{...};" */
static bool reset_fails, wakeup_succeeds;

static void fake_pause(void)
{
    g_string_append(machine_log, "pause;");
}

static void fake_resume(void)
{
    g_string_append(machine_log, "resume;");
}

static bool fake_reset(void)
{
    g_string_append(machine_log, "reset;");
    if (reset_fails) {
        qemu_system_exit_request(1);    /* as pc_power_cycle does */
    }
    return !reset_fails;
}

static bool fake_wakeup(void)
{
    g_string_append(machine_log, "wakeup;");
    return wakeup_succeeds;
}

static void fake_powerdown(void)
{
    g_string_append(machine_log, "powerbutton;");
}

static void log_event(const char *name, JsonObject *data, int64_t timestamp_us, void *opaque)
{
    g_string_append(event_log, name);
    if (json_object_get_size(data)) {
        g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), data);
        g_autofree char *text = json_to_string(node, false);
        g_string_append(event_log, text);
    }
    g_string_append_c(event_log, ';');
}

/* A machine in state, no request pending, empty logs. */
static void machine_in(RunState state)
{
    while (runstate_take_reset_request(NULL) || runstate_take_shutdown_request(NULL, NULL) ||
           runstate_take_powerdown_request() || runstate_take_suspend_request() ||
           runstate_take_wakeup_request()) {
    }
    runstate_set_no_reboot(false);
    runstate_set_no_shutdown(false);
    reset_fails = wakeup_succeeds = false;
    runstate_set(state);
    g_string_truncate(machine_log, 0);
    g_string_truncate(event_log, 0);
}

/* Run a command that must succeed; its answer as JSON text. */
static char *qmp(const char *name)
{
    Error *err = NULL;
    g_autoptr(JsonNode) ret = qmp_dispatch(name, NULL, &err);
    g_assert_null(err);
    return json_to_string(ret, false);
}

static void assert_qmp_empty(const char *name)
{
    g_autofree char *ret = qmp(name);
    g_assert_cmpstr(ret, ==, "{}");
}

/* What the main loop does next; true if the VMM exits. */
static bool main_loop_step(int *exit_status)
{
    *exit_status = -1;
    return runstate_main_loop_should_exit(exit_status);
}

static void assert_logs(const char *machine, const char *events)
{
    g_assert_cmpstr(machine_log->str, ==, machine);
    g_assert_cmpstr(event_log->str, ==, events);
    g_string_truncate(machine_log, 0);
    g_string_truncate(event_log, 0);
}

static void assert_status(const char *expected)
{
    g_autofree char *ret = qmp("query-status");
    g_assert_cmpstr(ret, ==, expected);
}

#define STATUS(s, r) "{\"status\":\"" s "\",\"singlestep\":false,\"running\":" r "}"

static void test_query_status_in_each_state(void)
{
    static const struct {
        RunState state;
        const char *answer;
    } states[] = {
        { RUN_STATE_PRELAUNCH, STATUS("prelaunch", "false") },
        { RUN_STATE_RUNNING, STATUS("running", "true") },
        { RUN_STATE_PAUSED, STATUS("paused", "false") },
        { RUN_STATE_SHUTDOWN, STATUS("shutdown", "false") },
        { RUN_STATE_SUSPENDED, STATUS("suspended", "false") },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(states); i++) {
        machine_in(states[i].state);
        assert_status(states[i].answer);
    }
    /* Arguments it does not take are refused before it runs. */
    g_autoptr(JsonObject) args = json_object_new();
    json_object_set_int_member(args, "x", 1);
    Error *err = NULL;
    g_assert_null(qmp_dispatch("stop", args, &err));
    g_assert_cmpstr(err->msg, ==, "Parameter 'x' is unexpected");
    error_free(err);
    assert_logs("", "");
}

static void test_stop_and_cont(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    assert_qmp_empty("stop");
    assert_logs("pause;", "STOP;");
    assert_status(STATUS("paused", "false"));
    /* Stopping a stopped machine changes nothing and says nothing. */
    assert_qmp_empty("stop");
    assert_logs("", "");

    assert_qmp_empty("cont");
    assert_logs("resume;", "RESUME;");
    assert_status(STATUS("running", "true"));
    assert_qmp_empty("cont");
    assert_logs("", "");
    g_assert_false(main_loop_step(&status));
    assert_logs("", "");
}

/* -S: built and paused in prelaunch; stop keeps it there, cont starts it. */
static void test_prelaunch_waits_for_cont(void)
{
    machine_in(RUN_STATE_PRELAUNCH);
    assert_qmp_empty("stop");
    assert_logs("", "");
    assert_status(STATUS("prelaunch", "false"));
    assert_qmp_empty("cont");
    assert_logs("resume;", "RESUME;");
    assert_status(STATUS("running", "true"));
}

#define HOST_RESET "RESET{\"guest\":false,\"reason\":\"host-qmp-system-reset\"};"

static void test_system_reset(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    /* The answer comes first: nothing happens until the main loop acts. */
    assert_qmp_empty("system_reset");
    g_assert_cmpstr(machine_log->str, ==, "");
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;reset;resume;", HOST_RESET);
    assert_status(STATUS("running", "true"));

    /* The guest's own reset says so. */
    qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;reset;resume;", "RESET{\"guest\":true,\"reason\":\"guest-reset\"};");

    /* Reset while stopped: it stays stopped, in prelaunch, until cont. */
    assert_qmp_empty("stop");
    assert_qmp_empty("system_reset");
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;pause;reset;", "STOP;" HOST_RESET);
    assert_status(STATUS("prelaunch", "false"));
    assert_qmp_empty("cont");
    assert_logs("resume;", "RESUME;");
}

static void test_system_reset_under_no_reboot_shuts_down(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    runstate_set_no_reboot(true);
    assert_qmp_empty("system_reset");
    g_assert_true(main_loop_step(&status));
    g_assert_cmpint(status, ==, 0);
    assert_logs("", "SHUTDOWN{\"guest\":false,\"reason\":\"host-qmp-system-reset\"};");
}

static void test_failed_reset_exits_1(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    reset_fails = true;
    assert_qmp_empty("system_reset");
    g_assert_true(main_loop_step(&status));
    g_assert_cmpint(status, ==, 1);
    assert_logs("pause;reset;", "");
}

static void test_quit(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    assert_qmp_empty("quit");
    g_assert_true(main_loop_step(&status));
    g_assert_cmpint(status, ==, 0);
    assert_logs("", "SHUTDOWN{\"guest\":false,\"reason\":\"host-qmp-quit\"};");
}

/* The power button: the event, the button, and the guest decides. */
static void test_system_powerdown(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    assert_qmp_empty("system_powerdown");
    g_assert_cmpstr(event_log->str, ==, "");
    g_assert_false(main_loop_step(&status));
    assert_logs("powerbutton;", "POWERDOWN;");
    assert_status(STATUS("running", "true"));

    /* A guest that answers with S5. */
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_SHUTDOWN);
    g_assert_true(main_loop_step(&status));
    g_assert_cmpint(status, ==, 0);
    assert_logs("", "SHUTDOWN{\"guest\":true,\"reason\":\"guest-shutdown\"};");
}

#define GUEST_SHUTDOWN "SHUTDOWN{\"guest\":true,\"reason\":\"guest-shutdown\"};"

static void test_no_shutdown(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    runstate_set_no_shutdown(true);
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_GUEST_SHUTDOWN);
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;", GUEST_SHUTDOWN "STOP;");
    assert_status(STATUS("shutdown", "false"));

    /* cont is refused until a reset; the reset leaves it in prelaunch. */
    Error *err = NULL;
    g_assert_null(qmp_dispatch("cont", NULL, &err));
    g_assert_cmpint(err->cls, ==, ERROR_CLASS_GENERIC_ERROR);
    g_assert_cmpstr(err->msg, ==, "Resetting the Virtual Machine is required");
    error_free(err);
    assert_status(STATUS("shutdown", "false"));
    assert_qmp_empty("system_reset");
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;reset;", HOST_RESET);
    assert_status(STATUS("prelaunch", "false"));
    assert_qmp_empty("cont");
    assert_logs("resume;", "RESUME;");

    /* A guest reset under -no-reboot is a shutdown too: stopped. */
    runstate_set_no_reboot(true);
    qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;", "SHUTDOWN{\"guest\":true,\"reason\":\"guest-reset\"};STOP;");

    /* quit and a signal still exit, stopped or not. */
    assert_qmp_empty("quit");
    g_assert_true(main_loop_step(&status));
    g_assert_cmpint(status, ==, 0);
    assert_logs("", "SHUTDOWN{\"guest\":false,\"reason\":\"host-qmp-quit\"};");
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_SIGNAL);
    g_assert_true(main_loop_step(&status));
    assert_logs("", "SHUTDOWN{\"guest\":false,\"reason\":\"host-signal\"};");
}

/* isa-debug-exit and the like: QEMU exits at once, no event, whatever
 * -no-shutdown says. */
static void test_exit_request_has_no_event(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    runstate_set_no_shutdown(true);
    qemu_system_exit_request(7);
    g_assert_true(main_loop_step(&status));
    g_assert_cmpint(status, ==, 7);
    assert_logs("", "");
}

/* What the QMP server's held answer does: logs itself, and the first one
 * queues another, which must wait for the next check. */
static void log_after_requests(void *opaque)
{
    g_string_append_printf(event_log, "after:%s;", (const char *)opaque);
    if (!strcmp(opaque, "quit")) {
        runstate_call_after_requests(log_after_requests, "next");
    }
}

static void test_calls_after_requests(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    assert_qmp_empty("system_reset");
    runstate_call_after_requests(log_after_requests, "system_reset");
    assert_qmp_empty("system_powerdown");
    runstate_call_after_requests(log_after_requests, "system_powerdown");
    assert_logs("", "");
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;reset;resume;powerbutton;",
                "RESET{\"guest\":false,\"reason\":\"host-qmp-system-reset\"};"
                "POWERDOWN;after:system_reset;after:system_powerdown;");
    g_assert_false(main_loop_step(&status));
    assert_logs("", "");

    /* Also on the turn that ends the VMM: quit's answer follows SHUTDOWN. */
    assert_qmp_empty("quit");
    runstate_call_after_requests(log_after_requests, "quit");
    g_assert_true(main_loop_step(&status));
    assert_logs("", "SHUTDOWN{\"guest\":false,\"reason\":\"host-qmp-quit\"};after:quit;");
    g_assert_false(main_loop_step(&status));
    assert_logs("", "after:next;");
}

static void test_suspend_and_wakeup(void)
{
    int status;
    machine_in(RUN_STATE_RUNNING);
    qemu_system_suspend_request();
    g_assert_false(main_loop_step(&status));
    assert_logs("pause;", "SUSPEND;");
    assert_status(STATUS("suspended", "false"));
    /* cont does not wake it (a wake-up event does). */
    assert_qmp_empty("cont");
    assert_logs("", "");

    /* A wake-up the guest did not enable: still suspended. */
    qemu_system_wakeup_request();
    g_assert_false(main_loop_step(&status));
    assert_logs("wakeup;", "");
    assert_status(STATUS("suspended", "false"));

    wakeup_succeeds = true;
    qemu_system_wakeup_request();
    g_assert_false(main_loop_step(&status));
    assert_logs("wakeup;resume;", "WAKEUP;");
    assert_status(STATUS("running", "true"));

    /* A wake-up event while awake means nothing. */
    qemu_system_wakeup_request();
    g_assert_false(main_loop_step(&status));
    assert_logs("", "");
}

/* With real vCPUs on /dev/kvm: QEMU's shape for -smp 2 (cores=2), each
 * thread-id the id of that vCPU's thread in this process. */
static void test_kvm_queries(void)
{
    g_autofree char *kvm_before = qmp("query-kvm");
    g_assert_cmpstr(kvm_before, ==, "{\"enabled\":false,\"present\":true}");
    if (access("/dev/kvm", R_OK | W_OK) != 0) {
        g_test_skip("no /dev/kvm");
        return;
    }
    Error *err = NULL;
    g_assert_true(kvm_init(false, false, &err));
    CpuConfig cpu = { .model = (char *)"qemu64" };
    CpuTopology topo = { .sockets = 1, .cores = 2, .threads = 1 };
    g_assert_true(kvm_create_vcpus(2, &cpu, &topo, &err));
    g_autofree char *before_start = qmp("query-cpus-fast");
    g_assert_nonnull(strstr(before_start, "\"thread-id\":0,\"props\""));
    g_assert_true(kvm_start_vcpus(&err));

    g_autofree char *kvm_after = qmp("query-kvm");
    g_assert_cmpstr(kvm_after, ==, "{\"enabled\":true,\"present\":true}");

    g_autoptr(JsonNode) ret = qmp_dispatch("query-cpus-fast", NULL, &err);
    g_assert_null(err);
    JsonArray *cpus = json_node_get_array(ret);
    g_assert_cmpint(json_array_get_length(cpus), ==, 2);
    int64_t tids[2];
    for (unsigned i = 0; i < 2; i++) {
        JsonObject *c = json_array_get_object_element(cpus, i);
        g_assert_cmpint(json_object_get_size(c), ==, 5);
        tids[i] = json_object_get_int_member(c, "thread-id");
        g_autofree char *props = json_to_string(json_object_get_member(c, "props"), false);
        g_autofree char *want = g_strdup_printf(
            "{\"core-id\":%u,\"thread-id\":0,\"socket-id\":0}", i);
        g_assert_cmpstr(props, ==, want);
        g_autofree char *path = g_strdup_printf("/machine/unattached/device[%u]", i ? 2 : 0);
        g_assert_cmpstr(json_object_get_string_member(c, "qom-path"), ==, path);
        g_assert_cmpint(json_object_get_int_member(c, "cpu-index"), ==, i);
        g_assert_cmpstr(json_object_get_string_member(c, "target"), ==, "x86_64");

        /* The thread is ours and is that vCPU's. */
        g_autofree char *comm_path = g_strdup_printf("/proc/self/task/%" G_GINT64_FORMAT "/comm",
                                                     tids[i]);
        g_autofree char *comm = NULL;
        g_assert_true(g_file_get_contents(comm_path, &comm, NULL, NULL));
        g_autofree char *name = g_strdup_printf("CPU %u/KVM\n", i);
        g_assert_cmpstr(comm, ==, name);
    }
    g_assert_cmpint(tids[0], !=, tids[1]);
    g_assert_cmpint(tids[0], !=, getpid());
    kvm_stop_vcpus();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* As -name debug-threads=on: the vCPU threads' names are checked. */
    thread_naming_enable(true);
    machine_log = g_string_new(NULL);
    event_log = g_string_new(NULL);
    runstate_set_machine_ops(&(MachineRunOps) {
        .pause_vcpus = fake_pause, .resume_vcpus = fake_resume, .reset = fake_reset,
        .wakeup = fake_wakeup, .powerdown = fake_powerdown,
    });
    qmp_event_add_sink(log_event, NULL);
    g_test_add_func("/qmp-runstate/query-status-in-each-state", test_query_status_in_each_state);
    g_test_add_func("/qmp-runstate/stop-and-cont", test_stop_and_cont);
    g_test_add_func("/qmp-runstate/prelaunch-waits-for-cont", test_prelaunch_waits_for_cont);
    g_test_add_func("/qmp-runstate/system-reset", test_system_reset);
    g_test_add_func("/qmp-runstate/system-reset-under-no-reboot-shuts-down",
                    test_system_reset_under_no_reboot_shuts_down);
    g_test_add_func("/qmp-runstate/failed-reset-exits-1", test_failed_reset_exits_1);
    g_test_add_func("/qmp-runstate/quit", test_quit);
    g_test_add_func("/qmp-runstate/system-powerdown", test_system_powerdown);
    g_test_add_func("/qmp-runstate/no-shutdown", test_no_shutdown);
    g_test_add_func("/qmp-runstate/exit-request-has-no-event", test_exit_request_has_no_event);
    g_test_add_func("/qmp-runstate/suspend-and-wakeup", test_suspend_and_wakeup);
    g_test_add_func("/qmp-runstate/calls-after-requests", test_calls_after_requests);
    g_test_add_func("/qmp-runstate/kvm-queries", test_kvm_queries);
    return g_test_run();
}
