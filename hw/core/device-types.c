/*
 * Every device model -device can create, and the board's own devices that
 * -global can reach (hw/qdev-registry.h). A new model
 * declares its DeviceTypeInfo in its own file and adds one line here.
 *
 * An explicit list rather than constructor functions: the models live in a
 * static library, and the linker leaves out an object file nothing refers
 * to, so a model registered only by its constructor would vanish from
 * every binary that does not happen to call into its file.
 */
#include <glib.h>
#include "hw/char/serial.h"
#include "hw/i386/pc-board-devices.h"
#include "hw/ide/ide.h"
#include "hw/misc/isa-misc.h"
#include "hw/misc/testdev.h"
#include "hw/net/e1000.h"
#include "hw/qdev-registry.h"
#include "hw/virtio/virtio-blk.h"
#include "hw/virtio/virtio-net.h"

const DeviceTypeInfo *const device_types[] = {
    &e1000_type,
    &i8042_type,
    &ide_cd_type,
    &ide_hd_type,
    &isa_debug_exit_type,
    &isa_serial_type,
    &kvm_pit_type,
    &mc146818rtc_type,
    &pc_testdev_type,
    &pci_testdev_type,
    &pdl_testdev_type,
    &piix4_pm_type,
    &virtio_blk_pci_type,
    &virtio_net_pci_type,
};

const size_t device_types_count = G_N_ELEMENTS(device_types);
