/*
 * -netdev user end to end (net/slirp.c): a fake NIC attached to the netdev
 * plays a guest in C. It gets its address by DHCP, answers ARP, takes a
 * connection the host makes to a hostfwd= port and moves data both ways
 * through it with a minimal TCP, byte for byte; and the flow control in
 * both directions holds. The netdev's context is driven by the test, so
 * every step is deterministic: iterate until a condition, or fail after a
 * timeout.
 *
 * Network rule: the host side only ever uses 127.0.0.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib.h>
#include "loopback-port.h"
#include "net/checksum.h"
#include "net/net.h"
#include "net/netdev-config.h"
#include "qemu/byte-order.h"
#include "qemu/iov.h"
#include "qemu/keyval.h"
#include "sysemu/iothread.h"

#define ETH_HLEN 14
#define IP_HLEN 20
#define UDP_HLEN 8
#define TCP_HLEN 20
#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define ARP_FRAME_LEN (ETH_HLEN + 28)
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define GUEST_ISN 0x10000000u
#define WAIT_SECONDS 10

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t broadcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static uint32_t ip_of(const char *text)
{
    struct in_addr a;
    g_assert_true(inet_aton(text, &a));
    return ntohl(a.s_addr);
}

/* ---- the guest ---- */

typedef struct Guest {
    GMainContext *ctx;
    IOThread *iothread;         /* runs ctx; NULL: the test iterates it */
    pthread_t io_thread;
    NetClientState *nic;
    pthread_mutex_t lock;       /* rx; pthread, which ThreadSanitizer sees */
    GQueue rx;                  /* GByteArray *: frames the NIC took */
    bool ring_full;             /* the NIC refuses frames (receive returns 0) */
    unsigned refused;
    unsigned send_ready_calls;
    uint32_t ip;                /* 0 until DHCP */
    uint8_t gw_mac[6];          /* slirp's, from its first frame */
    /* The one TCP connection. */
    uint32_t peer_ip;
    uint16_t peer_port, port;
    uint32_t snd_nxt, rcv_nxt;
    GByteArray *stream;         /* bytes received in order */
} Guest;

static ssize_t nic_receive(NetClientState *nc, const struct iovec *iov, int iovcnt)
{
    Guest *g = nc->opaque;
    size_t len = iov_size(iov, iovcnt);
    /* slirp runs on the NIC's context only: so do its frames. */
    g_assert_true(!g->iothread || pthread_equal(pthread_self(), g->io_thread));
    if (g->ring_full) {
        g->refused++;
        return 0;
    }
    GByteArray *frame = g_byte_array_sized_new(len);
    g_byte_array_set_size(frame, len);
    iov_to_buf(iov, iovcnt, 0, frame->data, len);
    pthread_mutex_lock(&g->lock);
    g_queue_push_tail(&g->rx, frame);
    pthread_mutex_unlock(&g->lock);
    return len;
}

static void nic_send_ready(NetClientState *nc)
{
    ((Guest *)nc->opaque)->send_ready_calls++;
}

static const NetClientInfo fake_nic_info = {
    .type = "nic",
    .receive = nic_receive,
    .send_ready = nic_send_ready,
};

static void guest_send(Guest *g, const uint8_t *frame, size_t len)
{
    g_assert_cmpint(net_send_buf(g->nic, frame, len), ==, len);
}

static size_t put_eth(uint8_t *f, const uint8_t *dst, uint16_t type)
{
    memcpy(f, dst, 6);
    memcpy(f + 6, guest_mac, 6);
    put_be16(f + 12, type);
    return ETH_HLEN;
}

static size_t put_ipv4(uint8_t *ip, uint8_t proto, uint32_t src, uint32_t dst, size_t payload)
{
    memset(ip, 0, IP_HLEN);
    ip[0] = 0x45;
    put_be16(ip + 2, IP_HLEN + payload);
    ip[8] = 64;
    ip[9] = proto;
    put_be32(ip + 12, src);
    put_be32(ip + 16, dst);
    put_be16(ip + 10, net_checksum_finish(net_checksum_add(0, ip, IP_HLEN)));
    return IP_HLEN;
}

/* The sum of the TCP pseudo-header (RFC 793). */
static uint32_t tcp_pseudo_sum(uint32_t src, uint32_t dst, size_t tcp_len)
{
    uint8_t pseudo[12] = { 0 };
    put_be32(pseudo, src);
    put_be32(pseudo + 4, dst);
    pseudo[9] = 6;
    put_be16(pseudo + 10, tcp_len);
    return net_checksum_add(0, pseudo, sizeof(pseudo));
}

