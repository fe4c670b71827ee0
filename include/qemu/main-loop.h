/*
 * The I/O thread: the VMM's main thread after start-up. It runs the glib
 * main context (file descriptors of backends, timers, signals) and acts on
 * run-state requests (sysemu/runstate.h). vCPU threads never block on it.
 */
#ifndef QEMU_MAIN_LOOP_H
#define QEMU_MAIN_LOOP_H

#include <glib.h>
#include <glib-unix.h>

void main_loop_init(void);
/* Run until the run-state machine says the VMM ends
 * (runstate_main_loop_should_exit); returns the exit status. */
int main_loop_run(void);
/* Wake the main loop from another thread (after a request or new work). */
void main_loop_wakeup(void);
GMainContext *main_loop_context(void);

#endif
