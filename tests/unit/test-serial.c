/*
 * 16550A UART through the port I/O dispatch path. COM1 (0x3f8, IRQ 4) is
 * connected to a stdio chardev whose stdin and stdout are pipes, so the
 * tests type input and read output like a user at a terminal; COM2 (0x2f8,
 * IRQ 3) writes to a file.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "chardev/char.h"
#include "exec/memory.h"
#include "hw/char/serial.h"
#include "hw/irq.h"
#include "hw/qdev.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "pio.h"

#define COM1 0x3f8
#define COM1_GSI 4
#define COM2 0x2f8
#define COM2_GSI 3

enum { RBR = 0, THR = 0, DLL = 0, IER = 1, DLM = 1, IIR = 2, FCR = 2,
       LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };

#define LSR_IDLE    0x60    /* THRE | TEMT */
#define LSR_DR      0x01
#define LSR_OE      0x02
#define MCR_OUT2    0x08
#define MCR_LOOP    0x10

static int com1_stdin_writer;
static int com1_stdout_reader;
static Chardev *com2_chr;
static char *com2_path;

static void run_ready_sources(void)
{
    for (int i = 0; i < 1000 && g_main_context_iteration(main_loop_context(), FALSE); i++) {
    }
}

static void type_input(const char *text)
{
    g_assert_cmpint(write(com1_stdin_writer, text, strlen(text)), ==, strlen(text));
    run_ready_sources();
}

static GString *read_com1_output(void)
{
    GString *out = g_string_new(NULL);
    char buf[256];
    ssize_t n;
    run_ready_sources();
    while ((n = read(com1_stdout_reader, buf, sizeof(buf))) > 0) {
        g_string_append_len(out, buf, n);
    }
    return out;
}

/* Each test starts from power-on state with no input left over. */
static void setup(void)
{
    device_reset_all();
    g_string_free(read_com1_output(), TRUE);
    while (inb(COM1 + LSR) & LSR_DR) {
        inb(COM1 + RBR);
        run_ready_sources();
    }
    g_assert_false(irq_line_level(COM1_GSI));
}

/* ---- registers ---- */

static void test_power_on_state(void)
{
    setup();
    outb(COM1 + LCR, 0x9b);
    outb(COM1 + IER, 0x0f);
    outb(COM1 + SCR, 0x42);
    device_reset_all();
    g_assert_cmpuint(inb(COM1 + LCR), ==, 0);
    g_assert_cmpuint(inb(COM1 + IER), ==, 0);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
    g_assert_cmpuint(inb(COM1 + MCR), ==, 0);
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE);
    /* A connected line: CTS, DSR and DCD, no deltas. */
    g_assert_cmpuint(inb(COM1 + MSR), ==, 0xb0);
    g_assert_cmpuint(inb(COM1 + SCR), ==, 0);
}

static void test_scratch_and_read_only(void)
{
    setup();
    outb(COM1 + SCR, 0x5a);
    g_assert_cmpuint(inb(COM1 + SCR), ==, 0x5a);
    outb(COM1 + LSR, 0x00);             /* read-only: ignored */
    outb(COM1 + MSR, 0xff);
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE);
    g_assert_cmpuint(inb(COM1 + MSR), ==, 0xb0);
    outb(COM1 + IER, 0xff);             /* reserved bits read as 0 */
    g_assert_cmpuint(inb(COM1 + IER), ==, 0x0f);
    outb(COM1 + MCR, 0xff);
    g_assert_cmpuint(inb(COM1 + MCR), ==, 0x1f);
}

