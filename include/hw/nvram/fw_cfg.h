/*
 * fw_cfg, QEMU's firmware configuration interface (docs/specs/fw_cfg.rst
 * in QEMU): a selector port (16-bit, 0x510), a data port (byte reads,
 * 0x511) and the DMA interface (a big-endian 64-bit address of an
 * FWCfgDmaAccess written to 0x514, the low half's write starting it).
 * Reading the DMA port gives the signature "QEMU CFG".
 *
 * Items are read-only for the guest. File items get a directory entry
 * (FW_CFG_FILE_DIR) and a selector from FW_CFG_FILE_FIRST up, in name
 * order, as QEMU does.
 */
#ifndef HW_NVRAM_FW_CFG_H
#define HW_NVRAM_FW_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "qemu/error.h"

#define FW_CFG_IO_BASE          0x510
#define FW_CFG_DMA_IO_BASE      0x514

#define FW_CFG_SIGNATURE        0x00
#define FW_CFG_ID               0x01
#define FW_CFG_UUID             0x02
#define FW_CFG_RAM_SIZE         0x03
#define FW_CFG_NOGRAPHIC        0x04
#define FW_CFG_NB_CPUS          0x05
#define FW_CFG_MACHINE_ID       0x06
#define FW_CFG_KERNEL_ADDR      0x07
#define FW_CFG_KERNEL_SIZE      0x08
#define FW_CFG_KERNEL_CMDLINE   0x09
#define FW_CFG_INITRD_ADDR      0x0a
#define FW_CFG_INITRD_SIZE      0x0b
#define FW_CFG_BOOT_DEVICE      0x0c
#define FW_CFG_NUMA             0x0d
#define FW_CFG_BOOT_MENU        0x0e
#define FW_CFG_MAX_CPUS         0x0f
#define FW_CFG_KERNEL_ENTRY     0x10
#define FW_CFG_KERNEL_DATA      0x11
#define FW_CFG_INITRD_DATA      0x12
#define FW_CFG_CMDLINE_ADDR     0x13
#define FW_CFG_CMDLINE_SIZE     0x14
#define FW_CFG_CMDLINE_DATA     0x15
#define FW_CFG_SETUP_ADDR       0x16
#define FW_CFG_SETUP_SIZE       0x17
#define FW_CFG_SETUP_DATA       0x18
#define FW_CFG_FILE_DIR         0x19
#define FW_CFG_FILE_FIRST       0x20
#define FW_CFG_MAX_FILE_NAME    56      /* including the NUL */

typedef struct FWCfgState FWCfgState;

/* Create the device and map its ports; signature and id items exist. */
FWCfgState *fw_cfg_new(Error **errp);

/* Add an item; data is copied. Adding a key twice replaces it. */
void fw_cfg_add_bytes(FWCfgState *s, uint16_t key, const void *data, size_t len);
void fw_cfg_add_i16(FWCfgState *s, uint16_t key, uint16_t value);    /* little-endian */
void fw_cfg_add_i32(FWCfgState *s, uint16_t key, uint32_t value);
void fw_cfg_add_i64(FWCfgState *s, uint16_t key, uint64_t value);
/* An item backed by a host file, mapped read-only and read on demand, so
 * that a large kernel or initrd costs no memory until the guest reads it.
 * Fails (naming path) if the file cannot be opened. */
bool fw_cfg_add_mapped_file(FWCfgState *s, uint16_t key, const char *path, Error **errp);

/* A named file item ("opt/..." for users' items). Fails on a duplicate
 * name or a name of FW_CFG_MAX_FILE_NAME characters or more. */
bool fw_cfg_add_file(FWCfgState *s, const char *name, const void *data, size_t len,
                     Error **errp);

#endif
