/*
 * Start and lifecycle: the locked pid file (util/pidfile.c), -daemonize's
 * handshake (util/daemonize.c), thread names (util/thread-naming.c) and
 * query-name (softmmu/vm-name.c) through the QMP dispatcher.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "monitor/qmp.h"
#include "qemu/pidfile.h"
#include "qemu/thread-naming.h"
#include "sysemu/daemonize.h"
#include "sysemu/vm-name.h"

/* ---- the pid file ---- */

static char *temp_pidfile(char **dir)
{
    *dir = g_dir_make_tmp("test-lifecycle-XXXXXX", NULL);
    g_assert_nonnull(*dir);
    return g_build_filename(*dir, "vm.pid", NULL);
}

#define PIDFILE_ENV "TEST_LIFECYCLE_PIDFILE"

/*
 * In a subprocess of its own (a fresh exec: fcntl locks belong to a
 * process, so this one could always lock its own file again), take the pid
 * file named by PIDFILE_ENV and print what happened.
 */
static void create_in_subprocess(void)
{
    const char *path = g_getenv(PIDFILE_ENV);
    Error *err = NULL;
    if (pidfile_create(path, &err)) {
        printf("created\n");
        pidfile_remove();
        return;
    }
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    printf("%s; the file says %s", err->msg, text);
    error_free(err);
}

/* What create_in_subprocess printed for path. */
static void assert_subprocess_creates(const char *path, const char *expected_output)
{
    g_setenv(PIDFILE_ENV, path, TRUE);
    g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout(expected_output);
    g_unsetenv(PIDFILE_ENV);
}

static void test_pidfile_holds_our_pid_and_is_locked(void)
{
    if (g_test_subprocess()) {
        create_in_subprocess();
        return;
    }
    g_autofree char *dir = NULL;
    g_autofree char *path = temp_pidfile(&dir);
    /* A stale file from a crashed VMM is taken over and rewritten. */
    g_assert_true(g_file_set_contents(path, "99999999\nstale text\n", -1, NULL));
    Error *err = NULL;
    g_assert_true(pidfile_create(path, &err));
    /*
     * Read by another process: ours must not open the file, as closing any
     * descriptor of it would drop our lock (fcntl's rule).
     */
    g_autofree char *refused = g_strdup_printf(
        "Cannot lock pid file: Resource temporarily unavailable; the file says %d\n", getpid());
    assert_subprocess_creates(path, refused);

    pidfile_remove();
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    /* Released: the next VMM takes it. */
    assert_subprocess_creates(path, "created\n");
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_rmdir(dir);
}

static void test_pidfile_removed_by_absolute_path(void)
{
    g_autofree char *dir = NULL;
    g_autofree char *path = temp_pidfile(&dir);
    g_autofree char *cwd = g_get_current_dir();
    g_assert_cmpint(chdir(dir), ==, 0);
    Error *err = NULL;
    g_assert_true(pidfile_create("vm.pid", &err));
    /* As a daemon does once its machine is built. */
    g_assert_cmpint(chdir("/"), ==, 0);
    pidfile_remove();
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_assert_cmpint(chdir(cwd), ==, 0);
    g_rmdir(dir);
}

static void test_pidfile_errors(void)
{
    Error *err = NULL;
    g_assert_false(pidfile_create("/nonexistent-dir/vm.pid", &err));
    g_assert_cmpstr(err->msg, ==,
                    "Could not create '/nonexistent-dir/vm.pid': No such file or directory");
    error_free(err);
    /* Nothing to remove after a failure. */
    pidfile_remove();
}

/* ---- -daemonize's handshake, in a subprocess of its own ---- */

/*
 * Run in a trapped subprocess: become the caller of a daemon that either
 * finishes (finish=true) or dies while "building". The caller prints what
 * daemonize_start told it. The daemon checks it is in a session of its own
 * without leading it, then finishes or fails.
 */
static void run_daemonize_caller(bool finish)
{
    pid_t caller_sid = getsid(0);
    Error *err = NULL;
    switch (daemonize_start(&err)) {
    case DAEMONIZE_IN_DAEMON:
        if (getsid(0) == caller_sid || getsid(0) == getpid() || !finish) {
            fprintf(stderr, "daemon: cannot build\n");
            _exit(1);
        }
        g_assert_true(daemonize_finish(false, &err));
        /* stderr is /dev/null now: the caller must not see this. */
        fprintf(stderr, "daemon: detached\n");
        _exit(0);
    case DAEMONIZE_CALLER_DONE:
        printf("caller: done\n");
        break;
    case DAEMONIZE_CALLER_FAILED:
        printf("caller: failed\n");
        break;
    }
}

static void test_daemonize_reports_built(void)
{
    if (g_test_subprocess()) {
        run_daemonize_caller(true);
        return;
    }
    g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout("caller: done\n");
    g_test_trap_assert_stderr("");
}

