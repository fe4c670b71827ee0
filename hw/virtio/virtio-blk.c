/*
 * virtio-blk-pci (hw/virtio/virtio-blk.h): a BlockBackend behind virtio
 * 1.x block requests.
 *
 * Threads: a queue kick runs on the drive's context (the main loop's, or
 * the iothread= one's), where the queue's ioeventfd is consumed, with the
 * device lock held (a write the ioeventfd does not match runs on the
 * vCPU that made it). It pops every available chain and submits
 * each request between blk_io_plug and blk_io_unplug, so one kick's
 * requests reach the host in one io_submit / io_uring_enter; it never
 * waits for the disk. Completions run on the drive's context (the main
 * loop's, or the iothread= one's), take the device lock, write the
 * status byte and return the chain to the used ring; a bottom half on
 * the same context then sends one interrupt per queue for the whole batch
 * of completions the context handled (EVENT_IDX permitting).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <glib.h>
#include "hw/block-error-properties.h"
#include "hw/virtio/virtio-blk.h"
#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio.h"
#include "qemu/bh.h"
#include "qemu/byte-order.h"
#include "qemu/iov.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "sysemu/drives.h"

#define PCI_CLASS_STORAGE_SCSI  0x010000

/* struct virtio_blk_outhdr, at the start of every request. */
typedef struct VirtIOBlkOutHdr {
    uint32_t type;
    uint32_t ioprio;
    uint64_t sector;
} VirtIOBlkOutHdr;

/* struct virtio_blk_discard_write_zeroes: the one segment we accept. */
typedef struct VirtIOBlkDwzSeg {
    uint64_t sector;
    uint32_t num_sectors;
    uint32_t flags;
} VirtIOBlkDwzSeg;

typedef struct VirtIOBlock {
    VirtIODevice vdev;
    BlockBackend *blk;
    char *serial;
    bool original_wce;          /* the drive's cache mode, restored at reset */
    unsigned in_flight;         /* requests submitted to the block layer */
    GMainContext *ctx;          /* the drive's: where completions run */
    QEMUBH *notify_bh;          /* on ctx */
    struct VirtIOBlkQueue *queues;  /* num_queues of them */
} VirtIOBlock;

/* A queue's pass, left by its kick to a bottom half on the drive's
 * context. */
typedef struct VirtIOBlkQueue {
    VirtIOBlock *s;
    VirtQueue *vq;
    QEMUBH *bh;
    atomic_bool kicked;         /* a pass is due */
} VirtIOBlkQueue;

typedef struct VirtIOBlkPCI {
    VirtIOPCIProxy proxy;       /* first: the QEMUDevice */
    VirtIOBlock blk;
} VirtIOBlkPCI;

/* One request handed to the block layer. */
typedef struct VirtIOBlockReq {
    VirtIOBlock *s;
    VirtQueue *vq;
    VirtQueueElement *elem;
    uint32_t type;
    size_t data_len;            /* bytes read into the guest's buffers (IN) */
    struct iovec iov[];         /* the data part of the chain */
} VirtIOBlockReq;

static VirtIOBlock *virtio_blk_of(VirtIODevice *vdev)
{
    return (VirtIOBlock *)vdev;     /* vdev is VirtIOBlock's first member */
}

/* ---- completing requests ---- */

/* Write the status byte (the last device-writable byte) and return the
 * chain; written counts the data bytes before it. */
static void virtio_blk_complete(VirtQueue *vq, VirtQueueElement *elem, uint8_t status,
                                size_t written)
{
    iov_from_buf(elem->in_sg, elem->in_num, elem->in_len - 1, &status, 1);
    virtqueue_push(vq, elem, status == VIRTIO_BLK_S_OK ? written + 1 : 1);
}

static void virtio_blk_notify_bh(void *opaque)
{
    VirtIOBlock *s = opaque;
    device_lock(s->vdev.qdev);
    virtio_notify_pushed(&s->vdev);
    device_unlock(s->vdev.qdev);
}

