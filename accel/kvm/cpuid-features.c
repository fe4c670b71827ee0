/*
 * QEMU's -cpu feature names and the CPUID bits they stand for, from the
 * Intel SDM (vol. 2A, CPUID), the AMD APM (vol. 3, appendix E) and the
 * KVM documentation (virt/kvm/x86/cpuid.rst).
 */
#include <string.h>
#include <glib.h>
#include "cpuid-features.h"

const FeatureWordInfo feature_word_info[FEATURE_WORDS] = {
    [FEAT_1_EDX]         = { 0x00000001, 0, CPUID_EDX },
    [FEAT_1_ECX]         = { 0x00000001, 0, CPUID_ECX },
    [FEAT_6_EAX]         = { 0x00000006, 0, CPUID_EAX },
    [FEAT_7_0_EBX]       = { 0x00000007, 0, CPUID_EBX },
    [FEAT_7_0_ECX]       = { 0x00000007, 0, CPUID_ECX },
    [FEAT_7_0_EDX]       = { 0x00000007, 0, CPUID_EDX },
    [FEAT_7_1_EAX]       = { 0x00000007, 1, CPUID_EAX },
    [FEAT_D_1_EAX]       = { 0x0000000d, 1, CPUID_EAX },
    [FEAT_KVM]           = { 0x40000001, 0, CPUID_EAX },
    [FEAT_8000_0001_EDX] = { 0x80000001, 0, CPUID_EDX },
    [FEAT_8000_0001_ECX] = { 0x80000001, 0, CPUID_ECX },
    [FEAT_8000_0008_EBX] = { 0x80000008, 0, CPUID_EBX },
};

typedef struct FeatureName {
    const char *name;       /* QEMU's spelling, '-' as the separator */
    FeatureWord word;
    uint8_t bit;
} FeatureName;

