/*
 * A small builder for ACPI Machine Language (ACPI 6.4, chapter 20) and the
 * resource descriptors of _CRS buffers (chapter 6.4).
 *
 * An Aml is one term (a name declaration, an integer, a device...) or a
 * container of terms. Containers are filled with aml_append(), which takes
 * ownership of the child; lengths that depend on the contents (PkgLength,
 * package element counts, buffer sizes, the resource template's end tag)
 * are worked out when the container itself is appended or finished, so
 * terms may be built in any order.
 *
 * Names are written as in ASL: "_HID", "PCI0", "\\_SB.PCI0", "^FOO";
 * segments shorter than four characters are padded with '_'. The builder
 * describes the VMM's own machine, never guest or user input, so a
 * malformed name or id is a programming error and asserts.
 */
#ifndef HW_ACPI_AML_BUILD_H
#define HW_ACPI_AML_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Aml Aml;

/* ---- containers ---- */

/* A bare list of terms, e.g. the body of a DSDT. */
Aml *aml_term_list(void);
Aml *aml_scope(const char *name);
Aml *aml_device(const char *name);
/* A control method taking nargs (0-7) arguments. */
Aml *aml_method(const char *name, unsigned nargs, bool serialized);
/* A package; each appended term is one element. */
Aml *aml_package(void);
/* A buffer of resource descriptors; the end tag is added when finished. */
Aml *aml_resource_template(void);

/* Append child to parent and free child. */
void aml_append(Aml *parent, Aml *child);

/* The encoding of aml (any term or container) in a g_malloc'd buffer of
 * *len bytes; aml is freed. */
uint8_t *aml_finish(Aml *aml, size_t *len);
void aml_free(Aml *aml);

/* ---- terms ---- */

/* Name(name, value); value is consumed. */
Aml *aml_name_decl(const char *name, Aml *value);
/* An integer in its shortest encoding (Zero, One, Byte, Word, DWord or
 * QWord constant; QWord needs a DSDT of revision 2 or later). */
Aml *aml_int(uint64_t value);
/* A string literal of ASCII characters 0x01-0x7f. */
Aml *aml_string(const char *str);
Aml *aml_buffer(const uint8_t *data, size_t len);
/* EISAID("PNP0A03"): the compressed 32-bit id of three upper-case letters
 * and four hexadecimal digits. */
Aml *aml_eisaid(const char *id);

/* ---- resource descriptors, appended to aml_resource_template() ---- */

/* I/O port descriptor with 16-bit decode. */
Aml *aml_io(uint16_t min, uint16_t max, uint8_t alignment, uint8_t length);
/* IRQNoFlags: an ISA interrupt, edge-triggered, active high. */
Aml *aml_irq_no_flags(uint8_t irq);

/* Cacheability of a memory window (the _MEM field). */
typedef enum AmlCacheability {
    AML_NON_CACHEABLE = 0,
    AML_CACHEABLE = 1,
    AML_WRITE_COMBINING = 2,
    AML_PREFETCHABLE = 3,
} AmlCacheability;

/*
 * Address space descriptors for the windows a bridge forwards
 * (ResourceProducer, MinFixed, MaxFixed, PosDecode, no translation):
 * [min, max] inclusive.
 */
Aml *aml_word_bus_number(uint16_t min, uint16_t max);
/* An I/O window decoding the entire range (ISA aliases included). */
Aml *aml_word_io(uint16_t min, uint16_t max);
/* A read-write memory window. */
Aml *aml_dword_memory(AmlCacheability cacheability, uint32_t min, uint32_t max);

/* ---- encoding pieces, exposed for tests ---- */

/* The PkgLength (1-4 bytes, counting itself) in front of body_len bytes;
 * returns how many bytes were written to out. */
unsigned aml_pkg_length_encode(size_t body_len, uint8_t out[4]);
/* The 32-bit value of an EISA id as aml_eisaid() encodes it. */
uint32_t aml_eisaid_value(const char *id);

#endif
