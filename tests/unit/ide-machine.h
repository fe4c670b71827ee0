/*
 * The machine the IDE unit suites drive (test-ide, test-qmp-block): the
 * PIIX3 IDE function on a PCI bus of its own, with I/O decoding and bus
 * mastering on and its bus-master BAR at BMDMA_BASE, and three drives made
 * from -drive option strings as the command line makes them: a disk on
 * ide.0 master (ide0-hd0), optionally a second disk on ide.0 slave
 * (ide0-hd1) with options of the caller's, a CD-ROM on ide.1 master (ide1-cd0) and an
 * empty CD-ROM drive on ide.1 slave (ide1-cd1), on temporary raw images
 * whose every byte is disk_byte(offset). The caller sets up memory, the
 * main loop and the interrupt backend first.
 */
#ifndef TESTS_UNIT_IDE_MACHINE_H
#define TESTS_UNIT_IDE_MACHINE_H

#include <glib.h>
#include <glib/gstdio.h>
#include "block/drive-config.h"
#include "hw/ide/ide.h"
#include "hw/pci/pci.h"
#include "sysemu/drives.h"

#define DISK_SECTORS    2048                /* 1 MiB */
#define CD_BLOCKS       64                  /* 128 KiB */
#define BMDMA_BASE      0xc000

typedef struct IDETestMachine {
    char *dir;                  /* the temporary folder of the images */
    char *disk_path, *cd_path;
    char *disk1_path;           /* ide0-hd1's image, NULL without one */
    GPtrArray *cfgs;
    PCIBus *bus;
} IDETestMachine;

/* The byte at offset of every image: differs from sector to sector, so a
 * read of the wrong sector shows. */
static inline uint8_t disk_byte(uint64_t offset)
{
    return (uint8_t)(offset * 7 + (offset >> 9) * 13 + 1);
}

/* A new image of size bytes named name in dir (g_free the path). */
static inline char *ide_test_image_new(const char *dir, const char *name, size_t size)
{
    char *path = g_build_filename(dir, name, NULL);
    g_autofree uint8_t *data = g_malloc(size);
    for (size_t i = 0; i < size; i++) {
        data[i] = disk_byte(i);
    }
    g_assert_true(g_file_set_contents(path, (char *)data, size, NULL));
    return path;
}

static inline unsigned ide_test_map_irq(unsigned slot, unsigned pin)
{
    return 16;
}

/* -drive optstr, with the origin its errors name. */
static inline void ide_test_add_drive(GPtrArray *cfgs, const char *optstr)
{
    Error *err = NULL;
    g_assert_true(drive_add(cfgs, optstr, &err));
    DriveConfig *cfg = g_ptr_array_index(cfgs, cfgs->len - 1);
    cfg->origin = g_strdup_printf("-drive %s", optstr);
}

/* The images in a new folder made from dir_template (g_dir_make_tmp),
 * the drives opened and the function on its bus. With disk1_options (say
 * "werror=stop") ide.0's slave is a disk too, its -drive given them. */
static inline void ide_test_machine_init(IDETestMachine *m, const char *dir_template,
                                         const char *disk1_options)
{
    m->dir = g_dir_make_tmp(dir_template, NULL);
    g_assert_nonnull(m->dir);
    m->disk_path = ide_test_image_new(m->dir, "disk.raw", DISK_SECTORS * 512);
    m->cd_path = ide_test_image_new(m->dir, "cd.iso", CD_BLOCKS * 2048);
    m->cfgs = drive_config_list_new();
    g_autofree char *disk = g_strdup_printf("file=%s,format=raw,if=ide,index=0", m->disk_path);
    g_autofree char *cd = g_strdup_printf("file=%s,format=raw,if=ide,index=2,media=cdrom",
                                          m->cd_path);
    ide_test_add_drive(m->cfgs, disk);
    m->disk1_path = NULL;
    if (disk1_options) {
        m->disk1_path = ide_test_image_new(m->dir, "disk1.raw", DISK_SECTORS * 512);
        g_autofree char *disk1 = g_strdup_printf("file=%s,format=raw,if=ide,index=1,%s",
                                                 m->disk1_path, disk1_options);
        ide_test_add_drive(m->cfgs, disk1);
    }
    ide_test_add_drive(m->cfgs, cd);
    ide_test_add_drive(m->cfgs, "if=ide,index=3,media=cdrom");

    Error *err = NULL;
    m->bus = pci_bus_new(ide_test_map_irq);
    DeviceBuses buses = { .pci = m->bus, .ide = piix3_ide_new(m->bus, &err) };
    g_assert_nonnull(buses.ide);
    g_assert_true(drives_open(m->cfgs, &err));
    g_assert_true(drives_create_devices(DRIVE_IF_IDE, &buses, &err));
    g_assert_true(pci_bus_assign_resources(m->bus, BMDMA_BASE, 0xffff, 0xe0000000,
                                           0xfebfffff, &err));
    pci_bus_config_write(m->bus, PIIX3_IDE_DEVFN, 0x04, 0x5, 2);   /* I/O, bus master */
}

/* Close the drives and remove the images and their folder (which must
 * hold nothing else by now). */
static inline void ide_test_machine_cleanup(IDETestMachine *m)
{
    drives_close_all();
    g_unlink(m->disk_path);
    g_unlink(m->cd_path);
    if (m->disk1_path) {
        g_unlink(m->disk1_path);
    }
    g_rmdir(m->dir);
    g_ptr_array_unref(m->cfgs);
    g_free(m->disk_path);
    g_free(m->cd_path);
    g_free(m->disk1_path);
    g_free(m->dir);
}

#endif
