/*
 * -daemonize: detach from the terminal once the machine is built, as QEMU
 * does, so that a mistake found while building (a missing kernel, a held
 * pid file, a taken socket) still reaches the caller's terminal and exit
 * status. The caller's process forks the daemon and then only waits on a
 * pipe: one byte when the machine is built (exit 0), end of file when the
 * daemon died first (exit 1).
 *
 * Call daemonize_start() before anything starts a thread (fork keeps only
 * the calling one) and daemonize_finish() when the machine is built.
 */
#ifndef SYSEMU_DAEMONIZE_H
#define SYSEMU_DAEMONIZE_H

#include <stdbool.h>
#include "qemu/error.h"

typedef enum DaemonizeResult {
    /* This is the daemon: build the machine, then daemonize_finish(). Its
     * stdio is still the caller's until then, so errors are seen. */
    DAEMONIZE_IN_DAEMON,
    /* This is the caller and the daemon reports its machine built: exit 0. */
    DAEMONIZE_CALLER_DONE,
    /* This is the caller and the daemon ended before it was built (it
     * printed why), or *errp when it could not even be started: exit 1. */
    DAEMONIZE_CALLER_FAILED,
} DaemonizeResult;

/*
 * Fork the daemon, in a new session and forked once more so that it can
 * never take a controlling terminal again; it runs with umask 027 and
 * ignores the terminal's job-control signals, as QEMU's daemon does.
 */
DaemonizeResult daemonize_start(Error **errp);

/*
 * In the daemon, once the machine is built: work from /, stdin, stdout and
 * (unless keep_stderr, for -d logging) stderr on /dev/null, and tell the
 * caller to exit 0.
 */
bool daemonize_finish(bool keep_stderr, Error **errp);

#endif
