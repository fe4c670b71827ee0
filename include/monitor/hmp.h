/*
 * The human monitor's commands, apart from any connection: a command line
 * in, QEMU 7.2's text out. Every command runs through qmp_dispatch(), so a
 * command behaves (and fails) as the QMP command it stands for; the
 * monitor only parses the line and formats the answer (monitor/hmp-format.h).
 * I/O thread (the main loop), as all QMP commands.
 */
#ifndef MONITOR_HMP_H
#define MONITOR_HMP_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

/* Run one line (an empty one does nothing); its text is appended to out
 * with "\n" line ends. current_cpu: the CPU "info cpus" marks. False when
 * the session is over (quit succeeded): no prompt, no more input. */
bool hmp_run_command(const char *line, int64_t current_cpu, GString *out);

/* info qtree: the device tree in QEMU 7.2's layout (monitor/hmp-qtree.c). */
void hmp_info_qtree(GString *out);

/* Free every human monitor (monitors_free_all, at exit). */
void hmp_monitors_free(void);

/* The text as the monitor sends it: every "\n" as "\r\n" (QEMU's monitor
 * does this for terminals and human-monitor-command alike). */
char *hmp_text_crlf(const char *text);

#endif