static void guest_send_udp(Guest *g, const uint8_t *dst_mac, uint32_t src, uint32_t dst,
                           uint16_t sport, uint16_t dport, const uint8_t *data, size_t len)
{
    uint8_t f[1514];
    g_assert_cmpuint(ETH_HLEN + IP_HLEN + UDP_HLEN + len, <=, sizeof(f));
    size_t n = put_eth(f, dst_mac, ETH_P_IP);
    n += put_ipv4(f + n, 17, src, dst, UDP_HLEN + len);
    put_be16(f + n, sport);
    put_be16(f + n + 2, dport);
    put_be16(f + n + 4, UDP_HLEN + len);
    put_be16(f + n + 6, 0);        /* no checksum: allowed over IPv4 */
    memcpy(f + n + UDP_HLEN, data, len);
    guest_send(g, f, n + UDP_HLEN + len);
}

static void guest_send_tcp(Guest *g, uint8_t flags, const uint8_t *data, size_t len)
{
    uint8_t f[1514];
    bool syn = flags & TCP_SYN;
    size_t hlen = TCP_HLEN + (syn ? 4 : 0);     /* an MSS option on SYN */
    g_assert_cmpuint(ETH_HLEN + IP_HLEN + hlen + len, <=, sizeof(f));
    size_t n = put_eth(f, g->gw_mac, ETH_P_IP);
    n += put_ipv4(f + n, 6, g->ip, g->peer_ip, hlen + len);
    uint8_t *tcp = f + n;
    memset(tcp, 0, hlen);
    put_be16(tcp, g->port);
    put_be16(tcp + 2, g->peer_port);
    put_be32(tcp + 4, g->snd_nxt);
    put_be32(tcp + 8, g->rcv_nxt);
    tcp[12] = (hlen / 4) << 4;
    tcp[13] = flags;
    put_be16(tcp + 14, 65535);
    if (syn) {
        tcp[20] = 2;
        tcp[21] = 4;
        put_be16(tcp + 22, 1460);
    }
    if (len) {
        memcpy(tcp + hlen, data, len);
    }
    uint32_t sum = tcp_pseudo_sum(g->ip, g->peer_ip, hlen + len);
    put_be16(tcp + 16, net_checksum_finish(net_checksum_add(sum, tcp, hlen + len)));
    guest_send(g, f, n + hlen + len);
    g->snd_nxt += len + (syn ? 1 : 0) + (flags & TCP_FIN ? 1 : 0);
}

/* ---- frames from slirp, checked as a guest's stack would ---- */

typedef struct Rx {
    const uint8_t *frame;
    size_t len;
    uint16_t type;
    const uint8_t *ip;          /* IPv4 only */
    uint8_t proto;
    const uint8_t *l4;
    size_t l4_len;
} Rx;

static Rx rx_parse(const GByteArray *f)
{
    Rx rx = { .frame = f->data, .len = f->len };
    g_assert_cmpuint(f->len, >=, ETH_HLEN);
    rx.type = get_be16(f->data + 12);
    if (rx.type != ETH_P_IP) {
        return rx;
    }
    rx.ip = f->data + ETH_HLEN;
    size_t ihl = (rx.ip[0] & 0xf) * 4;
    size_t total = get_be16(rx.ip + 2);
    g_assert_cmpuint(rx.ip[0] >> 4, ==, 4);
    g_assert_cmpuint(ETH_HLEN + total, <=, f->len);
    g_assert_cmpuint(net_checksum_finish(net_checksum_add(0, rx.ip, ihl)), ==, 0);
    rx.proto = rx.ip[9];
    rx.l4 = rx.ip + ihl;
    rx.l4_len = total - ihl;
    return rx;
}

/* An ARP request for the guest's address gets its reply. */
static bool guest_answer_arp(Guest *g, const Rx *rx)
{
    const uint8_t *arp = rx->frame + ETH_HLEN;
    if (rx->type != ETH_P_ARP || get_be16(arp + 6) != 1 || !g->ip || get_be32(arp + 24) != g->ip) {
        return false;
    }
    uint8_t f[ARP_FRAME_LEN];
    size_t n = put_eth(f, arp + 8, ETH_P_ARP);
    memcpy(f + n, arp, 6);              /* htype, ptype, hlen, plen */
    put_be16(f + n + 6, 2);
    memcpy(f + n + 8, guest_mac, 6);
    put_be32(f + n + 14, g->ip);
    memcpy(f + n + 18, arp + 8, 10);    /* the asker's MAC and IP */
    guest_send(g, f, sizeof(f));
    return true;
}

typedef bool FrameMatch(Guest *g, const Rx *rx, void *arg);

/* Run what is ready on the netdev's context (its I/O thread does that by
 * itself). */
static void guest_pump(Guest *g)
{
    while (!g->iothread && g_main_context_iteration(g->ctx, FALSE)) {
    }
}

