/*
 * netxfer: move a byte stream over one TCP connection, for the network tests
 * (tests/functional/test_network.py). Both ends hash what they sent or got
 * with md5sum; this tool only moves bytes and makes the data.
 *
 *   netxfer gen MIB                 MIB MiB of pseudo-random bytes to stdout
 *   netxfer send ADDR PORT [SECS]   stdin to ADDR:PORT, connecting again until
 *                                   SECS (default 60) have passed: the
 *                                   receiver may not listen yet
 *   netxfer recv PORT               accept one connection on PORT (any
 *                                   address), its bytes to stdout until EOF
 *
 * busybox's nc cannot close its write side at the end of its input, so the
 * receiver would never see EOF. recv prints "netxfer: listening on PORT" to
 * stderr once it listens (tests wait for it: a connection through slirp's
 * hostfwd is accepted before the guest listens, then reset), and both ends
 * print the byte count. Exit status 0 only if the stream ended cleanly.
 * Built static into both kits by scripts/build-guest-kit.sh.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Copy in to out until EOF; returns the byte count, or -1 on an error. */
static long long pump(int in, int out)
{
    static char buf[1 << 16];
    long long total = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return total;
        if (write_all(out, buf, (size_t)n) < 0)
            return -1;
        total += n;
    }
}

/* xorshift64: cheap enough for an emulated CPU, unlike /dev/urandom. */
static int gen(long mib)
{
    static uint64_t block[1 << 13];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (long i = 0; i < mib * 16; i++) {          /* 64 KiB per block */
        for (size_t j = 0; j < sizeof(block) / sizeof(block[0]); j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            block[j] = x;
        }
        if (write_all(1, (const char *)block, sizeof(block)) < 0)
            return 1;
    }
    return 0;
}

static int finish(const char *what, long long bytes)
{
    if (bytes < 0) {
        fprintf(stderr, "netxfer: %s failed: %s\n", what, strerror(errno));
        return 1;
    }
    fprintf(stderr, "netxfer: %s %lld bytes\n", what, bytes);
    return 0;
}

static int send_to(const char *addr, int port, int secs)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "netxfer: bad address %s\n", addr);
        return 2;
    }
    time_t deadline = time(NULL) + secs;
    int fd;
    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        if (fd >= 0)
            close(fd);
        if (time(NULL) >= deadline) {
            fprintf(stderr, "netxfer: cannot connect to %s:%d: %s\n", addr, port, strerror(errno));
            return 1;
        }
        usleep(200 * 1000);
    }
    long long bytes = pump(0, fd);
    /* The receiver's EOF; then wait for its close, so that every byte was
     * taken before this side reports success. */
    if (bytes >= 0 && (shutdown(fd, SHUT_WR) < 0 || pump(fd, 1) < 0))
        bytes = -1;
    close(fd);
    return finish("sent", bytes);
}

static int receive_on(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_ANY) };
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0) {
        fprintf(stderr, "netxfer: cannot listen on %d: %s\n", port, strerror(errno));
        return 1;
    }
    fprintf(stderr, "netxfer: listening on %d\n", port);
    int fd = accept(lfd, NULL, NULL);
    close(lfd);
    if (fd < 0)
        return finish("accept", -1);
    long long bytes = pump(fd, 1);
    close(fd);
    return finish("received", bytes);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "gen"))
        return gen(atol(argv[2]));
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "send"))
        return send_to(argv[2], atoi(argv[3]), argc == 5 ? atoi(argv[4]) : 60);
    if (argc == 3 && !strcmp(argv[1], "recv"))
        return receive_on(atoi(argv[2]));
    fprintf(stderr, "usage: netxfer gen MIB | send ADDR PORT [SECS] | recv PORT\n");
    return 2;
}
