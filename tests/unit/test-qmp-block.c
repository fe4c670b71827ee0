/*
 * QMP's block commands through qmp_dispatch on a machine without a guest:
 * the PIIX3 IDE function with a disk (ide0-hd0), a CD-ROM (ide1-cd0) and
 * an empty CD-ROM drive (ide1-cd1), driven through their registers as a
 * guest driver would (tests/unit/ide-driver.h). query-block's members,
 * query-blockstats counting what the guest did, eject and
 * blockdev-change-medium as the guest's ATAPI driver sees them (tray,
 * NOT READY, media events, UNIT ATTENTION), a locked tray,
 * BLOCK_IO_ERROR for a request the host refuses, and a disk with
 * werror=stop (ide0-hd1) that keeps the guest's command until cont.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "block/drive-config.h"
#include "hw/ide/ide.h"
#include "hw/irq.h"
#include "file-size-limit.h"
#include "full-tmpfs.h"
#include "ide-driver.h"
#include "ide-machine.h"
#include "monitor/qmp.h"
#include "qemu/byte-order.h"
#include "qemu/log.h"
#include "sysemu/drives.h"
#include "sysemu/iothread.h"
#include "sysemu/runstate.h"

#define CD2_BLOCKS      256                 /* 512 KiB: two buffers' worth */

static IDETestMachine machine;
static char *cd2_path;
static GPtrArray *events;   /* "NAME {data}" strings */

/* ---- events ---- */

static void record_event(const char *name, JsonObject *data, int64_t ts, void *opaque)
{
    JsonNode *node = json_node_init_object(json_node_alloc(), data);
    g_autofree char *text = json_to_string(node, false);
    json_node_unref(node);
    g_ptr_array_add(events, g_strdup_printf("%s %s", name, text));
}

/* The events of one name sent since the last call, then forget them all. */
static GPtrArray *take_events(const char *name)
{
    GPtrArray *found = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < events->len; i++) {
        const char *e = g_ptr_array_index(events, i);
        if (g_str_has_prefix(e, name) && e[strlen(name)] == ' ') {
            g_ptr_array_add(found, g_strdup(e + strlen(name) + 1));
        }
    }
    g_ptr_array_set_size(events, 0);
    return found;
}

static JsonObject *parse_object(const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(parser, text, -1, NULL));
    return json_object_ref(json_node_get_object(json_parser_get_root(parser)));
}

/* ---- QMP ---- */

/* Run a command with JSON arguments (NULL: none); its return value. */
static JsonNode *qmp_ok(const char *cmd, const char *args_json)
{
    g_autoptr(JsonObject) args = args_json ? parse_object(args_json) : NULL;
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch(cmd, args, &err);
    if (err) {
        g_error("%s %s: %s", cmd, args_json ? args_json : "", err->msg);
    }
    return ret;
}

static void qmp_expect_error(const char *cmd, const char *args_json, ErrorClass cls,
                             const char *msg)
{
    g_autoptr(JsonObject) args = parse_object(args_json);
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch(cmd, args, &err);
    g_assert_null(ret);
    g_assert_nonnull(err);
    g_assert_cmpint(err->cls, ==, cls);
    g_assert_cmpstr(err->msg, ==, msg);
    error_free(err);
}

/* The entry of query-block or query-blockstats for a drive. */
static JsonObject *entry_for(JsonNode *list, const char *device)
{
    JsonArray *a = json_node_get_array(list);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);
        if (!strcmp(json_object_get_string_member(o, "device"), device)) {
            return o;
        }
    }
    g_error("no entry for %s", device);
}

static JsonObject *block_info(JsonNode **keep, const char *device)
{
    *keep = qmp_ok("query-block", NULL);
    return entry_for(*keep, device);
}

static int64_t stat_of(const char *device, const char *member)
{
    g_autoptr(JsonNode) list = qmp_ok("query-blockstats", NULL);
    JsonObject *stats = json_object_get_object_member(entry_for(list, device), "stats");
    g_assert_true(json_object_has_member(stats, member));
    return json_object_get_int_member(stats, member);
}

/* ---- the CD-ROM as sr sees it ---- */

static uint8_t test_unit_ready(int unit)
{
    const uint8_t cdb[12] = { 0x00 };
    return atapi_command(unit, cdb, 0xfffe, NULL, NULL);
}

/* GET EVENT STATUS NOTIFICATION, media class: the event code and the
 * media status byte (bit 0 tray open, bit 1 medium present). */
