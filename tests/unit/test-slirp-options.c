/*
 * -netdev user's options (net/slirp-options.c): QEMU's defaults, the
 * addresses derived from net=, the IPv4/IPv6 switches, hostfwd= rules,
 * and a one-line refusal in QEMU's words for each bad value.
 */
#include <arpa/inet.h>
#include <string.h>
#include <glib.h>
#include "net/slirp-options.h"
#include "qemu/keyval.h"

static GPtrArray *items_of(const char *optstr)
{
    Error *err = NULL;
    /* "-netdev user,id=u0": no options left once type and id are taken. */
    GPtrArray *items = *optstr ? keyval_parse(optstr, NULL, &err) : g_ptr_array_new();
    if (!items) {
        g_error("%s: %s", optstr, err->msg);
    }
    return items;
}

static void parse_ok(const char *optstr, GPtrArray **items, UserNetOptions *opts)
{
    Error *err = NULL;
    *items = items_of(optstr);
    if (!user_net_options_parse(*items, opts, &err)) {
        g_error("%s: %s", optstr, err->msg);
    }
}

static void assert_addr(struct in_addr addr, const char *expected)
{
    g_assert_cmpstr(inet_ntoa(addr), ==, expected);
}

static void assert_addr6(const struct in6_addr *addr, const char *expected)
{
    char text[INET6_ADDRSTRLEN];
    g_assert_nonnull(inet_ntop(AF_INET6, addr, text, sizeof(text)));
    g_assert_cmpstr(text, ==, expected);
}

static void test_defaults(void)
{
    GPtrArray *items;
    UserNetOptions opts;
    parse_ok("", &items, &opts);
    g_assert_cmpuint(opts.cfg.version, ==, 4);
    g_assert_true(opts.cfg.in_enabled);
    g_assert_true(opts.cfg.in6_enabled);
    g_assert_false(opts.cfg.restricted);
    assert_addr(opts.cfg.vnetwork, "10.0.2.0");
    assert_addr(opts.cfg.vnetmask, "255.255.255.0");
    assert_addr(opts.cfg.vhost, "10.0.2.2");
    assert_addr(opts.cfg.vnameserver, "10.0.2.3");
    assert_addr(opts.cfg.vdhcp_start, "10.0.2.15");
    assert_addr6(&opts.cfg.vprefix_addr6, "fec0::");
    g_assert_cmpuint(opts.cfg.vprefix_len, ==, 64);
    assert_addr6(&opts.cfg.vhost6, "fec0::2");
    assert_addr6(&opts.cfg.vnameserver6, "fec0::3");
    g_assert_null(opts.cfg.vdnssearch);
    g_assert_cmpuint(opts.hostfwds->len, ==, 0);
    user_net_options_free(&opts);
    g_ptr_array_unref(items);
}

/* The defaults follow net=, whatever the order of the options. */
static void test_addresses_follow_net(void)
{
    GPtrArray *items;
    UserNetOptions opts;
    parse_ok("dns=10.1.0.53,net=10.1.0.0/16,restrict=on,hostname=guest,domainname=example.test,"
             "dnssearch=a.test,dnssearch=b.test,ipv6-prefix=fd00:1::,ipv6-prefixlen=48",
             &items, &opts);
    assert_addr(opts.cfg.vnetmask, "255.255.0.0");
    assert_addr(opts.cfg.vhost, "10.1.2.2");
    assert_addr(opts.cfg.vnameserver, "10.1.0.53");
    assert_addr(opts.cfg.vdhcp_start, "10.1.2.15");
    g_assert_true(opts.cfg.restricted);
    g_assert_cmpstr(opts.cfg.vhostname, ==, "guest");
    g_assert_cmpstr(opts.cfg.vdomainname, ==, "example.test");
    g_assert_cmpstr(opts.cfg.vdnssearch[0], ==, "a.test");
    g_assert_cmpstr(opts.cfg.vdnssearch[1], ==, "b.test");
    g_assert_null(opts.cfg.vdnssearch[2]);
    g_assert_cmpuint(opts.cfg.vprefix_len, ==, 48);
    assert_addr6(&opts.cfg.vhost6, "fd00:1::2");
    user_net_options_free(&opts);
    g_ptr_array_unref(items);

    /* Without a length, QEMU's classful mask; a dotted mask is taken too. */
    parse_ok("net=192.168.76.0", &items, &opts);
    assert_addr(opts.cfg.vnetmask, "255.255.0.0");
    assert_addr(opts.cfg.vhost, "192.168.2.2");
    user_net_options_free(&opts);
    g_ptr_array_unref(items);
    parse_ok("ip=10.9.8.7", &items, &opts);
    assert_addr(opts.cfg.vnetwork, "10.9.8.0");
    assert_addr(opts.cfg.vnetmask, "255.255.255.0");
    user_net_options_free(&opts);
    g_ptr_array_unref(items);
    parse_ok("net=172.20.9.9/255.255.255.0,host=172.20.9.1,dhcpstart=172.20.9.100", &items, &opts);
    assert_addr(opts.cfg.vnetwork, "172.20.9.0");
    assert_addr(opts.cfg.vhost, "172.20.9.1");
    assert_addr(opts.cfg.vnameserver, "172.20.9.3");
    assert_addr(opts.cfg.vdhcp_start, "172.20.9.100");
    user_net_options_free(&opts);
    g_ptr_array_unref(items);
}

