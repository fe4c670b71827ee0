/*
 * -daemonize (sysemu/daemonize.h).
 *
 * The pipe's write end travels with the daemon only; the caller holds the
 * read end. Both ends are close-on-exec so that nothing the daemon runs (a
 * tap's ifup script) keeps the caller waiting after the daemon is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib.h>
#include "sysemu/daemonize.h"

/* The daemon's end of the pipe, until it has said "built". */
static int built_fd = -1;

/* In the caller: wait for the daemon's word (or its end). */
static DaemonizeResult wait_for_daemon(int read_fd, pid_t first_child)
{
    uint8_t status;
    ssize_t len;
    do {
        len = read(read_fd, &status, 1);
    } while (len < 0 && errno == EINTR);
    close(read_fd);
    /* The first child exits as soon as it has forked the daemon. */
    waitpid(first_child, NULL, 0);
    return len == 1 && status == 0 ? DAEMONIZE_CALLER_DONE : DAEMONIZE_CALLER_FAILED;
}

/*
 * In the first child, the new session's leader. A session leader that opens
 * a terminal would make it its controlling one: the daemon is forked from
 * here so that it is no session leader, and this process leaves at once.
 * It has no caller to return to; its failure reaches the caller as end of
 * file on the pipe (it holds the write end until it exits).
 */
static void leave_session_leader(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("qemu-system-x86_64: -daemonize: fork");
        _exit(1);
    }
    if (pid > 0) {
        _exit(0);
    }
}

DaemonizeResult daemonize_start(Error **errp)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        error_setg_errno(errp, errno, "-daemonize: cannot create a pipe");
        return DAEMONIZE_CALLER_FAILED;
    }
    /* Buffered text would be written twice, once by each process. */
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        error_setg_errno(errp, errno, "-daemonize: cannot fork");
        close(fds[0]);
        close(fds[1]);
        return DAEMONIZE_CALLER_FAILED;
    }
    if (pid > 0) {
        close(fds[1]);
        return wait_for_daemon(fds[0], pid);
    }
    close(fds[0]);
    setsid();
    leave_session_leader();
    built_fd = fds[1];
    umask(027);
    /* Without a terminal nobody should stop us; QEMU ignores them too. */
    signal(SIGTSTP, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    return DAEMONIZE_IN_DAEMON;
}

bool daemonize_finish(bool keep_stderr, Error **errp)
{
    g_assert(built_fd >= 0);
    if (chdir("/") < 0) {
        error_setg_errno(errp, errno, "-daemonize: not able to chdir to /");
        return false;
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) {
        error_setg_errno(errp, errno, "-daemonize: cannot open /dev/null");
        return false;
    }
    fflush(stdout);
    fflush(stderr);
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    if (!keep_stderr) {
        dup2(null_fd, STDERR_FILENO);
    }
    close(null_fd);
    uint8_t built = 0;
    ssize_t len;
    do {
        len = write(built_fd, &built, 1);
    } while (len < 0 && errno == EINTR);
    close(built_fd);
    built_fd = -1;
    /* The caller may have been killed meanwhile: nobody to tell, go on
     * (the main loop ignores SIGPIPE, so the write fails with EPIPE). */
    return true;
}
