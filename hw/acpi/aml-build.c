/*
 * ACPI Machine Language builder (ACPI 6.4 chapter 20 for the encoding,
 * section 6.4 for resource descriptors).
 *
 * Every Aml keeps the bytes of its contents in `body`; a container's
 * framing (opcode, PkgLength, element count, buffer size, end tag) is only
 * written when it is encoded, because all of it depends on the final size
 * of the contents.
 */
#include <string.h>
#include <glib.h>
#include "hw/acpi/aml-build.h"

/* Opcodes and prefixes (ACPI 6.4, 20.3). */
#define AML_ZERO_OP             0x00
#define AML_ONE_OP              0x01
#define AML_NAME_OP             0x08
#define AML_BYTE_PREFIX         0x0a
#define AML_WORD_PREFIX         0x0b
#define AML_DWORD_PREFIX        0x0c
#define AML_STRING_PREFIX       0x0d
#define AML_QWORD_PREFIX        0x0e
#define AML_SCOPE_OP            0x10
#define AML_BUFFER_OP           0x11
#define AML_PACKAGE_OP          0x12
#define AML_VAR_PACKAGE_OP      0x13
#define AML_METHOD_OP           0x14
#define AML_DUAL_NAME_PREFIX    0x2e
#define AML_MULTI_NAME_PREFIX   0x2f
#define AML_EXT_OP_PREFIX       0x5b
#define AML_EXT_DEVICE_OP       0x82
#define AML_ROOT_CHAR           '\\'
#define AML_PARENT_PREFIX_CHAR  '^'
#define AML_NULL_NAME           0x00

#define AML_NAME_SEG_LEN        4
#define AML_METHOD_MAX_ARGS     7
#define AML_METHOD_SERIALIZED   0x08
#define AML_PACKAGE_MAX_FIXED   255     /* NumElements is a byte */

/* PkgLength: the lead byte holds 6 bits alone, or 4 bits under 1-3
 * following bytes of 8 bits each (20.2.4). */
#define AML_PKG_LENGTH_1BYTE_MAX    0x3f

/* Resource descriptors (6.4.2, 6.4.3). */
#define AML_RES_IRQ_NO_FLAGS    0x22    /* small item 0x04, length 2 */
#define AML_RES_IO              0x47    /* small item 0x08, length 7 */
#define AML_RES_END_TAG         0x79    /* small item 0x0f, length 1 */
#define AML_RES_DWORD_ADDRESS   0x87
#define AML_RES_WORD_ADDRESS    0x88
#define AML_RES_IO_DECODE16     0x01
#define AML_RES_ISA_IRQS        16

/* Address space descriptor fields. */
#define AML_ADDR_SPACE_MEMORY   0
#define AML_ADDR_SPACE_IO       1
#define AML_ADDR_SPACE_BUS      2
/* General flags of a producer window: _MAF and _MIF set, _DEC positive. */
#define AML_ADDR_FLAGS_FIXED_WINDOW     0x0c
#define AML_ADDR_IO_ENTIRE_RANGE        0x03
#define AML_ADDR_MEM_READ_WRITE         0x01

typedef enum AmlKind {
    AML_KIND_TERMS,             /* body is the encoding */
    AML_KIND_NAMED_BLOCK,       /* opcode, PkgLength, body (name first) */
    AML_KIND_PACKAGE,           /* PackageOp, PkgLength, count, elements */
    AML_KIND_RESOURCE_TEMPLATE, /* BufferOp, PkgLength, size, body, end tag */
} AmlKind;

struct Aml {
    AmlKind kind;
    uint8_t opcode[2];          /* NAMED_BLOCK only */
    unsigned opcode_len;
    unsigned elements;          /* PACKAGE only */
    GByteArray *body;
};

static Aml *aml_new(AmlKind kind)
{
    Aml *aml = g_new0(Aml, 1);
    aml->kind = kind;
    aml->body = g_byte_array_new();
    return aml;
}

void aml_free(Aml *aml)
{
    if (aml) {
        g_byte_array_unref(aml->body);
        g_free(aml);
    }
}

static void put_byte(GByteArray *out, uint8_t byte)
{
    g_byte_array_append(out, &byte, 1);
}

