/*
 * QEMU's option strings ("pc,accel=kvm,device-lock=off") and the value types
 * found in them: the command line, the device property parser
 * (softmmu/qdev-properties.c) and the backends that parse their own
 * options (block/drive-config.c, net/).
 *
 * Syntax, as QEMU documents it: items are separated by ','; a literal comma
 * inside an item is written ",,"; an item is "key=value" or a bare word; the
 * first item may omit "key=" when the option has an implied key (-machine pc
 * is -machine type=pc). A trailing comma is ignored.
 */
#ifndef QEMU_KEYVAL_H
#define QEMU_KEYVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/error.h"

typedef struct KeyvalItem {
    char *key;
    char *value;    /* NULL when the item had no '=' ("help", "+avx2", "usb") */
} KeyvalItem;

/*
 * Split str into a GPtrArray of KeyvalItem * (freed by g_ptr_array_unref),
 * in command-line order. A first item without '=' becomes
 * implied_key=item when implied_key is not NULL.
 */
GPtrArray *keyval_parse(const char *str, const char *implied_key, Error **errp);

/* "help" or "?", as QEMU accepts for its help requests. */
bool keyval_is_help(const char *str);
/* True if some item is a bare "help" (or "?"): "-device isa-serial,help". */
bool keyval_wants_help(GPtrArray *items);

/* on/yes/true/y or off/no/false/n. */
bool parse_bool(const char *text, bool *value);
/* A decimal or 0x-prefixed hexadecimal integer of at most max, no sign. */
bool parse_uint(const char *text, uint64_t max, uint64_t *value);

/* parse_bool; a bare key (value NULL) means on. */
bool keyval_item_bool(const KeyvalItem *item, bool *value, Error **errp);
/* A decimal or 0x-prefixed hexadecimal integer in [min, max]. */
bool keyval_item_uint(const KeyvalItem *item, uint64_t min, uint64_t max,
                      uint64_t *value, Error **errp);

/* QEMU's rule for the ids of objects and devices: a letter, then letters,
 * digits, '-', '.' and '_'. */
bool keyval_id_is_valid(const char *id);
/* The same, with the error that says the rule. */
bool keyval_check_id(const char *id, Error **errp);

/*
 * A size: digits with an optional k/K, m/M, g/G or t/T suffix in binary
 * units; a bare number counts in units of default_unit (QEMU's -m takes
 * MiB). Fails on garbage, signs and overflow.
 */
bool parse_size(const char *str, uint64_t default_unit, uint64_t *bytes);

#endif
