/*
 * The accelerator's QMP queries, as QEMU 7.2 answers them with KVM:
 * query-kvm and query-cpus-fast. I/O thread; no device lock involved.
 */
#include "monitor/qmp.h"
#include "monitor/qmp-tables.h"
#include "sysemu/kvm.h"
#include "kvm-internal.h"

static JsonNode *qmp_query_kvm(JsonObject *args, Error **errp)
{
    JsonObject *ret = json_object_new();
    /* KVM is this VMM's only accelerator: always built in, and in use
     * once the VM exists. */
    json_object_set_boolean_member(ret, "enabled", kvm_state.vm_fd >= 0);
    json_object_set_boolean_member(ret, "present", true);
    return qmp_node_object(ret);
}

/* QEMU 7.2's pc machine puts its CPUs in /machine/unattached as it creates
 * them, and one other object created with the first CPU takes the slot
 * after it: CPU 0 is device[0], CPU n > 0 is device[n + 1]. */
static char *vcpu_qom_path(unsigned index)
{
    return g_strdup_printf("/machine/unattached/device[%u]", index ? index + 1 : 0);
}

static JsonObject *vcpu_entry(unsigned index)
{
    KVMVcpuInfo info;
    kvm_vcpu_info(index, &info);
    JsonObject *props = json_object_new();
    json_object_set_int_member(props, "core-id", info.core);
    json_object_set_int_member(props, "thread-id", info.thread);
    json_object_set_int_member(props, "socket-id", info.socket);

    JsonObject *cpu = json_object_new();
    g_autofree char *qom_path = vcpu_qom_path(index);
    json_object_set_int_member(cpu, "thread-id", info.thread_id);
    json_object_set_object_member(cpu, "props", props);
    json_object_set_string_member(cpu, "qom-path", qom_path);
    json_object_set_int_member(cpu, "cpu-index", index);
    json_object_set_string_member(cpu, "target", "x86_64");
    return cpu;
}

static JsonNode *qmp_query_cpus_fast(JsonObject *args, Error **errp)
{
    JsonArray *list = json_array_new();
    for (unsigned i = 0; i < kvm_vcpu_count(); i++) {
        json_array_add_object_element(list, vcpu_entry(i));
    }
    return qmp_node_array(list);
}

const QmpCommandInfo kvm_qmp_commands[] = {
    { "query-kvm", qmp_query_kvm },
    { "query-cpus-fast", qmp_query_cpus_fast },
    { NULL },
};
