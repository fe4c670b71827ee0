/*
 * Which image format a file's first bytes announce: the magic numbers that
 * the formats' public specifications put in their headers. Used to refuse
 * a non-raw image opened without format= (this VMM reads raw images only)
 * and, for a probed raw image, to refuse a guest write that would make
 * block 0 look like one (a guest could otherwise turn its disk into, say,
 * a qcow2 header naming a host file as backing store for the next run
 * that probes it).
 */
#include <string.h>
#include "block-internal.h"

typedef struct FormatMagic {
    const char *format;
    size_t offset;
    const char *magic;
    size_t len;
} FormatMagic;

#define MAGIC(fmt, off, str) { fmt, off, str, sizeof(str) - 1 }

static const FormatMagic format_magics[] = {
    MAGIC("qcow2", 0, "QFI\xfb"),                   /* qcow and qcow2 */
    MAGIC("qed", 0, "QED\0"),
    MAGIC("vmdk", 0, "KDMV"),                       /* VMDK4 sparse extent */
    MAGIC("vmdk", 0, "COWD"),                       /* VMDK3 */
    MAGIC("vmdk", 0, "# Disk DescriptorFile"),
    MAGIC("vdi", 64, "\x7f\x10\xda\xbe"),           /* signature 0xbeda107f, LE */
    MAGIC("vhdx", 0, "vhdxfile"),
    MAGIC("vpc", 0, "conectix"),                    /* dynamic VHD's footer copy */
    MAGIC("bochs", 0, "Bochs Virtual HD Image"),
    MAGIC("parallels", 0, "WithoutFreeSpace"),
    MAGIC("parallels", 0, "WithouFreSpacExt"),
    MAGIC("luks", 0, "LUKS\xba\xbe"),
    MAGIC("cloop", 0, "#!/bin/sh\n#V2.0 Format\nmodprobe cloop file=$0"),
};

const char *block_probe_format(const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < G_N_ELEMENTS(format_magics); i++) {
        const FormatMagic *m = &format_magics[i];
        if (m->offset + m->len <= len && memcmp(buf + m->offset, m->magic, m->len) == 0) {
            return m->format;
        }
    }
    return NULL;
}
