/*
 * The devices the pc machine makes itself (PIIX4_PM, kvm-pit, mc146818rtc,
 * i8042), as registry types: -device refuses them and -device help does
 * not list them, as QEMU's, but -device TYPE,help shows their properties
 * and -global sets them through the same table as any device's. The
 * machine reads the values with board_device_options() (hw/qdev-registry.h).
 * See docs/design.md, "Device registry", and docs/platform.md.
 */
#ifndef HW_I386_PC_BOARD_DEVICES_H
#define HW_I386_PC_BOARD_DEVICES_H

#include <stdint.h>
#include "hw/qdev-registry.h"

/* QEMU's LostTickPolicy, in its order. */
typedef enum LostTickPolicy {
    LOST_TICK_POLICY_DISCARD,
    LOST_TICK_POLICY_DELAY,
    LOST_TICK_POLICY_SLEW,
    LOST_TICK_POLICY_COUNT,
} LostTickPolicy;

/* PIIX4_PM.disable_s3/disable_s4: non-zero leaves the \_S3 / \_S4
 * package out of the DSDT, so the guest does not offer that state. */
typedef struct PIIX4PMOptions {
    uint8_t disable_s3;
    uint8_t disable_s4;
} PIIX4PMOptions;

/* kvm-pit.lost_tick_policy: delay (KVM reinjects missed ticks, the
 * default) or discard; slew is refused. */
typedef struct KVMPitOptions {
    int lost_tick_policy;
} KVMPitOptions;

extern const DeviceTypeInfo piix4_pm_type;
extern const DeviceTypeInfo kvm_pit_type;
extern const DeviceTypeInfo mc146818rtc_type;
extern const DeviceTypeInfo i8042_type;

#endif
