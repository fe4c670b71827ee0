/*
 * CPUID table construction: models, feature settings, vendor, topology,
 * against fake KVM_GET_SUPPORTED_CPUID answers shaped like an Intel and
 * an AMD host, and once against the real /dev/kvm when there is one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <glib.h>
#include "sysemu/cpuid.h"

#define BIT(n) (1u << (n))
#define INDEXED KVM_CPUID_FLAG_SIGNIFCANT_INDEX

/* Leaf 1 ECX / EDX, leaf 7 EBX, 0x80000001 ECX/EDX bits used below. */
#define ECX_PNI         BIT(0)
#define ECX_SSSE3       BIT(9)
#define ECX_CX16        BIT(13)
#define ECX_SSE41       BIT(19)
#define ECX_SSE42       BIT(20)
#define ECX_X2APIC      BIT(21)
#define ECX_POPCNT      BIT(23)
#define ECX_TSC_DL      BIT(24)
#define ECX_XSAVE       BIT(26)
#define ECX_AVX         BIT(28)
#define ECX_HYPERVISOR  BIT(31)
#define EDX_BASE        0x078bfbffu     /* fpu..sse2 minus ss/ht/tm/pbe */
#define EDX_HTT         BIT(28)
#define EBX7_AVX2       BIT(5)
#define EBX7_AVX512F    BIT(16)
#define EXT_ECX_LAHF    BIT(0)
#define EXT_ECX_SVM     BIT(2)
#define EXT_ECX_SSE4A   BIT(6)
#define EXT_EDX_SYSCALL BIT(11)
#define EXT_EDX_NX      BIT(20)
#define EXT_EDX_LM      BIT(29)
#define KVM_CLOCK_BITS  (BIT(0) | BIT(3))
#define KVM_PV_UNHALT   BIT(7)

#define SSE_ECX (ECX_PNI | ECX_SSSE3 | ECX_CX16 | ECX_SSE41 | ECX_SSE42 | \
                 ECX_X2APIC | ECX_POPCNT | ECX_XSAVE | ECX_AVX)

static const struct kvm_cpuid_entry2 intel_entries[] = {
    { .function = 0, .eax = 0x16,
      .ebx = 0x756e6547, .edx = 0x49656e69, .ecx = 0x6c65746e },
    { .function = 1, .eax = 0x000506e3, .ebx = 0x05100800,
      .ecx = SSE_ECX | BIT(1) | BIT(12) | BIT(17) | BIT(22) | BIT(25) |
             BIT(29) | BIT(30),
      .edx = EDX_BASE | EDX_HTT },
    /* L1d, L1i, L2, L3, end of list: as a 4-core, 2-thread host */
    { .function = 4, .index = 0, .flags = INDEXED, .eax = 0x1c004121 },
    { .function = 4, .index = 1, .flags = INDEXED, .eax = 0x1c004122 },
    { .function = 4, .index = 2, .flags = INDEXED, .eax = 0x1c004143 },
    { .function = 4, .index = 3, .flags = INDEXED, .eax = 0x1c03c163 },
    { .function = 4, .index = 4, .flags = INDEXED },
    { .function = 6, .eax = BIT(2) },
    { .function = 7, .index = 0, .flags = INDEXED, .eax = 0,
      .ebx = BIT(0) | BIT(3) | EBX7_AVX2 | BIT(7) | BIT(8) | BIT(9) |
             BIT(10) | BIT(18) | BIT(19) | BIT(20) | BIT(23),
      .ecx = BIT(2), .edx = BIT(10) | BIT(26) | BIT(29) },
    { .function = 0xb, .index = 0, .flags = INDEXED,
      .eax = 1, .ebx = 2, .ecx = 0x100, .edx = 5 },
    { .function = 0xb, .index = 1, .flags = INDEXED,
      .eax = 4, .ebx = 8, .ecx = 0x201, .edx = 5 },
    { .function = 0xb, .index = 2, .flags = INDEXED, .ecx = 2, .edx = 5 },
    { .function = 0xd, .index = 0, .flags = INDEXED,
      .eax = 0x7, .ebx = 0x340, .ecx = 0x340 },
    { .function = 0xd, .index = 1, .flags = INDEXED, .eax = 0xf },
    { .function = 0xd, .index = 2, .flags = INDEXED, .eax = 256, .ebx = 576 },
    { .function = 0x1f, .index = 0, .flags = INDEXED,
      .eax = 1, .ebx = 2, .ecx = 0x100, .edx = 5 },
    { .function = 0x40000000, .eax = 0x40000001,
      .ebx = 0x4b4d564b, .ecx = 0x564b4d56, .edx = 0x4d },
    { .function = 0x40000001, .eax = 0x01007afb },
    { .function = 0x80000000, .eax = 0x80000008 },
    { .function = 0x80000001, .ecx = EXT_ECX_LAHF | BIT(5) | BIT(8),
      .edx = EXT_EDX_SYSCALL | EXT_EDX_NX | BIT(26) | BIT(27) | EXT_EDX_LM },
    { .function = 0x80000002, .eax = 0x65746e49 },
    { .function = 0x80000006, .ecx = 0x01006040 },
    { .function = 0x80000008, .eax = 0x3027 },
};

