/*
 * The PC keyboard controller (8042) at ports 0x60/0x64, with no keyboard
 * or mouse attached: enough for Linux's i8042 probe to finish quickly and
 * for a guest to reboot the machine through the controller's reset line.
 */
#ifndef HW_INPUT_I8042_H
#define HW_INPUT_I8042_H

#define I8042_DATA_PORT     0x60
#define I8042_CMD_PORT      0x64
#define I8042_KBD_GSI       1
#define I8042_AUX_GSI       12

/* Create the controller, map its ports and claim GSIs 1 and 12. */
void i8042_new(void);

#endif