static void put_le(GByteArray *out, uint64_t value, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        put_byte(out, value >> (8 * i));
    }
}

/* ---- names ---- */

static bool aml_name_lead_char(char c)
{
    return (c >= 'A' && c <= 'Z') || c == '_';
}

static bool aml_name_char(char c)
{
    return aml_name_lead_char(c) || (c >= '0' && c <= '9');
}

/* One NameSeg from name[0..len), padded with '_'. */
static void put_name_seg(GByteArray *out, const char *seg, size_t len)
{
    g_assert(len >= 1 && len <= AML_NAME_SEG_LEN);
    g_assert(aml_name_lead_char(seg[0]));
    for (size_t i = 0; i < AML_NAME_SEG_LEN; i++) {
        char c = i < len ? seg[i] : '_';
        g_assert(aml_name_char(c));
        put_byte(out, c);
    }
}

/* NameString (20.2.2): prefixes, then NullName, a NameSeg, DualNamePath
 * or MultiNamePath. */
static void put_name_string(GByteArray *out, const char *name)
{
    if (*name == AML_ROOT_CHAR) {
        put_byte(out, *name++);
    } else {
        while (*name == AML_PARENT_PREFIX_CHAR) {
            put_byte(out, *name++);
        }
    }
    if (*name == '\0') {
        put_byte(out, AML_NULL_NAME);
        return;
    }
    char **segs = g_strsplit(name, ".", -1);
    unsigned nsegs = g_strv_length(segs);
    g_assert(nsegs <= 255);
    if (nsegs == 2) {
        put_byte(out, AML_DUAL_NAME_PREFIX);
    } else if (nsegs > 2) {
        put_byte(out, AML_MULTI_NAME_PREFIX);
        put_byte(out, nsegs);
    }
    for (unsigned i = 0; i < nsegs; i++) {
        put_name_seg(out, segs[i], strlen(segs[i]));
    }
    g_strfreev(segs);
}

/* ---- lengths and integers ---- */

unsigned aml_pkg_length_encode(size_t body_len, uint8_t out[4])
{
    if (body_len + 1 <= AML_PKG_LENGTH_1BYTE_MAX) {
        out[0] = body_len + 1;
        return 1;
    }
    for (unsigned nbytes = 2; nbytes <= 4; nbytes++) {
        /* 4 bits in the lead byte plus 8 in each following byte. */
        size_t total = body_len + nbytes;
        if (total < (1u << (4 + 8 * (nbytes - 1)))) {
            out[0] = ((nbytes - 1) << 6) | (total & 0x0f);
            for (unsigned i = 1; i < nbytes; i++) {
                out[i] = total >> (4 + 8 * (i - 1));
            }
            return nbytes;
        }
    }
    g_assert_not_reached();
}

static void put_pkg_length(GByteArray *out, size_t body_len)
{
    uint8_t encoded[4];
    unsigned n = aml_pkg_length_encode(body_len, encoded);
    g_byte_array_append(out, encoded, n);
}

static void put_integer(GByteArray *out, uint64_t value)
{
    if (value == 0) {
        put_byte(out, AML_ZERO_OP);
    } else if (value == 1) {
        put_byte(out, AML_ONE_OP);
    } else if (value <= UINT8_MAX) {
        put_byte(out, AML_BYTE_PREFIX);
        put_le(out, value, 1);
    } else if (value <= UINT16_MAX) {
        put_byte(out, AML_WORD_PREFIX);
        put_le(out, value, 2);
    } else if (value <= UINT32_MAX) {
        put_byte(out, AML_DWORD_PREFIX);
        put_le(out, value, 4);
    } else {
        put_byte(out, AML_QWORD_PREFIX);
        put_le(out, value, 8);
    }
}

/* ---- encoding containers ---- */

