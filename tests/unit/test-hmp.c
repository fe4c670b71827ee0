/*
 * The human monitor without a backend: the line editor's echo (byte for
 * byte what QEMU 7.2's monitor sends), the formatters fed the JSON that
 * Debian's QEMU 7.2 answered and checked against the text its own monitor
 * printed for the same state (human-monitor-command on the same instance),
 * the parser's messages, and human-monitor-command through qmp_dispatch().
 */
#include <string.h>
#include <glib.h>
#include "monitor/hmp.h"
#include "monitor/hmp-format.h"
#include "monitor/hmp-readline.h"
#include "monitor/qmp.h"

/* ---- the line editor ---- */

typedef struct Terminal {
    HmpReadline *rl;
    GString *shown;         /* everything echoed, lines marked by "<LINE>" */
    GPtrArray *lines;
} Terminal;

static void term_echo(void *opaque, const char *text)
{
    Terminal *t = opaque;
    g_string_append(t->shown, text);
}

static void term_line(void *opaque, const char *line)
{
    Terminal *t = opaque;
    g_ptr_array_add(t->lines, g_strdup(line));
    g_string_append(t->shown, "<LINE>");
}

static void term_init(Terminal *t)
{
    t->rl = hmp_readline_new(term_echo, term_line, t);
    t->shown = g_string_new(NULL);
    t->lines = g_ptr_array_new_with_free_func(g_free);
    hmp_readline_start(t->rl);
}

static void term_type(Terminal *t, const char *keys)
{
    hmp_readline_feed(t->rl, (const uint8_t *)keys, strlen(keys));
}

static void term_free(Terminal *t)
{
    hmp_readline_free(t->rl);
    g_string_free(t->shown, TRUE);
    g_ptr_array_unref(t->lines);
}

static const char *line_at(Terminal *t, guint i)
{
    g_assert_cmpuint(i, <, t->lines->len);
    return g_ptr_array_index(t->lines, i);
}

/* What QEMU 7.2 sent for "ab", Backspace, "c", Enter. */
static void test_readline_echo_as_qemu(void)
{
    Terminal t;
    term_init(&t);
    term_type(&t, "ab\x7f" "c\n");
    g_assert_cmpstr(t.shown->str, ==,
                    "a\033[K"
                    "\033[Dab\033[K"
                    "\033[D\033[Da\033[K"
                    "\033[Dac\033[K"
                    "\n<LINE>");
    g_assert_cmpstr(line_at(&t, 0), ==, "ac");
    term_free(&t);
}

/* Cursor keys move inside the line, typing inserts at the cursor, ^H is a
 * backspace too, and CR LF ends one line, not two. */
static void test_readline_editing(void)
{
    Terminal t;
    term_init(&t);
    term_type(&t, "info staus\033[D\033[Dt\033[C\033[C\033[Cxx\b\b\r\n");
    g_assert_cmpstr(line_at(&t, 0), ==, "info status");
    g_assert_cmpuint(t.lines->len, ==, 1);
    /* Home, Delete (ESC [ 3 ~), End. */
    term_type(&t, "xhelp\033[H\033[3~\033[Fx\n");
    g_assert_cmpstr(line_at(&t, 1), ==, "helpx");
    /* Unknown escape sequences and control bytes vanish. */
    term_type(&t, "a\033[5~\x02" "b\033Oq\n");
    g_assert_cmpstr(line_at(&t, 2), ==, "ab");
    term_free(&t);
}

static void test_readline_history(void)
{
    Terminal t;
    term_init(&t);
    term_type(&t, "first\nsecond\nsecond\n\n");
    /* Up twice: "first" (the repeated and the empty line were not kept). */
    term_type(&t, "\033[A\033[A\n");
    g_assert_cmpstr(line_at(&t, 4), ==, "first");
    /* Up past the oldest stays there; Down past the newest is empty. */
    term_type(&t, "\033[A\033[A\033[A\033[A\033[B\033[B\033[B\n");
    g_assert_cmpstr(line_at(&t, 5), ==, "");
    term_type(&t, "\033[A\033[Ax\n");
    g_assert_cmpstr(line_at(&t, 6), ==, "secondx");
    term_free(&t);
}

