/*
 * The human monitor's commands (monitor/hmp.h): the command table, the
 * parser with QEMU's messages, help, and human-monitor-command.
 *
 * A line is words separated by blanks: the command, then "-x" options,
 * then its arguments. What each command takes is in its table entry, and
 * the messages for a line that does not fit are QEMU's ("eject: block
 * device name expected", "... extraneous characters at the end of line").
 */
#include <string.h>
#include "monitor/hmp.h"
#include "monitor/hmp-format.h"
#include "monitor/qmp.h"
#include "sysemu/kvm.h"
#include "monitor/qmp-tables.h"
#include "net/net.h"

#define HMP_MAX_ARGS 3

typedef struct HmpCall HmpCall;
typedef struct HmpCommand HmpCommand;

struct HmpCommand {
    const char *names;          /* "stop|s": the name, then aliases */
    const char *params;         /* as help shows them */
    const char *help;
    const char *options;        /* the letters of the -x options it takes */
    /* What each argument is, for "NAME: WHAT expected"; the first
     * min_args are required. */
    const char *args[HMP_MAX_ARGS];
    unsigned min_args;
    void (*run)(HmpCall *call);
    const char *qmp;            /* the QMP command it runs */
    HmpFormatFn *format;        /* info: how its answer is printed */
    const HmpCommand *sub;      /* info: its subcommands (run is NULL) */
    bool raw;                   /* help: takes the words as they are */
    bool ends_session;          /* quit: no prompt after it succeeded */
};

struct HmpCall {
    const HmpCommand *cmd;
    char **words;               /* the words after the command */
    const char *args[HMP_MAX_ARGS];
    unsigned nargs;
    bool option[26];            /* -a .. -z given */
    int64_t current_cpu;
    GString *out;
    bool failed;
};

static const HmpCommand hmp_commands[];

/* ---- running QMP commands ---- */

/* The answer, or NULL with the error printed as QEMU's monitor prints it. */
static JsonNode *call_qmp(HmpCall *call, const char *name, JsonObject *args)
{
    Error *err = NULL;
    JsonNode *ret = qmp_dispatch(name, args, &err);
    if (!ret) {
        hmp_format_error(err, call->out);
        error_free(err);
        call->failed = true;
    }
    return ret;
}

/* A command that prints nothing on success. */
static void call_qmp_quietly(HmpCall *call, const char *name, JsonObject *args)
{
    JsonNode *ret = call_qmp(call, name, args);
    if (ret) {
        json_node_unref(ret);
    }
}

static void run_plain(HmpCall *call)
{
    call_qmp_quietly(call, call->cmd->qmp, NULL);
}

static void run_info(HmpCall *call)
{
    g_autoptr(JsonNode) ret = call_qmp(call, call->cmd->qmp, NULL);
    if (ret) {
        call->cmd->format(ret, call->out);
    }
}

static void run_info_cpus(HmpCall *call)
{
    g_autoptr(JsonNode) ret = call_qmp(call, call->cmd->qmp, NULL);
    if (ret) {
        hmp_format_cpus(ret, call->current_cpu, call->out);
    }
}

/* info network and info qtree: QEMU has no QMP command for them; the
 * monitor asks the network layer and the device tree directly. */
static void run_info_network(HmpCall *call)
{
    net_info_print(call->out);
}

static void run_info_qtree(HmpCall *call)
{
    hmp_info_qtree(call->out);
}

static void run_eject(HmpCall *call)
{
    g_autoptr(JsonObject) args = json_object_new();
    json_object_set_string_member(args, "device", call->args[0]);
    json_object_set_boolean_member(args, "force", call->option['f' - 'a']);
    call_qmp_quietly(call, "eject", args);
}

static void run_change(HmpCall *call)
{
    g_autoptr(JsonObject) args = json_object_new();
    json_object_set_string_member(args, "device", call->args[0]);
    json_object_set_string_member(args, "filename", call->args[1]);
    if (call->nargs > 2) {
        json_object_set_string_member(args, "format", call->args[2]);
    }
    call_qmp_quietly(call, "blockdev-change-medium", args);
}

/* ---- help ---- */

