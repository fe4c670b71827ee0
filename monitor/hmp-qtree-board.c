/*
 * info qtree's board devices (monitor/hmp-qtree-internal.h): the pc
 * board's own devices that QEMU shows, which are no -device type here,
 * with the properties of QEMU's they have, and KVM's in-kernel PIC, IOAPIC
 * and PIT, which are no QEMUDevice here at all, under QEMU's names with
 * the facts QEMU prints for them.
 */
#include <inttypes.h>
#include <string.h>
#include "hw/input/i8042.h"
#include "hw/rtc/mc146818rtc.h"
#include "sysemu/kvm.h"
#include "hmp-qtree-internal.h"

/* The machine's own devices that QEMU shows too, their bus and the
 * properties of QEMU's that they have (fixed by the board: its headers'
 * ports and lines; fw_cfg always offers DMA). */
typedef struct MachineDeviceProp {
    const char *name;
    uint64_t value;
    bool is_bool;
} MachineDeviceProp;

static const struct {
    const char *type;
    QtreeBus bus;
    MachineDeviceProp props[2];
} machine_devices[] = {
    { "mc146818rtc", QTREE_BUS_ISA, { { "iobase", RTC_ISA_BASE }, { "irq", RTC_ISA_GSI } } },
    { "i8042", QTREE_BUS_ISA, { { "kbd-irq", I8042_KBD_GSI }, { "mouse-irq", I8042_AUX_GSI } } },
    { "fw_cfg_io", QTREE_BUS_SYSTEM, { { "dma_enabled", true, true } } },
};

void qtree_print_dev_line(GString *out, int level, const char *type, const char *id)
{
    g_string_append_printf(out, "%*sdev: %s, id \"%s\"\n", INDENT(level), "", type, id);
}

void qtree_print_uint_prop(GString *out, int level, const char *name, uint64_t value)
{
    g_string_append_printf(out, "%*s%s = %" PRIu64 " (0x%" PRIx64 ")\n", INDENT(level), "", name,
                           value, value);
}

void qtree_print_bool_prop(GString *out, int level, const char *name, bool value)
{
    g_string_append_printf(out, "%*s%s = %s\n", INDENT(level), "", name,
                           value ? "true" : "false");
}

/* qdev's entry in machine_devices, or -1. */
static int machine_device_index(const QEMUDevice *qdev)
{
    for (size_t i = 0; i < G_N_ELEMENTS(machine_devices); i++) {
        if (!strcmp(machine_devices[i].type, qdev->type)) {
            return (int)i;
        }
    }
    return -1;
}

QtreeBus qtree_board_device_bus(const QEMUDevice *qdev)
{
    int i = machine_device_index(qdev);
    return i < 0 ? QTREE_BUS_HIDDEN : machine_devices[i].bus;
}

void qtree_print_board_device_props(GString *out, int level, const QEMUDevice *qdev)
{
    int board = machine_device_index(qdev);
    for (size_t i = 0; board >= 0 && i < G_N_ELEMENTS(machine_devices[board].props); i++) {
        const MachineDeviceProp *prop = &machine_devices[board].props[i];
        if (prop->name && prop->is_bool) {
            qtree_print_bool_prop(out, level, prop->name, prop->value);
        } else if (prop->name) {
            qtree_print_uint_prop(out, level, prop->name, prop->value);
        }
    }
}

/* KVM's PIT and the two PICs (slave first: QEMU made it last), on isa.0. */
void qtree_print_in_kernel_isa_devices(GString *out, int level)
{
    static const struct {
        uint64_t iobase, elcr_addr, elcr_mask;
        bool master;
    } pics[] = { { 0xa0, 0x4d1, 0xde, false }, { 0x20, 0x4d0, 0xf8, true } };
    bool pit, discards;
    if (!kvm_in_kernel_devices(&pit, &discards)) {
        return;
    }
    if (pit) {
        qtree_print_dev_line(out, level, "kvm-pit", "");
        qtree_print_uint_prop(out, level + 1, "iobase", 0x40);
        g_string_append_printf(out, "%*slost_tick_policy = \"%s\"\n", INDENT(level + 1), "",
                               discards ? "discard" : "delay");
    }
    for (size_t i = 0; i < G_N_ELEMENTS(pics); i++) {
        qtree_print_dev_line(out, level, "kvm-i8259", "");
        qtree_print_uint_prop(out, level + 1, "iobase", pics[i].iobase);
        qtree_print_uint_prop(out, level + 1, "elcr_addr", pics[i].elcr_addr);
        qtree_print_uint_prop(out, level + 1, "elcr_mask", pics[i].elcr_mask);
        qtree_print_bool_prop(out, level + 1, "master", pics[i].master);
    }
}

/* KVM's IOAPIC, on the system bus. */
void qtree_print_in_kernel_system_devices(GString *out, int level)
{
    bool pit, discards;
    if (kvm_in_kernel_devices(&pit, &discards)) {
        qtree_print_dev_line(out, level, "kvm-ioapic", "");
        qtree_print_uint_prop(out, level + 1, "gsi_base", 0);
    }
}
