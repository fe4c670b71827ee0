/* QEMU option strings and their value types (see qemu/keyval.h). */
#include <string.h>
#include "qemu/keyval.h"

static void keyval_item_free(gpointer data)
{
    KeyvalItem *item = data;
    g_free(item->key);
    g_free(item->value);
    g_free(item);
}

/*
 * Copy the item starting at *pos up to the next lone ',' (consumed), turning
 * each ",," into ','. Leaves *pos at the start of the following item, or at
 * the terminating NUL.
 */
static char *next_item_text(const char **pos)
{
    GString *text = g_string_new(NULL);
    const char *p = *pos;
    while (*p) {
        if (*p == ',') {
            if (p[1] != ',') {
                p++;
                break;
            }
            p++;
        }
        g_string_append_c(text, *p);
        p++;
    }
    *pos = p;
    return g_string_free(text, FALSE);
}

static KeyvalItem *keyval_item_new(const char *text, const char *implied_key)
{
    KeyvalItem *item = g_new0(KeyvalItem, 1);
    const char *equals = strchr(text, '=');
    if (equals) {
        item->key = g_strndup(text, equals - text);
        item->value = g_strdup(equals + 1);
    } else if (implied_key) {
        item->key = g_strdup(implied_key);
        item->value = g_strdup(text);
    } else {
        item->key = g_strdup(text);
    }
    return item;
}

GPtrArray *keyval_parse(const char *str, const char *implied_key, Error **errp)
{
    GPtrArray *items = g_ptr_array_new_with_free_func(keyval_item_free);
    const char *pos = str;
    do {
        char *text = next_item_text(&pos);
        KeyvalItem *item = keyval_item_new(text, items->len == 0 ? implied_key : NULL);
        g_free(text);
        g_ptr_array_add(items, item);
        if (item->key[0] == '\0') {
            error_setg(errp, "empty parameter name");
            g_ptr_array_unref(items);
            return NULL;
        }
    } while (*pos);
    return items;
}

bool keyval_is_help(const char *str)
{
    return strcmp(str, "help") == 0 || strcmp(str, "?") == 0;
}

bool keyval_wants_help(GPtrArray *items)
{
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        if (!item->value && keyval_is_help(item->key)) {
            return true;
        }
    }
    return false;
}

bool parse_bool(const char *text, bool *value)
{
    static const char *const true_words[] = { "on", "yes", "true", "y", NULL };
    static const char *const false_words[] = { "off", "no", "false", "n", NULL };

    if (g_strv_contains(true_words, text)) {
        *value = true;
        return true;
    }
    if (g_strv_contains(false_words, text)) {
        *value = false;
        return true;
    }
    return false;
}

bool keyval_item_bool(const KeyvalItem *item, bool *value, Error **errp)
{
    if (!item->value) {
        *value = true;
        return true;
    }
    if (!parse_bool(item->value, value)) {
        error_setg(errp, "parameter '%s' expects on or off, not '%s'", item->key, item->value);
        return false;
    }
    return true;
}

bool parse_uint(const char *text, uint64_t max, uint64_t *value)
{
    const char *digits = text;
    unsigned base = 10;
    if (g_str_has_prefix(digits, "0x") || g_str_has_prefix(digits, "0X")) {
        digits += 2;
        base = 16;
    }
    /* g_ascii_string_to_unsigned would also take a sign; QEMU does not.
     * It insists on consuming the whole string, so checking the first
     * character is enough. */
    if (!(base == 16 ? g_ascii_isxdigit(digits[0]) : g_ascii_isdigit(digits[0]))) {
        return false;
    }
    guint64 number;
    if (!g_ascii_string_to_unsigned(digits, base, 0, max, &number, NULL)) {
        return false;
    }
    *value = number;
    return true;
}

bool keyval_item_uint(const KeyvalItem *item, uint64_t min, uint64_t max,
                      uint64_t *value, Error **errp)
{
    if (!item->value) {
        error_setg(errp, "parameter '%s' needs a value", item->key);
        return false;
    }
    uint64_t number;
    if (!parse_uint(item->value, UINT64_MAX, &number)) {
        error_setg(errp, "parameter '%s' expects a number, not '%s'", item->key, item->value);
        return false;
    }
    if (number < min || number > max) {
        error_setg(errp, "parameter '%s' must be between %" G_GUINT64_FORMAT
                   " and %" G_GUINT64_FORMAT ", not %s", item->key,
                   (guint64)min, (guint64)max, item->value);
        return false;
    }
    *value = number;
    return true;
}

static uint64_t size_suffix_unit(char suffix)
{
    switch (g_ascii_tolower(suffix)) {
    case 'k':
        return UINT64_C(1) << 10;
    case 'm':
        return UINT64_C(1) << 20;
    case 'g':
        return UINT64_C(1) << 30;
    case 't':
        return UINT64_C(1) << 40;
    default:
        return 0;
    }
}

bool parse_size(const char *str, uint64_t default_unit, uint64_t *bytes)
{
    const char *end = str;
    while (g_ascii_isdigit(*end)) {
        end++;
    }
    if (end == str) {
        return false;
    }
    uint64_t unit = default_unit;
    if (*end) {
        unit = size_suffix_unit(*end);
        if (!unit || end[1]) {
            return false;
        }
    }
    char *digits = g_strndup(str, end - str);
    guint64 number;
    bool ok = g_ascii_string_to_unsigned(digits, 10, 0, G_MAXUINT64, &number, NULL);
    g_free(digits);
    if (!ok || number > UINT64_MAX / unit) {
        return false;
    }
    *bytes = number * unit;
    return true;
}

bool keyval_id_is_valid(const char *id)
{
    if (!g_ascii_isalpha(id[0])) {
        return false;
    }
    for (const char *p = id + 1; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-._", *p)) {
            return false;
        }
    }
    return true;
}

bool keyval_check_id(const char *id, Error **errp)
{
    if (!keyval_id_is_valid(id)) {
        error_setg(errp, "'%s' is not a valid id: it must start with a letter and hold "
                   "only letters, digits, '-', '.' and '_'", id);
        return false;
    }
    return true;
}