static void test_divisor_latch(void)
{
    setup();
    outb(COM1 + LCR, 0x80);
    outb(COM1 + DLL, 0x34);
    outb(COM1 + DLM, 0x12);
    g_assert_cmpuint(inb(COM1 + DLL), ==, 0x34);
    g_assert_cmpuint(inb(COM1 + DLM), ==, 0x12);
    /* With DLAB clear the same ports are THR/RBR and IER again. */
    outb(COM1 + LCR, 0x03);
    g_assert_cmpuint(inb(COM1 + IER), ==, 0);
    outb(COM1 + IER, 0x05);
    outb(COM1 + THR, 'q');
    outb(COM1 + LCR, 0x83);
    g_assert_cmpuint(inb(COM1 + DLL), ==, 0x34);
    g_assert_cmpuint(inb(COM1 + DLM), ==, 0x12);
    outb(COM1 + LCR, 0x03);
    g_assert_cmpuint(inb(COM1 + IER), ==, 0x05);
    GString *out = read_com1_output();
    g_assert_cmpstr(out->str, ==, "q");
    g_string_free(out, TRUE);
}

/* ---- transmit ---- */

static void test_transmit_to_file(void)
{
    setup();
    const char *text = "Linux version 6.1\r\n";
    for (const char *c = text; *c; c++) {
        g_assert_cmpuint(inb(COM2 + LSR) & LSR_IDLE, ==, LSR_IDLE);
        outb(COM2 + THR, *c);
    }
    /* Transmission is immediate: THR and the shifter are empty again. */
    g_assert_cmpuint(inb(COM2 + LSR), ==, LSR_IDLE);
    chardev_flush(com2_chr);
    char *data;
    g_assert_true(g_file_get_contents(com2_path, &data, NULL, NULL));
    g_assert_cmpstr(data, ==, text);
    g_free(data);
}

static void test_transmit_to_stdio(void)
{
    setup();
    outb(COM1 + THR, 'o');
    outb(COM1 + THR, 'k');
    GString *out = read_com1_output();
    g_assert_cmpstr(out->str, ==, "ok");
    g_string_free(out, TRUE);
}

static void test_fifo_enable(void)
{
    setup();
    outb(COM1 + FCR, 0x01);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0xc1);
    outb(COM1 + FCR, 0x00);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
    /* The 16750's 64-byte bit stays clear: drivers see a 16550A. */
    outb(COM1 + FCR, 0xe7);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0xc1);
}

/* ---- loopback and modem lines ---- */

static void test_loopback(void)
{
    setup();
    outb(COM1 + MCR, MCR_LOOP);
    outb(COM1 + THR, 'A');
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE | LSR_DR);
    g_assert_cmpuint(inb(COM1 + RBR), ==, 'A');
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE);
    /* Nothing went out on the line. */
    GString *out = read_com1_output();
    g_assert_cmpstr(out->str, ==, "");
    g_string_free(out, TRUE);
    /* Linux's probe: loop | OUT2 | RTS reads back DCD | CTS. */
    outb(COM1 + MCR, MCR_LOOP | MCR_OUT2 | 0x02);
    g_assert_cmpuint(inb(COM1 + MSR) & 0xf0, ==, 0x90);
    outb(COM1 + MCR, MCR_LOOP | 0x05);  /* DTR, OUT1 */
    g_assert_cmpuint(inb(COM1 + MSR) & 0xf0, ==, 0x60);
}

static void test_modem_status_interrupt(void)
{
    setup();
    outb(COM1 + MCR, MCR_LOOP);
    inb(COM1 + MSR);                    /* entering loopback changed lines */
    outb(COM1 + IER, 0x08);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
    outb(COM1 + MCR, MCR_LOOP | 0x01);  /* DTR -> DSR */
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x00);
    g_assert_cmpuint(inb(COM1 + MSR), ==, 0x20 | 0x02);     /* DSR, DDSR */
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
    outb(COM1 + MCR, MCR_LOOP | 0x04);  /* OUT1 -> RI rises, DSR falls */
    g_assert_cmpuint(inb(COM1 + MSR), ==, 0x40 | 0x02);
    outb(COM1 + MCR, MCR_LOOP);         /* RI trailing edge */
    g_assert_cmpuint(inb(COM1 + MSR), ==, 0x04);
}

/* ---- receive and interrupts ---- */