static void test_daemonize_failure_reaches_the_caller(void)
{
    if (g_test_subprocess()) {
        run_daemonize_caller(false);
        return;
    }
    g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout("caller: failed\n");
    /* The daemon's error went to the caller's terminal. */
    g_test_trap_assert_stderr("daemon: cannot build\n");
}

/* ---- thread names ---- */

typedef struct NamedThread {
    pthread_t thread;
    int go[2];
} NamedThread;

static void *wait_for_go(void *opaque)
{
    NamedThread *t = opaque;
    char c;
    ssize_t ignored = read(t->go[0], &c, 1);
    (void)ignored;
    return NULL;
}

/* The name a new thread ends up with after thread_set_debug_name(name). */
static char *name_given_to_a_thread(const char *name)
{
    NamedThread t;
    g_assert_cmpint(pipe(t.go), ==, 0);
    g_assert_cmpint(pthread_create(&t.thread, NULL, wait_for_go, &t), ==, 0);
    thread_set_debug_name(t.thread, name);
    char got[16];
    g_assert_cmpint(pthread_getname_np(t.thread, got, sizeof(got)), ==, 0);
    g_assert_cmpint(write(t.go[1], "x", 1), ==, 1);
    pthread_join(t.thread, NULL);
    close(t.go[0]);
    close(t.go[1]);
    return g_strdup(got);
}

static void test_threads_named_only_with_debug_threads(void)
{
    char inherited[16];
    prctl(PR_SET_NAME, "lifecycle-main");
    g_assert_cmpint(pthread_getname_np(pthread_self(), inherited, sizeof(inherited)), ==, 0);

    thread_naming_enable(false);
    g_autofree char *off = name_given_to_a_thread("CPU 0/KVM");
    g_assert_cmpstr(off, ==, inherited);

    thread_naming_enable(true);
    g_autofree char *on = name_given_to_a_thread("CPU 0/KVM");
    g_assert_cmpstr(on, ==, "CPU 0/KVM");
    /* QEMU's names that do not fit the kernel's 15 characters are not
     * given at all rather than truncated. */
    g_autofree char *fits = name_given_to_a_thread("IO io12345678a");
    g_assert_cmpstr(fits, ==, "IO io12345678a");
    g_autofree char *too_long = name_given_to_a_thread("IO io123456789ab");
    g_assert_cmpstr(too_long, ==, inherited);
    thread_naming_enable(false);
}

static void test_process_name_is_cut_to_fit(void)
{
    char comm[16];
    process_set_name("averyveryverylongprocessname");
    g_assert_cmpint(pthread_getname_np(pthread_self(), comm, sizeof(comm)), ==, 0);
    g_assert_cmpstr(comm, ==, "averyveryverylo");
}

/* ---- query-name ---- */

static char *query_name_json(void)
{
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch("query-name", NULL, &err);
    g_assert_null(err);
    char *text = json_to_string(ret, false);
    json_node_unref(ret);
    return text;
}

static void test_query_name(void)
{
    vm_name_set(NULL);
    g_autofree char *none = query_name_json();
    g_assert_cmpstr(none, ==, "{}");
    vm_name_set("vm1");
    g_autofree char *named = query_name_json();
    g_assert_cmpstr(named, ==, "{\"name\":\"vm1\"}");
    /* -name guest= is a name, as QEMU answers it. */
    vm_name_set("");
    g_autofree char *empty = query_name_json();
    g_assert_cmpstr(empty, ==, "{\"name\":\"\"}");
    vm_name_set(NULL);

    JsonObject *args = json_object_new();
    json_object_set_int_member(args, "x", 1);
    Error *err = NULL;
    g_assert_null(qmp_dispatch("query-name", args, &err));
    g_assert_cmpstr(err->msg, ==, "Parameter 'x' is unexpected");
    error_free(err);
    json_object_unref(args);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lifecycle/pidfile/holds-our-pid-and-is-locked",
                    test_pidfile_holds_our_pid_and_is_locked);
    g_test_add_func("/lifecycle/pidfile/removed-by-absolute-path",
                    test_pidfile_removed_by_absolute_path);
    g_test_add_func("/lifecycle/pidfile/errors", test_pidfile_errors);
    g_test_add_func("/lifecycle/daemonize/reports-built", test_daemonize_reports_built);
    g_test_add_func("/lifecycle/daemonize/failure-reaches-the-caller",
                    test_daemonize_failure_reaches_the_caller);
    g_test_add_func("/lifecycle/threads-named-only-with-debug-threads",
                    test_threads_named_only_with_debug_threads);
    g_test_add_func("/lifecycle/process-name-is-cut-to-fit", test_process_name_is_cut_to_fit);
    g_test_add_func("/lifecycle/query-name", test_query_name);
    return g_test_run();
}