/* On the drive's context: the block layer finished req. */
static void virtio_blk_request_done(void *opaque, int ret)
{
    VirtIOBlockReq *req = opaque;
    VirtIOBlock *s = req->s;
    device_lock(s->vdev.qdev);
    virtio_blk_complete(req->vq, req->elem, ret == 0 ? VIRTIO_BLK_S_OK : VIRTIO_BLK_S_IOERR,
                        req->type == VIRTIO_BLK_T_IN ? req->data_len : 0);
    s->in_flight--;
    virtio_request_completed(&s->vdev);
    device_unlock(s->vdev.qdev);
    /* One interrupt for everything this context completes in a row. */
    qemu_bh_schedule(s->notify_bh);
    g_free(req);
}

static VirtIOBlockReq *virtio_blk_req_new(VirtIOBlock *s, VirtQueue *vq,
                                          VirtQueueElement *elem, uint32_t type,
                                          unsigned max_iov)
{
    VirtIOBlockReq *req = g_malloc(sizeof(*req) + max_iov * sizeof(struct iovec));
    *req = (VirtIOBlockReq) { .s = s, .vq = vq, .elem = elem, .type = type };
    s->in_flight++;
    return req;
}

/* ---- requests ---- */

/* Do len bytes from sector lie inside the disk (without overflowing)? */
static bool virtio_blk_range_ok(VirtIOBlock *s, uint64_t sector, uint64_t len)
{
    uint64_t size = blk_getlength(s->blk);
    return sector <= size / VIRTIO_BLK_SECTOR_SIZE &&
           len <= size - sector * VIRTIO_BLK_SECTOR_SIZE;
}

/* IN (read into in_sg, all but the status byte) or OUT (write out_sg after
 * the header). */
static void virtio_blk_submit_rw(VirtIOBlock *s, VirtQueue *vq, VirtQueueElement *elem,
                                 const VirtIOBlkOutHdr *hdr)
{
    bool is_write = hdr->type == VIRTIO_BLK_T_OUT;
    const struct iovec *sg = is_write ? elem->out_sg : elem->in_sg;
    unsigned num = is_write ? elem->out_num : elem->in_num;
    size_t offset = is_write ? sizeof(*hdr) : 0;
    size_t len = is_write ? elem->out_len - sizeof(*hdr) : elem->in_len - 1;
    if (len % VIRTIO_BLK_SECTOR_SIZE || !virtio_blk_range_ok(s, hdr->sector, len)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %s of %zu bytes at sector %" PRIu64 " is not "
                      "whole sectors inside the disk\n", virtio_name(&s->vdev),
                      is_write ? "write" : "read", len, hdr->sector);
        virtio_blk_complete(vq, elem, VIRTIO_BLK_S_IOERR, 0);
        return;
    }
    if (len == 0) {
        virtio_blk_complete(vq, elem, VIRTIO_BLK_S_OK, 0);
        return;
    }
    VirtIOBlockReq *req = virtio_blk_req_new(s, vq, elem, hdr->type, num);
    unsigned niov = iov_slice(sg, num, offset, len, req->iov, num);
    uint64_t pos = hdr->sector * VIRTIO_BLK_SECTOR_SIZE;
    if (is_write) {
        blk_aio_pwritev(s->blk, pos, req->iov, niov, 0, virtio_blk_request_done, req);
    } else {
        req->data_len = len;
        blk_aio_preadv(s->blk, pos, req->iov, niov, virtio_blk_request_done, req);
    }
}

/* GET_ID: the serial, NUL-terminated if shorter than 20 bytes. */
static void virtio_blk_get_id(VirtIOBlock *s, VirtQueue *vq, VirtQueueElement *elem)
{
    char id[VIRTIO_BLK_ID_BYTES] = { 0 };
    if (s->serial) {
        memcpy(id, s->serial, MIN(strlen(s->serial), sizeof(id)));
    }
    size_t n = MIN(sizeof(id), elem->in_len - 1);
    iov_from_buf(elem->in_sg, elem->in_num, 0, id, n);
    virtio_blk_complete(vq, elem, VIRTIO_BLK_S_OK, n);
}

