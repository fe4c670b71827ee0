/*
 * Names of the VMM's threads and process, as `-name` asks for them.
 *
 * QEMU names its threads ("CPU 0/KVM", "IO iothread1", "worker") only with
 * -name debug-threads=on; otherwise every thread keeps the name it inherits
 * from the main thread (the executable's, or -name process=). Debuggers and
 * `top -H` show these names, and tools that look for a vCPU by name expect
 * exactly QEMU's, so we follow the same rule.
 */
#ifndef QEMU_THREAD_NAMING_H
#define QEMU_THREAD_NAMING_H

#include <pthread.h>
#include <stdbool.h>

/* -name debug-threads=on|off; off by default. Set before threads start. */
void thread_naming_enable(bool enable);

/* Give thread its debugging name, if naming is enabled. Like QEMU, a name
 * longer than the kernel's 15 characters is not given at all (the thread
 * keeps the inherited one) rather than shown truncated. */
void thread_set_debug_name(pthread_t thread, const char *name);

/* -name process=NAME: the main thread's name (what ps and top show), cut to
 * the kernel's 15 characters. Threads created later inherit it. */
void process_set_name(const char *name);

#endif