static void aml_encode(GByteArray *out, const Aml *aml)
{
    const GByteArray *body = aml->body;
    switch (aml->kind) {
    case AML_KIND_TERMS:
        g_byte_array_append(out, body->data, body->len);
        break;
    case AML_KIND_NAMED_BLOCK:
        g_byte_array_append(out, aml->opcode, aml->opcode_len);
        put_pkg_length(out, body->len);
        g_byte_array_append(out, body->data, body->len);
        break;
    case AML_KIND_PACKAGE: {
        /* Element counts past a byte need VarPackage and an integer count. */
        GByteArray *head = g_byte_array_new();
        bool var = aml->elements > AML_PACKAGE_MAX_FIXED;
        if (var) {
            put_integer(head, aml->elements);
        } else {
            put_byte(head, aml->elements);
        }
        put_byte(out, var ? AML_VAR_PACKAGE_OP : AML_PACKAGE_OP);
        put_pkg_length(out, head->len + body->len);
        g_byte_array_append(out, head->data, head->len);
        g_byte_array_append(out, body->data, body->len);
        g_byte_array_unref(head);
        break;
    }
    case AML_KIND_RESOURCE_TEMPLATE: {
        /* The end tag's checksum 0 means "treat as correct" (6.4.2.9). */
        static const uint8_t end_tag[] = { AML_RES_END_TAG, 0 };
        GByteArray *size = g_byte_array_new();
        put_integer(size, body->len + sizeof(end_tag));
        put_byte(out, AML_BUFFER_OP);
        put_pkg_length(out, size->len + body->len + sizeof(end_tag));
        g_byte_array_append(out, size->data, size->len);
        g_byte_array_append(out, body->data, body->len);
        g_byte_array_append(out, end_tag, sizeof(end_tag));
        g_byte_array_unref(size);
        break;
    }
    }
}

void aml_append(Aml *parent, Aml *child)
{
    aml_encode(parent->body, child);
    parent->elements++;
    aml_free(child);
}

uint8_t *aml_finish(Aml *aml, size_t *len)
{
    GByteArray *out = g_byte_array_new();
    aml_encode(out, aml);
    aml_free(aml);
    *len = out->len;
    return g_byte_array_free(out, false);
}

/* ---- containers ---- */

Aml *aml_term_list(void)
{
    return aml_new(AML_KIND_TERMS);
}

static Aml *aml_named_block(const uint8_t *opcode, unsigned opcode_len, const char *name)
{
    Aml *aml = aml_new(AML_KIND_NAMED_BLOCK);
    memcpy(aml->opcode, opcode, opcode_len);
    aml->opcode_len = opcode_len;
    put_name_string(aml->body, name);
    return aml;
}

Aml *aml_scope(const char *name)
{
    static const uint8_t op[] = { AML_SCOPE_OP };
    return aml_named_block(op, sizeof(op), name);
}

Aml *aml_device(const char *name)
{
    static const uint8_t op[] = { AML_EXT_OP_PREFIX, AML_EXT_DEVICE_OP };
    return aml_named_block(op, sizeof(op), name);
}

Aml *aml_method(const char *name, unsigned nargs, bool serialized)
{
    static const uint8_t op[] = { AML_METHOD_OP };
    g_assert(nargs <= AML_METHOD_MAX_ARGS);
    Aml *aml = aml_named_block(op, sizeof(op), name);
    put_byte(aml->body, nargs | (serialized ? AML_METHOD_SERIALIZED : 0));
    return aml;
}

Aml *aml_package(void)
{
    return aml_new(AML_KIND_PACKAGE);
}

Aml *aml_resource_template(void)
{
    return aml_new(AML_KIND_RESOURCE_TEMPLATE);
}

/* ---- terms ---- */

Aml *aml_name_decl(const char *name, Aml *value)
{
    Aml *aml = aml_new(AML_KIND_TERMS);
    put_byte(aml->body, AML_NAME_OP);
    put_name_string(aml->body, name);
    aml_append(aml, value);
    return aml;
}

Aml *aml_int(uint64_t value)
{
    Aml *aml = aml_new(AML_KIND_TERMS);
    put_integer(aml->body, value);
    return aml;
}

Aml *aml_string(const char *str)
{
    Aml *aml = aml_new(AML_KIND_TERMS);
    put_byte(aml->body, AML_STRING_PREFIX);
    for (const char *p = str; *p; p++) {
        g_assert((unsigned char)*p <= 0x7f);
        put_byte(aml->body, *p);
    }
    put_byte(aml->body, '\0');
    return aml;
}

