/*
 * Typed device properties: what `-device TYPE,PROP=VALUE` and
 * `-global TYPE.PROP=VALUE` may set (docs/design.md, "Device registry").
 *
 * A device model keeps its properties in an options struct of its own and
 * declares them in a table of DeviceProperty, built with the DEFINE_PROP_*
 * macros below. Each macro checks at compile time that the field has the C
 * type the property kind stores, so a table cannot write an int32 into a
 * bool. The registry (hw/qdev-registry.h) allocates the struct, writes the
 * defaults, parses the user's strings into it and hands it to the model's
 * realize function.
 */
#ifndef HW_QDEV_PROPERTIES_H
#define HW_QDEV_PROPERTIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "qemu/error.h"

typedef enum DevicePropertyKind {
    DEVICE_PROP_BOOL,       /* bool: on/off, yes/no, true/false */
    DEVICE_PROP_ON_OFF_AUTO,/* OnOffAuto: on/off (as a bool takes them) or auto */
    DEVICE_PROP_UINT8,      /* uint8_t..uint64_t: decimal or 0x-hexadecimal */
    DEVICE_PROP_UINT16,
    DEVICE_PROP_UINT32,
    DEVICE_PROP_UINT64,
    DEVICE_PROP_INT32,      /* int32_t, may be negative */
    DEVICE_PROP_SIZE,       /* uint64_t bytes, with an optional k/M/G/T suffix */
    DEVICE_PROP_STRING,     /* char *, g_free'd with the options */
    DEVICE_PROP_MACADDR,    /* MACAddr: 52:54:00:12:34:56 */
    DEVICE_PROP_PCI_DEVFN,  /* int32_t: SLOT[.FN] in hexadecimal, -1 if not given */
    DEVICE_PROP_ENUM,       /* int: one of the names of the property's choices */
    /* References to a backend by its id (DeviceLink), resolved when the
     * device is realized: an -object iothread, a -chardev, a -drive, a
     * -netdev. */
    DEVICE_PROP_IOTHREAD,
    DEVICE_PROP_CHARDEV,
    DEVICE_PROP_DRIVE,
    DEVICE_PROP_NETDEV,
    DEVICE_PROP_KIND_COUNT,
} DevicePropertyKind;

/* A switch whose "auto" the device decides when it is realized, as
 * QEMU's OnOffAuto properties (virtio-pci's disable-legacy). */
typedef enum OnOffAuto {
    ON_OFF_AUTO_AUTO,
    ON_OFF_AUTO_ON,
    ON_OFF_AUTO_OFF,
} OnOffAuto;

/*
 * The values of an enum property (QEMU's QAPI enum properties, as a
 * device's werror=): value v, 0 <= v < count, is written name(v). A name
 * function rather than a table, so that a kind whose names live elsewhere
 * (drive_error_action_name) is not spelled twice.
 */
typedef struct DevicePropertyChoices {
    const char *type_name;      /* for -device TYPE,help: werror=<BlockdevOnError> */
    int count;
    const char *(*name)(int value);
    /* Bit v: value v is QEMU's, but this VMM does not implement it, so it
     * is refused when parsed (kvm-pit's lost_tick_policy=slew). */
    uint32_t unsupported;
} DevicePropertyChoices;

typedef struct MACAddr {
    uint8_t a[6];
} MACAddr;

/* A backend reference: the parser stores id (NULL: none given), the
 * registry sets backend to the object that id names just before realize. */
typedef struct DeviceLink {
    char *id;
    void *backend;
} DeviceLink;

typedef struct DeviceProperty {
    const char *name;
    DevicePropertyKind kind;
    size_t offset;              /* of the field in the options struct */
    union {
        bool b;
        uint64_t u;
        int64_t i;
        const char *s;
    } defval;                   /* zero unless the macro gives one */
    const char *description;    /* NULL: the kind's own, if it has one */
    const DevicePropertyChoices *choices;   /* DEVICE_PROP_ENUM's values */
    bool hide_default;          /* -device TYPE,help shows no default (bootindex) */
    /* QEMU's property, which this VMM implements only at its default:
     * any other value is refused when parsed, naming it. */
    bool only_default;
} DeviceProperty;

/* offsetof(State, field), refusing to compile unless the field is a ctype. */
#define DEVICE_PROP_FIELD(State, field, ctype) \
    (offsetof(State, field) + 0 * sizeof(char[ \
        __builtin_types_compatible_p(__typeof__(((State *)0)->field), ctype) ? 1 : -1]))

