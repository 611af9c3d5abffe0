/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_ras: a stand-in for NCCL's RAS port, for tests/cli/test_ras.sh.
 * Listens on 127.0.0.1 (--v6: ::1), port 0 unless --port, prints
 * "port N" on stdout, then serves connections until killed, the way NCCL's
 * src/ras/client_support.cc answers them, in one of these modes:
 *   json     "SERVER PROTOCOL 2", "OK" to TIMEOUT and to SET FORMAT json,
 *            the --answer file to (VERBOSE) STATUS, then closes (2.28.7+)
 *   text     an older NCCL: "ERROR: Unknown command SET FORMAT json", then
 *            the --answer file (a text answer)
 *   slow     reads the commands and never answers
 *   garbage  answers the handshake with an HTTP error
 *   early    closes as soon as the handshake line came
 *   cut      as json, but closes halfway through the answer
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/util.h"

struct fopts { const char *mode; char *answer; size_t alen; };

static void send_str(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

/* One command line from fd into line; 0 at end of stream. */
static int read_cmd(int fd, char *line, size_t len)
{
	size_t n = 0;
	char ch;
	while (recv(fd, &ch, 1, 0) == 1) {
		if (ch == '\n') {
			line[n] = '\0';
			if (n && line[n - 1] == '\r')
				line[n - 1] = '\0';
			return 1;
		}
		if (n + 1 < len)
			line[n++] = ch;
	}
	return 0;
}

static void serve(int fd, const struct fopts *o)
{
	char line[256];
	int json = !strcmp(o->mode, "json") || !strcmp(o->mode, "cut");
	while (read_cmd(fd, line, sizeof(line))) {
		if (!strcmp(o->mode, "slow")) {
			continue;
		} else if (!strcmp(o->mode, "early")) {
			return;
		} else if (!strcmp(o->mode, "garbage")) {
			const char *g = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
			send_str(fd, g, strlen(g));
			return;
		} else if (!strncasecmp(line, "CLIENT PROTOCOL ", 16)) {
			send_str(fd, "SERVER PROTOCOL 2\n", 18);
		} else if (!strncasecmp(line, "TIMEOUT ", 8)) {
			send_str(fd, "OK\n", 3);
		} else if (!strcasecmp(line, "SET FORMAT json") && json) {
			send_str(fd, "OK\n", 3);
		} else if (!strcasecmp(line, "STATUS") || !strcasecmp(line, "VERBOSE STATUS")) {
			send_str(fd, o->answer, !strcmp(o->mode, "cut") ? o->alen / 2 : o->alen);
			return;
		} else {
			char e[300];
			int n = snprintf(e, sizeof(e), "ERROR: Unknown command %s\n", line);
			send_str(fd, e, (size_t)n);
		}
	}
}

static int listen_on(int v6, int port)
{
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_loopback };
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rc = v6 ? bind(fd, (struct sockaddr *)&a6, sizeof(a6)) : bind(fd, (struct sockaddr *)&a4, sizeof(a4));
	if (rc || listen(fd, 16)) {
		perror("fake_ras: bind/listen");
		exit(1);
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	printf("port %d\n", ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port));
	fflush(stdout);
	return fd;
}

int main(int argc, char **argv)
{
	struct fopts o = { .mode = "json" };
	const char *answer = NULL;
	int v6 = 0, port = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--v6"))
			v6 = 1;
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			o.mode = argv[++i];
		else if (!strcmp(argv[i], "--answer") && i + 1 < argc)
			answer = argv[++i];
		else if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: fake_ras [--mode json|text|slow|garbage|early|cut] [--answer FILE] [--port N] [--v6]\n");
			return 64;
		}
	}
	o.answer = answer ? nw_read_file(answer, 64 << 20, &o.alen) : nw_strdup("");
	if (!o.answer) {
		fprintf(stderr, "fake_ras: cannot read '%s'\n", answer);
		return 1;
	}
	if (!answer)
		o.alen = 0;
	signal(SIGPIPE, SIG_IGN);
	int lfd = listen_on(v6, port);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve(fd, &o);
		if (!strcmp(o.mode, "slow"))
			sleep(3600); /* hold the connection open, answering nothing */
		close(fd);
	}
}
