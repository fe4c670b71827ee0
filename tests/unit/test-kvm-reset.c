/*
 * A VM re-creation (reset, S3 wake-up) that fails leaves the VMM able to
 * stop its vCPUs and exit 1: no access to a vCPU's unmapped kvm_run page.
 * The hooks that register kernel objects again run after each re-creation;
 * a resampling irqfd (INTx) shares its line with KVM_IRQ_LINE and is
 * assigned again in the new VM.
 * Needs /dev/kvm (any kind, kvm_pvm included); skipped without it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <glib.h>
#include "hw/irq.h"
#include "qemu/event-notifier.h"
#include "sysemu/kvm.h"
#include "sysemu/kvm-irqfd.h"

/* The number of this process's fd whose link reads `what`, or -1. */
static int fd_named(const char *what)
{
    int found = -1;
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *entry;
    while (dir && (entry = readdir(dir))) {
        char path[300], link[128];
        g_snprintf(path, sizeof(path), "/proc/self/fd/%s", entry->d_name);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n > 0) {
            link[n] = '\0';
            if (strcmp(link, what) == 0) {
                found = atoi(entry->d_name);
            }
        }
    }
    if (dir) {
        closedir(dir);
    }
    return found;
}

/* One VM with two vCPUs for the whole program (the tests run in order);
 * false when there is no /dev/kvm to make it. */
static bool kvm_up(void)
{
    static bool up;
    if (access("/dev/kvm", R_OK | W_OK) != 0) {
        g_test_skip("no /dev/kvm");
        return false;
    }
    if (!up) {
        Error *err = NULL;
        g_assert_true(kvm_init(false, false, &err));
        CpuConfig cpu = { .model = (char *)"qemu64" };
        CpuTopology topo = { .sockets = 1, .cores = 2, .threads = 1 };
        g_assert_true(kvm_create_vcpus(2, &cpu, &topo, &err));
        up = true;
    }
    return true;
}

/* The IOAPIC's view of its input lines: bit n is pin n's level, the OR of
 * every source KVM has on it. */
static uint32_t ioapic_irr(void)
{
    struct kvm_irqchip chip = { .chip_id = KVM_IRQCHIP_IOAPIC };
    g_assert_cmpint(ioctl(fd_named("anon_inode:kvm-vm"), KVM_GET_IRQCHIP, &chip), ==, 0);
    return chip.chip.ioapic.irr;
}

/* A resampling irqfd asserts its line from a kernel worker: wait a while. */
static uint32_t ioapic_irr_after_injection(uint32_t bit)
{
    for (int i = 0; i < 1000 && !(ioapic_irr() & bit); i++) {
        g_usleep(1000);
    }
    return ioapic_irr() & bit;
}

static void test_resampling_irqfd_shares_line_and_survives_reset(void)
{
    if (!kvm_up()) {
        return;
    }
    if (!kvm_irqfd_resample_supported()) {
        g_test_skip("this KVM lacks KVM_CAP_IRQFD_RESAMPLE");
        return;
    }
    const unsigned gsi = 10;
    const uint32_t bit = 1u << gsi;
    Error *err = NULL;
    EventNotifier trigger, resample;
    g_assert_true(event_notifier_init(&trigger, &err) && event_notifier_init(&resample, &err));
    g_assert_true(kvm_irqfd_add(trigger.fd, gsi, resample.fd, &err));
    g_assert_cmphex(ioapic_irr() & bit, ==, 0);
    event_notifier_set(&trigger);
    g_assert_cmphex(ioapic_irr_after_injection(bit), ==, bit);

    /* Another device on the GSI raises and drops its level with
     * KVM_IRQ_LINE: the kernel ORs the sources, the irqfd's level stays. */
    IrqSource other = irq_source_claim(gsi);
    irq_source_set(other, true);
    g_assert_cmphex(ioapic_irr() & bit, ==, bit);
    irq_source_set(other, false);
    g_assert_cmphex(ioapic_irr() & bit, ==, bit);

    /* The re-created VM starts with the line low; the irqfd is assigned
     * again and its owner asked to re-check its level. */
    g_assert_true(kvm_reset_vm(&err));
    g_assert_cmphex(ioapic_irr() & bit, ==, 0);
    g_assert_true(event_notifier_test_and_clear(&resample));
    event_notifier_set(&trigger);
    g_assert_cmphex(ioapic_irr_after_injection(bit), ==, bit);

    /* Deassigned, its level goes with it; the line is free again. */
    kvm_irqfd_remove(trigger.fd);
    g_assert_cmphex(ioapic_irr() & bit, ==, 0);
    event_notifier_cleanup(&trigger);
    event_notifier_cleanup(&resample);
}

static GString *hook_trace;

static bool tracing_hook(void *opaque, Error **errp)
{
    /* The new VM exists when the hook runs: its fd is open. */
    g_assert_cmpint(fd_named("anon_inode:kvm-vm"), >=, 0);
    g_string_append(hook_trace, opaque);
    return true;
}

static bool failing_hook(void *opaque, Error **errp)
{
    error_setg(errp, "cannot register %s again", (const char *)opaque);
    return false;
}

static void test_recreated_hooks_run_in_order(void)
{
    if (!kvm_up()) {
        return;
    }
    Error *err = NULL;
    hook_trace = g_string_new("");
    kvm_add_recreated_hook(tracing_hook, "a");
    kvm_add_recreated_hook(tracing_hook, "b");
    g_assert_cmpstr(hook_trace->str, ==, "");
    g_assert_true(kvm_reset_vm(&err));
    g_assert_cmpstr(hook_trace->str, ==, "ab");
    g_assert_true(kvm_reset_vm(&err));
    g_assert_cmpstr(hook_trace->str, ==, "abab");

    kvm_add_recreated_hook(failing_hook, "the doorbell");
    g_assert_false(kvm_reset_vm(&err));
    g_assert_cmpstr(err->msg, ==, "cannot register the doorbell again");
    error_free(err);
    g_string_free(hook_trace, TRUE);
}

static void test_failed_recreation_then_stop(void)
{
    if (!kvm_up()) {
        return;
    }
    Error *err = NULL;

    /* The re-created VM gets the lowest free fd, at most the old VM's; a
     * descriptor limit just above it leaves no number for its vCPUs. */
    int vm_fd = fd_named("anon_inode:kvm-vm");
    g_assert_cmpint(vm_fd, >=, 0);
    struct rlimit old, tight = { .rlim_cur = vm_fd + 1 };
    getrlimit(RLIMIT_NOFILE, &old);
    tight.rlim_max = old.rlim_max;
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &tight), ==, 0);
    g_assert_false(kvm_reset_vm(&err));
    setrlimit(RLIMIT_NOFILE, &old);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "KVM_CREATE_VCPU"));
    error_free(err);

    /* The exit path: before the fix, a SIGSEGV here. */
    kvm_stop_vcpus();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* First: the failing hook added below fails every later re-creation. */
    g_test_add_func("/kvm/resampling-irqfd-shares-line-and-survives-reset",
                    test_resampling_irqfd_shares_line_and_survives_reset);
    g_test_add_func("/kvm/recreated-hooks-run-in-order", test_recreated_hooks_run_in_order);
    g_test_add_func("/kvm/failed-recreation-then-stop", test_failed_recreation_then_stop);
    return g_test_run();
}
