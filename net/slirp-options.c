/*
 * -netdev user's options into a SlirpConfig (net/slirp-options.h).
 *
 * The options are first collected by name, then checked in QEMU's order
 * (network, host, DNS, DHCP start, IPv6, names), because later ones take
 * their defaults from earlier ones: net=10.1.0.0/16 moves the host to
 * 10.1.2.2 whatever the order on the command line. The messages are QEMU's.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>
#include "net/slirp-options.h"
#include "qemu/keyval.h"

/* The options that take one string; the last one given wins, as in QEMU. */
typedef struct UserNetStrings {
    const char *net, *ip, *host, *dhcpstart, *dns;
    const char *hostname, *domainname;
    const char *tftp, *bootfile, *tftp_server_name;
    const char *ipv6_prefix, *ipv6_prefixlen, *ipv6_host, *ipv6_dns;
} UserNetStrings;

static const struct {
    const char *key;
    size_t offset;
} user_net_string_options[] = {
    { "net", offsetof(UserNetStrings, net) },
    { "ip", offsetof(UserNetStrings, ip) },     /* QEMU's older spelling of net=ADDR/24 */
    { "host", offsetof(UserNetStrings, host) },
    { "dhcpstart", offsetof(UserNetStrings, dhcpstart) },
    { "dns", offsetof(UserNetStrings, dns) },
    { "hostname", offsetof(UserNetStrings, hostname) },
    { "domainname", offsetof(UserNetStrings, domainname) },
    { "tftp", offsetof(UserNetStrings, tftp) },
    { "bootfile", offsetof(UserNetStrings, bootfile) },
    { "tftp-server-name", offsetof(UserNetStrings, tftp_server_name) },
    { "ipv6-prefix", offsetof(UserNetStrings, ipv6_prefix) },
    { "ipv6-prefixlen", offsetof(UserNetStrings, ipv6_prefixlen) },
    { "ipv6-host", offsetof(UserNetStrings, ipv6_host) },
    { "ipv6-dns", offsetof(UserNetStrings, ipv6_dns) },
};

/* QEMU options this build does not offer: refused by name rather than
 * called unknown, so the user knows it is a choice and what to use. */
static const struct {
    const char *key;
    const char *advice;
} user_net_refused_options[] = {
    { "guestfwd", "forward from the host with hostfwd=, or use a socket or tap netdev" },
    { "smb", "export the directory from the host with a hostfwd= to a guest server" },
    { "smbserver", "there is no smb= to serve" },
};

/* A bool option that was given, and its value. */
typedef struct UserNetSwitch {
    bool given, on;
} UserNetSwitch;

typedef struct UserNetSwitches {
    UserNetSwitch restrict_, ipv4, ipv6;
} UserNetSwitches;

/* ---- hostfwd= ---- */

/* The text of *p up to sep (a new string), *p moved past sep. */
static char *take_field(const char **p, char sep)
{
    const char *end = strchr(*p, sep);
    if (!end) {
        return NULL;
    }
    char *field = g_strndup(*p, end - *p);
    *p = end + 1;
    return field;
}

static bool parse_port(const char *text, uint64_t min, uint16_t *port)
{
    uint64_t value;
    if (!parse_uint(text, 65535, &value) || value < min) {
        return false;
    }
    *port = value;
    return true;
}

/* An empty address is 0.0.0.0 (any host address; slirp's first DHCP
 * address for the guest). */
static bool parse_fwd_addr(const char *text, struct sockaddr_in *sa)
{
    sa->sin_family = AF_INET;
    return !*text || inet_aton(text, &sa->sin_addr);
}

