/*
 * The -drive option model: option strings into DriveConfig, QEMU's
 * placement (index = bus * 2 + unit on IDE, the next free unit otherwise)
 * and default ids, the shorthands, and one-line refusals.
 */
#include <string.h>
#include <glib.h>
#include "block/drive-config.h"

static DriveConfig *add_ok(GPtrArray *drives, const char *optstr)
{
    Error *err = NULL;
    if (!drive_add(drives, optstr, &err)) {
        g_error("-drive %s: %s", optstr, err->msg);
    }
    return g_ptr_array_index(drives, drives->len - 1);
}

static void expect_error(GPtrArray *drives, const char *optstr, const char *needle)
{
    Error *err = NULL;
    guint len = drives->len;
    g_assert_false(drive_add(drives, optstr, &err));
    g_assert_nonnull(err);
    if (!strstr(err->msg, needle)) {
        g_error("-drive %s: '%s' does not contain '%s'", optstr, err->msg, needle);
    }
    g_assert_null(strchr(err->msg, '\n'));
    g_assert_cmpuint(drives->len, ==, len);
    error_free(err);
}

static void test_every_key(void)
{
    GPtrArray *drives = drive_config_list_new();
    DriveConfig *cfg = add_ok(drives, "file=a,,b.img,format=raw,if=virtio,index=1,cache=none,"
                              "aio=native,readonly=on,id=disk0,discard=unmap,werror=stop,"
                              "rerror=ignore,snapshot=off,media=disk");
    g_assert_cmpstr(cfg->file, ==, "a,b.img");
    g_assert_cmpint(cfg->format, ==, DRIVE_FORMAT_RAW);
    g_assert_cmpint(cfg->interface, ==, DRIVE_IF_VIRTIO);
    g_assert_cmpint(cfg->unit, ==, 1);
    g_assert_cmpint(cfg->cache, ==, DRIVE_CACHE_NONE);
    g_assert_cmpint(cfg->aio, ==, DRIVE_AIO_NATIVE);
    g_assert_true(cfg->read_only);
    g_assert_cmpstr(cfg->id, ==, "disk0");
    g_assert_cmpint(cfg->discard, ==, DRIVE_DISCARD_UNMAP);
    g_assert_cmpint(cfg->werror, ==, DRIVE_ERROR_STOP);
    g_assert_cmpint(cfg->rerror, ==, DRIVE_ERROR_IGNORE);
    g_assert_true(drive_config_find(drives, "disk0") == cfg);
    g_ptr_array_unref(drives);
}

static void test_defaults(void)
{
    GPtrArray *drives = drive_config_list_new();
    DriveConfig *cfg = add_ok(drives, "file=d.img");
    g_assert_cmpint(cfg->interface, ==, DRIVE_IF_IDE);
    g_assert_cmpint(cfg->media, ==, DRIVE_MEDIA_DISK);
    g_assert_cmpint(cfg->format, ==, DRIVE_FORMAT_PROBE);
    g_assert_cmpint(cfg->cache, ==, DRIVE_CACHE_WRITEBACK);
    g_assert_cmpint(cfg->aio, ==, DRIVE_AIO_THREADS);
    g_assert_cmpint(cfg->discard, ==, DRIVE_DISCARD_IGNORE);
    /* QEMU's: stop on ENOSPC for writes, report read errors. */
    g_assert_cmpint(cfg->werror, ==, DRIVE_ERROR_ENOSPC);
    g_assert_cmpint(cfg->rerror, ==, DRIVE_ERROR_REPORT);
    g_assert_false(cfg->read_only);
    g_assert_cmpstr(cfg->id, ==, "ide0-hd0");
    g_ptr_array_unref(drives);
}

