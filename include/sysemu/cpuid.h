/*
 * The CPUID a vCPU sees: -cpu host|max|qemu64[,+feat,-feat,feat=on|off]
 * [,vendor=...] applied to what KVM supports, plus per-vCPU APIC ids and
 * the -smp topology.
 */
#ifndef SYSEMU_CPUID_H
#define SYSEMU_CPUID_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>
#include "qemu/error.h"
#include "sysemu/machine-config.h"

typedef struct CpuTopology {
    unsigned sockets, cores, threads;   /* per the -smp options */
} CpuTopology;

/* Reject unknown models, unknown feature names and bad vendor strings
 * before anything is created. */
bool cpuid_check_config(const CpuConfig *cpu, Error **errp);

/* The x2APIC/xAPIC id of vCPU cpu_index: socket, core and thread numbers
 * packed in fields as wide as the topology needs (as the SDM's leaf 0xB
 * describes). */
uint32_t cpuid_apic_id(const CpuTopology *topo, unsigned cpu_index);
/* Where vCPU cpu_index sits: socket, core in it, thread in that core
 * (numbered as QEMU's socket-id, core-id, thread-id). */
void cpuid_topo_position(const CpuTopology *topo, unsigned cpu_index, unsigned *socket,
                         unsigned *core, unsigned *thread);

/* The CPUID table for one vCPU, built from KVM_GET_SUPPORTED_CPUID's
 * answer. g_free() the result. NULL and *errp if a requested feature is
 * not supported by KVM on this host. */
struct kvm_cpuid2 *cpuid_build(const struct kvm_cpuid2 *supported,
                               const CpuConfig *cpu, const CpuTopology *topo,
                               unsigned cpu_index, Error **errp);

#endif
