/*
 * A device's werror= and rerror= (hw/block-error-properties.h): which
 * action is in effect, the device's or its -drive's, and what the drive
 * records for blk_set_on_error and query-block's io-status. Parsing and
 * the help text of the enum kind are in test-qdev-registry.
 */
#include <glib.h>
#include "hw/block-error-properties.h"

static const DriveErrorAction every_action[] = {
    DRIVE_ERROR_REPORT, DRIVE_ERROR_IGNORE, DRIVE_ERROR_STOP, DRIVE_ERROR_ENOSPC,
};

/* auto keeps the drive's action; any other value is the device's, whatever
 * the drive said. */
static void test_resolve(void)
{
    for (size_t d = 0; d < G_N_ELEMENTS(every_action); d++) {
        DriveErrorAction drive_value = every_action[d];
        g_assert_cmpint(block_error_resolve(BLOCK_ERROR_AUTO, drive_value), ==, drive_value);
        for (size_t v = 0; v < G_N_ELEMENTS(every_action); v++) {
            g_assert_cmpint(block_error_resolve(every_action[v], drive_value), ==,
                            every_action[v]);
        }
    }
}

/* The names: -drive's, and auto; the type QEMU's help names. */
static void test_choices(void)
{
    static const char *const names[] = {
        [DRIVE_ERROR_REPORT] = "report", [DRIVE_ERROR_IGNORE] = "ignore",
        [DRIVE_ERROR_STOP] = "stop", [DRIVE_ERROR_ENOSPC] = "enospc",
        [BLOCK_ERROR_AUTO] = "auto",
    };
    g_assert_cmpint(block_error_choices.count, ==, G_N_ELEMENTS(names));
    for (int v = 0; v < block_error_choices.count; v++) {
        g_assert_cmpstr(block_error_choices.name(v), ==, names[v]);
    }
    g_assert_cmpstr(block_error_choices.type_name, ==, "BlockdevOnError");
}

/* -drive werror=stop (rerror's default, report) with -device werror=report:
 * the drive records report for both; the device's auto keeps the drive's. */
static void test_apply(void)
{
    DriveConfig cfg = { .id = "d0", .werror = DRIVE_ERROR_STOP, .rerror = DRIVE_ERROR_REPORT };
    DriveInfo drive = { .cfg = &cfg, .rerror = cfg.rerror, .werror = cfg.werror };

    BlockErrorProperties device = { .rerror = BLOCK_ERROR_AUTO, .werror = DRIVE_ERROR_REPORT };
    block_error_properties_apply(&device, &drive);
    g_assert_cmpint(drive.werror, ==, DRIVE_ERROR_REPORT);
    g_assert_cmpint(drive.rerror, ==, DRIVE_ERROR_REPORT);
    g_assert_false(drive_error_may_stop(drive.rerror, drive.werror));

    device = (BlockErrorProperties) { .rerror = DRIVE_ERROR_STOP, .werror = BLOCK_ERROR_AUTO };
    block_error_properties_apply(&device, &drive);
    g_assert_cmpint(drive.werror, ==, DRIVE_ERROR_STOP);
    g_assert_cmpint(drive.rerror, ==, DRIVE_ERROR_STOP);

    /* rerror=enospc, which only a device takes: stops for ENOSPC alone,
     * so QEMU keeps no io-status for it (nor do we). */
    cfg.werror = DRIVE_ERROR_REPORT;
    device = (BlockErrorProperties) { .rerror = DRIVE_ERROR_ENOSPC, .werror = BLOCK_ERROR_AUTO };
    block_error_properties_apply(&device, &drive);
    g_assert_cmpint(drive.rerror, ==, DRIVE_ERROR_ENOSPC);
    g_assert_false(drive_error_may_stop(drive.rerror, drive.werror));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/block-error-properties/resolve", test_resolve);
    g_test_add_func("/block-error-properties/choices", test_choices);
    g_test_add_func("/block-error-properties/apply", test_apply);
    return g_test_run();
}