/* What Debian's QEMU 7.2 names and places (checked with "info block"). */
static void test_placement_and_ids(void)
{
    GPtrArray *drives = drive_config_list_new();
    DriveConfig *a = add_ok(drives, "file=a.img,format=raw");
    DriveConfig *b = add_ok(drives, "file=b.img,format=raw,media=cdrom");
    DriveConfig *c = add_ok(drives, "file=c.img,format=raw,bus=1");
    DriveConfig *d = add_ok(drives, "file=d.img,format=raw");  /* next free: 1.1 */
    g_assert_cmpstr(a->id, ==, "ide0-hd0");
    g_assert_cmpstr(b->id, ==, "ide0-cd1");
    g_assert_true(b->read_only);
    g_assert_cmpstr(c->id, ==, "ide1-hd0");
    g_assert_cmpint(c->index, ==, 2);
    g_assert_cmpstr(d->id, ==, "ide1-hd1");
    g_assert_cmpint(d->index, ==, 3);
    g_assert_true(drive_config_at(drives, DRIVE_IF_IDE, 1, 1) == d);
    expect_error(drives, "file=e.img", "machine type does not support if=ide,bus=2,unit=0");

    DriveConfig *v0 = add_ok(drives, "file=v.img,if=virtio");
    DriveConfig *v3 = add_ok(drives, "file=w.img,if=virtio,index=3");
    DriveConfig *n0 = add_ok(drives, "file=x.img,if=none");
    DriveConfig *n1 = add_ok(drives, "file=y.img,if=none");
    g_assert_cmpstr(v0->id, ==, "virtio0");
    g_assert_cmpstr(v3->id, ==, "virtio3");
    g_assert_cmpstr(n0->id, ==, "none0");
    g_assert_cmpstr(n1->id, ==, "none1");
    g_ptr_array_unref(drives);
}

static void test_shorthands(void)
{
    GPtrArray *drives = drive_config_list_new();
    Error *err = NULL;
    g_assert_true(drive_is_shorthand_option("hdb"));
    g_assert_false(drive_is_shorthand_option("hde"));
    g_assert_true(drive_add_shorthand(drives, "hda", "disk,with,commas.img", &err));
    g_assert_true(drive_add_shorthand(drives, "cdrom", "data.iso", &err));
    g_assert_true(drive_add_shorthand(drives, "hdb", "b.img", &err));
    DriveConfig *hda = g_ptr_array_index(drives, 0);
    DriveConfig *cd = g_ptr_array_index(drives, 1);
    DriveConfig *hdb = g_ptr_array_index(drives, 2);
    g_assert_cmpstr(hda->file, ==, "disk,with,commas.img");
    g_assert_cmpstr(hda->id, ==, "ide0-hd0");
    g_assert_cmpstr(cd->id, ==, "ide1-cd0");
    g_assert_cmpint(cd->media, ==, DRIVE_MEDIA_CDROM);
    g_assert_true(cd->read_only);
    g_assert_cmpint(cd->format, ==, DRIVE_FORMAT_PROBE);
    g_assert_cmpstr(hdb->id, ==, "ide0-hd1");
    /* -hdc is index 2, which -cdrom took: QEMU's message. */
    g_assert_false(drive_add_shorthand(drives, "hdc", "c.img", &err));
    g_assert_cmpstr(err->msg, ==, "drive with bus=1, unit=0 (index=2) exists");
    error_free(err);
    g_ptr_array_unref(drives);
}

static void test_empty_cdrom(void)
{
    GPtrArray *drives = drive_config_list_new();
    DriveConfig *cd = add_ok(drives, "if=ide,media=cdrom");
    g_assert_null(cd->file);
    g_assert_cmpstr(cd->id, ==, "ide0-cd0");
    expect_error(drives, "if=ide", "a disk needs file=");
    g_ptr_array_unref(drives);
}

