/*
 * The end of a forbidden system call: SECCOMP_RET_TRAP raises SIGSYS in
 * the thread that made it, with the call's number in si_syscall. The
 * handler writes one line naming it and kills the process with SIGSYS
 * itself (the exit status a shell shows as "Bad system call").
 *
 * Why a trap rather than SECCOMP_RET_KILL_PROCESS: the kernel's kill only
 * leaves an audit record (dmesg, often unreadable in a container), and a
 * user who sees "Bad system call" must know which call to report. The
 * handler uses only async-signal-safe calls that every filter allows
 * (write, rt_sigaction, rt_sigprocmask, getpid, gettid, tgkill).
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <seccomp.h>
#include <glib.h>
#include "sandbox-internal.h"

/* Above every x86-64 system call number (about 460 in Linux 6.x). */
#define SYSCALL_NAME_SLOTS 1024

static const char *syscall_names[SYSCALL_NAME_SLOTS];

static size_t append(char *line, size_t len, size_t size, const char *text)
{
    size_t n = strlen(text);
    n = MIN(n, size - len);
    memcpy(line + len, text, n);
    return len + n;
}

static size_t append_number(char *line, size_t len, size_t size, int value)
{
    char digits[16];
    size_t n = sizeof(digits);
    unsigned magnitude = value < 0 ? 0u - (unsigned)value : (unsigned)value;
    do {
        digits[--n] = '0' + magnitude % 10;
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) {
        digits[--n] = '-';
    }
    size_t count = MIN(sizeof(digits) - n, size - len);
    memcpy(line + len, digits + n, count);
    return len + count;
}

static void on_forbidden_call(int sig, siginfo_t *info, void *ucontext)
{
    int nr = info->si_syscall;
    const char *name = nr >= 0 && nr < SYSCALL_NAME_SLOTS && syscall_names[nr]
                       ? syscall_names[nr] : "unknown";
    char line[128];
    size_t len = append(line, 0, sizeof(line),
                        "qemu-system-x86_64: sandbox: forbidden system call ");
    len = append(line, len, sizeof(line), name);
    len = append(line, len, sizeof(line), " (");
    len = append_number(line, len, sizeof(line), nr);
    len = append(line, len, sizeof(line), ")\n");
    ssize_t written = write(STDERR_FILENO, line, len);
    (void)written;      /* nothing better to do with a full stderr */

    /* Die of SIGSYS as the kernel's own kill would: default action, then
     * the signal again, unblocked (the handler runs with it blocked). */
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    sigaction(SIGSYS, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(SIGSYS);
    _exit(128 + SIGSYS);
}

bool sandbox_trap_init(Error **errp)
{
    for (int nr = 0; nr < SYSCALL_NAME_SLOTS; nr++) {
        if (!syscall_names[nr]) {
            /* libseccomp's strings, kept for the life of the process. */
            syscall_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        }
    }
    struct sigaction sa = { .sa_sigaction = on_forbidden_call, .sa_flags = SA_SIGINFO };
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) < 0) {
        error_setg_errno(errp, errno, "sandbox: installing the SIGSYS handler");
        return false;
    }
    return true;
}
