/* SPDX-License-Identifier: Apache-2.0 */
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

/*
 * Note the place "file.cc:N" (s[0..n)) of a trace in its group g: a group
 * holds one file and code, and its first line lists every place seen
 * ("group.cc:64, :418, :95 -> 1 (ncclUnhandledCudaError)"), so three
 * places are never shown as three times the first.
 */
static void trace_site(struct lg_group *g, const char *s, size_t n, long long code)
{
	const char *colon = memchr(s, ':', n);
	size_t used;
	long long line = colon ? parse_ll(colon + 1, (size_t)(s + n - colon - 1), &used) : -1;
	if (line < 0 || line > 65535)
		return;
	for (uint8_t k = 0; k < g->nsites; k++)
		if (g->sites[k] == (uint16_t)line)
			return;
	if (g->nsites == NW_ARRAY_LEN(g->sites))
		return;
	g->sites[g->nsites++] = (uint16_t)line;
	if (g->nsites == 1)
		return;
	size_t w = (size_t)snprintf(g->first, sizeof(g->first), "%.*s", (int)(colon - s + 1), s);
	for (uint8_t k = 0; k < g->nsites && w < sizeof(g->first); k++)
		w += (size_t)snprintf(g->first + w, sizeof(g->first) - w, "%s%u", k ? ", :" : "", g->sites[k]);
	if (w < sizeof(g->first))
		snprintf(g->first + w, sizeof(g->first) - w, " -> %lld (%s; %u places)", code,
		         code > 0 && code < 8 ? lg_nccl_results[code] : "unknown", g->nsites);
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
		lg_fact(lg, (enum lg_fact)(F_ERR + code), host, s, n);
	/* one group per file and code; the places ("file.cc:N") it holds are said in its first line */
	char key[160];
	int kn = snprintf(key, sizeof(key), "%.*s -> %lld (%s)", (int)(p - s), s, code,
	                  code > 0 && code < 8 ? lg_nccl_results[code] : "unknown");
	struct lg_group *g = lg_add_group(lg, G_NCCL_TRACE, host, key, kn > 0 ? (size_t)kn : 0);
	if (g)
		trace_site(g, s, (size_t)(p - s), code);
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

/* The word after "Using network " up to the end ("IB", "Socket", "AWS Libfabric"), into dst. */
static void network_name(char *dst, size_t len, const char *v, const char *e)
{
	while (e > v && (e[-1] == ' ' || e[-1] == '.'))
		e--;
	copy_str(dst, len, v, (size_t)(e - v));
}

/* "Using network Libfabric": the network NCCL uses on this host (or, host cut, for the log). */
static int info_using_network(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "Using network "))
		return 0;
	struct lg_host *h = from->host != UINT32_MAX ? &lg->hosts[from->host] : NULL;
	char *dst = h ? h->network : lg->hostless_net;
	size_t len = h ? sizeof(h->network) : sizeof(lg->hostless_net);
	if (!dst[0])
		network_name(dst, len, s + 14, s + n);
	if (h && starts(s + 14, n - 14, "Socket")) {
		h->socket_net = 1;
		copy_str(h->net_line, sizeof(h->net_line), s, n);
	} else if (h && !h->net_line[0]) {
		copy_str(h->net_line, sizeof(h->net_line), s, n);
	}
	return 1;
}

/*
 * aws-ofi-nccl's lines about itself: "NET/OFI Selected Provider is efa
 * (found 16 nics)" (libfabric's tcp provider there is noted: no EFA),
 * "NET/OFI Using aws-ofi-nccl 1.3.0aws", "NET/OFI Initializing aws-ofi-nccl 1.12.1-aws".
 */
static int info_ofi(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "NET/OFI "))
		return 0;
	struct lg_host *h = from->host != UINT32_MAX ? &lg->hosts[from->host] : NULL;
	const char *p;
	if ((p = find(s, n, "Selected Provider is "))) {
		const char *v = p + 21, *e = v;
		while (e < s + n && *e != ' ' && *e != ',')
			e++;
		char *dst = h ? h->ofi_provider : lg->hostless_provider;
		size_t len = h ? sizeof(h->ofi_provider) : sizeof(lg->hostless_provider);
		int *nics = h ? &h->ofi_nics : &lg->hostless_nics;
		if (!dst[0])
			copy_str(dst, len, v, (size_t)(e - v));
		const char *f = find(s, n, "(found ");
		size_t used;
		long long k = f ? parse_ll(f + 7, (size_t)(s + n - f - 7), &used) : -1;
		if (f && used && k >= 0 && k < 4096 && *nics < 0)
			*nics = (int)k;
		if ((size_t)(e - v) == 3 && !memcmp(v, "tcp", 3))
			lg_fact(lg, F_OFI_TCP, from->host, s, n);
	} else if (h && !h->net_plugin[0] && (p = find(s, n, "aws-ofi-nccl "))) {
		copy_str(h->net_plugin, sizeof(h->net_plugin), p, (size_t)(s + n - p));
	}
	return 1;
}

/* "NET/Plugin: Loaded net plugin Libfabric (v10)": the NET plugin's name and interface version. */
static int info_net_plugin(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	const char *p;
	if (!starts(s, n, "NET/Plugin") || !(p = find(s, n, "Loaded net plugin ")))
		return 0;
	if (from->host != UINT32_MAX && !lg->hosts[from->host].net_plugin[0])
		copy_str(lg->hosts[from->host].net_plugin, sizeof(lg->hosts[0].net_plugin), p + 18, (size_t)(s + n - p - 18));
	return 1;
}