/* The reason a rule is malformed, in QEMU's words, or NULL. */
static const char *hostfwd_parse(const char *rule, UserNetHostFwd *fwd)
{
    const char *p = rule;
    g_autofree char *proto = take_field(&p, ':');
    if (!proto) {
        return "No : separators";
    }
    if (!strcmp(proto, "udp")) {
        fwd->udp = true;
    } else if (*proto && strcmp(proto, "tcp")) {
        return "Bad protocol name";
    }
    g_autofree char *host_addr = take_field(&p, ':');
    if (!host_addr) {
        return "Missing : separator";
    }
    if (!parse_fwd_addr(host_addr, &fwd->host)) {
        return "Bad host address";
    }
    g_autofree char *host_port = take_field(&p, '-');
    if (!host_port) {
        return "Bad host port separator";
    }
    uint16_t port;
    if (!parse_port(host_port, 0, &port)) {
        return "Bad host port";
    }
    fwd->host.sin_port = htons(port);
    g_autofree char *guest_addr = take_field(&p, ':');
    if (!guest_addr) {
        return "Missing guest address";
    }
    if (!parse_fwd_addr(guest_addr, &fwd->guest)) {
        return "Bad guest address";
    }
    if (!parse_port(p, 1, &port)) {
        return "Bad guest port";
    }
    fwd->guest.sin_port = htons(port);
    return NULL;
}

static bool hostfwd_add(UserNetOptions *opts, const char *rule, Error **errp)
{
    UserNetHostFwd fwd = { .rule = rule };
    const char *reason = hostfwd_parse(rule, &fwd);
    if (reason) {
        error_setg(errp, "Invalid host forwarding rule '%s' (%s)", rule, reason);
        return false;
    }
    g_array_append_val(opts->hostfwds, fwd);
    return true;
}

/* ---- collecting the items ---- */

static bool collect_string(const KeyvalItem *item, UserNetStrings *strings, bool *known,
                           Error **errp)
{
    for (size_t i = 0; i < G_N_ELEMENTS(user_net_string_options); i++) {
        if (!strcmp(item->key, user_net_string_options[i].key)) {
            *known = true;
            if (!item->value) {
                error_setg(errp, "parameter '%s' needs a value", item->key);
                return false;
            }
            *(const char **)((char *)strings + user_net_string_options[i].offset) = item->value;
            return true;
        }
    }
    return true;
}

static bool collect_switch(const KeyvalItem *item, UserNetSwitches *switches, bool *known,
                           Error **errp)
{
    UserNetSwitch *sw = !strcmp(item->key, "restrict") ? &switches->restrict_
                      : !strcmp(item->key, "ipv4") ? &switches->ipv4
                      : !strcmp(item->key, "ipv6") ? &switches->ipv6 : NULL;
    if (!sw) {
        return true;
    }
    *known = true;
    sw->given = true;
    return keyval_item_bool(item, &sw->on, errp);
}

static bool refuse_unsupported(const KeyvalItem *item, Error **errp)
{
    for (size_t i = 0; i < G_N_ELEMENTS(user_net_refused_options); i++) {
        if (!strcmp(item->key, user_net_refused_options[i].key)) {
            error_setg(errp, "Parameter '%s' is not supported by this build (%s)",
                       item->key, user_net_refused_options[i].advice);
            return false;
        }
    }
    error_setg(errp, "Invalid parameter '%s'", item->key);
    return false;
}

/* The repeatable options (hostfwd=, dnssearch=) are kept in order. */
static bool collect_list(const KeyvalItem *item, UserNetOptions *opts, bool *known,
                         Error **errp)
{
    bool hostfwd = !strcmp(item->key, "hostfwd");
    if (!hostfwd && strcmp(item->key, "dnssearch")) {
        return true;
    }
    *known = true;
    if (!item->value) {
        error_setg(errp, "parameter '%s' needs a value", item->key);
        return false;
    }
    if (hostfwd) {
        return hostfwd_add(opts, item->value, errp);
    }
    g_ptr_array_add(opts->dnssearch, item->value);
    return true;
}

