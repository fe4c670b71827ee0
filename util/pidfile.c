/*
 * The locked pid file (qemu/pidfile.h).
 *
 * The lock is what makes the file trustworthy: a pid file left behind by a
 * crash is not locked, so the next VMM takes it over; a live VMM's is, so a
 * second one fails at once. fcntl locks belong to the process and vanish
 * when it exits, however it exits. They also vanish when the process closes
 * any descriptor of the file, so the descriptor stays open and nothing else
 * may open the path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>
#include "qemu/pidfile.h"

static int pidfile_fd = -1;
static char *pidfile_path;      /* absolute */

/* Open path and lock it; -1 and *errp when it cannot be, or is locked. */
static int open_locked(const char *path, Error **errp)
{
    for (;;) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, S_IRUSR | S_IWUSR);
        if (fd < 0) {
            error_setg_errno(errp, errno, "Could not create '%s'", path);
            return -1;
        }
        struct flock lock = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        if (fcntl(fd, F_SETLK, &lock) < 0) {
            error_setg_errno(errp, errno, "Cannot lock pid file");
            close(fd);
            return -1;
        }
        /*
         * The previous owner may have removed the file (at its exit)
         * between our open and our lock: then we hold a lock on a file
         * nobody can find, and a third VMM would create and lock a new one.
         * Keep the lock only if it is on the file the path names now.
         */
        struct stat opened, named;
        if (fstat(fd, &opened) == 0 && stat(path, &named) == 0 &&
            opened.st_dev == named.st_dev && opened.st_ino == named.st_ino) {
            return fd;
        }
        close(fd);
    }
}

static bool write_pid(int fd, Error **errp)
{
    if (ftruncate(fd, 0) < 0) {
        error_setg_errno(errp, errno, "Failed to truncate pid file");
        return false;
    }
    char text[32];
    int len = snprintf(text, sizeof(text), "%d\n", (int)getpid());
    if (write(fd, text, len) != len) {
        error_setg(errp, "Failed to write pid file");
        return false;
    }
    return true;
}

bool pidfile_create(const char *path, Error **errp)
{
    g_assert(pidfile_fd < 0);
    int fd = open_locked(path, errp);
    if (fd < 0) {
        return false;
    }
    if (!write_pid(fd, errp)) {
        /* Ours (we hold the lock), but holds no pid: nobody should read it. */
        unlink(path);
        close(fd);
        return false;
    }
    pidfile_fd = fd;
    pidfile_path = g_canonicalize_filename(path, NULL);
    return true;
}

void pidfile_remove(void)
{
    if (pidfile_fd < 0) {
        return;
    }
    /* Unlink before closing, while the lock still says the file is ours. */
    unlink(pidfile_path);
    close(pidfile_fd);
    pidfile_fd = -1;
    g_clear_pointer(&pidfile_path, g_free);
}
