/*
 * The I/O thread: the VMM's main thread after start-up. It runs the glib
 * main context (file descriptors of backends, timers, signals) and acts on
 * run-state requests (reset, shutdown). vCPU threads never block on it.
 */
#ifndef QEMU_MAIN_LOOP_H
#define QEMU_MAIN_LOOP_H

#include <glib.h>
#include <glib-unix.h>

void main_loop_init(void);
/* What the main loop calls, on the I/O thread, for each run-state request
 * (sysemu/runstate.h). A request without a handler is taken and ignored. */
typedef struct MachineRequestHandlers {
    void (*reset)(void);
    void (*suspend)(void);
    void (*wakeup)(void);
} MachineRequestHandlers;
void main_loop_set_request_handlers(const MachineRequestHandlers *handlers);
/* Run until a shutdown request; returns the VMM's exit status. */
int main_loop_run(void);
/* Wake the main loop from another thread (after a request or new work). */
void main_loop_wakeup(void);
GMainContext *main_loop_context(void);

#endif
