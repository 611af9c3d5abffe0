/* NCCL INFO lines: versions, networks, graphs, algorithms, the environment and error traces; communicators are ncclog_comm.c's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

/* "Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000, type NVL/PIX, sameChannels 1" */
static void info_pattern(struct nw_log *lg, const char *s, size_t n)
{
	size_t used;
	long long pat = parse_ll(s + 8, n - 8, &used);
	if (!used)
		return;
	long long nch = key_ll(s, n, "nChannels", -1);
	const char *v = NULL;
	char type[24] = "", bw[40] = "";
	size_t vn = after_key(s, n, "type", &v);
	copy_str(type, sizeof(type), v, vn);
	vn = after_key(s, n, "bw", &v);
	copy_str(bw, sizeof(bw), v, vn);
	for (size_t i = 0; i < lg->ngraphs; i++) {
		struct lg_graph *g = &lg->graphs[i];
		if (g->pattern == pat && g->nchannels == nch && !strcmp(g->type, type) && !strcmp(g->bw, bw)) {
			g->count++;
			return;
		}
	}
	if (lg->ngraphs == LG_MAX_GRAPHS) {
		lg->dropped++;
		return;
	}
	struct lg_graph *g = &lg->graphs[lg->ngraphs++];
	g->pattern = (int)pat;
	g->nchannels = (int)nch;
	nw_strlcpy(g->type, type, sizeof(g->type));
	nw_strlcpy(g->bw, bw, sizeof(g->bw));
	g->count = 1;
}

static const char *const algo_names[] = { "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT" };
static const char *const proto_names[] = { "LL", "LL128", "SIMPLE" };

/* "AllReduce: 67108864 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}" (older: numbers). */
static int info_algo(struct nw_log *lg, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n < 24 ? n : 24);
	if (!colon || colon + 2 >= s + n || colon[1] != ' ')
		return 0;
	const char *p = colon + 2;
	size_t used;
	long long bytes = parse_ll(p, (size_t)(s + n - p), &used);
	if (!used || bytes < 0)
		return 0;
	p += used;
	if (!starts(p, (size_t)(s + n - p), " Bytes -> Algo "))
		return 0;
	p += 15;
	const char *a = p;
	while (p < s + n && *p != ' ')
		p++;
	size_t an = (size_t)(p - a);
	if (!starts(p, (size_t)(s + n - p), " proto "))
		return 0;
	p += 7;
	const char *pr = p;
	while (p < s + n && *p != ' ')
		p++;
	size_t pn = (size_t)(p - pr);
	char op[24], algo[20], proto[16];
	copy_str(op, sizeof(op), s, (size_t)(colon - s));
	copy_str(algo, sizeof(algo), a, an);
	copy_str(proto, sizeof(proto), pr, pn);
	long long x;
	if (an && (x = parse_ll(a, an, &used), used == an) && x >= 0 && x < (long long)NW_ARRAY_LEN(algo_names))
		nw_strlcpy(algo, algo_names[x], sizeof(algo));
	if (pn && (x = parse_ll(pr, pn, &used), used == pn) && x >= 0 && x < (long long)NW_ARRAY_LEN(proto_names))
		nw_strlcpy(proto, proto_names[x], sizeof(proto));
	struct lg_algo *g = NULL;
	for (size_t i = 0; i < lg->nalgos; i++)
		if (!strcmp(lg->algos[i].op, op) && !strcmp(lg->algos[i].algo, algo) && !strcmp(lg->algos[i].proto, proto)) {
			g = &lg->algos[i];
			break;
		}
	if (!g) {
		if (lg->nalgos == LG_MAX_ALGOS) {
			lg->dropped++;
			return 1;
		}
		g = &lg->algos[lg->nalgos++];
		nw_strlcpy(g->op, op, sizeof(g->op));
		nw_strlcpy(g->algo, algo, sizeof(g->algo));
		nw_strlcpy(g->proto, proto, sizeof(g->proto));
		g->min_bytes = UINT64_MAX;
	}
	g->calls++;
	if ((uint64_t)bytes < g->min_bytes)
		g->min_bytes = (uint64_t)bytes;
	if ((uint64_t)bytes > g->max_bytes)
		g->max_bytes = (uint64_t)bytes;
	return 1;
}