/* DISCARD and WRITE_ZEROES: one segment (max_discard_seg and
 * max_write_zeroes_seg are 1). */
static uint8_t virtio_blk_submit_dwz(VirtIOBlock *s, VirtQueue *vq, VirtQueueElement *elem,
                                     uint32_t type)
{
    bool discard = type == VIRTIO_BLK_T_DISCARD;
    unsigned feature = discard ? VIRTIO_BLK_F_DISCARD : VIRTIO_BLK_F_WRITE_ZEROES;
    uint32_t allowed_flags = discard ? 0 : VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP;
    VirtIOBlkDwzSeg seg;
    if (!virtio_has_feature(&s->vdev, feature) ||
        elem->out_len != sizeof(VirtIOBlkOutHdr) + sizeof(seg)) {
        return VIRTIO_BLK_S_UNSUPP;
    }
    iov_to_buf(elem->out_sg, elem->out_num, sizeof(VirtIOBlkOutHdr), &seg, sizeof(seg));
    if (seg.flags & ~allowed_flags) {
        return VIRTIO_BLK_S_UNSUPP;
    }
    uint64_t len = (uint64_t)seg.num_sectors * VIRTIO_BLK_SECTOR_SIZE;
    if (seg.num_sectors > VIRTIO_BLK_MAX_DWZ_SECTORS || !virtio_blk_range_ok(s, seg.sector, len)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %s of %" PRIu32 " sectors at %" PRIu64 " is past "
                      "the disk or the limit\n", virtio_name(&s->vdev),
                      discard ? "discard" : "write-zeroes", seg.num_sectors, seg.sector);
        return VIRTIO_BLK_S_IOERR;
    }
    VirtIOBlockReq *req = virtio_blk_req_new(s, vq, elem, type, 0);
    uint64_t pos = seg.sector * VIRTIO_BLK_SECTOR_SIZE;
    if (discard) {
        blk_aio_pdiscard(s->blk, pos, len, virtio_blk_request_done, req);
    } else {
        unsigned flags = seg.flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP ? BLK_REQ_MAY_UNMAP : 0;
        blk_aio_pwrite_zeroes(s->blk, pos, len, flags, virtio_blk_request_done, req);
    }
    return VIRTIO_BLK_S_OK;
}

static void virtio_blk_handle_request(VirtIOBlock *s, VirtQueue *vq, VirtQueueElement *elem)
{
    VirtIOBlkOutHdr hdr;
    if (elem->out_len < sizeof(hdr) || elem->in_len < 1) {
        virtio_error(&s->vdev, "request of %zu readable and %zu writable bytes has no header "
                     "or no status byte", elem->out_len, elem->in_len);
        g_free(elem);
        return;
    }
    iov_to_buf(elem->out_sg, elem->out_num, 0, &hdr, sizeof(hdr));
    switch (hdr.type) {
    case VIRTIO_BLK_T_IN:
    case VIRTIO_BLK_T_OUT:
        virtio_blk_submit_rw(s, vq, elem, &hdr);
        break;
    case VIRTIO_BLK_T_FLUSH:
        blk_aio_flush(s->blk, virtio_blk_request_done,
                      virtio_blk_req_new(s, vq, elem, hdr.type, 0));
        break;
    case VIRTIO_BLK_T_GET_ID:
        virtio_blk_get_id(s, vq, elem);
        break;
    case VIRTIO_BLK_T_DISCARD:
    case VIRTIO_BLK_T_WRITE_ZEROES: {
        uint8_t status = virtio_blk_submit_dwz(s, vq, elem, hdr.type);
        if (status != VIRTIO_BLK_S_OK) {
            virtio_blk_complete(vq, elem, status, 0);
        }
        break;
    }
    default:
        virtio_blk_complete(vq, elem, VIRTIO_BLK_S_UNSUPP, 0);
        break;
    }
}

