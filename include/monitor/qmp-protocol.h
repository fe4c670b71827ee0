/*
 * QMP's wire format, apart from any connection (monitor/qmp.c puts these
 * on a chardev): splitting the input byte stream into JSON texts, checking
 * each as a QMP request, and writing JSON the way QEMU writes it.
 */
#ifndef MONITOR_QMP_PROTOCOL_H
#define MONITOR_QMP_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-glib/json-glib.h>
#include "qemu/error.h"

/* QEMU's limits on one message (its JSON streamer's): total size, tokens
 * and nesting depth. A message over one gets one error and is skipped. */
#define JSON_MESSAGE_MAX_SIZE (64u << 20)
#define JSON_MESSAGE_MAX_TOKENS (2u << 20)
#define JSON_MESSAGE_MAX_DEPTH 1024

/*
 * The input stream, cut into top-level JSON values as they complete: an
 * object or array when its last bracket closes (strings and their escapes
 * understood, so a brace in a string counts for nothing), a scalar when the
 * byte after it arrives. Whitespace between values is skipped. Strings in
 * single quotes (a QEMU extension) are handed on re-quoted as standard
 * JSON. emit gets either a complete text or an error (a stray byte, a
 * limit exceeded) that QMP answers as it answers a parse error.
 */
typedef struct JsonSplitter JsonSplitter;
typedef void JsonSplitterEmitFn(void *opaque, const char *text, size_t len, Error *err);

JsonSplitter *json_splitter_new(JsonSplitterEmitFn *emit, void *opaque);
void json_splitter_feed(JsonSplitter *s, const uint8_t *buf, size_t len);
/* Forget a partial message (the client went away mid-message). */
void json_splitter_reset(JsonSplitter *s);
void json_splitter_free(JsonSplitter *s);

/* One request, checked as QEMU checks it before looking at the command. */
typedef struct QmpRequest {
    char *command;          /* of "execute" or "exec-oob" */
    JsonObject *args;       /* "arguments", or NULL */
    JsonNode *id;           /* "id" (any JSON), or NULL; set even when the
                             * request is refused, so the error echoes it */
    bool oob;               /* came as "exec-oob" */
} QmpRequest;

/*
 * Parse text and check it as a request: GenericError "JSON parse error,
 * ..." for bad JSON, then QEMU's "QMP input ..." messages. allow_oob: the
 * client enabled the oob capability (else "exec-oob" is unexpected).
 * False and *errp on a refusal; req->id is set as far as it could be read.
 */
bool qmp_request_parse(const char *text, size_t len, bool allow_oob, QmpRequest *req,
                       Error **errp);
void qmp_request_clear(QmpRequest *req);

/*
 * node as JSON text, QEMU's way: ", " and ": " between items, non-ASCII and
 * control characters as \uXXXX; pretty: one member per line, indented by
 * four, lines ended with newline.
 */
void qmp_json_append(GString *out, JsonNode *node, bool pretty, const char *newline);

#endif