/* Let the netdev run for ms milliseconds (what does not happen then is
 * taken not to happen); returns how many of the ~ms polls found something
 * to dispatch: a busy loop finds something every time. */
static unsigned guest_run_for(Guest *g, unsigned ms)
{
    gint64 until = g_get_monotonic_time() + ms * 1000;
    unsigned busy = 0;
    while (g_get_monotonic_time() < until) {
        busy += !g->iothread && g_main_context_iteration(g->ctx, FALSE);
        guest_pump(g);
        g_usleep(1000);
    }
    return busy;
}

static GByteArray *guest_next_frame(Guest *g)
{
    pthread_mutex_lock(&g->lock);
    GByteArray *f = g_queue_pop_head(&g->rx);
    pthread_mutex_unlock(&g->lock);
    return f;
}

/*
 * Run the netdev's context until a frame that match() accepts arrives;
 * ARP requests are answered and other frames dropped on the way, as a
 * guest's stack does. Fails the test after WAIT_SECONDS.
 */
static void guest_wait(Guest *g, FrameMatch *match, void *arg)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;
    for (;;) {
        guest_pump(g);
        GByteArray *f;
        while ((f = guest_next_frame(g))) {
            Rx rx = rx_parse(f);
            bool matched = !guest_answer_arp(g, &rx) && match(g, &rx, arg);
            g_byte_array_unref(f);
            if (matched) {
                return;
            }
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
}

/* ---- the setup ---- */

/* What the command line keeps for "-netdev user,id=u0,<optstr>". */
static NetdevConfig netdev_config(const char *optstr)
{
    Error *err = NULL;
    NetdevConfig cfg = {
        .type = (char *)"user",
        .id = (char *)"u0",
        .items = *optstr ? keyval_parse(optstr, NULL, &err) : g_ptr_array_new(),
        .origin = (char *)"-netdev user,id=u0",
    };
    g_assert_nonnull(cfg.items);
    return cfg;
}

static void user_netdev_new(const char *optstr)
{
    Error *err = NULL;
    NetdevConfig cfg = netdev_config(optstr);
    if (!net_user_init(&cfg, &err)) {
        g_error("%s: %s", optstr, err->msg);
    }
    g_ptr_array_unref(cfg.items);
}

/* The NIC attaches (and the backend starts) on the context's thread, as
 * iothread.h asks of sources attached to a running I/O thread. */
static void guest_attach_nic(void *opaque)
{
    Guest *g = opaque;
    Error *err = NULL;
    g->io_thread = pthread_self();
    g->nic = net_nic_new(&fake_nic_info, "nic0", netdev_find("u0"), 0, "nic0", g->ctx, g, &err);
    g_assert_nonnull(g->nic);
}

/* A guest whose NIC runs on io_id's thread (as a device with iothread=),
 * or on a context the test iterates (NULL). */
static void guest_init_on(Guest *g, const char *optstr, const char *io_id)
{
    Error *err = NULL;
    *g = (Guest){ .stream = g_byte_array_new() };
    pthread_mutex_init(&g->lock, NULL);
    g_queue_init(&g->rx);
    user_netdev_new(optstr);
    if (io_id) {
        g->iothread = iothread_new(io_id, &err);
        g_assert_nonnull(g->iothread);
        g->ctx = iothread_context(g->iothread);
        iothread_run_sync(g->iothread, guest_attach_nic, g);
    } else {
        g->ctx = g_main_context_new();
        guest_attach_nic(g);
    }
}

static void guest_init(Guest *g, const char *optstr)
{
    guest_init_on(g, optstr, NULL);
}

/* The netdev goes once its context no longer runs (net/slirp.c). */
static void guest_free(Guest *g)
{
    if (g->iothread) {
        iothread_free(g->iothread);
    }
    net_client_free(g->nic);
    netdevs_free_all();
    g_queue_clear_full(&g->rx, (GDestroyNotify)g_byte_array_unref);
    g_byte_array_unref(g->stream);
    pthread_mutex_destroy(&g->lock);
    if (!g->iothread) {
        guest_pump(g);
        g_main_context_unref(g->ctx);
    }
}

/* ---- DHCP ---- */

enum { DHCP_DISCOVER = 1, DHCP_OFFER = 2, DHCP_REQUEST = 3, DHCP_ACK = 5 };
#define BOOTP_LEN 236
#define DHCP_XID 0x5107c0de

typedef struct DhcpReply {
    uint8_t type;
    uint32_t yiaddr, router, dns, server;
    char domain[64];
    char file[129];             /* BOOTP's boot file name */
} DhcpReply;

static void guest_send_dhcp(Guest *g, uint8_t type, uint32_t requested, uint32_t server)
{
    uint8_t msg[BOOTP_LEN + 64] = { 1, 1, 6, 0 };
    put_be32(msg + 4, DHCP_XID);
    memcpy(msg + 28, guest_mac, 6);
    uint8_t *opt = msg + BOOTP_LEN;
    put_be32(opt, 0x63825363);             /* the magic cookie */
    opt += 4;
    *opt++ = 53, *opt++ = 1, *opt++ = type;
    if (requested) {
        *opt++ = 50, *opt++ = 4;
        put_be32(opt, requested);
        opt += 4;
        *opt++ = 54, *opt++ = 4;
        put_be32(opt, server);
        opt += 4;
    }
    *opt++ = 55, *opt++ = 3, *opt++ = 1, *opt++ = 3, *opt++ = 6;
    *opt++ = 255;
    guest_send_udp(g, broadcast_mac, 0, 0xffffffff, 68, 67, msg, opt - msg);
}

/* The options of a reply, walked as a client does (pad, end, length). */
static void dhcp_options(const uint8_t *opt, const uint8_t *end, DhcpReply *r)
{
    while (opt < end && *opt != 255) {
        if (*opt == 0) {
            opt++;
            continue;
        }
        g_assert_true(opt + 2 <= end && opt + 2 + opt[1] <= end);
        uint8_t code = opt[0], len = opt[1];
        const uint8_t *val = opt + 2;
        if (code == 53 && len == 1) {
            r->type = val[0];
        } else if (code == 3 && len >= 4) {
            r->router = get_be32(val);
        } else if (code == 6 && len >= 4) {
            r->dns = get_be32(val);
        } else if (code == 54 && len == 4) {
            r->server = get_be32(val);
        } else if (code == 15 && len < sizeof(r->domain)) {
            memcpy(r->domain, val, len);
        }
        opt += 2 + len;
    }
}

static bool match_dhcp_reply(Guest *g, const Rx *rx, void *arg)
{
    DhcpReply *r = arg;
    if (rx->proto != 17 || get_be16(rx->l4 + 2) != 68) {
        return false;
    }
    const uint8_t *bootp = rx->l4 + UDP_HLEN;
    g_assert_cmpuint(rx->l4_len, >=, UDP_HLEN + BOOTP_LEN + 4);
    g_assert_cmpuint(bootp[0], ==, 2);
    g_assert_cmphex(get_be32(bootp + 4), ==, DHCP_XID);
    g_assert_cmpmem(bootp + 28, 6, guest_mac, 6);
    g_assert_cmphex(get_be32(bootp + BOOTP_LEN), ==, 0x63825363);
    *r = (DhcpReply){ .yiaddr = get_be32(bootp + 16) };
    memcpy(r->file, bootp + 108, 128);
    dhcp_options(bootp + BOOTP_LEN + 4, rx->l4 + rx->l4_len, r);
    memcpy(g->gw_mac, rx->frame + 6, 6);
    return true;
}

/* DISCOVER, OFFER, REQUEST, ACK: the guest ends up with its address. */
static DhcpReply guest_dhcp(Guest *g)
{
    DhcpReply offer, ack;
    guest_send_dhcp(g, DHCP_DISCOVER, 0, 0);
    guest_wait(g, match_dhcp_reply, &offer);
    g_assert_cmpuint(offer.type, ==, DHCP_OFFER);
    guest_send_dhcp(g, DHCP_REQUEST, offer.yiaddr, offer.server);
    guest_wait(g, match_dhcp_reply, &ack);
    g_assert_cmpuint(ack.type, ==, DHCP_ACK);
    g_assert_cmphex(ack.yiaddr, ==, offer.yiaddr);
    g->ip = ack.yiaddr;
    return ack;
}

/* What `info network` says of the netdev, as QEMU says it. */
static void assert_info_network(const char *expected)
{
    g_autofree char *info = net_client_info(netdev_find("u0")->queues[0]);
    g_assert_cmpstr(info, ==, expected);
}

static void test_dhcp_defaults(void)
{
    Guest g;
    guest_init(&g, "");
    DhcpReply ack = guest_dhcp(&g);
    g_assert_cmphex(ack.yiaddr, ==, ip_of("10.0.2.15"));
    g_assert_cmphex(ack.router, ==, ip_of("10.0.2.2"));
    g_assert_cmphex(ack.dns, ==, ip_of("10.0.2.3"));
    g_assert_cmphex(ack.server, ==, ip_of("10.0.2.2"));
    assert_info_network("net=10.0.2.0,restrict=off");
    guest_free(&g);
}

/* The options reach the DHCP server: another network, a domain name. */
static void test_dhcp_options(void)
{
    Guest g;
    guest_init(&g, "net=192.168.76.0/24,dhcpstart=192.168.76.9,domainname=example.test,"
               "ipv6=off,bootfile=pxelinux.0");
    DhcpReply ack = guest_dhcp(&g);
    g_assert_cmphex(ack.yiaddr, ==, ip_of("192.168.76.9"));
    g_assert_cmphex(ack.router, ==, ip_of("192.168.76.2"));
    g_assert_cmphex(ack.dns, ==, ip_of("192.168.76.3"));
    g_assert_cmpstr(ack.domain, ==, "example.test");
    g_assert_cmpstr(ack.file, ==, "pxelinux.0");
    assert_info_network("net=192.168.76.0,restrict=off");
    guest_free(&g);
}

/* ---- TFTP ---- */

#define TFTP_CLIENT_PORT 1234

static bool match_tftp_data(Guest *g, const Rx *rx, void *arg)
{
    if (rx->proto != 17 || get_be16(rx->l4 + 2) != TFTP_CLIENT_PORT) {
        return false;
    }
    const uint8_t *tftp = rx->l4 + UDP_HLEN;
    g_assert_cmpuint(rx->l4_len, >=, UDP_HLEN + 4);
    g_assert_cmpuint(get_be16(tftp), ==, 3);       /* DATA */
    g_assert_cmpuint(get_be16(tftp + 2), ==, 1);   /* block 1 */
    g_byte_array_append(arg, tftp + 4, rx->l4_len - UDP_HLEN - 4);
    return true;
}

/* tftp= serves a host directory at the host address, port 69. */
static void test_tftp(void)
{
    g_autofree char *dir = g_dir_make_tmp("test-slirp-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "boot.txt", NULL);
    static const char content[] = "kernel and initrd would be here\n";
    g_assert_true(g_file_set_contents(path, content, sizeof(content) - 1, NULL));
    g_autofree char *optstr = g_strdup_printf("tftp=%s", dir);
    Guest g;
    guest_init(&g, optstr);
    guest_dhcp(&g);

    static const uint8_t rrq[] = "\0\1boot.txt\0octet";    /* the last NUL ends "octet" */
    guest_send_udp(&g, g.gw_mac, g.ip, ip_of("10.0.2.2"), TFTP_CLIENT_PORT, 69, rrq, sizeof(rrq));
    GByteArray *data = g_byte_array_new();
    guest_wait(&g, match_tftp_data, data);
    g_assert_cmpmem(data->data, data->len, content, sizeof(content) - 1);
    g_byte_array_unref(data);
    guest_free(&g);
    g_assert_cmpint(unlink(path), ==, 0);
    g_assert_cmpint(rmdir(dir), ==, 0);
}

/* ---- ARP ---- */

/* Who has target? Tell the guest. */
static void put_arp_request(const Guest *g, uint32_t target, uint8_t f[ARP_FRAME_LEN])
{
    static const uint8_t head[8] = { 0, 1, 8, 0, 6, 4, 0, 1 };  /* Ethernet, IPv4, request */
    memset(f, 0, ARP_FRAME_LEN);
    size_t n = put_eth(f, broadcast_mac, ETH_P_ARP);
    memcpy(f + n, head, sizeof(head));
    memcpy(f + n + 8, guest_mac, 6);
    put_be32(f + n + 14, g->ip);
    put_be32(f + n + 24, target);
}

static void guest_send_arp_request(Guest *g, uint32_t target)
{
    uint8_t f[ARP_FRAME_LEN];
    put_arp_request(g, target, f);
    guest_send(g, f, sizeof(f));
}

static bool match_arp_reply(Guest *g, const Rx *rx, void *arg)
{
    const uint8_t *arp = rx->frame + ETH_HLEN;
    if (rx->type != ETH_P_ARP || get_be16(arp + 6) != 2) {
        return false;
    }
    g_assert_cmphex(get_be32(arp + 14), ==, *(uint32_t *)arg);
    g_assert_cmpmem(arp + 18, 6, guest_mac, 6);
    g_assert_cmphex(get_be32(arp + 24), ==, g->ip);
    memcpy(g->gw_mac, arp + 8, 6);
    return true;
}

/* slirp answers for its host and DNS addresses; while the NIC refuses,
 * the answer waits in the backend, and comes once the NIC is ready. */
static void test_arp_and_flow_to_guest(void)
{
    Guest g;
    guest_init(&g, "");
    guest_dhcp(&g);
    uint32_t dns = ip_of("10.0.2.3");
    guest_send_arp_request(&g, dns);
    guest_wait(&g, match_arp_reply, &dns);

    uint32_t host = ip_of("10.0.2.2");
    g.ring_full = true;
    guest_send_arp_request(&g, host);
    guest_pump(&g);
    g_assert_cmpuint(g.refused, ==, 1);
    g_assert_true(g_queue_is_empty(&g.rx));
    guest_pump(&g);
    g_assert_cmpuint(g.refused, ==, 1);     /* kept, not offered again unasked */
    g.ring_full = false;
    net_client_receive_ready(g.nic);
    guest_wait(&g, match_arp_reply, &host);
    guest_free(&g);
}

/* A NIC sending faster than the context runs is refused once the backend's
 * queue is full, and told when to send again. */
static void test_flow_from_guest(void)
{
    Guest g;
    guest_init(&g, "");
    guest_dhcp(&g);
    uint8_t f[ARP_FRAME_LEN];
    put_arp_request(&g, ip_of("10.0.2.2"), f);
    unsigned taken = 0;
    while (net_send_buf(g.nic, f, sizeof(f)) > 0) {
        taken++;
        g_assert_cmpuint(taken, <=, 4096);
    }
    g_assert_cmpuint(taken, >=, 16);
    g_assert_cmpuint(g.send_ready_calls, ==, 0);
    guest_pump(&g);
    g_assert_cmpuint(g.send_ready_calls, ==, 1);
    /* Every frame taken was handed to slirp: one ARP reply each. */
    unsigned replies = 0;
    GByteArray *frame;
    while ((frame = guest_next_frame(&g))) {
        Rx rx = rx_parse(frame);
        replies += rx.type == ETH_P_ARP && get_be16(frame->data + ETH_HLEN + 6) == 2;
        g_byte_array_unref(frame);
    }
    g_assert_cmpuint(replies, ==, taken);
    g_assert_cmpint(net_send_buf(g.nic, f, sizeof(f)), ==, sizeof(f));
    guest_free(&g);
}

/* ---- hostfwd and TCP ---- */

static void assert_tcp_checksum(const Rx *rx)
{
    uint32_t sum = tcp_pseudo_sum(get_be32(rx->ip + 12), get_be32(rx->ip + 16), rx->l4_len);
    g_assert_cmpuint(net_checksum_finish(net_checksum_add(sum, rx->l4, rx->l4_len)), ==, 0);
}

static bool match_syn(Guest *g, const Rx *rx, void *arg)
{
    if (rx->proto != 6) {
        return false;
    }
    const uint8_t *tcp = rx->l4;
    uint32_t src = get_be32(rx->ip + 12);
    assert_tcp_checksum(rx);
    g_assert_cmphex(get_be32(rx->ip + 16), ==, g->ip);
    g_assert_cmpuint(get_be16(tcp + 2), ==, 22);
    g_assert_cmphex(tcp[13] & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN), ==, TCP_SYN);
    memcpy(g->gw_mac, rx->frame + 6, 6);
    g->peer_ip = src;
    g->peer_port = get_be16(tcp);
    g->port = 22;
    g->rcv_nxt = get_be32(tcp + 4) + 1;
    g->snd_nxt = GUEST_ISN;
    return true;
}

/* Segments of the connection, taken in order and acknowledged, until
 * `want` bytes have arrived. */
static bool match_stream(Guest *g, const Rx *rx, void *arg)
{
    size_t want = *(size_t *)arg;
    const uint8_t *tcp = rx->l4;
    if (rx->proto != 6 || get_be16(tcp) != g->peer_port || get_be16(tcp + 2) != g->port) {
        return false;
    }
    assert_tcp_checksum(rx);
    g_assert_false(tcp[13] & TCP_RST);
    if (tcp[13] & TCP_ACK) {
        g_assert_cmpuint(get_be32(tcp + 8), <=, g->snd_nxt);
    }
    size_t hlen = (tcp[12] >> 4) * 4;
    size_t len = rx->l4_len - hlen;
    if (len && get_be32(tcp + 4) == g->rcv_nxt) {
        g_byte_array_append(g->stream, tcp + hlen, len);
        g->rcv_nxt += len;
        guest_send_tcp(g, TCP_ACK, NULL, 0);
    }
    return g->stream->len >= want;
}

static void fill_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 31 + seed + (i >> 8));
    }
}

