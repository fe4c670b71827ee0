/*
 * The I/O thread's main loop (qemu/main-loop.h).
 *
 * Everything the I/O thread does is a source of glib's default main
 * context: backend file descriptors, the timer list's timerfd and the
 * termination signals. Between iterations it acts on the run-state
 * requests (sysemu/runstate.h); requests from other threads call
 * main_loop_wakeup() so that a blocked iteration returns at once.
 */
#include <signal.h>
#include <stdio.h>
#include "qemu/main-loop.h"
#include "sysemu/runstate.h"

GMainContext *main_loop_context(void)
{
    return g_main_context_default();
}

/* Like QEMU: say why we are going away, then shut down with status 0. */
static gboolean main_loop_terminate_on_signal(gpointer opaque)
{
    int signo = GPOINTER_TO_INT(opaque);
    fprintf(stderr, "qemu-system-x86_64: terminating on signal %d\n", signo);
    qemu_system_shutdown_request(SHUTDOWN_CAUSE_HOST_SIGNAL);
    return G_SOURCE_CONTINUE;
}

void main_loop_init(void)
{
    static const int termination_signals[] = { SIGINT, SIGTERM, SIGHUP };

    /* A reader that went away must show up as EPIPE on the write that
     * follows, not kill the VMM. */
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < G_N_ELEMENTS(termination_signals); i++) {
        int signo = termination_signals[i];
        GSource *src = g_unix_signal_source_new(signo);
        g_source_set_callback(src, main_loop_terminate_on_signal,
                              GINT_TO_POINTER(signo), NULL);
        g_source_attach(src, main_loop_context());
        g_source_unref(src);
    }
}

int main_loop_run(void)
{
    int exit_status;
    while (!runstate_main_loop_should_exit(&exit_status)) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    return exit_status;
}

void main_loop_wakeup(void)
{
    g_main_context_wakeup(main_loop_context());
}