#define DEFINE_PROP_KIND(name_, kind_, State, field, ctype, desc_) \
    .name = (name_), .kind = (kind_), \
    .offset = DEVICE_PROP_FIELD(State, field, ctype), .description = (desc_)

/* A property whose default is defval.member = default_. */
#define DEFINE_PROP_DEFAULT(name_, kind_, State, field, ctype, member, default_, desc_) \
    { DEFINE_PROP_KIND(name_, kind_, State, field, ctype, desc_), .defval.member = (default_) }

#define DEFINE_PROP_BOOL(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_BOOL, State, field, bool, b, default_, desc_)
#define DEFINE_PROP_ON_OFF_AUTO(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_ON_OFF_AUTO, State, field, OnOffAuto, i, default_, \
                        desc_)
#define DEFINE_PROP_UINT8(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_UINT8, State, field, uint8_t, u, default_, desc_)
#define DEFINE_PROP_UINT16(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_UINT16, State, field, uint16_t, u, default_, desc_)
#define DEFINE_PROP_UINT32(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_UINT32, State, field, uint32_t, u, default_, desc_)
#define DEFINE_PROP_UINT64(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_UINT64, State, field, uint64_t, u, default_, desc_)
#define DEFINE_PROP_INT32(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_INT32, State, field, int32_t, i, default_, desc_)
#define DEFINE_PROP_SIZE(name_, State, field, default_, desc_) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_SIZE, State, field, uint64_t, u, default_, desc_)
#define DEFINE_PROP_STRING(name_, State, field, desc_) \
    { DEFINE_PROP_KIND(name_, DEVICE_PROP_STRING, State, field, char *, desc_) }
#define DEFINE_PROP_MACADDR(name_, State, field) \
    { DEFINE_PROP_KIND(name_, DEVICE_PROP_MACADDR, State, field, MACAddr, NULL) }
/* QEMU's addr= of every PCI device: SLOT[.FN], the first free slot if unset. */
#define DEFINE_PROP_PCI_DEVFN(name_, State, field) \
    DEFINE_PROP_DEFAULT(name_, DEVICE_PROP_PCI_DEVFN, State, field, int32_t, i, -1, NULL)
/* A property of QEMU's that takes only its default here (only_default):
 * defval.member = default_, a field of C type ctype. Undescribed, as
 * QEMU's plain properties are (a bool's help says no "on/off"). */
#define DEFINE_PROP_ONLY_DEFAULT(name_, kind_, State, field, ctype, member, default_) \
    { DEFINE_PROP_KIND(name_, kind_, State, field, ctype, ""), \
      .defval.member = (default_), .only_default = true }
/* An int holding one of choices' values, default_ if not given. */
#define DEFINE_PROP_ENUM(name_, State, field, choices_, default_, desc_) \
    { DEFINE_PROP_KIND(name_, DEVICE_PROP_ENUM, State, field, int, desc_), \
      .choices = (choices_), .defval.i = (default_) }
#define DEFINE_PROP_LINK(name_, kind_, State, field) \
    { DEFINE_PROP_KIND(name_, kind_, State, field, DeviceLink, NULL) }

/* Write prop's default into the options struct. */
void device_property_set_default(const DeviceProperty *prop, void *options);
/*
 * Parse text (NULL: the key was given without '=', which only a bool
 * or an OnOffAuto takes, as on) into prop's field. Errors name the property as QEMU does,
 * 'TYPE.PROP', with type_name.
 */
bool device_property_parse(const DeviceProperty *prop, const char *type_name,
                           const char *text, void *options, Error **errp);
/* Copy prop's value from one options struct to another (strings duplicated). */
void device_property_copy(const DeviceProperty *prop, void *dst, const void *src);
/* Free what prop's field owns (strings, link ids). */
void device_property_clear(const DeviceProperty *prop, void *options);
/* The link of a backend-reference property (kind IOTHREAD..NETDEV). */
DeviceLink *device_property_link(const DeviceProperty *prop, void *options);
bool device_property_is_link(const DeviceProperty *prop);
/* The name of a backend-reference kind, as in "-object iothread": "iothread". */
const char *device_property_backend_name(DevicePropertyKind kind);
/* The value in options as QEMU's `info qtree` prints it: true, "auto",
 * 4 (0x4), 2147483648 (2 GiB), "text", "52:54:00:12:34:56", 03.0, "stop"
 * (an enum), "n0" (a reference: the backend's id). */
char *device_property_value_text(const DeviceProperty *prop, const void *options);
/* One line of `-device TYPE,help`, in QEMU's layout:
 * "  addr=<int32>           - Slot and ... (default: -1)". */
void device_property_print_help(const DeviceProperty *prop, FILE *out);

#endif