static bool collect_items(GPtrArray *items, UserNetOptions *opts, UserNetStrings *strings,
                          UserNetSwitches *switches, Error **errp)
{
    for (guint i = 0; i < items->len; i++) {
        const KeyvalItem *item = g_ptr_array_index(items, i);
        bool known = false;
        if (!collect_string(item, strings, &known, errp) ||
            !collect_switch(item, switches, &known, errp) ||
            !collect_list(item, opts, &known, errp)) {
            return false;
        }
        if (!known && !refuse_unsupported(item, errp)) {
            return false;
        }
    }
    return true;
}

/* ---- IPv4 ---- */

/* QEMU's mask for net= without a length: the historic classful one, with
 * the private and test ranges as what they are. */
static uint32_t classful_mask(uint32_t addr)
{
    static const struct {
        uint32_t select, match;
        unsigned prefix;
    } classes[] = {
        { 0x80000000, 0x00000000, 8 },      /* class A */
        { 0xfff00000, 0xac100000, 12 },     /* 172.16.0.0/12 */
        { 0xc0000000, 0x80000000, 16 },     /* class B */
        { 0xffff0000, 0xc0a80000, 16 },     /* 192.168.0.0/16 */
        { 0xffff0000, 0xc6120000, 15 },     /* 198.18.0.0/15 */
        { 0xe0000000, 0xe0000000, 24 },     /* multicast and above */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(classes); i++) {
        if ((addr & classes[i].select) == classes[i].match) {
            return 0xffffffffu << (32 - classes[i].prefix);
        }
    }
    return 0xfffffff0;
}

/* net=addr, addr/len or addr/mask. */
static bool parse_network(const char *text, SlirpConfig *cfg, Error **errp)
{
    const char *slash = strchr(text, '/');
    g_autofree char *addr = slash ? g_strndup(text, slash - text) : g_strdup(text);
    if (!inet_aton(addr, &cfg->vnetwork)) {
        error_setg(errp, "Failed to parse netmask");
        return false;
    }
    if (!slash) {
        cfg->vnetmask.s_addr = htonl(classful_mask(ntohl(cfg->vnetwork.s_addr)));
    } else if (strspn(slash + 1, "0123456789") == strlen(slash + 1)) {
        uint64_t len;
        if (!parse_uint(slash + 1, 32, &len) || len < 4) {
            error_setg(errp, "Invalid netmask provided (must be in range 4-32)");
            return false;
        }
        cfg->vnetmask.s_addr = htonl(0xffffffffu << (32 - len));
    } else if (!inet_aton(slash + 1, &cfg->vnetmask)) {
        error_setg(errp, "Failed to parse netmask (trailing chars)");
        return false;
    }
    cfg->vnetwork.s_addr &= cfg->vnetmask.s_addr;
    return true;
}

/* The address at host_part (0.0.2.x) inside the network: QEMU's defaults. */
static struct in_addr network_address(const SlirpConfig *cfg, uint32_t host_part)
{
    return (struct in_addr){ cfg->vnetwork.s_addr | (htonl(host_part) & ~cfg->vnetmask.s_addr) };
}

static bool in_network(const SlirpConfig *cfg, struct in_addr addr)
{
    return (addr.s_addr & cfg->vnetmask.s_addr) == cfg->vnetwork.s_addr;
}

/* text (if given) into *addr; parse_error otherwise. */
static bool parse_addr(const char *text, struct in_addr *addr, const char *parse_error,
                       Error **errp)
{
    if (text && !inet_aton(text, addr)) {
        error_setg(errp, "%s", parse_error);
        return false;
    }
    return true;
}

