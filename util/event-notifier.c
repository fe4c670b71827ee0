/* Event notifiers on Linux eventfds (qemu/event-notifier.h). */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "qemu/event-notifier.h"

bool event_notifier_init(EventNotifier *e, Error **errp)
{
    e->watch = NULL;
    e->handler = NULL;
    e->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->fd < 0) {
        error_setg_errno(errp, errno, "eventfd");
        return false;
    }
    return true;
}

void event_notifier_cleanup(EventNotifier *e)
{
    fd_watch_free(e->watch);
    e->watch = NULL;
    if (e->fd >= 0) {
        close(e->fd);
        e->fd = -1;
    }
}

void event_notifier_set(EventNotifier *e)
{
    uint64_t one = 1;
    /* EAGAIN only when the counter is about to overflow: it is set anyway. */
    while (write(e->fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

uint64_t event_notifier_take(EventNotifier *e)
{
    uint64_t count;
    ssize_t n;
    while ((n = read(e->fd, &count, sizeof(count))) < 0 && errno == EINTR) {
    }
    return n == sizeof(count) ? count : 0;
}

bool event_notifier_test_and_clear(EventNotifier *e)
{
    return event_notifier_take(e) != 0;
}

static void event_notifier_ready(void *opaque, GIOCondition revents)
{
    EventNotifier *e = opaque;
    e->handler(e);
}

void event_notifier_set_handler(EventNotifier *e, GMainContext *ctx,
                                void (*handler)(EventNotifier *e))
{
    fd_watch_free(e->watch);
    e->watch = NULL;
    e->handler = handler;
    if (handler) {
        e->watch = fd_watch_new(ctx, e->fd, G_IO_IN, NULL, event_notifier_ready, e);
    }
}