/* Take every available request, submit them as one batch. */
static void virtio_blk_submit_available(VirtIOBlock *s, VirtQueue *vq)
{
    blk_io_plug(s->blk);
    do {
        virtqueue_set_notification(vq, false);
        VirtQueueElement *elem;
        while ((elem = virtqueue_pop(vq))) {
            virtio_blk_handle_request(s, vq, elem);
        }
        virtqueue_set_notification(vq, true);
    } while (virtqueue_has_avail(vq));
    blk_io_unplug(s->blk);
    /* Requests answered at once (GET_ID, errors). */
    virtio_notify_pushed(&s->vdev);
}

/* The pass a kick left, if it is still due; with the device lock held, so
 * that a caller whose pass another thread took waits for it. */
static void virtio_blk_queue_pass(VirtIOBlkQueue *q)
{
    device_lock(q->s->vdev.qdev);
    if (atomic_exchange(&q->kicked, false)) {
        virtio_blk_submit_available(q->s, q->vq);
    }
    device_unlock(q->s->vdev.qdev);
}

static void virtio_blk_queue_bh(void *opaque)
{
    virtio_blk_queue_pass(opaque);
}

/*
 * A kick consumed on the drive's context (an ioeventfd) only turns further
 * kicks off and leaves the pass to the bottom half: requests the driver
 * adds until it runs go in the same batch, for no kick of their own. A
 * kick made on a vCPU (no ioeventfd) is served there at once: that vCPU
 * adds nothing while it waits.
 */
static void virtio_blk_handle_queue(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIOBlock *s = virtio_blk_of(vdev);
    if (!g_main_context_is_owner(s->ctx)) {
        virtio_blk_submit_available(s, vq);
        return;
    }
    VirtIOBlkQueue *q = &s->queues[vq - vdev->vqs];
    virtqueue_set_notification(vq, false);
    atomic_store(&q->kicked, true);
    qemu_bh_schedule(q->bh);
}

static void virtio_blk_create_bhs(void *opaque)
{
    VirtIOBlock *s = opaque;
    s->notify_bh = qemu_bh_new(s->ctx, virtio_blk_notify_bh, s);
    for (unsigned i = 0; i < s->vdev.num_queues; i++) {
        s->queues[i].bh = qemu_bh_new(s->ctx, virtio_blk_queue_bh, &s->queues[i]);
    }
}

/* ---- configuration, reset ---- */

static void virtio_blk_get_config(VirtIODevice *vdev, uint8_t *c)
{
    VirtIOBlock *s = virtio_blk_of(vdev);
    uint32_t host_block = blk_host_block_size(s->blk);
    memset(c, 0, VIRTIO_BLK_CFG_SIZE);
    put_le64(c + VIRTIO_BLK_CFG_CAPACITY, blk_getlength(s->blk) / VIRTIO_BLK_SECTOR_SIZE);
    /* Two descriptors of a chain are the header and the status. */
    put_le32(c + VIRTIO_BLK_CFG_SEG_MAX, vdev->vqs[0].num_max - 2);
    put_le32(c + VIRTIO_BLK_CFG_BLK_SIZE, VIRTIO_BLK_SECTOR_SIZE);
    /* Topology: the host's block size as the physical one, so the guest
     * aligns its writes to what the host can write without a
     * read-modify-write. */
    c[VIRTIO_BLK_CFG_PHYSICAL_BLOCK_EXP] =
        host_block > VIRTIO_BLK_SECTOR_SIZE ? g_bit_storage(host_block / VIRTIO_BLK_SECTOR_SIZE) - 1 : 0;
    c[VIRTIO_BLK_CFG_WRITEBACK] = blk_enable_write_cache(s->blk);
    put_le16(c + VIRTIO_BLK_CFG_NUM_QUEUES, vdev->num_queues);
    put_le32(c + VIRTIO_BLK_CFG_MAX_DISCARD_SECTORS, VIRTIO_BLK_MAX_DWZ_SECTORS);
    put_le32(c + VIRTIO_BLK_CFG_MAX_DISCARD_SEG, 1);
    put_le32(c + VIRTIO_BLK_CFG_DISCARD_ALIGNMENT, 1);
    put_le32(c + VIRTIO_BLK_CFG_MAX_WZ_SECTORS, VIRTIO_BLK_MAX_DWZ_SECTORS);
    put_le32(c + VIRTIO_BLK_CFG_MAX_WZ_SEG, 1);
    c[VIRTIO_BLK_CFG_WZ_MAY_UNMAP] = blk_discard_enabled(s->blk);
}

