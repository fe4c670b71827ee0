/*
 * The GSI routing table (sysemu/kvm-msi-route.h) against a fake kernel that
 * keeps the last table committed: MSI routes from GSI 24 up, allocated,
 * updated and freed, always committed together with the PC's irqchip
 * routes; exhaustion and a refused table; concurrent users.
 */
#include <pthread.h>
#include <string.h>
#include <glib.h>
#include "sysemu/kvm-msi-route.h"

#define MAX_MSI_ROUTES 4

static struct {
    GMutex lock;
    GArray *entries;            /* struct kvm_irq_routing_entry, last commit */
    unsigned commits;
    bool refuse;
} fake;

static bool fake_commit(void *opaque, const struct kvm_irq_routing *table, Error **errp)
{
    g_mutex_lock(&fake.lock);
    bool ok = !fake.refuse;
    if (ok) {
        g_array_set_size(fake.entries, 0);
        g_array_append_vals(fake.entries, table->entries, table->nr);
        fake.commits++;
    } else {
        error_setg(errp, "KVM_SET_GSI_ROUTING: refused");
    }
    g_mutex_unlock(&fake.lock);
    return ok;
}

static const struct kvm_irq_routing_entry *committed(unsigned gsi, uint32_t type)
{
    for (guint i = 0; i < fake.entries->len; i++) {
        const struct kvm_irq_routing_entry *e =
            &g_array_index(fake.entries, struct kvm_irq_routing_entry, i);
        if (e->gsi == gsi && e->type == type) {
            return e;
        }
    }
    return NULL;
}

static const struct kvm_irq_routing_entry *committed_irqchip(unsigned gsi, unsigned chip)
{
    for (guint i = 0; i < fake.entries->len; i++) {
        const struct kvm_irq_routing_entry *e =
            &g_array_index(fake.entries, struct kvm_irq_routing_entry, i);
        if (e->gsi == gsi && e->type == KVM_IRQ_ROUTING_IRQCHIP && e->u.irqchip.irqchip == chip) {
            return e;
        }
    }
    return NULL;
}

static unsigned committed_msi_routes(void)
{
    unsigned n = 0;
    for (guint i = 0; i < fake.entries->len; i++) {
        n += g_array_index(fake.entries, struct kvm_irq_routing_entry, i).type ==
             KVM_IRQ_ROUTING_MSI;
    }
    return n;
}

/* The PC's routes are in every table, whatever the MSI routes do. */
static void assert_pc_routes_committed(void)
{
    for (unsigned gsi = 0; gsi < 16; gsi++) {
        const struct kvm_irq_routing_entry *pic =
            committed_irqchip(gsi, gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE);
        if (gsi == 2) {
            g_assert_null(pic);
        } else {
            g_assert_nonnull(pic);
            g_assert_cmpuint(pic->u.irqchip.pin, ==, gsi % 8);
        }
    }
    for (unsigned gsi = 0; gsi < IRQ_MAX_GSI; gsi++) {
        const struct kvm_irq_routing_entry *ioapic = committed_irqchip(gsi, KVM_IRQCHIP_IOAPIC);
        if (gsi == 2) {
            g_assert_null(ioapic);
        } else {
            g_assert_nonnull(ioapic);
            g_assert_cmpuint(ioapic->u.irqchip.pin, ==, gsi == 0 ? 2 : gsi);
        }
    }
}

static void assert_msi_route(unsigned gsi, uint64_t address, uint32_t data)
{
    const struct kvm_irq_routing_entry *e = committed(gsi, KVM_IRQ_ROUTING_MSI);
    g_assert_nonnull(e);
    g_assert_cmphex(e->u.msi.address_lo, ==, (uint32_t)address);
    g_assert_cmphex(e->u.msi.address_hi, ==, (uint32_t)(address >> 32));
    g_assert_cmphex(e->u.msi.data, ==, data);
}

static void test_pc_routes_alone(void)
{
    Error *err = NULL;
    g_assert_true(kvm_routing_commit(&err));
    assert_pc_routes_committed();
    g_assert_cmpuint(committed_msi_routes(), ==, 0);
}

