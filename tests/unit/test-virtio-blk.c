/*
 * virtio-blk-pci end to end, as Linux's virtio_pci and virtio_blk drive
 * it: the capabilities found by walking config space, the common
 * configuration through MMIO dispatch, queues in the test's guest RAM,
 * requests kicked through the notify region and completed against a
 * temporary image, checked byte for byte in the file; interrupts through
 * MSI-X and INTx; hostile chains ending in DEVICE_NEEDS_RESET; a reset
 * that waits for requests in flight; an I/O thread; two queues. The same
 * transitional device driven through its legacy I/O BAR as Linux's
 * virtio_pci_legacy drives it, one interface at a time; QEMU's
 * switches: disable-legacy, disable-modern, ioeventfd=off, x-irqfd=off;
 * and werror=stop keeping a write until cont.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "block/block-backend.h"
#include "file-size-limit.h"
#include "exec/memory.h"
#include "hw/irq.h"
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/qdev-registry.h"
#include "hw/virtio/virtio-blk.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "sysemu/drives.h"
#include "sysemu/iothread.h"
#include "sysemu/runstate.h"
#include "virtio-pci-driver.h"

#define RAM_BASE        0x100000ULL
#define RAM_SIZE        (4 << 20)
#define RING_GPA(q)     (RAM_BASE + 0x1000 + (q) * 0x2000)
#define HDR_GPA         (RAM_BASE + 0x10000)    /* 16 bytes per request slot */
#define STATUS_GPA      (RAM_BASE + 0x11000)    /* 1 byte per slot */
#define DATA_GPA        (RAM_BASE + 0x20000)
#define DATA2_GPA       (RAM_BASE + 0x200000)
#define QSIZE           32
#define DESCS_PER_REQ   4                       /* header, two data pieces, status */
#define SLOTS           (QSIZE / DESCS_PER_REQ)
#define IMAGE_SIZE      (1 << 20)
#define GSI_BASE        16
#define SERIAL          "pdl-serial-0123456789abc"  /* longer than 20 bytes */

#define F(bit)          VIRTIO_BIT(bit)
#define DRIVER_FEATURES (F(VIRTIO_F_VERSION_1) | F(VIRTIO_F_RING_EVENT_IDX) | \
                         F(VIRTIO_F_RING_INDIRECT_DESC) | F(VIRTIO_BLK_F_SEG_MAX) | \
                         F(VIRTIO_BLK_F_BLK_SIZE) | F(VIRTIO_BLK_F_FLUSH) | \
                         F(VIRTIO_BLK_F_TOPOLOGY) | F(VIRTIO_BLK_F_CONFIG_WCE) | \
                         F(VIRTIO_BLK_F_MQ) | F(VIRTIO_BLK_F_DISCARD) | \
                         F(VIRTIO_BLK_F_WRITE_ZEROES) | F(VIRTIO_BLK_F_RO))

/* ---- which thread did the work (test_iothread) ---- */

/* Calls seen at one point of the data path while watching, and how many
 * of them ran on a thread other than the one expected. */
typedef struct ThreadSeen {
    unsigned calls;
    unsigned elsewhere;
} ThreadSeen;

static struct {
    bool watching;              /* atomic */
    pthread_t expected;         /* written before watching is set */
    ThreadSeen kick;            /* the queue's handler */
    ThreadSeen push;            /* a chain back in the used ring */
    ThreadSeen notify;          /* the device raising the queue's vector */
    ThreadSeen msi;             /* the message leaving for the (recording) irqchip */
} where;

static void thread_seen(ThreadSeen *s)
{
    if (!__atomic_load_n(&where.watching, __ATOMIC_ACQUIRE)) {
        return;
    }
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_SEQ_CST);
    if (!pthread_equal(pthread_self(), where.expected)) {
        __atomic_add_fetch(&s->elsewhere, 1, __ATOMIC_SEQ_CST);
    }
}

/* The test links with -Wl,--wrap=virtqueue_push (meson.build): every
 * completion virtio-blk returns to the used ring passes through here. */
void __real_virtqueue_push(VirtQueue *vq, VirtQueueElement *elem, uint32_t len);
void __wrap_virtqueue_push(VirtQueue *vq, VirtQueueElement *elem, uint32_t len);
void __wrap_virtqueue_push(VirtQueue *vq, VirtQueueElement *elem, uint32_t len)
{
    thread_seen(&where.push);
    __real_virtqueue_push(vq, elem, len);
}

/* ---- a recording interrupt backend ---- */

static struct {
    unsigned msis[8];           /* by MSI data - VPD_MSI_DATA_BASE (the vector) */
    bool level[IRQ_MAX_GSI];
} rec;

static void rec_set_level(void *opaque, unsigned gsi, bool level)
{
    __atomic_store_n(&rec.level[gsi], level, __ATOMIC_SEQ_CST);
}

static void rec_send_msi(void *opaque, uint64_t address, uint32_t data)
{
    g_assert_cmphex(address, ==, VPD_MSI_ADDRESS);
    g_assert_cmpuint(data - VPD_MSI_DATA_BASE, <, G_N_ELEMENTS(rec.msis));
    thread_seen(&where.msi);
    __atomic_add_fetch(&rec.msis[data - VPD_MSI_DATA_BASE], 1, __ATOMIC_SEQ_CST);
}

static unsigned msis(unsigned vector)
{
    return __atomic_load_n(&rec.msis[vector], __ATOMIC_SEQ_CST);
}

static unsigned map_irq(unsigned slot, unsigned pin)
{
    return GSI_BASE + (slot + pin - 1) % 4;
}

/* ---- the device and where its structures are ---- */

static uint8_t *ram;
static char *test_dir;

typedef struct TestOptions {
    unsigned num_queues;
    bool read_only;
    bool discard;
    bool iothread;
    bool msix;
    const VirtIOPCIConf *pci;   /* NULL: the defaults */
    DriveErrorAction werror;    /* 0: report */
} TestOptions;

typedef struct TestDev {
    VirtioPCIDriver d;
    QEMUDevice *qdev;
    BlockBackend *blk;
    IOThread *iothread;
    char *path;
    uint16_t legacy;            /* BAR 0's port while a legacy driver drives it, or 0 */
    unsigned vendor_caps;       /* bit n: a virtio capability of cfg_type n */
    unsigned gsi;
    TestVring vq[2];
    unsigned next_slot;
} TestDev;

/*
 * The structures found as virtio_pci_modern finds them, and QEMU's layout
 * of them checked: besides MSI-X (its table in BAR 1) only virtio
 * capabilities, each of a known type for a 4 KiB structure in BAR 4, the
 * notify one 20 bytes long.
 */
static void find_structures(TestDev *t)
{
    VirtioPCIDriver *d = &t->d;
    vpd_find_structures(d);
    unsigned found = 0;
    for (uint8_t cap = vpd_cfg_read(d, PCI_CAPABILITY_LIST, 1); cap;
         cap = vpd_cfg_read(d, cap + 1, 1)) {
        if (cap == d->msix_cap) {
            continue;
        }
        g_assert_cmpuint(vpd_cfg_read(d, cap, 1), ==, PCI_CAP_ID_VNDR);
        uint8_t type = vpd_cfg_read(d, cap + 3, 1);
        g_assert_cmpuint(type, >=, VIRTIO_PCI_CAP_COMMON_CFG);
        g_assert_cmpuint(type, <=, VIRTIO_PCI_CAP_DEVICE_CFG);
        g_assert_cmpuint(vpd_cfg_read(d, cap + 4, 1), ==, VIRTIO_PCI_MODERN_BAR);
        g_assert_cmpuint(vpd_cfg_read(d, cap + 12, 4), ==, 0x1000);
        if (type == VIRTIO_PCI_CAP_NOTIFY_CFG) {
            g_assert_cmpuint(vpd_cfg_read(d, cap + 2, 1), ==, 20);
        }
        found |= 1u << type;
    }
    t->vendor_caps = found;
    g_assert_cmpuint(d->msix_cap, !=, 0);
    g_assert_cmphex(vpd_cfg_read(d, d->msix_cap + 4, 4) & 7, ==, VIRTIO_PCI_MSIX_BAR);
}

/* Queue q as the device offers it, laid out and enabled. */
static void setup_queue(TestDev *t, unsigned q, uint16_t vector)
{
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, q, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_SIZE, 2), ==, 256);
    tv_init(&t->vq[q], ram, RAM_BASE, QSIZE, RING_GPA(q));
    vpd_setup_queue(&t->d, q, &t->vq[q], vector);
}

