/*
 * The CPUID table of one vCPU: the -cpu model and feature settings applied
 * to what KVM_GET_SUPPORTED_CPUID reports, then the -smp topology and the
 * vCPU's APIC id written into the leaves that describe them. A pure
 * function of its inputs, so every rule here is unit-testable.
 *
 * Register layouts: Intel SDM vol. 2A (CPUID), AMD APM vol. 3 (appendix E),
 * KVM's virt/kvm/x86/cpuid.rst.
 */
#include <stdio.h>      /* machine-config.h uses FILE without including it */
#include <string.h>
#include <glib.h>
#include "sysemu/cpuid.h"
#include "cpuid-features.h"

/* A hard bound on the table we hand to KVM_SET_CPUID2. */
#define CPUID_MAX_ENTRIES 256
/* Room kept for the leaves this file adds to KVM's table: the leaf 0xB
 * levels, brand string, identity leaves and feature words KVM left out. */
#define CPUID_ADDED_ENTRIES 32

#define CPUID_VENDOR_LEN 12
#define CPUID_BRAND_LEN 48

#define LEAF_EXT_BASE   0x80000000u
#define LEAF_HV_BASE    0x40000000u

#define LEAF1_EDX_HTT       (1u << 28)
#define LEAF_B_TYPE_SMT     1u
#define LEAF_B_TYPE_CORE    2u
/* 0x80000001 EDX bits that AMD CPUs mirror from leaf 1 EDX. */
#define AMD_EXT2_ALIASES    0x0183f3ffu
/* XSAVE area of the legacy region plus header, before any component. */
#define XSAVE_LEGACY_SIZE   576u

typedef struct CpuidTable {
    unsigned nent;
    struct kvm_cpuid_entry2 entry[CPUID_MAX_ENTRIES];
} CpuidTable;

/* A named model's CPUID identity and default features (QEMU's values). */
typedef struct CpuModel {
    const char *name;
    /* "host"/"max": all KVM supports, with the host's identity */
    bool passthrough;
    unsigned family, model, stepping;
    uint32_t level, xlevel;
    const char *model_id;
    const char *const *features;    /* NULL-terminated */
} CpuModel;

/* qemu64's flags, plus what QEMU turns on by default under KVM (x2apic and
 * the paravirt features); svm is off under KVM. */
static const char *const qemu64_features[] = {
    "fpu", "de", "pse", "tsc", "msr", "mce", "cx8", "pge", "cmov", "pat",
    "fxsr", "mmx", "sse", "sse2", "pae", "sep", "apic",
    "mtrr", "clflush", "mca", "pse36",
    "pni", "cx16", "x2apic", "hypervisor",
    "lm", "syscall", "nx", "lahf-lm",
    "kvmclock", "kvm-nopiodelay", "kvm-asyncpf", "kvm-steal-time",
    "kvm-pv-eoi", "kvmclock-stable-bit", "kvm-asyncpf-int",
    NULL,
};

static const CpuModel cpu_models[] = {
    { .name = "host", .passthrough = true },
    { .name = "max", .passthrough = true },
    {
        .name = "qemu64",
        .family = 15, .model = 107, .stepping = 1,
        .level = 0xd, .xlevel = 0x8000000a,
        .model_id = "QEMU Virtual CPU version 2.5+",
        .features = qemu64_features,
    },
};

#define REG_BIT(r)  (1u << (r))
#define ALL_REGS    0xfu

/* The leaves a named model takes from KVM's table and which of their
 * registers it keeps; the rest are its identity, its feature words or
 * topology, all written later. Leaves not listed read as zero. */
static const struct {
    uint32_t leaf;
    uint8_t regs;
} named_model_leaves[] = {
    /* The vendor stays the host's, as QEMU does under KVM: KVM cannot
     * emulate SYSENTER on AMD nor SYSCALL on Intel in 32-bit compatibility
     * mode, so a guest must see which CPU it really runs on. */
    { 0x00000000, REG_BIT(CPUID_EBX) | REG_BIT(CPUID_ECX) | REG_BIT(CPUID_EDX) },
    { 0x00000002, ALL_REGS },               /* cache descriptors */
    { 0x00000004, ALL_REGS },               /* deterministic cache params */
    { 0x0000000d, ALL_REGS },               /* XSAVE state components */
    { 0x40000000, ALL_REGS },               /* KVM signature */
    { 0x40000001, ALL_REGS },
    { 0x80000001, REG_BIT(CPUID_EBX) },
    { 0x80000005, ALL_REGS },               /* AMD L1 cache and TLB */
    { 0x80000006, ALL_REGS },               /* L2/L3 cache */
    { 0x80000008, REG_BIT(CPUID_EAX) },     /* address sizes */
    { 0x8000000a, ALL_REGS },               /* SVM, read only with svm on */
};

