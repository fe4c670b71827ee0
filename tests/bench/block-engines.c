/*
 * The block layer's engines without a guest: random 4 KiB reads at queue
 * depth 1 and 32 and sequential 1 MiB writes, through BlockBackend with
 * completions on the main loop's context, as a device would see them.
 *
 *   build/tests/bench/block-engines [IMAGE-DIR] [SECONDS-PER-CASE]
 *
 * Never part of the pass/fail suite (docs/benchmarks.md).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "block/block-backend.h"
#include "qemu/main-loop.h"

#define IMAGE_SIZE (256ull << 20)

typedef struct Load {
    BlockBackend *blk;
    bool write;
    size_t block;
    bool random;
    uint64_t next_offset;
    gint64 deadline;
    unsigned in_flight;
    uint64_t completed;
    int failed;
    GRand *rand;
} Load;

typedef struct Slot {
    Load *load;
    uint8_t *buf;
} Slot;

static void submit(Slot *slot);

static void done(void *opaque, int ret)
{
    Slot *slot = opaque;
    Load *load = slot->load;
    load->in_flight--;
    load->completed++;
    if (ret < 0) {
        load->failed = ret;
    }
    if (g_get_monotonic_time() < load->deadline && !load->failed) {
        submit(slot);
    }
}

static void submit(Slot *slot)
{
    Load *load = slot->load;
    uint64_t blocks = IMAGE_SIZE / load->block;
    uint64_t offset = load->random ? g_rand_int_range(load->rand, 0, blocks) * load->block
                                   : load->next_offset;
    load->next_offset = (load->next_offset + load->block) % IMAGE_SIZE;
    struct iovec iov = { slot->buf, load->block };
    load->in_flight++;
    if (load->write) {
        blk_aio_pwritev(load->blk, offset, &iov, 1, 0, done, slot);
    } else {
        blk_aio_preadv(load->blk, offset, &iov, 1, done, slot);
    }
}

/* Operations per second. */
static double run(BlockBackend *blk, bool write, bool random, size_t block, unsigned depth,
                  double seconds)
{
    Load load = { .blk = blk, .write = write, .random = random, .block = block,
                  .rand = g_rand_new_with_seed(1) };
    Slot *slots = g_new(Slot, depth);
    gint64 start = g_get_monotonic_time();
    load.deadline = start + seconds * G_USEC_PER_SEC;
    blk_io_plug(blk);
    for (unsigned i = 0; i < depth; i++) {
        slots[i] = (Slot) { .load = &load, .buf = aligned_alloc(4096, block) };
        memset(slots[i].buf, 0x5a, block);
        submit(&slots[i]);
    }
    blk_io_unplug(blk);
    while (load.in_flight) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    double elapsed = (g_get_monotonic_time() - start) / (double)G_USEC_PER_SEC;
    if (load.failed) {
        fprintf(stderr, "block-engines: request failed: %s\n", g_strerror(-load.failed));
        exit(1);
    }
    for (unsigned i = 0; i < depth; i++) {
        free(slots[i].buf);
    }
    g_free(slots);
    g_rand_free(load.rand);
    return load.completed / elapsed;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : g_get_tmp_dir();
    double seconds = argc > 2 ? g_ascii_strtod(argv[2], NULL) : 2.0;
    g_autofree char *path = g_build_filename(dir, "block-engines.img", NULL);
    /* Written, not allocated: reads of unwritten extents never reach the
     * disk and would flatter whichever case runs first. */
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    char *chunk = g_malloc(1 << 20);
    memset(chunk, 0xa5, 1 << 20);
    for (uint64_t done = 0; fd >= 0 && done < IMAGE_SIZE; done += 1 << 20) {
        if (write(fd, chunk, 1 << 20) != 1 << 20) {
            close(fd);
            fd = -1;
        }
    }
    g_free(chunk);
    if (fd < 0 || fsync(fd) < 0) {
        fprintf(stderr, "block-engines: cannot make %s\n", path);
        return 1;
    }
    close(fd);

    static const struct {
        DriveAioMode aio;
        DriveCacheMode cache;
    } cases[] = {
        { DRIVE_AIO_THREADS, DRIVE_CACHE_NONE },
        { DRIVE_AIO_NATIVE, DRIVE_CACHE_NONE },
        { DRIVE_AIO_IO_URING, DRIVE_CACHE_NONE },
        { DRIVE_AIO_THREADS, DRIVE_CACHE_WRITEBACK },
        { DRIVE_AIO_IO_URING, DRIVE_CACHE_WRITEBACK },
    };
    printf("%-9s %-10s %14s %14s %14s\n", "aio", "cache", "4k-rand-qd1", "4k-rand-qd32",
           "1M-seq-write");
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        DriveConfig cfg = { .id = (char *)"bench", .file = path, .format = DRIVE_FORMAT_RAW,
                            .cache = cases[i].cache, .aio = cases[i].aio };
        Error *err = NULL;
        BlockBackend *blk = blk_new_open(&cfg, &err);
        if (!blk) {
            error_report_err(err);
            return 1;
        }
        double qd1 = run(blk, false, true, 4096, 1, seconds);
        double qd32 = run(blk, false, true, 4096, 32, seconds);
        double seq = run(blk, true, false, 1 << 20, 4, seconds);
        printf("%-9s %-10s %10.0f IOPS %10.0f IOPS %9.0f MB/s\n",
               drive_aio_mode_name(cases[i].aio), drive_cache_mode_name(cases[i].cache),
               qd1, qd32, seq * (1 << 20) / 1e6);
        blk_unref(blk);
    }
    g_unlink(path);
    return 0;
}