/* An older AMD host: no AVX2, no leaf 0xB, topology via topoext. */
static const struct kvm_cpuid_entry2 amd_entries[] = {
    { .function = 0, .eax = 0xd,
      .ebx = 0x68747541, .edx = 0x69746e65, .ecx = 0x444d4163 },
    { .function = 1, .eax = 0x00800f12, .ebx = 0x0b100800,
      .ecx = SSE_ECX, .edx = EDX_BASE | EDX_HTT },
    { .function = 7, .index = 0, .flags = INDEXED,
      .ebx = BIT(0) | BIT(3) | BIT(7) | BIT(8) },
    { .function = 0xd, .index = 0, .flags = INDEXED,
      .eax = 0x7, .ebx = 0x340, .ecx = 0x340 },
    { .function = 0xd, .index = 1, .flags = INDEXED, .eax = 0x1 },
    { .function = 0xd, .index = 2, .flags = INDEXED, .eax = 256, .ebx = 576 },
    { .function = 0x40000000, .eax = 0x40000001,
      .ebx = 0x4b4d564b, .ecx = 0x564b4d56, .edx = 0x4d },
    { .function = 0x40000001, .eax = 0x01007afb },
    { .function = 0x80000000, .eax = 0x8000001f },
    { .function = 0x80000001, .eax = 0x00800f12,
      .ecx = EXT_ECX_LAHF | BIT(1) | EXT_ECX_SVM | BIT(5) | EXT_ECX_SSE4A |
             BIT(22),
      .edx = EXT_EDX_SYSCALL | EXT_EDX_NX | EXT_EDX_LM | 0x0183f3ff },
    { .function = 0x80000008, .eax = 0x3030, .ebx = BIT(12),
      .ecx = 0x400f },
    { .function = 0x8000001d, .index = 0, .flags = INDEXED, .eax = 0x4121 },
    { .function = 0x8000001d, .index = 1, .flags = INDEXED, .eax = 0x4143 },
    { .function = 0x8000001d, .index = 2, .flags = INDEXED, .eax = 0x3c163 },
    { .function = 0x8000001d, .index = 3, .flags = INDEXED },
    { .function = 0x8000001e, .eax = 3, .ebx = 0x101, .ecx = 0 },
};

static struct kvm_cpuid2 *table_new(const struct kvm_cpuid_entry2 *entries,
                                    size_t n)
{
    struct kvm_cpuid2 *t = g_malloc0(sizeof(*t) + n * sizeof(entries[0]));
    t->nent = n;
    memcpy(t->entries, entries, n * sizeof(entries[0]));
    return t;
}

static struct kvm_cpuid2 *intel_table(void)
{
    return table_new(intel_entries, G_N_ELEMENTS(intel_entries));
}

static struct kvm_cpuid2 *amd_table(void)
{
    return table_new(amd_entries, G_N_ELEMENTS(amd_entries));
}

/* settings: "+a,-b,c=on,d=off" as -cpu would have split them. */
static CpuConfig cpu_config(const char *model, const char *settings,
                            const char *vendor)
{
    CpuConfig cpu = {
        .model = g_strdup(model),
        .features = g_array_new(false, true, sizeof(CpuFeatureSetting)),
        .vendor = g_strdup(vendor),
    };
    g_auto(GStrv) items = g_strsplit(settings ? settings : "", ",", -1);
    for (char **item = items; *item && **item; item++) {
        CpuFeatureSetting f;
        if (**item == '+' || **item == '-') {
            f.name = g_strdup(*item + 1);
            f.enabled = **item == '+';
        } else {
            char *eq = strchr(*item, '=');
            g_assert_nonnull(eq);
            f.name = g_strndup(*item, eq - *item);
            f.enabled = !strcmp(eq + 1, "on");
        }
        g_array_append_val(cpu.features, f);
    }
    return cpu;
}

static void cpu_config_free(CpuConfig *cpu)
{
    for (unsigned i = 0; i < cpu->features->len; i++) {
        g_free(g_array_index(cpu->features, CpuFeatureSetting, i).name);
    }
    g_array_free(cpu->features, true);
    g_free(cpu->model);
    g_free(cpu->vendor);
}

static const CpuTopology one_cpu = { 1, 1, 1 };

static struct kvm_cpuid2 *build_topo(const struct kvm_cpuid2 *supported,
                                     const char *model, const char *settings,
                                     const char *vendor,
                                     const CpuTopology *topo, unsigned index)
{
    CpuConfig cpu = cpu_config(model, settings, vendor);
    Error *err = NULL;
    struct kvm_cpuid2 *t = cpuid_build(supported, &cpu, topo, index, &err);
    if (err) {
        g_test_message("unexpected error: %s", err->msg);
    }
    g_assert_null(err);
    g_assert_nonnull(t);
    cpu_config_free(&cpu);
    return t;
}

