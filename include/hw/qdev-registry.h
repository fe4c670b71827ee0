/*
 * The device registry: every device model that -device can create declares
 * a DeviceTypeInfo (name, bus, description, typed properties, realize) in
 * its own file, and hw/core/device-types.c lists them. The command line
 * turns each -device into a DeviceConfig checked against that table; the
 * machine realizes the configs on its buses without knowing any device
 * name. See docs/design.md, "Device registry".
 */
#ifndef HW_QDEV_REGISTRY_H
#define HW_QDEV_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "hw/pci/pci.h"
#include "hw/qdev.h"
#include "hw/qdev-properties.h"
#include "qemu/error.h"

typedef enum DeviceBusKind {
    DEVICE_BUS_NONE,    /* on no bus the user chooses (a platform device) */
    DEVICE_BUS_ISA,
    DEVICE_BUS_PCI,
    DEVICE_BUS_IDE,     /* a channel of the PIIX3 IDE function */
} DeviceBusKind;

/* The groups `-device help` lists, in QEMU's order and with its headings. */
typedef enum DeviceCategory {
    DEVICE_CATEGORY_STORAGE,
    DEVICE_CATEGORY_NETWORK,
    DEVICE_CATEGORY_INPUT,      /* QEMU files its serial ports here */
    DEVICE_CATEGORY_MISC,
    DEVICE_CATEGORY_COUNT,
} DeviceCategory;

/* What the machine offers the devices it realizes. */
struct PIIXIDEState;
typedef struct DeviceBuses {
    PCIBus *pci;        /* NULL: a machine without PCI */
    struct PIIXIDEState *ide;   /* the IDE function's channels, or NULL */
    /* The bus= the user chose, as its number (ide.1: 1); -1: none given.
     * Set by the registry for each realize, after checking that the bus
     * exists and is of the device's kind. */
    int bus_index;
    /* The vCPUs the machine starts with (-smp N), for the devices QEMU
     * sizes by them (virtio-blk's default num-queues); 0 counts as 1. */
    unsigned boot_cpus;
} DeviceBuses;

typedef struct DeviceTypeInfo {
    const char *name;           /* as -device spells it */
    /* Another name -device and -global take for this type, as QEMU's
     * aliases (virtio-net for virtio-net-pci), or NULL. */
    const char *alias;
    DeviceBusKind bus;
    DeviceCategory category;
    const char *description;    /* one line for -device help, or NULL */
    const DeviceProperty *props;
    size_t n_props;
    size_t options_size;        /* of the struct the properties are fields of */
    /*
     * Create the device from its options (every property set: given,
     * from -global, or the default; every link resolved). Returns the
     * device, whose id the registry then sets from id=, or NULL with
     * *errp set. The error need not repeat the -device option: the
     * caller adds it.
     */
    QEMUDevice *(*realize)(const void *options, const DeviceBuses *buses, Error **errp);
    /* NULL for a device of the board (PIIX4_PM, kvm-pit): the machine makes
     * it, so -device refuses it and -device help does not list it (as QEMU
     * does), but -device TYPE,help and -global reach its properties, whose
     * values the machine reads with board_device_options(). */
    /*
     * For info qtree, which shows what a device chose when it was realized
     * as QEMU does (isa-serial's iobase, virtio's vectors): write those
     * values into options, a shallow copy of the options the device was
     * made with (or of the defaults, for one the machine made). A string
     * or link id written must live as long as the device. NULL: every
     * value is as given. Main loop; what it reads is fixed at realize.
     */
    void (*chosen_options)(QEMUDevice *dev, void *options);
} DeviceTypeInfo;

#define DEVICE_PROPERTIES(table) .props = (table), .n_props = G_N_ELEMENTS(table)

/*
 * What every PCI device takes, as QEMU's PCIDevice: addr=SLOT[.FN] (-1:
 * the first free slot), multifunction= (bit 7 of the function's header
 * type, which the registry sets after realize) and romfile= (only empty:
 * there is no firmware to run an option ROM, which the registry checks).
 * A device's options struct holds one, and its table lists
 * DEFINE_PCI_DEVICE_PROPERTIES of it.
 */
typedef struct PCIDeviceOptions {
    int32_t addr;
    bool multifunction;
    char *romfile;
} PCIDeviceOptions;