static bool name_matches(const HmpCommand *cmd, const char *word)
{
    g_auto(GStrv) names = g_strsplit(cmd->names, "|", -1);
    return g_strv_contains((const char *const *)names, word);
}

static const HmpCommand *find_command(const HmpCommand *table, const char *word)
{
    for (const HmpCommand *cmd = table; cmd->names; cmd++) {
        if (name_matches(cmd, word)) {
            return cmd;
        }
    }
    return NULL;
}

static void help_line(GString *out, const char *prefix, const HmpCommand *cmd)
{
    g_string_append_printf(out, "%s%s %s -- %s\n", prefix, cmd->names, cmd->params, cmd->help);
}

static void help_table(GString *out, const char *prefix, const HmpCommand *table)
{
    for (const HmpCommand *cmd = table; cmd->names; cmd++) {
        help_line(out, prefix, cmd);
    }
}

/* help [command [subcommand]]: every command, one, or info's list. */
static void run_help(HmpCall *call)
{
    char **w = call->words;
    if (!w[0]) {
        help_table(call->out, "", hmp_commands);
        return;
    }
    const HmpCommand *cmd = find_command(hmp_commands, w[0]);
    if (!cmd) {
        g_string_append_printf(call->out, "unknown command: '%s'\n", w[0]);
    } else if (!cmd->sub) {
        help_line(call->out, "", cmd);
    } else if (!w[1]) {
        help_table(call->out, "info ", cmd->sub);
    } else if ((cmd = find_command(cmd->sub, w[1]))) {
        help_line(call->out, "info ", cmd);
    } else {
        g_string_append_printf(call->out, "unknown command: 'info %s'\n", w[1]);
    }
}

/* ---- the tables ---- */

static const HmpCommand hmp_info_commands[] = {
    { "block", "", "show the block devices", .run = run_info, .qmp = "query-block",
      .format = hmp_format_block },
    { "chardev", "", "show the character devices", .run = run_info, .qmp = "query-chardev",
      .format = hmp_format_chardev },
    { "cpus", "", "show infos for each CPU", .run = run_info_cpus, .qmp = "query-cpus-fast" },
    { "iothreads", "", "show iothreads", .run = run_info, .qmp = "query-iothreads",
      .format = hmp_format_iothreads },
    { "kvm", "", "show KVM information", .run = run_info, .qmp = "query-kvm",
      .format = hmp_format_kvm },
    { "locks", "", "show each device lock's acquisitions, contention and wait time",
      .run = run_info, .qmp = "x-query-device-locks", .format = hmp_format_locks },
    { "name", "", "show the current VM name", .run = run_info, .qmp = "query-name",
      .format = hmp_format_name },
    { "network", "", "show the network state", .run = run_info_network },
    { "pci", "", "show PCI info", .run = run_info, .qmp = "query-pci",
      .format = hmp_format_pci },
    { "qtree", "", "show device tree", .run = run_info_qtree },
    { "status", "", "show the current VM status (running|paused)", .run = run_info,
      .qmp = "query-status", .format = hmp_format_status },
    { "version", "", "show the version of QEMU", .run = run_info, .qmp = "query-version",
      .format = hmp_format_version },
    { NULL },
};

/* Sorted by name, as QEMU's help lists them. */
static const HmpCommand hmp_commands[] = {
    { "change", "device filename [format]", "change a removable medium, optional format",
      .args = { "block device name", "filename", "string" }, .min_args = 2,
      .run = run_change },
    { "cont|c", "", "resume emulation", .run = run_plain, .qmp = "cont" },
    { "eject", "[-f] device", "eject a removable medium (use -f to force it)",
      .options = "f", .args = { "block device name" }, .min_args = 1, .run = run_eject },
    { "help|?", "[cmd]", "show the help", .run = run_help, .raw = true },
    { "info", "[subcommand]", "show various information about the system state",
      .sub = hmp_info_commands },
    { "quit|q", "", "quit the emulator", .run = run_plain, .qmp = "quit",
      .ends_session = true },
    { "stop|s", "", "stop emulation", .run = run_plain, .qmp = "stop" },
    { "system_powerdown", "", "send system power down event", .run = run_plain,
      .qmp = "system_powerdown" },
    { "system_reset", "", "reset the system", .run = run_plain, .qmp = "system_reset" },
    { NULL },
};