/* Features that are the VMM's to offer, whatever KVM's table says: the
 * hypervisor bit, and the TSC deadline timer of KVM's in-kernel LAPIC
 * (this VMM always uses the in-kernel irqchip). */
static const char *const vmm_provided_features[] = {
    "hypervisor", "tsc-deadline", NULL,
};

/* XSAVE state components and the feature that uses each. */
static const struct {
    unsigned component;
    const char *feature;
} xsave_components[] = {
    { 2, "avx" },
    { 3, "mpx" }, { 4, "mpx" },
    { 5, "avx512f" }, { 6, "avx512f" }, { 7, "avx512f" },
    { 9, "pku" },
    { 17, "amx-tile" }, { 18, "amx-tile" },
};

/* ---- table access ---- */

static bool leaf_has_subleaves(uint32_t leaf)
{
    return leaf == 0x4 || leaf == 0x7 || leaf == 0xb || leaf == 0xd ||
           leaf == 0x1f || leaf == 0x8000001d;
}

static uint32_t *entry_reg(struct kvm_cpuid_entry2 *e, CpuidReg reg)
{
    switch (reg) {
    case CPUID_EAX:
        return &e->eax;
    case CPUID_EBX:
        return &e->ebx;
    case CPUID_ECX:
        return &e->ecx;
    default:
        return &e->edx;
    }
}

static struct kvm_cpuid_entry2 *table_find(CpuidTable *t, uint32_t leaf,
                                           uint32_t subleaf)
{
    for (unsigned i = 0; i < t->nent; i++) {
        struct kvm_cpuid_entry2 *e = &t->entry[i];
        bool indexed = e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
        if (e->function == leaf && (!indexed || e->index == subleaf)) {
            return e;
        }
    }
    return NULL;
}

/* The entry for leaf/subleaf, added (all zero) if the table lacks it.
 * cpuid_build() keeps CPUID_ADDED_ENTRIES free for these. */
static struct kvm_cpuid_entry2 *table_get(CpuidTable *t, uint32_t leaf,
                                          uint32_t subleaf)
{
    struct kvm_cpuid_entry2 *e = table_find(t, leaf, subleaf);
    if (e) {
        return e;
    }
    g_assert(t->nent < CPUID_MAX_ENTRIES);
    e = &t->entry[t->nent++];
    memset(e, 0, sizeof(*e));
    e->function = leaf;
    if (leaf_has_subleaves(leaf)) {
        e->index = subleaf;
        e->flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
    }
    return e;
}

static void table_remove_if(CpuidTable *t,
                            bool (*doomed)(const struct kvm_cpuid_entry2 *,
                                           const void *),
                            const void *opaque)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < t->nent; i++) {
        if (!doomed(&t->entry[i], opaque)) {
            t->entry[kept++] = t->entry[i];
        }
    }
    t->nent = kept;
}

static bool entry_is_leaf(const struct kvm_cpuid_entry2 *e, const void *leaf)
{
    return e->function == *(const uint32_t *)leaf;
}

static void table_remove_leaf(CpuidTable *t, uint32_t leaf)
{
    table_remove_if(t, entry_is_leaf, &leaf);
}

static void regs_set_string(uint32_t *regs[], unsigned nregs, const char *s)
{
    for (unsigned i = 0; i < nregs; i++) {
        memcpy(regs[i], s + 4 * i, 4);
    }
}

static void regs_get_string(uint32_t *regs[], unsigned nregs, char *s)
{
    for (unsigned i = 0; i < nregs; i++) {
        memcpy(s + 4 * i, regs[i], 4);
    }
}

/* Leaf 0 holds the vendor in EBX, EDX, ECX order. */
static void table_set_vendor(CpuidTable *t, const char *vendor)
{
    struct kvm_cpuid_entry2 *e = table_get(t, 0, 0);
    uint32_t *regs[] = { &e->ebx, &e->edx, &e->ecx };
    regs_set_string(regs, 3, vendor);
}

