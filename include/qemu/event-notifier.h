/*
 * An event notifier: a Linux eventfd that any thread sets and one context
 * consumes. KVM signals them too (ioeventfd: a guest write to a doorbell)
 * and reads them (irqfd: an interrupt to inject), so a notifier is the
 * meeting point between a device's host side and the fast paths.
 */
#ifndef QEMU_EVENT_NOTIFIER_H
#define QEMU_EVENT_NOTIFIER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "qemu/error.h"
#include "qemu/fd-watch.h"

typedef struct EventNotifier EventNotifier;
struct EventNotifier {
    int fd;                     /* -1 when not initialised */
    FdWatch *watch;
    void (*handler)(EventNotifier *e);
};

bool event_notifier_init(EventNotifier *e, Error **errp);
void event_notifier_cleanup(EventNotifier *e);
/* Signal it: any thread, no lock, never blocks. */
void event_notifier_set(EventNotifier *e);
/* Consume every signal since the last call; true if there was one. */
bool event_notifier_test_and_clear(EventNotifier *e);
/* The same, returning how many signals there were (0 if none): each
 * event_notifier_set, and each write KVM signals for an ioeventfd, is one. */
uint64_t event_notifier_take(EventNotifier *e);
/* Call handler on ctx's thread each time the notifier is signalled (the
 * handler calls event_notifier_test_and_clear itself); NULL stops it. */
void event_notifier_set_handler(EventNotifier *e, GMainContext *ctx,
                                void (*handler)(EventNotifier *e));

#endif