/* Linux's virtio_dev_probe + virtblk_probe order, up to DRIVER_OK. */
static void driver_init(TestDev *t, const TestOptions *o)
{
    vpd_set_status(&t->d, 0);
    g_assert_cmpuint(vpd_status(&t->d), ==, 0);
    vpd_set_status(&t->d, VIRTIO_CONFIG_S_ACKNOWLEDGE);
    vpd_set_status(&t->d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    vpd_set_driver_features(&t->d, vpd_device_features(&t->d) & DRIVER_FEATURES);
    uint8_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                VIRTIO_CONFIG_S_FEATURES_OK;
    vpd_set_status(&t->d, s);
    g_assert_cmphex(vpd_status(&t->d), ==, s);
    unsigned nq = o->num_queues ? o->num_queues : 1;
    if (o->msix) {
        vpd_enable_msix(&t->d, nq + 1);
    }
    for (unsigned q = 0; q < nq; q++) {
        setup_queue(t, q, o->msix ? q + 1 : VIRTIO_NO_VECTOR);
    }
    vpd_set_status(&t->d, s | VIRTIO_CONFIG_S_DRIVER_OK);
    t->next_slot = 0;
}

/* The device, its BARs assigned and decoded, bus mastering on; no driver. */
static TestDev *dev_create(const TestOptions *o)
{
    TestDev *t = g_new0(TestDev, 1);
    memset(ram, 0, RAM_SIZE);
    memset(&rec, 0, sizeof(rec));
    PCIBus *bus = pci_bus_new(map_irq);
    t->path = g_build_filename(test_dir, "vblk.img", NULL);
    int fd = open(t->path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, IMAGE_SIZE), ==, 0);
    close(fd);
    DriveConfig cfg = {
        .id = (char *)"vd0", .file = t->path, .format = DRIVE_FORMAT_RAW,
        .cache = DRIVE_CACHE_WRITEBACK, .aio = DRIVE_AIO_THREADS,
        .discard = o->discard ? DRIVE_DISCARD_UNMAP : DRIVE_DISCARD_IGNORE,
        .read_only = o->read_only,
    };
    Error *err = NULL;
    t->blk = blk_new_open(&cfg, &err);
    g_assert_null(err);
    if (o->iothread) {
        t->iothread = iothread_new("vblk-io", &err);
        g_assert_nonnull(t->iothread);
    }
    VirtIOBlkConf conf = {
        .blk = t->blk, .iothread = t->iothread, .num_queues = o->num_queues ? o->num_queues : 1,
        .queue_size = 256, .serial = SERIAL, .pci = o->pci, .werror = o->werror,
    };
    t->qdev = virtio_blk_pci_new(bus, -1, &conf, &err);
    g_assert_null(err);
    vpd_enable(&t->d, bus, ((PCIDevice *)t->qdev)->devfn,
               PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    t->gsi = vpd_cfg_read(&t->d, PCI_INTERRUPT_LINE, 1);
    return t;
}

/* The device driven through its modern interface, as Linux does. */
static TestDev *dev_new(const TestOptions *o)
{
    TestDev *t = dev_create(o);
    find_structures(t);
    g_assert_cmphex(t->vendor_caps, ==, 0x1e);
    driver_init(t, o);
    return t;
}

/* Decoding off (the BARs leave the address space for the next test's
 * device), drained, reset as the machine resets it (its INTx, which the
 * next test's device shares, goes down), closed. */
static void dev_free(TestDev *t)
{
    vpd_cfg_write(&t->d, PCI_COMMAND, 0, 2);
    t->qdev->drain(t->qdev);
    device_lock(t->qdev);
    t->qdev->reset(t->qdev);
    device_unlock(t->qdev);
    blk_unref(t->blk);
    if (t->iothread) {
        iothread_free(t->iothread);
    }
    g_unlink(t->path);
    g_free(t->path);
    g_free(t);
}

/* ---- requests ---- */

typedef struct Req {
    unsigned q;
    unsigned slot;
    uint16_t head;
} Req;

static uint8_t *req_status(const Req *r)
{
    return ram + (STATUS_GPA + r->slot - RAM_BASE);
}

/*
 * Post a request on queue q: the header, then data of len bytes at
 * data_gpa in two pieces (readable for a write, writable for a read; none
 * if len is 0), then the status byte. Not kicked.
 */
static Req post(TestDev *t, unsigned q, uint32_t type, uint64_t sector, uint64_t data_gpa,
                uint32_t len, bool data_writable)
{
    TestVring *tv = &t->vq[q];
    Req r = { .q = q, .slot = t->next_slot++ % SLOTS };
    uint16_t d = r.slot * DESCS_PER_REQ;
    struct { uint32_t type, ioprio; uint64_t sector; } hdr = { type, 0, sector };
    memcpy(ram + (HDR_GPA + 16 * r.slot - RAM_BASE), &hdr, sizeof(hdr));
    *req_status(&r) = 0xee;
    uint16_t wflag = data_writable ? VRING_DESC_F_WRITE : 0;
    tv_desc(tv, d, HDR_GPA + 16 * r.slot, sizeof(hdr), VRING_DESC_F_NEXT, d + 1);
    uint32_t first = len / 2 & ~511u;
    tv_desc(tv, d + 1, data_gpa, first, VRING_DESC_F_NEXT | wflag, d + 2);
    tv_desc(tv, d + 2, data_gpa + first, len - first, VRING_DESC_F_NEXT | wflag, d + 3);
    tv_desc(tv, d + 3, STATUS_GPA + r.slot, 1, VRING_DESC_F_WRITE, 0);
    r.head = d;
    tv_publish(tv, d);
    return r;
}

/* As Linux's vp_notify, through the interface the driver uses: the queue
 * index at the queue's address or port. Dispatch signals the queue's
 * ioeventfd (KVM would); the device serves it on its context. */
static void kick(TestDev *t, unsigned q)
{
    if (t->legacy) {
        outw(t->legacy + VIRTIO_PCI_LEGACY_QUEUE_NOTIFY, q);
    } else {
        vpd_kick(&t->d, q);
    }
}

/* Set while all the work must be the I/O thread's: waits only sleep and
 * never run the main loop's context, so work left there is never done. */
static bool main_loop_frozen;

/* Run the completions (the main loop's, or wait for the I/O thread's)
 * until queue q has n more used elements; return the last one. */
static VRingUsedElem wait_used(TestDev *t, unsigned q, unsigned n)
{
    TestVring *tv = &t->vq[q];
    uint16_t target = tv->used_seen + n;
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (tv_used_idx(tv) != target) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        if (main_loop_frozen || !g_main_context_iteration(main_loop_context(), FALSE)) {
            g_usleep(100);
        }
    }
    /* Let the interrupt bottom half, and the vector's notifier, run too. */
    if (!main_loop_frozen) {
        vpd_settle();
    }
    if (t->iothread) {
        g_usleep(20000);
    }
    VRingUsedElem used = { 0 };
    for (unsigned i = 0; i < n; i++) {
        g_assert_true(tv_take_used(tv, &used));
    }
    /* As Linux re-enables callbacks: interrupt me for the next one. */
    tv_set_used_event(tv, tv->used_seen);
    return used;
}

/* Post, kick, wait: the request's status. */
static uint8_t run(TestDev *t, uint32_t type, uint64_t sector, uint64_t data_gpa, uint32_t len,
                   bool data_writable, uint32_t *used_len)
{
    Req r = post(t, 0, type, sector, data_gpa, len, data_writable);
    kick(t, 0);
    VRingUsedElem used = wait_used(t, 0, 1);
    g_assert_cmpuint(used.id, ==, r.head);
    if (used_len) {
        *used_len = used.len;
    }
    return *req_status(&r);
}

static void fill_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    GRand *rand = g_rand_new_with_seed(seed);
    for (size_t i = 0; i < len; i++) {
        buf[i] = g_rand_int(rand);
    }
    g_rand_free(rand);
}

static void read_image(TestDev *t, uint64_t offset, void *buf, size_t len)
{
    int fd = open(t->path, O_RDONLY);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, buf, len, offset), ==, (ssize_t)len);
    close(fd);
}

static bool all_zero(const uint8_t *buf, size_t len)
{
    return len == 0 || (buf[0] == 0 && memcmp(buf, buf + 1, len - 1) == 0);
}

static uint8_t *gpa(uint64_t addr)
{
    return ram + (addr - RAM_BASE);
}

/* A pattern of len bytes written at sector, then read back elsewhere in
 * guest RAM: both requests succeed and the bytes match. */
static void write_read_back(TestDev *t, uint64_t sector, uint32_t len, unsigned seed)
{
    fill_pattern(gpa(DATA_GPA), len, seed);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, sector, DATA_GPA, len, false, NULL), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, sector, DATA2_GPA, len, true, NULL), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpmem(gpa(DATA2_GPA), len, gpa(DATA_GPA), len);
}

/* ---- tests ---- */

/* The default, a transitional device as QEMU 7.2's pc machine gives:
 * 1af4:1001, revision 0, subsystem 1af4:0002 (the virtio id), the legacy
 * I/O BAR 0 of 128 bytes beside the modern BAR 4 and MSI-X BAR 1. */
