/*
 * softmmu/guest-ram.c: guest RAM starts on a 2 MiB boundary, is
 * writable to its last byte, and carries the huge-page advice asked for,
 * as the kernel records it in /proc/self/smaps (VmFlags "hg" for
 * MADV_HUGEPAGE, "nh" for MADV_NOHUGEPAGE), and the alignment slack
 * is given back.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <glib.h>
#include "sysemu/guest-ram.h"

#define SIZE (64u << 20)

typedef struct Vma {
    bool found;
    uintptr_t start, end;
    char flags[256];            /* the VmFlags line's value */
    unsigned long anon_huge_kb; /* AnonHugePages */
} Vma;

/* The smaps entry of the mapping that holds addr. */
static Vma vma_of(const void *addr)
{
    Vma vma = { 0 };
    FILE *f = fopen("/proc/self/smaps", "r");
    g_assert_nonnull(f);
    char line[512];
    bool inside = false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long start, end;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
            if (inside) {
                break;
            }
            inside = (uintptr_t)addr >= start && (uintptr_t)addr < end;
            if (inside) {
                vma = (Vma) { .found = true, .start = start, .end = end };
            }
        } else if (inside) {
            sscanf(line, "AnonHugePages: %lu kB", &vma.anon_huge_kb);
            if (g_str_has_prefix(line, "VmFlags:")) {
                g_strlcpy(vma.flags, line + strlen("VmFlags:"), sizeof(vma.flags));
            }
        }
    }
    fclose(f);
    return vma;
}

static bool has_flag(const Vma *vma, const char *flag)
{
    g_auto(GStrv) words = g_strsplit_set(vma->flags, " \n", -1);
    return g_strv_contains((const char *const *)words, flag);
}

static uint8_t *alloc_and_touch(bool huge_pages)
{
    Error *err = NULL;
    uint8_t *ram = guest_ram_alloc(SIZE, huge_pages, &err);
    g_assert_null(err);
    g_assert_nonnull(ram);
    g_assert_cmpuint((uintptr_t)ram % GUEST_RAM_ALIGN, ==, 0);
    memset(ram, 0x5a, SIZE);
    g_assert_cmpuint(ram[0], ==, 0x5a);
    g_assert_cmpuint(ram[SIZE - 1], ==, 0x5a);
    return ram;
}

/* A kernel without THP refuses both advices, and smaps shows neither. */
static bool have_thp(void)
{
    if (!g_file_test("/sys/kernel/mm/transparent_hugepage", G_FILE_TEST_IS_DIR)) {
        g_test_skip("the kernel has no transparent huge pages");
        return false;
    }
    return true;
}

static void test_huge_pages(void)
{
    if (!have_thp()) {
        return;
    }
    uint8_t *ram = alloc_and_touch(true);
    Vma vma = vma_of(ram);
    g_assert_true(vma.found);
    g_assert_true(has_flag(&vma, "hg"));
    /* Whether the kernel found free 2 MiB frames is its business, not
     * ours: reported, not asserted. */
    g_test_message("AnonHugePages: %lu kB of %u", vma.anon_huge_kb, SIZE >> 10);
    munmap(ram, SIZE);
}

static void test_no_huge_pages(void)
{
    if (!have_thp()) {
        return;
    }
    uint8_t *ram = alloc_and_touch(false);
    Vma vma = vma_of(ram);
    g_assert_true(vma.found);
    g_assert_true(has_flag(&vma, "nh"));
    /* Nothing else in this process is advised "nh", so no neighbour can
     * merge with the mapping: its bounds are exactly the RAM's, which
     * shows the alignment slack before and after it was given back. */
    g_assert_cmphex(vma.start, ==, (uintptr_t)ram);
    g_assert_cmphex(vma.end, ==, (uintptr_t)ram + SIZE);
    g_assert_false(has_flag(&vma, "hg"));
    g_assert_cmpuint(vma.anon_huge_kb, ==, 0);
    munmap(ram, SIZE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-ram/huge-pages", test_huge_pages);
    g_test_add_func("/guest-ram/no-huge-pages", test_no_huge_pages);
    return g_test_run();
}