static bool setup_ipv4(const UserNetStrings *s, SlirpConfig *cfg, Error **errp)
{
    g_autofree char *net = s->net ? g_strdup(s->net)
                         : s->ip ? g_strdup_printf("%s/24", s->ip) : g_strdup("10.0.2.0/24");
    if (!parse_network(net, cfg, errp)) {
        return false;
    }
    cfg->vhost = network_address(cfg, 0x0202);
    cfg->vnameserver = network_address(cfg, 0x0203);
    cfg->vdhcp_start = network_address(cfg, 0x020f);

    if (!parse_addr(s->host, &cfg->vhost, "Failed to parse host", errp)) {
        return false;
    }
    if (!in_network(cfg, cfg->vhost)) {
        error_setg(errp, "Host doesn't belong to network");
        return false;
    }
    if (!parse_addr(s->dns, &cfg->vnameserver, "Failed to parse DNS", errp)) {
        return false;
    }
    if (cfg->restricted && !in_network(cfg, cfg->vnameserver)) {
        error_setg(errp, "DNS doesn't belong to network");
        return false;
    }
    if (cfg->vnameserver.s_addr == cfg->vhost.s_addr) {
        error_setg(errp, "DNS must be different from host");
        return false;
    }
    if (!parse_addr(s->dhcpstart, &cfg->vdhcp_start, "Failed to parse DHCP start address",
                    errp)) {
        return false;
    }
    if (!in_network(cfg, cfg->vdhcp_start)) {
        error_setg(errp, "DHCP doesn't belong to network");
        return false;
    }
    if (cfg->vdhcp_start.s_addr == cfg->vhost.s_addr ||
        cfg->vdhcp_start.s_addr == cfg->vnameserver.s_addr) {
        error_setg(errp, "DHCP must be different from host and DNS");
        return false;
    }
    return true;
}

/* ---- IPv6 ---- */

static bool in6_same_prefix(const struct in6_addr *a, const struct in6_addr *b, unsigned len)
{
    unsigned bytes = len / 8, bits = len % 8;
    if (memcmp(a->s6_addr, b->s6_addr, bytes)) {
        return false;
    }
    uint8_t mask = (uint8_t)(0xff00 >> bits);
    return !bits || ((a->s6_addr[bytes] ^ b->s6_addr[bytes]) & mask) == 0;
}

/* The address ::x inside the prefix: QEMU's defaults (host ::2, DNS ::3). */
static struct in6_addr prefix_address(const SlirpConfig *cfg, uint8_t last)
{
    struct in6_addr addr = cfg->vprefix_addr6;
    addr.s6_addr[15] |= last;
    return addr;
}

static bool parse_addr6(const char *text, struct in6_addr *addr, const char *parse_error,
                        Error **errp)
{
    if (text && inet_pton(AF_INET6, text, addr) != 1) {
        error_setg(errp, "%s", parse_error);
        return false;
    }
    return true;
}

static bool setup_ipv6(const UserNetStrings *s, SlirpConfig *cfg, Error **errp)
{
    if (!parse_addr6(s->ipv6_prefix ? s->ipv6_prefix : "fec0::", &cfg->vprefix_addr6,
                     "Failed to parse IPv6 prefix", errp)) {
        return false;
    }
    uint64_t len = 0;
    if (s->ipv6_prefixlen && !parse_uint(s->ipv6_prefixlen, 126, &len)) {
        error_setg(errp, "Invalid IPv6 prefix provided "
                   "(IPv6 prefix length must be between 0 and 126)");
        return false;
    }
    if (len == 0) {
        len = 64;           /* 0 means the default, as in QEMU */
    }
    cfg->vprefix_len = len;
    cfg->vhost6 = prefix_address(cfg, 2);
    cfg->vnameserver6 = prefix_address(cfg, 3);
    if (!parse_addr6(s->ipv6_host, &cfg->vhost6, "Failed to parse IPv6 host", errp)) {
        return false;
    }
    if (!in6_same_prefix(&cfg->vprefix_addr6, &cfg->vhost6, len)) {
        error_setg(errp, "IPv6 Host doesn't belong to network");
        return false;
    }
    if (!parse_addr6(s->ipv6_dns, &cfg->vnameserver6, "Failed to parse IPv6 DNS", errp)) {
        return false;
    }
    if (cfg->restricted && !in6_same_prefix(&cfg->vprefix_addr6, &cfg->vnameserver6, len)) {
        error_setg(errp, "IPv6 DNS doesn't belong to network");
        return false;
    }
    return true;
}