/* ---- parsing ---- */

static void usage_error(GString *out, const HmpCommand *cmd, const char *try_name,
                        const char *what)
{
    /* QEMU names the command as its table spells it ("stop|s", "version"
     * for info version), and the help to try as it was typed. */
    g_string_append_printf(out, "%s: %s\nTry \"help %s\" for more information\n",
                           cmd->names, what, try_name);
}

/* Options, then arguments, as cmd takes them; false after printing why not. */
static bool parse_words(HmpCall *call, const char *try_name)
{
    const HmpCommand *cmd = call->cmd;
    char **w = call->words;
    for (; *w && (*w)[0] == '-' && (*w)[1]; w++) {
        const char *letter = (*w)[2] == '\0' && cmd->options ? strchr(cmd->options, (*w)[1])
                                                             : NULL;
        if (!letter || !g_ascii_islower(*letter)) {
            g_autofree char *what = g_strdup_printf("unsupported option %s", *w);
            usage_error(call->out, cmd, try_name, what);
            return false;
        }
        call->option[*letter - 'a'] = true;
    }
    for (; *w && call->nargs < HMP_MAX_ARGS && cmd->args[call->nargs]; w++) {
        call->args[call->nargs++] = *w;
    }
    if (*w) {
        usage_error(call->out, cmd, try_name, "extraneous characters at the end of line");
        return false;
    }
    if (call->nargs < cmd->min_args) {
        g_autofree char *what = g_strdup_printf("%s expected", cmd->args[call->nargs]);
        usage_error(call->out, cmd, try_name, what);
        return false;
    }
    return true;
}

bool hmp_run_command(const char *line, int64_t current_cpu, GString *out)
{
    g_auto(GStrv) all = g_strsplit_set(line, " \t", -1);
    g_autoptr(GPtrArray) words = g_ptr_array_new();
    for (char **w = all; *w; w++) {
        if (**w) {
            g_ptr_array_add(words, *w);
        }
    }
    g_ptr_array_add(words, NULL);
    char **w = (char **)words->pdata;
    if (!w[0]) {
        return true;
    }
    const HmpCommand *cmd = find_command(hmp_commands, w[0]);
    if (!cmd) {
        g_string_append_printf(out, "unknown command: '%s'\n", w[0]);
        return true;
    }
    g_autofree char *try_name = g_strdup(w[0]);
    if (cmd->sub) {
        if (!w[1]) {
            help_table(out, "info ", cmd->sub);
            return true;
        }
        const HmpCommand *sub = find_command(cmd->sub, w[1]);
        if (!sub) {
            g_string_append_printf(out, "unknown command: '%s %s'\n", w[0], w[1]);
            return true;
        }
        g_free(try_name);
        try_name = g_strdup_printf("%s %s", w[0], w[1]);
        cmd = sub;
        w++;
    }
    HmpCall call = { .cmd = cmd, .words = w + 1, .current_cpu = current_cpu, .out = out };
    if (!cmd->raw && !parse_words(&call, try_name)) {
        return true;
    }
    cmd->run(&call);
    return !(cmd->ends_session && !call.failed);
}

char *hmp_text_crlf(const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    return g_strjoinv("\r\n", lines);
}

/* ---- human-monitor-command ---- */

static JsonNode *qmp_human_monitor_command(JsonObject *args, Error **errp)
{
    /* As QEMU: checked only when given (the default is the first CPU). */
    int64_t cpu = qmp_arg_int(args, "cpu-index", 0);
    if (json_object_has_member(args, "cpu-index") && (cpu < 0 || cpu >= kvm_vcpu_count())) {
        error_setg(errp, "Parameter 'cpu-index' expects a CPU number");
        return NULL;
    }
    g_autoptr(GString) out = g_string_new(NULL);
    hmp_run_command(qmp_arg_str(args, "command-line"), cpu, out);
    g_autofree char *text = hmp_text_crlf(out->str);
    return json_node_init_string(json_node_alloc(), text);
}

const QmpCommandInfo hmp_qmp_commands[] = {
    { "human-monitor-command", qmp_human_monitor_command, "command-line:s,cpu-index:i?" },
    { NULL },
};