static void test_readline_long_line_is_cut(void)
{
    Terminal t;
    term_init(&t);
    g_autofree char *keys = g_strnfill(HMP_READLINE_MAX * 2, 'x');
    term_type(&t, keys);
    term_type(&t, "\n");
    g_assert_cmpuint(strlen(line_at(&t, 0)), ==, HMP_READLINE_MAX - 1);
    term_free(&t);
}

/* ---- formatters: Debian's QEMU 7.2, answer and monitor text ---- */

typedef struct FormatCase {
    const char *command;
    HmpFormatFn *format;
    const char *json;
    const char *text;
} FormatCase;

/* Captured from one instance: -smp 2 -name guest=tiny -S, an e1000, a
 * CD-ROM with a medium and an empty one, a virtio disk with cache=none,
 * an iothread, -serial null, -qmp on a unix socket. */
static const FormatCase format_cases[] = {
    { "query-status", hmp_format_status,
      "{\"status\": \"prelaunch\", \"singlestep\": false, \"running\": false}",
      "VM status: paused (prelaunch)\n" },
    { "query-version", hmp_format_version,
      "{\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, \"package\": \"Debian 1:7.2+dfsg-7+"
      "deb12u18+b3\"}",
      "7.2.22Debian 1:7.2+dfsg-7+deb12u18+b3\n" },
    { "query-kvm", hmp_format_kvm,
      "{\"enabled\": false, \"present\": true}",
      "kvm support: disabled\n" },
    { "query-name", hmp_format_name,
      "{\"name\": \"tiny\"}",
      "tiny\n" },
    { "query-iothreads", hmp_format_iothreads,
      "[{\"poll-shrink\": 0, \"thread-id\": 9296, \"aio-max-batch\": 0, \"poll-grow\": 0, \"poll"
      "-max-ns\": 32768, \"id\": \"io1\"}]",
      "io1:\n"
      "  thread_id=9296\n"
      "  poll-max-ns=32768\n"
      "  poll-grow=0\n"
      "  poll-shrink=0\n"
      "  aio-max-batch=0\n" },
    { "query-chardev", hmp_format_chardev,
      "[{\"frontend-open\": true, \"filename\": \"unix:/tmp/hmpx/g.sock,server=on\", \"label\":"
      " \"compat_monitor0\"}, {\"frontend-open\": true, \"filename\": \"null\", \"label\": \"seria"
      "l0\"}]",
      "compat_monitor0: filename=unix:/tmp/hmpx/g.sock,server=on\n"
      "serial0: filename=null\n" },
    { "query-pci", hmp_format_pci,
      "[{\"bus\": 0, \"devices\": [{\"irq_pin\": 0, \"bus\": 0, \"qdev_id\": \"\", \"slot\": 0, \"clas"
      "s_info\": {\"class\": 1536, \"desc\": \"Host bridge\"}, \"id\": {\"device\": 4663, \"subsyst"
      "em-vendor\": 6900, \"vendor\": 32902, \"subsystem\": 4352}, \"function\": 0, \"regions\":"
      " []}, {\"irq_pin\": 0, \"bus\": 0, \"qdev_id\": \"\", \"slot\": 1, \"class_info\": {\"class\":"
      " 1537, \"desc\": \"ISA bridge\"}, \"id\": {\"device\": 28672, \"subsystem-vendor\": 6900, "
      "\"vendor\": 32902, \"subsystem\": 4352}, \"function\": 0, \"regions\": []}, {\"irq_pin\": "
      "0, \"bus\": 0, \"qdev_id\": \"\", \"slot\": 1, \"class_info\": {\"class\": 257, \"desc\": \"IDE"
      " controller\"}, \"id\": {\"device\": 28688, \"subsystem-vendor\": 6900, \"vendor\": 32902"
      ", \"subsystem\": 4352}, \"function\": 1, \"regions\": [{\"bar\": 4, \"size\": 16, \"address"
      "\": -1, \"type\": \"io\"}]}, {\"irq_pin\": 1, \"bus\": 0, \"qdev_id\": \"\", \"irq\": 0, \"slot\""
      ": 1, \"class_info\": {\"class\": 1664, \"desc\": \"Bridge\"}, \"id\": {\"device\": 28947, \"s"
      "ubsystem-vendor\": 6900, \"vendor\": 32902, \"subsystem\": 4352}, \"function\": 3, \"reg"
      "ions\": []}, {\"irq_pin\": 1, \"bus\": 0, \"qdev_id\": \"\", \"irq\": 0, \"slot\": 2, \"class_"
      "info\": {\"class\": 512, \"desc\": \"Ethernet controller\"}, \"id\": {\"device\": 4110, \"su"
      "bsystem-vendor\": 6900, \"vendor\": 32902, \"subsystem\": 4352}, \"function\": 0, \"regi"
      "ons\": [{\"prefetch\": false, \"mem_type_64\": false, \"bar\": 0, \"size\": 131072, \"addr"
      "ess\": -1, \"type\": \"memory\"}, {\"bar\": 1, \"size\": 64, \"address\": -1, \"type\": \"io\"}"
      ", {\"prefetch\": false, \"mem_type_64\": false, \"bar\": 6, \"size\": 262144, \"address\":"
      " -1, \"type\": \"memory\"}]}, {\"irq_pin\": 1, \"bus\": 0, \"qdev_id\": \"\", \"irq\": 0, \"slo"
      "t\": 3, \"class_info\": {\"class\": 256, \"desc\": \"SCSI controller\"}, \"id\": {\"device\":"
      " 4097, \"subsystem-vendor\": 6900, \"vendor\": 6900, \"subsystem\": 2}, \"function\": 0,"
      " \"regions\": [{\"bar\": 0, \"size\": 128, \"address\": -1, \"type\": \"io\"}, {\"prefetch\": "
      "false, \"mem_type_64\": false, \"bar\": 1, \"size\": 4096, \"address\": -1, \"type\": \"mem"
      "ory\"}, {\"prefetch\": true, \"mem_type_64\": true, \"bar\": 4, \"size\": 16384, \"address"
      "\": -1, \"type\": \"memory\"}]}]}]",
      "  Bus  0, device   0, function 0:\n"
      "    Host bridge: PCI device 8086:1237\n"
      "      PCI subsystem 1af4:1100\n"
      "      id \"\"\n"
      "  Bus  0, device   1, function 0:\n"
      "    ISA bridge: PCI device 8086:7000\n"
      "      PCI subsystem 1af4:1100\n"
      "      id \"\"\n"
      "  Bus  0, device   1, function 1:\n"
      "    IDE controller: PCI device 8086:7010\n"
      "      PCI subsystem 1af4:1100\n"
      "      BAR4: I/O at 0xffffffffffffffff [0x000e].\n"
      "      id \"\"\n"
      "  Bus  0, device   1, function 3:\n"
      "    Bridge: PCI device 8086:7113\n"
      "      PCI subsystem 1af4:1100\n"
      "      IRQ 0, pin A\n"
      "      id \"\"\n"
      "  Bus  0, device   2, function 0:\n"
      "    Ethernet controller: PCI device 8086:100e\n"
      "      PCI subsystem 1af4:1100\n"
      "      IRQ 0, pin A\n"
      "      BAR0: 32 bit memory at 0xffffffffffffffff [0x0001fffe].\n"
      "      BAR1: I/O at 0xffffffffffffffff [0x003e].\n"
      "      BAR6: 32 bit memory at 0xffffffffffffffff [0x0003fffe].\n"
      "      id \"\"\n"
      "  Bus  0, device   3, function 0:\n"
      "    SCSI controller: PCI device 1af4:1001\n"
      "      PCI subsystem 1af4:0002\n"
      "      IRQ 0, pin A\n"
      "      BAR0: I/O at 0xffffffffffffffff [0x007e].\n"
      "      BAR1: 32 bit memory at 0xffffffffffffffff [0x00000ffe].\n"
      "      BAR4: 64 bit prefetchable memory at 0xffffffffffffffff [0x00003ffe].\n"
      "      id \"\"\n" },
    { "query-block", hmp_format_block,
      "[{\"io-status\": \"ok\", \"device\": \"ide1-cd0\", \"locked\": false, \"removable\": true, \""
      "inserted\": {\"iops_rd\": 0, \"detect_zeroes\": \"off\", \"image\": {\"virtual-size\": 1048"
      "576, \"filename\": \"/tmp/hmpx/cd.iso\", \"format\": \"raw\", \"actual-size\": 0, \"dirty-f"
      "lag\": false}, \"iops_wr\": 0, \"ro\": true, \"node-name\": \"#block167\", \"backing_file_"
      "depth\": 0, \"drv\": \"raw\", \"iops\": 0, \"bps_wr\": 0, \"write_threshold\": 0, \"encrypte"
      "d\": false, \"bps\": 0, \"bps_rd\": 0, \"cache\": {\"no-flush\": false, \"direct\": false, "
      "\"writeback\": true}, \"file\": \"/tmp/hmpx/cd.iso\"}, \"qdev\": \"/machine/unattached/de"
      "vice[20]\", \"tray_open\": false, \"type\": \"unknown\"}, {\"io-status\": \"ok\", \"device\":"
      " \"virtio0\", \"locked\": false, \"removable\": false, \"inserted\": {\"iops_rd\": 0, \"det"
      "ect_zeroes\": \"off\", \"image\": {\"virtual-size\": 1048576, \"filename\": \"/tmp/hmpx/d."
      "img\", \"format\": \"raw\", \"actual-size\": 0, \"dirty-flag\": false}, \"iops_wr\": 0, \"ro"
      "\": false, \"node-name\": \"#block362\", \"backing_file_depth\": 0, \"drv\": \"raw\", \"iops"
      "\": 0, \"bps_wr\": 0, \"write_threshold\": 0, \"encrypted\": false, \"bps\": 0, \"bps_rd\":"
      " 0, \"cache\": {\"no-flush\": false, \"direct\": true, \"writeback\": true}, \"file\": \"/t"
      "mp/hmpx/d.img\"}, \"qdev\": \"/machine/peripheral-anon/device[1]/virtio-backend\", \"t"
      "ype\": \"unknown\"}, {\"io-status\": \"ok\", \"device\": \"ide1-cd1\", \"locked\": false, \"re"
      "movable\": true, \"qdev\": \"/machine/unattached/device[21]\", \"tray_open\": false, \"t"
      "ype\": \"unknown\"}]",
      "ide1-cd0 (#block167): /tmp/hmpx/cd.iso (raw, read-only)\n"
      "    Attached to:      /machine/unattached/device[20]\n"
      "    Removable device: not locked, tray closed\n"
      "    Cache mode:       writeback\n"
      "\n"
      "virtio0 (#block362): /tmp/hmpx/d.img (raw)\n"
      "    Attached to:      /machine/peripheral-anon/device[1]/virtio-backend\n"
      "    Cache mode:       writeback, direct\n"
      "\n"
      "ide1-cd1: [not inserted]\n"
      "    Attached to:      /machine/unattached/device[21]\n"
      "    Removable device: not locked, tray closed\n" },
};