/* "NCCL_NVLS_ENABLE set by environment to 0." */
static void info_env(struct nw_log *lg, const char *s, size_t n, const char *at)
{
	const char *name = s;
	while (name < at && *name == ' ')
		name++;
	size_t nn = (size_t)(at - name);
	if (nn < 6 || !starts(name, nn, "NCCL_") || memchr(name, ' ', nn))
		return;
	const char *v = at + 23, *e = s + n; /* strlen(" set by environment to ") */
	if (v > e)
		return;
	while (e > v && (e[-1] == '.' || e[-1] == ' ' || e[-1] == '\r'))
		e--;
	char nbuf[48], vbuf[96];
	copy_str(nbuf, sizeof(nbuf), name, nn);
	copy_str(vbuf, sizeof(vbuf), v, (size_t)(e - v));
	for (size_t i = 0; i < lg->nenvs; i++)
		if (!strcmp(lg->envs[i].name, nbuf) && !strcmp(lg->envs[i].value, vbuf)) {
			lg->envs[i].lines++;
			return;
		}
	if (lg->nenvs == LG_MAX_ENV) {
		lg->dropped++;
		return;
	}
	struct lg_env *en = &lg->envs[lg->nenvs++];
	nw_strlcpy(en->name, nbuf, sizeof(en->name));
	nw_strlcpy(en->value, vbuf, sizeof(en->value));
	en->lines = 1;
}

size_t lg_file_line(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 80 && s[i] != ':' && s[i] != ' ')
		i++;
	if (i >= n || s[i] != ':' || i < 3 || !memchr(s, '.', i))
		return 0;
	size_t used;
	parse_ll(s + i + 1, n - i - 1, &used);
	return used ? i + 1 + used : 0;
}

/* "init.cc:1234 -> 2": NCCL's trace of an error code on its way up. */
static int info_trace(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	size_t fl = lg_file_line(s, n);
	if (!fl)
		return 0;
	size_t used;
	const char *p = s + fl;
	if (!starts(p, (size_t)(s + n - p), " -> "))
		return 0;
	long long code = parse_ll(p + 4, (size_t)(s + n - p - 4), &used);
	if (!used)
		return 0;
	/* init probes of optional libraries (IB verbs, GDR) fail on machines without them; NCCL goes on */
	int probe = find(s, (size_t)(p - s), "ibvwrap.") || find(s, (size_t)(p - s), "gdr.cc") ||
	            find(s, (size_t)(p - s), "gdrwrap.");
	if (code > 0 && code < 8 && !probe)
		lg->err_codes[code]++;
	/* group by file and code, keeping line numbers: they name the place */
	char key[160];
	int kn = snprintf(key, sizeof(key), "%.*s -> %lld (%s)", (int)(p - s), s, code,
	                  code > 0 && code < 8 ? lg_nccl_results[code] : "unknown");
	lg_add_group(lg, G_NCCL_TRACE, host, key, kn > 0 ? (size_t)kn : 0);
	return 1;
}

/* "NCCL version 2.21.5+cuda12.4": the version this process loaded. */
static int info_version(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "NCCL version "))
		return 0;
	const char *v = s + 13, *e = v;
	while (e < s + n && *e != ' ')
		e++;
	if (from->proc != UINT32_MAX)
		copy_str(lg->procs[from->proc].version, sizeof(lg->procs[from->proc].version), v, (size_t)(e - v));
	else
		lg_banner_line(lg, s, (size_t)(e - s)); /* its host was cut in pasting: a version all the same */
	return 1;
}

/* "cudaDriverVersion 12040" */
static int info_cuda_driver(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "cudaDriverVersion "))
		return 0;
	size_t used;
	long long v = parse_ll(s + 18, n - 18, &used);
	if (used && from->proc != UINT32_MAX)
		lg->procs[from->proc].cuda_driver = (long)v;
	return 1;
}

/* "NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/IB ...", "NET/Socket : Using [0]eth0:10.0.0.1<0>", GDR disabled. */
static int info_net(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	struct lg_host *h = from->host != UINT32_MAX ? &lg->hosts[from->host] : NULL;
	if (starts(s, n, "NET/IB : No device found")) {
		if (h)
			h->ib_absent = 1;
		return 1;
	}
	if (starts(s, n, "NET/IB : Using [") && n > 16 && is_digit(s[16])) {
		if (h && !h->ib_devs[0])
			copy_str(h->ib_devs, sizeof(h->ib_devs), s + 15, n - 15);
		return 1;
	}
	if (starts(s, n, "NET/Socket : Using [")) {
		if (h && !h->socket_ifs[0])
			copy_str(h->socket_ifs, sizeof(h->socket_ifs), s + 19, n - 19);
		return 1;
	}
	if ((starts(s, n, "NET/IB") || starts(s, n, "GPU Direct RDMA")) && find(s, n, "GPU Direct RDMA Disabled")) {
		/* "GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)" */
		if (!lg->gdr_off_lines++)
			copy_str(lg->gdr_detail, sizeof(lg->gdr_detail), s, n);
		return 1;
	}
	return 0;
}