static void media_event(int unit, uint8_t *code, uint8_t *status)
{
    const uint8_t cdb[12] = { 0x4a, 0x01, 0, 0, 0x10, 0, 0, 0, 8 };
    uint8_t buf[8];
    size_t len;
    g_assert_cmphex(atapi_command(unit, cdb, 0xfffe, buf, &len) & ST_ERR, ==, 0);
    g_assert_cmpuint(len, ==, 8);
    g_assert_cmphex(buf[2], ==, 0x04);
    *code = buf[4] & 0x0f;
    *status = buf[5];
}

static uint32_t read_capacity_blocks(int unit)
{
    const uint8_t cdb[12] = { 0x25 };
    uint8_t buf[8];
    g_assert_cmphex(atapi_command(unit, cdb, 0xfffe, buf, NULL) & ST_ERR, ==, 0);
    return get_be32(buf);
}

static void prevent_removal(int unit, bool prevent)
{
    const uint8_t cdb[12] = { 0x1e, 0, 0, 0, prevent };
    g_assert_cmphex(atapi_command(unit, cdb, 0xfffe, NULL, NULL) & ST_ERR, ==, 0);
}

/* After a medium arrives: the first command reports UNIT ATTENTION /
 * MEDIUM MAY HAVE CHANGED, the next ones work. */
static void expect_unit_attention_then_ready(int unit)
{
    g_assert_cmphex(test_unit_ready(unit) & ST_ERR, ==, ST_ERR);
    expect_sense(unit, 0x06, 0x28);
    g_assert_cmphex(test_unit_ready(unit) & ST_ERR, ==, 0);
}

/* The DEVICE_TRAY_MOVED events sent since the last look: moves says
 * which, in order ('o' opened, 'c' closed). */
static void expect_tray_moves(const char *device, const char *moves)
{
    g_autoptr(GPtrArray) moved = take_events("DEVICE_TRAY_MOVED");
    g_assert_cmpuint(moved->len, ==, strlen(moves));
    for (guint i = 0; i < moved->len; i++) {
        g_autoptr(JsonObject) data = parse_object(g_ptr_array_index(moved, i));
        g_assert_cmpstr(json_object_get_string_member(data, "device"), ==, device);
        g_assert_cmpint(json_object_get_boolean_member(data, "tray-open"), ==, moves[i] == 'o');
        QEMUDevice *dev = drive_info_find(device)->dev;
        g_assert_cmpstr(json_object_get_string_member(data, "id"), ==, dev->id);
    }
}

/* ---- tests ---- */

static void test_query_block(void)
{
    g_autoptr(JsonNode) list = qmp_ok("query-block", NULL);
    g_assert_cmpuint(json_array_get_length(json_node_get_array(list)), ==, 4);

    JsonObject *disk = entry_for(list, "ide0-hd0");
    g_assert_cmpstr(json_object_get_string_member(disk, "qdev"), ==,
                    drive_info_find("ide0-hd0")->dev->id);
    g_assert_false(json_object_get_boolean_member(disk, "removable"));
    g_assert_false(json_object_get_boolean_member(disk, "locked"));
    g_assert_false(json_object_has_member(disk, "tray_open"));
    g_assert_cmpstr(json_object_get_string_member(disk, "io-status"), ==, "ok");
    g_assert_cmpstr(json_object_get_string_member(disk, "type"), ==, "unknown");
    JsonObject *ins = json_object_get_object_member(disk, "inserted");
    g_assert_cmpstr(json_object_get_string_member(ins, "drv"), ==, "raw");
    g_assert_false(json_object_get_boolean_member(ins, "ro"));
    g_assert_true(g_str_has_prefix(json_object_get_string_member(ins, "node-name"), "#block"));
    g_assert_cmpstr(json_object_get_string_member(ins, "detect_zeroes"), ==, "off");
    g_assert_cmpint(json_object_get_int_member(ins, "bps"), ==, 0);
    JsonObject *image = json_object_get_object_member(ins, "image");
    g_assert_cmpint(json_object_get_int_member(image, "virtual-size"), ==, DISK_SECTORS * 512);
    g_assert_cmpstr(json_object_get_string_member(image, "format"), ==, "raw");
    g_assert_cmpstr(json_object_get_string_member(image, "filename"), ==,
                    json_object_get_string_member(ins, "file"));
    JsonObject *cache = json_object_get_object_member(ins, "cache");
    g_assert_true(json_object_get_boolean_member(cache, "writeback"));  /* cache=writeback */
    g_assert_false(json_object_get_boolean_member(cache, "direct"));
    g_assert_false(json_object_get_boolean_member(cache, "no-flush"));

    JsonObject *cd = entry_for(list, "ide1-cd0");
    g_assert_true(json_object_get_boolean_member(cd, "removable"));
    g_assert_false(json_object_get_boolean_member(cd, "tray_open"));
    g_assert_true(json_object_get_boolean_member(json_object_get_object_member(cd, "inserted"),
                                                 "ro"));
    JsonObject *empty = entry_for(list, "ide1-cd1");
    g_assert_false(json_object_has_member(empty, "inserted"));
    g_assert_true(json_object_get_boolean_member(empty, "removable"));
}