static bool table_vendor_is_amd(CpuidTable *t)
{
    char vendor[CPUID_VENDOR_LEN + 1] = "";
    struct kvm_cpuid_entry2 *e = table_find(t, 0, 0);
    if (e) {
        uint32_t *regs[] = { &e->ebx, &e->edx, &e->ecx };
        regs_get_string(regs, 3, vendor);
    }
    return !strcmp(vendor, "AuthenticAMD") || !strcmp(vendor, "HygonGenuine");
}

/* ---- feature words ---- */

/* The bits of one feature name; none if the name is unknown (user names
 * are checked by cpuid_check_config() before they get here). */
static FeatureSet features_from_name(const char *name)
{
    FeatureSet set = { 0 };
    cpuid_feature_add(&set, name);
    return set;
}

static FeatureSet features_from_names(const char *const *names)
{
    FeatureSet set = { 0 };
    for (; *names; names++) {
        bool known = cpuid_feature_add(&set, *names);
        g_assert(known);    /* our own tables name only known features */
    }
    return set;
}

static FeatureSet features_read(CpuidTable *t)
{
    FeatureSet set = { 0 };
    for (unsigned w = 0; w < FEATURE_WORDS; w++) {
        const FeatureWordInfo *info = &feature_word_info[w];
        struct kvm_cpuid_entry2 *e = table_find(t, info->leaf, info->subleaf);
        set.word[w] = e ? *entry_reg(e, info->reg) : 0;
    }
    return set;
}

static void features_write(CpuidTable *t, const FeatureSet *set)
{
    for (unsigned w = 0; w < FEATURE_WORDS; w++) {
        const FeatureWordInfo *info = &feature_word_info[w];
        struct kvm_cpuid_entry2 *e = table_find(t, info->leaf, info->subleaf);
        if (!e && set->word[w]) {
            e = table_get(t, info->leaf, info->subleaf);
        }
        if (e) {
            *entry_reg(e, info->reg) = set->word[w];
        }
    }
}

static bool features_intersect(const FeatureSet *a, const FeatureSet *b)
{
    for (unsigned w = 0; w < FEATURE_WORDS; w++) {
        if (a->word[w] & b->word[w]) {
            return true;
        }
    }
    return false;
}

static void features_or(FeatureSet *dst, const FeatureSet *src)
{
    for (unsigned w = 0; w < FEATURE_WORDS; w++) {
        dst->word[w] |= src->word[w];
    }
}

static void features_and(FeatureSet *dst, const FeatureSet *src)
{
    for (unsigned w = 0; w < FEATURE_WORDS; w++) {
        dst->word[w] &= src->word[w];
    }
}

static void features_and_not(FeatureSet *dst, const FeatureSet *src)
{
    for (unsigned w = 0; w < FEATURE_WORDS; w++) {
        dst->word[w] &= ~src->word[w];
    }
}

static bool feature_enabled(const FeatureSet *set, const char *name)
{
    FeatureSet bits = features_from_name(name);
    return features_intersect(set, &bits);
}

/* ---- configuration ---- */

static const CpuModel *cpu_model_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(cpu_models); i++) {
        if (!strcmp(cpu_models[i].name, name)) {
            return &cpu_models[i];
        }
    }
    return NULL;
}

static const char *cpu_model_name(const CpuConfig *cpu)
{
    return cpu->model ? cpu->model : "qemu64";
}

static unsigned cpu_feature_count(const CpuConfig *cpu)
{
    return cpu->features ? cpu->features->len : 0;
}

static const CpuFeatureSetting *cpu_feature(const CpuConfig *cpu, unsigned i)
{
    return &g_array_index(cpu->features, CpuFeatureSetting, i);
}

static bool vendor_valid(const char *vendor)
{
    if (strlen(vendor) != CPUID_VENDOR_LEN) {
        return false;
    }
    for (const char *c = vendor; *c; c++) {
        if (*c < 0x20 || *c > 0x7e) {
            return false;
        }
    }
    return true;
}