static void test_pci_identity(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true });
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_VENDOR_ID, 4), ==, 0x10011af4);
    /* SCSI class, rev 0 */
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_REVISION_ID, 4), ==, 0x01000000);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_SUBSYSTEM_VENDOR_ID, 4), ==, 0x00021af4);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_INTERRUPT_PIN, 1), ==, 1);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0 + 16, 4) & 0xf, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmphex(vpd_bar_address(&t->d, 4) - t->d.common, ==, 0);
    g_assert_cmphex(t->d.isr - t->d.common, ==, 0x1000);
    g_assert_cmphex(t->d.device - t->d.common, ==, 0x2000);
    g_assert_cmphex(t->d.notify - t->d.common, ==, 0x3000);
    g_assert_cmpuint(t->d.notify_mult, ==, 4);
    /* MSI-X: queues + 1 vectors, table at 0 and PBA at 0x800 of BAR 1. */
    g_assert_cmphex(vpd_cfg_read(&t->d, t->d.msix_cap + 2, 2) & 0x7ff, ==, 1);
    g_assert_cmphex(vpd_cfg_read(&t->d, t->d.msix_cap + 8, 4), ==, 0x800 | VIRTIO_PCI_MSIX_BAR);
    /* BAR sizes, as Linux's PCI core measures them. */
    vpd_cfg_write(&t->d, PCI_COMMAND, 0, 2);
    vpd_cfg_write(&t->d, PCI_BASE_ADDRESS_0 + 16, 0xffffffff, 4);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0 + 16, 4), ==, 0xffffc00c);
    vpd_cfg_write(&t->d, PCI_BASE_ADDRESS_0 + 4, 0xffffffff, 4);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0 + 4, 4), ==, 0xfffff000);
    vpd_cfg_write(&t->d, PCI_BASE_ADDRESS_0, 0xffffffff, 4);
    /* 128 B of I/O */
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0, 4) & 0xffff, ==, 0xff81);
    dev_free(t);
}

/* disable-legacy=on: modern only, 1af4:1042 revision 1 with QEMU's
 * default subsystem, no I/O BAR. */
static void test_disable_legacy(void)
{
    const VirtIOPCIConf pci = { .disable_legacy = ON_OFF_AUTO_ON, .ioeventfd = true,
                                .irqfd = true, .vectors = VIRTIO_PCI_VECTORS_AUTO };
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true, .pci = &pci });
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_VENDOR_ID, 4), ==, 0x10421af4);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_REVISION_ID, 4), ==, 0x01000001);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_SUBSYSTEM_VENDOR_ID, 4), ==, 0x11001af4);
    vpd_cfg_write(&t->d, PCI_BASE_ADDRESS_0, 0xffffffff, 4);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0, 4), ==, 0);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    dev_free(t);
}

static uint32_t config32(TestDev *t, unsigned offset)
{
    return mem_read(t->d.device + offset, 4);
}

static void test_features_and_config(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .discard = true });
    uint64_t f = vpd_device_features(&t->d);
    uint64_t expected = F(VIRTIO_F_VERSION_1) | F(VIRTIO_F_RING_EVENT_IDX) |
                        F(VIRTIO_F_RING_INDIRECT_DESC) | F(VIRTIO_BLK_F_SEG_MAX) |
                        F(VIRTIO_BLK_F_BLK_SIZE) | F(VIRTIO_BLK_F_FLUSH) |
                        F(VIRTIO_BLK_F_TOPOLOGY) | F(VIRTIO_BLK_F_CONFIG_WCE) |
                        F(VIRTIO_BLK_F_DISCARD) | F(VIRTIO_BLK_F_WRITE_ZEROES);
    g_assert_cmphex(f, ==, expected);
    /* Accepted features read back; one that was not offered is dropped. */
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_GFSELECT, 0, 4);
    g_assert_cmphex(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_GF, 4), ==, (uint32_t)expected);

    /* Config space: capacity in sectors, 8 bytes as two dwords too. */
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_CAPACITY), ==, IMAGE_SIZE / 512);
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_CAPACITY + 4), ==, 0);
    uint64_t capacity = 0;
    g_assert_cmpint(address_space_read(address_space_memory, t->d.device, &capacity, 8), ==,
                    MEMTX_OK);
    g_assert_cmpuint(capacity, ==, IMAGE_SIZE / 512);
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_SEG_MAX), ==, 254);
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_BLK_SIZE), ==, 512);
    g_assert_cmpuint(mem_read(t->d.device + VIRTIO_BLK_CFG_NUM_QUEUES, 2), ==, 1);
    g_assert_cmpuint(mem_read(t->d.device + VIRTIO_BLK_CFG_WRITEBACK, 1), ==, 1);
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_MAX_DISCARD_SECTORS), ==, 2097152);
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_MAX_DISCARD_SEG), ==, 1);
    g_assert_cmpuint(mem_read(t->d.device + VIRTIO_BLK_CFG_WZ_MAY_UNMAP, 1), ==, 1);
    /* Past the end: all ones, as QEMU answers. */
    g_assert_cmphex(mem_read(t->d.device + VIRTIO_BLK_CFG_SIZE, 4), ==, 0xffffffff);

    /* The guest turns its write cache off (CONFIG_WCE negotiated). */
    mem_write(t->d.device + VIRTIO_BLK_CFG_WRITEBACK, 0, 1);
    g_assert_false(blk_enable_write_cache(t->blk));
    g_assert_cmpuint(mem_read(t->d.device + VIRTIO_BLK_CFG_WRITEBACK, 1), ==, 0);
    /* ... and a reset restores the drive's mode. */
    vpd_set_status(&t->d, 0);
    g_assert_true(blk_enable_write_cache(t->blk));

    /* FEATURES_OK without VERSION_1 does not stick: a legacy driver. */
    vpd_set_status(&t->d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    vpd_set_driver_features(&t->d, F(VIRTIO_BLK_F_FLUSH));
    vpd_set_status(&t->d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                  VIRTIO_CONFIG_S_FEATURES_OK);
    g_assert_cmphex(vpd_status(&t->d), ==, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    dev_free(t);
}

static void test_read_write(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .discard = true, .msix = true });
    const uint32_t len = 64 * 1024;
    const uint64_t sector = 100;
    uint8_t *file = g_malloc(len);
    uint32_t used_len;

    fill_pattern(gpa(DATA_GPA), len, 1);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, sector, DATA_GPA, len, false, &used_len), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpuint(used_len, ==, 1);
    read_image(t, sector * 512, file, len);
    g_assert_cmpmem(file, len, gpa(DATA_GPA), len);
    g_assert_cmpuint(msis(1), ==, 1);       /* queue 0's vector */
    g_assert_cmpuint(msis(0), ==, 0);

    memset(gpa(DATA2_GPA), 0xaa, len);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, sector, DATA2_GPA, len, true, &used_len), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpuint(used_len, ==, len + 1);
    g_assert_cmpmem(gpa(DATA2_GPA), len, gpa(DATA_GPA), len);

    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);

    /* GET_ID: the first 20 bytes of the serial. */
    memset(gpa(DATA2_GPA), 0xaa, 512);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true, &used_len), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpmem(gpa(DATA2_GPA), VIRTIO_BLK_ID_BYTES, SERIAL, VIRTIO_BLK_ID_BYTES);
    g_assert_cmpuint(used_len, ==, VIRTIO_BLK_ID_BYTES + 1);

    /* DISCARD and WRITE_ZEROES: one segment after the header. */
    struct { uint64_t sector; uint32_t num, flags; } seg = { sector + 8, 16, 0 };
    memcpy(gpa(DATA2_GPA), &seg, sizeof(seg));
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_DISCARD, 0, DATA2_GPA, sizeof(seg), false, NULL), ==,
                     VIRTIO_BLK_S_OK);
    read_image(t, (sector + 8) * 512, file, 16 * 512);
    g_assert_true(all_zero(file, 16 * 512));
    seg = (typeof(seg)) { sector + 64, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP };
    memcpy(gpa(DATA2_GPA), &seg, sizeof(seg));
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_WRITE_ZEROES, 0, DATA2_GPA, sizeof(seg), false, NULL),
                     ==, VIRTIO_BLK_S_OK);
    read_image(t, (sector + 64) * 512, file, 8 * 512 + 512);
    g_assert_true(all_zero(file, 8 * 512));
    g_assert_cmpmem(file + 8 * 512, 512, gpa(DATA_GPA) + 72 * 512, 512);  /* and no further */
    seg.flags = 2;      /* unknown flag */
    memcpy(gpa(DATA2_GPA), &seg, sizeof(seg));
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_WRITE_ZEROES, 0, DATA2_GPA, sizeof(seg), false, NULL),
                     ==, VIRTIO_BLK_S_UNSUPP);
    seg = (typeof(seg)) { IMAGE_SIZE / 512 - 4, 8, 0 };      /* past the end */
    memcpy(gpa(DATA2_GPA), &seg, sizeof(seg));
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_DISCARD, 0, DATA2_GPA, sizeof(seg), false, NULL), ==,
                     VIRTIO_BLK_S_IOERR);

    /* Errors: past the end, a part of a sector, sector numbers that
     * overflow, an unknown type. */
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, IMAGE_SIZE / 512 - 1, DATA2_GPA, 1024, true, NULL),
                     ==, VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 1000, false, NULL), ==,
                     VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, UINT64_MAX / 256, DATA2_GPA, 512, true, NULL), ==,
                     VIRTIO_BLK_S_IOERR);
    g_assert_cmpuint(run(t, 0x1234, 0, DATA2_GPA, 512, true, NULL), ==, VIRTIO_BLK_S_UNSUPP);
    read_image(t, 0, file, 1024);
    g_assert_true(all_zero(file, 1024));
    g_assert_cmphex(vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET, ==, 0);
    g_free(file);
    dev_free(t);
}

/* Several requests in flight from one kick, interrupts suppressed with
 * EVENT_IDX, kicks re-armed through avail_event. */