static void test_receive_irq_gating(void)
{
    setup();
    type_input("x");
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE | LSR_DR);
    g_assert_false(irq_line_level(COM1_GSI));
    outb(COM1 + IER, 0x01);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x04);
    /* Pending, but OUT2 keeps it off the ISA line. */
    g_assert_false(irq_line_level(COM1_GSI));
    outb(COM1 + MCR, MCR_OUT2);
    g_assert_true(irq_line_level(COM1_GSI));
    outb(COM1 + IER, 0x00);
    g_assert_false(irq_line_level(COM1_GSI));
    outb(COM1 + IER, 0x01);
    g_assert_true(irq_line_level(COM1_GSI));
    g_assert_cmpuint(inb(COM1 + RBR), ==, 'x');
    g_assert_false(irq_line_level(COM1_GSI));
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
}

/* The chardev only hands over what fits; reading makes room again. */
static void test_receive_paced_by_fifo(void)
{
    setup();
    type_input("ab");
    g_assert_cmpuint(inb(COM1 + RBR), ==, 'a');
    run_ready_sources();
    g_assert_cmpuint(inb(COM1 + RBR), ==, 'b');
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE);

    outb(COM1 + FCR, 0x01);
    type_input("0123456789abcdefXYZ");
    GString *got = g_string_new(NULL);
    while (inb(COM1 + LSR) & LSR_DR) {
        g_string_append_c(got, inb(COM1 + RBR));
    }
    /* Exactly one FIFO's worth, and no overrun. */
    g_assert_cmpstr(got->str, ==, "0123456789abcdef");
    run_ready_sources();
    while (inb(COM1 + LSR) & LSR_DR) {
        g_string_append_c(got, inb(COM1 + RBR));
    }
    g_assert_cmpstr(got->str, ==, "0123456789abcdefXYZ");
    g_string_free(got, TRUE);
}

static void test_receive_trigger_and_timeout(void)
{
    setup();
    outb(COM1 + LCR, 0x80);
    outb(COM1 + DLL, 1);                /* 115200 baud: timeout ~350 us */
    outb(COM1 + LCR, 0x03);
    outb(COM1 + FCR, 0x81);             /* FIFO, trigger at 8 */
    outb(COM1 + IER, 0x01);
    outb(COM1 + MCR, MCR_OUT2);

    type_input("abc");
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0xc1);
    g_assert_false(irq_line_level(COM1_GSI));
    g_usleep(2000);
    timers_run_due();
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0xcc);
    g_assert_true(irq_line_level(COM1_GSI));
    g_assert_cmpuint(inb(COM1 + RBR), ==, 'a');
    g_assert_false(irq_line_level(COM1_GSI));
    inb(COM1 + RBR);
    inb(COM1 + RBR);

    type_input("0123456789");
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0xc4);
    g_assert_true(irq_line_level(COM1_GSI));
    for (int i = 0; i < 3; i++) {
        inb(COM1 + RBR);
    }
    /* 7 left: below the trigger level. */
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0xc1);
    g_assert_false(irq_line_level(COM1_GSI));
}

static void test_thre_interrupt(void)
{
    setup();
    outb(COM1 + MCR, MCR_OUT2);
    outb(COM1 + IER, 0x02);
    /* Enabling ETBEI with THR empty raises THRE... */
    g_assert_true(irq_line_level(COM1_GSI));
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x02);
    /* ...and reading IIR while THRE is the source acknowledges it. */
    g_assert_false(irq_line_level(COM1_GSI));
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
    /* Writing THR empties it again at once: THRE again. */
    outb(COM1 + THR, '.');
    g_assert_true(irq_line_level(COM1_GSI));
    /* Re-enabling ETBEI re-raises it (Linux's THRE test). */
    inb(COM1 + IIR);
    outb(COM1 + IER, 0x00);
    outb(COM1 + IER, 0x02);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x02);
    g_string_free(read_com1_output(), TRUE);
}