#define DEFINE_PCI_DEVICE_PROPERTIES(State, field) \
    DEFINE_PROP_PCI_DEVFN("addr", State, field.addr), \
    DEFINE_PROP_BOOL("multifunction", State, field.multifunction, false, NULL), \
    DEFINE_PROP_STRING("romfile", State, field.romfile, NULL)

/* The table of a device whose options are only a PCIDeviceOptions. */
extern const DeviceProperty pci_device_properties[3];

/* QEMU's bootindex= of disks and NICs: stored and shown, no effect (this
 * VMM boots only -kernel, where QEMU's firmware ignores it too). An
 * int32_t, -1 when not given; `-device TYPE,help` shows no default, as
 * QEMU's. */
#define DEFINE_PROP_BOOTINDEX(State, field) \
    { DEFINE_PROP_KIND("bootindex", DEVICE_PROP_INT32, State, field, int32_t, NULL), \
      .defval.i = -1, .hide_default = true }

/* The device types, in hw/core/device-types.c. */
extern const DeviceTypeInfo *const device_types[];
extern const size_t device_types_count;

/* One -device: its type and the values of its properties. */
typedef struct DeviceConfig {
    const DeviceTypeInfo *type;
    char *id;                   /* id=, or NULL */
    char *bus;                  /* bus=, or NULL: checked at realize */
    char *origin;               /* "-device TYPE,...", for errors at realize */
    void *options;              /* type->options_size bytes */
    uint64_t given;             /* bit i: props[i] set explicitly */
} DeviceConfig;

/* The type of name or of its alias. */
const DeviceTypeInfo *device_type_find(const char *name);
const DeviceProperty *device_type_find_property(const DeviceTypeInfo *type, const char *name);
/* -device help: every type, grouped and sorted as QEMU prints them. */
void device_types_print(FILE *out);
/* -device TYPE,help: the properties with their types and defaults. */
void device_type_print_properties(const DeviceTypeInfo *type, FILE *out);

/* A config of type with every property at its default. */
DeviceConfig *device_config_new(const DeviceTypeInfo *type, const char *origin);
void device_config_free(DeviceConfig *dev);
/*
 * Set property name (or id=, or bus=, which every device takes) from the user's text (NULL: given as a
 * bare key). Errors name the device and the property:
 * "Property 'TYPE.PROP' ...".
 */
bool device_config_set(DeviceConfig *dev, const char *name, const char *text, Error **errp);
/* Copy into dev every property that globals (a config of the same type
 * holding -global values) has set and dev has not. */
void device_config_inherit(DeviceConfig *dev, const DeviceConfig *globals);

/* Looks a backend of one reference kind up by id; NULL if there is none. */
typedef void *DeviceBackendFinder(const char *id);
/* Where references of kind (DEVICE_PROP_IOTHREAD..NETDEV) find their
 * backends. I/O threads are known from the start; chardevs, drives and
 * netdevs are added by their backend code. NULL: there is no such backend,
 * so every id of that kind is unknown. */
void device_backend_set_finder(DevicePropertyKind kind, DeviceBackendFinder *find);

/*
 * Resolve dev's backend references, realize it on buses and give it its
 * id. Errors start with dev->origin: "-device TYPE,...: ...".
 */
QEMUDevice *device_config_realize(DeviceConfig *dev, const DeviceBuses *buses, Error **errp);

/*
 * The options of a board device type (realize NULL) with what -global
 * gave it: globals (a GPtrArray of DeviceConfig, cfg->board_globals) holds
 * a config for each board type -global named; a type it does not hold has
 * its defaults, which stay valid for the life of the process.
 */
const void *board_device_options(const GPtrArray *globals, const DeviceTypeInfo *type);

/* A device realized from a config, with a copy of that config (what
 * `info qtree` prints as its properties). */
typedef struct RealizedDevice {
    QEMUDevice *qdev;
    DeviceConfig *config;
} RealizedDevice;
/* Every device device_config_realize made (-device, -nic, -drive's default
 * devices), in creation order; the machine's own devices are not in it.
 * Main thread; the list only grows while the machine is built. */
const GPtrArray *device_realized_list(void);
/* The entry for qdev, or NULL. */
const RealizedDevice *device_realized_find(const QEMUDevice *qdev);

#endif
