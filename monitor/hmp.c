/*
 * The human monitor on a character backend (hmp_monitor_new in
 * monitor/monitor.h): banner, prompt and line editing around
 * hmp_run_command().
 *
 * On its own backend (-monitor stdio, a socket) it greets when the backend
 * opens. On mon:stdio it shares the backend with the serial port: it greets
 * the first time Ctrl-a c gives it the focus, shows a fresh prompt each time
 * it gets it back, and ends the line when it loses it, as QEMU's does.
 * Everything runs on the I/O thread (the main loop), where the backend
 * delivers input.
 */
#include <string.h>
#include "monitor/hmp.h"
#include "monitor/hmp-readline.h"
#include "monitor/monitor.h"

/* The version query-version and -version report. */
#define HMP_QEMU_VERSION "7.2.0"
#define HMP_PROMPT "(qemu) "

typedef struct HmpMonitor {
    Chardev *chr;
    HmpReadline *rl;
    bool greeted;
    bool ended;             /* quit succeeded: input is ignored */
    int64_t current_cpu;
} HmpMonitor;

static GPtrArray *hmp_monitors;     /* of HmpMonitor *, for hmp_monitors_free() */

/* Monitor text goes out with "\r\n" line ends (the terminal is raw). */
static void hmp_send(HmpMonitor *mon, const char *text)
{
    g_autofree char *crlf = hmp_text_crlf(text);
    chardev_write(mon->chr, (const uint8_t *)crlf, strlen(crlf));
}

static void hmp_echo(void *opaque, const char *text)
{
    hmp_send(opaque, text);
}

static void hmp_prompt(HmpMonitor *mon)
{
    hmp_send(mon, HMP_PROMPT);
    hmp_readline_start(mon->rl);
}

static void hmp_line(void *opaque, const char *line)
{
    HmpMonitor *mon = opaque;
    g_autoptr(GString) out = g_string_new(NULL);
    bool more = hmp_run_command(line, mon->current_cpu, out);
    hmp_send(mon, out->str);
    if (more) {
        hmp_prompt(mon);
    } else {
        mon->ended = true;
    }
}

static void hmp_greet(HmpMonitor *mon)
{
    hmp_send(mon, "QEMU " HMP_QEMU_VERSION " monitor - type 'help' for more information\n");
    mon->greeted = true;
    mon->ended = false;
    hmp_prompt(mon);
}

/* Commands run at once, so any amount of input can be taken. */
static size_t hmp_can_read(void *opaque)
{
    HmpMonitor *mon = opaque;
    return mon->ended ? 0 : HMP_READLINE_MAX;
}

static void hmp_read(void *opaque, const uint8_t *buf, size_t len)
{
    HmpMonitor *mon = opaque;
    if (!mon->ended) {
        hmp_readline_feed(mon->rl, buf, len);
    }
}

static void hmp_event(void *opaque, ChardevEvent event)
{
    HmpMonitor *mon = opaque;
    if (event == CHR_EVENT_OPENED) {
        hmp_greet(mon);
    }
}

static void hmp_focus(void *opaque, bool focused)
{
    HmpMonitor *mon = opaque;
    if (!focused) {
        hmp_send(mon, "\n");
    } else if (!mon->greeted) {
        hmp_greet(mon);
    } else {
        hmp_prompt(mon);
    }
}

bool hmp_monitor_new(Chardev *chr, Error **errp)
{
    HmpMonitor *mon = g_new0(HmpMonitor, 1);
    mon->chr = chr;
    mon->rl = hmp_readline_new(hmp_echo, hmp_line, mon);
    if (!hmp_monitors) {
        hmp_monitors = g_ptr_array_new();
    }
    g_ptr_array_add(hmp_monitors, mon);
    chardev_set_handlers(chr, hmp_can_read, hmp_read, mon);
    if (chardev_is_mux(chr)) {
        chardev_mux_set_focus_handler(chr, hmp_focus, mon);
    } else {
        chardev_set_event_handler(chr, hmp_event, mon);
    }
    return true;
}

void hmp_monitors_free(void)
{
    for (guint i = 0; hmp_monitors && i < hmp_monitors->len; i++) {
        HmpMonitor *mon = g_ptr_array_index(hmp_monitors, i);
        hmp_readline_free(mon->rl);
        g_free(mon);
    }
    g_clear_pointer(&hmp_monitors, g_ptr_array_unref);
}