/* The writeback field is the driver's to change with CONFIG_WCE. */
static void virtio_blk_set_config(VirtIODevice *vdev, const uint8_t *c)
{
    VirtIOBlock *s = virtio_blk_of(vdev);
    bool wce = c[VIRTIO_BLK_CFG_WRITEBACK];
    if (wce == blk_enable_write_cache(s->blk)) {
        return;
    }
    if (!virtio_has_feature(vdev, VIRTIO_BLK_F_CONFIG_WCE)) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: writeback written without CONFIG_WCE: ignored\n",
                      virtio_name(vdev));
        return;
    }
    blk_set_enable_write_cache(s->blk, wce);
}

static void virtio_blk_reset(VirtIODevice *vdev)
{
    VirtIOBlock *s = virtio_blk_of(vdev);
    if (s->blk) {
        blk_set_enable_write_cache(s->blk, s->original_wce);
    }
}

static unsigned virtio_blk_in_flight(VirtIODevice *vdev)
{
    return virtio_blk_of(vdev)->in_flight;
}

static const VirtIODeviceOps virtio_blk_ops = {
    .get_config = virtio_blk_get_config,
    .set_config = virtio_blk_set_config,
    .reset = virtio_blk_reset,
    .in_flight = virtio_blk_in_flight,
};

/* Without the device lock: the kicks already made are served, then every
 * completion (which takes the lock) has run. */
static void virtio_blk_pci_drain(QEMUDevice *dev)
{
    VirtIOBlkPCI *d = (VirtIOBlkPCI *)dev;
    virtio_pci_flush_kicks(&d->proxy);
    for (unsigned i = 0; i < d->blk.vdev.num_queues; i++) {
        virtio_blk_queue_pass(&d->blk.queues[i]);
    }
    blk_drain(d->blk.blk);
}

static uint64_t virtio_blk_features(const VirtIOBlkConf *conf)
{
    uint64_t f = VIRTIO_BIT(VIRTIO_BLK_F_SEG_MAX) | VIRTIO_BIT(VIRTIO_BLK_F_BLK_SIZE) |
                 VIRTIO_BIT(VIRTIO_BLK_F_FLUSH) | VIRTIO_BIT(VIRTIO_BLK_F_TOPOLOGY) |
                 VIRTIO_BIT(VIRTIO_BLK_F_CONFIG_WCE) | VIRTIO_BIT(VIRTIO_BLK_F_WRITE_ZEROES);
    if (blk_is_read_only(conf->blk)) {
        f |= VIRTIO_BIT(VIRTIO_BLK_F_RO);
    }
    if (blk_discard_enabled(conf->blk)) {
        f |= VIRTIO_BIT(VIRTIO_BLK_F_DISCARD);
    }
    if (conf->num_queues > 1) {
        f |= VIRTIO_BIT(VIRTIO_BLK_F_MQ);
    }
    return f;
}

