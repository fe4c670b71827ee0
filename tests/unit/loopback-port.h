/*
 * A TCP port on 127.0.0.1 that nobody listens on now (the kernel's pick),
 * for tests that need a listener of their own or a forward to one.
 */
#ifndef TESTS_UNIT_LOOPBACK_PORT_H
#define TESTS_UNIT_LOOPBACK_PORT_H

#include <stdint.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <glib.h>

static inline uint16_t loopback_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    close(fd);
    return ntohs(sa.sin_port);
}

#endif
