/*
 * -sandbox's option string, as QEMU takes it: "on" or "off" first (the
 * implied key enable=), then obsolete=allow|deny,
 * elevateprivileges=allow|deny|children, spawn=allow|deny,
 * resourcecontrol=allow|deny. QEMU's defaults: obsolete calls denied,
 * the rest allowed. x-test-forbidden=main|vcpu is ours, for the tests.
 */
#include <string.h>
#include "qemu/keyval.h"
#include "sysemu/sandbox.h"

/* "allow" or "deny" (or, with children set, "children") into *value. */
static bool parse_choice(const KeyvalItem *item, const char *const *choices, int *value,
                         Error **errp)
{
    for (int i = 0; item->value && choices[i]; i++) {
        if (strcmp(item->value, choices[i]) == 0) {
            *value = i;
            return true;
        }
    }
    error_setg(errp, "invalid argument for %s", item->key);
    return false;
}

static bool apply_item(const KeyvalItem *item, SandboxConfig *cfg, Error **errp)
{
    static const char *const allow_deny[] = { "allow", "deny", NULL };
    static const char *const privileges[] = { "allow", "deny", "children", NULL };
    static const char *const test_threads[] = { "none", "main", "vcpu", NULL };
    int choice;
    if (strcmp(item->key, "enable") == 0) {
        if (!item->value || !parse_bool(item->value, &cfg->enabled)) {
            error_setg(errp, "Parameter 'enable' expects 'on' or 'off'");
            return false;
        }
        return true;
    }
    if (strcmp(item->key, "elevateprivileges") == 0) {
        if (!parse_choice(item, privileges, &choice, errp)) {
            return false;
        }
        cfg->privileges = (SandboxPrivileges[]) {
            SANDBOX_PRIVILEGES_ALLOW, SANDBOX_PRIVILEGES_DENY, SANDBOX_PRIVILEGES_CHILDREN,
        }[choice];
        return true;
    }
    if (strcmp(item->key, "x-test-forbidden") == 0) {
        if (!parse_choice(item, test_threads, &choice, errp)) {
            return false;
        }
        cfg->test = (SandboxTestThread[]) {
            SANDBOX_TEST_NONE, SANDBOX_TEST_MAIN, SANDBOX_TEST_VCPU,
        }[choice];
        return true;
    }
    bool *allowed = strcmp(item->key, "obsolete") == 0 ? &cfg->obsolete :
                    strcmp(item->key, "spawn") == 0 ? &cfg->spawn :
                    strcmp(item->key, "resourcecontrol") == 0 ? &cfg->resourcecontrol : NULL;
    if (!allowed) {
        error_setg(errp, "Invalid parameter '%s'", item->key);
        return false;
    }
    if (!parse_choice(item, allow_deny, &choice, errp)) {
        return false;
    }
    *allowed = choice == 0;
    return true;
}

bool sandbox_parse(const char *arg, SandboxConfig *cfg, Error **errp)
{
    *cfg = (SandboxConfig) { .spawn = true, .resourcecontrol = true };
    GPtrArray *items = keyval_parse(arg, "enable", errp);
    if (!items) {
        return false;
    }
    bool ok = true;
    for (guint i = 0; ok && i < items->len; i++) {
        ok = apply_item(g_ptr_array_index(items, i), cfg, errp);
    }
    g_ptr_array_unref(items);
    return ok;
}