/* "NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/IB ...", "NET/Socket : Using [0]eth0:10.0.0.1<0>", GDR disabled. */
static int info_net(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	struct lg_host *h = from->host != UINT32_MAX ? &lg->hosts[from->host] : NULL;
	if (starts(s, n, "NET/IB : No device found")) {
		if (h) {
			h->ib_absent = 1;
			if (!h->net_line[0])
				copy_str(h->net_line, sizeof(h->net_line), s, n);
		}
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
	if ((starts(s, n, "NET/IB") || starts(s, n, "NET/Socket") || starts(s, n, "GPU Direct RDMA")) &&
	    find(s, n, "GPU Direct RDMA Disabled")) {
		/* "GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)" */
		lg_classify(lg, from->host, s, n);
		return 1;
	}
	return info_ofi(lg, from, s, n) || info_net_plugin(lg, from, s, n);
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

/* The SHARP plugin's "Sharp rank 1/2 initialized on mlx5_5:1": a rank of a communicator of that size. */
static int info_sharp_rank(struct nw_log *lg, const char *s, size_t n)
{
	if (!starts(s, n, "Sharp rank "))
		return 0;
	size_t used;
	const char *slash = memchr(s, '/', n);
	long long size = slash ? parse_ll(slash + 1, (size_t)(s + n - slash - 1), &used) : -1;
	if (slash && used && size > 0)
		lg_note_rank(lg, size - 1);
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

/* The number after "key " in s ("maxBw 48.0"), as a float; -1 when absent. */
static float key_float(const char *s, size_t n, const char *key)
{
	const char *v;
	size_t vn = after_key(s, n, key, &v), used;
	if (!vn)
		return -1;
	long long whole = parse_ll(v, vn, &used);
	if (!used)
		return -1;
	float f = (float)whole;
	if (used < vn && v[used] == '.') {
		float scale = 0.1f;
		for (size_t i = used + 1; i < vn && is_digit(v[i]); i++, scale /= 10)
			f += (float)(v[i] - '0') * scale;
	}
	return f;
}

/* "=== System : maxBw 48.0 totalBw 370.8 ===" (older: maxWidth, totalWidth): the start of a host's first dump. */
static int info_topology_start(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	if (!starts(s, n, "=== System"))
		return starts(s, n, "====");
	struct lg_topo *t = from->host != UINT32_MAX ? &lg->hosts[from->host].topo : NULL;
	if (!t || t->state)
		return 1;
	t->state = 1;
	t->proc = from->proc;
	t->max_bw = key_float(s, n, "maxBw");
	if (t->max_bw < 0)
		t->max_bw = key_float(s, n, "maxWidth");
	t->total_bw = key_float(s, n, "totalBw");
	if (t->total_bw < 0)
		t->total_bw = key_float(s, n, "totalWidth");
	return 1;
}

/*
 * One link of the dump, "+ NVL[370.8] - NVS/0-0", "+ PCI[48.0] - GPU/0-68000 (8)":
 * a GPU with its rank (PCI link bandwidth kept), an NVLink to a GPU or to
 * an NVSwitch, a NIC, a network port and its bandwidth.
 */
static void topo_link(struct lg_topo *t, const char *s, size_t n)
{
	const char *lb = memchr(s, '[', n), *dash = find(s, n, "] - ");
	if (!lb || !dash || dash < lb)
		return;
	size_t used;
	long long whole = parse_ll(lb + 1, (size_t)(dash - lb - 1), &used);
	float bw = used ? (float)whole : -1;
	if (used && lb + 2 + used < dash && lb[1 + used] == '.' && is_digit(lb[2 + used]))
		bw += (float)(lb[2 + used] - '0') / 10;
	const char *node = dash + 4, *e = s + n;
	size_t nn = (size_t)(e - node);
	int nvl = lb - s >= 3 && starts(lb - 3, 3, "NVL");
	if (starts(node, nn, "GPU/")) {
		if (memchr(node, '(', nn)) {
			t->gpus++;
			if (lb - s >= 3 && starts(lb - 3, 3, "PCI") && bw > t->gpu_pci_bw)
				t->gpu_pci_bw = bw;
		} else if (nvl) {
			t->nvl_peers++;
			if (bw > t->nvl_bw)
				t->nvl_bw = bw;
		}
	} else if (starts(node, nn, "NVS/")) {
		t->nvswitch = 1;
		if (bw > t->nvl_bw)
			t->nvl_bw = bw;
	} else if (starts(node, nn, "NIC/")) {
		t->nics++;
	} else if (starts(node, nn, "NET/")) {
		t->nets++;
		if (bw > t->net_bw)
			t->net_bw = bw;
	}
}

/* A line of the topology dump ("+ NVL[...] - ...", indented links): NVLink seen, and the host's first dump read. */
static void info_topology(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	struct lg_host *h = from->host != UINT32_MAX ? &lg->hosts[from->host] : NULL;
	if (!h)
		return;
	if (!h->nvlink && (find(s, n, "NVL[") || find(s, n, "/NVL)")))
		h->nvlink = 1;
	if (h->topo.state != 1 || h->topo.proc != from->proc)
		return;
	while (n && *s == ' ')
		s++, n--;
	if (starts(s, n, "+ "))
		topo_link(&h->topo, s + 2, n - 2);
}

/* "==========": the end of a dump. */
static void info_topology_end(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n)
{
	struct lg_topo *t = from->host != UINT32_MAX ? &lg->hosts[from->host].topo : NULL;
	if (t && t->state == 1 && t->proc == from->proc && starts(s, n, "=====") && !starts(s, n, "=== System"))
		t->state = 2;
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
	case '=':
		info_topology_end(lg, from, s, n);
		return info_topology_start(lg, from, s, n);
	case 'U':
		return info_using_network(lg, from, s, n);
	case 'S':
		return info_sharp_rank(lg, s, n);
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
		lg_fact(lg, F_SMEM_EXCEED, from->host, s, n); /* "ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856" */
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