/* What the guest does to the disk shows in query-blockstats, per kind. */
static void test_blockstats_count(void)
{
    int64_t rd_ops = stat_of("ide0-hd0", "rd_operations");
    int64_t rd_bytes = stat_of("ide0-hd0", "rd_bytes");
    int64_t wr_ops = stat_of("ide0-hd0", "wr_operations");
    int64_t wr_bytes = stat_of("ide0-hd0", "wr_bytes");
    int64_t flushes = stat_of("ide0-hd0", "flush_operations");
    uint8_t buf[8 * 512];

    ata_command(PRIMARY, 0, 0x30, 100, 4, false);       /* WRITE SECTORS, 4 at 100 */
    for (int i = 0; i < 4; i++) {
        g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
        memset(buf, i, 512);
        pio_out(PRIMARY, buf, 512);
    }
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    status_ack(PRIMARY);
    ata_command(PRIMARY, 0, 0x20, 0, 8, false);         /* READ SECTORS, 8 at 0 */
    for (int i = 0; i < 8; i++) {
        g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
        pio_in(PRIMARY, buf, 512);
    }
    status_ack(PRIMARY);
    ata_command(PRIMARY, 0, 0xe7, 0, 0, false);         /* FLUSH CACHE */
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    status_ack(PRIMARY);

    g_assert_cmpint(stat_of("ide0-hd0", "wr_operations"), ==, wr_ops + 1);
    g_assert_cmpint(stat_of("ide0-hd0", "wr_bytes"), ==, wr_bytes + 4 * 512);
    g_assert_cmpint(stat_of("ide0-hd0", "rd_operations"), ==, rd_ops + 1);
    g_assert_cmpint(stat_of("ide0-hd0", "rd_bytes"), ==, rd_bytes + 8 * 512);
    g_assert_cmpint(stat_of("ide0-hd0", "flush_operations"), ==, flushes + 1);
    g_assert_cmpint(stat_of("ide0-hd0", "wr_highest_offset"), >=, 104 * 512);
    g_assert_cmpint(stat_of("ide0-hd0", "rd_total_time_ns"), >, 0);
    g_assert_cmpint(stat_of("ide0-hd0", "idle_time_ns"), >=, 0);
    g_assert_cmpint(stat_of("ide0-hd0", "failed_rd_operations"), ==, 0);
}

static void set_done(void *opaque, int ret)
{
    *(int *)opaque = ret;
}

static int wait_done(int *done)
{
    while (*done == 1) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    return *done;
}

/* A request past the end never reaches the host: invalid, not failed,
 * and no BLOCK_IO_ERROR. */
static void test_blockstats_invalid(void)
{
    int64_t invalid = stat_of("ide0-hd0", "invalid_rd_operations");
    int64_t failed = stat_of("ide0-hd0", "failed_rd_operations");
    uint8_t buf[512];
    struct iovec iov = { buf, sizeof(buf) };
    int done = 1;
    g_ptr_array_set_size(events, 0);
    blk_aio_preadv(drive_info_find("ide0-hd0")->blk, DISK_SECTORS * 512, &iov, 1, set_done,
                   &done);
    g_assert_cmpint(wait_done(&done), ==, -EIO);
    g_assert_cmpint(stat_of("ide0-hd0", "invalid_rd_operations"), ==, invalid + 1);
    g_assert_cmpint(stat_of("ide0-hd0", "failed_rd_operations"), ==, failed);
    g_autoptr(GPtrArray) errors = take_events("BLOCK_IO_ERROR");
    g_assert_cmpuint(errors->len, ==, 0);
}

