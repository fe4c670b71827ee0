/*
 * isa-debug-exit, port 0x80 and the i8042 keyboard controller, driven
 * through the port I/O dispatch path.
 */
#include <string.h>
#include <glib.h>
#include "exec/memory.h"
#include "hw/input/i8042.h"
#include "hw/irq.h"
#include "hw/misc/isa-misc.h"
#include "hw/qdev.h"
#include "sysemu/runstate.h"
#include "pio.h"

/* i8042 status bits and command byte bits as the 8042 documents them. */
#define STAT_OBF        0x01
#define STAT_IBF        0x02
#define STAT_SYS        0x04
#define STAT_CMD        0x08
#define STAT_AUX_OBF    0x20
#define STAT_TIMEOUT    0x40
#define CB_KBD_INT      0x01
#define CB_AUX_INT      0x02
#define CB_AUX_DISABLE  0x20

static int take_exit_status(void)
{
    int status = -1;
    ShutdownCause cause = SHUTDOWN_CAUSE_HOST_SIGNAL;
    g_assert_true(runstate_take_shutdown_request(&cause, &status));
    /* QEMU's isa-debug-exit calls exit(): no SHUTDOWN event. */
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_NONE);
    return status;
}

static void test_debug_exit(void)
{
    Error *err = NULL;
    g_assert_true(isa_debug_exit_new(0xf4, 4, &err));
    g_assert_null(err);
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));

    outb(0xf4, 5);
    g_assert_cmpint(take_exit_status(), ==, 11);

    /* Any width, any port of the range. */
    uint32_t value = 0x21;
    g_assert_cmpint(address_space_write(address_space_io, 0xf4, &value, 4), ==, MEMTX_OK);
    g_assert_cmpint(take_exit_status(), ==, 0x43);
    outb(0xf7, 0);
    g_assert_cmpint(take_exit_status(), ==, 1);

    value = 0xffffffff;
    g_assert_cmpint(address_space_read(address_space_io, 0xf4, &value, 4), ==, MEMTX_OK);
    g_assert_cmphex(value, ==, 0);
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
}

static void test_debug_exit_default_port(void)
{
    Error *err = NULL;
    g_assert_true(isa_debug_exit_new(ISA_DEBUG_EXIT_DEFAULT_IOBASE,
                                     ISA_DEBUG_EXIT_DEFAULT_IOSIZE, &err));
    outb(0x502, 0x2a);
    g_assert_cmpint(take_exit_status(), ==, 0x55);
    /* Just past the range: nothing there. */
    uint8_t one = 1;
    g_assert_cmpint(address_space_write(address_space_io, 0x503, &one, 1), ==, MEMTX_UNASSIGNED);
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
}

static void test_debug_exit_bad_config(void)
{
    Error *err = NULL;
    g_assert_false(isa_debug_exit_new(0x600, 3, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "iosize"));
    error_free(err);
    err = NULL;
    g_assert_false(isa_debug_exit_new(0x600, 0, &err));
    g_assert_nonnull(err);
    error_free(err);
    err = NULL;
    g_assert_false(isa_debug_exit_new(0xfffe, 4, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->msg, "iobase"));
    error_free(err);
    /* Nothing was mapped by the failed attempts. */
    g_assert_null(address_space_lookup(address_space_io, 0x600, NULL));
}

static void test_port80(void)
{
    port80_new();
    outb(PORT80_IOBASE, 0x42);
    g_assert_cmphex(inb(PORT80_IOBASE), ==, 0x42);
    outb(PORT80_IOBASE, 0xd3);
    g_assert_cmphex(inb(PORT80_IOBASE), ==, 0xd3);
    device_reset_all();
    g_assert_cmphex(inb(PORT80_IOBASE), ==, 0);
}

static uint8_t i8042_command_result(uint8_t cmd)
{
    outb(I8042_CMD_PORT, cmd);
    g_assert_cmphex(inb(I8042_CMD_PORT) & STAT_OBF, ==, STAT_OBF);
    return inb(I8042_DATA_PORT);
}

static void test_i8042_status_and_self_test(void)
{
    /* Fresh from reset: nothing to read, ready for input, POST passed. */
    uint8_t status = inb(I8042_CMD_PORT);
    g_assert_cmphex(status & (STAT_OBF | STAT_IBF | STAT_AUX_OBF | STAT_TIMEOUT), ==, 0);
    g_assert_cmphex(status & STAT_SYS, ==, STAT_SYS);

    outb(I8042_CMD_PORT, 0xaa);
    status = inb(I8042_CMD_PORT);
    g_assert_cmphex(status & (STAT_OBF | STAT_CMD), ==, STAT_OBF | STAT_CMD);
    /* The command byte after reset enables the keyboard interrupt. */
    g_assert_true(irq_line_level(I8042_KBD_GSI));
    g_assert_cmphex(inb(I8042_DATA_PORT), ==, 0x55);
    g_assert_cmphex(inb(I8042_CMD_PORT) & STAT_OBF, ==, 0);
    g_assert_false(irq_line_level(I8042_KBD_GSI));

    g_assert_cmphex(i8042_command_result(0xab), ==, 0x00);
    g_assert_cmphex(i8042_command_result(0xa9), ==, 0x00);
}

