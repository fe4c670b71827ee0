/*
 * Cutting QMP's input stream into JSON texts (monitor/qmp-protocol.h).
 *
 * A byte-at-a-time state machine rather than a parser: it only needs to
 * know where a value ends, so it tracks bracket depth and whether it is in
 * a string (and just after a backslash there). json-glib parses each text
 * once it is complete. Bytes may arrive in any chunks, one at a time too.
 */
#include <string.h>
#include "monitor/qmp-protocol.h"

typedef enum SplitterState {
    SPLIT_BETWEEN,      /* between values: whitespace, or the next value starts */
    SPLIT_CONTAINER,    /* inside an object or array, outside strings */
    SPLIT_STRING,       /* inside a string (top-level or in a container) */
    SPLIT_SCALAR,       /* a top-level number or keyword */
} SplitterState;

struct JsonSplitter {
    JsonSplitterEmitFn *emit;
    void *opaque;
    GString *text;
    SplitterState state;
    unsigned depth;
    char quote;         /* the string's quote: " or ' */
    bool escaped;       /* the last byte in the string was a backslash */
    bool skipping;      /* over a limit: read to the end of the value, keep nothing */
    bool recovering;    /* after a stray byte: skip to the next '{' or '[' */
    size_t tokens;      /* in the value so far, as QEMU's lexer counts them */
    bool in_scalar;     /* the last byte was part of a number or keyword */
    size_t scalar_start;    /* where in text that number or keyword began */
};

JsonSplitter *json_splitter_new(JsonSplitterEmitFn *emit, void *opaque)
{
    JsonSplitter *s = g_new0(JsonSplitter, 1);
    s->emit = emit;
    s->opaque = opaque;
    s->text = g_string_new(NULL);
    return s;
}

void json_splitter_reset(JsonSplitter *s)
{
    g_string_truncate(s->text, 0);
    s->state = SPLIT_BETWEEN;
    s->depth = 0;
    s->escaped = false;
    s->skipping = false;
    s->recovering = false;
    s->tokens = 0;
    s->in_scalar = false;
}

void json_splitter_free(JsonSplitter *s)
{
    if (s) {
        g_string_free(s->text, true);
        g_free(s);
    }
}

static void emit_error(JsonSplitter *s, const char *fmt, const char *arg)
{
    Error *err = NULL;
    error_setg(&err, fmt, arg);
    s->emit(s->opaque, NULL, 0, err);
}

/* The value is complete: hand it on (unless it was skipped) and start over. */
static void finish_value(JsonSplitter *s)
{
    if (!s->skipping) {
        s->emit(s->opaque, s->text->str, s->text->len, NULL);
    }
    json_splitter_reset(s);
}

/* Past a limit: one error now, the rest of the value is dropped. */
static void start_skipping(JsonSplitter *s, const char *what)
{
    emit_error(s, "JSON %s limit exceeded", what);
    s->skipping = true;
    g_string_truncate(s->text, 0);
}

static void append(JsonSplitter *s, char c)
{
    if (s->skipping) {
        return;
    }
    if (s->text->len >= JSON_MESSAGE_MAX_SIZE) {
        start_skipping(s, "token size");
        return;
    }
    g_string_append_c(s->text, c);
}

static bool is_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_scalar_char(uint8_t c)
{
    return g_ascii_isalnum(c) || c == '-' || c == '+' || c == '.';
}

/*
 * A byte no JSON token has (a control character in a string too). As
 * QEMU's lexer does, the value so far is abandoned with an error, and
 * input is skipped up to the next '{' or '[' (other values are unlikely to
 * be requests).
 */
static void stray_byte(JsonSplitter *s, uint8_t c)
{
    char stray[2] = { (char)c, 0 };
    json_splitter_reset(s);
    emit_error(s, "JSON parse error, stray '%s'", stray);
    s->recovering = true;
}

/* Tokens: each bracket, colon, comma, string, number and keyword. */
static void count_token(JsonSplitter *s)
{
    if (++s->tokens > JSON_MESSAGE_MAX_TOKENS && !s->skipping) {
        start_skipping(s, "token count");
    }
}

