/*
 * CPUID feature flags by name, private to accel/kvm/cpuid.c: which leaf,
 * subleaf, register and bit each -cpu feature name of QEMU's stands for.
 */
#ifndef ACCEL_KVM_CPUID_FEATURES_H
#define ACCEL_KVM_CPUID_FEATURES_H

#include <stdbool.h>
#include <stdint.h>

typedef enum CpuidReg {
    CPUID_EAX,
    CPUID_EBX,
    CPUID_ECX,
    CPUID_EDX,
} CpuidReg;

/* The CPUID registers that hold nothing but feature flags. */
typedef enum FeatureWord {
    FEAT_1_EDX,
    FEAT_1_ECX,
    FEAT_6_EAX,
    FEAT_7_0_EBX,
    FEAT_7_0_ECX,
    FEAT_7_0_EDX,
    FEAT_7_1_EAX,
    FEAT_D_1_EAX,
    FEAT_KVM,               /* 0x40000001 EAX */
    FEAT_8000_0001_EDX,
    FEAT_8000_0001_ECX,
    FEAT_8000_0008_EBX,
    FEATURE_WORDS
} FeatureWord;

typedef struct FeatureWordInfo {
    uint32_t leaf;
    uint32_t subleaf;
    CpuidReg reg;
} FeatureWordInfo;

extern const FeatureWordInfo feature_word_info[FEATURE_WORDS];

typedef struct FeatureSet {
    uint32_t word[FEATURE_WORDS];
} FeatureSet;

/* Add to *set every bit that name stands for (a name can stand for more
 * than one: QEMU's "kvmclock" is two KVM bits). '_', '-' and '.' are
 * interchangeable, as in QEMU's "sse4.2", "sse4_2", "sse4-2". False if
 * the name is unknown. */
bool cpuid_feature_add(FeatureSet *set, const char *name);

#endif