Aml *aml_buffer(const uint8_t *data, size_t len)
{
    Aml *aml = aml_new(AML_KIND_TERMS);
    GByteArray *size = g_byte_array_new();
    put_integer(size, len);
    put_byte(aml->body, AML_BUFFER_OP);
    put_pkg_length(aml->body, size->len + len);
    g_byte_array_append(aml->body, size->data, size->len);
    g_byte_array_append(aml->body, data, len);
    g_byte_array_unref(size);
    return aml;
}

static unsigned hex_digit_value(char c)
{
    g_assert(g_ascii_isxdigit(c));
    return g_ascii_xdigit_value(c);
}

uint32_t aml_eisaid_value(const char *id)
{
    g_assert(strlen(id) == 7);
    /* Three letters of 5 bits ('A' is 1) and four hex digits, stored
     * most significant byte first (6.1.5). */
    uint32_t big_endian = 0;
    for (unsigned i = 0; i < 3; i++) {
        g_assert(id[i] >= 'A' && id[i] <= 'Z');
        big_endian |= (uint32_t)(id[i] - 'A' + 1) << (26 - 5 * i);
    }
    for (unsigned i = 3; i < 7; i++) {
        big_endian |= hex_digit_value(id[i]) << (4 * (6 - i));
    }
    return GUINT32_SWAP_LE_BE(big_endian);
}

Aml *aml_eisaid(const char *id)
{
    return aml_int(aml_eisaid_value(id));
}

/* ---- resource descriptors ---- */

static Aml *aml_raw(const uint8_t *bytes, size_t len)
{
    Aml *aml = aml_new(AML_KIND_TERMS);
    g_byte_array_append(aml->body, bytes, len);
    return aml;
}

Aml *aml_io(uint16_t min, uint16_t max, uint8_t alignment, uint8_t length)
{
    const uint8_t desc[] = {
        AML_RES_IO, AML_RES_IO_DECODE16,
        min & 0xff, min >> 8, max & 0xff, max >> 8, alignment, length,
    };
    return aml_raw(desc, sizeof(desc));
}

Aml *aml_irq_no_flags(uint8_t irq)
{
    g_assert(irq < AML_RES_ISA_IRQS);
    uint16_t mask = 1u << irq;
    const uint8_t desc[] = { AML_RES_IRQ_NO_FLAGS, mask & 0xff, mask >> 8 };
    return aml_raw(desc, sizeof(desc));
}

/*
 * Word and DWord address space descriptors share their layout: tag,
 * 16-bit length, type, general flags, type-specific flags, then
 * granularity, min, max, translation and length, each `width` bytes. A
 * fixed window has granularity 0 and length max - min + 1 (table 6.41).
 */
static Aml *aml_address_window(uint8_t tag, unsigned width, uint8_t space,
                               uint8_t type_flags, uint64_t min, uint64_t max)
{
    g_assert(min <= max && max - min < (UINT64_MAX >> (64 - 8 * width)));
    Aml *aml = aml_new(AML_KIND_TERMS);
    GByteArray *out = aml->body;
    put_byte(out, tag);
    put_le(out, 3 + 5 * width, 2);     /* 13 for Word, 23 for DWord */
    put_byte(out, space);
    put_byte(out, AML_ADDR_FLAGS_FIXED_WINDOW);
    put_byte(out, type_flags);
    put_le(out, 0, width);
    put_le(out, min, width);
    put_le(out, max, width);
    put_le(out, 0, width);
    put_le(out, max - min + 1, width);
    return aml;
}

Aml *aml_word_bus_number(uint16_t min, uint16_t max)
{
    return aml_address_window(AML_RES_WORD_ADDRESS, 2, AML_ADDR_SPACE_BUS, 0, min, max);
}

Aml *aml_word_io(uint16_t min, uint16_t max)
{
    return aml_address_window(AML_RES_WORD_ADDRESS, 2, AML_ADDR_SPACE_IO,
                              AML_ADDR_IO_ENTIRE_RANGE, min, max);
}

Aml *aml_dword_memory(AmlCacheability cacheability, uint32_t min, uint32_t max)
{
    return aml_address_window(AML_RES_DWORD_ADDRESS, 4, AML_ADDR_SPACE_MEMORY,
                              AML_ADDR_MEM_READ_WRITE | (cacheability << 1), min, max);
}