/* A string byte; single-quoted strings come out double-quoted, so a bare
 * " inside one is escaped and \' loses its backslash. */
static void string_byte(JsonSplitter *s, uint8_t c)
{
    if (c < 0x20) {
        stray_byte(s, c);   /* JSON strings have no raw control characters */
    } else if (s->escaped) {
        s->escaped = false;
        if (!(c == '\'' && s->quote == '\'')) {
            append(s, '\\');
        }
        append(s, c);
    } else if (c == '\\') {
        s->escaped = true;
    } else if (c == (uint8_t)s->quote) {
        append(s, '"');
        s->state = s->depth ? SPLIT_CONTAINER : SPLIT_BETWEEN;
        if (!s->depth) {
            finish_value(s);
        }
    } else {
        if (c == '"') {
            append(s, '\\');
        }
        append(s, c);
    }
}

static void start_string(JsonSplitter *s, uint8_t quote)
{
    s->quote = quote;
    s->state = SPLIT_STRING;
    append(s, '"');
}

/*
 * A number or keyword inside a value just ended. An integer outside int64
 * becomes a floating-point number, as QEMU reads a negative one (a
 * positive one below 2^64 QEMU keeps as uint64, which json-glib cannot):
 * json-glib would wrap it around instead.
 */
static void finish_scalar(JsonSplitter *s)
{
    const char *token = s->text->str + s->scalar_start;
    const char *digits = token + (*token == '-');
    if (s->skipping || !*digits || strspn(digits, "0123456789") != strlen(digits)) {
        return;
    }
    gint64 value;
    if (!g_ascii_string_to_signed(token, 10, G_MININT64, G_MAXINT64, &value, NULL)) {
        g_string_append(s->text, ".0");
    }
}

static void container_byte(JsonSplitter *s, uint8_t c)
{
    bool scalar = is_scalar_char(c);
    if (c == 0 || (!is_space(c) && !scalar && !strchr("{}[]:,\"'", c))) {
        stray_byte(s, c);
        return;
    }
    if (!is_space(c) && !(scalar && s->in_scalar)) {
        count_token(s);
    }
    if (scalar && !s->in_scalar) {
        s->scalar_start = s->text->len;
    } else if (!scalar && s->in_scalar) {
        finish_scalar(s);
    }
    s->in_scalar = scalar;
    if (c == '"' || c == '\'') {
        start_string(s, c);
        return;
    }
    if (c == '{' || c == '[') {
        if (++s->depth > JSON_MESSAGE_MAX_DEPTH && !s->skipping) {
            start_skipping(s, "nesting depth");
        }
    } else if (c == '}' || c == ']') {
        s->depth--;
    }
    append(s, c);
    if (!s->depth) {
        finish_value(s);
    }
}

static void between_byte(JsonSplitter *s, uint8_t c)
{
    if (is_space(c) || (s->recovering && c != '{' && c != '[')) {
        return;
    }
    s->recovering = false;
    if (c == '{' || c == '[') {
        s->state = SPLIT_CONTAINER;
        s->depth = 1;
        s->tokens = 1;
        append(s, c);
    } else if (c == '"' || c == '\'') {
        start_string(s, c);
    } else if (c == '}' || c == ']') {
        emit_error(s, "JSON parse error, expecting value%s", "");
    } else if (is_scalar_char(c)) {
        s->state = SPLIT_SCALAR;
        append(s, c);
    } else {
        stray_byte(s, c);
    }
}

void json_splitter_feed(JsonSplitter *s, const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t c = buf[i];
        switch (s->state) {
        case SPLIT_BETWEEN:
            between_byte(s, c);
            break;
        case SPLIT_CONTAINER:
            container_byte(s, c);
            break;
        case SPLIT_STRING:
            string_byte(s, c);
            break;
        case SPLIT_SCALAR:
            if (is_scalar_char(c)) {
                append(s, c);
            } else {
                /* The byte that ends a scalar may start the next value. */
                finish_value(s);
                between_byte(s, c);
            }
            break;
        }
    }
}
