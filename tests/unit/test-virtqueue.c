/*
 * The split virtqueue parser against a RAM region of the test's own:
 * chains of every shape a driver makes, the used ring and both directions
 * of event-index suppression, and every hostile case the header lists
 * (each refused with its reason, never a crash or an endless walk), then
 * random garbage rings that must always end.
 */
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/virtio/virtqueue.h"
#include "qemu/log.h"
#include "vring-driver.h"

#define RAM_BASE        0x100000ULL
#define RAM_SIZE        (1 << 20)
#define RING_GPA        (RAM_BASE + 0x1000)
#define TABLE_GPA       (RAM_BASE + 0x8000)     /* indirect tables */
#define DATA_GPA        (RAM_BASE + 0x10000)
#define NOT_RAM         0x80000000ULL
#define QSIZE           8

static uint8_t *ram;

static void test_ram_setup(void)
{
    static MemoryRegion region;
    ram = g_malloc0(RAM_SIZE);
    memory_region_init_ram(&region, "test-ram", RAM_SIZE, ram);
    address_space_map(address_space_memory, &region, RAM_BASE, 0);
}

static void *host(uint64_t gpa)
{
    return ram + (gpa - RAM_BASE);
}

/* A fresh queue of QSIZE entries, mapped with the given features. */
static void queue_new(TestVring *tv, VRing *r, bool event_idx, bool indirect)
{
    memset(ram, 0, RAM_SIZE);
    tv_init(tv, ram, RAM_BASE, QSIZE, RING_GPA);
    Error *err = NULL;
    g_assert_true(vring_map(r, QSIZE, tv->desc, tv->avail, tv->used, event_idx, indirect,
                            &err));
    g_assert_null(err);
}

/* Pop expecting a refusal whose message contains what. */
static void pop_refused(VRing *r, const char *what)
{
    Error *err = NULL;
    g_assert_null(vring_pop(r, &err));
    g_assert_nonnull(err);
    if (!strstr(err->msg, what)) {
        g_error("expected '%s' in '%s'", what, err->msg);
    }
    error_free(err);
}

static VirtQueueElement *pop_ok(VRing *r)
{
    Error *err = NULL;
    VirtQueueElement *elem = vring_pop(r, &err);
    g_assert_null(err);
    g_assert_nonnull(elem);
    return elem;
}

/* ---- good chains ---- */

static void test_direct_chain(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, false);
    Error *err = NULL;
    g_assert_null(vring_pop(&r, &err));     /* empty */
    g_assert_null(err);
    g_assert_false(vring_has_avail(&r));

    /* header (16, readable), data (two readable pieces), status (writable). */
    tv_desc(&tv, 5, DATA_GPA, 16, VRING_DESC_F_NEXT, 2);
    tv_desc(&tv, 2, DATA_GPA + 0x100, 512, VRING_DESC_F_NEXT, 7);
    tv_desc(&tv, 7, DATA_GPA + 0x1000, 1024, VRING_DESC_F_NEXT, 0);
    tv_desc(&tv, 0, DATA_GPA + 0x2000, 1, VRING_DESC_F_WRITE, 0);
    tv_publish(&tv, 5);
    g_assert_true(vring_has_avail(&r));

    VirtQueueElement *e = pop_ok(&r);
    g_assert_cmpuint(e->head, ==, 5);
    g_assert_cmpuint(e->out_num, ==, 3);
    g_assert_cmpuint(e->in_num, ==, 1);
    g_assert_cmpuint(e->out_len, ==, 16 + 512 + 1024);
    g_assert_cmpuint(e->in_len, ==, 1);
    g_assert_true(e->out_sg[0].iov_base == host(DATA_GPA));
    g_assert_true(e->out_sg[1].iov_base == host(DATA_GPA + 0x100));
    g_assert_cmpuint(e->out_sg[2].iov_len, ==, 1024);
    g_assert_true(e->in_sg[0].iov_base == host(DATA_GPA + 0x2000));
    g_assert_cmpuint(r.inuse, ==, 1);
    g_assert_null(vring_pop(&r, &err));
    g_assert_null(err);

    vring_push(&r, e, 1);
    g_free(e);
    VRingUsedElem used = { 0 };
    g_assert_true(tv_take_used(&tv, &used));
    g_assert_cmpuint(used.id, ==, 5);
    g_assert_cmpuint(used.len, ==, 1);
    g_assert_false(tv_take_used(&tv, &used));
    g_assert_cmpuint(r.inuse, ==, 0);
    vring_unmap(&r);
}

/* Chains pushed as one batch: every used element written, the used index
 * moved once by all of them, across the ring's end. */