static struct kvm_cpuid2 *build(const struct kvm_cpuid2 *supported,
                                const char *model, const char *settings)
{
    return build_topo(supported, model, settings, NULL, &one_cpu, 0);
}

/* The message cpuid_build() fails with (g_free it). */
static char *build_error(const struct kvm_cpuid2 *supported, const char *model,
                         const char *settings, const char *vendor)
{
    CpuConfig cpu = cpu_config(model, settings, vendor);
    Error *err = NULL;
    struct kvm_cpuid2 *t = cpuid_build(supported, &cpu, &one_cpu, 0, &err);
    g_assert_null(t);
    g_assert_nonnull(err);
    char *msg = g_strdup(err->msg);
    error_free(err);
    cpu_config_free(&cpu);
    return msg;
}

static char *check_error(const char *model, const char *settings,
                         const char *vendor)
{
    CpuConfig cpu = cpu_config(model, settings, vendor);
    Error *err = NULL;
    g_assert_false(cpuid_check_config(&cpu, &err));
    g_assert_nonnull(err);
    char *msg = g_strdup(err->msg);
    error_free(err);
    cpu_config_free(&cpu);
    return msg;
}

static const struct kvm_cpuid_entry2 *find(const struct kvm_cpuid2 *t,
                                           uint32_t leaf, uint32_t subleaf)
{
    for (unsigned i = 0; i < t->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &t->entries[i];
        if (e->function == leaf &&
            (!(e->flags & INDEXED) || e->index == subleaf)) {
            return e;
        }
    }
    return NULL;
}

static const struct kvm_cpuid_entry2 *get(const struct kvm_cpuid2 *t,
                                          uint32_t leaf, uint32_t subleaf)
{
    const struct kvm_cpuid_entry2 *e = find(t, leaf, subleaf);
    if (!e) {
        g_test_message("no CPUID entry %#x.%u", leaf, subleaf);
    }
    g_assert_nonnull(e);
    return e;
}

static void vendor_of(const struct kvm_cpuid2 *t, char vendor[13])
{
    const struct kvm_cpuid_entry2 *e = get(t, 0, 0);
    memcpy(vendor, &e->ebx, 4);
    memcpy(vendor + 4, &e->edx, 4);
    memcpy(vendor + 8, &e->ecx, 4);
    vendor[12] = 0;
}

/* Family and model as the SDM says software computes them from leaf 1. */
static unsigned display_family(uint32_t eax)
{
    unsigned family = (eax >> 8) & 0xf;
    return family == 0xf ? family + ((eax >> 20) & 0xff) : family;
}

static unsigned display_model(uint32_t eax)
{
    unsigned family = (eax >> 8) & 0xf;
    unsigned model = (eax >> 4) & 0xf;
    return family == 6 || family == 0xf ? model | ((eax >> 16) & 0xf) << 4
                                        : model;
}

/* Every table: no duplicate entries, subleaf-indexed leaves flagged, and
 * nothing past the maximum leaves. */
static void assert_well_formed(const struct kvm_cpuid2 *t)
{
    uint32_t level = get(t, 0, 0)->eax;
    const struct kvm_cpuid_entry2 *ext = find(t, 0x80000000, 0);

    g_assert_cmpuint(t->nent, <=, 256);
    for (unsigned i = 0; i < t->nent; i++) {
        const struct kvm_cpuid_entry2 *e = &t->entries[i];
        uint32_t leaf = e->function;
        if (leaf == 4 || leaf == 7 || leaf == 0xb || leaf == 0xd ||
            leaf == 0x8000001d) {
            g_assert_true(e->flags & INDEXED);
        }
        if (leaf < 0x40000000) {
            g_assert_cmphex(leaf, <=, level);
        } else if (leaf >= 0x80000000) {
            g_assert_nonnull(ext);
            g_assert_cmphex(leaf, <=, ext->eax);
        }
        for (unsigned j = i + 1; j < t->nent; j++) {
            g_assert_false(t->entries[j].function == leaf &&
                           t->entries[j].index == e->index);
        }
    }
}

static void test_qemu64_identity(void)
{
    g_autofree struct kvm_cpuid2 *sup = intel_table();
    g_autofree struct kvm_cpuid2 *t = build(sup, "qemu64", NULL);
    char vendor[13];
    char brand[49] = "";

    assert_well_formed(t);
    vendor_of(t, vendor);
    /* The host's vendor (here the Intel-like table's), as QEMU under KVM. */
    g_assert_cmpstr(vendor, ==, "GenuineIntel");
    uint32_t eax = get(t, 1, 0)->eax;
    g_assert_cmpuint(display_family(eax), ==, 15);
    g_assert_cmpuint(display_model(eax), ==, 107);
    g_assert_cmpuint(eax & 0xf, ==, 1);
    g_assert_cmphex(get(t, 0, 0)->eax, ==, 0xd);
    g_assert_cmphex(get(t, 0x80000000, 0)->eax, ==, 0x8000000a);
    for (unsigned i = 0; i < 3; i++) {
        memcpy(brand + 16 * i, &get(t, 0x80000002 + i, 0)->eax, 16);
    }
    g_assert_cmpstr(brand, ==, "QEMU Virtual CPU version 2.5+");
}