bool cpuid_check_config(const CpuConfig *cpu, Error **errp)
{
    const char *model = cpu_model_name(cpu);

    if (!cpu_model_find(model)) {
        error_setg(errp, "-cpu %s: unknown CPU model '%s' "
                   "(supported: host, max, qemu64)", model, model);
        return false;
    }
    for (unsigned i = 0; i < cpu_feature_count(cpu); i++) {
        const CpuFeatureSetting *f = cpu_feature(cpu, i);
        FeatureSet bits = { 0 };
        if (!cpuid_feature_add(&bits, f->name)) {
            error_setg(errp, "-cpu %s,%c%s: unknown CPU feature '%s'",
                       model, f->enabled ? '+' : '-', f->name, f->name);
            return false;
        }
    }
    if (cpu->vendor && !vendor_valid(cpu->vendor)) {
        error_setg(errp, "-cpu %s,vendor=%s: the vendor must be exactly %d "
                   "printable ASCII characters", model, cpu->vendor,
                   CPUID_VENDOR_LEN);
        return false;
    }
    return true;
}

/* The model's defaults and then the +feat/-feat settings in order, each
 * overriding the ones before. Fails if a feature the user asked for (and
 * did not take back later) is not in avail. */
static bool features_choose(const CpuConfig *cpu, const CpuModel *model,
                            const FeatureSet *avail, FeatureSet *out,
                            Error **errp)
{
    FeatureSet chosen = model->passthrough ?
        *avail : features_from_names(model->features);
    FeatureSet requested = { 0 };

    for (unsigned i = 0; i < cpu_feature_count(cpu); i++) {
        const CpuFeatureSetting *f = cpu_feature(cpu, i);
        FeatureSet bits = features_from_name(f->name);
        if (f->enabled) {
            features_or(&chosen, &bits);
            features_or(&requested, &bits);
        } else {
            features_and_not(&chosen, &bits);
            features_and_not(&requested, &bits);
        }
    }

    FeatureSet missing = requested;
    features_and_not(&missing, avail);
    for (unsigned i = 0; i < cpu_feature_count(cpu); i++) {
        const CpuFeatureSetting *f = cpu_feature(cpu, i);
        FeatureSet bits = features_from_name(f->name);
        if (f->enabled && features_intersect(&bits, &missing)) {
            error_setg(errp, "-cpu %s,+%s: feature '%s' is not supported by "
                       "KVM on this host", model->name, f->name, f->name);
            return false;
        }
    }
    /* A model default KVM lacks is silently left out, as in QEMU. */
    features_and(&chosen, avail);
    *out = chosen;
    return true;
}

/* ---- model identity ---- */

static uint32_t cpuid_signature(unsigned family, unsigned model,
                                unsigned stepping)
{
    uint32_t eax = (stepping & 0xf) | (model & 0xf) << 4 |
                   ((model >> 4) & 0xf) << 16;
    if (family > 0xf) {
        eax |= 0xfu << 8 | ((family - 0xf) & 0xff) << 20;
    } else {
        eax |= family << 8;
    }
    return eax;
}

static void table_copy_named_model_leaves(CpuidTable *t,
                                          const struct kvm_cpuid2 *supported)
{
    for (unsigned i = 0; i < supported->nent; i++) {
        const struct kvm_cpuid_entry2 *src = &supported->entries[i];
        for (size_t j = 0; j < G_N_ELEMENTS(named_model_leaves); j++) {
            if (named_model_leaves[j].leaf != src->function) {
                continue;
            }
            struct kvm_cpuid_entry2 *e = &t->entry[t->nent++];
            *e = *src;
            for (CpuidReg r = CPUID_EAX; r <= CPUID_EDX; r++) {
                if (!(named_model_leaves[j].regs & REG_BIT(r))) {
                    *entry_reg(e, r) = 0;
                }
            }
        }
    }
}

static void table_set_named_identity(CpuidTable *t, const CpuModel *model)
{
    uint32_t signature = cpuid_signature(model->family, model->model,
                                         model->stepping);
    char brand[CPUID_BRAND_LEN] = { 0 };

    table_get(t, 0, 0)->eax = model->level;

    struct kvm_cpuid_entry2 *leaf1 = table_get(t, 1, 0);
    leaf1->eax = signature;
    leaf1->ebx = 8 << 8;            /* CLFLUSH line size: 8 * 8 = 64 bytes */

    table_get(t, LEAF_EXT_BASE, 0)->eax = model->xlevel;
    table_get(t, LEAF_EXT_BASE + 1, 0)->eax = signature;

    g_strlcpy(brand, model->model_id, sizeof(brand));
    for (unsigned i = 0; i < 3; i++) {
        struct kvm_cpuid_entry2 *e = table_get(t, LEAF_EXT_BASE + 2 + i, 0);
        uint32_t *regs[] = { &e->eax, &e->ebx, &e->ecx, &e->edx };
        regs_set_string(regs, 4, brand + 16 * i);
    }
}

