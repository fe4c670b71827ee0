/*
 * -object TYPE,id=ID[,...]: the backend objects the command line creates
 * for devices to name. Only iothread exists so far (sysemu/iothread.h).
 * Private to softmmu/cmdline.c.
 */
#ifndef SOFTMMU_CMDLINE_OBJECT_H
#define SOFTMMU_CMDLINE_OBJECT_H

#include <stdio.h>
#include "qemu/keyval.h"
#include "sysemu/machine-config.h"

typedef enum ObjectParseResult {
    OBJECT_PARSE_ERROR,
    OBJECT_PARSE_ADDED,
    OBJECT_PARSE_HELP,          /* -object help: the types were listed on out */
} ObjectParseResult;

/* items: the option's KeyvalItems, the type under "qom-type". */
ObjectParseResult object_config_parse(MachineConfig *cfg, GPtrArray *items, FILE *out,
                                      Error **errp);

#endif