/* QEMU's rule: naming one family "on" alone means only that family. */
static void test_families(void)
{
    static const struct {
        const char *optstr;
        bool in, in6;
    } cases[] = {
        { "ipv4=on", true, false },
        { "ipv6=on", false, true },
        { "ipv4=on,ipv6=on", true, true },
        { "ipv6=off", true, false },
        { "ipv4=off", false, true },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GPtrArray *items;
        UserNetOptions opts;
        parse_ok(cases[i].optstr, &items, &opts);
        g_assert_cmpint(opts.cfg.in_enabled, ==, cases[i].in);
        g_assert_cmpint(opts.cfg.in6_enabled, ==, cases[i].in6);
        user_net_options_free(&opts);
        g_ptr_array_unref(items);
    }
}

static void test_hostfwd_rules(void)
{
    GPtrArray *items;
    UserNetOptions opts;
    parse_ok("hostfwd=tcp:127.0.0.1:2222-:22,hostfwd=udp::5555-10.0.2.20:53,"
             "hostfwd=:127.0.0.1:0x1000-10.0.2.15:0x50", &items, &opts);
    g_assert_cmpuint(opts.hostfwds->len, ==, 3);
    const UserNetHostFwd *tcp = &g_array_index(opts.hostfwds, UserNetHostFwd, 0);
    g_assert_false(tcp->udp);
    g_assert_cmpstr(tcp->rule, ==, "tcp:127.0.0.1:2222-:22");
    assert_addr(tcp->host.sin_addr, "127.0.0.1");
    g_assert_cmpuint(ntohs(tcp->host.sin_port), ==, 2222);
    assert_addr(tcp->guest.sin_addr, "0.0.0.0");
    g_assert_cmpuint(ntohs(tcp->guest.sin_port), ==, 22);
    const UserNetHostFwd *udp = &g_array_index(opts.hostfwds, UserNetHostFwd, 1);
    g_assert_true(udp->udp);
    assert_addr(udp->host.sin_addr, "0.0.0.0");     /* QEMU's default: every address */
    assert_addr(udp->guest.sin_addr, "10.0.2.20");
    const UserNetHostFwd *hex = &g_array_index(opts.hostfwds, UserNetHostFwd, 2);
    g_assert_false(hex->udp);
    g_assert_cmpuint(ntohs(hex->host.sin_port), ==, 0x1000);
    g_assert_cmpuint(ntohs(hex->guest.sin_port), ==, 80);
    user_net_options_free(&opts);
    g_ptr_array_unref(items);
}