/* ---- leaves that depend on the chosen features ---- */

/* Leaf 7 subleaf 0 EAX: the highest subleaf there is. */
static void table_fix_leaf7_max_subleaf(CpuidTable *t)
{
    uint32_t max = 0;
    bool any = false;
    for (unsigned i = 0; i < t->nent; i++) {
        if (t->entry[i].function == 7) {
            max = MAX(max, t->entry[i].index);
            any = true;
        }
    }
    if (any) {
        table_get(t, 7, 0)->eax = max;
    }
}

typedef struct XsaveMask {
    uint64_t xcr0, xss;
} XsaveMask;

static bool entry_is_unused_xsave_component(const struct kvm_cpuid_entry2 *e,
                                            const void *opaque)
{
    const XsaveMask *m = opaque;
    if (e->function != 0xd || e->index < 2 || e->index >= 64) {
        return false;
    }
    return !(((m->xcr0 | m->xss) >> e->index) & 1);
}

/* Offer only the XSAVE state of enabled features, so that the guest never
 * sets an XCR0 bit for state it cannot use, and size the area to match. */
static void table_fix_xsave(CpuidTable *t, const FeatureSet *features)
{
    if (!feature_enabled(features, "xsave")) {
        table_remove_leaf(t, 0xd);
        return;
    }
    struct kvm_cpuid_entry2 *leaf = table_find(t, 0xd, 0);
    struct kvm_cpuid_entry2 *sub1 = table_find(t, 0xd, 1);
    if (!leaf) {
        return;
    }
    XsaveMask mask = {
        .xcr0 = (uint64_t)leaf->edx << 32 | leaf->eax,
        .xss = sub1 ? (uint64_t)sub1->edx << 32 | sub1->ecx : 0,
    };
    for (size_t i = 0; i < G_N_ELEMENTS(xsave_components); i++) {
        if (!feature_enabled(features, xsave_components[i].feature)) {
            mask.xcr0 &= ~(1ull << xsave_components[i].component);
        }
    }
    leaf->eax = (uint32_t)mask.xcr0;
    leaf->edx = (uint32_t)(mask.xcr0 >> 32);
    table_remove_if(t, entry_is_unused_xsave_component, &mask);

    /* ECX: the size XSAVE needs with every offered user component on. */
    uint32_t size = XSAVE_LEGACY_SIZE;
    for (unsigned i = 0; i < t->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &t->entry[i];
        if (e->function == 0xd && e->index >= 2 && e->index < 64 &&
            ((mask.xcr0 >> e->index) & 1)) {
            size = MAX(size, e->ebx + e->eax);
        }
    }
    table_find(t, 0xd, 0)->ecx = size;
}

/* ---- topology ---- */

/* Bits needed to number count things: ceil(log2(count)). */
static unsigned field_width(unsigned count)
{
    unsigned width = 0;
    while (width < 32 && (1ull << width) < count) {
        width++;
    }
    return width;
}

typedef struct TopoIds {
    unsigned threads, cores;            /* per core, per socket (>= 1) */
    unsigned thread_width, core_width;
    unsigned thread, core, socket;      /* this vCPU's position */
    uint32_t apic_id;
} TopoIds;

static TopoIds topo_ids(const CpuTopology *topo, unsigned cpu_index)
{
    TopoIds ids = {
        .threads = MAX(topo->threads, 1u),
        .cores = MAX(topo->cores, 1u),
    };
    ids.thread_width = field_width(ids.threads);
    ids.core_width = field_width(ids.cores);
    ids.thread = cpu_index % ids.threads;
    ids.core = cpu_index / ids.threads % ids.cores;
    ids.socket = cpu_index / ids.threads / ids.cores;
    ids.apic_id = ids.thread | ids.core << ids.thread_width |
                  ids.socket << (ids.thread_width + ids.core_width);
    return ids;
}