static void test_iir_priority_and_overrun(void)
{
    setup();
    outb(COM1 + MCR, MCR_LOOP);
    outb(COM1 + THR, '1');
    outb(COM1 + THR, '2');              /* no FIFO: overwrites, OE */
    outb(COM1 + IER, 0x07);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x06);    /* line status first */
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE | LSR_DR | LSR_OE);
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x04);    /* then data */
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE | LSR_DR);
    g_assert_cmpuint(inb(COM1 + RBR), ==, '2');
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x02);    /* then THRE */
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x01);
    /* In loopback the line stays low: the chip drives OUT2 inactive. */
    outb(COM1 + MCR, MCR_LOOP | MCR_OUT2);
    outb(COM1 + THR, '3');
    g_assert_cmpuint(inb(COM1 + IIR), ==, 0x04);
    g_assert_false(irq_line_level(COM1_GSI));
    inb(COM1 + RBR);

    /* With FIFOs the 17th byte is lost, the first 16 are kept. */
    outb(COM1 + FCR, 0x01);
    for (int i = 0; i < 17; i++) {
        outb(COM1 + THR, 'a' + i);
    }
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE | LSR_DR | LSR_OE);
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE | LSR_DR);
    for (int i = 0; i < 16; i++) {
        g_assert_cmpuint(inb(COM1 + RBR), ==, 'a' + i);
    }
    g_assert_cmpuint(inb(COM1 + LSR), ==, LSR_IDLE);
}

/* ---- concurrency: vCPU threads against the I/O thread ---- */

#define STRESS_BYTES 4000

static uint8_t stress_byte(size_t i)
{
    return 'A' + i % 26;
}

typedef struct Receiver {
    GString *got;       /* the receiving thread's until it sets done */
    gint done;
} Receiver;

static gpointer vcpu_receiver(gpointer opaque)
{
    Receiver *r = opaque;
    int64_t deadline = clock_get_ns() + 2 * NANOSECONDS_PER_SECOND;
    while (r->got->len < STRESS_BYTES && clock_get_ns() < deadline) {
        if (inb(COM1 + LSR) & LSR_DR) {
            g_string_append_c(r->got, inb(COM1 + RBR));
        }
    }
    g_atomic_int_set(&r->done, 1);
    return NULL;
}

static gpointer vcpu_transmitter(gpointer opaque)
{
    for (size_t i = 0; i < STRESS_BYTES; i++) {
        outb(COM1 + THR, stress_byte(i));
    }
    return NULL;
}

static gboolean wake_guard(gpointer opaque)
{
    return G_SOURCE_CONTINUE;
}

/*
 * One vCPU drains the RX FIFO while the I/O thread refills it (pausing
 * whenever it is full, resumed by the guest's reads), another transmits.
 * A lost resume would stall input; nothing may be lost or reordered.
 */
static void test_concurrent_rx_tx(void)
{
    setup();
    outb(COM1 + FCR, 0x01);
    char *input = g_malloc(STRESS_BYTES + 1);
    for (size_t i = 0; i < STRESS_BYTES; i++) {
        input[i] = stress_byte(i);
    }
    input[STRESS_BYTES] = 0;
    g_assert_cmpint(write(com1_stdin_writer, input, STRESS_BYTES), ==, STRESS_BYTES);

    Receiver receiver = { g_string_new(NULL), 0 };
    GString *sent = g_string_new(NULL);
    GThread *rx = g_thread_new("vcpu-rx", vcpu_receiver, &receiver);
    GThread *tx = g_thread_new("vcpu-tx", vcpu_transmitter, NULL);
    guint guard = g_timeout_add(20, wake_guard, NULL);
    int64_t deadline = clock_get_ns() + 3 * NANOSECONDS_PER_SECOND;
    while (sent->len < STRESS_BYTES && clock_get_ns() < deadline) {
        g_main_context_iteration(main_loop_context(), TRUE);
        GString *out = read_com1_output();
        g_string_append_len(sent, out->str, out->len);
        g_string_free(out, TRUE);
    }
    g_thread_join(tx);
    /* Keep feeding input until the receiver has it all. */
    while (!g_atomic_int_get(&receiver.done)) {
        g_main_context_iteration(main_loop_context(), TRUE);
    }
    g_thread_join(rx);
    g_source_remove(guard);

    g_assert_cmpuint(receiver.got->len, ==, STRESS_BYTES);
    g_assert_cmpstr(receiver.got->str, ==, input);
    g_assert_cmpuint(sent->len, ==, STRESS_BYTES);
    g_assert_cmpstr(sent->str, ==, input);
    g_string_free(receiver.got, TRUE);
    g_string_free(sent, TRUE);
    g_free(input);
}