/* eject, then blockdev-change-medium, as Linux's sr driver sees them. */
static void test_eject_and_change(void)
{
    g_assert_cmphex(test_unit_ready(0) & ST_ERR, ==, 0);
    g_assert_cmpuint(read_capacity_blocks(0), ==, CD_BLOCKS - 1);
    int64_t reads = stat_of("ide1-cd0", "rd_operations");
    const uint8_t read_one[12] = { 0x28, 0, 0, 0, 0, 0, 0, 0, 1 };
    uint8_t block[2048];
    g_assert_cmphex(atapi_command(0, read_one, 0xfffe, block, NULL) & ST_ERR, ==, 0);
    g_assert_cmpint(stat_of("ide1-cd0", "rd_operations"), ==, ++reads);    /* survives below */
    g_ptr_array_set_size(events, 0);

    json_node_unref(qmp_ok("eject", "{\"device\": \"ide1-cd0\"}"));
    expect_tray_moves("ide1-cd0", "o");
    g_autoptr(JsonNode) after_eject = NULL;
    JsonObject *cd = block_info(&after_eject, "ide1-cd0");
    g_assert_true(json_object_get_boolean_member(cd, "tray_open"));
    g_assert_false(json_object_has_member(cd, "inserted"));
    g_assert_null(drive_info_find("ide1-cd0")->blk);

    /* The guest: NOT READY, MEDIUM NOT PRESENT - TRAY OPEN, and a
     * media-removal event with the tray-open status. */
    g_assert_cmphex(test_unit_ready(0) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(expect_sense(0, 0x02, 0x3a), ==, 0x02);
    uint8_t code, status;
    media_event(0, &code, &status);
    g_assert_cmpuint(code, ==, 3);
    g_assert_cmphex(status, ==, 0x01);
    media_event(0, &code, &status);
    g_assert_cmpuint(code, ==, 0);      /* reported once */

    g_autofree char *args = g_strdup_printf("{\"device\": \"ide1-cd0\", \"filename\": \"%s\", "
                                            "\"format\": \"raw\"}", cd2_path);
    json_node_unref(qmp_ok("blockdev-change-medium", args));
    expect_tray_moves("ide1-cd0", "c");
    g_autoptr(JsonNode) after_change = NULL;
    cd = block_info(&after_change, "ide1-cd0");
    g_assert_false(json_object_get_boolean_member(cd, "tray_open"));
    JsonObject *ins = json_object_get_object_member(cd, "inserted");
    g_assert_cmpstr(json_object_get_string_member(ins, "file"), ==, cd2_path);
    g_assert_true(json_object_get_boolean_member(ins, "ro"));

    /* New media: the event (allowed through the unit attention), then
     * UNIT ATTENTION once, then the new disc's size. */
    media_event(0, &code, &status);
    g_assert_cmpuint(code, ==, 2);
    g_assert_cmphex(status, ==, 0x02);
    expect_unit_attention_then_ready(0);
    g_assert_cmpuint(read_capacity_blocks(0), ==, CD2_BLOCKS - 1);
    g_assert_cmpint(stat_of("ide1-cd0", "rd_operations"), ==, reads);
}

/* A READ running while the disc changes stops with NOT READY instead of
 * going on with the other disc. */
static void test_change_during_read(void)
{
    uint8_t cdb[12] = { 0x28, 0, 0, 0, 0, 0, 0, CD2_BLOCKS >> 8, CD2_BLOCKS & 0xff };
    static uint8_t buf[CD2_BLOCKS * 2048];
    g_autofree char *args = g_strdup_printf("{\"device\": \"ide1-cd0\", \"filename\": \"%s\", "
                                            "\"format\": \"raw\"}", cd2_path);
    json_node_unref(qmp_ok("blockdev-change-medium", args));
    test_unit_ready(0);                 /* takes the unit attention */
    g_assert_cmphex(test_unit_ready(0) & ST_ERR, ==, 0);
    select_unit(SECONDARY, 0);
    outb(SECONDARY + REG_FEATURE, 0);
    outb(SECONDARY + REG_LBAM, 0xfe);
    outb(SECONDARY + REG_LBAH, 0xff);
    outb(SECONDARY + REG_COMMAND, 0xa0);
    g_assert_cmphex(wait_idle(SECONDARY) & ST_DRQ, ==, ST_DRQ);
    pio_out(SECONDARY, cdb, 12);
    /* The first DRQ block is there: the drive holds the first buffer. */
    g_assert_cmphex(wait_idle(SECONDARY) & ST_DRQ, ==, ST_DRQ);

    json_node_unref(qmp_ok("blockdev-change-medium", args));

    uint8_t status;
    while ((status = wait_idle(SECONDARY)) & ST_DRQ) {
        size_t n = inb(SECONDARY + REG_LBAM) | inb(SECONDARY + REG_LBAH) << 8;
        status_ack(SECONDARY);
        pio_in(SECONDARY, buf, n);
    }
    g_assert_cmphex(status & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(inb(SECONDARY + REG_ERROR) >> 4, ==, 0x02);     /* NOT READY */
    status_ack(SECONDARY);
    expect_sense(0, 0x02, 0x3a);
    expect_unit_attention_then_ready(0);
    g_ptr_array_set_size(events, 0);
}

/* A guest that prevents removal keeps its disc: eject is refused with
 * QEMU's message and the guest hears an eject request; force wins. */
static void test_locked_tray(void)
{
    prevent_removal(0, true);
    g_autoptr(JsonNode) locked = NULL;
    g_assert_true(json_object_get_boolean_member(block_info(&locked, "ide1-cd0"), "locked"));
    g_ptr_array_set_size(events, 0);

    qmp_expect_error("eject", "{\"device\": \"ide1-cd0\"}", ERROR_CLASS_GENERIC_ERROR,
                     "Device 'ide1-cd0' is locked and force was not specified, "
                     "wait for tray to open and try again");
    g_autofree char *args = g_strdup_printf("{\"device\": \"ide1-cd0\", \"filename\": \"%s\"}",
                                            cd2_path);
    qmp_expect_error("blockdev-change-medium", args, ERROR_CLASS_GENERIC_ERROR,
                     "Device 'ide1-cd0' is locked and force was not specified, "
                     "wait for tray to open and try again");
    g_autoptr(GPtrArray) none = take_events("DEVICE_TRAY_MOVED");
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_nonnull(drive_info_find("ide1-cd0")->blk);
    uint8_t code, status;
    media_event(0, &code, &status);
    g_assert_cmpuint(code, ==, 1);              /* eject request */
    g_assert_cmphex(status, ==, 0x02);
    g_assert_cmphex(test_unit_ready(0) & ST_ERR, ==, 0);   /* the disc is still there */

    /* The guest may not open a locked tray either. */
    const uint8_t open_tray[12] = { 0x1b, 0, 0, 0, 0x02 };
    g_assert_cmphex(atapi_command(0, open_tray, 0xfffe, NULL, NULL) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(expect_sense(0, 0x05, 0x53), ==, 0x02);

    json_node_unref(qmp_ok("eject", "{\"device\": \"ide1-cd0\", \"force\": true}"));
    expect_tray_moves("ide1-cd0", "o");
    g_autoptr(JsonNode) forced = NULL;
    JsonObject *cd = block_info(&forced, "ide1-cd0");
    g_assert_false(json_object_get_boolean_member(cd, "locked"));
    g_assert_true(json_object_get_boolean_member(cd, "tray_open"));
    /* Ejecting an open, empty tray again is fine, as on QEMU. */
    json_node_unref(qmp_ok("eject", "{\"device\": \"ide1-cd0\"}"));
    g_autoptr(GPtrArray) again = take_events("DEVICE_TRAY_MOVED");
    g_assert_cmpuint(again->len, ==, 0);
}

/* The guest opens and closes the tray itself (START STOP UNIT). */
static void test_guest_tray(void)
{
    g_autofree char *args = g_strdup_printf("{\"id\": \"%s\", \"filename\": \"%s\"}",
                                            drive_info_find("ide1-cd0")->dev->id, cd2_path);
    json_node_unref(qmp_ok("blockdev-change-medium", args));
    expect_tray_moves("ide1-cd0", "c");
    expect_unit_attention_then_ready(0);

    const uint8_t open_tray[12] = { 0x1b, 0, 0, 0, 0x02 };
    const uint8_t close_tray[12] = { 0x1b, 0, 0, 0, 0x03 };
    g_assert_cmphex(atapi_command(0, open_tray, 0xfffe, NULL, NULL) & ST_ERR, ==, 0);
    expect_tray_moves("ide1-cd0", "o");
    g_autoptr(JsonNode) open = NULL;
    JsonObject *cd = block_info(&open, "ide1-cd0");
    g_assert_true(json_object_get_boolean_member(cd, "tray_open"));
    g_assert_true(json_object_has_member(cd, "inserted"));     /* the disc is in the tray */
    g_assert_cmphex(test_unit_ready(0) & ST_ERR, ==, ST_ERR);
    g_assert_cmphex(expect_sense(0, 0x02, 0x3a), ==, 0x02);

    g_assert_cmphex(atapi_command(0, close_tray, 0xfffe, NULL, NULL) & ST_ERR, ==, 0);
    expect_tray_moves("ide1-cd0", "c");
    expect_unit_attention_then_ready(0);
}

static void test_errors(void)
{
    qmp_expect_error("eject", "{\"device\": \"ide0-hd0\"}", ERROR_CLASS_GENERIC_ERROR,
                     "Device 'ide0-hd0' is not removable");
    qmp_expect_error("eject", "{\"device\": \"nope\"}", ERROR_CLASS_DEVICE_NOT_FOUND,
                     "Device 'nope' not found");
    qmp_expect_error("eject", "{\"id\": \"nope\"}", ERROR_CLASS_DEVICE_NOT_FOUND,
                     "Device 'nope' not found");
    qmp_expect_error("eject", "{}", ERROR_CLASS_GENERIC_ERROR,
                     "Need exactly one of 'device' and 'id'");
    qmp_expect_error("eject", "{\"device\": \"ide1-cd0\", \"id\": \"x\"}",
                     ERROR_CLASS_GENERIC_ERROR, "Need exactly one of 'device' and 'id'");
    qmp_expect_error("blockdev-change-medium",
                     "{\"device\": \"ide0-hd0\", \"filename\": \"/dev/null\"}",
                     ERROR_CLASS_GENERIC_ERROR, "Device 'ide0-hd0' is not removable");
    g_autofree char *missing = g_build_filename(machine.dir, "missing.iso", NULL);
    g_autofree char *args = g_strdup_printf("{\"device\": \"ide1-cd1\", \"filename\": \"%s\"}",
                                            missing);
    g_autofree char *msg = g_strdup_printf("Could not open '%s': No such file or directory",
                                           missing);
    qmp_expect_error("blockdev-change-medium", args, ERROR_CLASS_GENERIC_ERROR, msg);
    qmp_expect_error("blockdev-change-medium",
                     "{\"device\": \"ide1-cd1\", \"filename\": \"x\", "
                     "\"read-only-mode\": \"bogus\"}", ERROR_CLASS_GENERIC_ERROR,
                     "Parameter 'read-only-mode' does not accept value 'bogus'");
    g_autoptr(GPtrArray) moved = take_events("DEVICE_TRAY_MOVED");
    g_assert_cmpuint(moved->len, ==, 0);   /* nothing moved */

    /* The empty drive takes a disc too. */
    g_autofree char *ok = g_strdup_printf("{\"device\": \"ide1-cd1\", \"filename\": \"%s\", "
                                          "\"format\": \"raw\"}", cd2_path);
    json_node_unref(qmp_ok("blockdev-change-medium", ok));
    expect_tray_moves("ide1-cd1", "oc");     /* QEMU opens the closed tray first */
    expect_unit_attention_then_ready(1);
}

static void check_io_error_event(const char *device, const char *operation, bool nospace,
                                 int err)
{
    g_autoptr(GPtrArray) errors = take_events("BLOCK_IO_ERROR");
    g_assert_cmpuint(errors->len, ==, 1);
    g_autoptr(JsonObject) data = parse_object(g_ptr_array_index(errors, 0));
    g_assert_cmpstr(json_object_get_string_member(data, "device"), ==, device);
    g_assert_true(g_str_has_prefix(json_object_get_string_member(data, "node-name"), "#block"));
    g_assert_cmpstr(json_object_get_string_member(data, "operation"), ==, operation);
    g_assert_cmpstr(json_object_get_string_member(data, "action"), ==, "report");
    g_assert_cmpint(json_object_get_boolean_member(data, "nospace"), ==, nospace);
    g_assert_cmpstr(json_object_get_string_member(data, "reason"), ==, g_strerror(err));
}

/* A write the host refuses: the guest gets an ATA error, the monitor
 * BLOCK_IO_ERROR, and the counters a failed write. RLIMIT_FSIZE makes
 * the host refuse a write past the limit with EFBIG (no root needed). */
static void test_io_error_event(void)
{
    int64_t failed = stat_of("ide0-hd0", "failed_wr_operations");
    file_size_limit_set(64 * 1024);
    g_ptr_array_set_size(events, 0);

    uint8_t buf[512] = { 0x5a };
    ata_command(PRIMARY, 0, 0x30, 1024, 1, false);      /* WRITE SECTORS at 512 KiB */
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
    pio_out(PRIMARY, buf, sizeof(buf));
    uint8_t status = wait_idle(PRIMARY);
    file_size_limit_lift();
    g_assert_cmphex(status & ST_ERR, ==, ST_ERR);
    status_ack(PRIMARY);
    check_io_error_event("ide0-hd0", "write", false, EFBIG);
    g_assert_cmpint(stat_of("ide0-hd0", "failed_wr_operations"), ==, failed + 1);
}

/* ENOSPC gives nospace: true (on a drive whose errors may stop the VM:
 * rerror=stop here, so that the write is still reported). A small tmpfs
 * needs root. */
static void test_io_error_nospace(void)
{
    char *path = full_tmpfs_image_new(machine.dir, "64k", 1024 * 1024);   /* room for 64k */
    if (!path) {
        return;
    }
    DriveConfig cfg = { .id = (char *)"full0", .file = path, .format = DRIVE_FORMAT_RAW };
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(&cfg, &err);
    g_assert_nonnull(blk);
    blk_set_on_error(blk, DRIVE_ERROR_STOP, DRIVE_ERROR_REPORT);
    static uint8_t data[256 * 1024];
    struct iovec iov = { data, sizeof(data) };
    int done = 1;
    g_ptr_array_set_size(events, 0);
    blk_aio_pwritev(blk, 0, &iov, 1, 0, set_done, &done);
    g_assert_cmpint(wait_done(&done), ==, -ENOSPC);
    check_io_error_event("full0", "write", true, ENOSPC);
    BlockAcctSnapshot snap;
    block_acct_snapshot(blk_acct(blk), &snap);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_WRITE].failed_ops, ==, 1);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_WRITE].ops, ==, 0);
    blk_unref(blk);
    full_tmpfs_image_free(path);
}