static void test_bad_options(void)
{
    static const struct {
        const char *optstr, *message;
    } cases[] = {
        { "foo=1", "Invalid parameter 'foo'" },
        { "guestfwd=tcp:10.0.2.100:1234-cmd:cat",
          "Parameter 'guestfwd' is not supported by this build" },
        { "smb=/tmp", "Parameter 'smb' is not supported by this build" },
        { "net", "parameter 'net' needs a value" },
        { "restrict=maybe", "parameter 'restrict' expects on or off, not 'maybe'" },
        { "net=10.0.2.x/24", "Failed to parse netmask" },
        { "net=10.0.2.0/33", "Invalid netmask provided (must be in range 4-32)" },
        { "net=10.0.2.0/3", "Invalid netmask provided (must be in range 4-32)" },
        { "net=10.0.2.0/255.x", "Failed to parse netmask (trailing chars)" },
        { "host=nowhere", "Failed to parse host" },
        { "host=10.0.3.2", "Host doesn't belong to network" },
        { "dns=x", "Failed to parse DNS" },
        { "dns=10.0.2.2", "DNS must be different from host" },
        { "restrict=on,dns=8.8.8.8", "DNS doesn't belong to network" },
        { "dhcpstart=10.0.2", "DHCP doesn't belong to network" },
        { "dhcpstart=10.0.2.x", "Failed to parse DHCP start address" },
        { "dhcpstart=10.0.9.15", "DHCP doesn't belong to network" },
        { "dhcpstart=10.0.2.3", "DHCP must be different from host and DNS" },
        { "ipv4=off,net=10.0.2.0/24", "IPv4 disabled but netmask/host/dns provided" },
        { "ipv6=off,ipv6-host=fec0::2", "IPv6 disabled but prefix/host6/dns6 provided" },
        { "ipv4=off,ipv6=off", "IPv4 and IPv6 disabled" },
        { "ipv6-prefix=fec0::x", "Failed to parse IPv6 prefix" },
        { "ipv6-prefixlen=127", "Invalid IPv6 prefix provided "
          "(IPv6 prefix length must be between 0 and 126)" },
        { "ipv6-host=fec1::2", "IPv6 Host doesn't belong to network" },
        { "ipv6-dns=::zz", "Failed to parse IPv6 DNS" },
        { "domainname=", "'domainname' parameter cannot be empty" },
        { "hostfwd=tcp", "Invalid host forwarding rule 'tcp' (No : separators)" },
        { "hostfwd=sctp::1-:2", "Invalid host forwarding rule 'sctp::1-:2' (Bad protocol name)" },
        { "hostfwd=tcp:2222", "Invalid host forwarding rule 'tcp:2222' (Missing : separator)" },
        { "hostfwd=tcp:2222-:22", "(Bad host address)" },
        { "hostfwd=tcp:localhost:2222-:22", "(Bad host address)" },
        { "hostfwd=tcp:127.0.0.1:2222:22", "(Bad host port separator)" },
        { "hostfwd=tcp:127.0.0.1:65536-:22", "(Bad host port)" },
        { "hostfwd=tcp:127.0.0.1:-1-:22", "(Bad host port)" },
        { "hostfwd=tcp:127.0.0.1:2222-22", "(Missing guest address)" },
        { "hostfwd=tcp:127.0.0.1:2222-guest:22", "(Bad guest address)" },
        { "hostfwd=tcp:127.0.0.1:2222-:0", "(Bad guest port)" },
        { "hostfwd=tcp:127.0.0.1:2222-:ssh", "(Bad guest port)" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GPtrArray *items = items_of(cases[i].optstr);
        UserNetOptions opts;
        Error *err = NULL;
        g_assert_false(user_net_options_parse(items, &opts, &err));
        g_assert_nonnull(err);
        if (!strstr(err->msg, cases[i].message)) {
            g_error("%s: '%s' does not contain '%s'", cases[i].optstr, err->msg,
                    cases[i].message);
        }
        g_assert_null(strchr(err->msg, '\n'));
        error_free(err);
        user_net_options_free(&opts);
        g_ptr_array_unref(items);
    }
    /* 256 bytes of hostname: one too many for DHCP's option. */
    g_autofree char *long_name = g_strnfill(256, 'h');
    g_autofree char *optstr = g_strdup_printf("hostname=%s", long_name);
    GPtrArray *items = items_of(optstr);
    UserNetOptions opts;
    Error *err = NULL;
    g_assert_false(user_net_options_parse(items, &opts, &err));
    g_assert_cmpstr(err->msg, ==, "'hostname' parameter cannot exceed 255 bytes");
    error_free(err);
    user_net_options_free(&opts);
    g_ptr_array_unref(items);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/slirp-options/defaults", test_defaults);
    g_test_add_func("/slirp-options/addresses-follow-net", test_addresses_follow_net);
    g_test_add_func("/slirp-options/families", test_families);
    g_test_add_func("/slirp-options/hostfwd-rules", test_hostfwd_rules);
    g_test_add_func("/slirp-options/bad-options", test_bad_options);
    return g_test_run();
}
