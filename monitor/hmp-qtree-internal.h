/*
 * Shared by monitor/hmp-qtree.c (the tree) and monitor/hmp-qtree-board.c
 * (the board's own and KVM's in-kernel devices): QEMU's qtree layout.
 */
#ifndef MONITOR_HMP_QTREE_INTERNAL_H
#define MONITOR_HMP_QTREE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "hw/qdev.h"

/* QEMU indents each level by two spaces. */
#define INDENT(n) ((n) * 2)

/* Where a device that is no PCI function sits. */
typedef enum QtreeBus {
    QTREE_BUS_HIDDEN,   /* not shown: a PCI function, or nothing QEMU has */
    QTREE_BUS_SYSTEM,
    QTREE_BUS_ISA,
    QTREE_BUS_IDE,
} QtreeBus;

void qtree_print_dev_line(GString *out, int level, const char *type, const char *id);
/* "name = 64 (0x40)" and "name = true", as QEMU prints those kinds. */
void qtree_print_uint_prop(GString *out, int level, const char *name, uint64_t value);
void qtree_print_bool_prop(GString *out, int level, const char *name, bool value);

/* A board device's bus (QTREE_BUS_HIDDEN: not one QEMU shows). */
QtreeBus qtree_board_device_bus(const QEMUDevice *qdev);
/* Its properties (nothing for a device that is no board device). */
void qtree_print_board_device_props(GString *out, int level, const QEMUDevice *qdev);
/* KVM's in-kernel devices, if the VM has them: the PIT and PICs on isa.0,
 * the IOAPIC on the system bus. */
void qtree_print_in_kernel_isa_devices(GString *out, int level);
void qtree_print_in_kernel_system_devices(GString *out, int level);

#endif
