/*
 * 16550A UART (hw/char/serial.h), as the PC's COM ports.
 *
 * Transmission is immediate: a byte written to THR goes to the chardev at
 * once (which never blocks) and the transmitter is empty again, so THRE and
 * TEMT always read as set and there is never anything in the TX FIFO.
 * Reception is paced by the chardev: the I/O thread hands us at most the
 * free room of the RX FIFO, and a guest read that makes room again tells
 * the chardev to resume.
 *
 * Every register access runs under the device lock (the PIO dispatcher
 * takes it); the chardev and timer callbacks on the I/O thread take it
 * themselves.
 */
#include <glib.h>
#include "exec/memory.h"
#include "hw/char/serial.h"
#include "hw/irq.h"
#include "hw/qdev-registry.h"
#include "qemu/log.h"
#include "qemu/timer.h"

#define SERIAL_FIFO_SIZE        16
#define SERIAL_CLOCK_HZ         1843200     /* the PC's crystal */
#define SERIAL_POWER_ON_DIVISOR 12          /* 9600 baud until programmed */

enum {
    REG_RBR_THR = 0,        /* DLL when LCR.DLAB */
    REG_IER = 1,            /* DLM when LCR.DLAB */
    REG_IIR_FCR = 2,
    REG_LCR = 3,
    REG_MCR = 4,
    REG_LSR = 5,
    REG_MSR = 6,
    REG_SCR = 7,
    SERIAL_NUM_REGS = 8,
};

#define IER_ERBFI   0x01    /* received data available */
#define IER_ETBEI   0x02    /* transmitter holding register empty */
#define IER_ELSI    0x04    /* receiver line status */
#define IER_EDSSI   0x08    /* modem status */
#define IER_MASK    0x0f

#define IIR_NO_INT      0x01
#define IIR_ID_MSR      0x00
#define IIR_ID_THRE     0x02
#define IIR_ID_RDA      0x04
#define IIR_ID_RLS      0x06
#define IIR_ID_TIMEOUT  0x0c
#define IIR_FIFO_ON     0xc0

#define FCR_ENABLE      0x01
#define FCR_CLEAR_RX    0x02
#define FCR_CLEAR_TX    0x04
#define FCR_DMA_MODE    0x08
#define FCR_TRIGGER(v)  (((v) >> 6) & 3)

#define LCR_WLS_MASK    0x03    /* word length 5..8 */
#define LCR_STB         0x04    /* 1.5/2 stop bits */
#define LCR_PEN         0x08    /* parity */
#define LCR_DLAB        0x80

#define MCR_DTR         0x01
#define MCR_RTS         0x02
#define MCR_OUT1        0x04
#define MCR_OUT2        0x08
#define MCR_LOOP        0x10
#define MCR_MASK        0x1f

#define LSR_DR          0x01
#define LSR_OE          0x02
#define LSR_THRE        0x20
#define LSR_TEMT        0x40

#define MSR_DCTS        0x01
#define MSR_DDSR        0x02
#define MSR_TERI        0x04
#define MSR_DDCD        0x08
#define MSR_CTS         0x10
#define MSR_DSR         0x20
#define MSR_RI          0x40
#define MSR_DCD         0x80

/* index, iobase and irq not given: from the first free COM port */
#define ISA_SERIAL_AUTO UINT32_MAX

struct ISASerial {
    QEMUDevice dev;
    /* Where it sits, fixed when it is created (info qtree shows them):
     * the port, the interrupt line, the COM port (ISA_SERIAL_AUTO if it
     * was placed by iobase= and irq= alone). */
    uint32_t iobase;
    unsigned gsi;
    uint32_t com_index;
    MemoryRegion io;
    IrqSource irq;
    Chardev *chr;
    QEMUTimer *rx_timeout_timer;

