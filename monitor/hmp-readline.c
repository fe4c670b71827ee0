/*
 * The human monitor's line editor (monitor/hmp-readline.h).
 *
 * The terminal is kept in step by comparing what it shows (shown,
 * shown_cursor) with the line being edited after every byte: a changed
 * line is redrawn whole from its start, then the cursor is moved. Redrawing
 * whole lines costs a few bytes per key and needs no knowledge of the
 * terminal beyond three ANSI sequences (cursor left, right, erase to end).
 */
#include <string.h>
#include "monitor/hmp-readline.h"

#define KEY_ESC       0x1b
#define KEY_BACKSPACE 0x08
#define KEY_DEL       0x7f

typedef enum EscState {
    ESC_NONE,
    ESC_SEEN,       /* ESC */
    ESC_SEQUENCE,   /* ESC [ or ESC O, then parameters until a final byte */
} EscState;

struct HmpReadline {
    HmpEchoFn *echo_fn;
    HmpLineFn *line_fn;
    void *opaque;

    char line[HMP_READLINE_MAX];
    size_t len, cursor;
    char shown[HMP_READLINE_MAX];
    size_t shown_len, shown_cursor;

    EscState esc;
    unsigned esc_param;
    bool last_was_cr;

    char *history[HMP_READLINE_HISTORY];  /* oldest first */
    size_t history_len;
    size_t history_pos;                   /* == history_len: the new line */
};

HmpReadline *hmp_readline_new(HmpEchoFn *echo_fn, HmpLineFn *line_fn, void *opaque)
{
    HmpReadline *rl = g_new0(HmpReadline, 1);
    rl->echo_fn = echo_fn;
    rl->line_fn = line_fn;
    rl->opaque = opaque;
    return rl;
}

void hmp_readline_free(HmpReadline *rl)
{
    if (rl) {
        for (size_t i = 0; i < rl->history_len; i++) {
            g_free(rl->history[i]);
        }
        g_free(rl);
    }
}

void hmp_readline_start(HmpReadline *rl)
{
    rl->len = rl->cursor = 0;
    rl->shown_len = rl->shown_cursor = 0;
    rl->history_pos = rl->history_len;
}

static void echo_repeat(GString *out, const char *seq, size_t times)
{
    for (size_t i = 0; i < times; i++) {
        g_string_append(out, seq);
    }
}

/* Bring the terminal in line with the line being edited. */
static void refresh(HmpReadline *rl)
{
    g_autoptr(GString) out = g_string_new(NULL);
    if (rl->len != rl->shown_len || memcmp(rl->line, rl->shown, rl->len) != 0) {
        echo_repeat(out, "\033[D", rl->shown_cursor);
        g_string_append_len(out, rl->line, rl->len);
        g_string_append(out, "\033[K");
        memcpy(rl->shown, rl->line, rl->len);
        rl->shown_len = rl->len;
        rl->shown_cursor = rl->len;
    }
    if (rl->cursor < rl->shown_cursor) {
        echo_repeat(out, "\033[D", rl->shown_cursor - rl->cursor);
    } else {
        echo_repeat(out, "\033[C", rl->cursor - rl->shown_cursor);
    }
    rl->shown_cursor = rl->cursor;
    if (out->len) {
        rl->echo_fn(rl->opaque, out->str);
    }
}

static void history_add(HmpReadline *rl, const char *line)
{
    if (!line[0] || (rl->history_len && !strcmp(rl->history[rl->history_len - 1], line))) {
        return;
    }
    if (rl->history_len == HMP_READLINE_HISTORY) {
        g_free(rl->history[0]);
        memmove(rl->history, rl->history + 1, (HMP_READLINE_HISTORY - 1) * sizeof(char *));
        rl->history_len--;
    }
    rl->history[rl->history_len++] = g_strdup(line);
}

static void load_line(HmpReadline *rl, const char *text)
{
    rl->len = MIN(strlen(text), HMP_READLINE_MAX - 1);
    memcpy(rl->line, text, rl->len);
    rl->cursor = rl->len;
}

static void history_move(HmpReadline *rl, bool older)
{
    if (older && rl->history_pos > 0) {
        load_line(rl, rl->history[--rl->history_pos]);
    } else if (!older && rl->history_pos < rl->history_len) {
        rl->history_pos++;
        load_line(rl, rl->history_pos < rl->history_len ? rl->history[rl->history_pos] : "");
    }
}

static void enter(HmpReadline *rl)
{
    char line[HMP_READLINE_MAX];
    memcpy(line, rl->line, rl->len);
    line[rl->len] = '\0';
    rl->echo_fn(rl->opaque, "\n");
    history_add(rl, line);
    hmp_readline_start(rl);
    rl->line_fn(rl->opaque, line);
}

static void insert_char(HmpReadline *rl, char c)
{
    if (rl->len == HMP_READLINE_MAX - 1) {
        return;
    }
    memmove(rl->line + rl->cursor + 1, rl->line + rl->cursor, rl->len - rl->cursor);
    rl->line[rl->cursor++] = c;
    rl->len++;
}

static void delete_at(HmpReadline *rl, size_t pos)
{
    memmove(rl->line + pos, rl->line + pos + 1, rl->len - pos - 1);
    rl->len--;
}

/* The final byte of ESC [ ... or ESC O ...: cursor keys and friends. */
static void escape_sequence(HmpReadline *rl, uint8_t final)
{
    switch (final) {
    case 'A':
        history_move(rl, true);
        break;
    case 'B':
        history_move(rl, false);
        break;
    case 'C':
        rl->cursor += rl->cursor < rl->len;
        break;
    case 'D':
        rl->cursor -= rl->cursor > 0;
        break;
    case 'H':
        rl->cursor = 0;
        break;
    case 'F':
        rl->cursor = rl->len;
        break;
    case '~':   /* ESC [ 1 ~ home, 3 ~ delete, 4 ~ end */
        if (rl->esc_param == 1) {
            rl->cursor = 0;
        } else if (rl->esc_param == 3 && rl->cursor < rl->len) {
            delete_at(rl, rl->cursor);
        } else if (rl->esc_param == 4) {
            rl->cursor = rl->len;
        }
        break;
    default:
        break;
    }
}

static void feed_byte(HmpReadline *rl, uint8_t c)
{
    bool was_cr = rl->last_was_cr;
    rl->last_was_cr = c == '\r';

    switch (rl->esc) {
    case ESC_SEEN:
        rl->esc = c == '[' || c == 'O' ? ESC_SEQUENCE : ESC_NONE;
        rl->esc_param = 0;
        return;
    case ESC_SEQUENCE:
        if (c >= '0' && c <= '9') {
            rl->esc_param = MIN(rl->esc_param * 10 + (c - '0'), 1000u);
        } else if (c >= 0x40 && c <= 0x7e) {
            rl->esc = ESC_NONE;
            escape_sequence(rl, c);
            refresh(rl);
        }
        return;
    case ESC_NONE:
        break;
    }

    if (c == '\r' || (c == '\n' && !was_cr)) {
        enter(rl);
        return;
    }
    if (c == KEY_ESC) {
        rl->esc = ESC_SEEN;
    } else if (c == KEY_DEL || c == KEY_BACKSPACE) {
        if (rl->cursor > 0) {
            delete_at(rl, --rl->cursor);
        }
    } else if (c >= 0x20 && c != '\n') {
        insert_char(rl, c);
    }
    refresh(rl);
}

void hmp_readline_feed(HmpReadline *rl, const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        feed_byte(rl, buf[i]);
    }
}
