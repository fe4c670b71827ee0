/*
 * The PC keyboard controller (Intel 8042 as used by the IBM PC/AT and PS/2)
 * with nothing plugged into its keyboard and auxiliary (mouse) ports.
 *
 * Emulated subset (port 0x64 commands):
 *   0x20        read the command byte
 *   0x60        write the command byte (next byte on port 0x60)
 *   0xa7 0xa8   disable / enable the auxiliary port
 *   0xa9 0xab   auxiliary / keyboard interface test: 0x00 (no error)
 *   0xaa        controller self-test: 0x55, sets the system flag
 *   0xad 0xae   disable / enable the keyboard port
 *   0xd0        read the output port
 *   0xd1        write the output port (bit 0 clear resets the machine;
 *               bit 1, the A20 gate, is stored but A20 stays enabled)
 *   0xd2 0xd3   write the keyboard / auxiliary output buffer (loopback)
 *   0xd4        send the next byte to the auxiliary device
 *   0xf0-0xff   pulse output port lines; bit 0 clear pulses the reset line
 *               (0xfe is the classic "reboot" command)
 * Bytes written to port 0x60 with no command waiting for them go to the
 * keyboard, and 0xd4 bytes to the mouse. Neither exists, so the controller
 * answers like a real one whose device never clocks the byte in: 0xfe with
 * the time-out status bit. Linux's probe therefore finds the controller,
 * finds no keyboard or mouse within a few quick NAKs, and goes on.
 *
 * Output goes through the single output buffer (status bit 0); bytes from
 * the auxiliary side also set status bit 5. IRQ 1 (keyboard side) and
 * IRQ 12 (auxiliary side) follow the buffer while their enable bits in the
 * command byte are set, and drop when port 0x60 is read.
 */
#include "exec/memory.h"
#include "hw/input/i8042.h"
#include "hw/irq.h"
#include "hw/qdev.h"
#include "qemu/log.h"
#include "sysemu/runstate.h"

/* Status register (port 0x64 read). */
#define STAT_OBF            0x01    /* output buffer full */
#define STAT_SYS            0x04    /* system flag: self-test passed */
#define STAT_CMD            0x08    /* last write was to port 0x64 */
#define STAT_UNLOCKED       0x10    /* keyboard inhibit switch off */
#define STAT_AUX_OBF        0x20    /* output buffer byte is from aux */
#define STAT_TIMEOUT        0x40

/* Command byte. */
#define CB_KBD_INT          0x01
#define CB_AUX_INT          0x02
#define CB_SYS              0x04
#define CB_KBD_DISABLE      0x10
#define CB_AUX_DISABLE      0x20
#define CB_XLATE            0x40

/* Output port. */
#define OUTPORT_RESET_LINE  0x01    /* low = CPU held in reset */
#define OUTPORT_A20         0x02

#define SELF_TEST_PASSED    0x55
#define INTERFACE_TEST_OK   0x00
#define NO_DEVICE_RESPONSE  0xfe

/* Commands; the ones taking a data byte are remembered in pending_cmd. */
enum {
    CMD_READ_CB         = 0x20,
    CMD_WRITE_CB        = 0x60,
    CMD_AUX_DISABLE     = 0xa7,
    CMD_AUX_ENABLE      = 0xa8,
    CMD_AUX_TEST        = 0xa9,
    CMD_SELF_TEST       = 0xaa,
    CMD_KBD_TEST        = 0xab,
    CMD_KBD_DISABLE     = 0xad,
    CMD_KBD_ENABLE      = 0xae,
    CMD_READ_OUTPORT    = 0xd0,
    CMD_WRITE_OUTPORT   = 0xd1,
    CMD_WRITE_KBD_OBUF  = 0xd2,
    CMD_WRITE_AUX_OBUF  = 0xd3,
    CMD_WRITE_AUX       = 0xd4,
    CMD_PULSE_FIRST     = 0xf0,
};

typedef struct I8042State {
    QEMUDevice dev;
    MemoryRegion data_io;
    MemoryRegion cmd_io;
    IrqSource kbd_irq;
    IrqSource aux_irq;

    uint8_t status;
    uint8_t command_byte;
    uint8_t output_port;
    uint8_t output;         /* output buffer; stale after it is read */
    uint8_t pending_cmd;    /* command waiting for its byte on 0x60, or 0 */
} I8042State;

static void i8042_update_irqs(I8042State *s)
{
    bool full = s->status & STAT_OBF;
    bool from_aux = s->status & STAT_AUX_OBF;
    irq_source_set(s->kbd_irq, full && !from_aux && (s->command_byte & CB_KBD_INT));
    irq_source_set(s->aux_irq, full && from_aux && (s->command_byte & CB_AUX_INT));
}

/* Put a byte in the output buffer; status_bits are AUX_OBF and TIMEOUT. */
static void i8042_output(I8042State *s, uint8_t value, uint8_t status_bits)
{
    s->output = value;
    s->status &= ~(STAT_AUX_OBF | STAT_TIMEOUT);
    s->status |= STAT_OBF | status_bits;
    i8042_update_irqs(s);
}

static void i8042_write_command_byte(I8042State *s, uint8_t value)
{
    s->command_byte = value;
    s->status = (s->status & ~STAT_SYS) | ((value & CB_SYS) ? STAT_SYS : 0);
    i8042_update_irqs(s);
}

static void i8042_write_output_port(I8042State *s, uint8_t value)
{
    s->output_port = value;
    if (!(value & OUTPORT_A20)) {
        qemu_log_mask(LOG_UNIMP, "i8042: A20 gate disable ignored\n");
    }
    if (!(value & OUTPORT_RESET_LINE)) {
        qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
    }
}