static JsonNode *parse_json(const char *text)
{
    GError *gerr = NULL;
    JsonNode *node = json_from_string(text, &gerr);
    g_assert_no_error(gerr);
    return node;
}

static void test_format_as_qemu(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(format_cases); i++) {
        const FormatCase *c = &format_cases[i];
        g_autoptr(JsonNode) ret = parse_json(c->json);
        g_autoptr(GString) out = g_string_new(NULL);
        c->format(ret, out);
        if (strcmp(out->str, c->text) != 0) {
            g_error("%s:\n--- got ---\n%s--- QEMU printed ---\n%s", c->command, out->str,
                    c->text);
        }
    }
}

static void test_format_cpus_marks_current(void)
{
    g_autoptr(JsonNode) ret = parse_json(
        "[{\"thread-id\": 9299, \"cpu-index\": 0}, {\"thread-id\": 9300, \"cpu-index\": 1}]");
    g_autoptr(GString) out = g_string_new(NULL);
    hmp_format_cpus(ret, 0, out);
    g_assert_cmpstr(out->str, ==, "* CPU #0: thread_id=9299\n  CPU #1: thread_id=9300\n");
    g_string_truncate(out, 0);
    hmp_format_cpus(ret, 1, out);
    g_assert_cmpstr(out->str, ==, "  CPU #0: thread_id=9299\n* CPU #1: thread_id=9300\n");
}