static void test_qemu64_features(void)
{
    g_autofree struct kvm_cpuid2 *sup = intel_table();
    g_autofree struct kvm_cpuid2 *t = build(sup, "qemu64", NULL);
    const struct kvm_cpuid_entry2 *leaf1 = get(t, 1, 0);
    const struct kvm_cpuid_entry2 *ext1 = get(t, 0x80000001, 0);

    g_assert_cmphex(leaf1->edx & ~EDX_HTT, ==, EDX_BASE & ~BIT(1));
    g_assert_cmphex(leaf1->ecx, ==,
                    ECX_PNI | ECX_CX16 | ECX_X2APIC | ECX_HYPERVISOR);
    /* Intel host, so Intel vendor: 0x80000001 EDX has only its own flags */
    g_assert_cmphex(ext1->edx, ==, EXT_EDX_SYSCALL | EXT_EDX_NX | EXT_EDX_LM);
    g_assert_cmphex(ext1->ecx, ==, EXT_ECX_LAHF);
    /* AMD host, AMD vendor: 0x80000001 EDX repeats leaf 1's flags */
    g_autofree struct kvm_cpuid2 *amd_sup = amd_table();
    g_autofree struct kvm_cpuid2 *amd = build(amd_sup, "qemu64", NULL);
    g_assert_cmphex(get(amd, 0x80000001, 0)->edx, ==,
                    EXT_EDX_SYSCALL | EXT_EDX_NX | EXT_EDX_LM |
                    (get(amd, 1, 0)->edx & 0x0183f3ff));
    /* leaf 7 features the host has are not in qemu64 */
    const struct kvm_cpuid_entry2 *leaf7 = find(t, 7, 0);
    g_assert_true(!leaf7 || (!leaf7->ebx && !leaf7->ecx && !leaf7->edx));
    /* no XSAVE: no XSAVE leaf */
    g_assert_null(find(t, 0xd, 0));
    /* KVM paravirt: QEMU's defaults, not pv-unhalt */
    uint32_t kvm = get(t, 0x40000001, 0)->eax;
    g_assert_cmphex(kvm & KVM_CLOCK_BITS, ==, KVM_CLOCK_BITS);
    g_assert_cmphex(kvm & BIT(24), ==, BIT(24));
    g_assert_cmphex(kvm & KVM_PV_UNHALT, ==, 0);
    g_assert_cmphex(get(t, 0x40000000, 0)->ebx, ==, 0x4b4d564b);
    /* host's physical address width, nothing else of its 0x80000008 */
    g_assert_cmphex(get(t, 0x80000008, 0)->eax, ==, 0x3027);

    /* svm is supported by the AMD host but off under KVM, as in QEMU */
    g_assert_cmphex(get(amd, 0x80000001, 0)->ecx, ==, EXT_ECX_LAHF);
}

static void test_host_passthrough(void)
{
    g_autofree struct kvm_cpuid2 *intel_sup = intel_table();
    g_autofree struct kvm_cpuid2 *amd_sup = amd_table();
    g_autofree struct kvm_cpuid2 *intel = build(intel_sup, "host", NULL);
    g_autofree struct kvm_cpuid2 *amd = build(amd_sup, "max", NULL);
    char vendor[13];

    assert_well_formed(intel);
    assert_well_formed(amd);
    vendor_of(intel, vendor);
    g_assert_cmpstr(vendor, ==, "GenuineIntel");
    vendor_of(amd, vendor);
    g_assert_cmpstr(vendor, ==, "AuthenticAMD");
    g_assert_cmphex(get(intel, 1, 0)->eax, ==, 0x000506e3);
    g_assert_cmphex(get(amd, 1, 0)->eax, ==, 0x00800f12);
    g_assert_cmphex(get(intel, 0, 0)->eax, ==, 0x16);
    /* every supported feature, plus what the VMM itself provides */
    g_assert_cmphex(get(intel, 1, 0)->ecx, ==,
                    intel_entries[1].ecx | ECX_HYPERVISOR | ECX_TSC_DL);
    g_assert_cmphex(get(intel, 7, 0)->ebx, ==, intel_entries[8].ebx);
    g_assert_cmphex(get(intel, 0x40000001, 0)->eax, ==, 0x01007afb);
    g_assert_cmphex(get(amd, 0x80000001, 0)->ecx, ==, amd_entries[9].ecx);
    g_assert_cmphex(get(intel, 0xd, 0)->eax, ==, 0x7);
    g_assert_nonnull(find(intel, 0xd, 2));
    /* the host's own topology leaf 0x1F would override ours */
    g_assert_null(find(intel, 0x1f, 0));
}