/* Port 0x64 write. */
static void i8042_command(I8042State *s, uint8_t cmd)
{
    s->pending_cmd = 0;
    switch (cmd) {
    case CMD_READ_CB:
        i8042_output(s, s->command_byte, 0);
        break;
    case CMD_WRITE_CB:
    case CMD_WRITE_OUTPORT:
    case CMD_WRITE_KBD_OBUF:
    case CMD_WRITE_AUX_OBUF:
    case CMD_WRITE_AUX:
        s->pending_cmd = cmd;
        break;
    case CMD_AUX_DISABLE:
        i8042_write_command_byte(s, s->command_byte | CB_AUX_DISABLE);
        break;
    case CMD_AUX_ENABLE:
        i8042_write_command_byte(s, s->command_byte & ~CB_AUX_DISABLE);
        break;
    case CMD_KBD_DISABLE:
        i8042_write_command_byte(s, s->command_byte | CB_KBD_DISABLE);
        break;
    case CMD_KBD_ENABLE:
        i8042_write_command_byte(s, s->command_byte & ~CB_KBD_DISABLE);
        break;
    case CMD_AUX_TEST:
    case CMD_KBD_TEST:
        i8042_output(s, INTERFACE_TEST_OK, 0);
        break;
    case CMD_SELF_TEST:
        s->status |= STAT_SYS;
        i8042_output(s, SELF_TEST_PASSED, 0);
        break;
    case CMD_READ_OUTPORT:
        i8042_output(s, s->output_port, 0);
        break;
    default:
        if (cmd >= CMD_PULSE_FIRST) {
            /* Lines whose bit is 0 are pulsed; only the reset line is wired. */
            if (!(cmd & OUTPORT_RESET_LINE)) {
                qemu_system_reset_request(SHUTDOWN_CAUSE_GUEST_RESET);
            }
            break;
        }
        qemu_log_mask(LOG_GUEST_ERROR, "i8042: unsupported command 0x%02x ignored\n", cmd);
        break;
    }
}

/* Port 0x60 write: the data byte of a pending command, or a device byte. */
static void i8042_data(I8042State *s, uint8_t value)
{
    uint8_t cmd = s->pending_cmd;
    s->pending_cmd = 0;
    switch (cmd) {
    case CMD_WRITE_CB:
        i8042_write_command_byte(s, value);
        break;
    case CMD_WRITE_OUTPORT:
        i8042_write_output_port(s, value);
        break;
    case CMD_WRITE_KBD_OBUF:
        i8042_output(s, value, 0);
        break;
    case CMD_WRITE_AUX_OBUF:
        i8042_output(s, value, STAT_AUX_OBF);
        break;
    case CMD_WRITE_AUX:
        i8042_output(s, NO_DEVICE_RESPONSE, STAT_AUX_OBF | STAT_TIMEOUT);
        break;
    default:
        i8042_output(s, NO_DEVICE_RESPONSE, STAT_TIMEOUT);
        break;
    }
}

static uint64_t i8042_data_read(void *opaque, uint64_t offset, unsigned size)
{
    I8042State *s = opaque;
    s->status &= ~(STAT_OBF | STAT_AUX_OBF | STAT_TIMEOUT);
    i8042_update_irqs(s);
    return s->output;
}

static void i8042_data_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    I8042State *s = opaque;
    s->status &= ~STAT_CMD;
    i8042_data(s, value);
}

static uint64_t i8042_status_read(void *opaque, uint64_t offset, unsigned size)
{
    I8042State *s = opaque;
    return s->status;
}

static void i8042_command_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
    I8042State *s = opaque;
    s->status |= STAT_CMD;
    i8042_command(s, value);
}

static const MemoryRegionOps i8042_data_ops = {
    .read = i8042_data_read,
    .write = i8042_data_write,
    .max_access_size = 1,
};

static const MemoryRegionOps i8042_cmd_ops = {
    .read = i8042_status_read,
    .write = i8042_command_write,
    .max_access_size = 1,
};

/*
 * The state a BIOS leaves after POST: self-test passed, keyboard interrupt
 * and scan-code translation on, A20 enabled, reset line inactive.
 */
static void i8042_reset(QEMUDevice *dev)
{
    I8042State *s = (I8042State *)dev;
    s->status = STAT_SYS | STAT_UNLOCKED;
    s->command_byte = CB_KBD_INT | CB_SYS | CB_XLATE;
    s->output_port = OUTPORT_RESET_LINE | OUTPORT_A20;
    s->output = 0;
    s->pending_cmd = 0;
    i8042_update_irqs(s);
}

void i8042_new(void)
{
    I8042State *s = g_new0(I8042State, 1);
    device_init(&s->dev, "i8042", "i8042");
    s->dev.reset = i8042_reset;
    s->kbd_irq = irq_source_claim(I8042_KBD_GSI);
    s->aux_irq = irq_source_claim(I8042_AUX_GSI);
    i8042_reset(&s->dev);

    memory_region_init_io(&s->data_io, &s->dev, &i8042_data_ops, s, "i8042-data", 1);
    memory_region_init_io(&s->cmd_io, &s->dev, &i8042_cmd_ops, s, "i8042-cmd", 1);
    address_space_map(address_space_io, &s->data_io, I8042_DATA_PORT, 0);
    address_space_map(address_space_io, &s->cmd_io, I8042_CMD_PORT, 0);
}