static void host_write_all(int fd, const uint8_t *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        g_assert_cmpint(n, >, 0);
        data += n;
        len -= n;
    }
}

/* Run the context until `len` bytes have come out of the host socket. */
static void host_read_all(Guest *g, int fd, uint8_t *buf, size_t len)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;
    size_t got = 0;
    while (got < len) {
        guest_pump(g);
        ssize_t n = read(fd, buf + got, len - got);
        if (n > 0) {
            got += n;
            continue;
        }
        g_assert_true(n < 0 && errno == EAGAIN);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(1000);
    }
}

/*
 * The host connects to the hostfwd port: the guest sees a SYN to
 * 10.0.2.15:22, answers it, and bytes then flow both ways unchanged. No
 * byte moves before the guest's SYN-ACK: the kernel completes the host's
 * connect() from slirp's listen backlog, but the forwarded connection is
 * the guest's to accept.
 */
/*
 * The guest's RX ring is full while the host sends: the NIC refuses slirp's
 * first frame, which waits in the backend, and slirp stops (no frame is
 * offered again, none lost) until the NIC is ready; then the rest of the
 * stream arrives in order.
 */
static void guest_ring_full_while_host_sends(Guest *g, int fd)
{
    enum { MORE = 20000 };
    static uint8_t more[MORE];
    fill_pattern(more, sizeof(more), 55);
    size_t before = g->stream->len;
    g->ring_full = true;
    host_write_all(fd, more, sizeof(more));
    guest_run_for(g, 200);
    g_assert_cmpuint(g->refused, ==, 1);
    g->ring_full = false;
    net_client_receive_ready(g->nic);
    size_t want = before + sizeof(more);
    guest_wait(g, match_stream, &want);
    g_assert_cmpuint(g->stream->len, ==, want);
    g_assert_cmpmem(g->stream->data + before, sizeof(more), more, sizeof(more));
}