    uint16_t divisor;
    uint8_t ier;
    uint8_t lcr;
    uint8_t mcr;
    uint8_t scr;
    uint8_t msr_delta;      /* MSR bits 0-3, cleared by reading MSR */
    bool fifo_enabled;
    unsigned rx_trigger;    /* RX FIFO level that raises "data available" */
    bool overrun;           /* LSR.OE until LSR is read */
    bool thr_ipending;      /* THRE interrupt not yet acknowledged */
    bool timeout_ipending;  /* character timeout indication */
    int64_t rx_timeout_deadline;
    bool input_paused;      /* can_read said 0: resume when room appears */

    uint8_t rx_fifo[SERIAL_FIFO_SIZE];
    unsigned rx_head;
    unsigned rx_count;
};

/* ---- receive FIFO ---- */

/* Without FIFOs the receiver buffer register holds a single byte. */
static unsigned serial_rx_capacity(ISASerial *s)
{
    return s->fifo_enabled ? SERIAL_FIFO_SIZE : 1;
}

static void serial_rx_clear(ISASerial *s)
{
    s->rx_head = 0;
    s->rx_count = 0;
    s->timeout_ipending = false;
    timer_del(s->rx_timeout_timer);
}

/* Four character times of the programmed line format, during which the
 * receiver must see no activity before it reports a timeout. */
static int64_t serial_char_timeout_ns(ISASerial *s)
{
    unsigned bits = 1 + 5 + (s->lcr & LCR_WLS_MASK) + 1 +
                    ((s->lcr & LCR_STB) ? 1 : 0) + ((s->lcr & LCR_PEN) ? 1 : 0);
    unsigned divisor = MAX(s->divisor, 1);  /* 0 is undefined: fastest */
    return 4 * bits * (NANOSECONDS_PER_SECOND * 16 * divisor / SERIAL_CLOCK_HZ);
}

static void serial_rx_timeout_restart(ISASerial *s)
{
    s->timeout_ipending = false;
    if (s->fifo_enabled && s->rx_count) {
        s->rx_timeout_deadline = clock_get_ns() + serial_char_timeout_ns(s);
        timer_mod(s->rx_timeout_timer, s->rx_timeout_deadline);
    }
}

/* A byte arrives from the line (host input or loopback). On overrun the
 * 16550A keeps the FIFO and loses the new byte; without FIFOs the new byte
 * overwrites the unread one. */
static void serial_rx_push(ISASerial *s, uint8_t byte)
{
    if (s->rx_count == serial_rx_capacity(s)) {
        s->overrun = true;
        if (s->fifo_enabled) {
            return;
        }
        s->rx_count = 0;
    }
    s->rx_fifo[(s->rx_head + s->rx_count) % SERIAL_FIFO_SIZE] = byte;
    s->rx_count++;
}

static uint8_t serial_rx_pop(ISASerial *s)
{
    if (!s->rx_count) {
        return 0;
    }
    uint8_t byte = s->rx_fifo[s->rx_head];
    s->rx_head = (s->rx_head + 1) % SERIAL_FIFO_SIZE;
    s->rx_count--;
    return byte;
}

/* ---- interrupts ---- */

static bool serial_rx_data_available(ISASerial *s)
{
    return s->fifo_enabled ? s->rx_count >= s->rx_trigger : s->rx_count > 0;
}

/* The highest-priority pending interrupt, as IIR bits 0-3. */
static uint8_t serial_pending_interrupt(ISASerial *s)
{
    if ((s->ier & IER_ELSI) && s->overrun) {
        return IIR_ID_RLS;
    }
    if ((s->ier & IER_ERBFI) && serial_rx_data_available(s)) {
        return IIR_ID_RDA;
    }
    if ((s->ier & IER_ERBFI) && s->timeout_ipending) {
        return IIR_ID_TIMEOUT;
    }
    if ((s->ier & IER_ETBEI) && s->thr_ipending) {
        return IIR_ID_THRE;
    }
    if ((s->ier & IER_EDSSI) && s->msr_delta) {
        return IIR_ID_MSR;
    }
    return IIR_NO_INT;
}