static void test_plus_feature(void)
{
    g_autofree struct kvm_cpuid2 *intel_sup = intel_table();
    g_autofree struct kvm_cpuid2 *amd_sup = amd_table();

    g_autofree struct kvm_cpuid2 *t = build(intel_sup, "qemu64", "+avx2");
    g_assert_cmphex(get(t, 7, 0)->ebx, ==, EBX7_AVX2);
    g_assert_cmphex(get(t, 7, 0)->eax, ==, 0);
    g_autofree struct kvm_cpuid2 *on = build(intel_sup, "qemu64", "avx2=on");
    g_assert_cmphex(get(on, 7, 0)->ebx, ==, EBX7_AVX2);

    g_autofree char *msg = build_error(amd_sup, "qemu64", "+avx2", NULL);
    g_assert_cmpstr(msg, ==, "-cpu qemu64,+avx2: feature 'avx2' is not "
                    "supported by KVM on this host");
    g_autofree char *msg512 = build_error(intel_sup, "host", "+avx512f", NULL);
    g_assert_nonnull(strstr(msg512, "'avx512f' is not supported by KVM"));
}

static void test_later_setting_wins(void)
{
    g_autofree struct kvm_cpuid2 *amd_sup = amd_table();
    g_autofree struct kvm_cpuid2 *intel_sup = intel_table();

    /* an unsupported feature asked for and then taken back is no error */
    g_autofree struct kvm_cpuid2 *t = build(amd_sup, "qemu64", "+avx2,-avx2");
    const struct kvm_cpuid_entry2 *leaf7 = find(t, 7, 0);
    g_assert_true(!leaf7 || !(leaf7->ebx & EBX7_AVX2));

    g_autofree struct kvm_cpuid2 *off_on =
        build(intel_sup, "host", "-avx2,avx2=on");
    g_assert_cmphex(get(off_on, 7, 0)->ebx & EBX7_AVX2, ==, EBX7_AVX2);
    g_autofree struct kvm_cpuid2 *on_off =
        build(intel_sup, "qemu64", "+popcnt,popcnt=off");
    g_assert_cmphex(get(on_off, 1, 0)->ecx & ECX_POPCNT, ==, 0);
}

static void test_minus_feature_spellings(void)
{
    g_autofree struct kvm_cpuid2 *sup = intel_table();
    static const char *const spellings[] = {
        "-sse4.2", "-sse4_2", "-sse4-2", "sse4.2=off", "sse4_2=off",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(spellings); i++) {
        g_autofree struct kvm_cpuid2 *t = build(sup, "host", spellings[i]);
        uint32_t ecx = get(t, 1, 0)->ecx;
        g_assert_cmphex(ecx & ECX_SSE42, ==, 0);
        g_assert_cmphex(ecx & ECX_SSE41, ==, ECX_SSE41);
    }
    g_autofree struct kvm_cpuid2 *plus = build(sup, "qemu64",
                                               "+sse4_1,+sse4.2,+lahf_lm");
    g_assert_cmphex(get(plus, 1, 0)->ecx & (ECX_SSE41 | ECX_SSE42), ==,
                    ECX_SSE41 | ECX_SSE42);
    /* QEMU's aliases: sse3 is pni, kvmclock is two bits */
    g_autofree struct kvm_cpuid2 *alias = build(sup, "host", "-sse3,-kvmclock");
    g_assert_cmphex(get(alias, 1, 0)->ecx & ECX_PNI, ==, 0);
    g_assert_cmphex(get(alias, 0x40000001, 0)->eax & KVM_CLOCK_BITS, ==, 0);
}

static void test_unknown_feature(void)
{
    g_autofree char *msg = check_error("qemu64", "+foo", NULL);
    g_assert_cmpstr(msg, ==, "-cpu qemu64,+foo: unknown CPU feature 'foo'");
    g_autofree char *off = check_error("host", "-sse4.2,bar=off", NULL);
    g_assert_cmpstr(off, ==, "-cpu host,-bar: unknown CPU feature 'bar'");
    g_autofree char *model = check_error("pentium9", NULL, NULL);
    g_assert_nonnull(strstr(model, "unknown CPU model 'pentium9'"));

    g_autofree struct kvm_cpuid2 *sup = intel_table();
    g_autofree char *built = build_error(sup, "qemu64", "+foo", NULL);
    g_assert_cmpstr(built, ==, msg);

    CpuConfig ok = cpu_config("qemu64", "+avx512f,-x2apic,kvm_pv_unhalt=on",
                              "GenuineIntel");
    g_assert_true(cpuid_check_config(&ok, NULL));
    cpu_config_free(&ok);
}