/* werror=stop on an ATA disk (ide0-hd1): the guest's write stays busy
 * while the VM is stopped in io-error, query-block shows io-status
 * "failed", and cont finishes the write once the host takes it (EFBIG
 * past RLIMIT_FSIZE until then). */
static void test_werror_stop_keeps_the_ata_command(void)
{
    const char *path = drive_info_find("ide0-hd1")->cfg->file;
    runstate_set(RUN_STATE_RUNNING);
    file_size_limit_set(64 * 1024);
    g_ptr_array_set_size(events, 0);

    uint8_t buf[512];
    memset(buf, 0xc3, sizeof(buf));
    ata_command(PRIMARY, 1, 0x30, 1024, 1, false);      /* WRITE SECTORS at 512 KiB */
    g_assert_cmphex(wait_idle(PRIMARY) & (ST_DRQ | ST_ERR), ==, ST_DRQ);
    pio_out(PRIMARY, buf, sizeof(buf));
    for (int i = 0; i < 100; i++) {     /* the failure comes, the command stays */
        g_main_context_iteration(main_loop_context(), FALSE);
        g_usleep(1000);
    }
    g_assert_cmphex(inb(CTL(PRIMARY)) & ST_BSY, ==, ST_BSY);
    int exit_status;
    g_assert_false(runstate_main_loop_should_exit(&exit_status));
    g_autoptr(GPtrArray) errors = take_events("BLOCK_IO_ERROR");
    g_assert_cmpuint(errors->len, ==, 1);
    g_autoptr(JsonObject) data = parse_object(g_ptr_array_index(errors, 0));
    g_assert_cmpstr(json_object_get_string_member(data, "device"), ==, "ide0-hd1");
    g_assert_cmpstr(json_object_get_string_member(data, "action"), ==, "stop");
    g_assert_false(json_object_get_boolean_member(data, "nospace"));
    g_autoptr(JsonNode) status = qmp_ok("query-status", NULL);
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(status), "status"), ==,
                    "io-error");
    g_autoptr(JsonNode) blocks = NULL;
    g_assert_cmpstr(json_object_get_string_member(block_info(&blocks, "ide0-hd1"), "io-status"),
                    ==, "failed");

    file_size_limit_lift();
    json_node_unref(qmp_ok("cont", NULL));
    g_assert_cmphex(wait_idle(PRIMARY) & ST_ERR, ==, 0);
    status_ack(PRIMARY);
    g_autoptr(JsonNode) after = NULL;
    g_assert_cmpstr(json_object_get_string_member(block_info(&after, "ide0-hd1"), "io-status"),
                    ==, "ok");
    g_autofree char *contents = NULL;
    gsize len;
    g_assert_true(g_file_get_contents(path, &contents, &len, NULL));
    g_assert_cmpuint(len, >=, 1024 * 512 + sizeof(buf));
    g_assert_cmpmem(contents + 1024 * 512, sizeof(buf), buf, sizeof(buf));
}

