/*
 * The file backend: "file:PATH" writes the output to PATH (created, or
 * truncated if it exists). It has no input.
 */
#include <errno.h>
#include <fcntl.h>
#include "char-internal.h"

bool chardev_file_open(Chardev *chr, const char *path, Error **errp)
{
    if (!*path) {
        error_setg(errp, "file: needs a path (file:PATH)");
        return false;
    }
    /* O_NONBLOCK matters only if PATH is a FIFO; files never block. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
        error_setg_errno(errp, errno, "file:%s: cannot open", path);
        return false;
    }
    chardev_attach_output(chr, fd, true, true);
    return true;
}