static void hostfwd_tcp(const char *io_id)
{
    enum { TO_GUEST = 20000, TO_HOST = 6000, SEGMENT = 1000 };
    uint16_t port = loopback_free_port();
    g_autofree char *optstr = g_strdup_printf("hostfwd=tcp:127.0.0.1:%u-:22", port);
    Guest g;
    guest_init_on(&g, optstr, io_id);
    guest_dhcp(&g);

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(fcntl(fd, F_SETFL, O_NONBLOCK), ==, 0);
    static uint8_t to_guest[TO_GUEST], to_host[TO_HOST], back[TO_HOST];
    fill_pattern(to_guest, sizeof(to_guest), 7);
    fill_pattern(to_host, sizeof(to_host), 101);
    host_write_all(fd, to_guest, 1000);

    guest_wait(&g, match_syn, NULL);
    g_assert_cmpuint(g.stream->len, ==, 0);
    guest_send_tcp(&g, TCP_SYN | TCP_ACK, NULL, 0);
    host_write_all(fd, to_guest + 1000, sizeof(to_guest) - 1000);
    size_t want = sizeof(to_guest);
    guest_wait(&g, match_stream, &want);
    g_assert_cmpuint(g.stream->len, ==, sizeof(to_guest));
    g_assert_cmpmem(g.stream->data, g.stream->len, to_guest, sizeof(to_guest));
    if (!io_id) {
        guest_ring_full_while_host_sends(&g, fd);
    }

    for (size_t off = 0; off < sizeof(to_host); off += SEGMENT) {
        guest_send_tcp(&g, TCP_ACK | TCP_PSH, to_host + off, SEGMENT);
    }
    host_read_all(&g, fd, back, sizeof(back));
    g_assert_cmpmem(back, sizeof(back), to_host, sizeof(to_host));

    close(fd);
    guest_free(&g);
}