/*
 * On a PC the UART's interrupt output reaches the ISA line only through a
 * buffer enabled by the OUT2 pin; in loopback mode the chip drives its
 * modem outputs inactive, so the line stays low there as well.
 */
static void serial_update_irq(ISASerial *s)
{
    bool gate = (s->mcr & (MCR_OUT2 | MCR_LOOP)) == MCR_OUT2;
    irq_source_set(s->irq, gate && serial_pending_interrupt(s) != IIR_NO_INT);
}

/* ---- modem lines ---- */

/* CTS, DSR, RI, DCD as the chip sees them: in loopback, wired to RTS, DTR,
 * OUT1, OUT2; otherwise a host backend that is always connected. */
static uint8_t serial_modem_inputs(ISASerial *s)
{
    if (!(s->mcr & MCR_LOOP)) {
        return MSR_CTS | MSR_DSR | MSR_DCD;
    }
    return ((s->mcr & MCR_RTS) ? MSR_CTS : 0) |
           ((s->mcr & MCR_DTR) ? MSR_DSR : 0) |
           ((s->mcr & MCR_OUT1) ? MSR_RI : 0) |
           ((s->mcr & MCR_OUT2) ? MSR_DCD : 0);
}

static void serial_note_modem_change(ISASerial *s, uint8_t before, uint8_t after)
{
    uint8_t changed = before ^ after;
    if (changed & MSR_CTS) {
        s->msr_delta |= MSR_DCTS;
    }
    if (changed & MSR_DSR) {
        s->msr_delta |= MSR_DDSR;
    }
    if (changed & MSR_DCD) {
        s->msr_delta |= MSR_DDCD;
    }
    if ((before & MSR_RI) && !(after & MSR_RI)) {
        s->msr_delta |= MSR_TERI;   /* trailing edge only */
    }
}

/* ---- register access ---- */

static void serial_resume_input(ISASerial *s)
{
    if (s->input_paused) {
        s->input_paused = false;
        chardev_accept_input(s->chr);
    }
}

static uint8_t serial_read_rbr(ISASerial *s)
{
    uint8_t byte = serial_rx_pop(s);
    serial_rx_timeout_restart(s);
    serial_resume_input(s);
    return byte;
}

static uint8_t serial_read_iir(ISASerial *s)
{
    uint8_t id = serial_pending_interrupt(s);
    if (id == IIR_ID_THRE) {
        s->thr_ipending = false;    /* reading IIR acknowledges THRE */
    }
    return id | (s->fifo_enabled ? IIR_FIFO_ON : 0);
}

static uint8_t serial_read_lsr(ISASerial *s)
{
    uint8_t lsr = LSR_THRE | LSR_TEMT;
    if (s->rx_count) {
        lsr |= LSR_DR;
    }
    if (s->overrun) {
        lsr |= LSR_OE;
        s->overrun = false;
    }
    return lsr;
}

static uint8_t serial_read_msr(ISASerial *s)
{
    uint8_t msr = serial_modem_inputs(s) | s->msr_delta;
    s->msr_delta = 0;
    return msr;
}

static uint64_t serial_io_read(void *opaque, uint64_t offset, unsigned size)
{
    ISASerial *s = opaque;
    bool dlab = s->lcr & LCR_DLAB;
    uint8_t value;

    switch (offset) {
    case REG_RBR_THR:
        value = dlab ? s->divisor & 0xff : serial_read_rbr(s);
        break;
    case REG_IER:
        value = dlab ? s->divisor >> 8 : s->ier;
        break;
    case REG_IIR_FCR:
        value = serial_read_iir(s);
        break;
    case REG_LCR:
        value = s->lcr;
        break;
    case REG_MCR:
        value = s->mcr;
        break;
    case REG_LSR:
        value = serial_read_lsr(s);
        break;
    case REG_MSR:
        value = serial_read_msr(s);
        break;
    default:    /* REG_SCR: the region is 8 bytes long */
        value = s->scr;
        break;
    }
    serial_update_irq(s);
    return value;
}