static void test_vendor(void)
{
    g_autofree char *msg = check_error("qemu64", NULL, "GenuineInte");
    g_assert_nonnull(strstr(msg, "vendor=GenuineInte"));
    g_assert_nonnull(strstr(msg, "12"));
    g_autofree char *thirteen = check_error("host", NULL, "AuthenticAMDx");
    g_assert_nonnull(strstr(thirteen, "AuthenticAMDx"));

    g_autofree struct kvm_cpuid2 *sup = amd_table();
    g_autofree struct kvm_cpuid2 *t =
        build_topo(sup, "qemu64", NULL, "GenuineIntel", &one_cpu, 0);
    const struct kvm_cpuid_entry2 *leaf0 = get(t, 0, 0);
    g_assert_cmphex(leaf0->ebx, ==, 0x756e6547);    /* "Genu" */
    g_assert_cmphex(leaf0->edx, ==, 0x49656e69);    /* "ineI" */
    g_assert_cmphex(leaf0->ecx, ==, 0x6c65746e);    /* "ntel" */
    /* family and model stay the model's */
    g_assert_cmpuint(display_family(get(t, 1, 0)->eax), ==, 15);
}

static void test_apic_ids(void)
{
    const CpuTopology full = { .sockets = 2, .cores = 2, .threads = 2 };
    for (unsigned i = 0; i < 8; i++) {
        g_assert_cmpuint(cpuid_apic_id(&full, i), ==, i);
    }
    const CpuTopology sockets = { .sockets = 3, .cores = 1, .threads = 1 };
    for (unsigned i = 0; i < 3; i++) {
        g_assert_cmpuint(cpuid_apic_id(&sockets, i), ==, i);
    }
    const CpuTopology three_cores = { .sockets = 2, .cores = 3, .threads = 1 };
    static const uint32_t expected[] = { 0, 1, 2, 4, 5, 6 };
    for (unsigned i = 0; i < G_N_ELEMENTS(expected); i++) {
        g_assert_cmpuint(cpuid_apic_id(&three_cores, i), ==, expected[i]);
    }
    /* 3 threads: thread field 2 bits, core field 1 bit */
    const CpuTopology odd = { .sockets = 2, .cores = 2, .threads = 3 };
    g_assert_cmpuint(cpuid_apic_id(&odd, 2), ==, 2);
    g_assert_cmpuint(cpuid_apic_id(&odd, 3), ==, 4);
    g_assert_cmpuint(cpuid_apic_id(&odd, 6), ==, 8);
    g_assert_cmpuint(cpuid_apic_id(&odd, 11), ==, 14);
}

static void test_leaf1_topology(void)
{
    g_autofree struct kvm_cpuid2 *sup = intel_table();
    const CpuTopology topo = { .sockets = 2, .cores = 3, .threads = 1 };
    static const uint32_t expected[] = { 0, 1, 2, 4, 5, 6 };

    for (unsigned i = 0; i < G_N_ELEMENTS(expected); i++) {
        g_autofree struct kvm_cpuid2 *t =
            build_topo(sup, "host", NULL, NULL, &topo, i);
        const struct kvm_cpuid_entry2 *leaf1 = get(t, 1, 0);
        g_assert_cmpuint(leaf1->ebx >> 24, ==, expected[i]);
        g_assert_cmpuint((leaf1->ebx >> 16) & 0xff, ==, 3);
        g_assert_cmphex(leaf1->ebx & 0xffff, ==, 0x0800);  /* CLFLUSH size */
        g_assert_cmphex(leaf1->edx & EDX_HTT, ==, EDX_HTT);
    }

    /* two threads, one core: HTT too */
    const CpuTopology smt = { .sockets = 1, .cores = 1, .threads = 2 };
    g_autofree struct kvm_cpuid2 *pair =
        build_topo(sup, "qemu64", NULL, NULL, &smt, 1);
    g_assert_cmphex(get(pair, 1, 0)->edx & EDX_HTT, ==, EDX_HTT);
    g_assert_cmphex(get(pair, 1, 0)->ebx >> 16, ==, 0x0102);

    /* one logical processor per package: no HTT, though the host has it */
    g_autofree struct kvm_cpuid2 *single = build(sup, "host", NULL);
    g_assert_cmphex(get(single, 1, 0)->edx & EDX_HTT, ==, 0);
    g_assert_cmpuint((get(single, 1, 0)->ebx >> 16) & 0xff, ==, 1);
    g_assert_cmpuint(get(single, 1, 0)->ebx >> 24, ==, 0);
}

