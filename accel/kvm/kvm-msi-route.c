/*
 * The GSI routing table (sysemu/kvm-msi-route.h): the PC's irqchip routes
 * and the MSI routes, committed whole on every change.
 */
#include <pthread.h>
#include <glib.h>
#include "sysemu/kvm-msi-route.h"

/* PIC routes for ISA IRQs 0-15 but the cascade, IOAPIC routes for pins
 * 0-23 but GSI 2 (see pc_irqchip_routes). */
#define PC_IRQCHIP_ROUTES (15 + IRQ_MAX_GSI - 1)

typedef struct MsiRoute {
    bool used;
    uint64_t address;
    uint32_t data;
} MsiRoute;

/* Everything below is guarded by routes_lock. */
static pthread_mutex_t routes_lock = PTHREAD_MUTEX_INITIALIZER;
static KVMRoutingCommitFn *routes_commit;
static void *routes_opaque;
static unsigned routes_max;
/* Route i has GSI KVM_MSI_ROUTE_FIRST_GSI + i; freed ones stay, unused. */
static GArray *msi_routes;

/*
 * GSI routing of a PC: ISA IRQs 0-15 go to the 8259 PICs (IRQ 2 is their
 * cascade) and to the IOAPIC pin of the same number, except that the
 * timer's IRQ 0 is wired to IOAPIC pin 2, as the MP table and ACPI
 * interrupt source override tell the guest, and GSI 2 goes nowhere.
 * GSIs 16-23 are IOAPIC only. Returns the number of entries written.
 */
static unsigned pc_irqchip_routes(struct kvm_irq_routing_entry *entries)
{
    unsigned n = 0;
    for (unsigned gsi = 0; gsi < 16; gsi++) {
        if (gsi == 2) {
            continue;
        }
        entries[n++] = (struct kvm_irq_routing_entry) {
            .gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
            .u.irqchip = { .irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE,
                           .pin = gsi % 8 },
        };
    }
    for (unsigned gsi = 0; gsi < IRQ_MAX_GSI; gsi++) {
        if (gsi == 2) {
            /* Pin 2 belongs to GSI 0. A second route to it would make KVM
             * map the pin's EOI back to GSI 2, and the PIT, whose next tick
             * waits for the EOI of GSI 0, would stall. */
            continue;
        }
        entries[n++] = (struct kvm_irq_routing_entry) {
            .gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
            .u.irqchip = { .irqchip = KVM_IRQCHIP_IOAPIC, .pin = gsi == 0 ? 2 : gsi },
        };
    }
    g_assert(n == PC_IRQCHIP_ROUTES);
    return n;
}

static GArray *routes_table(void)
{
    if (!msi_routes) {
        msi_routes = g_array_new(FALSE, TRUE, sizeof(MsiRoute));
    }
    return msi_routes;
}

static MsiRoute *route_at(unsigned index)
{
    return &g_array_index(routes_table(), MsiRoute, index);
}

/* Build the whole table and hand it over; routes_lock held. */
static bool routes_commit_locked(Error **errp)
{
    if (!routes_commit) {
        return true;    /* no VM (unit tests without KVM): nothing to tell */
    }
    GArray *routes = routes_table();
    struct kvm_irq_routing *table =
        g_malloc0(sizeof(*table) +
                  (PC_IRQCHIP_ROUTES + routes->len) * sizeof(struct kvm_irq_routing_entry));
    unsigned n = pc_irqchip_routes(table->entries);
    for (unsigned i = 0; i < routes->len; i++) {
        const MsiRoute *route = route_at(i);
        if (!route->used) {
            continue;
        }
        table->entries[n++] = (struct kvm_irq_routing_entry) {
            .gsi = KVM_MSI_ROUTE_FIRST_GSI + i, .type = KVM_IRQ_ROUTING_MSI,
            .u.msi = { .address_lo = (uint32_t)route->address,
                       .address_hi = (uint32_t)(route->address >> 32), .data = route->data },
        };
    }
    table->nr = n;
    bool ok = routes_commit(routes_opaque, table, errp);
    g_free(table);
    return ok;
}

void kvm_routing_set_backend(KVMRoutingCommitFn *commit, void *opaque, unsigned max_msi_routes)
{
    pthread_mutex_lock(&routes_lock);
    routes_commit = commit;
    routes_opaque = opaque;
    routes_max = max_msi_routes;
    pthread_mutex_unlock(&routes_lock);
}

bool kvm_routing_commit(Error **errp)
{
    pthread_mutex_lock(&routes_lock);
    bool ok = routes_commit_locked(errp);
    pthread_mutex_unlock(&routes_lock);
    return ok;
}

/* A free slot (reusing freed ones first), or -1 when all are taken. */
static int route_slot_find_free(void)
{
    GArray *routes = routes_table();
    for (unsigned i = 0; i < routes->len; i++) {
        if (!route_at(i)->used) {
            return i;
        }
    }
    if (routes->len >= routes_max) {
        return -1;
    }
    g_array_set_size(routes, routes->len + 1);
    return routes->len - 1;
}

int kvm_msi_route_add(uint64_t address, uint32_t data, Error **errp)
{
    pthread_mutex_lock(&routes_lock);
    int slot = route_slot_find_free();
    if (slot < 0) {
        error_setg(errp, "all %u MSI routes are taken", routes_max);
    } else {
        *route_at(slot) = (MsiRoute) { .used = true, .address = address, .data = data };
        if (!routes_commit_locked(errp)) {
            route_at(slot)->used = false;
            slot = -1;
        }
    }
    pthread_mutex_unlock(&routes_lock);
    return slot < 0 ? -1 : KVM_MSI_ROUTE_FIRST_GSI + slot;
}

static MsiRoute *route_of_gsi(unsigned gsi)
{
    g_assert(gsi >= KVM_MSI_ROUTE_FIRST_GSI && gsi - KVM_MSI_ROUTE_FIRST_GSI < routes_table()->len);
    MsiRoute *route = route_at(gsi - KVM_MSI_ROUTE_FIRST_GSI);
    g_assert(route->used);
    return route;
}

bool kvm_msi_route_update(unsigned gsi, uint64_t address, uint32_t data, Error **errp)
{
    pthread_mutex_lock(&routes_lock);
    MsiRoute *route = route_of_gsi(gsi);
    bool ok = true;
    if (route->address != address || route->data != data) {
        MsiRoute old = *route;
        route->address = address;
        route->data = data;
        ok = routes_commit_locked(errp);
        if (!ok) {
            *route = old;
        }
    }
    pthread_mutex_unlock(&routes_lock);
    return ok;
}

void kvm_msi_route_remove(unsigned gsi)
{
    Error *err = NULL;
    pthread_mutex_lock(&routes_lock);
    route_of_gsi(gsi)->used = false;
    /* A refused table leaves the old route in the kernel, harmless: no
     * irqfd points at its GSI any more. */
    if (!routes_commit_locked(&err)) {
        error_report_err(err);
    }
    pthread_mutex_unlock(&routes_lock);
}

unsigned kvm_msi_routes_used(void)
{
    pthread_mutex_lock(&routes_lock);
    unsigned used = 0;
    for (unsigned i = 0; i < routes_table()->len; i++) {
        used += route_at(i)->used;
    }
    pthread_mutex_unlock(&routes_lock);
    return used;
}