static void test_push_batch(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, false);
    VirtQueueElement *e[QSIZE];
    uint32_t lens[QSIZE];
    for (unsigned round = 0; round < 3; round++) {
        unsigned n = QSIZE - 1;
        for (unsigned i = 0; i < n; i++) {
            tv_desc(&tv, i, DATA_GPA + 64 * i, 64, VRING_DESC_F_WRITE, 0);
            tv_publish(&tv, i);
            e[i] = pop_ok(&r);
            lens[i] = i + round;
        }
        uint16_t before = tv_used_idx(&tv);
        vring_push_batch(&r, e, lens, n);
        g_assert_cmpuint((uint16_t)(tv_used_idx(&tv) - before), ==, n);
        g_assert_cmpuint(r.inuse, ==, 0);
        for (unsigned i = 0; i < n; i++) {
            VRingUsedElem used = { 0 };
            g_assert_true(tv_take_used(&tv, &used));
            g_assert_cmpuint(used.id, ==, i);
            g_assert_cmpuint(used.len, ==, i + round);
            g_free(e[i]);
        }
    }
    vring_unmap(&r);
}

/* Indices wrap at 65536 while ring slots wrap at the queue size. */
static void test_index_wraparound(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, false);
    tv_desc(&tv, 3, DATA_GPA, 64, VRING_DESC_F_WRITE, 0);
    for (unsigned round = 0; round < 70000; round++) {
        tv_publish(&tv, 3);
        VirtQueueElement *e = pop_ok(&r);
        g_assert_cmpuint(e->head, ==, 3);
        vring_push(&r, e, round & 63);
        g_free(e);
        VRingUsedElem used = { 0 };
        g_assert_true(tv_take_used(&tv, &used));
        g_assert_cmpuint(used.len, ==, round & 63);
    }
    g_assert_cmpuint(r.last_avail_idx, ==, (uint16_t)70000);
    vring_unmap(&r);
}

static void test_indirect_chain(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, true);
    VRingDesc *table = host(TABLE_GPA);
    tv_write_desc(table, 0, DATA_GPA, 16, VRING_DESC_F_NEXT, 2);
    tv_write_desc(table, 2, DATA_GPA + 0x100, 4096, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
    tv_write_desc(table, 1, DATA_GPA + 0x2000, 1, VRING_DESC_F_WRITE, 0);
    tv_desc(&tv, 4, TABLE_GPA, 3 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(&tv, 4);
    VirtQueueElement *e = pop_ok(&r);
    g_assert_cmpuint(e->head, ==, 4);
    g_assert_cmpuint(e->out_num, ==, 1);
    g_assert_cmpuint(e->in_num, ==, 2);
    g_assert_cmpuint(e->in_len, ==, 4097);
    g_assert_true(e->in_sg[1].iov_base == host(DATA_GPA + 0x2000));
    g_free(e);

    /* Direct descriptors followed by one indirect one, as the spec allows. */
    tv_desc(&tv, 1, DATA_GPA + 0x3000, 16, VRING_DESC_F_NEXT, 6);
    tv_desc(&tv, 6, TABLE_GPA, 3 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(&tv, 1);
    e = pop_ok(&r);
    g_assert_cmpuint(e->out_num, ==, 2);
    g_assert_cmpuint(e->in_num, ==, 2);
    g_assert_true(e->out_sg[0].iov_base == host(DATA_GPA + 0x3000));
    g_free(e);
    vring_unmap(&r);
}

/* Zero-length descriptors take no iovec; adjacent pieces share one. */
static void test_empty_and_adjacent_pieces(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, false);
    tv_desc(&tv, 0, NOT_RAM, 0, VRING_DESC_F_NEXT, 1);       /* empty: not looked at */
    tv_desc(&tv, 1, DATA_GPA, 100, VRING_DESC_F_NEXT, 2);
    tv_desc(&tv, 2, DATA_GPA + 100, 100, 0, 0);
    tv_publish(&tv, 0);
    VirtQueueElement *e = pop_ok(&r);
    g_assert_cmpuint(e->out_num, ==, 1);
    g_assert_cmpuint(e->out_len, ==, 200);
    g_assert_cmpuint(e->in_num, ==, 0);
    g_free(e);
    vring_unmap(&r);
}

/* ---- notifications, both ways ---- */

static void push_one(TestVring *tv, VRing *r)
{
    tv_desc(tv, 0, DATA_GPA, 8, VRING_DESC_F_WRITE, 0);
    tv_publish(tv, 0);
    VirtQueueElement *e = pop_ok(r);
    vring_push(r, e, 8);
    g_free(e);
}

static void test_notify_flags(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, false);
    push_one(&tv, &r);
    g_assert_true(vring_should_notify(&r));
    tv_set_avail_flags(&tv, VRING_AVAIL_F_NO_INTERRUPT);
    push_one(&tv, &r);
    g_assert_false(vring_should_notify(&r));

    vring_set_notification(&r, false);
    g_assert_cmphex(tv_used_flags(&tv), ==, VRING_USED_F_NO_NOTIFY);
    vring_set_notification(&r, true);
    g_assert_cmphex(tv_used_flags(&tv), ==, 0);
    vring_unmap(&r);
}