static void test_leaf_b(void)
{
    g_autofree struct kvm_cpuid2 *sup = amd_table();   /* level 0xd, no 0xB */
    const CpuTopology topo = { .sockets = 2, .cores = 3, .threads = 2 };
    unsigned index = 7;     /* socket 1, core 0, thread 1 */
    uint32_t apic = cpuid_apic_id(&topo, index);
    g_autofree struct kvm_cpuid2 *t =
        build_topo(sup, "host", NULL, NULL, &topo, index);

    g_assert_cmpuint(apic, ==, 1 << 3 | 1);
    assert_well_formed(t);
    const struct kvm_cpuid_entry2 *smt = get(t, 0xb, 0);
    g_assert_cmpuint(smt->eax, ==, 1);
    g_assert_cmpuint(smt->ebx, ==, 2);
    g_assert_cmphex(smt->ecx, ==, 0x100);
    g_assert_cmpuint(smt->edx, ==, apic);
    const struct kvm_cpuid_entry2 *core = get(t, 0xb, 1);
    g_assert_cmpuint(core->eax, ==, 3);
    g_assert_cmpuint(core->ebx, ==, 6);
    g_assert_cmphex(core->ecx, ==, 0x201);
    g_assert_cmpuint(core->edx, ==, apic);
    const struct kvm_cpuid_entry2 *end = get(t, 0xb, 2);
    g_assert_cmpuint(end->eax, ==, 0);
    g_assert_cmpuint(end->ebx, ==, 0);
    g_assert_cmphex(end->ecx, ==, 2);
    g_assert_null(find(t, 0xb, 3));

    /* the Intel host's own 0xB levels are replaced, not kept */
    g_autofree struct kvm_cpuid2 *intel_sup = intel_table();
    g_autofree struct kvm_cpuid2 *one = build(intel_sup, "qemu64", NULL);
    g_assert_cmpuint(get(one, 0xb, 0)->eax, ==, 0);
    g_assert_cmpuint(get(one, 0xb, 0)->ebx, ==, 1);
    g_assert_cmpuint(get(one, 0xb, 1)->ebx, ==, 1);
    g_assert_cmpuint(get(one, 0xb, 1)->edx, ==, 0);
}

static void test_level_raised_for_leaf_b(void)
{
    struct kvm_cpuid_entry2 old[G_N_ELEMENTS(amd_entries)];
    memcpy(old, amd_entries, sizeof(old));
    old[0].eax = 7;
    g_autofree struct kvm_cpuid2 *sup = table_new(old, G_N_ELEMENTS(old));
    g_autofree struct kvm_cpuid2 *t = build(sup, "host", NULL);
    g_assert_cmphex(get(t, 0, 0)->eax, ==, 0xb);
    g_assert_nonnull(find(t, 0xb, 1));
    /* 0xD is past the reported level 7 on that host, so it stays out */
    g_assert_null(find(t, 0xd, 0));
}

static void test_cache_topology(void)
{
    g_autofree struct kvm_cpuid2 *intel_sup = intel_table();
    g_autofree struct kvm_cpuid2 *amd_sup = amd_table();
    const CpuTopology topo = { .sockets = 1, .cores = 4, .threads = 2 };

    g_autofree struct kvm_cpuid2 *t =
        build_topo(intel_sup, "host", NULL, NULL, &topo, 5);
    for (unsigned sub = 0; sub < 4; sub++) {
        uint32_t eax = get(t, 4, sub)->eax;
        unsigned level = (eax >> 5) & 7;
        g_assert_cmpuint(eax >> 26, ==, 3);
        g_assert_cmpuint((eax >> 14) & 0xfff, ==, level == 3 ? 7 : 1);
        g_assert_cmphex(eax & 0x3fff, ==, intel_entries[2 + sub].eax & 0x3fff);
    }
    g_assert_cmphex(get(t, 4, 4)->eax, ==, 0);

    g_autofree struct kvm_cpuid2 *a =
        build_topo(amd_sup, "host", NULL, NULL, &topo, 5);
    uint32_t ecx = get(a, 0x80000008, 0)->ecx;
    g_assert_cmpuint(ecx & 0xff, ==, 7);
    g_assert_cmpuint((ecx >> 12) & 0xf, ==, 3);
    g_assert_cmpuint((get(a, 0x8000001d, 2)->eax >> 14) & 0xfff, ==, 7);
    g_assert_cmpuint((get(a, 0x8000001d, 0)->eax >> 14) & 0xfff, ==, 1);
    const struct kvm_cpuid_entry2 *ext = get(a, 0x8000001e, 0);
    g_assert_cmpuint(ext->eax, ==, cpuid_apic_id(&topo, 5));
    g_assert_cmpuint(ext->ebx & 0xff, ==, 2);
    g_assert_cmpuint((ext->ebx >> 8) & 0xff, ==, 1);

    /* an Intel vendor has no NC field */
    g_autofree struct kvm_cpuid2 *intel_ext =
        build_topo(intel_sup, "host", NULL, NULL, &topo, 0);
    g_assert_cmphex(get(intel_ext, 0x80000008, 0)->ecx, ==, 0);
}

static void test_hypervisor_bit(void)
{
    g_autofree struct kvm_cpuid2 *intel_sup = intel_table();
    g_autofree struct kvm_cpuid2 *amd_sup = amd_table();
    static const char *const models[] = { "host", "max", "qemu64" };

    for (size_t i = 0; i < G_N_ELEMENTS(models); i++) {
        g_autofree struct kvm_cpuid2 *a = build(intel_sup, models[i], NULL);
        g_autofree struct kvm_cpuid2 *b = build(amd_sup, models[i], "-sse4.2");
        g_assert_cmphex(get(a, 1, 0)->ecx & ECX_HYPERVISOR, ==, ECX_HYPERVISOR);
        g_assert_cmphex(get(b, 1, 0)->ecx & ECX_HYPERVISOR, ==, ECX_HYPERVISOR);
    }
}