/* The other states QEMU's monitor words differently. */
static void test_format_status_and_kvm_variants(void)
{
    static const struct { const char *json, *text; } cases[] = {
        { "{\"status\": \"running\", \"singlestep\": false, \"running\": true}",
          "VM status: running\n" },
        { "{\"status\": \"paused\", \"singlestep\": false, \"running\": false}",
          "VM status: paused\n" },
        { "{\"status\": \"shutdown\", \"singlestep\": false, \"running\": false}",
          "VM status: paused (shutdown)\n" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(JsonNode) ret = parse_json(cases[i].json);
        g_autoptr(GString) out = g_string_new(NULL);
        hmp_format_status(ret, out);
        g_assert_cmpstr(out->str, ==, cases[i].text);
    }
    g_autoptr(JsonNode) kvm = parse_json("{\"enabled\": true, \"present\": true}");
    g_autoptr(GString) out = g_string_new(NULL);
    hmp_format_kvm(kvm, out);
    g_assert_cmpstr(out->str, ==, "kvm support: enabled\n");
    /* No name: nothing at all. */
    g_autoptr(JsonNode) name = parse_json("{}");
    g_string_truncate(out, 0);
    hmp_format_name(name, out);
    g_assert_cmpstr(out->str, ==, "");
}

/* Ours: the table lock-stats=on prints at exit. */
static void test_format_locks(void)
{
    g_autoptr(JsonNode) ret = parse_json(
        "[{\"name\": \"(global)\", \"type\": \"(global)\", \"acquisitions\": 3, "
        "\"contended\": 0, \"wait-ns\": 0}, {\"name\": \"serial0\", \"type\": \"isa-serial\", "
        "\"acquisitions\": 1234, \"contended\": 5, \"wait-ns\": 2500000}]");
    g_autoptr(GString) out = g_string_new(NULL);
    hmp_format_locks(ret, out);
    g_assert_cmpstr(out->str, ==,
        "  lock             type                 acquired    contended        wait-ms\n"
        "  (global)         (global)                    3            0          0.000\n"
        "  serial0          isa-serial               1234            5          2.500\n");
}

/* Members missing from an answer leave lines out, never crash. */
static void test_format_tolerates_missing_members(void)
{
    static HmpFormatFn *const all[] = {
        hmp_format_status, hmp_format_version, hmp_format_kvm, hmp_format_name,
        hmp_format_iothreads, hmp_format_chardev, hmp_format_pci, hmp_format_block,
        hmp_format_locks,
    };
    static const char *const answers[] = {
        "{}", "[]", "[{}]", "[1, \"x\", null]", "{\"qemu\": 5}", "null", "\"text\"",
        "[{\"devices\": [{}], \"regions\": 7}]", "[{\"inserted\": {\"cache\": []}}]",
    };
    for (size_t a = 0; a < G_N_ELEMENTS(answers); a++) {
        g_autoptr(JsonNode) ret = parse_json(answers[a]);
        for (size_t f = 0; f < G_N_ELEMENTS(all); f++) {
            g_autoptr(GString) out = g_string_new(NULL);
            all[f](ret, out);
        }
        g_autoptr(GString) out = g_string_new(NULL);
        hmp_format_cpus(ret, 0, out);
    }
}

/* ---- commands ---- */

static char *run(const char *line)
{
    GString *out = g_string_new(NULL);
    hmp_run_command(line, 0, out);
    return g_string_free(out, FALSE);
}

static void assert_run(const char *line, const char *expected)
{
    g_autofree char *got = run(line);
    g_assert_cmpstr(got, ==, expected);
}

/* The messages are QEMU 7.2's for the same lines. */
static void test_command_messages(void)
{
    assert_run("", "");
    assert_run("   ", "");
    assert_run("foo", "unknown command: 'foo'\n");
    assert_run("info foo", "unknown command: 'info foo'\n");
    assert_run("stop x", "stop|s: extraneous characters at the end of line\n"
                         "Try \"help stop\" for more information\n");
    assert_run("info version x", "version: extraneous characters at the end of line\n"
                                 "Try \"help info version\" for more information\n");
    assert_run("eject", "eject: block device name expected\n"
                        "Try \"help eject\" for more information\n");
    assert_run("eject -f", "eject: block device name expected\n"
                           "Try \"help eject\" for more information\n");
    assert_run("eject -x foo", "eject: unsupported option -x\n"
                               "Try \"help eject\" for more information\n");
    assert_run("eject foo bar", "eject: extraneous characters at the end of line\n"
                                "Try \"help eject\" for more information\n");
    assert_run("change", "change: block device name expected\n"
                         "Try \"help change\" for more information\n");
    assert_run("change foo", "change: filename expected\n"
                             "Try \"help change\" for more information\n");
    assert_run("help stop", "stop|s  -- stop emulation\n");
    assert_run("? cont", "cont|c  -- resume emulation\n");
    assert_run("help eject", "eject [-f] device -- eject a removable medium (use -f to force "
                             "it)\n");
    assert_run("help info version", "info version  -- show the version of QEMU\n");
    assert_run("help nosuch", "unknown command: 'nosuch'\n");
    assert_run("help info nosuch", "unknown command: 'info nosuch'\n");
}

static void test_help_lists_every_command(void)
{
    g_autofree char *help = run("help");
    static const char *const names[] = {
        "change ", "cont|c ", "eject ", "help|? ", "info ", "quit|q ", "stop|s ",
        "system_powerdown ", "system_reset ",
    };
    g_auto(GStrv) lines = g_strsplit(help, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, G_N_ELEMENTS(names) + 1);
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        g_assert_true(g_str_has_prefix(lines[i], names[i]));
    }
    g_autofree char *info = run("info");
    g_autofree char *help_info = run("help info");
    g_assert_cmpstr(info, ==, help_info);
    g_assert_nonnull(strstr(info, "info status  -- show the current VM status (running|paused)\n"));
    g_assert_nonnull(strstr(info, "info locks  -- "));
}