static void test_batch_and_event_idx(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true });
    TestVring *tv = &t->vq[0];
    for (unsigned i = 0; i < SLOTS; i++) {
        fill_pattern(gpa(DATA_GPA + i * 8192), 8192, 10 + i);
        post(t, 0, VIRTIO_BLK_T_OUT, i * 16, DATA_GPA + i * 8192, 8192, false);
    }
    kick(t, 0);
    wait_used(t, 0, SLOTS);
    g_assert_cmpuint(msis(1), >=, 1);
    g_assert_cmpuint(msis(1), <=, SLOTS);
    /* The device asks for the next kick at the index it has reached. */
    g_assert_cmpuint(tv_avail_event(tv), ==, tv->avail_idx);
    uint8_t *file = g_malloc(8192);
    for (unsigned i = 0; i < SLOTS; i++) {
        read_image(t, i * 16 * 512, file, 8192);
        g_assert_cmpmem(file, 8192, gpa(DATA_GPA + i * 8192), 8192);
    }
    /* The driver asks not to be interrupted before used passes 1000. */
    tv_set_used_event(tv, 1000);
    unsigned before = msis(1);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(msis(1), ==, before);
    tv_set_used_event(tv, tv->used_seen);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(msis(1), ==, before + 1);
    g_free(file);
    dev_free(t);
}

/* A kick turns kicks off and leaves the pass to a bottom half: a request
 * the driver adds before the pass runs needs no kick and goes in the same
 * batch; the pass that empties the ring asks for the next kick. */
static void test_kick_defers_pass(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true });
    TestVring *tv = &t->vq[0];
    post(t, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false);
    kick(t, 0);
    g_main_context_iteration(main_loop_context(), TRUE);    /* the kick */
    g_assert_cmpuint(tv_used_idx(tv), ==, 0);
    uint16_t old = tv->avail_idx;
    post(t, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false);
    g_assert_false(vpd_kick_needed(tv, old, true));
    wait_used(t, 0, 2);
    old = tv->avail_idx;
    post(t, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false);
    g_assert_true(vpd_kick_needed(tv, old, true));
    dev_free(t);
}

static void test_intx(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1 });
    g_assert_false(rec.level[t->gsi]);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    g_assert_true(rec.level[t->gsi]);
    g_assert_cmphex(mem_read(t->d.isr, 1), ==, VIRTIO_ISR_QUEUE);    /* read and clear */
    g_assert_false(rec.level[t->gsi]);
    g_assert_cmphex(mem_read(t->d.isr, 1), ==, 0);
    g_assert_cmpuint(msis(1), ==, 0);
    dev_free(t);
}

static void test_needs_reset(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true });
    TestVring *tv = &t->vq[0];
    /* A chain that loops. */
    tv_desc(tv, 0, HDR_GPA, 16, VRING_DESC_F_NEXT, 1);
    tv_desc(tv, 1, DATA_GPA, 512, VRING_DESC_F_NEXT, 0);
    tv_publish(tv, 0);
    kick(t, 0);
    vpd_settle();
    g_assert_cmphex(vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET, ==,
                    VIRTIO_CONFIG_S_NEEDS_RESET);
    g_assert_cmpuint(msis(0), ==, 1);           /* the configuration vector */
    g_assert_cmpuint(tv_used_idx(tv), ==, 0);
    /* Until a reset, kicks do nothing, and the driver cannot clear the bit. */
    post(t, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false);
    kick(t, 0);
    vpd_settle();
    g_assert_cmpuint(tv_used_idx(tv), ==, 0);
    vpd_set_status(&t->d, vpd_status(&t->d) & ~VIRTIO_CONFIG_S_NEEDS_RESET);
    g_assert_cmphex(vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET, ==,
                    VIRTIO_CONFIG_S_NEEDS_RESET);

    /* A reset and a new start: the device works again. */
    driver_init(t, &(TestOptions) { .num_queues = 1, .msix = true });
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);

    /* A request without a status byte (nothing device-writable). */
    tv_desc(tv, 8, HDR_GPA, 16, 0, 0);
    tv_publish(tv, 8);
    kick(t, 0);
    vpd_settle();
    g_assert_cmphex(vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET, ==,
                    VIRTIO_CONFIG_S_NEEDS_RESET);

    /* Rings outside RAM at enable. */
    vpd_set_status(&t->d, 0);
    vpd_set_status(&t->d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    vpd_set_driver_features(&t->d, F(VIRTIO_F_VERSION_1));
    vpd_set_status(&t->d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                  VIRTIO_CONFIG_S_FEATURES_OK);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, 0, 2);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_DESCLO, 0x80000000u, 4);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), ==, 0);
    g_assert_cmphex(vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET, ==,
                    VIRTIO_CONFIG_S_NEEDS_RESET);
    dev_free(t);
}

/* The driver's reset waits for the host: the status reads non-zero until
 * the request in flight has completed, and its chain is not returned. */
static void test_reset_waits_for_in_flight(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1 });
    post(t, 0, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 4096, false);
    kick(t, 0);
    /* One iteration serves the kick, the next the pass that submits the
     * request; its completion, which needs the main loop too, comes in a
     * later one. */
    g_main_context_iteration(main_loop_context(), TRUE);
    g_main_context_iteration(main_loop_context(), TRUE);
    uint8_t before = vpd_status(&t->d);
    vpd_set_status(&t->d, 0);
    g_assert_cmphex(vpd_status(&t->d), ==, before);
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (vpd_status(&t->d) != 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(main_loop_context(), FALSE);
    }
    g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, 0);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, 0, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), ==, 0);
    dev_free(t);
}

/* werror=stop: a write the host fails stays in flight (no used element,
 * the status byte untouched) while the VM is stopped in io-error; cont
 * sends it again and it completes with OK once the host takes it (EFBIG
 * past RLIMIT_FSIZE until then). */
static void test_werror_stop(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .werror = DRIVE_ERROR_STOP });
    runstate_set(RUN_STATE_RUNNING);
    file_size_limit_set(64 * 1024);
    const uint64_t sector = 1024;       /* 512 KiB: past the limit */
    fill_pattern(gpa(DATA_GPA), 4096, 7);
    Req r = post(t, 0, VIRTIO_BLK_T_OUT, sector, DATA_GPA, 4096, false);
    kick(t, 0);
    for (int i = 0; i < 100; i++) {
        g_main_context_iteration(main_loop_context(), FALSE);
        g_usleep(1000);
    }
    g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, 0);
    g_assert_cmphex(*req_status(&r), ==, 0xee);
    int exit_status;
    g_assert_false(runstate_main_loop_should_exit(&exit_status));
    g_assert_cmpint(runstate_get(), ==, RUN_STATE_IO_ERROR);
    g_assert_cmpstr(blk_io_status(t->blk), ==, "failed");

    file_size_limit_lift();
    vm_start();
    VRingUsedElem used = wait_used(t, 0, 1);
    g_assert_cmpuint(used.id, ==, r.head);
    g_assert_cmphex(*req_status(&r), ==, VIRTIO_BLK_S_OK);
    uint8_t file[4096];
    read_image(t, sector * 512, file, sizeof(file));
    g_assert_cmpmem(file, sizeof(file), gpa(DATA_GPA), sizeof(file));
    g_assert_cmpstr(blk_io_status(t->blk), ==, "ok");
    dev_free(t);
}

static VirtQueueHandler *device_kick_handler;
static void (*device_transport_notify)(VirtIODevice *vdev, uint16_t vector, uint8_t isr_bits);

static void kick_seen(VirtIODevice *vdev, VirtQueue *vq)
{
    thread_seen(&where.kick);
    device_kick_handler(vdev, vq);
}

static void notify_seen(VirtIODevice *vdev, uint16_t vector, uint8_t isr_bits)
{
    thread_seen(&where.notify);
    device_transport_notify(vdev, vector, isr_bits);
}

static void record_thread(void *opaque)
{
    *(pthread_t *)opaque = pthread_self();
}

/*
 * iothread=: the kicks are served, the requests complete (their chains
 * pushed to the used ring) and the interrupts are raised and sent, all on
 * the I/O thread: each point records the thread it runs on. The test
 * never runs the main loop's context meanwhile, so a step left there
 * would never happen and the wait would time out.
 */
static void test_iothread(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .iothread = true, .msix = true });
    VirtIODevice *vdev = ((VirtIOPCIProxy *)t->qdev)->vdev;
    device_lock(t->qdev);       /* the I/O thread reads both under it */
    device_kick_handler = vdev->vqs[0].handler;
    vdev->vqs[0].handler = kick_seen;
    device_transport_notify = vdev->transport_notify;
    vdev->transport_notify = notify_seen;
    device_unlock(t->qdev);
    iothread_run_sync(t->iothread, record_thread, &where.expected);
    g_assert_false(pthread_equal(where.expected, pthread_self()));
    __atomic_store_n(&where.watching, true, __ATOMIC_RELEASE);
    main_loop_frozen = true;

    write_read_back(t, 1024, 32768, 7);
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (msis(1) < 2) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100);
    }

    main_loop_frozen = false;
    __atomic_store_n(&where.watching, false, __ATOMIC_RELEASE);
    g_assert_cmpuint(msis(1), ==, 2);
    const struct { const char *what; const ThreadSeen *seen; } points[] = {
        { "kick", &where.kick }, { "push", &where.push },
        { "notify", &where.notify }, { "msi", &where.msi },
    };
    for (unsigned i = 0; i < G_N_ELEMENTS(points); i++) {
        unsigned calls = __atomic_load_n(&points[i].seen->calls, __ATOMIC_SEQ_CST);
        unsigned elsewhere = __atomic_load_n(&points[i].seen->elsewhere, __ATOMIC_SEQ_CST);
        g_test_message("%s: %u calls, %u not on the I/O thread", points[i].what, calls,
                       elsewhere);
        g_assert_cmpuint(calls, ==, 2);
        g_assert_cmpuint(elsewhere, ==, 0);
    }
    dev_free(t);
}