uint32_t cpuid_apic_id(const CpuTopology *topo, unsigned cpu_index)
{
    return topo_ids(topo, cpu_index).apic_id;
}

void cpuid_topo_position(const CpuTopology *topo, unsigned cpu_index, unsigned *socket,
                         unsigned *core, unsigned *thread)
{
    TopoIds ids = topo_ids(topo, cpu_index);
    *socket = ids.socket;
    *core = ids.core;
    *thread = ids.thread;
}

static void table_set_leaf1_topology(CpuidTable *t, const TopoIds *ids)
{
    unsigned logical = MIN(ids->threads * ids->cores, 0xffu);
    struct kvm_cpuid_entry2 *e = table_get(t, 1, 0);

    e->ebx = (e->ebx & 0xffff) | logical << 16 | (ids->apic_id & 0xff) << 24;
    if (logical > 1) {
        e->edx |= LEAF1_EDX_HTT;
    } else {
        e->edx &= ~LEAF1_EDX_HTT;
    }
}

static void leaf_b_set_level(CpuidTable *t, unsigned subleaf, uint32_t shift,
                             uint32_t count, uint32_t type, uint32_t apic_id)
{
    struct kvm_cpuid_entry2 *e = table_get(t, 0xb, subleaf);
    e->eax = shift;
    e->ebx = count & 0xffff;
    e->ecx = subleaf | type << 8;
    e->edx = apic_id;
}

/* Leaf 0xB, the extended topology Linux reads first. Leaf 0x1F would
 * override it with the host's, so it goes. */
static void table_set_extended_topology(CpuidTable *t, const TopoIds *ids)
{
    table_remove_leaf(t, 0xb);
    table_remove_leaf(t, 0x1f);
    leaf_b_set_level(t, 0, ids->thread_width, ids->threads,
                     LEAF_B_TYPE_SMT, ids->apic_id);
    leaf_b_set_level(t, 1, ids->thread_width + ids->core_width,
                     ids->threads * ids->cores, LEAF_B_TYPE_CORE, ids->apic_id);
    /* Subleaf 2 is the invalid level that ends the list. */
    leaf_b_set_level(t, 2, 0, 0, 0, ids->apic_id);

    struct kvm_cpuid_entry2 *leaf0 = table_get(t, 0, 0);
    leaf0->eax = MAX(leaf0->eax, 0xbu);
}

/* Leaf 4 and AMD's 0x8000001D: EAX[25:14] is the number of logical
 * processors sharing the cache - 1 (L1/L2 per core, L3 per package);
 * leaf 4 EAX[31:26] is cores per package - 1. */
static void table_set_cache_sharing(CpuidTable *t, const TopoIds *ids)
{
    for (unsigned i = 0; i < t->nent; i++) {
        struct kvm_cpuid_entry2 *e = &t->entry[i];
        bool leaf4 = e->function == 4;
        if ((!leaf4 && e->function != 0x8000001d) || (e->eax & 0x1f) == 0) {
            continue;
        }
        unsigned level = (e->eax >> 5) & 0x7;
        unsigned sharing = level >= 3 ? ids->threads * ids->cores
                                      : ids->threads;
        e->eax = (e->eax & ~(0xfffu << 14)) | (MIN(sharing - 1, 0xfffu) << 14);
        if (leaf4) {
            e->eax = (e->eax & ~(0x3fu << 26)) |
                     MIN(ids->cores - 1, 0x3fu) << 26;
        }
    }
}

static void table_set_amd_topology(CpuidTable *t, const TopoIds *ids)
{
    struct kvm_cpuid_entry2 *e = table_find(t, LEAF_EXT_BASE + 8, 0);
    if (e) {
        /* NC: logical processors per package - 1; ApicIdSize: their bits. */
        unsigned nc = MIN(ids->threads * ids->cores - 1, 0xffu);
        unsigned apic_id_size = ids->thread_width + ids->core_width;
        e->ecx = (e->ecx & ~0xf0ffu) | nc | (apic_id_size & 0xf) << 12;
    }
    e = table_find(t, LEAF_EXT_BASE + 0x1e, 0);
    if (e) {
        e->eax = ids->apic_id;
        e->ebx = (ids->core & 0xff) | ((ids->threads - 1) & 0xff) << 8;
        e->ecx = ids->socket & 0xff;    /* node id; one node per socket */
        e->edx = 0;
    }
}