static void test_xsave_leaf(void)
{
    g_autofree struct kvm_cpuid2 *sup = intel_table();

    /* XSAVE without AVX: x87 and SSE state only, legacy-sized area */
    g_autofree struct kvm_cpuid2 *x = build(sup, "qemu64", "+xsave");
    g_assert_cmphex(get(x, 0xd, 0)->eax, ==, 0x3);
    g_assert_cmpuint(get(x, 0xd, 0)->ecx, ==, 576);
    g_assert_null(find(x, 0xd, 2));
    g_assert_cmphex(get(x, 0xd, 1)->eax, ==, 0);

    g_autofree struct kvm_cpuid2 *avx = build(sup, "qemu64",
                                              "+xsave,+avx,+xsaveopt");
    g_assert_cmphex(get(avx, 0xd, 0)->eax, ==, 0x7);
    g_assert_cmpuint(get(avx, 0xd, 0)->ecx, ==, 832);
    g_assert_cmpuint(get(avx, 0xd, 2)->eax, ==, 256);
    g_assert_cmphex(get(avx, 0xd, 1)->eax, ==, 0x1);

    g_autofree struct kvm_cpuid2 *host = build(sup, "host", "-avx");
    g_assert_cmphex(get(host, 0xd, 0)->eax, ==, 0x3);
    g_assert_null(find(host, 0xd, 2));
}

static void test_too_many_entries(void)
{
    g_autofree struct kvm_cpuid2 *sup =
        g_malloc0(sizeof(*sup) + 300 * sizeof(sup->entries[0]));
    sup->nent = 300;
    g_autofree char *msg = build_error(sup, "host", NULL, NULL);
    g_assert_nonnull(strstr(msg, "300"));
}

/* The real KVM answer, when this machine has /dev/kvm. */
static struct kvm_cpuid2 *kvm_supported_cpuid(void)
{
    int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    unsigned nent = 256;
    struct kvm_cpuid2 *t = g_malloc0(sizeof(*t) + nent * sizeof(t->entries[0]));
    t->nent = nent;
    int r = ioctl(fd, KVM_GET_SUPPORTED_CPUID, t);
    close(fd);
    if (r < 0) {
        g_free(t);
        return NULL;
    }
    return t;
}

static void test_real_kvm(void)
{
    g_autofree struct kvm_cpuid2 *sup = kvm_supported_cpuid();
    if (!sup) {
        g_test_skip("/dev/kvm or KVM_GET_SUPPORTED_CPUID not available");
        return;
    }
    const CpuTopology topo = { .sockets = 2, .cores = 2, .threads = 1 };
    static const char *const models[] = { "host", "qemu64" };

    for (size_t i = 0; i < G_N_ELEMENTS(models); i++) {
        g_autofree struct kvm_cpuid2 *t =
            build_topo(sup, models[i], NULL, NULL, &topo, 3);
        char vendor[13];
        assert_well_formed(t);
        vendor_of(t, vendor);
        g_assert_cmpuint(strlen(vendor), ==, 12);
        g_assert_cmpuint(get(t, 1, 0)->ebx >> 24, ==, 3);
        g_assert_cmpuint(get(t, 0xb, 0)->edx, ==, 3);
        g_assert_cmphex(get(t, 1, 0)->ecx & ECX_HYPERVISOR, ==, ECX_HYPERVISOR);
        /* SSE2 and long mode are in every x86-64 host KVM runs on */
        g_assert_cmphex(get(t, 1, 0)->edx & BIT(26), ==, BIT(26));
        g_assert_cmphex(get(t, 0x80000001, 0)->edx & EXT_EDX_LM, ==,
                        EXT_EDX_LM);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cpuid/qemu64/identity", test_qemu64_identity);
    g_test_add_func("/cpuid/qemu64/features", test_qemu64_features);
    g_test_add_func("/cpuid/host/passthrough", test_host_passthrough);
    g_test_add_func("/cpuid/feature/plus", test_plus_feature);
    g_test_add_func("/cpuid/feature/later-wins", test_later_setting_wins);
    g_test_add_func("/cpuid/feature/spellings", test_minus_feature_spellings);
    g_test_add_func("/cpuid/feature/unknown", test_unknown_feature);
    g_test_add_func("/cpuid/vendor", test_vendor);
    g_test_add_func("/cpuid/topology/apic-ids", test_apic_ids);
    g_test_add_func("/cpuid/topology/leaf1", test_leaf1_topology);
    g_test_add_func("/cpuid/topology/leaf-b", test_leaf_b);
    g_test_add_func("/cpuid/topology/level-raised", test_level_raised_for_leaf_b);
    g_test_add_func("/cpuid/topology/caches", test_cache_topology);
    g_test_add_func("/cpuid/hypervisor-bit", test_hypervisor_bit);
    g_test_add_func("/cpuid/xsave", test_xsave_leaf);
    g_test_add_func("/cpuid/too-many-entries", test_too_many_entries);
    g_test_add_func("/cpuid/real-kvm", test_real_kvm);
    return g_test_run();
}
