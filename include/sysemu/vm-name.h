/*
 * The guest's name from -name [guest=]NAME, for whoever shows it: QMP's
 * query-name (softmmu/vm-name.c), the human monitor's "info name".
 */
#ifndef SYSEMU_VM_NAME_H
#define SYSEMU_VM_NAME_H

/* Set once by main before the monitors start (NULL: no -name). */
void vm_name_set(const char *name);
/* NULL when the guest has no name; "" is a name (-name guest=). */
const char *vm_name(void);

#endif
