/* Names of the VMM's threads and process (qemu/thread-naming.h). */
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include "qemu/thread-naming.h"

/* Linux keeps 16 bytes of a thread's name, the NUL included. */
#define THREAD_NAME_MAX 15

static atomic_bool naming_enabled;

void thread_naming_enable(bool enable)
{
    atomic_store(&naming_enabled, enable);
}

void thread_set_debug_name(pthread_t thread, const char *name)
{
    if (atomic_load(&naming_enabled) && strlen(name) <= THREAD_NAME_MAX) {
        pthread_setname_np(thread, name);
    }
}

void process_set_name(const char *name)
{
    char comm[THREAD_NAME_MAX + 1] = "";
    strncat(comm, name, THREAD_NAME_MAX);
    /* Only the calling (main) thread is renamed: call before threads start. */
    prctl(PR_SET_NAME, comm);
}
