/* NCCL INFO lines: versions, networks, graphs, algorithms, the environment and error traces; communicators are ncclog_comm.c's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

static void info_pattern(struct nw_log *lg, const char *s, size_t n)
{
	size_t used;
	long long pat = parse_ll(s + 8, n - 8, &used);
	if (!used)
		return;
	long long nch = key_ll(s, n, "nChannels", -1);
	const char *v;
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

/* "init.cc:1234 -> 2": NCCL's trace of an error code on its way up. */
static int info_trace(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 80 && s[i] != ':' && s[i] != ' ')
		i++;
	if (i >= n || s[i] != ':' || i < 3 || !memchr(s, '.', i))
		return 0;
	size_t used;
	parse_ll(s + i + 1, n - i - 1, &used);
	if (!used)
		return 0;
	const char *p = s + i + 1 + used;
	if (!starts(p, (size_t)(s + n - p), " -> "))
		return 0;
	long long code = parse_ll(p + 4, (size_t)(s + n - p - 4), &used);
	if (!used)
		return 0;
	if (code > 0 && code < 8)
		lg->err_codes[code]++;
	/* group by file and code, keeping line numbers: they name the place */
	char key[160];
	int kn = snprintf(key, sizeof(key), "%.*s -> %lld (%s)", (int)(p - s), s, code,
	                  code > 0 && code < 8 ? lg_nccl_results[code] : "unknown");
	lg_add_group(lg, G_NCCL_TRACE, host, key, kn > 0 ? (size_t)kn : 0);
	return 1;
}

/* One "NCCL INFO" message (s: after the level), dispatched on its first letter to keep the hot path short. */
void lg_info_line(struct nw_log *lg, uint32_t host, uint32_t proc, int dev, const char *s, size_t n)
{
	const char *at;
	if (!n)
		return;
	switch (s[0]) {
	case 'N':
		if (starts(s, n, "NCCL version ")) {
			const char *v = s + 13, *e = v;
			while (e < s + n && *e != ' ')
				e++;
			if (proc != UINT32_MAX)
				copy_str(lg->procs[proc].version, sizeof(lg->procs[proc].version), v, (size_t)(e - v));
			return;
		}
		if (starts(s, n, "NET/IB : No device found")) {
			if (host != UINT32_MAX)
				lg->hosts[host].ib_absent = 1;
			return;
		}
		if (starts(s, n, "NET/IB : Using [") && n > 16 && is_digit(s[16])) {
			if (host != UINT32_MAX && !lg->hosts[host].ib_devs[0])
				copy_str(lg->hosts[host].ib_devs, sizeof(lg->hosts[host].ib_devs), s + 15, n - 15);
			return;
		}
		if (starts(s, n, "NET/Socket : Using [")) {
			if (host != UINT32_MAX && !lg->hosts[host].socket_ifs[0])
				copy_str(lg->hosts[host].socket_ifs, sizeof(lg->hosts[host].socket_ifs), s + 19, n - 19);
			return;
		}
		if (starts(s, n, "NVLS multicast support is available")) {
			lg->nvls_available = 1;
			return;
		}
		if (starts(s, n, "NET/IB") && find(s, n, "GPU Direct RDMA Disabled")) {
			lg->gdr_off_lines++;
			return;
		}
		break;
	case 'c':
		if (starts(s, n, "cudaDriverVersion ")) {
			size_t used;
			long long v = parse_ll(s + 18, n - 18, &used);
			if (used && proc != UINT32_MAX)
				lg->procs[proc].cuda_driver = (long)v;
			return;
		}
		if (starts(s, n, "comm 0x")) {
			lg_info_comm(lg, proc, dev, s, n);
			return;
		}
		break;
	case 'n':
		if (starts(s, n, "ncclComm")) {
			lg_info_comm(lg, proc, dev, s, n);
			return;
		}
		break;
	case 'C':
		if (starts(s, n, "Channel ")) {
			if ((at = find(s, n, " via ")))
				lg_info_connection(lg, proc, dev, s, n, at);
			else
				lg_info_ring_order(lg, proc, dev, s, n);
			return;
		}
		if (starts(s, n, "Connected") && find(s, n, "CollNet")) {
			lg->collnet_connected++;
			return;
		}
		break;
	case 'R':
		if (starts(s, n, "Ring ")) {
			if ((at = find(s, n, " via "))) {
				lg_info_connection(lg, proc, dev, s, n, at);
			} else if (find(s, n, "->")) {
				struct lg_comm *c = lg_comm_of_dev(lg, proc, dev, NULL);
				if (c)
					c->ring_lines++;
			} else {
				lg_info_ring_order(lg, proc, dev, s, n);
			}
			return;
		}
		break;
	case 'T':
		if (starts(s, n, "Tree ") || starts(s, n, "Trees ")) {
			struct lg_comm *c = lg_comm_of_dev(lg, proc, dev, NULL);
			if (c) {
				c->tree_lines++;
				if (!c->tree[0] && starts(s, n, "Trees ")) {
					/* "Trees [0] -1/-1/-1->1->0 [1] ...": keep channel 0's */
					const char *e = s + 6;
					while (e < s + n && *e != ' ')
						e++;
					if (e < s + n)
						e++;
					while (e < s + n && *e != ' ')
						e++;
					copy_str(c->tree, sizeof(c->tree), s + 6, (size_t)(e - (s + 6)));
				}
			}
			return;
		}
		break;
	case 'P':
		if (starts(s, n, "Pattern ")) {
			info_pattern(lg, s, n);
			if (host != UINT32_MAX && find(s, n, "NVL"))
				lg->hosts[host].nvlink = 1;
			return;
		}
		break;
	case 'G':
	case '+':
	case ' ':
		if (host != UINT32_MAX && !lg->hosts[host].nvlink && (find(s, n, "NVL[") || find(s, n, "/NVL)")))
			lg->hosts[host].nvlink = 1;
		return;
	default:
		if (is_digit(s[0]) && (at = find(s, n, " nvls channels"))) {
			const char *c = at;
			while (c > s && (is_digit(c[-1])))
				c--;
			size_t used;
			long long v = parse_ll(c, (size_t)(at - c), &used);
			if (used && v > lg->nvls_channels_max && v < 4096)
				lg->nvls_channels_max = (int)v;
			return;
		}
		break;
	}
	if (starts(s, n, "NCCL_") && (at = find(s, n, " set by environment to "))) {
		info_env(lg, s, n, at);
		return;
	}
	if (s[0] >= 'A' && s[0] <= 'Z' && info_algo(lg, s, n))
		return;
	if (s[0] >= 'a' && s[0] <= 'z')
		info_trace(lg, host, s, n);
}