static void test_multiqueue(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 2, .msix = true });
    g_assert_true(vpd_device_features(&t->d) & F(VIRTIO_BLK_F_MQ));
    g_assert_cmpuint(mem_read(t->d.device + VIRTIO_BLK_CFG_NUM_QUEUES, 2), ==, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_NUMQ, 2), ==, 2);
    fill_pattern(gpa(DATA_GPA), 4096, 3);
    Req a = post(t, 0, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 4096, false);
    Req b = post(t, 1, VIRTIO_BLK_T_OUT, 8, DATA_GPA, 4096, false);
    kick(t, 1);
    kick(t, 0);
    wait_used(t, 0, 1);
    wait_used(t, 1, 1);
    g_assert_cmpuint(*req_status(&a), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(*req_status(&b), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(msis(1), ==, 1);
    g_assert_cmpuint(msis(2), ==, 1);
    uint8_t file[4096];
    read_image(t, 8 * 512, file, sizeof(file));
    g_assert_cmpmem(file, sizeof(file), gpa(DATA_GPA), sizeof(file));
    dev_free(t);
}

static void test_read_only(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .read_only = true });
    g_assert_true(vpd_device_features(&t->d) & F(VIRTIO_BLK_F_RO));
    memset(gpa(DATA_GPA), 0x5a, 4096);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 4096, false, NULL), ==,
                     VIRTIO_BLK_S_IOERR);
    uint8_t file[4096];
    read_image(t, 0, file, sizeof(file));
    g_assert_true(all_zero(file, sizeof(file)));
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, 0, DATA2_GPA, 4096, true, NULL), ==,
                     VIRTIO_BLK_S_OK);
    dev_free(t);
}

/* Register accesses a driver must not make: each ignored, nothing breaks. */
static void test_register_abuse(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true });
    g_assert_cmphex(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_DF, 2), ==, 0);     /* half a field */
    /* past the fields */
    g_assert_cmphex(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_SIZE, 4), ==, 0);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_NUMQ, 7, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_NUMQ, 2), ==, 1);
    /* Enabled queue: its size, addresses and enable stay. */
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, 0, 2);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SIZE, 64, 2);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_DESCLO, 0x1230, 4);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_ENABLE, 0, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_SIZE, 2), ==, QSIZE);
    g_assert_cmphex(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_DESCLO, 4), ==, t->vq[0].desc);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_ENABLE, 2), ==, 1);
    /* A vector the function lacks reads back as NO_VECTOR. */
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 9, 2);
    g_assert_cmphex(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 2), ==, VIRTIO_NO_VECTOR);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 1, 2);
    /* A queue that does not exist: size 0, writes dropped. */
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, 5, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_SIZE, 2), ==, 0);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
    /* Features after FEATURES_OK, a kick of no queue, a kick between queues,
     * config and ISR writes. */
    vpd_set_driver_features(&t->d, 0);
    g_assert_true(virtio_has_feature(((VirtIOPCIProxy *)t->qdev)->vdev, VIRTIO_F_VERSION_1));
    mem_write(t->d.notify + 4 * 9, 9, 2);
    mem_write(t->d.notify + 2, 0, 2);
    mem_write(t->d.device + VIRTIO_BLK_CFG_CAPACITY, 0, 4);
    g_assert_cmpuint(config32(t, VIRTIO_BLK_CFG_CAPACITY), ==, IMAGE_SIZE / 512);
    mem_write(t->d.isr, 3, 1);
    g_assert_cmphex(vpd_status(&t->d) & VIRTIO_CONFIG_S_NEEDS_RESET, ==, 0);
    /* Without bus mastering a kick is not served; with it again, it is. */
    vpd_cfg_write(&t->d, PCI_COMMAND, PCI_COMMAND_MEMORY, 2);
    Req r = post(t, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false);
    kick(t, 0);
    vpd_settle();
    g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, t->vq[0].used_seen);
    vpd_cfg_write(&t->d, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
    kick(t, 0);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    dev_free(t);
}

/* ---- the legacy interface ---- */

#define LEGACY_QSIZE    256     /* a legacy driver takes the size offered */
#define LEGACY_FEATURES ((uint32_t)(F(VIRTIO_F_RING_EVENT_IDX) | F(VIRTIO_F_RING_INDIRECT_DESC) | \
                                    F(VIRTIO_BLK_F_SEG_MAX) | F(VIRTIO_BLK_F_BLK_SIZE) | \
                                    F(VIRTIO_BLK_F_FLUSH) | F(VIRTIO_BLK_F_TOPOLOGY) | \
                                    F(VIRTIO_BLK_F_CONFIG_WCE) | F(VIRTIO_BLK_F_WRITE_ZEROES)))

static uint16_t legacy_port(TestDev *t)
{
    uint32_t bar = vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0, 4);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE_IO, ==, PCI_BASE_ADDRESS_SPACE_IO);
    g_assert_cmphex(bar & ~3u, !=, 0);
    return bar & ~3u;
}

/* The legacy layout of a queue at page-aligned ring_gpa: the used ring at the
 * first 4 KiB boundary after the available ring. */
static void legacy_ring_init(TestVring *tv, uint64_t ring_gpa)
{
    tv_init(tv, ram, RAM_BASE, LEGACY_QSIZE, ring_gpa);
    tv->used = (tv->avail + vring_avail_size(LEGACY_QSIZE) + 4095) & ~4095ULL;
    memset(gpa(tv->used), 0, vring_used_size(LEGACY_QSIZE));
}

/* Linux's virtio_pci_legacy probe and setup_vq order, up to DRIVER_OK. */
static void legacy_driver_init(TestDev *t, bool msix)
{
    uint16_t io = t->legacy = legacy_port(t);
    outb(io + VIRTIO_PCI_LEGACY_STATUS, 0);
    g_assert_cmpuint(inb(io + VIRTIO_PCI_LEGACY_STATUS), ==, 0);
    outb(io + VIRTIO_PCI_LEGACY_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
    outb(io + VIRTIO_PCI_LEGACY_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    uint32_t offered = inl(io + VIRTIO_PCI_LEGACY_HOST_FEATURES);
    outl(io + VIRTIO_PCI_LEGACY_GUEST_FEATURES, offered & (uint32_t)DRIVER_FEATURES);
    if (msix) {
        vpd_msix_table_setup(&t->d, 2);
        outw(io + VIRTIO_PCI_LEGACY_MSIX_CONFIG, 0);
        g_assert_cmpuint(inw(io + VIRTIO_PCI_LEGACY_MSIX_CONFIG), ==, 0);
    }
    outw(io + VIRTIO_PCI_LEGACY_QUEUE_SEL, 0);
    g_assert_cmpuint(inw(io + VIRTIO_PCI_LEGACY_QUEUE_NUM), ==, LEGACY_QSIZE);
    g_assert_cmpuint(inl(io + VIRTIO_PCI_LEGACY_QUEUE_PFN), ==, 0);    /* not active yet */
    legacy_ring_init(&t->vq[0], RING_GPA(0));
    outl(io + VIRTIO_PCI_LEGACY_QUEUE_PFN, RING_GPA(0) >> 12);
    if (msix) {
        outw(io + VIRTIO_PCI_LEGACY_MSIX_QUEUE, 1);
        g_assert_cmpuint(inw(io + VIRTIO_PCI_LEGACY_MSIX_QUEUE), ==, 1);
    }
    outb(io + VIRTIO_PCI_LEGACY_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
                                        VIRTIO_CONFIG_S_DRIVER_OK);
    t->next_slot = 0;
}

/*
 * The default (transitional) device driven through its I/O BAR with
 * INTx: bits 0-31 of the features and never VERSION_1, the rings where
 * the page number puts them, a write and a read that reach the image,
 * each kick an ioeventfd on the port (served on the device's context),
 * the interrupt's cause in the ISR, the configuration after the 20-byte
 * header.
 */
static void test_legacy_driver(void)
{
    TestDev *t = dev_create(&(TestOptions) { .num_queues = 1 });
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)t->qdev;
    legacy_driver_init(t, false);
    uint16_t io = t->legacy;
    g_assert_cmphex(inl(io + VIRTIO_PCI_LEGACY_HOST_FEATURES), ==, LEGACY_FEATURES);
    g_assert_cmphex(inl(io + VIRTIO_PCI_LEGACY_GUEST_FEATURES), ==, LEGACY_FEATURES);
    g_assert_false(virtio_has_feature(p->vdev, VIRTIO_F_VERSION_1));
    g_assert_cmpuint(inl(io + 0x14 + VIRTIO_BLK_CFG_CAPACITY), ==, IMAGE_SIZE / 512);
    g_assert_cmpuint(inl(io + 0x14 + VIRTIO_BLK_CFG_BLK_SIZE), ==, 512);
    VirtQueue *vq = virtio_get_queue(p->vdev, 0);
    g_assert_true(vq->enabled);
    g_assert_cmphex(vq->desc_addr, ==, RING_GPA(0));
    g_assert_cmphex(vq->driver_addr, ==, RING_GPA(0) + 16 * LEGACY_QSIZE);
    g_assert_cmphex(vq->device_addr, ==, RING_GPA(0) + 0x2000);
    g_assert_cmphex(inl(io + VIRTIO_PCI_LEGACY_QUEUE_PFN), ==, RING_GPA(0) >> 12);
    g_assert_true(p->kicks[0].region == &p->legacy_bar);

    fill_pattern(gpa(DATA_GPA), 8192, 21);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, 40, DATA_GPA, 8192, false, NULL), ==,
                     VIRTIO_BLK_S_OK);
    uint8_t file[8192];
    read_image(t, 40 * 512, file, sizeof(file));
    g_assert_cmpmem(file, sizeof(file), gpa(DATA_GPA), sizeof(file));
    g_assert_true(rec.level[t->gsi]);
    g_assert_cmphex(inb(io + VIRTIO_PCI_LEGACY_ISR), ==, VIRTIO_ISR_QUEUE);
    g_assert_false(rec.level[t->gsi]);
    g_assert_cmphex(inb(io + VIRTIO_PCI_LEGACY_ISR), ==, 0);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, 40, DATA2_GPA, 8192, true, NULL), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpmem(gpa(DATA2_GPA), 8192, gpa(DATA_GPA), 8192);

    /* The port write only signals the queue's ioeventfd (dispatch's
     * match on the queue index); the device's context serves it. */
    Req r = post(t, 0, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true);
    kick(t, 0);
    g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, t->vq[0].used_seen);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);
    /* Another queue's index on the port: not this queue's doorbell. */
    outw(io + VIRTIO_PCI_LEGACY_QUEUE_NOTIFY, 3);
    /* PFN 0 on a running queue (it takes a reset), a read-only field,
     * a half field: ignored. */
    outl(io + VIRTIO_PCI_LEGACY_QUEUE_PFN, 0);
    outw(io + VIRTIO_PCI_LEGACY_QUEUE_NUM, 16);
    g_assert_cmphex(inw(io + VIRTIO_PCI_LEGACY_HOST_FEATURES), ==, 0);
    g_assert_true(vq->enabled);
    g_assert_cmpuint(inw(io + VIRTIO_PCI_LEGACY_QUEUE_NUM), ==, LEGACY_QSIZE);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);

    /* Reset by status 0: the queue and its doorbell go. */
    outb(io + VIRTIO_PCI_LEGACY_STATUS, 0);
    g_assert_false(vq->enabled);
    g_assert_null(p->kicks[0].region);
    g_assert_cmpuint(inl(io + VIRTIO_PCI_LEGACY_QUEUE_PFN), ==, 0);
    dev_free(t);
}

