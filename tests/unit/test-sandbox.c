/*
 * -sandbox: the option string as QEMU takes it, and what each option lets
 * through once the process filter is in (in a subprocess each: a filter
 * cannot be taken off again). The vCPU layer and the line a forbidden
 * call writes are tested end to end in tests/functional/test_sandbox.py.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib.h>
#include "sysemu/sandbox.h"

static void test_defaults_are_qemus(void)
{
    SandboxConfig cfg;
    Error *err = NULL;
    g_assert_true(sandbox_parse("on", &cfg, &err));
    g_assert_true(cfg.enabled);
    g_assert_false(cfg.obsolete);
    g_assert_cmpint(cfg.privileges, ==, SANDBOX_PRIVILEGES_ALLOW);
    g_assert_true(cfg.spawn);
    g_assert_true(cfg.resourcecontrol);
    g_assert_cmpint(cfg.test, ==, SANDBOX_TEST_NONE);

    g_assert_true(sandbox_parse("off,spawn=deny", &cfg, &err));
    g_assert_false(cfg.enabled);
}

static void test_every_value(void)
{
    SandboxConfig cfg;
    Error *err = NULL;
    g_assert_true(sandbox_parse("enable=on,obsolete=allow,elevateprivileges=children,"
                                "spawn=deny,resourcecontrol=deny,x-test-forbidden=vcpu",
                                &cfg, &err));
    g_assert_true(cfg.enabled && cfg.obsolete && !cfg.spawn && !cfg.resourcecontrol);
    g_assert_cmpint(cfg.privileges, ==, SANDBOX_PRIVILEGES_CHILDREN);
    g_assert_cmpint(cfg.test, ==, SANDBOX_TEST_VCPU);
    g_assert_true(sandbox_parse("on,elevateprivileges=deny,spawn=allow", &cfg, &err));
    g_assert_cmpint(cfg.privileges, ==, SANDBOX_PRIVILEGES_DENY);
    g_assert_true(cfg.spawn);
}

static void test_bad_values(void)
{
    static const struct {
        const char *arg, *msg;
    } cases[] = {
        { "maybe", "Parameter 'enable' expects 'on' or 'off'" },
        { "on,obsolete=foo", "invalid argument for obsolete" },
        { "on,obsolete", "invalid argument for obsolete" },
        { "on,spawn=children", "invalid argument for spawn" },
        { "on,x-test-forbidden=io", "invalid argument for x-test-forbidden" },
        { "on,bogus=1", "Invalid parameter 'bogus'" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        SandboxConfig cfg;
        Error *err = NULL;
        g_assert_false(sandbox_parse(cases[i].arg, &cfg, &err));
        g_assert_cmpstr(err->msg, ==, cases[i].msg);
        error_free(err);
    }
}

static void install(const char *arg)
{
    SandboxConfig cfg;
    Error *err = NULL;
    g_assert_true(sandbox_parse(arg, &cfg, &err));
    g_assert_true(sandbox_install(&cfg, &err));
}

static void *thread_body(void *arg)
{
    return arg;
}

/* The subprocess bodies: each installs a sandbox and makes one call. */
static void threads_start_under_spawn_deny(void)
{
    install("on,spawn=deny");
    pthread_t thread;
    g_assert_cmpint(pthread_create(&thread, NULL, thread_body, NULL), ==, 0);
    g_assert_cmpint(pthread_join(thread, NULL), ==, 0);
}

static void fork_under_spawn_deny(void)
{
    install("on,spawn=deny");
    pid_t pid = fork();     /* glibc's fork is clone without CLONE_THREAD */
    if (pid == 0) {
        _exit(0);
    }
    waitpid(pid, NULL, 0);
}

static void setuid_under_elevateprivileges_deny(void)
{
    install("on,elevateprivileges=deny");
    syscall(SYS_setuid, 0);     /* as root a no-op, else EPERM */
}

static void affinity_under_resourcecontrol_deny(void)
{
    install("on,resourcecontrol=deny");
    cpu_set_t set;
    syscall(SYS_sched_getaffinity, 0, sizeof(set), &set);
}

static void obsolete_by_default(void)
{
    install("on");
    syscall(SYS_sysfs, 3);
}

static void obsolete_allowed(void)
{
    install("on,obsolete=allow");
    syscall(SYS_sysfs, 3);      /* the number of file system types */
}

static void run_killed(const char *path, const char *call)
{
    g_test_trap_subprocess(path, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_autofree char *line = g_strdup_printf(
        "*qemu-system-x86_64: sandbox: forbidden system call %s (*)\n*", call);
    g_test_trap_assert_stderr(line);
}

static void run_passes(const char *path)
{
    g_test_trap_subprocess(path, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr_unmatched("*forbidden*");
}

/* A sanitizer's runtime makes system calls of its own in every thread
 * and at exit (alternate signal stacks, prctl, the leak checker's clone
 * and ptrace) that the lists, written for the VMM, do not carry: the
 * filters are checked in the plain build. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

static bool skipped_under_sanitizer(void)
{
#ifdef UNDER_SANITIZER
    g_test_skip("a sanitizer's own system calls are not on the sandbox's lists");
    return true;
#else
    return false;
#endif
}

static void test_threads_but_no_processes_under_spawn_deny(void)
{
    if (skipped_under_sanitizer()) {
        return;
    }
    run_passes("/sandbox/subprocess/threads");
    run_killed("/sandbox/subprocess/fork", "clone");
}

static void test_deny_options_take_their_calls_away(void)
{
    if (skipped_under_sanitizer()) {
        return;
    }
    run_killed("/sandbox/subprocess/setuid", "setuid");
    run_killed("/sandbox/subprocess/affinity", "sched_getaffinity");
    run_killed("/sandbox/subprocess/obsolete", "sysfs");
    run_passes("/sandbox/subprocess/obsolete-allowed");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sandbox/parse/defaults", test_defaults_are_qemus);
    g_test_add_func("/sandbox/parse/values", test_every_value);
    g_test_add_func("/sandbox/parse/bad", test_bad_values);
    g_test_add_func("/sandbox/spawn-deny", test_threads_but_no_processes_under_spawn_deny);
    g_test_add_func("/sandbox/deny-options", test_deny_options_take_their_calls_away);
    g_test_add_func("/sandbox/subprocess/threads", threads_start_under_spawn_deny);
    g_test_add_func("/sandbox/subprocess/fork", fork_under_spawn_deny);
    g_test_add_func("/sandbox/subprocess/setuid", setuid_under_elevateprivileges_deny);
    g_test_add_func("/sandbox/subprocess/affinity", affinity_under_resourcecontrol_deny);
    g_test_add_func("/sandbox/subprocess/obsolete", obsolete_by_default);
    g_test_add_func("/sandbox/subprocess/obsolete-allowed", obsolete_allowed);
    return g_test_run();
}