static void serial_write_thr(ISASerial *s, uint8_t byte)
{
    if (s->mcr & MCR_LOOP) {
        serial_rx_push(s, byte);
        serial_rx_timeout_restart(s);
    } else if (s->chr) {
        chardev_write(s->chr, &byte, 1);
    }
    /* The byte left at once: THR is empty again and says so. */
    s->thr_ipending = true;
}

static void serial_write_ier(ISASerial *s, uint8_t value)
{
    if (value & ~IER_MASK) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: reserved IER bits 0x%02x ignored\n",
                      s->dev.id, value & ~IER_MASK);
    }
    /* Enabling ETBEI while THR is empty raises THRE, as the 16550A does
     * (Linux tests for exactly this). */
    if ((value & IER_ETBEI) && !(s->ier & IER_ETBEI)) {
        s->thr_ipending = true;
    }
    s->ier = value & IER_MASK;
}

static void serial_write_fcr(ISASerial *s, uint8_t value)
{
    static const unsigned trigger_levels[] = { 1, 4, 8, 14 };
    bool enable = value & FCR_ENABLE;

    /* Switching the FIFOs on or off empties them. */
    if (enable != s->fifo_enabled) {
        s->fifo_enabled = enable;
        serial_rx_clear(s);
    }
    /* The other bits only take effect with FCR0 set. Bit 2 (clear TX) has
     * nothing to clear, bit 3 (DMA mode) no DMA to drive, and bits 4-5 are
     * reserved (64-byte FIFO of later chips, probed by drivers): ignored. */
    if (!enable) {
        return;
    }
    if (value & FCR_CLEAR_RX) {
        serial_rx_clear(s);
    }
    s->rx_trigger = trigger_levels[FCR_TRIGGER(value)];
}

static void serial_write_mcr(ISASerial *s, uint8_t value)
{
    if (value & ~MCR_MASK) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: reserved MCR bits 0x%02x ignored\n",
                      s->dev.id, value & ~MCR_MASK);
    }
    uint8_t inputs_before = serial_modem_inputs(s);
    s->mcr = value & MCR_MASK;
    serial_note_modem_change(s, inputs_before, serial_modem_inputs(s));
    /* Host input waits while in loopback; it may flow again now. */
    if (!(s->mcr & MCR_LOOP)) {
        serial_resume_input(s);
    }
}

static void serial_io_write(void *opaque, uint64_t offset, uint64_t value64, unsigned size)
{
    ISASerial *s = opaque;
    uint8_t value = value64;
    bool dlab = s->lcr & LCR_DLAB;

    switch (offset) {
    case REG_RBR_THR:
        if (dlab) {
            s->divisor = (s->divisor & 0xff00) | value;
        } else {
            serial_write_thr(s, value);
        }
        break;
    case REG_IER:
        if (dlab) {
            s->divisor = (s->divisor & 0x00ff) | (value << 8);
        } else {
            serial_write_ier(s, value);
        }
        break;
    case REG_IIR_FCR:
        serial_write_fcr(s, value);
        break;
    case REG_LCR:
        s->lcr = value;
        break;
    case REG_MCR:
        serial_write_mcr(s, value);
        break;
    case REG_LSR:
    case REG_MSR:
        qemu_log_mask(LOG_GUEST_ERROR, "%s: write 0x%02x to read-only %s ignored\n",
                      s->dev.id, value, offset == REG_LSR ? "LSR" : "MSR");
        break;
    default:    /* REG_SCR */
        s->scr = value;
        break;
    }
    serial_update_irq(s);
}

static const MemoryRegionOps serial_io_ops = {
    .read = serial_io_read,
    .write = serial_io_write,
    .max_access_size = 1,
};

/* ---- backend callbacks (I/O thread) ---- */

