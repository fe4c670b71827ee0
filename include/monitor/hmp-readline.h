/*
 * The human monitor's line editor: bytes from a terminal (or a script) in,
 * the echo and finished lines out. It redraws as QEMU's monitor does (move
 * back over the old line, print the new one, erase the rest), so what a
 * terminal shows, and what a script reading the echo sees, are the same
 * under both VMMs.
 *
 * Keys: printable characters insert at the cursor; Backspace (DEL or ^H)
 * deletes before it; Enter (CR or LF; CR LF counts once) finishes the line;
 * Left/Right/Home/End move; Up/Down walk the history. Other control bytes
 * and escape sequences are ignored. No threads: the monitor's I/O thread.
 */
#ifndef MONITOR_HMP_READLINE_H
#define MONITOR_HMP_READLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#define HMP_READLINE_MAX 1024           /* longer lines are cut, as QEMU cuts them */
#define HMP_READLINE_HISTORY 64

typedef struct HmpReadline HmpReadline;

/* Text for the terminal (the echo, the redraws). */
typedef void HmpEchoFn(void *opaque, const char *text);
/* A finished line, without the newline (its echo was already sent). */
typedef void HmpLineFn(void *opaque, const char *line);

HmpReadline *hmp_readline_new(HmpEchoFn *echo_fn, HmpLineFn *line_fn, void *opaque);
void hmp_readline_free(HmpReadline *rl);

/* Start a new, empty line (after the prompt was printed). */
void hmp_readline_start(HmpReadline *rl);
/* Feed input. A finished line goes to line_fn before the rest of buf is
 * looked at, so a command's output comes before the next line's echo. */
void hmp_readline_feed(HmpReadline *rl, const uint8_t *buf, size_t len);

#endif
