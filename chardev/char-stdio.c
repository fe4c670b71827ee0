/*
 * The stdio backends: "stdio" and "mon:stdio".
 *
 * As in QEMU, a terminal on stdin is put into raw mode (no echo, no line
 * editing) and restored at exit or on a fatal signal. Plain "stdio" keeps
 * the terminal's signal keys, so Ctrl-C terminates the VMM; "mon:stdio"
 * (what -nographic uses) passes Ctrl-C to the guest and instead offers the
 * escape key Ctrl-a, and is a multiplexer (char-mux.c): "Ctrl-a c" passes
 * the input between the serial port and the human monitor.
 *
 * Output goes to a file description of our own where possible, so that
 * making it non-blocking does not change the flags of the stdout that the
 * rest of the process (and the shell) shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include "char-internal.h"
#include "sysemu/runstate.h"

#define CTRL_A 0x01

static bool stdio_in_use;
/* Touched from signal handlers: plain data, written before the handlers
 * are installed. */
static struct termios stdio_saved_termios;
static volatile sig_atomic_t stdio_termios_changed;

void chardev_restore_terminals(void)
{
    if (stdio_termios_changed) {
        tcsetattr(STDIN_FILENO, TCSANOW, &stdio_saved_termios);
    }
}

static void stdio_fatal_signal(int signo)
{
    chardev_restore_terminals();
    /* SA_RESETHAND restored the default action: die of the same signal. */
    raise(signo);
}

static void stdio_install_restore_hooks(void)
{
    static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
    static bool installed;

    if (installed) {
        return;
    }
    installed = true;
    atexit(chardev_restore_terminals);
    struct sigaction sa = { .sa_handler = stdio_fatal_signal,
                            .sa_flags = SA_RESETHAND };
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < G_N_ELEMENTS(fatal_signals); i++) {
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

static void stdio_enter_raw_mode(bool keep_signal_keys)
{
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &stdio_saved_termios) < 0) {
        return;
    }
    struct termios raw = stdio_saved_termios;
    raw.c_iflag &= ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    raw.c_lflag &= ~(ECHO | ECHONL | ICANON | IEXTEN);
    if (!keep_signal_keys) {
        raw.c_lflag &= ~ISIG;
    }
    raw.c_cflag = (raw.c_cflag & ~(CSIZE | PARENB)) | CS8;
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    /* Output post-processing (OPOST) stays: our own messages end in \n. */
    stdio_termios_changed = 1;
    stdio_install_restore_hooks();
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
}

/* The escapes answer on the console, as QEMU's do (lines end in "\n\r":
 * the terminal is raw). */
static void stdio_say(Chardev *chr, const char *text)
{
    chardev_write(chr, (const uint8_t *)text, strlen(text));
}

/* QEMU's text, without the escapes this VMM does not have (C-a s, t, b). */
static void stdio_print_help(Chardev *chr)
{
    stdio_say(chr, "\n\r"
                   "C-a h    print this help\n\r"
                   "C-a x    exit emulator\n\r"
                   "C-a c    switch between console and monitor\n\r"
                   "C-a C-a  sends C-a\n\r");
}

static void stdio_escape(Chardev *chr, uint8_t key)
{
    switch (key) {
    case CTRL_A:
        chardev_deliver_input(chr, &key, 1);
        break;
    case 'x':
        stdio_say(chr, "QEMU: Terminated\n\r");
        qemu_system_exit_request(0);
        break;
    case 'h':
    case '?':
        stdio_print_help(chr);
        break;
    case 'c':
        chardev_mux_switch_focus(chr);
        break;
    default:
        /* Unknown escapes are swallowed, as QEMU does. */
        break;
    }
}

/* mon:stdio input: runs of ordinary bytes go to the frontend unchanged,
 * a Ctrl-a makes the byte after it an escape command. */
static void stdio_mux_input(Chardev *chr, const uint8_t *buf, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        if (chr->escape_pending) {
            chr->escape_pending = false;
            stdio_escape(chr, buf[i]);
            run = i + 1;
        } else if (buf[i] == CTRL_A) {
            chardev_deliver_input(chr, buf + run, i - run);
            chr->escape_pending = true;
            run = i + 1;
        }
    }
    chardev_deliver_input(chr, buf + run, len - run);
}

/*
 * A description of stdout's file that we may make non-blocking. Regular
 * files never block and must keep sharing stdout's offset: plain dup().
 * Terminals, pipes and FIFOs are reopened through /proc. What cannot be
 * reopened (sockets) gets a dup() written in PIPE_BUF pieces after POLLOUT.
 */
static int stdio_open_output(bool *nonblocking, Error **errp)
{
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) < 0) {
        error_setg_errno(errp, errno, "stdio: cannot use standard output");
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        int fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            *nonblocking = true;
            return fd;
        }
    }
    int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "stdio: cannot use standard output");
        return -1;
    }
    *nonblocking = S_ISREG(st.st_mode);
    return fd;
}

static void stdio_close(Chardev *chr)
{
    chardev_restore_terminals();
    stdio_termios_changed = 0;
    stdio_in_use = false;
}

bool chardev_stdio_open(Chardev *chr, bool mux_monitor, Error **errp)
{
    if (stdio_in_use) {
        error_setg(errp, "cannot use stdio by multiple character devices");
        return false;
    }
    bool nonblocking;
    int out_fd = stdio_open_output(&nonblocking, errp);
    if (out_fd < 0) {
        return false;
    }
    stdio_in_use = true;
    chr->backend_close = stdio_close;
    chardev_attach_output(chr, out_fd, true, nonblocking);
    chardev_attach_input(chr, STDIN_FILENO);
    if (mux_monitor) {
        chr->input_filter = stdio_mux_input;
        chardev_mux_init(chr);
    }
    stdio_enter_raw_mode(!mux_monitor);
    return true;
}