/* "NVLS multicast support is available on dev 0" */
static int info_nvls_available(struct nw_log *lg, const char *s, size_t n)
{
	if (!starts(s, n, "NVLS multicast support is available"))
		return 0;
	lg->nvls_available = 1;
	return 1;
}

/* "24 nvls channels, ..." (s starts with a digit) */
static int info_nvls_channels(struct nw_log *lg, const char *s, size_t n)
{
	const char *at = find(s, n, " nvls channels");
	if (!at)
		return 0;
	const char *c = at;
	while (c > s && (is_digit(c[-1])))
		c--;
	size_t used;
	long long v = parse_ll(c, (size_t)(at - c), &used);
	if (used && v > lg->nvls_channels_max && v < 4096)
		lg->nvls_channels_max = (int)v;
	return 1;
}

/* "Connected all CollNet ..." */
static int info_collnet(struct nw_log *lg, const char *s, size_t n)
{
	if (!starts(s, n, "Connected") || !find(s, n, "CollNet"))
		return 0;
	lg->collnet_connected++;
	return 1;
}

/* "Pattern 4, crossNic 0, ..." lines, whose type shows NVLink on the host. */
static int info_pattern_line(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "Pattern "))
		return 0;
	info_pattern(lg, s, n);
	if (from->host != UINT32_MAX && find(s, n, "NVL"))
		lg->hosts[from->host].nvlink = 1;
	return 1;
}

/* The topology dump ("GPU/0 ...", "+ NVL[...]", indented links): only whether it shows NVLink. */
static void info_topology(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	struct lg_host *h = from->host != UINT32_MAX ? &lg->hosts[from->host] : NULL;
	if (h && !h->nvlink && (find(s, n, "NVL[") || find(s, n, "/NVL)")))
		h->nvlink = 1;
}

/*
 * The lines known by how they start, dispatched on the first letter to keep
 * the hot path short; 1 when the line was one of them. A new kind of INFO
 * line is a reader above and a call in its letter's case.
 */
static int info_known_start(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	switch (s[0]) {
	case 'N':
		return info_version(lg, from, s, n) || info_net(lg, from, s, n) || info_nvls_available(lg, s, n);
	case 'c':
		return info_cuda_driver(lg, from, s, n) || lg_info_comm(lg, from, s, n);
	case 'n':
		return lg_info_comm(lg, from, s, n);
	case 'C':
		return lg_info_channel(lg, from, s, n) || lg_info_collnet_channel(lg, from, s, n) || info_collnet(lg, s, n);
	case 'R':
		return lg_info_ring(lg, from, s, n);
	case 'T':
		return lg_info_tree(lg, from, s, n);
	case 'P':
		return info_pattern_line(lg, from, s, n);
	case 'G':
		/* "GPU Direct RDMA Disabled for GPU g / HCA h (distance d > l)", else a topology line */
		if (!info_net(lg, from, s, n))
			info_topology(lg, from, s, n);
		return 1;
	case '+':
	case ' ':
		info_topology(lg, from, s, n);
		return 1;
	default:
		return is_digit(s[0]) && info_nvls_channels(lg, s, n);
	}
}

void lg_info_line(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	const char *at;
	if (starts(s, n, "NCCLWATCH ")) {
		lg_nw_line(lg, s, n); /* the ncclwatch plugin's periodic line, through NCCL's logger */
		return;
	}
	if (!n || info_known_start(lg, from, s, n))
		return;
	if (find(s, n, "exceeds device/fn maxSharedMem")) {
		lg->smem_exceed_lines++; /* "ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856" */
		return;
	}
	if (starts(s, n, "NCCL_") && (at = find(s, n, " set by environment to "))) {
		info_env(lg, s, n, at);
		return;
	}
	if (s[0] >= 'A' && s[0] <= 'Z' && info_algo(lg, s, n))
		return;
	if (s[0] >= 'a' && s[0] <= 'z')
		info_trace(lg, from->host, s, n);
}
