/*
 * virtio-blk (virtio 1.x, "Block Device") on the PCI transport:
 * `-device virtio-blk-pci,drive=ID[,iothread=ID][,num-queues=N]
 * [,queue-size=N][,serial=S][,addr=SLOT]` and the transport's
 * `[,disable-legacy=on|off|auto][,disable-modern=on|off][,ioeventfd=on|off]
 * [,x-irqfd=on|off]`, as QEMU names the properties (x-irqfd is ours).
 * docs/storage.md ("virtio-blk") describes the requests and the threads.
 */
#ifndef HW_VIRTIO_VIRTIO_BLK_H
#define HW_VIRTIO_VIRTIO_BLK_H

#include <stdint.h>
#include "block/block-backend.h"
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "hw/virtio/virtio-pci.h"
#include "qemu/error.h"
#include "sysemu/iothread.h"

/* Feature bits (virtio 1.x, "Block Device: Feature bits"). */
#define VIRTIO_BLK_F_SEG_MAX        2
#define VIRTIO_BLK_F_RO             5
#define VIRTIO_BLK_F_BLK_SIZE       6
#define VIRTIO_BLK_F_FLUSH          9
#define VIRTIO_BLK_F_TOPOLOGY       10
#define VIRTIO_BLK_F_CONFIG_WCE     11
#define VIRTIO_BLK_F_MQ             12
#define VIRTIO_BLK_F_DISCARD        13
#define VIRTIO_BLK_F_WRITE_ZEROES   14

/* Request types and status values. */
#define VIRTIO_BLK_T_IN             0
#define VIRTIO_BLK_T_OUT            1
#define VIRTIO_BLK_T_FLUSH          4
#define VIRTIO_BLK_T_GET_ID         8
#define VIRTIO_BLK_T_DISCARD        11
#define VIRTIO_BLK_T_WRITE_ZEROES   13
#define VIRTIO_BLK_S_OK             0
#define VIRTIO_BLK_S_IOERR          1
#define VIRTIO_BLK_S_UNSUPP         2

#define VIRTIO_BLK_SECTOR_SIZE      512
#define VIRTIO_BLK_ID_BYTES         20
/* Discard / write-zeroes segment flag. */
#define VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP  1

/* struct virtio_blk_config: offsets of the fields used here. */
#define VIRTIO_BLK_CFG_CAPACITY             0x00
#define VIRTIO_BLK_CFG_SEG_MAX              0x0c
#define VIRTIO_BLK_CFG_BLK_SIZE             0x14
#define VIRTIO_BLK_CFG_PHYSICAL_BLOCK_EXP   0x18
#define VIRTIO_BLK_CFG_WRITEBACK            0x20
#define VIRTIO_BLK_CFG_NUM_QUEUES           0x22
#define VIRTIO_BLK_CFG_MAX_DISCARD_SECTORS  0x24
#define VIRTIO_BLK_CFG_MAX_DISCARD_SEG      0x28
#define VIRTIO_BLK_CFG_DISCARD_ALIGNMENT    0x2c
#define VIRTIO_BLK_CFG_MAX_WZ_SECTORS       0x30
#define VIRTIO_BLK_CFG_MAX_WZ_SEG           0x34
#define VIRTIO_BLK_CFG_WZ_MAY_UNMAP         0x38
#define VIRTIO_BLK_CFG_SIZE                 0x3c

/* The largest discard or write-zeroes request: the block layer's limit
 * for one request (1 GiB), in sectors. */
#define VIRTIO_BLK_MAX_DWZ_SECTORS  ((1u << 30) / VIRTIO_BLK_SECTOR_SIZE)
#define VIRTIO_BLK_MAX_QUEUES       64
/* -device virtio-blk-pci's num-queues when not given (QEMU's value too):
 * one queue per vCPU the machine starts with, at most the maximum. */
#define VIRTIO_BLK_AUTO_NUM_QUEUES  0xffff

typedef struct VirtIOBlkConf {
    BlockBackend *blk;          /* opened; completions go to iothread's context */
    IOThread *iothread;         /* NULL: the main loop */
    uint16_t num_queues;        /* 1..VIRTIO_BLK_MAX_QUEUES */
    uint16_t queue_size;        /* power of two, 4..VIRTQUEUE_MAX_SIZE */
    const char *serial;         /* GET_ID's answer; NULL: empty */
    const VirtIOPCIConf *pci;   /* the transport's switches; NULL: QEMU's defaults */
    /* The actions in effect (0: report): the device's rerror=/werror=, else
     * the drive's; for blk_set_on_error. */
    DriveErrorAction rerror, werror;
} VirtIOBlkConf;

/* A virtio-blk-pci at devfn (-1: first free slot). Attaches conf->blk to
 * conf->iothread and gives it the error actions. */
QEMUDevice *virtio_blk_pci_new(PCIBus *bus, int devfn, const VirtIOBlkConf *conf,
                               Error **errp);

extern const DeviceTypeInfo virtio_blk_pci_type;

#endif