static size_t serial_can_read(void *opaque)
{
    ISASerial *s = opaque;
    device_lock(&s->dev);
    /* The receiver is cut off from the line in loopback mode. */
    size_t room = (s->mcr & MCR_LOOP) ? 0 : serial_rx_capacity(s) - s->rx_count;
    s->input_paused = room == 0;
    device_unlock(&s->dev);
    return room;
}

static void serial_receive(void *opaque, const uint8_t *buf, size_t len)
{
    ISASerial *s = opaque;
    device_lock(&s->dev);
    for (size_t i = 0; i < len; i++) {
        serial_rx_push(s, buf[i]);
    }
    serial_rx_timeout_restart(s);
    serial_update_irq(s);
    device_unlock(&s->dev);
}

static void serial_rx_timeout(void *opaque)
{
    ISASerial *s = opaque;
    device_lock(&s->dev);
    /* The timer may have been moved or made moot since it fired. */
    if (s->fifo_enabled && s->rx_count && clock_get_ns() >= s->rx_timeout_deadline) {
        s->timeout_ipending = true;
        serial_update_irq(s);
    }
    device_unlock(&s->dev);
}

/* ---- lifecycle ---- */

static void serial_reset(QEMUDevice *dev)
{
    ISASerial *s = (ISASerial *)dev;

    s->divisor = SERIAL_POWER_ON_DIVISOR;
    s->ier = 0;
    s->lcr = 0;
    s->mcr = 0;
    s->scr = 0;
    s->msr_delta = 0;
    s->fifo_enabled = false;
    s->rx_trigger = 1;
    s->overrun = false;
    s->thr_ipending = false;
    serial_rx_clear(s);
    serial_resume_input(s);
    serial_update_irq(s);
}

ISASerial *isa_serial_new(uint32_t iobase, unsigned gsi, Chardev *chr, Error **errp)
{
    if (gsi >= IRQ_MAX_GSI) {
        error_setg(errp, "serial port at 0x%x: interrupt line %u does not exist",
                   iobase, gsi);
        return NULL;
    }
    if (iobase > 0x10000 - SERIAL_NUM_REGS) {
        error_setg(errp, "serial port at 0x%x does not fit in the I/O space", iobase);
        return NULL;
    }
    ISASerial *s = g_new0(ISASerial, 1);
    device_init(&s->dev, "isa-serial", "serial");
    s->iobase = iobase;
    s->gsi = gsi;
    s->com_index = ISA_SERIAL_AUTO;
    s->dev.reset = serial_reset;
    s->chr = chr;
    s->irq = irq_source_claim(gsi);
    s->rx_timeout_timer = timer_new(serial_rx_timeout, s);
    serial_reset(&s->dev);
    memory_region_init_io(&s->io, &s->dev, &serial_io_ops, s, "serial", SERIAL_NUM_REGS);
    address_space_map(address_space_io, &s->io, iobase, 0);
    if (chr) {
        chardev_set_handlers(chr, serial_can_read, serial_receive, s);
    }
    return s;
}

/* ---- the PC's COM ports and -device isa-serial ---- */

/* COM1..COM4: their ports and ISA interrupt lines. */
static const struct {
    uint16_t iobase;
    unsigned irq;
} com_ports[ISA_SERIAL_PORTS] = { { 0x3f8, 4 }, { 0x2f8, 3 }, { 0x3e8, 4 }, { 0x2e8, 3 } };

#define ISA_IRQ_COUNT 16

ISASerial *isa_serial_new_com(unsigned index, Chardev *chr, Error **errp)
{
    g_assert(index < ISA_SERIAL_PORTS);
    ISASerial *s = isa_serial_new(com_ports[index].iobase, com_ports[index].irq, chr, errp);
    if (s) {
        s->com_index = index;
    }
    return s;
}

static bool io_port_is_free(uint32_t port)
{
    return !address_space_lookup(address_space_io, port, NULL);
}

