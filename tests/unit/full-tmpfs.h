/*
 * A file system that fills up, for the unit tests of ENOSPC (test-block,
 * test-qmp-block): a sparse image larger than the small tmpfs it lives
 * on, so a write past the tmpfs's room fails with ENOSPC. Mounting needs
 * root; without it the test is skipped.
 */
#ifndef TESTS_UNIT_FULL_TMPFS_H
#define TESTS_UNIT_FULL_TMPFS_H

#include <fcntl.h>
#include <unistd.h>
#include <sys/mount.h>
#include <glib.h>
#include <glib/gstdio.h>

/* Mount a tmpfs of tmpfs_size bytes (mount's "size=" text: "64k") at
 * parent/full and make a sparse image of image_size bytes on it; its
 * path, or NULL with the test marked skipped. */
static inline char *full_tmpfs_image_new(const char *parent, const char *tmpfs_size,
                                         uint64_t image_size)
{
    g_autofree char *mnt = g_build_filename(parent, "full", NULL);
    g_autofree char *options = g_strdup_printf("size=%s", tmpfs_size);
    g_mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, options) < 0) {
        g_test_skip("cannot mount a small tmpfs (needs root)");
        g_rmdir(mnt);
        return NULL;
    }
    char *path = g_build_filename(mnt, "full.img", NULL);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, image_size), ==, 0);
    close(fd);
    return path;
}

/* Remove the image, unmount its tmpfs and remove the mount point; frees
 * path. */
static inline void full_tmpfs_image_free(char *path)
{
    g_autofree char *mnt = g_path_get_dirname(path);
    g_unlink(path);
    g_free(path);
    g_assert_cmpint(umount(mnt), ==, 0);
    g_rmdir(mnt);
}

#endif