static void test_constructor_errors(void)
{
    Error *err = NULL;
    g_assert_null(isa_serial_new(0x3e8, IRQ_MAX_GSI, NULL, &err));
    g_assert_nonnull(strstr(err->msg, "interrupt line"));
    error_free(err);
    err = NULL;
    g_assert_null(isa_serial_new(0xfffc, 4, NULL, &err));
    g_assert_nonnull(strstr(err->msg, "I/O space"));
    error_free(err);
}

/* COM1 on a stdio chardev whose fds 0 and 1 are pipes of ours. */
static void create_com1(void)
{
    int in[2], out[2];
    g_assert_cmpint(pipe(in), ==, 0);
    g_assert_cmpint(pipe(out), ==, 0);
    fflush(stdout);
    int saved_stdout = dup(STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    close(in[0]);
    close(out[1]);
    Error *err = NULL;
    Chardev *chr = chardev_new("stdio", &err);
    dup2(saved_stdout, STDOUT_FILENO);
    close(saved_stdout);
    g_assert_nonnull(chr);
    com1_stdin_writer = in[1];
    com1_stdout_reader = out[0];
    fcntl(com1_stdout_reader, F_SETFL, O_NONBLOCK);
    g_assert_nonnull(isa_serial_new(COM1, COM1_GSI, chr, &err));
}

static void create_com2(void)
{
    char *dir = g_dir_make_tmp("test-serial-XXXXXX", NULL);
    com2_path = g_build_filename(dir, "com2.txt", NULL);
    g_free(dir);
    char *spec = g_strconcat("file:", com2_path, NULL);
    Error *err = NULL;
    com2_chr = chardev_new(spec, &err);
    g_assert_nonnull(com2_chr);
    g_assert_nonnull(isa_serial_new(COM2, COM2_GSI, com2_chr, &err));
    g_free(spec);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    memory_init();
    create_com1();
    create_com2();
    g_test_add_func("/serial/power-on-state", test_power_on_state);
    g_test_add_func("/serial/scratch-and-read-only", test_scratch_and_read_only);
    g_test_add_func("/serial/divisor-latch", test_divisor_latch);
    g_test_add_func("/serial/transmit-to-file", test_transmit_to_file);
    g_test_add_func("/serial/transmit-to-stdio", test_transmit_to_stdio);
    g_test_add_func("/serial/fifo-enable", test_fifo_enable);
    g_test_add_func("/serial/loopback", test_loopback);
    g_test_add_func("/serial/modem-status-interrupt", test_modem_status_interrupt);
    g_test_add_func("/serial/receive-irq-gating", test_receive_irq_gating);
    g_test_add_func("/serial/receive-paced-by-fifo", test_receive_paced_by_fifo);
    g_test_add_func("/serial/receive-trigger-and-timeout", test_receive_trigger_and_timeout);
    g_test_add_func("/serial/thre-interrupt", test_thre_interrupt);
    g_test_add_func("/serial/iir-priority-and-overrun", test_iir_priority_and_overrun);
    g_test_add_func("/serial/concurrent-rx-tx", test_concurrent_rx_tx);
    g_test_add_func("/serial/constructor-errors", test_constructor_errors);
    int status = g_test_run();
    char *dir = g_path_get_dirname(com2_path);
    g_unlink(com2_path);
    g_rmdir(dir);
    g_free(dir);
    g_free(com2_path);
    return status;
}
