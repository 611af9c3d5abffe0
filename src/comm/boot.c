/*
 * boot: env rendezvous and a small TCP bootstrap (see boot.h, docs/launch.md).
 *
 * Topology: a star through rank 0. Rank 0 listens on the bootstrap port
 * during nw_boot_init only; every other rank keeps one connection to it.
 * A collective is: rank 0 tells the others it has entered it (ENTER), the
 * ranks that contribute send their part, rank 0 answers with RESULT. Every
 * socket is non-blocking and every wait is a poll() bounded by the time
 * left of the timeout; no threads. Messages are a 16-byte header (magic,
 * protocol, type, arg, sequence number, length) and a payload whose length
 * is checked against the limit of its type before anything is allocated.
 */
#include "comm/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/util.h"

#define BOOT_MAX_RANKS 32768
#define HELLO_MAX (26 + NW_BOOT_MAX_HOST + NW_BOOT_MAX_FP)

/* ---------------------------------------------------------------- env */

static const char *var(nw_boot_getenv_fn get, void *arg, const char *name)
{
	const char *v = get(name, arg);
	return v && *v ? v : NULL;
}

/* Parse an integer variable that must be in [min, max]; 'what' explains the range. */
static int int_var(const char *name, const char *v, long min, long max, const char *what, int *out,
                   char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (end == v || *end || errno)
		return nw_seterr(err, errlen, "%s='%s' is not a whole number: %s", name, v, what);
	if (x < min || x > max)
		return nw_seterr(err, errlen, "%s='%s' is out of range: %s", name, v, what);
	*out = (int)x;
	return 0;
}

/* A port variable; add is 1 for MASTER_PORT (the bootstrap takes the next port). */
static int parse_port(const char *name, const char *v, int add, int *out, char *err, size_t errlen)
{
	int p;
	if (int_var(name, v, 1, 65535, "give a TCP port from 1 to 65535", &p, err, errlen))
		return -1;
	if (p + add > 65535)
		return nw_seterr(err, errlen,
		                 "%s='%s': the bootstrap port %s+1 would be past 65535; set NCCLWATCH_PORT to a free port",
		                 name, v, name);
	*out = p + add;
	return 0;
}

/*
 * The bootstrap port: NCCLWATCH_PORT, else MASTER_PORT+1 (torchrun's
 * TCPStore owns MASTER_PORT itself), else (Slurm) one derived from the job
 * and step ids so that concurrent jobs differ.
 */
static int pick_port(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, int slurm, char *err,
                     size_t errlen)
{
	const char *v;
	if ((v = var(get, arg, "NCCLWATCH_PORT"))) {
		nw_strlcpy(e->port_from, "NCCLWATCH_PORT", sizeof(e->port_from));
		return parse_port("NCCLWATCH_PORT", v, 0, &e->port, err, errlen);
	}
	if ((v = var(get, arg, "MASTER_PORT"))) {
		nw_strlcpy(e->port_from, "MASTER_PORT+1", sizeof(e->port_from));
		return parse_port("MASTER_PORT", v, 1, &e->port, err, errlen);
	}
	if (slurm && (v = var(get, arg, "SLURM_JOB_ID"))) {
		int job, step = 0;
		const char *s = var(get, arg, "SLURM_STEP_ID");
		if (!s)
			s = var(get, arg, "SLURM_STEPID");
		if (int_var("SLURM_JOB_ID", v, 0, 2147483647, "expected Slurm's job id", &job, err, errlen))
			return -1;
		if (s) {
			char *end;
			long x = strtol(s, &end, 10);
			step = end != s && !*end && x >= 0 ? (int)(x % 4) : 0;
		}
		e->port = 20000 + (job % 3000) * 4 + step;
		nw_strlcpy(e->port_from, "SLURM_JOB_ID", sizeof(e->port_from));
		return 0;
	}
	return nw_seterr(err, errlen,
	                 "MASTER_PORT is not set: set MASTER_PORT (the bootstrap listens on MASTER_PORT+1) "
	                 "or NCCLWATCH_PORT (the bootstrap port itself)");
}