/* Completions on an I/O thread count while the monitor reads the counters
 * on the main thread: no lock between them (ThreadSanitizer checks the
 * atomics), and every request is there once all have completed. */
static atomic_int iothread_done;

static void count_done(void *opaque, int ret)
{
    g_assert_cmpint(ret, ==, 0);
    atomic_fetch_add(&iothread_done, 1);
}

static void test_blockstats_from_iothread(void)
{
    enum { REQUESTS = 200 };
    g_autofree char *path = ide_test_image_new(machine.dir, "iot.raw", REQUESTS * 512);
    DriveConfig cfg = { .id = (char *)"iot0", .file = path, .format = DRIVE_FORMAT_RAW,
                        .read_only = true };
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(&cfg, &err);
    g_assert_nonnull(blk);
    IOThread *iothread = iothread_new("acct-test", &err);
    g_assert_nonnull(iothread);
    g_assert_true(blk_attach(blk, iothread, &err));
    static uint8_t buf[REQUESTS][512];
    atomic_store(&iothread_done, 0);
    for (int i = 0; i < REQUESTS; i++) {
        struct iovec iov = { buf[i], sizeof(buf[i]) };
        blk_aio_preadv(blk, (uint64_t)i * 512, &iov, 1, count_done, NULL);
    }
    BlockAcctSnapshot snap;
    uint64_t seen = 0;
    while (atomic_load(&iothread_done) < REQUESTS) {
        block_acct_snapshot(blk_acct(blk), &snap);
        g_assert_cmpuint(snap.kind[BLOCK_ACCT_READ].ops, >=, seen);    /* never goes back */
        seen = snap.kind[BLOCK_ACCT_READ].ops;
    }
    blk_drain(blk);
    block_acct_snapshot(blk_acct(blk), &snap);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_READ].ops, ==, REQUESTS);
    g_assert_cmpuint(snap.kind[BLOCK_ACCT_READ].bytes, ==, REQUESTS * 512);
    blk_unref(blk);
    iothread_free(iothread);
    g_unlink(path);
}