/* ---- the whole ---- */

/* QEMU's rule: naming one family "on" alone means only that one. */
static bool choose_families(const UserNetStrings *s, const UserNetSwitches *sw,
                            SlirpConfig *cfg, Error **errp)
{
    cfg->in_enabled = !((sw->ipv6.given && sw->ipv6.on && !sw->ipv4.given) ||
                        (sw->ipv4.given && !sw->ipv4.on));
    cfg->in6_enabled = !((sw->ipv4.given && sw->ipv4.on && !sw->ipv6.given) ||
                         (sw->ipv6.given && !sw->ipv6.on));
    if (!cfg->in_enabled && (s->net || s->ip || s->host || s->dns)) {
        error_setg(errp, "IPv4 disabled but netmask/host/dns provided");
        return false;
    }
    if (!cfg->in6_enabled && (s->ipv6_prefix || s->ipv6_host || s->ipv6_dns)) {
        error_setg(errp, "IPv6 disabled but prefix/host6/dns6 provided");
        return false;
    }
    if (!cfg->in_enabled && !cfg->in6_enabled) {
        error_setg(errp, "IPv4 and IPv6 disabled");
        return false;
    }
    return true;
}

static bool check_name(const char *option, const char *value, Error **errp)
{
    if (value && strlen(value) > 255) {
        error_setg(errp, "'%s' parameter cannot exceed 255 bytes", option);
        return false;
    }
    return true;
}

static bool setup_names(const UserNetStrings *s, UserNetOptions *opts, Error **errp)
{
    if (s->domainname && !*s->domainname) {
        error_setg(errp, "'domainname' parameter cannot be empty");
        return false;
    }
    if (!check_name("domainname", s->domainname, errp) ||
        !check_name("hostname", s->hostname, errp) ||
        !check_name("tftp-server-name", s->tftp_server_name, errp)) {
        return false;
    }
    SlirpConfig *cfg = &opts->cfg;
    cfg->vhostname = s->hostname;
    cfg->vdomainname = s->domainname;
    cfg->tftp_path = s->tftp;
    cfg->bootfile = s->bootfile;
    cfg->tftp_server_name = s->tftp_server_name;
    if (opts->dnssearch->len) {
        g_ptr_array_add(opts->dnssearch, NULL);
        cfg->vdnssearch = (const char **)opts->dnssearch->pdata;
    }
    return true;
}

bool user_net_options_parse(GPtrArray *items, UserNetOptions *opts, Error **errp)
{
    UserNetStrings strings = { 0 };
    UserNetSwitches switches = { 0 };
    *opts = (UserNetOptions){
        /* Version 4 is libslirp 4.7's newest: timer_new_opaque and
         * init_completed among the callbacks. */
        .cfg = { .version = 4 },
        .dnssearch = g_ptr_array_new(),
        .hostfwds = g_array_new(FALSE, TRUE, sizeof(UserNetHostFwd)),
    };
    if (!collect_items(items, opts, &strings, &switches, errp)) {
        return false;
    }
    opts->cfg.restricted = switches.restrict_.on;
    return choose_families(&strings, &switches, &opts->cfg, errp) &&
           setup_ipv4(&strings, &opts->cfg, errp) &&
           setup_ipv6(&strings, &opts->cfg, errp) &&
           setup_names(&strings, opts, errp);
}

void user_net_options_free(UserNetOptions *opts)
{
    if (opts->dnssearch) {
        g_ptr_array_free(opts->dnssearch, TRUE);
    }
    if (opts->hostfwds) {
        g_array_free(opts->hostfwds, TRUE);
    }
    *opts = (UserNetOptions){ 0 };
}
