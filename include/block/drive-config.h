/*
 * The -drive option model: what a user asked for with -drive, -hda..-hdd
 * and -cdrom, checked and completed as QEMU does (interface, bus/unit from
 * index, default ids such as "ide0-hd0", "ide1-cd0", "virtio0", "none0"),
 * with no side effects: nothing is opened here. The command line parses
 * into a list of DriveConfig; the machine opens each with blk_new_open()
 * (block/block-backend.h) and hands it to the device that the interface
 * and bus/unit name.
 */
#ifndef BLOCK_DRIVE_CONFIG_H
#define BLOCK_DRIVE_CONFIG_H

#include <stdbool.h>
#include <glib.h>
#include "qemu/error.h"

typedef enum DriveInterface {
    DRIVE_IF_IDE,       /* the PIIX IDE controller: bus 0-1, unit 0-1 */
    DRIVE_IF_VIRTIO,    /* one virtio-blk-pci per drive */
    DRIVE_IF_NONE,      /* no device: for -device ...,drive=ID */
} DriveInterface;

typedef enum DriveMedia {
    DRIVE_MEDIA_DISK,
    DRIVE_MEDIA_CDROM,  /* read-only, may be empty (no file) */
} DriveMedia;

typedef enum DriveFormat {
    DRIVE_FORMAT_PROBE, /* no format=: probe as QEMU does (raw gets a warning) */
    DRIVE_FORMAT_RAW,
} DriveFormat;

/* QEMU's cache= shorthands (see drive_cache_flags). */
typedef enum DriveCacheMode {
    DRIVE_CACHE_WRITEBACK,      /* the default */
    DRIVE_CACHE_NONE,
    DRIVE_CACHE_WRITETHROUGH,
    DRIVE_CACHE_DIRECTSYNC,
    DRIVE_CACHE_UNSAFE,
} DriveCacheMode;

typedef struct DriveCacheFlags {
    bool direct;        /* O_DIRECT: bypass the host page cache */
    bool writeback;     /* the guest sees a volatile write cache (WCE on) */
    bool no_flush;      /* flushes succeed without reaching the host disk */
} DriveCacheFlags;

typedef enum DriveAioMode {
    DRIVE_AIO_THREADS,  /* the default: preadv/pwritev on worker threads */
    DRIVE_AIO_NATIVE,   /* Linux AIO (libaio); needs cache.direct (none/directsync) */
    DRIVE_AIO_IO_URING, /* io_uring (liburing) */
} DriveAioMode;

typedef enum DriveDiscardMode {
    DRIVE_DISCARD_IGNORE,       /* the default: discard requests succeed, do nothing */
    DRIVE_DISCARD_UNMAP,        /* punch holes in the image */
} DriveDiscardMode;

/* What a request the host fails does (werror= for writes, flushes,
 * discards and write-zeroes; rerror= for reads), as QEMU's -drive says:
 * the block layer acts on it for the devices that honour it (ATA disks,
 * virtio-blk; block/block-backend.h, blk_set_on_error). */
typedef enum DriveErrorAction {
    DRIVE_ERROR_REPORT,     /* the guest gets the error (rerror's default) */
    DRIVE_ERROR_IGNORE,     /* the guest sees success */
    DRIVE_ERROR_STOP,       /* the request waits, the VM stops (io-error) until cont */
    DRIVE_ERROR_ENOSPC,     /* stop for ENOSPC, report the rest (werror's default) */
} DriveErrorAction;

typedef struct DriveConfig {
    char *id;                   /* given, or QEMU's default ("ide0-hd0") */
    char *file;                 /* NULL only for an empty CD-ROM drive */
    DriveInterface interface;
    DriveMedia media;
    int bus;                    /* IDE channel; 0 for the other interfaces */
    int unit;                   /* IDE master 0 / slave 1; the drive's number otherwise */
    int index;                  /* bus * units-per-bus + unit, as QEMU counts */
    DriveFormat format;
    DriveCacheMode cache;
    DriveAioMode aio;
    DriveDiscardMode discard;
    DriveErrorAction werror;
    DriveErrorAction rerror;
    bool read_only;             /* readonly=on, or media=cdrom */
    /* The option as the user wrote it ("-drive file=...", "-hda disk.img"),
     * for errors raised when the drive is opened or attached. */
    char *origin;
} DriveConfig;

/* IDE on the pc machine: two channels of two units. */
#define DRIVE_IDE_BUSES 2
#define DRIVE_IDE_UNITS_PER_BUS 2

/*
 * -drive OPTSTR: parse, place (index/bus/unit, or the next free unit of
 * the interface, as QEMU does) and name it, then append it to drives (a
 * GPtrArray of DriveConfig *, made by drive_config_list_new). Errors are
 * one line without the option's name ("unsupported bus type 'foo'"); the
 * caller prefixes "-drive OPTSTR: ".
 */
bool drive_add(GPtrArray *drives, const char *optstr, Error **errp);

/*
 * -hda FILE, -hdb, -hdc, -hdd (index 0-3, media=disk) and -cdrom FILE
 * (index 2, media=cdrom): option is the option's name without the dash.
 */
bool drive_add_shorthand(GPtrArray *drives, const char *option, const char *file,
                         Error **errp);
/* True for the names drive_add_shorthand accepts. */
bool drive_is_shorthand_option(const char *option);

GPtrArray *drive_config_list_new(void);
DriveConfig *drive_config_find(GPtrArray *drives, const char *id);
/* The drive at interface/bus/unit, or NULL. */
DriveConfig *drive_config_at(GPtrArray *drives, DriveInterface interface, int bus, int unit);

DriveCacheFlags drive_cache_flags(DriveCacheMode mode);
const char *drive_cache_mode_name(DriveCacheMode mode);
const char *drive_aio_mode_name(DriveAioMode mode);
const char *drive_interface_name(DriveInterface interface);
/* "report", "ignore", "stop", "enospc": QEMU's BlockdevOnError names. */
const char *drive_error_action_name(DriveErrorAction action);
/* May an error stop the VM (werror enospc or stop, rerror stop)? QEMU
 * keeps an io-status only then: query-block's "io-status" and
 * BLOCK_IO_ERROR's "nospace" are there only for such a drive. */
bool drive_error_may_stop(DriveErrorAction rerror, DriveErrorAction werror);

#endif