static bool virtio_blk_conf_check(const VirtIOBlkConf *conf, Error **errp)
{
    if (!conf->blk) {
        error_setg(errp, "drive property not set");
        return false;
    }
    if (conf->num_queues < 1 || conf->num_queues > VIRTIO_BLK_MAX_QUEUES) {
        error_setg(errp, "num-queues property must be between 1 and %u",
                   VIRTIO_BLK_MAX_QUEUES);
        return false;
    }
    if (conf->queue_size < 4 || conf->queue_size > VIRTQUEUE_MAX_SIZE ||
        (conf->queue_size & (conf->queue_size - 1))) {
        error_setg(errp, "queue-size property must be a power of two between 4 and %u",
                   VIRTQUEUE_MAX_SIZE);
        return false;
    }
    return true;
}

QEMUDevice *virtio_blk_pci_new(PCIBus *bus, int devfn, const VirtIOBlkConf *conf,
                               Error **errp)
{
    if (!virtio_blk_conf_check(conf, errp) || !blk_attach(conf->blk, conf->iothread, errp)) {
        return NULL;
    }
    VirtIOBlkPCI *d = g_new0(VirtIOBlkPCI, 1);
    VirtIOBlock *s = &d->blk;
    s->blk = conf->blk;
    blk_set_on_error(conf->blk, conf->rerror, conf->werror);
    s->serial = g_strdup(conf->serial);
    s->original_wce = blk_enable_write_cache(conf->blk);
    s->ctx = conf->iothread ? iothread_context(conf->iothread) : main_loop_context();
    virtio_init(&s->vdev, VIRTIO_ID_BLOCK, &virtio_blk_ops, virtio_blk_features(conf),
                VIRTIO_BLK_CFG_SIZE, conf->num_queues, conf->queue_size,
                virtio_blk_handle_queue);
    if (!virtio_pci_init(&d->proxy, &s->vdev, bus, devfn, "virtio-blk-pci", "virtio-blk",
                         PCI_CLASS_STORAGE_SCSI, conf->iothread, conf->pci, errp)) {
        virtio_cleanup(&s->vdev);
        g_free(s->serial);
        g_free(d);
        return NULL;
    }
    d->proxy.pci.qdev.drain = virtio_blk_pci_drain;
    s->queues = g_new0(VirtIOBlkQueue, conf->num_queues);
    for (unsigned i = 0; i < conf->num_queues; i++) {
        s->queues[i] = (VirtIOBlkQueue) { .s = s, .vq = &s->vdev.vqs[i] };
    }
    /* The interrupt bottom half lives where the completions run; a source
     * of an I/O thread's context is attached from that thread. */
    if (conf->iothread) {
        iothread_run_sync(conf->iothread, virtio_blk_create_bhs, s);
    } else {
        virtio_blk_create_bhs(s);
    }
    return &d->proxy.pci.qdev;
}

/* ---- -device virtio-blk-pci ---- */

typedef struct VirtIOBlkPCIOptions {
    PCIDeviceOptions pcidev;
    int32_t bootindex;
    OnOffAuto write_cache;
    DeviceLink drive;
    BlockErrorProperties errors;
    DeviceLink iothread;
    uint16_t num_queues;
    uint16_t queue_size;
    char *serial;
    VirtIOPCIConf pci;
} VirtIOBlkPCIOptions;