/* The first COM port whose registers no device (a -serial one) has taken,
 * as QEMU gives an isa-serial without index= the next one. */
static bool first_free_com_port(uint32_t *index, Error **errp)
{
    for (uint32_t i = 0; i < ISA_SERIAL_PORTS; i++) {
        if (io_port_is_free(com_ports[i].iobase)) {
            *index = i;
            return true;
        }
    }
    error_setg(errp, "no free COM port (at most %d ISA serial ports)", ISA_SERIAL_PORTS);
    return false;
}

typedef struct ISASerialOptions {
    uint32_t index, iobase, irq;
    DeviceLink chardev;
} ISASerialOptions;

/* Undescribed, as in QEMU's help: index is the COM port 0 to 3 (unset:
 * the first free), iobase and irq default to that port's. */
static const DeviceProperty isa_serial_properties[] = {
    DEFINE_PROP_UINT32("index", ISASerialOptions, index, ISA_SERIAL_AUTO, NULL),
    DEFINE_PROP_UINT32("iobase", ISASerialOptions, iobase, ISA_SERIAL_AUTO, NULL),
    DEFINE_PROP_UINT32("irq", ISASerialOptions, irq, ISA_SERIAL_AUTO, NULL),
    DEFINE_PROP_LINK("chardev", DEVICE_PROP_CHARDEV, ISASerialOptions, chardev),
};

static QEMUDevice *isa_serial_realize(const void *options, const DeviceBuses *buses,
                                      Error **errp)
{
    const ISASerialOptions *o = options;
    uint32_t index = o->index;
    if (index != ISA_SERIAL_AUTO && index >= ISA_SERIAL_PORTS) {
        error_setg(errp, "index=%u: there are %d ISA serial ports (index 0 to %d)", index,
                   ISA_SERIAL_PORTS, ISA_SERIAL_PORTS - 1);
        return NULL;
    }
    bool needs_index = o->iobase == ISA_SERIAL_AUTO || o->irq == ISA_SERIAL_AUTO;
    if (index == ISA_SERIAL_AUTO && needs_index && !first_free_com_port(&index, errp)) {
        return NULL;
    }
    uint32_t iobase = o->iobase != ISA_SERIAL_AUTO ? o->iobase : com_ports[index].iobase;
    uint32_t irq = o->irq != ISA_SERIAL_AUTO ? o->irq : com_ports[index].irq;
    if (irq >= ISA_IRQ_COUNT) {
        error_setg(errp, "irq=%u: ISA interrupt lines are 0 to %d", irq, ISA_IRQ_COUNT - 1);
        return NULL;
    }
    if (iobase <= UINT16_MAX && !io_port_is_free(iobase)) {
        error_setg(errp, "I/O port 0x%x is already in use", iobase);
        return NULL;
    }
    /* Without chardev=, output goes nowhere and there is no input. */
    if (o->chardev.id && !chardev_claim(o->chardev.id, errp)) {
        return NULL;
    }
    ISASerial *s = isa_serial_new(iobase, irq, o->chardev.backend, errp);
    if (!s) {
        return NULL;
    }
    s->com_index = index;
    return &s->dev;
}

/* What it was placed at, also where index, iobase or irq were left to it. */
static void isa_serial_chosen_options(QEMUDevice *dev, void *options)
{
    const ISASerial *s = (const ISASerial *)((const char *)dev - offsetof(ISASerial, dev));
    ISASerialOptions *o = options;
    o->index = s->com_index;
    o->iobase = s->iobase;
    o->irq = s->gsi;
}

const DeviceTypeInfo isa_serial_type = {
    .name = "isa-serial",
    .bus = DEVICE_BUS_ISA,
    .category = DEVICE_CATEGORY_INPUT,
    .description = "16550A UART at a COM port",
    DEVICE_PROPERTIES(isa_serial_properties),
    .options_size = sizeof(ISASerialOptions),
    .realize = isa_serial_realize,
    .chosen_options = isa_serial_chosen_options,
};