static void test_refusals(void)
{
    GPtrArray *drives = drive_config_list_new();
    add_ok(drives, "file=a.img,id=a");
    expect_error(drives, "file=b.img,id=a", "Duplicate ID 'a' for drive");
    expect_error(drives, "file=b.img,index=0", "drive with bus=0, unit=0 (index=0) exists");
    expect_error(drives, "file=b.img,if=scsi", "unsupported bus type 'scsi'");
    expect_error(drives, "file=b.img,if=foo", "unsupported bus type 'foo'");
    expect_error(drives, "file=b.img,frob=1", "unsupported parameter 'frob'");
    expect_error(drives, "file=b.img,format=qcow2", "format 'qcow2' is not supported");
    expect_error(drives, "file=b.img,format=bogus", "format 'bogus' is not supported");
    expect_error(drives, "file=b.img,media=tape", "'tape' invalid media");
    expect_error(drives, "file=b.img,cache=foo", "invalid cache option 'foo'");
    expect_error(drives, "file=b.img,aio=foo", "invalid aio option 'foo'");
    expect_error(drives, "file=b.img,discard=foo", "invalid discard option 'foo'");
    expect_error(drives, "file=b.img,readonly=maybe", "expects on or off");
    expect_error(drives, "file=b.img,aio=native",
                 "aio=native was specified, but it requires cache.direct=on, which was "
                 "not specified.");
    expect_error(drives, "file=b.img,aio=native,cache=writeback", "requires cache.direct=on");
    /* QEMU 7.2's messages (Debian's qemu-system-x86_64). */
    expect_error(drives, "file=b.img,werror=foo", "'foo' invalid write error action");
    expect_error(drives, "file=b.img,werror=", "'' invalid write error action");
    expect_error(drives, "file=b.img,rerror=enospc", "'enospc' invalid read error action");
    expect_error(drives, "file=b.img,rerror=foo", "'foo' invalid read error action");
    expect_error(drives, "file=b.img,snapshot=on", "snapshot=on is not supported");
    expect_error(drives, "file=b.img,index=1,unit=1", "index cannot be used with bus and unit");
    expect_error(drives, "file=b.img,unit=2", "unit 2 too big (max is 1)");
    expect_error(drives, "file=b.img,index=-1", "expects a number");
    expect_error(drives, "file=b.img,id=0bad", "parameter 'id' expects an identifier");
    expect_error(drives, "file=b.img,if=virtio,bus=1", "one drive per bus");
    expect_error(drives, "file=b.img,=x", "empty parameter name");
    g_assert_cmpuint(drives->len, ==, 1);
    g_ptr_array_unref(drives);
}

static void test_cache_table(void)
{
    static const struct {
        DriveCacheMode mode;
        bool writeback, direct, no_flush;
    } table[] = {
        { DRIVE_CACHE_WRITEBACK, true, false, false },
        { DRIVE_CACHE_NONE, true, true, false },
        { DRIVE_CACHE_WRITETHROUGH, false, false, false },
        { DRIVE_CACHE_DIRECTSYNC, false, true, false },
        { DRIVE_CACHE_UNSAFE, true, false, true },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
        DriveCacheFlags flags = drive_cache_flags(table[i].mode);
        g_assert_cmpint(flags.writeback, ==, table[i].writeback);
        g_assert_cmpint(flags.direct, ==, table[i].direct);
        g_assert_cmpint(flags.no_flush, ==, table[i].no_flush);
    }
    g_assert_cmpstr(drive_cache_mode_name(DRIVE_CACHE_DIRECTSYNC), ==, "directsync");
    g_assert_cmpstr(drive_aio_mode_name(DRIVE_AIO_IO_URING), ==, "io_uring");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/drive-config/every-key", test_every_key);
    g_test_add_func("/drive-config/defaults", test_defaults);
    g_test_add_func("/drive-config/placement-and-ids", test_placement_and_ids);
    g_test_add_func("/drive-config/shorthands", test_shorthands);
    g_test_add_func("/drive-config/empty-cdrom", test_empty_cdrom);
    g_test_add_func("/drive-config/refusals", test_refusals);
    g_test_add_func("/drive-config/cache-table", test_cache_table);
    return g_test_run();
}