/*
 * disable-modern=on: the legacy device alone (no BAR 4, no virtio
 * capabilities; MSI-X stays), driven with MSI-X: the vector registers
 * after the header, the configuration after them.
 */
static void test_disable_modern(void)
{
    const VirtIOPCIConf pci = { .disable_modern = true, .ioeventfd = true, .irqfd = true, .vectors = VIRTIO_PCI_VECTORS_AUTO };
    TestDev *t = dev_create(&(TestOptions) { .num_queues = 1, .msix = true, .pci = &pci });
    find_structures(t);
    g_assert_cmphex(t->vendor_caps, ==, 0);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_VENDOR_ID, 4), ==, 0x10011af4);
    g_assert_cmphex(vpd_cfg_read(&t->d, PCI_BASE_ADDRESS_0 + 4 * VIRTIO_PCI_MODERN_BAR, 4), ==, 0);
    legacy_driver_init(t, true);
    uint16_t io = t->legacy;
    g_assert_cmpuint(inl(io + 0x18 + VIRTIO_BLK_CFG_CAPACITY), ==, IMAGE_SIZE / 512);
    write_read_back(t, 8, 4096, 22);
    g_assert_cmpuint(msis(1), ==, 2);
    g_assert_false(rec.level[t->gsi]);
    /* A vector the function lacks reads back as NO_VECTOR. */
    outw(io + VIRTIO_PCI_LEGACY_MSIX_QUEUE, 7);
    g_assert_cmphex(inw(io + VIRTIO_PCI_LEGACY_MSIX_QUEUE), ==, VIRTIO_NO_VECTOR);
    dev_free(t);
}

/*
 * A driver uses one interface between two resets: the other one's writes
 * are ignored (a reset excepted), and after a reset the device serves
 * whichever a driver picks next, legacy -> modern -> legacy.
 */
static void test_one_interface_at_a_time(void)
{
    TestOptions o = { .num_queues = 1 };
    TestDev *t = dev_create(&o);
    find_structures(t);
    legacy_driver_init(t, false);
    uint16_t io = t->legacy;
    uint8_t legacy_status = inb(io + VIRTIO_PCI_LEGACY_STATUS);
    vpd_set_status(&t->d, legacy_status | VIRTIO_CONFIG_S_FEATURES_OK);
    g_assert_cmphex(vpd_status(&t->d), ==, legacy_status);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, 5, 2);     /* the selector both share */
    g_assert_cmpuint(inw(io + VIRTIO_PCI_LEGACY_QUEUE_SEL), ==, 0);
    mem_write(t->d.device + VIRTIO_BLK_CFG_WRITEBACK, 0, 1);
    g_assert_true(blk_enable_write_cache(t->blk));
    Req r = post(t, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false);
    mem_write(t->d.notify, 0, 2);         /* the modern doorbell */
    vpd_settle();
    g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, t->vq[0].used_seen);
    kick(t, 0);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);

    /* Reset through the modern interface, then a modern driver. */
    vpd_set_status(&t->d, 0);
    t->legacy = 0;
    driver_init(t, &o);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    uint8_t modern_status = vpd_status(&t->d);
    outb(io + VIRTIO_PCI_LEGACY_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
    outl(io + VIRTIO_PCI_LEGACY_GUEST_FEATURES, 0);
    outw(io + VIRTIO_PCI_LEGACY_QUEUE_NOTIFY, 0);
    g_assert_cmphex(vpd_status(&t->d), ==, modern_status);
    g_assert_true(virtio_has_feature(((VirtIOPCIProxy *)t->qdev)->vdev, VIRTIO_F_VERSION_1));

    /* And back: a legacy driver after its own reset. */
    legacy_driver_init(t, false);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    dev_free(t);
}

/* The error virtio-blk-pci's realize gives with the transport's pci
 * switches (it must fail). */
static char *realize_error(const VirtIOPCIConf *pci)
{
    g_autofree char *path = g_build_filename(test_dir, "refused.img", NULL);
    g_assert_true(g_file_set_contents(path, "", 0, NULL));
    DriveConfig cfg = {
        .id = (char *)"vd0", .file = path, .format = DRIVE_FORMAT_RAW,
        .cache = DRIVE_CACHE_WRITEBACK, .aio = DRIVE_AIO_THREADS, .read_only = true,
    };
    Error *err = NULL;
    BlockBackend *blk = blk_new_open(&cfg, &err);
    g_assert_null(err);
    /* One bus for every refusal (buses are never freed): a refused
     * realize leaves nothing on it. */
    static PCIBus *bus;
    if (!bus) {
        bus = pci_bus_new(map_irq);
    }
    VirtIOBlkConf conf = { .blk = blk, .num_queues = 1, .queue_size = 256, .pci = pci };
    g_assert_null(virtio_blk_pci_new(bus, -1, &conf, &err));
    char *msg = g_strdup(err->msg);
    error_free(err);
    blk_unref(blk);
    g_unlink(path);
    return msg;
}

/* disable-legacy=on,disable-modern=on leaves nothing: QEMU's error. */
static void test_no_interface(void)
{
    const VirtIOPCIConf pci = { .disable_legacy = ON_OFF_AUTO_ON, .disable_modern = true,
                                .vectors = VIRTIO_PCI_VECTORS_AUTO };
    g_autofree char *msg = realize_error(&pci);
    g_assert_cmpstr(msg, ==, "device cannot work as neither modern nor legacy mode is "
                    "enabled (set either disable-modern or disable-legacy to off)");
}

/* ---- the fast paths: ioeventfd kicks and vectors on notifiers ---- */

/* A stand-in for KVM's ioeventfd listener: the doorbells it would have
 * assigned, by guest-physical address. */
typedef struct DoorbellListener {
    MemoryListener l;
    GHashTable *by_addr;        /* address -> EventNotifier * */
} DoorbellListener;

static void doorbell_assign(const SectionEventfd *e, void *opaque)
{
    /* Without KVM no any-width ioeventfd: the 2 bytes vp_notify writes. */
    g_assert_cmpuint(e->size, ==, 2);
    g_assert_false(e->match_data);
    g_assert_true(g_hash_table_insert(opaque, GSIZE_TO_POINTER(e->addr), e->notifier));
}

static void doorbell_deassign(const SectionEventfd *e, void *opaque)
{
    g_assert_true(g_hash_table_lookup(opaque, GSIZE_TO_POINTER(e->addr)) == e->notifier);
    g_hash_table_remove(opaque, GSIZE_TO_POINTER(e->addr));
}