int nw_boot_slurm_first_host(const char *list, char *out, size_t outlen)
{
	size_t o = 0;
	int depth = 0, skipping = 0;
	if (!list || !*list || outlen == 0)
		return -1;
	for (const char *p = list; *p; p++) {
		char c = *p;
		if (c == '[') {
			if (depth++)
				return -1;
			skipping = 0;
			continue;
		}
		if (c == ']') {
			if (!depth--)
				return -1;
			continue;
		}
		if (depth) {
			if (c == ',' || c == '-')
				skipping = 1;
			if (skipping)
				continue;
		} else if (c == ',') {
			break;
		}
		if (c == ' ' || o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	if (depth || o == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

int nw_boot_slurm_tasks_on_node(const char *tpn, int nodeid)
{
	const char *p = tpn;
	long node = 0;
	if (!p || !*p || nodeid < 0)
		return -1;
	while (*p) {
		char *end;
		long n = strtol(p, &end, 10), reps = 1;
		if (end == p || n < 1 || n > BOOT_MAX_RANKS)
			return -1;
		p = end;
		if (*p == '(') {
			if (p[1] != 'x')
				return -1;
			reps = strtol(p + 2, &end, 10);
			if (end == p + 2 || *end != ')' || reps < 1 || reps > 1000000)
				return -1;
			p = end + 1;
		}
		if (nodeid < node + reps)
			return (int)n;
		node += reps;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return -1;
}

/* torchrun / PyTorchJob / hand-set variables. */
static int parse_torch(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                       size_t errlen)
{
	const char *rank = var(get, arg, "RANK"), *size = var(get, arg, "WORLD_SIZE");
	const char *lr = var(get, arg, "LOCAL_RANK"), *ls = var(get, arg, "LOCAL_WORLD_SIZE");
	const char *addr = var(get, arg, "MASTER_ADDR");
	nw_strlcpy(e->launcher, "env", sizeof(e->launcher));
	if (!size)
		return nw_seterr(err, errlen,
		                 "RANK='%s' is set but WORLD_SIZE is not: set both for a multi-process run, or neither",
		                 rank);
	if (!rank)
		return nw_seterr(err, errlen,
		                 "WORLD_SIZE='%s' is set but RANK is not: set both for a multi-process run, or neither",
		                 size);
	if (int_var("WORLD_SIZE", size, 1, BOOT_MAX_RANKS, "give the number of processes (1 or more)",
	            &e->size, err, errlen))
		return -1;
	if (int_var("RANK", rank, 0, BOOT_MAX_RANKS - 1, "give this process's rank, from 0 to WORLD_SIZE-1",
	            &e->rank, err, errlen))
		return -1;
	if (e->rank >= e->size)
		return nw_seterr(err, errlen, "RANK='%s' must be below WORLD_SIZE='%s' (ranks count from 0)",
		                 rank, size);
	if (ls && int_var("LOCAL_WORLD_SIZE", ls, 1, e->size, "give the number of processes on this host, at most WORLD_SIZE",
	                  &e->local_size, err, errlen))
		return -1;
	if (!lr) {
		if (e->size > 1)
			return nw_seterr(err, errlen,
			                 "LOCAL_RANK is not set (RANK='%s', WORLD_SIZE='%s'): it picks this process's GPU; "
			                 "launch with torchrun --no-python, or set LOCAL_RANK (and LOCAL_WORLD_SIZE) for each process",
			                 rank, size);
		e->local_rank = 0;
	} else if (int_var("LOCAL_RANK", lr, 0, e->size - 1, "give this process's index on its host, from 0",
	                   &e->local_rank, err, errlen)) {
		return -1;
	}
	if (e->local_size && e->local_rank >= e->local_size)
		return nw_seterr(err, errlen, "LOCAL_RANK='%s' must be below LOCAL_WORLD_SIZE='%s'", lr, ls);
	if (e->size == 1)
		return 1;
	if (!addr)
		return nw_seterr(err, errlen,
		                 "MASTER_ADDR is not set (WORLD_SIZE='%s'): set it to the host or address of rank 0",
		                 size);
	if (strlen(addr) >= sizeof(e->addr))
		return nw_seterr(err, errlen, "MASTER_ADDR is longer than %zu characters", sizeof(e->addr) - 1);
	nw_strlcpy(e->addr, addr, sizeof(e->addr));
	nw_strlcpy(e->addr_from, "MASTER_ADDR", sizeof(e->addr_from));
	return pick_port(get, arg, e, 0, err, errlen) ? -1 : 1;
}

/* srun task variables. */
static int parse_slurm(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                       size_t errlen)
{
	const char *rank = var(get, arg, "SLURM_PROCID");
	const char *sizename = "SLURM_STEP_NUM_TASKS";
	const char *size = var(get, arg, sizename);
	const char *lr = var(get, arg, "SLURM_LOCALID");
	const char *tpn = var(get, arg, "SLURM_STEP_TASKS_PER_NODE");
	const char *nodeid = var(get, arg, "SLURM_NODEID");
	const char *addr = var(get, arg, "MASTER_ADDR");
	nw_strlcpy(e->launcher, "slurm", sizeof(e->launcher));
	if (!size) {
		sizename = "SLURM_NTASKS";
		size = var(get, arg, sizename);
	}
	if (!size)
		return nw_seterr(err, errlen,
		                 "SLURM_PROCID='%s' is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is: "
		                 "start the ranks with srun, or set RANK and WORLD_SIZE",
		                 rank);
	if (int_var(sizename, size, 1, BOOT_MAX_RANKS, "expected the number of tasks", &e->size, err, errlen))
		return -1;
	if (int_var("SLURM_PROCID", rank, 0, BOOT_MAX_RANKS - 1, "expected the task's rank", &e->rank, err,
	            errlen))
		return -1;
	if (e->rank >= e->size)
		return nw_seterr(err, errlen, "SLURM_PROCID='%s' must be below %s='%s'", rank, sizename, size);
	if (!lr)
		return nw_seterr(err, errlen,
		                 "SLURM_LOCALID is not set (SLURM_PROCID='%s'): start the ranks with srun, or set RANK, "
		                 "WORLD_SIZE and LOCAL_RANK",
		                 rank);
	if (int_var("SLURM_LOCALID", lr, 0, e->size - 1, "expected the task's index on its node",
	            &e->local_rank, err, errlen))
		return -1;
	if (!tpn)
		tpn = var(get, arg, "SLURM_TASKS_PER_NODE");
	if (tpn && nodeid) {
		char *end;
		long n = strtol(nodeid, &end, 10);
		int t = (end != nodeid && !*end && n >= 0 && n < BOOT_MAX_RANKS)
		            ? nw_boot_slurm_tasks_on_node(tpn, (int)n) : -1;
		if (t > 0)
			e->local_size = t;
	}
	if (e->local_size && e->local_rank >= e->local_size)
		return nw_seterr(err, errlen,
		                 "SLURM_LOCALID='%s' must be below the %d tasks that SLURM_STEP_TASKS_PER_NODE='%s' "
		                 "gives node SLURM_NODEID='%s'",
		                 lr, e->local_size, tpn, nodeid);
	if (e->size == 1)
		return 1;
	if (addr) {
		if (strlen(addr) >= sizeof(e->addr))
			return nw_seterr(err, errlen, "MASTER_ADDR is longer than %zu characters", sizeof(e->addr) - 1);
		nw_strlcpy(e->addr, addr, sizeof(e->addr));
		nw_strlcpy(e->addr_from, "MASTER_ADDR", sizeof(e->addr_from));
	} else {
		static const char *const lists[] = { "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST" };
		const char *l = NULL, *lname = NULL;
		for (size_t i = 0; i < NW_ARRAY_LEN(lists) && !l; i++)
			if ((l = var(get, arg, lists[i])))
				lname = lists[i];
		if (!l)
			return nw_seterr(err, errlen,
			                 "neither MASTER_ADDR nor SLURM_STEP_NODELIST is set: set MASTER_ADDR to the host of rank 0");
		if (nw_boot_slurm_first_host(l, e->addr, sizeof(e->addr)))
			return nw_seterr(err, errlen,
			                 "%s='%s' is not a Slurm host list: set MASTER_ADDR to the host of rank 0",
			                 lname, l);
		nw_strlcpy(e->addr_from, lname, sizeof(e->addr_from));
	}
	return pick_port(get, arg, e, 1, err, errlen) ? -1 : 1;
}

int nw_boot_env_parse(nw_boot_getenv_fn get, void *arg, struct nw_boot_env *e, char *err,
                      size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (var(get, arg, "RANK") || var(get, arg, "WORLD_SIZE"))
		return parse_torch(get, arg, e, err, errlen);
	/* A batch script has SLURM_PROCID=0 too, but no step: only an srun task is a rank. */
	if (var(get, arg, "SLURM_PROCID") &&
	    (var(get, arg, "SLURM_STEP_ID") || var(get, arg, "SLURM_STEPID") ||
	     var(get, arg, "SLURM_STEP_NUM_TASKS")))
		return parse_slurm(get, arg, e, err, errlen);
	return 0;
}

/* ---------------------------------------------------------------- wire format */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void nw_boot_hdr_pack(const struct nw_boot_hdr *h, uint8_t out[NW_BOOT_HDR_LEN])
{
	put32(out, NW_BOOT_MAGIC);
	out[4] = h->type;
	out[5] = h->proto;
	put16(out + 6, h->arg);
	put32(out + 8, h->seq);
	put32(out + 12, h->len);
}

/* The most payload a message of this type may carry. */
static uint32_t type_max(int type)
{
	switch (type) {
	case NW_BOOT_HELLO: return HELLO_MAX;
	case NW_BOOT_ABORT: return NW_BOOT_MAX_WHY;
	case NW_BOOT_ENTER: case NW_BOOT_BARRIER: return 0;
	default: return NW_BOOT_MAX_PAYLOAD;
	}
}

int nw_boot_hdr_unpack(const uint8_t in[NW_BOOT_HDR_LEN], struct nw_boot_hdr *h, char *err,
                       size_t errlen)
{
	uint32_t magic = get32(in);
	if (magic != NW_BOOT_MAGIC)
		return nw_seterr(err, errlen, "not ncclwatch bootstrap traffic (magic 0x%08x)", magic);
	h->type = in[4];
	h->proto = in[5];
	h->arg = get16(in + 6);
	h->seq = get32(in + 8);
	h->len = get32(in + 12);
	if (h->proto != NW_BOOT_PROTO)
		return nw_seterr(err, errlen,
		                 "bootstrap protocol %u where this ncclwatch speaks %u: run the same ncclwatch build on every rank",
		                 h->proto, NW_BOOT_PROTO);
	if (h->type < NW_BOOT_HELLO || h->type >= NW_BOOT_NTYPES)
		return nw_seterr(err, errlen, "unknown message type %u", h->type);
	if (h->len > type_max(h->type))
		return nw_seterr(err, errlen, "a message of type %u announcing %u bytes (at most %u)", h->type,
		                 h->len, type_max(h->type));
	return 0;
}

/* Copy a wire string into out, replacing anything unprintable. */
static void clean_copy(char *out, size_t outlen, const uint8_t *p, size_t n)
{
	size_t i;
	if (n >= outlen)
		n = outlen - 1;
	for (i = 0; i < n; i++)
		out[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	out[i] = '\0';
}

uint8_t *nw_boot_hello_pack(const struct nw_boot_hello *h, size_t *len)
{
	size_t hl = strnlen(h->host, NW_BOOT_MAX_HOST);
	size_t fl = h->fingerprint ? strlen(h->fingerprint) : 0;
	if (fl > NW_BOOT_MAX_FP)
		fl = NW_BOOT_MAX_FP;
	size_t n = 20 + 2 + hl + 4 + fl;
	uint8_t *p = nw_malloc(n);
	put32(p, (uint32_t)h->rank);
	put32(p + 4, (uint32_t)h->size);
	put32(p + 8, (uint32_t)h->local_rank);
	put32(p + 12, (uint32_t)h->local_size);
	put32(p + 16, (uint32_t)h->pid);
	put16(p + 20, (uint16_t)hl);
	memcpy(p + 22, h->host, hl);
	put32(p + 22 + hl, (uint32_t)fl);
	if (fl)
		memcpy(p + 26 + hl, h->fingerprint, fl);
	*len = n;
	return p;
}

int nw_boot_hello_unpack(const uint8_t *p, size_t len, struct nw_boot_hello *h, char *err,
                         size_t errlen)
{
	memset(h, 0, sizeof(*h));
	if (len < 26)
		return nw_seterr(err, errlen, "a hello of %zu bytes (too short)", len);
	uint32_t v[5];
	for (int i = 0; i < 5; i++)
		v[i] = get32(p + 4 * i);
	if (v[0] >= BOOT_MAX_RANKS || v[1] > BOOT_MAX_RANKS || v[2] >= BOOT_MAX_RANKS || v[3] > BOOT_MAX_RANKS)
		return nw_seterr(err, errlen, "a hello with rank %u of %u (local %u of %u) out of range", v[0],
		                 v[1], v[2], v[3]);
	size_t hl = get16(p + 20);
	if (hl > NW_BOOT_MAX_HOST || 26 + hl > len)
		return nw_seterr(err, errlen, "a hello with a host name of %zu bytes in %zu", hl, len);
	size_t fl = get32(p + 22 + hl);
	if (fl > NW_BOOT_MAX_FP || 26 + hl + fl != len)
		return nw_seterr(err, errlen, "a hello with a fingerprint of %zu bytes in %zu", fl, len);
	h->rank = (int)v[0];
	h->size = (int)v[1];
	h->local_rank = (int)v[2];
	h->local_size = (int)v[3];
	h->pid = (long)v[4];
	clean_copy(h->host, sizeof(h->host), p + 22, hl);
	h->fingerprint = nw_malloc(fl + 1);
	memcpy(h->fingerprint, p + 26 + hl, fl);
	h->fingerprint[fl] = '\0';
	if (strlen(h->fingerprint) != fl) {
		nw_boot_hello_release(h);
		return nw_seterr(err, errlen, "a hello whose fingerprint holds a NUL byte");
	}
	return 0;
}

void nw_boot_hello_release(struct nw_boot_hello *h)
{
	free(h->fingerprint);
	h->fingerprint = NULL;
}

/* ---------------------------------------------------------------- text helpers */

/* Append printf text to buf (NUL-terminated, truncating). */
static void app(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void app(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

void nw_boot_ranklist(const int *ranks, int n, char *out, size_t outlen)
{
	if (outlen)
		out[0] = '\0';
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		const char *sep = i ? "," : "";
		if (j >= i + 2)
			app(out, outlen, "%s%d-%d", sep, ranks[i], ranks[j]);
		else if (j == i + 1)
			app(out, outlen, "%s%d,%d", sep, ranks[i], ranks[j]);
		else
			app(out, outlen, "%s%d", sep, ranks[i]);
		i = j + 1;
	}
}

/* Byte offset of the start of the word holding position i. */
static size_t word_start(const char *s, size_t i)
{
	while (i > 0 && s[i - 1] != ' ')
		i--;
	return i;
}

/* Copy s[from, to) quoted short, with "..." where cut. */
static void span(const char *s, size_t from, size_t to, char *out, size_t outlen)
{
	const size_t keep = 72;
	out[0] = '\0';
	if (from > 0)
		app(out, outlen, "...");
	if (to - from > keep)
		app(out, outlen, "%.*s...", (int)keep, s + from);
	else
		app(out, outlen, "%.*s", (int)(to - from), s + from);
	if (s[to] && to - from <= keep)
		app(out, outlen, "...");
}

void nw_boot_fpdiff(const char *a, const char *b, char *da, size_t dalen, char *db, size_t dblen)
{
	size_t la = strlen(a), lb = strlen(b), pre = 0, suf = 0;
	da[0] = db[0] = '\0';
	if (!strcmp(a, b))
		return;
	while (pre < la && pre < lb && a[pre] == b[pre])
		pre++;
	while (suf < la - pre && suf < lb - pre && a[la - 1 - suf] == b[lb - 1 - suf])
		suf++;
	/* widen to whole words on both sides, with the word before for context
	 * (the option whose value differs) */
	size_t s = word_start(a, pre);
	if (s > 0) {
		size_t t = s - 1;
		while (t > 0 && a[t - 1] == ' ')
			t--;
		s = word_start(a, t);
	}
	size_t ea = la - suf, eb = lb - suf;
	while (ea < la && a[ea] != ' ' && (ea == 0 || a[ea - 1] != ' '))
		ea++;
	while (eb < lb && b[eb] != ' ' && (eb == 0 || b[eb - 1] != ' '))
		eb++;
	if (ea < s)
		ea = s;
	if (eb < s)
		eb = s;
	/* a difference that is all on one side ("-c" added) shows its neighbour too */
	if (ea == s || eb == s) {
		if (ea < la)
			while (ea < la && a[ea] == ' ')
				ea++;
		while (ea < la && a[ea] != ' ')
			ea++;
		if (eb < lb)
			while (eb < lb && b[eb] == ' ')
				eb++;
		while (eb < lb && b[eb] != ' ')
			eb++;
	}
	span(a, s, ea, da, dalen);
	span(b, s, eb, db, dblen);
	if (!da[0])
		nw_strlcpy(da, "(nothing)", dalen);
	if (!db[0])
		nw_strlcpy(db, "(nothing)", dblen);
}

/* ---------------------------------------------------------------- sockets */

/* strerror in lower case ("connection refused"), as our messages are. */
static const char *errtext(int e, char *buf, size_t len)
{
	nw_strlcpy(buf, strerror(e), len);
	if (buf[0] >= 'A' && buf[0] <= 'Z' && (buf[1] < 'A' || buf[1] > 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

enum { CS_AGAIN = 0, CS_MSG = 1, CS_EOF = -1, CS_BAD = -2, CS_BIG = -3 };

/* One connection and its partly received message. */
struct conn {
	int fd;                          /* -1 when closed */
	uint8_t hdr[NW_BOOT_HDR_LEN];
	size_t hgot;
	struct nw_boot_hdr h;
	uint8_t *buf;                    /* payload being received, owned */
	size_t bgot;
};

static void conn_reset(struct conn *c)
{
	free(c->buf);
	c->buf = NULL;
	c->hgot = c->bgot = 0;
}

/* Close a connection: take what is waiting (so close sends FIN, not RST), then close. */
static void conn_close(struct conn *c)
{
	if (c->fd >= 0) {
		char junk[4096];
		for (int i = 0; i < 64 && recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
			;
		shutdown(c->fd, SHUT_WR);
		close(c->fd);
	}
	c->fd = -1;
	conn_reset(c);
}

/*
 * Read what is available on c without blocking, stopping at the end of one
 * message. CS_MSG: c->h and c->buf hold a whole message (take buf, then
 * conn_reset). CS_AGAIN: more to come. CS_EOF, CS_BAD: err says what.
 * CS_BIG: the header announces a data (or startup answer) payload over
 * data_max (c->h is set).
 */
static int conn_step(struct conn *c, size_t data_max, char *err, size_t errlen)
{
	for (int guard = 0; guard < 1024; guard++) {
		ssize_t n;
		if (c->hgot < NW_BOOT_HDR_LEN) {
			n = recv(c->fd, c->hdr + c->hgot, NW_BOOT_HDR_LEN - c->hgot, MSG_DONTWAIT);
		} else {
			if (c->bgot == c->h.len)
				return CS_MSG;
			n = recv(c->fd, c->buf + c->bgot, c->h.len - c->bgot, MSG_DONTWAIT);
		}
		if (n == 0) {
			nw_seterr(err, errlen, "disconnected");
			return CS_EOF;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return CS_AGAIN;
			char eb[80];
			nw_seterr(err, errlen, "disconnected (%s)", errtext(errno, eb, sizeof(eb)));
			return CS_EOF;
		}
		if (c->hgot < NW_BOOT_HDR_LEN) {
			c->hgot += (size_t)n;
			if (c->hgot < NW_BOOT_HDR_LEN)
				continue;
			if (nw_boot_hdr_unpack(c->hdr, &c->h, err, errlen))
				return CS_BAD;
			int data = c->h.type == NW_BOOT_GATHER || c->h.type == NW_BOOT_BCAST ||
			           c->h.type == NW_BOOT_RESULT || c->h.type == NW_BOOT_WELCOME;
			if (data && c->h.len > data_max) {
				nw_seterr(err, errlen, "a %u-byte message where at most %zu were expected", c->h.len,
				          data_max);
				return CS_BIG;
			}
			if (c->h.len)
				c->buf = nw_malloc(c->h.len);
		} else {
			c->bgot += (size_t)n;
		}
		if (c->hgot == NW_BOOT_HDR_LEN && c->bgot == c->h.len)
			return CS_MSG;
	}
	return CS_AGAIN;
}

/* Milliseconds left until deadline for poll(), rounded up; 0 when past. */
static int ms_left(double deadline)
{
	double left = deadline - nw_now();
	if (left <= 0)
		return 0;
	if (left > 1e6)
		return 1000000000;
	return (int)(left * 1000.0) + 1;
}

/* Wait until fd has 'events' or deadline passes: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
		int ms = ms_left(deadline);
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r == 0) {
			if (ms == 0 || nw_now() >= deadline)
				return 0;
			continue;
		}
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Send one message (header and payload) on fd before deadline. MSG_NOSIGNAL:
 * a closed peer is an error here, never SIGPIPE. 0, or -1 with err.
 */
static int send_msg(int fd, int type, unsigned arg, uint32_t seq, const void *p, size_t len,
                    double deadline, char *err, size_t errlen)
{
	struct nw_boot_hdr h = { .type = (uint8_t)type, .proto = NW_BOOT_PROTO, .arg = (uint16_t)arg,
	                         .seq = seq, .len = (uint32_t)len };
	uint8_t hb[NW_BOOT_HDR_LEN];
	nw_boot_hdr_pack(&h, hb);
	size_t total = NW_BOOT_HDR_LEN + len, done = 0;
	if (fd < 0)
		return nw_seterr(err, errlen, "is not connected");
	while (done < total) {
		struct iovec iov[2];
		int niov = 0;
		if (done < NW_BOOT_HDR_LEN) {
			iov[niov].iov_base = hb + done;
			iov[niov++].iov_len = NW_BOOT_HDR_LEN - done;
			if (len) {
				iov[niov].iov_base = (void *)(uintptr_t)p;
				iov[niov++].iov_len = len;
			}
		} else {
			iov[niov].iov_base = (uint8_t *)(uintptr_t)p + (done - NW_BOOT_HDR_LEN);
			iov[niov++].iov_len = total - done;
		}
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		char eb[80];
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return nw_seterr(err, errlen, "disconnected (%s)", errtext(errno, eb, sizeof(eb)));
		int w = wait_fd(fd, POLLOUT, deadline);
		if (w == 0)
			return nw_seterr(err, errlen, "did not take the data in time");
		if (w < 0)
			return nw_seterr(err, errlen, "disconnected (%s)", errtext(errno, eb, sizeof(eb)));
	}
	return 0;
}

/* Non-blocking, and no Nagle delay for the small messages. */
static void tune_socket(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---------------------------------------------------------------- the bootstrap */

struct nw_boot {
	int rank, size, local_rank, local_size;
	double timeout;
	uint32_t seq;
	int failed;
	char why[NW_ERRLEN];
	char **hosts;         /* [size] */
	struct conn *conns;   /* rank 0: [size] (index = rank; [0] unused); other ranks: [1], the link to rank 0 */
	int nconns;
	char where[300];      /* "ADDR:PORT (MASTER_ADDR, MASTER_PORT+1)" for messages */
};

/* The name of a collective (or message) in messages to the user. */
static const char *op_name(int type)
{
	switch (type) {
	case NW_BOOT_HELLO: return "startup";
	case NW_BOOT_GATHER: return "allgather";
	case NW_BOOT_BCAST: return "broadcast";
	case NW_BOOT_BARRIER: return "barrier";
	case NW_BOOT_ABORT: return "abort";
	case NW_BOOT_WELCOME: return "startup answer";
	case NW_BOOT_ENTER: return "collective start";
	case NW_BOOT_RESULT: return "collective result";
	default: return "unknown message";
	}
}

/* "rank 3 on hostB" into buf. */
static const char *who(const struct nw_boot *b, int r, char *buf, size_t len)
{
	buf[0] = '\0';
	app(buf, len, "rank %d on %s", r, nw_boot_host(b, r));
	return buf;
}

/* "rank 2 on hostB" / "ranks 2,3 on hostB, 4-7 on hostC" (hosts NULL: "ranks 2,3"). */
static void ranks_text(char *const *hosts, const int *ranks, int n, char *out, size_t outlen)
{
	out[0] = '\0';
	app(out, outlen, "%s ", n == 1 ? "rank" : "ranks");
	for (int i = 0; i < n;) {
		int j = i;
		while (hosts && j + 1 < n && !strcmp(hosts[ranks[j + 1]], hosts[ranks[i]]))
			j++;
		char list[256];
		nw_boot_ranklist(ranks + i, (hosts ? j : n - 1) - i + 1, list, sizeof(list));
		app(out, outlen, "%s%s", i ? ", " : "", list);
		if (hosts)
			app(out, outlen, " on %s", hosts[ranks[i]]);
		i = hosts ? j + 1 : n;
	}
}

/*
 * Record a failure. Rank 0 tells every connected rank but 'except' (with
 * the same text); another rank tells rank 0 unless the news came from it.
 * Then every connection is closed and every later call fails with 'why'.
 */
static int fail(struct nw_boot *b, int notify, int except, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int fail(struct nw_boot *b, int notify, int except, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->why, sizeof(b->why), fmt, ap);
	va_end(ap);
	b->failed = 1;
	double deadline = nw_now() + (b->timeout < 2 ? b->timeout : 2);
	size_t wl = strnlen(b->why, NW_BOOT_MAX_WHY - 1);
	for (int i = 0; i < b->nconns; i++) {
		if (b->conns[i].fd < 0)
			continue;
		if (notify && i != except)
			send_msg(b->conns[i].fd, NW_BOOT_ABORT, 0, b->seq, b->why, wl, deadline, NULL, 0);
		conn_close(&b->conns[i]);
	}
	return nw_seterr(err, errlen, "%s", b->why);
}

int nw_boot_rank(const struct nw_boot *b) { return b->rank; }
int nw_boot_size(const struct nw_boot *b) { return b->size; }
int nw_boot_local_rank(const struct nw_boot *b) { return b->local_rank; }
int nw_boot_local_size(const struct nw_boot *b) { return b->local_size; }

const char *nw_boot_host(const struct nw_boot *b, int rank)
{
	if (!b || rank < 0 || rank >= b->size || !b->hosts[rank])
		return "?";
	return b->hosts[rank];
}

/* nw_boot_env_parse's view of the real environment. */
static const char *env_get(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

/* Resolve addr:port for a stream socket; NULL with err on failure. */
static struct addrinfo *resolve(const char *addr, int port, char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL;
	char ps[16];
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ps, sizeof(ps), "%d", port);
	int rc = getaddrinfo(addr, ps, &hints, &res);
	if (rc) {
		nw_seterr(err, errlen, "%s", gai_strerror(rc));
		return NULL;
	}
	return res;
}

/* "10.0.0.2:40112" or "[fd00::2]:40112" for a peer's address. */
static void addr_text(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
	char h[NI_MAXHOST], s[NI_MAXSERV];
	if (getnameinfo(sa, len, h, sizeof(h), s, sizeof(s), NI_NUMERICHOST | NI_NUMERICSERV))
		nw_strlcpy(out, "?", outlen);
	else {
		out[0] = '\0';
		app(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, s);
	}
}

/* Make room for one socket per rank when the soft limit on open files is lower. */
static void raise_nofile(int need)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)need) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)need ? rl.rlim_max : (rlim_t)need;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* A bound, listening socket on sa, or -1 with errno set. */
static int bind_listen(int family, const struct sockaddr *sa, socklen_t len, int backlog)
{
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(s, sa, len) == 0 && listen(s, backlog) == 0)
		return s;
	int e = errno;
	close(s);
	errno = e;
	return -1;
}

/*
 * Rank 0's listening socket. When MASTER_ADDR is a literal address, rank 0
 * listens on exactly that address (127.0.0.1 stays private to the host). A
 * host name may resolve differently here than on the other hosts (Debian's
 * 127.0.1.1 for the own name, a Kubernetes service address), so for a name,
 * or a literal address that is not one of this machine's, rank 0 listens on
 * every address, as torchrun's own store does; 'note' then says so for the
 * messages. The fd, or -1 with err.
 */
static int listen_on(struct nw_boot *b, const struct nw_boot_env *e, char *note, size_t notelen,
                     char *err, size_t errlen)
{
	char myhost[NW_BOOT_MAX_HOST + 1], eb[80];
	int fd = -1, last = 0, backlog = b->size < 4096 ? b->size + 16 : 4096;
	struct addrinfo hints, *res = NULL;
	char ps[16];
	nw_hostname(myhost, sizeof(myhost));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%d", e->port);
	if (getaddrinfo(e->addr, ps, &hints, &res) == 0 && res) {
		fd = bind_listen(res->ai_family, res->ai_addr, res->ai_addrlen, backlog);
		last = fd < 0 ? errno : 0;
		freeaddrinfo(res);
		if (fd < 0 && last != EADDRNOTAVAIL)
			goto failed;
		if (fd < 0)
			app(note, notelen, " (%s '%s' is not an address of %s, so rank 0 listens on every address)",
			    e->addr_from, e->addr, myhost);
	} else {
		app(note, notelen, " (rank 0 listens on every address of %s)", myhost);
	}
	if (fd < 0) {
		struct sockaddr_in6 a6;
		struct sockaddr_in a4;
		memset(&a6, 0, sizeof(a6));
		a6.sin6_family = AF_INET6;
		a6.sin6_addr = in6addr_any;
		a6.sin6_port = htons((uint16_t)e->port);
		fd = bind_listen(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), backlog);
		if (fd < 0 && errno != EADDRINUSE && errno != EACCES) {
			/* no IPv6 here: IPv4 alone */
			memset(&a4, 0, sizeof(a4));
			a4.sin_family = AF_INET;
			a4.sin_addr.s_addr = htonl(INADDR_ANY);
			a4.sin_port = htons((uint16_t)e->port);
			fd = bind_listen(AF_INET, (struct sockaddr *)&a4, sizeof(a4), backlog);
		}
		last = fd < 0 ? errno : 0;
	}
failed:
	if (fd < 0) {
		if (last == EADDRINUSE)
			return nw_seterr(err, errlen,
			                 "cannot listen on %s: port %d is in use on %s (rank 0); another job or program holds it: "
			                 "set NCCLWATCH_PORT to a free port on every rank",
			                 b->where, e->port, myhost);
		return nw_seterr(err, errlen, "cannot listen on %s on %s (rank 0): %s", b->where, myhost,
		                 errtext(last, eb, sizeof(eb)));
	}
	tune_socket(fd);
	return fd;
}

/* What rank 0 knows about each rank during startup. */
struct roster {
	long *pid;
	int *lrank, *lsize;
	char **fp;
};

/* Send every rank the table of hosts; the job starts. */
static int send_welcome(struct nw_boot *b, const struct roster *ro, char *err, size_t errlen)
{
	size_t n = 4;
	for (int r = 0; r < b->size; r++)
		n += 14 + strlen(b->hosts[r]);
	uint8_t *p = nw_malloc(n), *q = p;
	put32(q, (uint32_t)b->size);
	q += 4;
	for (int r = 0; r < b->size; r++) {
		size_t hl = strlen(b->hosts[r]);
		put32(q, (uint32_t)ro->lrank[r]);
		put32(q + 4, (uint32_t)ro->lsize[r]);
		put32(q + 8, (uint32_t)ro->pid[r]);
		put16(q + 12, (uint16_t)hl);
		memcpy(q + 14, b->hosts[r], hl);
		q += 14 + hl;
	}
	double deadline = nw_now() + b->timeout;
	char e2[256], w[320];
	int rc = 0;
	for (int r = 1; r < b->size && !rc; r++)
		if (send_msg(b->conns[r].fd, NW_BOOT_WELCOME, 0, 0, p, n, deadline, e2, sizeof(e2)))
			rc = fail(b, 1, r, err, errlen, "%s %s during startup", who(b, r, w, sizeof(w)), e2);
	free(p);
	return rc;
}

/* Build the message for ranks whose fingerprint differs from rank 0's. */
static void mismatch_text(const struct nw_boot *b, const struct roster *ro, char *out, size_t outlen)
{
	int *grp = nw_calloc((size_t)b->size, sizeof(int));
	char *done = nw_calloc((size_t)b->size, 1);
	char w[320], ranks[600], da[200], db[200];
	out[0] = '\0';
	app(out, outlen, "the ranks were started with different arguments or versions: ");
	int first = 1;
	for (int r = 1; r < b->size; r++) {
		if (done[r] || !ro->fp[r] || !strcmp(ro->fp[r], ro->fp[0]))
			continue;
		int n = 0;
		for (int s = r; s < b->size; s++)
			if (!done[s] && ro->fp[s] && !strcmp(ro->fp[s], ro->fp[r])) {
				grp[n++] = s;
				done[s] = 1;
			}
		ranks_text(b->hosts, grp, n, ranks, sizeof(ranks));
		nw_boot_fpdiff(ro->fp[r], ro->fp[0], da, sizeof(da), db, sizeof(db));
		app(out, outlen, "%s%s %s '%s' where %s has '%s'", first ? "" : "; ", ranks, n == 1 ? "has" : "have",
		    da, who(b, 0, w, sizeof(w)), db);
		first = 0;
	}
	app(out, outlen, "; start every rank with the same ncclwatch and the same arguments");
	free(grp);
	free(done);
}

/* Rank 0's startup: accept every rank's hello, check them, answer. */
static int root_start(struct nw_boot *b, const struct nw_boot_env *e, const char *fp, char *err,
                      size_t errlen)
{
	struct roster ro = { 0 };
	struct conn *pend = NULL;
	struct pollfd *pfd = NULL;
	int *map = NULL, *list = NULL;
	int lfd = -1, npend = 0, maxpend = b->size + 16, arrived = 0, mismatch = 0, junk = 0, rc = -1;
	char note[400] = "", junknote[200] = "", e2[300], w[320];
	double t0 = nw_now(), deadline = t0 + b->timeout;

	ro.pid = nw_calloc((size_t)b->size, sizeof(long));
	ro.lrank = nw_calloc((size_t)b->size, sizeof(int));
	ro.lsize = nw_calloc((size_t)b->size, sizeof(int));
	ro.fp = nw_calloc((size_t)b->size, sizeof(char *));
	pend = nw_calloc((size_t)maxpend, sizeof(*pend));
	pfd = nw_calloc((size_t)(1 + maxpend + b->size), sizeof(*pfd));
	map = nw_calloc((size_t)(1 + maxpend + b->size), sizeof(int));
	list = nw_calloc((size_t)b->size, sizeof(int));
	ro.pid[0] = (long)getpid();
	ro.lrank[0] = b->local_rank;
	ro.lsize[0] = b->local_size;
	ro.fp[0] = nw_strdup(fp);

	raise_nofile(b->size + maxpend + 64);
	lfd = listen_on(b, e, note, sizeof(note), err, errlen);
	if (lfd < 0) {
		b->failed = 1;
		nw_strlcpy(b->why, err, sizeof(b->why));
		goto out;
	}

	while (arrived < b->size - 1) {
		int np = 0;
		pfd[np] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		map[np++] = -1;
		for (int i = 0; i < npend; i++) {
			pfd[np] = (struct pollfd){ .fd = pend[i].fd, .events = POLLIN };
			map[np++] = i;
		}
		for (int r = 1; r < b->size; r++)
			if (b->conns[r].fd >= 0) {
				pfd[np] = (struct pollfd){ .fd = b->conns[r].fd, .events = POLLIN };
				map[np++] = maxpend + r;
			}
		int ms = ms_left(deadline);
		if (ms == 0)
			break;
		int pr = poll(pfd, (nfds_t)np, ms);
		if (pr < 0 && errno != EINTR) {
			fail(b, 1, -1, err, errlen, "waiting for the ranks failed: %s", errtext(errno, e2, sizeof(e2)));
			goto out;
		}
		if (pr <= 0)
			continue;
		for (int k = 0; k < np; k++) {
			if (!pfd[k].revents)
				continue;
			if (map[k] == -1) {
				/* new connections: take every one waiting */
				for (int guard = 0; guard < 256; guard++) {
					struct sockaddr_storage ss;
					socklen_t sl = sizeof(ss);
					int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
					if (fd < 0)
						break;
					if (npend >= maxpend) {
						close(fd);
						junk++;
						continue;
					}
					tune_socket(fd);
					memset(&pend[npend], 0, sizeof(pend[npend]));
					pend[npend++].fd = fd;
				}
				continue;
			}
			if (map[k] >= maxpend) {
				/* a rank already known speaks during startup: it is gone or stopping */
				int r = map[k] - maxpend;
				struct conn *c = &b->conns[r];
				int st = conn_step(c, 0, e2, sizeof(e2));
				if (st == CS_AGAIN)
					continue;
				if (st == CS_MSG && c->h.type == NW_BOOT_ABORT) {
					char why[NW_BOOT_MAX_WHY + 1];
					clean_copy(why, sizeof(why), c->buf, c->h.len);
					fail(b, 1, r, err, errlen, "%s stopped: %s", who(b, r, w, sizeof(w)), why);
				} else if (st == CS_EOF) {
					fail(b, 1, r, err, errlen, "%s (pid %ld) %s during startup", who(b, r, w, sizeof(w)),
					     ro.pid[r], e2);
				} else {
					fail(b, 1, r, err, errlen, "%s sent %s during startup",
					     who(b, r, w, sizeof(w)), st == CS_MSG ? op_name(c->h.type) : e2);
				}
				goto out;
			}
			/* a new connection's hello */
			int i = map[k];
			if (pend[i].fd < 0)
				continue;
			struct conn *c = &pend[i];
			int st = conn_step(c, 0, e2, sizeof(e2));
			if (st == CS_AGAIN)
				continue;
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			char peer[80] = "?";
			if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0)
				addr_text((struct sockaddr *)&ss, sl, peer, sizeof(peer));
			if (st == CS_BAD && c->hgot == NW_BOOT_HDR_LEN && get32(c->hdr) == NW_BOOT_MAGIC &&
			    c->hdr[5] != NW_BOOT_PROTO) {
				/* another ncclwatch build: a rank that can never join */
				fail(b, 1, -1, err, errlen, "the process at %s speaks %s", peer, e2);
				goto out;
			}
			if (st != CS_MSG || c->h.type != NW_BOOT_HELLO) {
				/* not one of ours (a port scan, a stray client): note it, drop it */
				if (st != CS_EOF) {
					junk++;
					junknote[0] = '\0';
					app(junknote, sizeof(junknote), "; a connection from %s was not an ncclwatch rank (%s)",
					         peer, st == CS_MSG ? "unexpected first message" : e2);
				}
				conn_close(c);
				pend[i] = pend[--npend];
				pend[npend].fd = -1;
				/* pfd/map still index the old slots: rescan next round */
				break;
			}
			struct nw_boot_hello h;
			if (nw_boot_hello_unpack(c->buf, c->h.len, &h, e2, sizeof(e2))) {
				fail(b, 1, -1, err, errlen, "the process at %s sent %s", peer, e2);
				goto out;
			}
			conn_reset(c);
			if (h.size != b->size) {
				fail(b, 1, -1, err, errlen,
				     "rank %d on %s (pid %ld) has a world size of %d where %s has %d: start every rank with the same "
				     "WORLD_SIZE, and check that no other job uses %s",
				     h.rank, h.host, h.pid, h.size, who(b, 0, w, sizeof(w)), b->size, b->where);
				nw_boot_hello_release(&h);
				goto out; /* the out path tells c why */
			}
			if (h.rank >= h.size) {
				fail(b, 1, -1, err, errlen, "the process at %s (pid %ld on %s) claims rank %d of %d", peer, h.pid,
				     h.host, h.rank, h.size);
				nw_boot_hello_release(&h);
				goto out; /* the out path tells c why */
			}
			if (h.rank == 0 || b->conns[h.rank].fd >= 0) {
				fail(b, 1, -1, err, errlen,
				     "rank %d is claimed twice: by pid %ld on %s and by pid %ld on %s; give every process its own "
				     "RANK, and check that no other job uses %s",
				     h.rank, ro.pid[h.rank], b->hosts[h.rank], h.pid, h.host, b->where);
				nw_boot_hello_release(&h);
				goto out; /* the out path tells c why */
			}
			b->conns[h.rank] = *c;
			pend[i] = pend[--npend];
			pend[npend].fd = -1;
			free(b->hosts[h.rank]);
			b->hosts[h.rank] = nw_strdup(h.host);
			ro.pid[h.rank] = h.pid;
			ro.lrank[h.rank] = h.local_rank;
			ro.lsize[h.rank] = h.local_size;
			ro.fp[h.rank] = h.fingerprint;
			h.fingerprint = NULL;
			arrived++;
			if (strcmp(ro.fp[h.rank], fp) && !mismatch) {
				/* a difference ends the job: give the others a moment to arrive, to name them all */
				mismatch = 1;
				double soon = nw_now() + 2.0;
				if (soon < deadline)
					deadline = soon;
			}
			break;
		}
	}

	/* who is missing, who is here */
	int nmiss = 0, nhere = 0;
	for (int r = 1; r < b->size; r++)
		if (b->conns[r].fd < 0)
			list[nmiss++] = r;
	if (mismatch) {
		char msg[NW_ERRLEN];
		mismatch_text(b, &ro, msg, sizeof(msg));
		if (nmiss) {
			char miss[300];
			ranks_text(NULL, list, nmiss, miss, sizeof(miss));
			app(msg, sizeof(msg), " (%s had not connected yet)", miss);
		}
		fail(b, 1, -1, err, errlen, "%s", msg);
		goto out;
	}
	if (nmiss) {
		char miss[300], here[300];
		ranks_text(NULL, list, nmiss, miss, sizeof(miss));
		for (int r = 0; r < b->size; r++)
			if (r == 0 || b->conns[r].fd >= 0)
				list[nhere++] = r;
		ranks_text(b->hosts, list, nhere, here, sizeof(here));
		fail(b, 1, -1, err, errlen,
		     "%s never connected to %s%s within %g s (connected: %s)%s%s; start the missing ranks with the same "
		     "MASTER_ADDR and port, or raise the timeout",
		     miss, b->where, note, b->timeout, here + (nhere == 1 ? 5 : 6), junknote,
		     junk > 1 ? " and others" : "");
		goto out;
	}

	/* hosts known: a LOCAL_WORLD_SIZE not given is the number of ranks on the same host */
	for (int r = 0; r < b->size; r++) {
		if (ro.lsize[r])
			continue;
		int n = 0;
		for (int s = 0; s < b->size; s++)
			n += !strcmp(b->hosts[s], b->hosts[r]);
		ro.lsize[r] = n;
		if (ro.lrank[r] >= n) {
			fail(b, 1, -1, err, errlen,
			     "%s has LOCAL_RANK=%d but only %d rank%s run%s on %s: set LOCAL_WORLD_SIZE, or check LOCAL_RANK",
			     who(b, r, w, sizeof(w)), ro.lrank[r], n, n == 1 ? "" : "s", n == 1 ? "s" : "", b->hosts[r]);
			goto out;
		}
	}
	b->local_size = ro.lsize[0];
	rc = send_welcome(b, &ro, err, errlen);
out:
	if (lfd >= 0)
		close(lfd);
	/* connections not yet identified may be ranks too: tell them why it ended */
	double soon = nw_now() + 0.5;
	for (int i = 0; i < npend; i++) {
		if (rc && b->failed)
			send_msg(pend[i].fd, NW_BOOT_ABORT, 0, 0, b->why, strnlen(b->why, NW_BOOT_MAX_WHY - 1), soon,
			         NULL, 0);
		conn_close(&pend[i]);
	}
	for (int r = 0; r < b->size; r++)
		free(ro.fp[r]);
	free(ro.fp);
	free(ro.pid);
	free(ro.lrank);
	free(ro.lsize);
	free(pend);
	free(pfd);
	free(map);
	free(list);
	return rc;
}

/* Connect to rank 0, retrying until deadline (rank 0 may start later). fd or -1 with err. */
static int dial(struct nw_boot *b, const struct nw_boot_env *e, double deadline, char *err, size_t errlen)
{
	char last[256] = "no attempt finished";
	int delay_ms = 50;
	for (int attempt = 0; attempt < 1000000; attempt++) {
		struct addrinfo *res = resolve(e->addr, e->port, last, sizeof(last));
		for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
			if (fd < 0) {
				errtext(errno, last, sizeof(last));
				continue;
			}
			int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
			if (r < 0 && errno == EINPROGRESS) {
				double d = nw_now() + 5.0;
				int w = wait_fd(fd, POLLOUT, d < deadline ? d : deadline);
				int soerr = 0;
				socklen_t sl = sizeof(soerr);
				if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
					r = 0;
				else
					errno = w > 0 ? soerr : ETIMEDOUT;
			}
			if (r == 0) {
				freeaddrinfo(res);
				tune_socket(fd);
				return fd;
			}
			errtext(errno, last, sizeof(last));
			close(fd);
		}
		if (res)
			freeaddrinfo(res);
		int ms = ms_left(deadline);
		if (ms == 0)
			break;
		poll(NULL, 0, ms < delay_ms ? ms : delay_ms);
		delay_ms = delay_ms * 2 > 1000 ? 1000 : delay_ms * 2;
	}
	if (last[0] >= 'A' && last[0] <= 'Z' && (last[1] < 'A' || last[1] > 'Z'))
		last[0] = (char)(last[0] - 'A' + 'a'); /* gai_strerror's text */
	return nw_seterr(err, errlen,
	                 "could not connect to rank 0 at %s within %g s (%s): check that rank 0 is running and that "
	                 "%s and the port are the same on every rank",
	                 b->where, b->timeout, last, e->addr_from);
}

/* Parse rank 0's table of hosts into b. */
static int take_welcome(struct nw_boot *b, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 4 || get32(p) != (uint32_t)b->size)
		return nw_seterr(err, errlen, "rank 0 sent a startup answer for another world size");
	size_t off = 4;
	for (int r = 0; r < b->size; r++) {
		if (off + 14 > len)
			return nw_seterr(err, errlen, "rank 0 sent a short startup answer");
		uint32_t lr = get32(p + off), ls = get32(p + off + 4);
		size_t hl = get16(p + off + 12);
		if (hl > NW_BOOT_MAX_HOST || off + 14 + hl > len || ls > BOOT_MAX_RANKS || lr >= BOOT_MAX_RANKS)
			return nw_seterr(err, errlen, "rank 0 sent a bad startup answer");
		char host[NW_BOOT_MAX_HOST + 1];
		clean_copy(host, sizeof(host), p + off + 14, hl);
		free(b->hosts[r]);
		b->hosts[r] = nw_strdup(host);
		if (r == b->rank)
			b->local_size = (int)ls;
		off += 14 + hl;
	}
	return 0;
}

/* Another rank's startup: connect, say hello, wait for the table of hosts. */
static int peer_start(struct nw_boot *b, const struct nw_boot_env *e, const char *fp, char *err,
                      size_t errlen)
{
	char e2[300];
	double deadline = nw_now() + b->timeout;
	struct conn *c = &b->conns[0];
	c->fd = dial(b, e, deadline, err, errlen);
	if (c->fd < 0) {
		b->failed = 1;
		nw_strlcpy(b->why, err, sizeof(b->why));
		return -1;
	}
	struct nw_boot_hello h = { .rank = b->rank, .size = b->size, .local_rank = b->local_rank,
	                           .local_size = b->local_size, .pid = (long)getpid(),
	                           .fingerprint = (char *)(uintptr_t)fp };
	nw_strlcpy(h.host, b->hosts[b->rank], sizeof(h.host));
	size_t n;
	uint8_t *p = nw_boot_hello_pack(&h, &n);
	int rc = send_msg(c->fd, NW_BOOT_HELLO, 0, 0, p, n, deadline, e2, sizeof(e2));
	free(p);
	if (rc)
		return fail(b, 0, -1, err, errlen, "rank 0 at %s %s during startup", b->where, e2);
	/* rank 0 was listening before we connected, so it answers within its own
	 * timeout of that moment: wait that long, and a second more */
	deadline = nw_now() + b->timeout + 1.0;
	for (;;) {
		int w = wait_fd(c->fd, POLLIN, deadline);
		if (w == 0)
			return fail(b, 1, -1, err, errlen,
			            "rank 0 at %s accepted the connection but did not answer within %g s", b->where,
			            b->timeout);
		if (w < 0)
			return fail(b, 0, -1, err, errlen, "waiting for rank 0 failed: %s", errtext(errno, e2, sizeof(e2)));
		int st = conn_step(c, 4 + (size_t)b->size * (14 + NW_BOOT_MAX_HOST), e2, sizeof(e2));
		if (st == CS_AGAIN)
			continue;
		if (st == CS_EOF)
			return fail(b, 0, -1, err, errlen, "rank 0 at %s %s during startup", b->where, e2);
		if (st != CS_MSG)
			return fail(b, 1, -1, err, errlen, "rank 0 at %s sent %s during startup", b->where, e2);
		if (c->h.type == NW_BOOT_ABORT) {
			char why[NW_BOOT_MAX_WHY + 1];
			clean_copy(why, sizeof(why), c->buf, c->h.len);
			conn_reset(c);
			return fail(b, 0, -1, err, errlen, "%s", why);
		}
		if (c->h.type != NW_BOOT_WELCOME) {
			int t = c->h.type;
			conn_reset(c);
			return fail(b, 1, -1, err, errlen, "rank 0 at %s sent a %s during startup", b->where, op_name(t));
		}
		rc = take_welcome(b, c->buf, c->h.len, e2, sizeof(e2));
		conn_reset(c);
		if (rc)
			return fail(b, 1, -1, err, errlen, "%s", e2);
		return 0;
	}
}

int nw_boot_init(struct nw_boot **out, const char *fingerprint, double timeout_s, char *err,
                 size_t errlen)
{
	struct nw_boot_env e;
	*out = NULL;
	int r = nw_boot_env_parse(env_get, NULL, &e, err, errlen);
	if (r <= 0)
		return r;
	if (!(timeout_s > 0) || timeout_s > 1e6)
		return nw_seterr(err, errlen, "bootstrap timeout %g s is out of range: give a positive number of seconds",
		                 timeout_s);
	if (!fingerprint)
		fingerprint = "";
	if (strlen(fingerprint) > NW_BOOT_MAX_FP)
		return nw_seterr(err, errlen, "the argument fingerprint is longer than %d bytes", NW_BOOT_MAX_FP);
	struct nw_boot *b = nw_calloc(1, sizeof(*b));
	b->rank = e.rank;
	b->size = e.size;
	b->local_rank = e.local_rank;
	b->local_size = e.local_size;
	b->timeout = timeout_s;
	b->hosts = nw_calloc((size_t)e.size, sizeof(char *));
	char host[NW_BOOT_MAX_HOST + 1];
	nw_hostname(host, sizeof(host));
	for (char *p = host; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
	b->hosts[e.rank] = nw_strdup(host);
	app(b->where, sizeof(b->where), "%s%s%s:%d (%s, %s)", strchr(e.addr, ':') ? "[" : "", e.addr,
	         strchr(e.addr, ':') ? "]" : "", e.port, e.addr_from, e.port_from);
	if (e.size == 1) {
		if (!b->local_size)
			b->local_size = 1;
		*out = b;
		return 1;
	}
	b->nconns = e.rank == 0 ? e.size : 1;
	b->conns = nw_calloc((size_t)b->nconns, sizeof(struct conn));
	for (int i = 0; i < b->nconns; i++)
		b->conns[i].fd = -1;
	int rc = e.rank == 0 ? root_start(b, &e, fingerprint, err, errlen)
	                     : peer_start(b, &e, fingerprint, err, errlen);
	if (rc) {
		nw_boot_close(b);
		return -1;
	}
	for (int i = 0; i < e.size; i++)
		if (!b->hosts[i])
			b->hosts[i] = nw_strdup("?");
	*out = b;
	return 1;
}

/* ---------------------------------------------------------------- collectives */

/* Take an ABORT payload as text. */
static void abort_text(const struct conn *c, char *why, size_t len)
{
	clean_copy(why, len, c->buf ? c->buf : (const uint8_t *)"", c->h.len);
}

/*
 * Rank 0: wait for the contribution of every rank marked in want[] to
 * collective (op, seq); store each payload at out + r * len. Every other
 * connection is watched too, so a rank that dies or stops anywhere is
 * reported at once. 0, or -1 after telling everyone.
 */
static int root_collect(struct nw_boot *b, int op, int root, char *want, void *out, size_t len,
                        char *err, size_t errlen)
{
	struct pollfd *pfd = nw_calloc((size_t)b->size, sizeof(*pfd));
	int *map = nw_calloc((size_t)b->size, sizeof(int));
	int left = 0, rc = -1;
	char e2[300], w[320];
	for (int r = 1; r < b->size; r++)
		left += want[r] != 0;
	double deadline = nw_now() + b->timeout;
	while (left > 0) {
		int np = 0;
		for (int r = 1; r < b->size; r++) {
			pfd[np] = (struct pollfd){ .fd = b->conns[r].fd, .events = POLLIN };
			map[np++] = r;
		}
		int ms = ms_left(deadline);
		if (ms == 0) {
			int n = 0;
			for (int r = 1; r < b->size; r++)
				if (want[r])
					map[n++] = r;
			char ranks[400];
			ranks_text(b->hosts, map, n, ranks, sizeof(ranks));
			fail(b, 1, -1, err, errlen, "%s did not reach %s #%u within %g s", ranks, op_name(op), b->seq,
			     b->timeout);
			goto out;
		}
		int pr = poll(pfd, (nfds_t)np, ms);
		if (pr < 0 && errno != EINTR) {
			fail(b, 1, -1, err, errlen, "waiting for the ranks failed: %s", errtext(errno, e2, sizeof(e2)));
			goto out;
		}
		for (int k = 0; pr > 0 && k < np; k++) {
			if (!pfd[k].revents)
				continue;
			int r = map[k];
			struct conn *c = &b->conns[r];
			int st = conn_step(c, len, e2, sizeof(e2));
			if (st == CS_AGAIN)
				continue;
			who(b, r, w, sizeof(w));
			if (st == CS_EOF) {
				fail(b, 1, r, err, errlen, "%s %s during %s #%u", w, e2, op_name(op), b->seq);
				goto out;
			}
			if (st == CS_BAD) {
				fail(b, 1, -1, err, errlen, "%s sent %s during %s #%u", w, e2, op_name(op), b->seq);
				goto out;
			}
			if (c->h.type == NW_BOOT_ABORT) {
				char why[NW_BOOT_MAX_WHY + 1];
				abort_text(c, why, sizeof(why));
				fail(b, 1, r, err, errlen, "%s stopped: %s", w, why);
				goto out;
			}
			if (!want[r] || c->h.type != op || c->h.seq != b->seq) {
				fail(b, 1, -1, err, errlen,
				     "%s called %s #%u while rank 0 called %s #%u: every rank must make the same calls in the "
				     "same order",
				     w, op_name(c->h.type), c->h.seq, op_name(op), b->seq);
				goto out;
			}
			if (op == NW_BOOT_BCAST && c->h.arg != root) {
				fail(b, 1, -1, err, errlen, "%s called broadcast #%u from rank %u while rank 0 gave rank %d",
				     w, b->seq, c->h.arg, root);
				goto out;
			}
			if (st == CS_BIG || c->h.len != len) {
				fail(b, 1, -1, err, errlen, "%s gave %u bytes to %s #%u where rank 0 gave %zu", w, c->h.len,
				     op_name(op), b->seq, len);
				goto out;
			}
			if (len)
				memcpy((uint8_t *)out + (op == NW_BOOT_BCAST ? 0 : (size_t)r * len), c->buf, len);
			conn_reset(c);
			want[r] = 0;
			left--;
		}
	}
	rc = 0;
out:
	free(pfd);
	free(map);
	return rc;
}

/* Rank 0: send a message to every rank but 'skip'. */
static int root_send_all(struct nw_boot *b, int type, int arg, const void *p, size_t len, int skip,
                         char *err, size_t errlen)
{
	char e2[300], w[320];
	double deadline = nw_now() + b->timeout;
	for (int r = 1; r < b->size; r++) {
		if (r == skip)
			continue;
		if (send_msg(b->conns[r].fd, type, (unsigned)arg, b->seq, p, len, deadline, e2, sizeof(e2)))
			return fail(b, 1, r, err, errlen, "%s %s during %s #%u", who(b, r, w, sizeof(w)), e2,
			            op_name(type == NW_BOOT_ENTER || type == NW_BOOT_RESULT ? arg : type), b->seq);
	}
	return 0;
}

/*
 * Any other rank: wait for rank 0's RESULT of (op, seq) and copy len
 * bytes of it into out. ENTER from rank 0 restarts the clock: rank 0 is in
 * the collective and answers within its own timeout.
 */
static int peer_wait(struct nw_boot *b, int op, void *out, size_t len, char *err, size_t errlen)
{
	struct conn *c = &b->conns[0];
	char e2[300], w[320];
	int entered = 0;
	double deadline = nw_now() + b->timeout;
	who(b, 0, w, sizeof(w));
	for (;;) {
		int wr = wait_fd(c->fd, POLLIN, deadline);
		if (wr == 0)
			return fail(b, 1, -1, err, errlen, "%s did not %s %s #%u within %g s", w,
			            entered ? "finish" : "reach", op_name(op), b->seq, b->timeout);
		if (wr < 0)
			return fail(b, 1, -1, err, errlen, "waiting for rank 0 failed: %s", errtext(errno, e2, sizeof(e2)));
		int st = conn_step(c, len, e2, sizeof(e2));
		if (st == CS_AGAIN)
			continue;
		if (st == CS_EOF)
			return fail(b, 0, -1, err, errlen, "%s %s during %s #%u", w, e2, op_name(op), b->seq);
		if (st == CS_BAD)
			return fail(b, 1, -1, err, errlen, "%s sent %s during %s #%u", w, e2, op_name(op), b->seq);
		if (c->h.type == NW_BOOT_ABORT) {
			char why[NW_BOOT_MAX_WHY + 1];
			abort_text(c, why, sizeof(why));
			conn_reset(c);
			return fail(b, 0, -1, err, errlen, "%s", why);
		}
		int t = c->h.type, arg = c->h.arg;
		uint32_t seq = c->h.seq, got = c->h.len;
		if ((t == NW_BOOT_ENTER || t == NW_BOOT_RESULT) && (arg != op || seq != b->seq)) {
			conn_reset(c);
			char me[320];
			return fail(b, 1, -1, err, errlen,
			            "%s called %s #%u while %s called %s #%u: every rank must make the same calls in the same order",
			            w, op_name(arg), seq, who(b, b->rank, me, sizeof(me)), op_name(op), b->seq);
		}
		if (t == NW_BOOT_ENTER) {
			conn_reset(c);
			entered = 1;
			deadline = nw_now() + b->timeout + 1.0;
			continue;
		}
		if (t != NW_BOOT_RESULT) {
			conn_reset(c);
			return fail(b, 1, -1, err, errlen, "%s sent a %s during %s #%u", w, op_name(t), op_name(op), b->seq);
		}
		if (st == CS_BIG || got != len) {
			conn_reset(c);
			return fail(b, 1, -1, err, errlen, "%s answered %s #%u with %u bytes where this rank expects %zu",
			            w, op_name(op), b->seq, got, len);
		}
		if (len)
			memcpy(out, c->buf, len);
		conn_reset(c);
		return 0;
	}
}

/* Common entry checks: a failed bootstrap stays failed. */
static int usable(const struct nw_boot *b, char *err, size_t errlen)
{
	if (!b)
		return nw_seterr(err, errlen, "no bootstrap");
	if (b->failed)
		return nw_seterr(err, errlen, "%s", b->why);
	return 0;
}

/* allgather and barrier: every rank contributes len bytes (0 for a barrier). */
static int gather(struct nw_boot *b, int op, const void *mine, void *all, size_t len, char *err,
                  size_t errlen)
{
	if (usable(b, err, errlen))
		return -1;
	if (len && len > NW_BOOT_MAX_PAYLOAD / (size_t)b->size)
		return fail(b, 1, -1, err, errlen,
		            "%s of %zu bytes from each of %d ranks is over the bootstrap's limit of %u bytes", op_name(op),
		            len, b->size, NW_BOOT_MAX_PAYLOAD);
	b->seq++;
	if (b->size == 1) {
		if (len)
			memmove(all, mine, len);
		return 0;
	}
	char e2[300];
	if (b->rank != 0) {
		if (send_msg(b->conns[0].fd, op, 0, b->seq, mine, len, nw_now() + b->timeout, e2, sizeof(e2))) {
			char w[320];
			return fail(b, 0, -1, err, errlen, "%s %s during %s #%u", who(b, 0, w, sizeof(w)), e2,
			            op_name(op), b->seq);
		}
		return peer_wait(b, op, all, len * (size_t)b->size, err, errlen);
	}
	char *want = nw_calloc((size_t)b->size, 1);
	memset(want + 1, 1, (size_t)b->size - 1);
	if (len)
		memmove(all, mine, len);
	int rc = root_send_all(b, NW_BOOT_ENTER, op, NULL, 0, -1, err, errlen);
	if (!rc)
		rc = root_collect(b, op, 0, want, all, len, err, errlen);
	if (!rc)
		rc = root_send_all(b, NW_BOOT_RESULT, op, all, len * (size_t)b->size, -1, err, errlen);
	free(want);
	return rc;
}

int nw_boot_allgather(struct nw_boot *b, const void *mine, void *all, size_t len, char *err,
                      size_t errlen)
{
	return gather(b, NW_BOOT_GATHER, mine, all, len, err, errlen);
}

int nw_boot_barrier(struct nw_boot *b, char *err, size_t errlen)
{
	return gather(b, NW_BOOT_BARRIER, NULL, NULL, 0, err, errlen);
}

int nw_boot_bcast(struct nw_boot *b, void *buf, size_t len, int root, char *err, size_t errlen)
{
	if (usable(b, err, errlen))
		return -1;
	if (root < 0 || root >= b->size)
		return fail(b, 1, -1, err, errlen, "broadcast from rank %d: there are ranks 0 to %d", root, b->size - 1);
	if (len > NW_BOOT_MAX_PAYLOAD)
		return fail(b, 1, -1, err, errlen, "broadcast of %zu bytes is over the bootstrap's limit of %u bytes",
		            len, NW_BOOT_MAX_PAYLOAD);
	b->seq++;
	if (b->size == 1)
		return 0;
	char e2[300], w[320];
	if (b->rank != 0) {
		if (b->rank != root)
			return peer_wait(b, NW_BOOT_BCAST, buf, len, err, errlen);
		if (send_msg(b->conns[0].fd, NW_BOOT_BCAST, (unsigned)root, b->seq, buf, len, nw_now() + b->timeout,
		             e2, sizeof(e2)))
			return fail(b, 0, -1, err, errlen, "%s %s during broadcast #%u", who(b, 0, w, sizeof(w)), e2,
			            b->seq);
		return 0;
	}
	if (root != 0) {
		char *want = nw_calloc((size_t)b->size, 1);
		want[root] = 1;
		int rc = root_send_all(b, NW_BOOT_ENTER, NW_BOOT_BCAST, NULL, 0, root, err, errlen);
		if (!rc)
			rc = root_collect(b, NW_BOOT_BCAST, root, want, buf, len, err, errlen);
		free(want);
		if (rc)
			return -1;
	}
	return root_send_all(b, NW_BOOT_RESULT, NW_BOOT_BCAST, buf, len, root, err, errlen);
}

void nw_boot_abort(struct nw_boot *b, const char *why)
{
	if (!b || b->failed)
		return;
	char w[320];
	if (b->rank == 0)
		fail(b, 1, -1, NULL, 0, "%s stopped: %s", who(b, 0, w, sizeof(w)), why ? why : "no reason given");
	else
		fail(b, 1, -1, NULL, 0, "%s", why ? why : "no reason given");
}

void nw_boot_close(struct nw_boot *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nconns; i++)
		conn_close(&b->conns[i]);
	for (int r = 0; r < b->size; r++)
		free(b->hosts[r]);
	free(b->hosts);
	free(b->conns);
	free(b);
}