/* AMD CPUs repeat most of leaf 1 EDX in 0x80000001 EDX. */
static void table_set_amd_aliases(CpuidTable *t)
{
    struct kvm_cpuid_entry2 *leaf1 = table_find(t, 1, 0);
    struct kvm_cpuid_entry2 *ext1 = table_find(t, LEAF_EXT_BASE + 1, 0);
    if (leaf1 && ext1) {
        ext1->edx = (ext1->edx & ~AMD_EXT2_ALIASES) |
                    (leaf1->edx & AMD_EXT2_ALIASES);
    }
}

static void table_set_topology(CpuidTable *t, const CpuTopology *topo,
                               unsigned cpu_index)
{
    TopoIds ids = topo_ids(topo, cpu_index);

    table_set_leaf1_topology(t, &ids);
    table_set_extended_topology(t, &ids);
    table_set_cache_sharing(t, &ids);
    if (table_vendor_is_amd(t)) {
        table_set_amd_topology(t, &ids);
        table_set_amd_aliases(t);
    }
}

/* ---- assembly ---- */

typedef struct LeafLimits {
    uint32_t basic, extended;
} LeafLimits;

/* Leaves past the maximum leaf 0 and 0x80000000 report are unreachable. */
static bool entry_out_of_range(const struct kvm_cpuid_entry2 *e,
                               const void *opaque)
{
    const LeafLimits *limits = opaque;
    if (e->function < LEAF_HV_BASE) {
        return e->function > limits->basic;
    }
    if (e->function >= LEAF_EXT_BASE && e->function < 0xc0000000u) {
        return e->function > limits->extended;
    }
    return false;
}

static void table_drop_out_of_range(CpuidTable *t)
{
    struct kvm_cpuid_entry2 *basic = table_find(t, 0, 0);
    struct kvm_cpuid_entry2 *ext = table_find(t, LEAF_EXT_BASE, 0);
    LeafLimits limits = {
        .basic = basic ? basic->eax : 0,
        .extended = ext ? ext->eax : LEAF_EXT_BASE,
    };
    table_remove_if(t, entry_out_of_range, &limits);
}

static struct kvm_cpuid2 *table_to_kvm(const CpuidTable *t)
{
    struct kvm_cpuid2 *out = g_malloc0(sizeof(*out) +
                                       t->nent * sizeof(out->entries[0]));
    out->nent = t->nent;
    memcpy(out->entries, t->entry, t->nent * sizeof(out->entries[0]));
    return out;
}

struct kvm_cpuid2 *cpuid_build(const struct kvm_cpuid2 *supported,
                               const CpuConfig *cpu, const CpuTopology *topo,
                               unsigned cpu_index, Error **errp)
{
    if (!cpuid_check_config(cpu, errp)) {
        return NULL;
    }
    if (supported->nent > CPUID_MAX_ENTRIES - CPUID_ADDED_ENTRIES) {
        error_setg(errp, "KVM reports %u CPUID entries, more than the %d "
                   "this VMM handles", supported->nent,
                   CPUID_MAX_ENTRIES - CPUID_ADDED_ENTRIES);
        return NULL;
    }
    const CpuModel *model = cpu_model_find(cpu_model_name(cpu));
    g_autofree CpuidTable *t = g_new0(CpuidTable, 1);

    t->nent = supported->nent;
    memcpy(t->entry, supported->entries, t->nent * sizeof(t->entry[0]));
    FeatureSet avail = features_read(t);
    FeatureSet vmm = features_from_names(vmm_provided_features);
    features_or(&avail, &vmm);
    FeatureSet features;
    if (!features_choose(cpu, model, &avail, &features, errp)) {
        return NULL;
    }

    if (!model->passthrough) {
        t->nent = 0;
        table_copy_named_model_leaves(t, supported);
        table_set_named_identity(t, model);
    }
    features_write(t, &features);
    table_fix_leaf7_max_subleaf(t);
    table_fix_xsave(t, &features);
    if (cpu->vendor) {
        table_set_vendor(t, cpu->vendor);
    }
    table_set_topology(t, topo, cpu_index);
    table_drop_out_of_range(t);
    return table_to_kvm(t);
}