static void test_event_idx(void)
{
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, true, false);
    /* The flags mean nothing with EVENT_IDX. */
    tv_set_avail_flags(&tv, VRING_AVAIL_F_NO_INTERRUPT);
    push_one(&tv, &r);                          /* used idx 1 */
    g_assert_true(vring_should_notify(&r));     /* the first decision always sends */

    tv_set_used_event(&tv, 3);                  /* "interrupt me when used passes 3" */
    push_one(&tv, &r);                          /* 2 */
    g_assert_false(vring_should_notify(&r));
    push_one(&tv, &r);                          /* 3 */
    g_assert_false(vring_should_notify(&r));
    push_one(&tv, &r);                          /* 4: passed 3 */
    g_assert_true(vring_should_notify(&r));
    /* Two pushes in one batch that cross the event together. */
    tv_set_used_event(&tv, 4);
    push_one(&tv, &r);                          /* 5 */
    push_one(&tv, &r);                          /* 6 */
    g_assert_true(vring_should_notify(&r));
    push_one(&tv, &r);                          /* 7: event 4 already passed */
    g_assert_false(vring_should_notify(&r));

    /* Kicks: avail_event follows the available index when enabled, and
     * stays behind while the device polls. */
    tv_desc(&tv, 1, DATA_GPA, 8, VRING_DESC_F_WRITE, 0);
    tv_publish(&tv, 1);
    tv_publish(&tv, 1);
    vring_set_notification(&r, false);
    g_assert_cmpuint(tv_avail_event(&tv), !=, tv.avail_idx);
    vring_set_notification(&r, true);
    g_assert_cmpuint(tv_avail_event(&tv), ==, tv.avail_idx);
    g_assert_cmphex(tv_used_flags(&tv), ==, 0);
    vring_unmap(&r);
}

/* ---- hostile drivers ---- */

static void test_map_refusals(void)
{
    VRing r = { 0 };
    Error *err = NULL;
    g_assert_false(vring_map(&r, 6, RING_GPA, RING_GPA + 0x100, RING_GPA + 0x200, false, false,
                             &err));
    g_assert_nonnull(strstr(err->msg, "power of two"));
    g_clear_pointer(&err, error_free);
    g_assert_false(vring_map(&r, 2048, RING_GPA, RING_GPA + 0x8000, RING_GPA + 0x9000, false,
                             false, &err));
    g_clear_pointer(&err, error_free);
    g_assert_false(vring_map(&r, 8, RING_GPA + 8, RING_GPA + 0x100, RING_GPA + 0x200, false,
                             false, &err));
    g_assert_nonnull(strstr(err->msg, "aligned"));
    g_clear_pointer(&err, error_free);
    g_assert_false(vring_map(&r, 8, RING_GPA, RING_GPA + 0x101, RING_GPA + 0x200, false,
                             false, &err));
    g_clear_pointer(&err, error_free);
    g_assert_false(vring_map(&r, 8, RING_GPA, RING_GPA + 0x100, RING_GPA + 0x202, false,
                             false, &err));
    g_clear_pointer(&err, error_free);
    g_assert_false(vring_map(&r, 8, NOT_RAM, RING_GPA + 0x100, RING_GPA + 0x200, false, false,
                             &err));
    g_assert_nonnull(strstr(err->msg, "not in guest RAM"));
    g_clear_pointer(&err, error_free);
    /* A used ring that runs off the end of RAM. */
    g_assert_false(vring_map(&r, 8, RING_GPA, RING_GPA + 0x100, RAM_BASE + RAM_SIZE - 8, false,
                             false, &err));
    g_clear_pointer(&err, error_free);
    g_assert_false(vring_is_mapped(&r));
}

typedef void (*HostileSetup)(TestVring *tv);

typedef struct HostileCase {
    const char *name;
    HostileSetup setup;
    bool indirect;              /* INDIRECT_DESC negotiated */
    const char *reason;         /* in the error */
} HostileCase;