/* ---- the machine ---- */

static void ignore_level(void *opaque, unsigned gsi, bool level)
{
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    main_loop_init();
    irq_set_backend(&(IrqBackend) { .set_level = ignore_level });
    events = g_ptr_array_new_with_free_func(g_free);
    qmp_event_add_sink(record_event, NULL);

    ide_test_machine_init(&machine, "test-qmp-block-XXXXXX", "werror=stop");
    cd2_path = ide_test_image_new(machine.dir, "cd2.iso", CD2_BLOCKS * 2048);

    g_test_add_func("/qmp-block/query-block", test_query_block);
    g_test_add_func("/qmp-block/blockstats/count", test_blockstats_count);
    g_test_add_func("/qmp-block/blockstats/invalid", test_blockstats_invalid);
    g_test_add_func("/qmp-block/blockstats/from-iothread", test_blockstats_from_iothread);
    g_test_add_func("/qmp-block/eject-and-change", test_eject_and_change);
    g_test_add_func("/qmp-block/change-during-read", test_change_during_read);
    g_test_add_func("/qmp-block/locked-tray", test_locked_tray);
    g_test_add_func("/qmp-block/guest-tray", test_guest_tray);
    g_test_add_func("/qmp-block/errors", test_errors);
    g_test_add_func("/qmp-block/io-error-event", test_io_error_event);
    g_test_add_func("/qmp-block/io-error-nospace", test_io_error_nospace);
    g_test_add_func("/qmp-block/werror-stop", test_werror_stop_keeps_the_ata_command);
    int status = g_test_run();

    qmp_event_remove_sink(record_event, NULL);
    g_unlink(cd2_path);
    g_free(cd2_path);
    ide_test_machine_cleanup(&machine);
    g_ptr_array_unref(events);
    return status;
}
