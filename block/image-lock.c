/*
 * Image locking as QEMU does it, so that our VMM and QEMU's tools refuse
 * each other's conflicting opens (docs/storage.md). QEMU describes an
 * opener by the permissions it uses and those it does not share with
 * other openers, and holds one shared OFD byte-range lock per fact:
 * byte 100 + bit for each permission used, byte 200 + bit for each
 * permission not shared. Bits: 0 consistent read, 1 write, 2 write
 * unchanged, 3 resize. A guest's disk uses consistent read (and write if
 * writable) and does not share write: a second writer, or a reader that
 * cannot share a writer, finds the other's byte locked.
 *
 * Locks are taken first and conflicts tested after, so two openers racing
 * each see the other and both fail rather than both succeed. OFD locks
 * belong to the open file description: closing the descriptor releases
 * them, and our own never conflict with themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include "block-internal.h"

enum { PERM_CONSISTENT_READ, PERM_WRITE };
static const char *const perm_names[] = { "consistent read", "write" };

#define LOCK_USED_BASE 100
#define LOCK_UNSHARED_BASE 200

static int lock_byte(int fd, int cmd, short type, off_t byte, struct flock *fl)
{
    *fl = (struct flock) { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };
    return fcntl(fd, cmd, fl);
}

/* Held by another open file description (another process, or another open). */
static bool byte_locked_elsewhere(int fd, off_t byte)
{
    struct flock fl;
    return lock_byte(fd, F_OFD_GETLK, F_WRLCK, byte, &fl) == 0 && fl.l_type != F_UNLCK;
}

bool image_lock_acquire(int fd, const char *filename, bool write, Error **errp)
{
    unsigned used = 1u << PERM_CONSISTENT_READ | (write ? 1u << PERM_WRITE : 0);
    unsigned unshared = 1u << PERM_WRITE;
    struct flock fl;

    for (int bit = 0; bit < (int)G_N_ELEMENTS(perm_names); bit++) {
        if (((used >> bit) & 1 &&
             lock_byte(fd, F_OFD_SETLK, F_RDLCK, LOCK_USED_BASE + bit, &fl) < 0) ||
            ((unshared >> bit) & 1 &&
             lock_byte(fd, F_OFD_SETLK, F_RDLCK, LOCK_UNSHARED_BASE + bit, &fl) < 0)) {
            if (errno == EAGAIN || errno == EACCES) {
                break;          /* a conflicting write lock: the tests below name it */
            }
            /* A file system without OFD locks (some network ones): QEMU's
             * locking=auto goes on without them. */
            return true;
        }
    }
    for (int bit = 0; bit < (int)G_N_ELEMENTS(perm_names); bit++) {
        if ((used >> bit) & 1 && byte_locked_elsewhere(fd, LOCK_UNSHARED_BASE + bit)) {
            error_setg(errp, "Failed to get \"%s\" lock: is another process using the "
                       "image [%s]?", perm_names[bit], filename);
            return false;
        }
        if ((unshared >> bit) & 1 && byte_locked_elsewhere(fd, LOCK_USED_BASE + bit)) {
            error_setg(errp, "Failed to get shared \"%s\" lock: is another process using "
                       "the image [%s]?", perm_names[bit], filename);
            return false;
        }
    }
    return true;
}