static void hostile_loop(TestVring *tv)
{
    tv_desc(tv, 0, DATA_GPA, 8, VRING_DESC_F_NEXT, 1);
    tv_desc(tv, 1, DATA_GPA, 8, VRING_DESC_F_NEXT, 0);
    tv_publish(tv, 0);
}

static void hostile_self_loop(TestVring *tv)
{
    tv_desc(tv, 3, DATA_GPA, 8, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 3);
    tv_publish(tv, 3);
}

static void hostile_head_past_table(TestVring *tv)
{
    tv_publish(tv, QSIZE);
}

static void hostile_next_past_table(TestVring *tv)
{
    tv_desc(tv, 0, DATA_GPA, 8, VRING_DESC_F_NEXT, QSIZE + 100);
    tv_publish(tv, 0);
}

static void hostile_avail_jump(TestVring *tv)
{
    tv_set_avail_idx(tv, QSIZE + 1);
}

static void hostile_avail_backwards(TestVring *tv)
{
    tv_set_avail_idx(tv, 0xffff);
}

static void hostile_indirect_not_negotiated(TestVring *tv)
{
    tv_write_desc(host(TABLE_GPA), 0, DATA_GPA, 8, 0, 0);
    tv_desc(tv, 0, TABLE_GPA, sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_in_indirect(TestVring *tv)
{
    VRingDesc *table = host(TABLE_GPA);
    tv_write_desc(table, 0, TABLE_GPA, 2 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_desc(tv, 0, TABLE_GPA, 2 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_with_next(TestVring *tv)
{
    tv_write_desc(host(TABLE_GPA), 0, DATA_GPA, 8, 0, 0);
    tv_desc(tv, 0, TABLE_GPA, sizeof(VRingDesc), VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
    tv_desc(tv, 1, DATA_GPA, 8, 0, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_bad_length(TestVring *tv)
{
    tv_desc(tv, 0, TABLE_GPA, 24, VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_empty(TestVring *tv)
{
    tv_desc(tv, 0, TABLE_GPA, 0, VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_huge(TestVring *tv)
{
    tv_desc(tv, 0, TABLE_GPA, 0xfffffff0u, VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_outside_ram(TestVring *tv)
{
    tv_desc(tv, 0, NOT_RAM, 4 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_loop(TestVring *tv)
{
    VRingDesc *table = host(TABLE_GPA);
    tv_write_desc(table, 0, DATA_GPA, 8, VRING_DESC_F_NEXT, 1);
    tv_write_desc(table, 1, DATA_GPA, 8, VRING_DESC_F_NEXT, 0);
    tv_desc(tv, 0, TABLE_GPA, 2 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_indirect_next_past_table(TestVring *tv)
{
    tv_write_desc(host(TABLE_GPA), 0, DATA_GPA, 8, VRING_DESC_F_NEXT, 2);
    tv_desc(tv, 0, TABLE_GPA, 2 * sizeof(VRingDesc), VRING_DESC_F_INDIRECT, 0);
    tv_publish(tv, 0);
}

static void hostile_buffer_outside_ram(TestVring *tv)
{
    tv_desc(tv, 0, DATA_GPA, 16, VRING_DESC_F_NEXT, 1);
    tv_desc(tv, 1, NOT_RAM, 512, VRING_DESC_F_WRITE, 0);
    tv_publish(tv, 0);
}

static void hostile_buffer_across_ram_end(TestVring *tv)
{
    tv_desc(tv, 0, RAM_BASE + RAM_SIZE - 16, 32, 0, 0);
    tv_publish(tv, 0);
}

static void hostile_length_wraps(TestVring *tv)
{
    tv_desc(tv, 0, UINT64_MAX - 0x10, 0x1000, 0, 0);
    tv_publish(tv, 0);
}

static void hostile_readable_after_writable(TestVring *tv)
{
    tv_desc(tv, 0, DATA_GPA, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
    tv_desc(tv, 1, DATA_GPA, 8, 0, 0);
    tv_publish(tv, 0);
}

static const HostileCase hostile_cases[] = {
    { "loop", hostile_loop, false, "loops" },
    { "self-loop", hostile_self_loop, false, "loops" },
    { "head-past-table", hostile_head_past_table, false, "past the queue" },
    { "next-past-table", hostile_next_past_table, false, "past the table" },
    { "avail-jump", hostile_avail_jump, false, "ahead of the device" },
    { "avail-backwards", hostile_avail_backwards, false, "ahead of the device" },
    { "indirect-not-negotiated", hostile_indirect_not_negotiated, false, "not negotiated" },
    { "indirect-in-indirect", hostile_indirect_in_indirect, true, "inside an indirect" },
    { "indirect-with-next", hostile_indirect_with_next, true, "NEXT" },
    { "indirect-bad-length", hostile_indirect_bad_length, true, "indirect table of 24" },
    { "indirect-empty", hostile_indirect_empty, true, "indirect table of 0" },
    { "indirect-huge", hostile_indirect_huge, true, "at most" },
    { "indirect-outside-ram", hostile_indirect_outside_ram, true, "not in guest RAM" },
    { "indirect-loop", hostile_indirect_loop, true, "loops" },
    { "indirect-next-past-table", hostile_indirect_next_past_table, true, "past the table" },
    { "buffer-outside-ram", hostile_buffer_outside_ram, false, "outside guest RAM" },
    { "buffer-across-ram-end", hostile_buffer_across_ram_end, false, "outside guest RAM" },
    { "length-wraps", hostile_length_wraps, false, "outside guest RAM" },
    { "readable-after-writable", hostile_readable_after_writable, false, "after a device-writable" },
};

static void test_hostile(gconstpointer data)
{
    const HostileCase *hc = data;
    TestVring tv;
    VRing r = { 0 };
    queue_new(&tv, &r, false, hc->indirect);
    hc->setup(&tv);
    pop_refused(&r, hc->reason);
    /* Nothing was taken or returned. */
    g_assert_cmpuint(r.inuse, ==, 0);
    g_assert_cmpuint(tv_used_idx(&tv), ==, 0);
    vring_unmap(&r);
}

/* Random rings: whatever the bytes, pop ends (with an element, empty, or
 * an error) and a queue of N entries never yields more than N chains
 * per available index. */
static void test_random_garbage(void)
{
    GRand *rand = g_rand_new_with_seed(0x5eed);
    for (unsigned round = 0; round < 2000; round++) {
        TestVring tv;
        VRing r = { 0 };
        queue_new(&tv, &r, round & 1, round & 2);
        uint32_t *words = host(RING_GPA);
        size_t nwords = (tv.used + vring_used_size(QSIZE) - RING_GPA) / 4;
        for (size_t i = 0; i < nwords; i++) {
            words[i] = g_rand_int(rand);
        }
        /* Descriptors mostly aimed at RAM, so that chains get walked. */
        VRingDesc *desc = host(tv.desc);
        uint32_t *table = host(TABLE_GPA);
        for (unsigned i = 0; i < 64; i++) {
            table[i] = g_rand_int(rand);
        }
        for (unsigned i = 0; i < QSIZE; i++) {
            if (g_rand_boolean(rand)) {
                desc[i].addr = RAM_BASE + g_rand_int_range(rand, 0, RAM_SIZE);
                desc[i].len &= 0xfff;
                desc[i].next %= QSIZE + 1;
            }
            if (desc[i].flags & VRING_DESC_F_INDIRECT && g_rand_boolean(rand)) {
                desc[i].addr = TABLE_GPA;
                desc[i].len = 16 * g_rand_int_range(rand, 1, 16);
            }
        }
        unsigned popped = 0;
        for (;;) {
            Error *err = NULL;
            VirtQueueElement *e = vring_pop(&r, &err);
            if (!e) {
                error_free(err);
                break;
            }
            g_assert_cmpuint(++popped, <=, QSIZE);
            g_assert_cmpuint(e->out_num + e->in_num, <=, 2 * VIRTQUEUE_MAX_IOV);
            vring_push(&r, e, 0);
            g_free(e);
        }
        vring_unmap(&r);
    }
    g_rand_free(rand);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    test_ram_setup();
    g_test_add_func("/virtqueue/direct-chain", test_direct_chain);
    g_test_add_func("/virtqueue/index-wraparound", test_index_wraparound);
    g_test_add_func("/virtqueue/push-batch", test_push_batch);
    g_test_add_func("/virtqueue/indirect-chain", test_indirect_chain);
    g_test_add_func("/virtqueue/empty-and-adjacent-pieces", test_empty_and_adjacent_pieces);
    g_test_add_func("/virtqueue/notify-flags", test_notify_flags);
    g_test_add_func("/virtqueue/event-idx", test_event_idx);
    g_test_add_func("/virtqueue/map-refusals", test_map_refusals);
    for (size_t i = 0; i < G_N_ELEMENTS(hostile_cases); i++) {
        g_autofree char *path = g_strdup_printf("/virtqueue/hostile/%s", hostile_cases[i].name);
        g_test_add_data_func(path, &hostile_cases[i], test_hostile);
    }
    g_test_add_func("/virtqueue/random-garbage", test_random_garbage);
    return g_test_run();
}