/* A command whose QMP command is missing says so as QEMU prints errors. */
static void test_missing_qmp_command_is_an_error_line(void)
{
    if (qmp_command_find("query-status")) {
        g_test_skip("query-status exists in this build");
        return;
    }
    assert_run("info status", "Error: The command query-status has not been found\n");
}

/* ---- human-monitor-command ---- */

static void test_human_monitor_command(void)
{
    g_autoptr(JsonObject) args = json_object_new();
    json_object_set_string_member(args, "command-line", "help stop");
    Error *err = NULL;
    g_autoptr(JsonNode) ret = qmp_dispatch("human-monitor-command", args, &err);
    g_assert_null(err);
    /* The text as QEMU returns it: "\r\n" line ends. */
    g_assert_cmpstr(json_node_get_string(ret), ==, "stop|s  -- stop emulation\r\n");

    /* A failing command is text, not a QMP error (as in QEMU). */
    json_object_set_string_member(args, "command-line", "stop x");
    g_autoptr(JsonNode) bad = qmp_dispatch("human-monitor-command", args, &err);
    g_assert_null(err);
    g_assert_cmpstr(json_node_get_string(bad), ==,
                    "stop|s: extraneous characters at the end of line\r\n"
                    "Try \"help stop\" for more information\r\n");

    json_object_set_int_member(args, "cpu-index", -1);
    g_assert_null(qmp_dispatch("human-monitor-command", args, &err));
    g_assert_cmpstr(err->msg, ==, "Parameter 'cpu-index' expects a CPU number");
    error_free(err);
    err = NULL;

    g_autoptr(JsonObject) none = json_object_new();
    g_assert_null(qmp_dispatch("human-monitor-command", none, &err));
    g_assert_cmpstr(err->msg, ==, "Parameter 'command-line' is missing");
    error_free(err);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hmp/readline/echo-as-qemu", test_readline_echo_as_qemu);
    g_test_add_func("/hmp/readline/editing", test_readline_editing);
    g_test_add_func("/hmp/readline/history", test_readline_history);
    g_test_add_func("/hmp/readline/long-line-is-cut", test_readline_long_line_is_cut);
    g_test_add_func("/hmp/format/as-qemu", test_format_as_qemu);
    g_test_add_func("/hmp/format/cpus-marks-current", test_format_cpus_marks_current);
    g_test_add_func("/hmp/format/status-and-kvm-variants", test_format_status_and_kvm_variants);
    g_test_add_func("/hmp/format/locks", test_format_locks);
    g_test_add_func("/hmp/format/missing-members", test_format_tolerates_missing_members);
    g_test_add_func("/hmp/commands/messages", test_command_messages);
    g_test_add_func("/hmp/commands/help", test_help_lists_every_command);
    g_test_add_func("/hmp/commands/missing-qmp-command", test_missing_qmp_command_is_an_error_line);
    g_test_add_func("/hmp/human-monitor-command", test_human_monitor_command);
    return g_test_run();
}