static void doorbells_add(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    memory_section_for_each_eventfd(s, doorbell_assign, ((DoorbellListener *)l)->by_addr);
}

static void doorbells_del(MemoryListener *l, AddressSpace *as, const MemoryRegionSection *s)
{
    memory_section_for_each_eventfd(s, doorbell_deassign, ((DoorbellListener *)l)->by_addr);
}

static EventNotifier *doorbell_at(DoorbellListener *d, uint64_t addr)
{
    return g_hash_table_lookup(d->by_addr, GSIZE_TO_POINTER(addr));
}

/*
 * An enabled queue's doorbell is an ioeventfd at its notify address,
 * which follows BAR 4 when it moves and goes at reset. A kick written
 * through dispatch only signals it (as KVM would): the queue is served
 * when the device's context runs; a write of another width reaches the
 * register handler and is served at once. The completion's interrupt
 * leaves through the vector's notifier, sent from the context.
 */
static void test_kick_through_ioeventfd(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true });
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)t->qdev;
    TestVring *tv = &t->vq[0];
    DoorbellListener d = {
        .l = { .region_add = doorbells_add, .region_del = doorbells_del },
        .by_addr = g_hash_table_new(g_direct_hash, g_direct_equal),
    };
    memory_listener_register(&d.l, address_space_memory);
    g_assert_cmpuint(g_hash_table_size(d.by_addr), ==, 1);
    g_assert_true(doorbell_at(&d, t->d.notify) == &p->kicks[0].notifier);

    /* GET_ID is answered inside the pass the kick leaves: no host I/O. */
    Req r = post(t, 0, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true);
    kick(t, 0);
    g_assert_cmpuint(tv_used_idx(tv), ==, tv->used_seen);      /* only signalled */
    g_main_context_iteration(main_loop_context(), TRUE);       /* the kick */
    g_main_context_iteration(main_loop_context(), TRUE);       /* its pass */
    g_assert_cmpuint(tv_used_idx(tv), ==, tv->used_seen + 1);  /* served there */
    g_assert_cmpuint(*req_status(&r), ==, VIRTIO_BLK_S_OK);
    /* The interrupt waits in vector 1's notifier for the context's next turn. */
    g_assert_cmpuint(msis(1), ==, 0);
    vpd_settle();
    g_assert_cmpuint(msis(1), ==, 1);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);

    /* What KVM does: signal the notifier. */
    r = post(t, 0, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true);
    event_notifier_set(&p->kicks[0].notifier);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);

    /* A 4-byte write is not the ioeventfd's: the handler serves it now. */
    r = post(t, 0, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true);
    mem_write(t->d.notify, 0, 4);
    g_assert_cmpuint(tv_used_idx(tv), ==, tv->used_seen + 1);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);

    /* BAR 4 moves: the doorbell goes with it. */
    uint64_t old_notify = t->d.notify;
    uint64_t moved = vpd_bar_address(&t->d, VIRTIO_PCI_MODERN_BAR) + 0x100000;
    vpd_cfg_write(&t->d, PCI_BASE_ADDRESS_0 + 4 * VIRTIO_PCI_MODERN_BAR, (uint32_t)moved, 4);
    find_structures(t);
    g_assert_cmphex(t->d.notify, ==, moved + VIRTIO_PCI_NOTIFY_OFFSET);
    g_assert_cmpuint(g_hash_table_size(d.by_addr), ==, 1);
    g_assert_null(doorbell_at(&d, old_notify));
    g_assert_true(doorbell_at(&d, t->d.notify) == &p->kicks[0].notifier);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true, NULL), ==,
                     VIRTIO_BLK_S_OK);

    /* Reset: no doorbell until the queue is enabled again. */
    vpd_set_status(&t->d, 0);
    g_assert_cmpuint(g_hash_table_size(d.by_addr), ==, 0);
    driver_init(t, &(TestOptions) { .num_queues = 1, .msix = true });
    g_assert_true(doorbell_at(&d, t->d.notify) == &p->kicks[0].notifier);
    memory_listener_unregister(&d.l, address_space_memory);
    g_hash_table_destroy(d.by_addr);
    dev_free(t);
}

/* Every vector the function has is bound to its notifier at realize, the
 * configuration vector and those no queue uses included: a signal is sent
 * from the device's context (here without KVM, by user space). */
static void test_every_vector_on_a_notifier(void)
{
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 2, .iothread = true, .msix = true });
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)t->qdev;
    g_assert_cmpuint(p->nvectors, ==, 3);
    for (unsigned v = 0; v < p->nvectors; v++) {
        event_notifier_set(&p->vector_notifiers[v]);
    }
    gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    while (msis(0) + msis(1) + msis(2) < 3) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
    g_assert_cmpuint(msis(0), ==, 1);
    g_assert_cmpuint(msis(1), ==, 1);
    g_assert_cmpuint(msis(2), ==, 1);
    /* Masked, a signal waits in the PBA and is sent on unmask. */
    uint64_t entry1 = t->d.msix_table + MSIX_TABLE_ENTRY_SIZE;
    mem_write(entry1 + 12, 1, 4);
    event_notifier_set(&p->vector_notifiers[1]);
    uint64_t pba = t->d.msix_table + VIRTIO_PCI_MSIX_PBA_OFFSET;
    g_assert_cmphex(mem_read(pba, 4), ==, 0x2);
    g_assert_cmpuint(msis(1), ==, 1);
    mem_write(entry1 + 12, 0, 4);
    g_assert_cmphex(mem_read(pba, 4), ==, 0);
    g_assert_cmpuint(msis(1), ==, 2);
    dev_free(t);
}

/*
 * vhost's hand-over (virtio_pci_redirect_kicks): while a queue is
 * redirected, its kicks (the ioeventfd's, and a write of another width that
 * reaches the notify handler) signal the given notifier and nothing is
 * served in user space; given back, the queue's own notifier is signalled
 * once and the chain that waits is served. The call notifier vhost gets is
 * the queue's MSI-X vector's, and none without MSI-X.
 */
static void test_kicks_redirected(void)
{
    TestDev *t = dev_new(&(TestOptions) { .msix = true });
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)t->qdev;
    g_assert_true(virtio_pci_queue_call_notifier(p, 0) == &p->vector_notifiers[1]);
    g_assert_null(virtio_pci_queue_call_notifier(p, 1));
    DoorbellListener d = {
        .l = { .region_add = doorbells_add, .region_del = doorbells_del },
        .by_addr = g_hash_table_new(g_direct_hash, g_direct_equal),
    };
    memory_listener_register(&d.l, address_space_memory);
    EventNotifier to;
    g_assert_true(event_notifier_init(&to, NULL));
    device_lock(t->qdev);
    virtio_pci_redirect_kicks(p, 0, &to);
    device_unlock(t->qdev);
    /* What KVM is told, and told again when it replays after re-creating
     * the VM: the doorbell signals the new notifier. */
    g_assert_true(doorbell_at(&d, t->d.notify) == &to);

    Req r = post(t, 0, VIRTIO_BLK_T_IN, 0, DATA_GPA, 4096, true);
    kick(t, 0);
    vpd_settle();
    g_assert_cmpuint(event_notifier_take(&to), ==, 1);
    mem_write(t->d.notify, 0, 4);
    vpd_settle();
    g_assert_cmpuint(event_notifier_take(&to), ==, 1);
    g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, t->vq[0].used_seen);

    device_lock(t->qdev);
    virtio_pci_redirect_kicks(p, 0, NULL);
    device_unlock(t->qdev);
    g_assert_true(doorbell_at(&d, t->d.notify) == &p->kicks[0].notifier);
    memory_listener_unregister(&d.l, address_space_memory);
    g_hash_table_destroy(d.by_addr);
    g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);
    g_assert_cmpuint(*req_status(&r), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_IN, 0, DATA_GPA, 4096, true, NULL), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpuint(event_notifier_take(&to), ==, 0);
    event_notifier_cleanup(&to);
    dev_free(t);

    t = dev_new(&(TestOptions) { .msix = false });
    g_assert_null(virtio_pci_queue_call_notifier((VirtIOPCIProxy *)t->qdev, 0));
    dev_free(t);
}

/* ioeventfd=off: no doorbell is declared; each kick, modern or legacy,
 * is served at once by the thread that wrote it (the vCPU's). */
static void test_ioeventfd_off(void)
{
    const VirtIOPCIConf pci = { .ioeventfd = false, .irqfd = true, .vectors = VIRTIO_PCI_VECTORS_AUTO };
    TestOptions o = { .num_queues = 1, .msix = true, .pci = &pci };
    TestDev *t = dev_new(&o);
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)t->qdev;
    g_assert_null(p->kicks[0].region);
    for (unsigned legacy = 0; legacy < 2; legacy++) {
        Req r = post(t, 0, VIRTIO_BLK_T_GET_ID, 0, DATA2_GPA, 512, true);
        kick(t, 0);
        g_assert_cmpuint(tv_used_idx(&t->vq[0]), ==, t->vq[0].used_seen + 1);
        g_assert_cmpuint(wait_used(t, 0, 1).id, ==, r.head);
        g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 4096, false, NULL), ==,
                         VIRTIO_BLK_S_OK);
        legacy_driver_init(t, true);
        g_assert_null(p->kicks[0].region);
    }
    dev_free(t);
}