static void test_hostfwd_tcp(void)
{
    hostfwd_tcp(NULL);
}

/*
 * The same with the NIC on an I/O thread and the test thread sending as a
 * vCPU does: slirp runs on the I/O thread only (every frame it sends comes
 * from there) while frames arrive from another thread.
 */
static void test_hostfwd_tcp_iothread(void)
{
    hostfwd_tcp("slirp-io");
}

/* ---- the guest connects out ---- */

/* The answer to the guest's SYN: a SYN-ACK (the connection is up), or
 * anything else from the peer (refused). */
static bool match_syn_answer(Guest *g, const Rx *rx, void *arg)
{
    const uint8_t *tcp = rx->l4;
    if (rx->proto != 6 || get_be16(tcp) != g->peer_port || get_be16(tcp + 2) != g->port) {
        return false;
    }
    assert_tcp_checksum(rx);
    bool *accepted = arg;
    *accepted = (tcp[13] & (TCP_SYN | TCP_ACK | TCP_RST)) == (TCP_SYN | TCP_ACK);
    if (*accepted) {
        g_assert_cmphex(get_be32(tcp + 8), ==, g->snd_nxt);
        g->rcv_nxt = get_be32(tcp + 4) + 1;
    }
    return true;
}

static int host_listener(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* A guest with its address sends a SYN to 10.0.2.2:port. */
static void guest_connect_to_host(Guest *g, const char *optstr, uint16_t port)
{
    guest_init(g, optstr);
    guest_dhcp(g);
    g->peer_ip = ip_of("10.0.2.2");
    g->peer_port = port;
    g->port = 40000;
    g->snd_nxt = GUEST_ISN;
    guest_send_tcp(g, TCP_SYN, NULL, 0);
}

/* The guest opens a connection to the host address 10.0.2.2, which slirp
 * makes from the host to 127.0.0.1: bytes go both ways unchanged. */
static void test_guest_connects_to_host(void)
{
    enum { LEN = 5000 };
    uint16_t port;
    int listener = host_listener(&port);
    Guest g;
    guest_connect_to_host(&g, "", port);
    bool accepted;
    guest_wait(&g, match_syn_answer, &accepted);
    g_assert_true(accepted);
    guest_send_tcp(&g, TCP_ACK, NULL, 0);
    int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
    g_assert_cmpint(fd, >=, 0);

    static uint8_t out[LEN], in[LEN];
    fill_pattern(out, sizeof(out), 3);
    for (size_t off = 0; off < sizeof(out); off += 1000) {
        guest_send_tcp(&g, TCP_ACK | TCP_PSH, out + off, MIN(sizeof(out) - off, 1000));
    }
    host_read_all(&g, fd, in, sizeof(in));
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
    fill_pattern(out, sizeof(out), 77);
    host_write_all(fd, out, sizeof(out));
    size_t want = sizeof(out);
    guest_wait(&g, match_stream, &want);
    g_assert_cmpmem(g.stream->data, g.stream->len, out, sizeof(out));

    /* Idle, then half-closed by the host (slirp's socket at EOF, the guest
     * silent): slirp runs on its timers only, no poll returns at once. */
    g_assert_cmpuint(guest_run_for(&g, 300), <, 30);
    close(fd);
    g_assert_cmpuint(guest_run_for(&g, 300), <, 30);
    close(listener);
    guest_free(&g);
}

/* restrict=on: the guest cannot reach the host (or anything beyond). */
static void test_restrict(void)
{
    uint16_t port;
    int listener = host_listener(&port);
    Guest g;
    guest_connect_to_host(&g, "restrict=on", port);
    assert_info_network("net=10.0.2.0,restrict=on");
    guest_run_for(&g, 300);
    GByteArray *f;
    while ((f = guest_next_frame(&g))) {
        Rx rx = rx_parse(f);
        bool accepted = false;
        g_assert_false(match_syn_answer(&g, &rx, &accepted) && accepted);
        g_byte_array_unref(f);
    }
    g_assert_cmpint(accept(listener, NULL, NULL), <, 0);
    g_assert_cmpint(errno, ==, EAGAIN);
    close(listener);
    guest_free(&g);
}

/* ---- refusals at creation ---- */

static void expect_init_error(const char *optstr, const char *needle)
{
    Error *err = NULL;
    NetdevConfig cfg = netdev_config(optstr);
    g_assert_false(net_user_init(&cfg, &err));
    if (!strstr(err->msg, needle)) {
        g_error("%s: '%s' does not contain '%s'", optstr, err->msg, needle);
    }
    g_assert_null(strchr(err->msg, '\n'));
    error_free(err);
    g_ptr_array_unref(cfg.items);
}

static void test_init_errors(void)
{
    expect_init_error("hostfwd=tcp:127.0.0.1:2222-22", "(Missing guest address)");
    expect_init_error("guestfwd=tcp:10.0.2.100:1234-cmd:cat", "'guestfwd' is not supported");
    g_assert_null(netdev_find("u0"));

    /* A port in use: the bind fails at creation, not later. */
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    g_assert_cmpint(bind(busy, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(busy, 1), ==, 0);
    g_assert_cmpint(getsockname(busy, (struct sockaddr *)&sa, &len), ==, 0);
    g_autofree char *rule = g_strdup_printf("hostfwd=tcp:127.0.0.1:%u-:22", ntohs(sa.sin_port));
    expect_init_error(rule, "Could not set up host forwarding rule 'tcp:127.0.0.1:");
    close(busy);
    g_assert_null(netdev_find("u0"));

    user_netdev_new("");
    expect_init_error("", "Duplicate ID 'u0' for netdev");
    netdevs_free_all();
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/slirp/dhcp-defaults", test_dhcp_defaults);
    g_test_add_func("/slirp/dhcp-options", test_dhcp_options);
    g_test_add_func("/slirp/tftp", test_tftp);
    g_test_add_func("/slirp/arp-and-flow-to-guest", test_arp_and_flow_to_guest);
    g_test_add_func("/slirp/flow-from-guest", test_flow_from_guest);
    g_test_add_func("/slirp/hostfwd-tcp", test_hostfwd_tcp);
    g_test_add_func("/slirp/hostfwd-tcp-iothread", test_hostfwd_tcp_iothread);
    g_test_add_func("/slirp/guest-connects-to-host", test_guest_connects_to_host);
    g_test_add_func("/slirp/restrict", test_restrict);
    g_test_add_func("/slirp/init-errors", test_init_errors);
    return g_test_run();
}