static void test_add_update_remove(void)
{
    Error *err = NULL;
    int a = kvm_msi_route_add(0xfee00000, 0x41, &err);
    int b = kvm_msi_route_add(0xfee01000, 0x42, &err);
    g_assert_null(err);
    g_assert_cmpint(a, ==, KVM_MSI_ROUTE_FIRST_GSI);
    g_assert_cmpint(b, ==, KVM_MSI_ROUTE_FIRST_GSI + 1);
    assert_pc_routes_committed();
    assert_msi_route(a, 0xfee00000, 0x41);
    assert_msi_route(b, 0xfee01000, 0x42);

    /* A new message is committed; the same one costs no commit. */
    unsigned commits = fake.commits;
    g_assert_true(kvm_msi_route_update(a, 0x1fee02000ULL, 0x43, &err));
    assert_msi_route(a, 0x1fee02000ULL, 0x43);
    g_assert_cmpuint(fake.commits, ==, commits + 1);
    g_assert_true(kvm_msi_route_update(a, 0x1fee02000ULL, 0x43, &err));
    g_assert_cmpuint(fake.commits, ==, commits + 1);

    /* Freed: gone from the kernel's table, its GSI handed out again. */
    kvm_msi_route_remove(a);
    g_assert_null(committed(a, KVM_IRQ_ROUTING_MSI));
    assert_msi_route(b, 0xfee01000, 0x42);
    assert_pc_routes_committed();
    g_assert_cmpint(kvm_msi_route_add(0xfee00000, 0x44, &err), ==, a);
    assert_msi_route(a, 0xfee00000, 0x44);
    kvm_msi_route_remove(a);
    kvm_msi_route_remove(b);
    g_assert_cmpuint(committed_msi_routes(), ==, 0);
    g_assert_cmpuint(kvm_msi_routes_used(), ==, 0);
}

static void test_exhaustion(void)
{
    Error *err = NULL;
    int gsis[MAX_MSI_ROUTES];
    for (unsigned i = 0; i < MAX_MSI_ROUTES; i++) {
        gsis[i] = kvm_msi_route_add(0xfee00000, 0x50 + i, &err);
        g_assert_cmpint(gsis[i], >=, KVM_MSI_ROUTE_FIRST_GSI);
    }
    g_assert_cmpint(kvm_msi_route_add(0xfee00000, 0x60, &err), ==, -1);
    g_assert_cmpstr(err->msg, ==, "all 4 MSI routes are taken");
    error_free(err);
    err = NULL;
    g_assert_cmpuint(committed_msi_routes(), ==, MAX_MSI_ROUTES);
    for (unsigned i = 0; i < MAX_MSI_ROUTES; i++) {
        kvm_msi_route_remove(gsis[i]);
    }
}

static void test_refused_table_changes_nothing(void)
{
    Error *err = NULL;
    int a = kvm_msi_route_add(0xfee00000, 0x70, &err);
    fake.refuse = true;
    g_assert_cmpint(kvm_msi_route_add(0xfee00000, 0x71, &err), ==, -1);
    g_assert_nonnull(strstr(err->msg, "refused"));
    error_free(err);
    err = NULL;
    g_assert_false(kvm_msi_route_update(a, 0xfee00000, 0x72, &err));
    error_free(err);
    err = NULL;
    fake.refuse = false;
    /* The refused update left the old message: the next commit has it. */
    g_assert_cmpuint(kvm_msi_routes_used(), ==, 1);
    g_assert_true(kvm_routing_commit(&err));
    assert_msi_route(a, 0xfee00000, 0x70);
    g_assert_cmpuint(committed_msi_routes(), ==, 1);
    kvm_msi_route_remove(a);
}

/* vCPU threads change routes at once (MSI-X table writes, each under its
 * own device's lock): every commit is a whole, consistent table, and the
 * last one holds each thread's last message. */
#define THREADS 4
#define ROUNDS 200

static void *route_churn(void *opaque)
{
    unsigned id = GPOINTER_TO_UINT(opaque);
    Error *err = NULL;
    int gsi = kvm_msi_route_add(0xfee00000, id << 16, &err);
    g_assert_cmpint(gsi, >=, KVM_MSI_ROUTE_FIRST_GSI);
    for (unsigned round = 1; round <= ROUNDS; round++) {
        g_assert_true(kvm_msi_route_update(gsi, 0xfee00000, id << 16 | round, &err));
    }
    return GINT_TO_POINTER(gsi);
}

static void test_concurrent_updates(void)
{
    pthread_t threads[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_create(&threads[i], NULL, route_churn, GUINT_TO_POINTER(i));
    }
    int gsis[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        void *gsi;
        pthread_join(threads[i], &gsi);
        gsis[i] = GPOINTER_TO_INT(gsi);
    }
    assert_pc_routes_committed();
    g_assert_cmpuint(committed_msi_routes(), ==, THREADS);
    for (unsigned i = 0; i < THREADS; i++) {
        assert_msi_route(gsis[i], 0xfee00000, i << 16 | ROUNDS);
        kvm_msi_route_remove(gsis[i]);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    fake.entries = g_array_new(FALSE, FALSE, sizeof(struct kvm_irq_routing_entry));
    kvm_routing_set_backend(fake_commit, NULL, MAX_MSI_ROUTES);
    g_test_add_func("/msi-route/pc-routes-alone", test_pc_routes_alone);
    g_test_add_func("/msi-route/add-update-remove", test_add_update_remove);
    g_test_add_func("/msi-route/exhaustion", test_exhaustion);
    g_test_add_func("/msi-route/refused-table-changes-nothing", test_refused_table_changes_nothing);
    g_test_add_func("/msi-route/concurrent-updates", test_concurrent_updates);
    return g_test_run();
}