/* x-irqfd=off: no vector is bound to a notifier; the completion's thread
 * sends the message itself (KVM_SIGNAL_MSI), a masked one is left in the
 * PBA and sent on unmask. */
static void test_irqfd_off(void)
{
    const VirtIOPCIConf pci = { .ioeventfd = true, .irqfd = false, .vectors = VIRTIO_PCI_VECTORS_AUTO };
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 1, .msix = true, .pci = &pci });
    VirtIOPCIProxy *p = (VirtIOPCIProxy *)t->qdev;
    g_assert_null(p->vector_notifiers);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_OUT, 0, DATA_GPA, 4096, false, NULL), ==,
                     VIRTIO_BLK_S_OK);
    g_assert_cmpuint(msis(1), ==, 1);
    uint64_t entry1 = t->d.msix_table + MSIX_TABLE_ENTRY_SIZE;
    mem_write(entry1 + 12, 1, 4);
    g_assert_cmpuint(run(t, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, NULL), ==, VIRTIO_BLK_S_OK);
    g_assert_cmpuint(msis(1), ==, 1);
    uint64_t pba = t->d.msix_table + VIRTIO_PCI_MSIX_PBA_OFFSET;
    g_assert_cmphex(mem_read(pba, 4), ==, 0x2);
    mem_write(entry1 + 12, 0, 4);
    g_assert_cmpuint(msis(1), ==, 2);
    dev_free(t);
}

/* vectors=N sizes the MSI-X table (QEMU's property): a queue may take a
 * vector below N only; 0 and more than the BAR holds are refused. */
static void test_vectors(void)
{
    const VirtIOPCIConf pci = { .disable_legacy = ON_OFF_AUTO_AUTO, .ioeventfd = true,
                                .irqfd = true, .vectors = 2 };
    TestDev *t = dev_new(&(TestOptions) { .num_queues = 2, .pci = &pci });
    uint16_t control = vpd_cfg_read(&t->d, t->d.msix_cap + 2, 2);
    g_assert_cmpuint((control & 0x7ff) + 1, ==, 2);     /* table size N - 1 */
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_SELECT, 1, 2);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 1, 2);
    g_assert_cmpuint(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 2), ==, 1);
    vpd_common_write(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 2, 2);
    g_assert_cmphex(vpd_common_read(&t->d, VIRTIO_PCI_COMMON_Q_MSIX, 2), ==, VIRTIO_NO_VECTOR);
    dev_free(t);

    for (unsigned i = 0; i < 2; i++) {
        const VirtIOPCIConf bad = { .disable_legacy = ON_OFF_AUTO_AUTO, .ioeventfd = true,
                                    .irqfd = true, .vectors = i ? VIRTIO_PCI_MAX_VECTORS + 1 : 0 };
        g_autofree char *msg = realize_error(&bad);
        g_assert_nonnull(strstr(msg, "vectors="));
    }
}

/* ---- -device virtio-blk-pci through the registry ---- */

static DriveInfo registry_drive;

static void *find_registry_drive(const char *id)
{
    return strcmp(id, "vd0") == 0 ? &registry_drive : NULL;
}

typedef struct RealizedQueues {
    unsigned queues, vectors;
    bool mq;
} RealizedQueues;

/* -device virtio-blk-pci,drive=vd0[,num-queues=N] on a machine that
 * starts boot_cpus vCPUs, as the machine realizes it: what the driver
 * then finds (queues, MSI-X vectors, the MQ feature). */
static RealizedQueues realize_with_cpus(unsigned boot_cpus, const char *num_queues)
{
    Error *err = NULL;
    PCIBus *bus = pci_bus_new(map_irq);
    g_autofree char *path = g_build_filename(test_dir, "registry.img", NULL);
    g_assert_true(g_file_set_contents(path, "", 0, NULL));
    g_assert_cmpint(truncate(path, IMAGE_SIZE), ==, 0);
    DriveConfig cfg = {
        .id = (char *)"vd0", .file = path, .interface = DRIVE_IF_NONE,
        .format = DRIVE_FORMAT_RAW, .cache = DRIVE_CACHE_WRITEBACK, .aio = DRIVE_AIO_THREADS,
        .origin = (char *)"-drive if=none,id=vd0",
    };
    registry_drive = (DriveInfo) { .cfg = &cfg, .blk = blk_new_open(&cfg, &err) };
    g_assert_null(err);
    device_backend_set_finder(DEVICE_PROP_DRIVE, find_registry_drive);
    DeviceConfig *dev = device_config_new(&virtio_blk_pci_type, "-device virtio-blk-pci");
    g_assert_true(device_config_set(dev, "drive", "vd0", &err));
    if (num_queues) {
        g_assert_true(device_config_set(dev, "num-queues", num_queues, &err));
    }
    DeviceBuses buses = { .pci = bus, .boot_cpus = boot_cpus };
    QEMUDevice *qdev = device_config_realize(dev, &buses, &err);
    g_assert_null(err);
    VirtioPCIDriver d;
    vpd_enable(&d, bus, ((PCIDevice *)qdev)->devfn, PCI_COMMAND_MEMORY);
    vpd_find_structures(&d);
    RealizedQueues got = {
        .queues = vpd_common_read(&d, VIRTIO_PCI_COMMON_NUMQ, 2),
        .vectors = (vpd_cfg_read(&d, d.msix_cap + 2, 2) & 0x7ff) + 1,
        .mq = vpd_device_features(&d) & F(VIRTIO_BLK_F_MQ),
    };
    vpd_cfg_write(&d, PCI_COMMAND, 0, 2);
    qdev->drain(qdev);
    device_config_free(dev);
    blk_unref(registry_drive.blk);
    g_unlink(path);
    return got;
}

/* As QEMU 7.2: num-queues defaults to the vCPUs the machine starts with,
 * each queue with its own vector plus one for configuration changes;
 * here at most 64. An explicit num-queues wins. */
static void test_default_queue_per_vcpu(void)
{
    static const struct {
        unsigned boot_cpus;
        const char *num_queues;
        RealizedQueues expect;
    } cases[] = {
        { 1, NULL, { 1, 2, false } },
        { 4, NULL, { 4, 5, true } },
        { 0, NULL, { 1, 2, false } },       /* a machine that does not say */
        { 200, NULL, { VIRTIO_BLK_MAX_QUEUES, VIRTIO_BLK_MAX_QUEUES + 1, true } },
        { 4, "2", { 2, 3, true } },
        { 4, "1", { 1, 2, false } },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        RealizedQueues got = realize_with_cpus(cases[i].boot_cpus, cases[i].num_queues);
        g_assert_cmpuint(got.queues, ==, cases[i].expect.queues);
        g_assert_cmpuint(got.vectors, ==, cases[i].expect.vectors);
        g_assert_cmpint(got.mq, ==, cases[i].expect.mq);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    static const IrqBackend backend = { .set_level = rec_set_level, .send_msi = rec_send_msi };
    ram = vpd_machine_init(&backend, RAM_BASE, RAM_SIZE);
    test_dir = g_dir_make_tmp("test-virtio-blk-XXXXXX", NULL);
    g_assert_nonnull(test_dir);

    g_test_add_func("/virtio-blk/pci-identity", test_pci_identity);
    g_test_add_func("/virtio-blk/disable-legacy", test_disable_legacy);
    g_test_add_func("/virtio-blk/legacy-driver", test_legacy_driver);
    g_test_add_func("/virtio-blk/disable-modern", test_disable_modern);
    g_test_add_func("/virtio-blk/one-interface-at-a-time", test_one_interface_at_a_time);
    g_test_add_func("/virtio-blk/no-interface", test_no_interface);
    g_test_add_func("/virtio-blk/features-and-config", test_features_and_config);
    g_test_add_func("/virtio-blk/read-write", test_read_write);
    g_test_add_func("/virtio-blk/batch-and-event-idx", test_batch_and_event_idx);
    g_test_add_func("/virtio-blk/kick-defers-pass", test_kick_defers_pass);
    g_test_add_func("/virtio-blk/intx", test_intx);
    g_test_add_func("/virtio-blk/needs-reset", test_needs_reset);
    g_test_add_func("/virtio-blk/reset-waits-for-in-flight", test_reset_waits_for_in_flight);
    g_test_add_func("/virtio-blk/iothread", test_iothread);
    g_test_add_func("/virtio-blk/multiqueue", test_multiqueue);
    g_test_add_func("/virtio-blk/read-only", test_read_only);
    g_test_add_func("/virtio-blk/register-abuse", test_register_abuse);
    g_test_add_func("/virtio-blk/kick-through-ioeventfd", test_kick_through_ioeventfd);
    g_test_add_func("/virtio-blk/every-vector-on-a-notifier", test_every_vector_on_a_notifier);
    g_test_add_func("/virtio-blk/kicks-redirected", test_kicks_redirected);
    g_test_add_func("/virtio-blk/ioeventfd-off", test_ioeventfd_off);
    g_test_add_func("/virtio-blk/irqfd-off", test_irqfd_off);
    g_test_add_func("/virtio-blk/vectors", test_vectors);
    g_test_add_func("/virtio-blk/default-queue-per-vcpu", test_default_queue_per_vcpu);
    g_test_add_func("/virtio-blk/werror-stop", test_werror_stop);
    int ret = g_test_run();
    g_rmdir(test_dir);
    return ret;
}