static void test_i8042_command_byte(void)
{
    outb(I8042_CMD_PORT, 0x60);
    outb(I8042_DATA_PORT, 0x00);    /* interrupts off, system flag clear */
    g_assert_cmphex(inb(I8042_CMD_PORT) & (STAT_SYS | STAT_CMD), ==, 0);
    g_assert_cmphex(i8042_command_result(0x20), ==, 0x00);
    g_assert_false(irq_line_level(I8042_KBD_GSI));

    outb(I8042_CMD_PORT, 0xa7);
    g_assert_cmphex(i8042_command_result(0x20), ==, CB_AUX_DISABLE);
    outb(I8042_CMD_PORT, 0xa8);
    g_assert_cmphex(i8042_command_result(0x20), ==, 0x00);
    outb(I8042_CMD_PORT, 0xad);
    g_assert_cmphex(i8042_command_result(0x20), ==, 0x10);
    outb(I8042_CMD_PORT, 0xae);

    outb(I8042_CMD_PORT, 0x60);
    outb(I8042_DATA_PORT, 0x47);
    g_assert_cmphex(i8042_command_result(0x20), ==, 0x47);
    g_assert_cmphex(inb(I8042_CMD_PORT) & STAT_SYS, ==, STAT_SYS);
}

static void test_i8042_no_devices(void)
{
    outb(I8042_CMD_PORT, 0x60);
    outb(I8042_DATA_PORT, 0x40 | CB_KBD_INT | CB_AUX_INT);

    /* A keyboard command (identify) times out: nobody is listening. */
    outb(I8042_DATA_PORT, 0xf2);
    uint8_t status = inb(I8042_CMD_PORT);
    g_assert_cmphex(status & (STAT_OBF | STAT_TIMEOUT | STAT_AUX_OBF | STAT_CMD), ==,
                    STAT_OBF | STAT_TIMEOUT);
    g_assert_true(irq_line_level(I8042_KBD_GSI));
    g_assert_cmphex(inb(I8042_DATA_PORT), ==, 0xfe);
    g_assert_cmphex(inb(I8042_CMD_PORT) & (STAT_OBF | STAT_TIMEOUT), ==, 0);

    /* Same for the mouse, on the auxiliary side and IRQ 12. */
    outb(I8042_CMD_PORT, 0xd4);
    outb(I8042_DATA_PORT, 0xf2);
    g_assert_cmphex(inb(I8042_CMD_PORT) & (STAT_OBF | STAT_TIMEOUT | STAT_AUX_OBF), ==,
                    STAT_OBF | STAT_TIMEOUT | STAT_AUX_OBF);
    g_assert_true(irq_line_level(I8042_AUX_GSI));
    g_assert_false(irq_line_level(I8042_KBD_GSI));
    g_assert_cmphex(inb(I8042_DATA_PORT), ==, 0xfe);
    g_assert_false(irq_line_level(I8042_AUX_GSI));

    /* The auxiliary loopback Linux uses to find the port. */
    outb(I8042_CMD_PORT, 0xd3);
    outb(I8042_DATA_PORT, 0x5a);
    g_assert_cmphex(inb(I8042_CMD_PORT) & (STAT_OBF | STAT_AUX_OBF | STAT_TIMEOUT), ==,
                    STAT_OBF | STAT_AUX_OBF);
    g_assert_cmphex(inb(I8042_DATA_PORT), ==, 0x5a);

    /* Unknown commands are ignored. */
    outb(I8042_CMD_PORT, 0x05);
    g_assert_cmphex(inb(I8042_CMD_PORT) & STAT_OBF, ==, 0);
}

static void test_i8042_reset_line(void)
{
    g_assert_false(runstate_take_reset_request(NULL));
    /* Pulsing lines other than the reset line does nothing. */
    outb(I8042_CMD_PORT, 0xff);
    outb(I8042_CMD_PORT, 0xf1);
    g_assert_false(runstate_take_reset_request(NULL));
    outb(I8042_CMD_PORT, 0xfe);
    ShutdownCause cause = SHUTDOWN_CAUSE_NONE;
    g_assert_true(runstate_take_reset_request(&cause));
    g_assert_cmpint(cause, ==, SHUTDOWN_CAUSE_GUEST_RESET);

    /* Writing the output port with the reset bit low resets as well. */
    g_assert_cmphex(i8042_command_result(0xd0) & 0x03, ==, 0x03);
    outb(I8042_CMD_PORT, 0xd1);
    outb(I8042_DATA_PORT, 0x03);
    g_assert_false(runstate_take_reset_request(NULL));
    outb(I8042_CMD_PORT, 0xd1);
    outb(I8042_DATA_PORT, 0x02);
    g_assert_true(runstate_take_reset_request(NULL));
    g_assert_false(runstate_take_shutdown_request(NULL, NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    i8042_new();

    g_test_add_func("/misc/debug-exit", test_debug_exit);
    g_test_add_func("/misc/debug-exit-default-port", test_debug_exit_default_port);
    g_test_add_func("/misc/debug-exit-bad-config", test_debug_exit_bad_config);
    g_test_add_func("/misc/port80", test_port80);
    g_test_add_func("/misc/i8042/status-self-test", test_i8042_status_and_self_test);
    g_test_add_func("/misc/i8042/command-byte", test_i8042_command_byte);
    g_test_add_func("/misc/i8042/no-devices", test_i8042_no_devices);
    g_test_add_func("/misc/i8042/reset-line", test_i8042_reset_line);
    return g_test_run();
}