/* Aliases are rows of their own with the same bit. */
static const FeatureName feature_names[] = {
    { "fpu", FEAT_1_EDX, 0 },
    { "vme", FEAT_1_EDX, 1 },
    { "de", FEAT_1_EDX, 2 },
    { "pse", FEAT_1_EDX, 3 },
    { "tsc", FEAT_1_EDX, 4 },
    { "msr", FEAT_1_EDX, 5 },
    { "pae", FEAT_1_EDX, 6 },
    { "mce", FEAT_1_EDX, 7 },
    { "cx8", FEAT_1_EDX, 8 },
    { "apic", FEAT_1_EDX, 9 },
    { "sep", FEAT_1_EDX, 11 },
    { "mtrr", FEAT_1_EDX, 12 },
    { "pge", FEAT_1_EDX, 13 },
    { "mca", FEAT_1_EDX, 14 },
    { "cmov", FEAT_1_EDX, 15 },
    { "pat", FEAT_1_EDX, 16 },
    { "pse36", FEAT_1_EDX, 17 },
    { "pn", FEAT_1_EDX, 18 },
    { "clflush", FEAT_1_EDX, 19 },
    { "ds", FEAT_1_EDX, 21 },
    { "acpi", FEAT_1_EDX, 22 },
    { "mmx", FEAT_1_EDX, 23 },
    { "fxsr", FEAT_1_EDX, 24 },
    { "sse", FEAT_1_EDX, 25 },
    { "sse2", FEAT_1_EDX, 26 },
    { "ss", FEAT_1_EDX, 27 },
    { "ht", FEAT_1_EDX, 28 },
    { "tm", FEAT_1_EDX, 29 },
    { "ia64", FEAT_1_EDX, 30 },
    { "pbe", FEAT_1_EDX, 31 },

    { "pni", FEAT_1_ECX, 0 },
    { "sse3", FEAT_1_ECX, 0 },
    { "pclmulqdq", FEAT_1_ECX, 1 },
    { "pclmuldq", FEAT_1_ECX, 1 },
    { "dtes64", FEAT_1_ECX, 2 },
    { "monitor", FEAT_1_ECX, 3 },
    { "ds-cpl", FEAT_1_ECX, 4 },
    { "vmx", FEAT_1_ECX, 5 },
    { "smx", FEAT_1_ECX, 6 },
    { "est", FEAT_1_ECX, 7 },
    { "tm2", FEAT_1_ECX, 8 },
    { "ssse3", FEAT_1_ECX, 9 },
    { "cid", FEAT_1_ECX, 10 },
    { "fma", FEAT_1_ECX, 12 },
    { "cx16", FEAT_1_ECX, 13 },
    { "xtpr", FEAT_1_ECX, 14 },
    { "pdcm", FEAT_1_ECX, 15 },
    { "pcid", FEAT_1_ECX, 17 },
    { "dca", FEAT_1_ECX, 18 },
    { "sse4.1", FEAT_1_ECX, 19 },
    { "sse4.2", FEAT_1_ECX, 20 },
    { "x2apic", FEAT_1_ECX, 21 },
    { "movbe", FEAT_1_ECX, 22 },
    { "popcnt", FEAT_1_ECX, 23 },
    { "tsc-deadline", FEAT_1_ECX, 24 },
    { "aes", FEAT_1_ECX, 25 },
    { "xsave", FEAT_1_ECX, 26 },
    { "osxsave", FEAT_1_ECX, 27 },
    { "avx", FEAT_1_ECX, 28 },
    { "f16c", FEAT_1_ECX, 29 },
    { "rdrand", FEAT_1_ECX, 30 },
    { "hypervisor", FEAT_1_ECX, 31 },

    { "arat", FEAT_6_EAX, 2 },

    { "fsgsbase", FEAT_7_0_EBX, 0 },
    { "tsc-adjust", FEAT_7_0_EBX, 1 },
    { "sgx", FEAT_7_0_EBX, 2 },
    { "bmi1", FEAT_7_0_EBX, 3 },
    { "hle", FEAT_7_0_EBX, 4 },
    { "avx2", FEAT_7_0_EBX, 5 },
    { "smep", FEAT_7_0_EBX, 7 },
    { "bmi2", FEAT_7_0_EBX, 8 },
    { "erms", FEAT_7_0_EBX, 9 },
    { "invpcid", FEAT_7_0_EBX, 10 },
    { "rtm", FEAT_7_0_EBX, 11 },
    { "mpx", FEAT_7_0_EBX, 14 },
    { "avx512f", FEAT_7_0_EBX, 16 },
    { "avx512dq", FEAT_7_0_EBX, 17 },
    { "rdseed", FEAT_7_0_EBX, 18 },
    { "adx", FEAT_7_0_EBX, 19 },
    { "smap", FEAT_7_0_EBX, 20 },
    { "avx512ifma", FEAT_7_0_EBX, 21 },
    { "clflushopt", FEAT_7_0_EBX, 23 },
    { "clwb", FEAT_7_0_EBX, 24 },
    { "intel-pt", FEAT_7_0_EBX, 25 },
    { "avx512pf", FEAT_7_0_EBX, 26 },
    { "avx512er", FEAT_7_0_EBX, 27 },
    { "avx512cd", FEAT_7_0_EBX, 28 },
    { "sha-ni", FEAT_7_0_EBX, 29 },
    { "avx512bw", FEAT_7_0_EBX, 30 },
    { "avx512vl", FEAT_7_0_EBX, 31 },

    { "avx512vbmi", FEAT_7_0_ECX, 1 },
    { "umip", FEAT_7_0_ECX, 2 },
    { "pku", FEAT_7_0_ECX, 3 },
    { "ospke", FEAT_7_0_ECX, 4 },
    { "waitpkg", FEAT_7_0_ECX, 5 },
    { "avx512vbmi2", FEAT_7_0_ECX, 6 },
    { "gfni", FEAT_7_0_ECX, 8 },
    { "vaes", FEAT_7_0_ECX, 9 },
    { "vpclmulqdq", FEAT_7_0_ECX, 10 },
    { "avx512vnni", FEAT_7_0_ECX, 11 },
    { "avx512bitalg", FEAT_7_0_ECX, 12 },
    { "avx512-vpopcntdq", FEAT_7_0_ECX, 14 },
    { "la57", FEAT_7_0_ECX, 16 },
    { "rdpid", FEAT_7_0_ECX, 22 },
    { "bus-lock-detect", FEAT_7_0_ECX, 24 },
    { "cldemote", FEAT_7_0_ECX, 25 },
    { "movdiri", FEAT_7_0_ECX, 27 },
    { "movdir64b", FEAT_7_0_ECX, 28 },
    { "sgxlc", FEAT_7_0_ECX, 30 },
    { "pks", FEAT_7_0_ECX, 31 },

    { "avx512-4vnniw", FEAT_7_0_EDX, 2 },
    { "avx512-4fmaps", FEAT_7_0_EDX, 3 },
    { "fsrm", FEAT_7_0_EDX, 4 },
    { "avx512-vp2intersect", FEAT_7_0_EDX, 8 },
    { "md-clear", FEAT_7_0_EDX, 10 },
    { "serialize", FEAT_7_0_EDX, 14 },
    { "tsx-ldtrk", FEAT_7_0_EDX, 16 },
    { "arch-lbr", FEAT_7_0_EDX, 19 },
    { "amx-bf16", FEAT_7_0_EDX, 22 },
    { "avx512-fp16", FEAT_7_0_EDX, 23 },
    { "amx-tile", FEAT_7_0_EDX, 24 },
    { "amx-int8", FEAT_7_0_EDX, 25 },
    { "spec-ctrl", FEAT_7_0_EDX, 26 },
    { "stibp", FEAT_7_0_EDX, 27 },
    { "flush-l1d", FEAT_7_0_EDX, 28 },
    { "arch-capabilities", FEAT_7_0_EDX, 29 },
    { "core-capability", FEAT_7_0_EDX, 30 },
    { "ssbd", FEAT_7_0_EDX, 31 },

    { "avx-vnni", FEAT_7_1_EAX, 4 },
    { "avx512-bf16", FEAT_7_1_EAX, 5 },
    { "fzrm", FEAT_7_1_EAX, 10 },
    { "fsrs", FEAT_7_1_EAX, 11 },
    { "fsrc", FEAT_7_1_EAX, 12 },

    { "xsaveopt", FEAT_D_1_EAX, 0 },
    { "xsavec", FEAT_D_1_EAX, 1 },
    { "xgetbv1", FEAT_D_1_EAX, 2 },
    { "xsaves", FEAT_D_1_EAX, 3 },

    /* kvmclock is both the original and the "new" clocksource MSRs. */
    { "kvmclock", FEAT_KVM, 0 },
    { "kvm-nopiodelay", FEAT_KVM, 1 },
    { "kvm-mmu", FEAT_KVM, 2 },
    { "kvmclock", FEAT_KVM, 3 },
    { "kvm-asyncpf", FEAT_KVM, 4 },
    { "kvm-steal-time", FEAT_KVM, 5 },
    { "kvm-pv-eoi", FEAT_KVM, 6 },
    { "kvm-pv-unhalt", FEAT_KVM, 7 },
    { "kvm-pv-tlb-flush", FEAT_KVM, 9 },
    { "kvm-asyncpf-vmexit", FEAT_KVM, 10 },
    { "kvm-pv-ipi", FEAT_KVM, 11 },
    { "kvm-poll-control", FEAT_KVM, 12 },
    { "kvm-pv-sched-yield", FEAT_KVM, 13 },
    { "kvm-asyncpf-int", FEAT_KVM, 14 },
    { "kvm-msi-ext-dest-id", FEAT_KVM, 15 },
    { "kvmclock-stable-bit", FEAT_KVM, 24 },

    { "syscall", FEAT_8000_0001_EDX, 11 },
    { "nx", FEAT_8000_0001_EDX, 20 },
    { "xd", FEAT_8000_0001_EDX, 20 },
    { "mmxext", FEAT_8000_0001_EDX, 22 },
    { "fxsr-opt", FEAT_8000_0001_EDX, 25 },
    { "ffxsr", FEAT_8000_0001_EDX, 25 },
    { "pdpe1gb", FEAT_8000_0001_EDX, 26 },
    { "rdtscp", FEAT_8000_0001_EDX, 27 },
    { "lm", FEAT_8000_0001_EDX, 29 },
    { "i64", FEAT_8000_0001_EDX, 29 },
    { "3dnowext", FEAT_8000_0001_EDX, 30 },
    { "3dnow", FEAT_8000_0001_EDX, 31 },

    { "lahf-lm", FEAT_8000_0001_ECX, 0 },
    { "cmp-legacy", FEAT_8000_0001_ECX, 1 },
    { "svm", FEAT_8000_0001_ECX, 2 },
    { "extapic", FEAT_8000_0001_ECX, 3 },
    { "cr8legacy", FEAT_8000_0001_ECX, 4 },
    { "abm", FEAT_8000_0001_ECX, 5 },
    { "sse4a", FEAT_8000_0001_ECX, 6 },
    { "misalignsse", FEAT_8000_0001_ECX, 7 },
    { "3dnowprefetch", FEAT_8000_0001_ECX, 8 },
    { "osvw", FEAT_8000_0001_ECX, 9 },
    { "ibs", FEAT_8000_0001_ECX, 10 },
    { "xop", FEAT_8000_0001_ECX, 11 },
    { "skinit", FEAT_8000_0001_ECX, 12 },
    { "wdt", FEAT_8000_0001_ECX, 13 },
    { "lwp", FEAT_8000_0001_ECX, 15 },
    { "fma4", FEAT_8000_0001_ECX, 16 },
    { "tce", FEAT_8000_0001_ECX, 17 },
    { "nodeid-msr", FEAT_8000_0001_ECX, 19 },
    { "tbm", FEAT_8000_0001_ECX, 21 },
    { "topoext", FEAT_8000_0001_ECX, 22 },
    { "perfctr-core", FEAT_8000_0001_ECX, 23 },
    { "perfctr-nb", FEAT_8000_0001_ECX, 24 },

    { "clzero", FEAT_8000_0008_EBX, 0 },
    { "xsaveerptr", FEAT_8000_0008_EBX, 2 },
    { "wbnoinvd", FEAT_8000_0008_EBX, 9 },
    { "ibpb", FEAT_8000_0008_EBX, 12 },
    { "ibrs", FEAT_8000_0008_EBX, 14 },
    { "amd-stibp", FEAT_8000_0008_EBX, 15 },
    { "amd-ssbd", FEAT_8000_0008_EBX, 24 },
    { "virt-ssbd", FEAT_8000_0008_EBX, 25 },
    { "amd-no-ssb", FEAT_8000_0008_EBX, 26 },
};

/* Like strcmp() == 0, with '_', '-' and '.' all the same separator. */
static bool feature_name_equal(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        bool a_sep = strchr("_-.", *a) != NULL;
        bool b_sep = strchr("_-.", *b) != NULL;
        if (a_sep != b_sep || (!a_sep && *a != *b)) {
            return false;
        }
    }
    return *a == *b;
}

bool cpuid_feature_add(FeatureSet *set, const char *name)
{
    bool known = false;

    for (size_t i = 0; i < G_N_ELEMENTS(feature_names); i++) {
        if (feature_name_equal(feature_names[i].name, name)) {
            set->word[feature_names[i].word] |= 1u << feature_names[i].bit;
            known = true;
        }
    }
    return known;
}
