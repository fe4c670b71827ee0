/*
 * The pc machine's own devices as registry types (hw/i386/pc-board-devices.h):
 * QEMU's names and properties, so that -global reaches them. What this VMM
 * does not implement takes only QEMU's default, and any other value is
 * refused naming it, rather than accepted and ignored.
 */
#include <glib.h>
#include "hw/i386/pc-board-devices.h"

static const char *lost_tick_policy_name(int value)
{
    static const char *const names[LOST_TICK_POLICY_COUNT] = {
        [LOST_TICK_POLICY_DISCARD] = "discard",
        [LOST_TICK_POLICY_DELAY] = "delay",
        [LOST_TICK_POLICY_SLEW] = "slew",
    };
    return names[value];
}

/* slew (reinjecting at a faster rate) is not something KVM's PIT or this
 * VMM's RTC does. */
static const DevicePropertyChoices lost_tick_policy_choices = {
    .type_name = "LostTickPolicy", .count = LOST_TICK_POLICY_COUNT,
    .name = lost_tick_policy_name, .unsupported = 1u << LOST_TICK_POLICY_SLEW,
};

static const DeviceProperty piix4_pm_properties[] = {
    DEFINE_PROP_UINT8("disable_s3", PIIX4PMOptions, disable_s3, 0, NULL),
    DEFINE_PROP_UINT8("disable_s4", PIIX4PMOptions, disable_s4, 0, NULL),
};

const DeviceTypeInfo piix4_pm_type = {
    .name = "PIIX4_PM",
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_MISC,
    DEVICE_PROPERTIES(piix4_pm_properties),
    .options_size = sizeof(PIIX4PMOptions),
};

static const DeviceProperty kvm_pit_properties[] = {
    DEFINE_PROP_ENUM("lost_tick_policy", KVMPitOptions, lost_tick_policy,
                     &lost_tick_policy_choices, LOST_TICK_POLICY_DELAY, NULL),
};

const DeviceTypeInfo kvm_pit_type = {
    .name = "kvm-pit",
    .bus = DEVICE_BUS_ISA,
    .category = DEVICE_CATEGORY_MISC,
    DEVICE_PROPERTIES(kvm_pit_properties),
    .options_size = sizeof(KVMPitOptions),
};

/* The RTC drops the periodic interrupts a busy guest missed (QEMU's
 * default policy) and sits where a PC's does. */
typedef struct RTCOptions {
    int32_t base_year;
    uint16_t iobase;
    uint8_t irq;
    int lost_tick_policy;
} RTCOptions;

static const DeviceProperty rtc_properties[] = {
    DEFINE_PROP_ONLY_DEFAULT("base_year", DEVICE_PROP_INT32, RTCOptions, base_year, int32_t, i,
                             1980),
    DEFINE_PROP_ONLY_DEFAULT("iobase", DEVICE_PROP_UINT16, RTCOptions, iobase, uint16_t, u,
                             0x70),
    DEFINE_PROP_ONLY_DEFAULT("irq", DEVICE_PROP_UINT8, RTCOptions, irq, uint8_t, u, 8),
    { DEFINE_PROP_KIND("lost_tick_policy", DEVICE_PROP_ENUM, RTCOptions, lost_tick_policy, int,
                       NULL),
      .choices = &lost_tick_policy_choices, .defval.i = LOST_TICK_POLICY_DISCARD,
      .only_default = true },
};

const DeviceTypeInfo mc146818rtc_type = {
    .name = "mc146818rtc",
    .bus = DEVICE_BUS_ISA,
    .category = DEVICE_CATEGORY_MISC,
    DEVICE_PROPERTIES(rtc_properties),
    .options_size = sizeof(RTCOptions),
};

/* The keyboard controller as QEMU's pc has it: IRQ 1 and 12, no
 * throttling of keyboard input. */
typedef struct I8042Options {
    bool extended_state;
    bool kbd_throttle;
    uint8_t kbd_irq;
    uint8_t mouse_irq;
} I8042Options;

static const DeviceProperty i8042_properties[] = {
    DEFINE_PROP_ONLY_DEFAULT("extended-state", DEVICE_PROP_BOOL, I8042Options, extended_state,
                             bool, b, true),
    DEFINE_PROP_ONLY_DEFAULT("kbd-throttle", DEVICE_PROP_BOOL, I8042Options, kbd_throttle,
                             bool, b, false),
    DEFINE_PROP_ONLY_DEFAULT("kbd-irq", DEVICE_PROP_UINT8, I8042Options, kbd_irq, uint8_t, u,
                             1),
    DEFINE_PROP_ONLY_DEFAULT("mouse-irq", DEVICE_PROP_UINT8, I8042Options, mouse_irq, uint8_t,
                             u, 12),
};

const DeviceTypeInfo i8042_type = {
    .name = "i8042",
    .bus = DEVICE_BUS_ISA,
    .category = DEVICE_CATEGORY_MISC,
    DEVICE_PROPERTIES(i8042_properties),
    .options_size = sizeof(I8042Options),
};