static const DeviceProperty virtio_blk_pci_properties[] = {
    DEFINE_PCI_DEVICE_PROPERTIES(VirtIOBlkPCIOptions, pcidev),
    DEFINE_PROP_BOOTINDEX(VirtIOBlkPCIOptions, bootindex),
    /* The writeback bit the guest sees at power-on; auto: cache='s. */
    DEFINE_PROP_ON_OFF_AUTO("write-cache", VirtIOBlkPCIOptions, write_cache, ON_OFF_AUTO_AUTO,
                            NULL),
    DEFINE_PROP_LINK("drive", DEVICE_PROP_DRIVE, VirtIOBlkPCIOptions, drive),
    DEFINE_BLOCK_ERROR_PROPERTIES(VirtIOBlkPCIOptions, errors),
    DEFINE_PROP_LINK("iothread", DEVICE_PROP_IOTHREAD, VirtIOBlkPCIOptions, iothread),
    /* As QEMU's help shows them (docs/storage.md says what they do): the
     * default num-queues is one per vCPU, at most 64, and more than one
     * offers VIRTIO_BLK_F_MQ; queue-size is a power of two. */
    DEFINE_PROP_UINT16("num-queues", VirtIOBlkPCIOptions, num_queues,
                       VIRTIO_BLK_AUTO_NUM_QUEUES, NULL),
    DEFINE_PROP_UINT16("queue-size", VirtIOBlkPCIOptions, queue_size, 256, NULL),
    DEFINE_PROP_STRING("serial", VirtIOBlkPCIOptions, serial, NULL),
    DEFINE_VIRTIO_PCI_PROPERTIES(VirtIOBlkPCIOptions, pci),
};

static QEMUDevice *virtio_blk_pci_realize(const void *options, const DeviceBuses *buses,
                                          Error **errp)
{
    const VirtIOBlkPCIOptions *o = options;
    DriveInfo *drive = o->drive.backend;
    if (drive && !drive_info_claim(drive, errp)) {
        return NULL;
    }
    if (drive && !drive->blk) {
        error_setg(errp, "Device needs media, but drive is empty");
        return NULL;
    }
    if (drive) {
        block_error_properties_apply(&o->errors, drive);
        if (o->write_cache != ON_OFF_AUTO_AUTO) {
            /* Before the device takes it as the state a reset restores. */
            blk_set_enable_write_cache(drive->blk, o->write_cache == ON_OFF_AUTO_ON);
        }
    }
    /* As QEMU 7.2: a queue per vCPU the machine starts with (not maxcpus),
     * each with its MSI-X vector, so that blk-mq maps one to each CPU. */
    uint16_t num_queues = o->num_queues;
    if (num_queues == VIRTIO_BLK_AUTO_NUM_QUEUES) {
        num_queues = CLAMP(buses->boot_cpus, 1, VIRTIO_BLK_MAX_QUEUES);
    }
    VirtIOBlkConf conf = {
        .blk = drive ? drive->blk : NULL, .iothread = o->iothread.backend,
        .num_queues = num_queues, .queue_size = o->queue_size, .serial = o->serial,
        .pci = &o->pci, .rerror = drive ? drive->rerror : DRIVE_ERROR_REPORT,
        .werror = drive ? drive->werror : DRIVE_ERROR_REPORT,
    };
    QEMUDevice *dev = virtio_blk_pci_new(buses->pci, o->pcidev.addr, &conf, errp);
    if (dev && drive) {
        drive_info_attach(drive, dev, NULL, NULL);      /* a fixed disk */
    }
    return dev;
}

/* num-queues as realized (one per boot vCPU when not given), and the
 * transport's choices. */
static void virtio_blk_pci_chosen_options(QEMUDevice *dev, void *options)
{
    const VirtIOBlkPCI *d = (const VirtIOBlkPCI *)((const char *)dev -
                                                   offsetof(VirtIOBlkPCI, proxy.pci.qdev));
    VirtIOBlkPCIOptions *o = options;
    o->num_queues = d->blk.vdev.num_queues;
    virtio_pci_chosen_conf(dev, &o->pci);
}

const DeviceTypeInfo virtio_blk_pci_type = {
    .name = "virtio-blk-pci",
    .alias = "virtio-blk",          /* QEMU's on x86 */
    .bus = DEVICE_BUS_PCI,
    .category = DEVICE_CATEGORY_STORAGE,
    .description = "virtio block device (transitional 1af4:1001, or modern-only 1af4:1042)",
    DEVICE_PROPERTIES(virtio_blk_pci_properties),
    .options_size = sizeof(VirtIOBlkPCIOptions),
    .realize = virtio_blk_pci_realize,
    .chosen_options = virtio_blk_pci_chosen_options,
};
