/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's environment-variable checks: NCCL_* names and settings, CUDA_VISIBLE_DEVICES, MASTER_ADDR. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "probe/doctor_checks.h"
#include "probe/ncclenv.h"
#include "util/strbuf.h"
#include "util/util.h"

void nw_doc_chk_env_names(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.nccl_names";
	int seen = 0, bad = 0;
	for (size_t i = 0; c->env && c->env[i]; i++) {
		const char *e = c->env[i], *eq = strchr(e, '=');
		if (strncmp(e, "NCCL_", 5) || !eq)
			continue;
		char name[128];
		size_t len = (size_t)(eq - e);
		if (len >= sizeof(name))
			len = sizeof(name) - 1;
		memcpy(name, e, len);
		name[len] = '\0';
		seen++;
		if (nw_ncclenv_known(name))
			continue;
		const char *owner = nw_ncclenv_owner(name);
		if (owner) {
			ADD(out, id, NW_SEV_INFO, "NCCL does not read it", NULL, "%s=%s is read by %s, not NCCL",
			    name, eq + 1, owner);
			continue;
		}
		bad++;
		const char *s = nw_ncclenv_suggest(name);
		char fix[160];
		if (s)
			snprintf(fix, sizeof(fix), "rename it to %s", s);
		else
			snprintf(fix, sizeof(fix), "remove it, or check the name in NCCL's environment variable list");
		ADD(out, id, NW_SEV_WARN,
		    "NCCL ignores variables it does not know, silently: the setting you meant is not in effect",
		    fix, "%s=%s is not an NCCL variable%s%s%s", name, eq + 1, s ? " (did you mean " : "",
		    s ? s : "", s ? "?)" : "");
	}
	if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d NCCL_* variable%s set, all known to NCCL 2.28", seen,
		    seen == 1 ? "" : "s");
}

/* The names of a list variable, sorted by what they match: nothing, something down, something up. */
struct list_match {
	int nfound, nmissing, ndown;
	struct nw_strbuf missing, down, found; /* comma-separated; list_match_release frees them */
};

/* Whether item (a prefix, or with exact the whole name) names an RDMA device (hca) or interface; *up when one it names is up. */
static int list_item_match(const struct nw_doc_ctx *c, const char *item, int exact, int hca, int *up)
{
	int match = 0;
	*up = 0;
	if (hca) {
		for (int i = 0; i < c->topo->nnics; i++) {
			const struct nw_topo_nic *x = &c->topo->nics[i];
			if (!strcmp(x->kind, "eth"))
				continue;
			if (exact ? !strcmp(x->name, item) : !strncmp(x->name, item, strlen(item))) {
				match = 1;
				*up |= x->up;
			}
		}
	} else {
		for (int i = 0; i < c->nifaces; i++)
			if (exact ? !strcmp(c->ifaces[i], item) : !strncmp(c->ifaces[i], item, strlen(item))) {
				match = 1;
				*up |= !strcmp(c->ifstate[i], "up") || !strcmp(c->ifstate[i], "unknown");
			}
	}
	return match;
}

/* Sort each comma-separated item of list p (":port" dropped for HCAs) into m. */
static void list_classify(const struct nw_doc_ctx *c, const char *p, int exact, int hca, struct list_match *m)
{
	memset(m, 0, sizeof(*m));
	nw_strbuf_init(&m->missing);
	nw_strbuf_init(&m->down);
	nw_strbuf_init(&m->found);
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char item[64];
		if (len >= sizeof(item))
			len = sizeof(item) - 1;
		memcpy(item, p, len);
		item[len] = '\0';
		if (hca) {
			char *colon = strchr(item, ':');
			if (colon)
				*colon = '\0';
		}
		if (item[0]) {
			int up, match = list_item_match(c, item, exact, hca, &up);
			struct nw_strbuf *dst = !match ? &m->missing : !up ? &m->down : &m->found;
			nw_strbuf_addf(dst, "%s%s", dst->len ? "," : "", item);
			if (!match)
				m->nmissing++;
			else if (!up)
				m->ndown++;
			else
				m->nfound++;
		}
		if (!e)
			break;
		p = e + 1;
	}
}

static void list_match_release(struct list_match *m)
{
	nw_strbuf_release(&m->missing);
	nw_strbuf_release(&m->down);
	nw_strbuf_release(&m->found);
}

/*
 * NCCL_SOCKET_IFNAME / NCCL_IB_HCA style lists: "^" excludes, "=" asks
 * for exact names (else prefixes), comma separated; ":port" for HCAs.
 */
static void check_list_var(const struct nw_doc_ctx *c, struct nw_findings *out, const char *id,
                           const char *var, int hca)
{
	const char *val = nw_doc_getenv(c->env, var);
	if (!val) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s is not set (NCCL chooses)", var);
		return;
	}
	const char *p = val;
	int exclude = 0, exact = 0;
	if (*p == '^')
		exclude = 1, p++;
	if (*p == '=')
		exact = 1, p++;
	if (!hca && c->nifaces < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "%s=%s: skipped, /sys/class/net could not be read", var, val);
		return;
	}
	struct list_match m;
	list_classify(c, p, exact, hca, &m);
	const char *what = hca ? "RDMA device" : "interface";
	if (exclude)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s=%s excludes %s", var, val,
		    m.missing.len || m.found.len || m.down.len ? "listed names" : "nothing");
	else if (!m.nfound)
		ADD(out, id, NW_SEV_ERROR,
		    hca ? "NCCL finds no usable HCA and falls back to sockets, or fails"
		        : "NCCL finds no interface to bootstrap on and fails at init (\"no socket interface found\")",
		    hca ? "name devices listed in /sys/class/infiniband (ibv_devices), or unset it"
		        : "name an interface listed by 'ip link' (prefix match; '=' for exact, '^' to exclude)",
		    "%s=%s: no %s matches '%s'%s%s", var, val, what, m.missing.len ? m.missing.buf : "-",
		    m.ndown ? "; down: " : "", m.down.buf);
	else if (m.nmissing || m.ndown)
		ADD(out, id, NW_SEV_WARN, "part of the list is unusable: NCCL uses fewer links than you meant",
		    "fix or drop the missing/down names", "%s=%s: missing %s; down %s; usable %s", var, val,
		    m.missing.len ? m.missing.buf : "-", m.down.len ? m.down.buf : "-", m.found.buf);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s=%s: every %s named exists and is up (%s)", var, val, what,
		    m.found.buf);
	list_match_release(&m);
}

void nw_doc_chk_socket_ifname(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	check_list_var(c, out, "env.socket_ifname", "NCCL_SOCKET_IFNAME", 0);
}

void nw_doc_chk_ib_hca(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	if (!nw_doc_getenv(c->env, "NCCL_IB_HCA")) {
		ADD(out, "env.ib_hca", NW_SEV_OK, NULL, NULL, "NCCL_IB_HCA is not set (NCCL chooses)");
		return;
	}
	check_list_var(c, out, "env.ib_hca", "NCCL_IB_HCA", 1);
}

static int truthy(const char *v)
{
	return v && *v && strcmp(v, "0");
}

void nw_doc_chk_workarounds(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.workarounds";
	int n = 0;
	const char *v;
	if (truthy(v = nw_doc_getenv(c->env, "NCCL_P2P_DISABLE")))
		n++, ADD(out, id, NW_SEV_WARN,
		         "GPU peer-to-peer (NVLink, PCIe P2P) is off: traffic goes through host memory at a "
		         "fraction of the bandwidth",
		         "unset NCCL_P2P_DISABLE unless a known bug needs it", "NCCL_P2P_DISABLE=%s", v);
	if (truthy(v = nw_doc_getenv(c->env, "NCCL_SHM_DISABLE")))
		n++, ADD(out, id, NW_SEV_WARN,
		         "shared-memory transport is off: GPUs without P2P fall back to the network (sockets) inside one host",
		         "unset NCCL_SHM_DISABLE; if /dev/shm is too small, enlarge it instead", "NCCL_SHM_DISABLE=%s", v);
	if (truthy(v = nw_doc_getenv(c->env, "NCCL_IB_DISABLE"))) {
		char names[256];
		int act = nw_doc_rdma_active(c, names, sizeof(names));
		if (act)
			n++, ADD(out, id, NW_SEV_WARN,
			         "InfiniBand/RoCE is off while RDMA ports are active: inter-node traffic uses TCP sockets",
			         "unset NCCL_IB_DISABLE", "NCCL_IB_DISABLE=%s with active RDMA ports %s", v, names);
		else
			ADD(out, id, NW_SEV_INFO, NULL, NULL, "NCCL_IB_DISABLE=%s (no active RDMA port here: no cost)", v);
	}
	if ((v = nw_doc_getenv(c->env, "NCCL_P2P_LEVEL")) && (!strcmp(v, "LOC") || !strcmp(v, "0")))
		n++, ADD(out, id, NW_SEV_WARN, "NCCL_P2P_LEVEL=LOC disables peer-to-peer between every GPU pair",
		         "unset NCCL_P2P_LEVEL (or set it to the path class P2P should cross, e.g. SYS)",
		         "NCCL_P2P_LEVEL=%s", v);
	if ((v = nw_doc_getenv(c->env, "NCCL_NET_GDR_LEVEL")) && (!strcmp(v, "LOC") || !strcmp(v, "0")))
		n++, ADD(out, id, NW_SEV_WARN, "GPUDirect RDMA is off: network traffic is staged through host memory",
		         "unset NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_LEVEL=%s", v);
	if ((v = nw_doc_getenv(c->env, "NCCL_ALGO")))
		n++, ADD(out, id, NW_SEV_WARN,
		         "a forced algorithm overrides NCCL's tuning for every size and collective; it is usually "
		         "slower somewhere",
		         "unset NCCL_ALGO unless 'ncclwatch tune' shows it wins on this machine", "NCCL_ALGO=%s", v);
	if ((v = nw_doc_getenv(c->env, "NCCL_PROTO")))
		n++, ADD(out, id, NW_SEV_WARN,
		         "a forced protocol overrides NCCL's tuning (Simple for large, LL/LL128 for small sizes)",
		         "unset NCCL_PROTO unless 'ncclwatch tune' shows it wins on this machine", "NCCL_PROTO=%s", v);
	if (!n)
		ADD(out, id, NW_SEV_OK, NULL, NULL,
		    "no bandwidth-costing workaround set (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_IB_DISABLE, "
		    "NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL, NCCL_ALGO, NCCL_PROTO)");
}

void nw_doc_chk_debug(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.debug";
	const char *v = nw_doc_getenv(c->env, "NCCL_DEBUG");
	if (v && (!strcasecmp(v, "INFO") || !strcasecmp(v, "TRACE"))) {
		const char *sub = nw_doc_getenv(c->env, "NCCL_DEBUG_SUBSYS");
		ADD(out, id, NW_SEV_WARN,
		    "verbose NCCL logging floods job logs and slows init; TRACE slows every call",
		    "use NCCL_DEBUG=WARN in production; INFO only to diagnose",
		    "NCCL_DEBUG=%s%s%s", v, sub ? " NCCL_DEBUG_SUBSYS=" : "", sub ? sub : "");
	} else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "NCCL_DEBUG=%s", v ? v : "(unset: WARN)");
}

void nw_doc_chk_cuda_visible(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.cuda_visible";
	const char *v = nw_doc_getenv(c->env, "CUDA_VISIBLE_DEVICES");
	if (!v) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "CUDA_VISIBLE_DEVICES is not set (every GPU visible)");
		return;
	}
	if (!*v) {
		ADD(out, id, nw_doc_has_gpus(c) ? NW_SEV_ERROR : NW_SEV_INFO, "an empty list hides every GPU from CUDA",
		    "unset it or list the GPUs to use", "CUDA_VISIBLE_DEVICES is set and empty");
		return;
	}
	if (!nw_doc_has_gpus(c)) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "CUDA_VISIBLE_DEVICES=%s: skipped, no GPU to match", v);
		return;
	}
	int pos[NW_NVML_MAX_GPUS];
	char err[NW_ERRLEN];
	int n = nw_topo_visible(c->topo, v, pos, NW_NVML_MAX_GPUS, err, sizeof(err));
	if (n < 0) {
		ADD(out, id, NW_SEV_ERROR,
		    "CUDA ignores an invalid entry and every entry after it: fewer GPUs than you meant",
		    "list indices or UUIDs from nvidia-smi -L", "CUDA_VISIBLE_DEVICES=%s: %s", v, err);
		return;
	}
	int sorted = 1, numa_mixed = 0;
	for (int i = 1; i < n; i++) {
		if (c->topo->gpus[pos[i]].index < c->topo->gpus[pos[i - 1]].index)
			sorted = 0;
		if (c->topo->gpus[pos[i]].numa != c->topo->gpus[pos[0]].numa)
			numa_mixed = 1;
	}
	const char *order = nw_doc_getenv(c->env, "CUDA_DEVICE_ORDER");
	if (!sorted)
		ADD(out, id, NW_SEV_INFO,
		    "CUDA device numbers follow this list, not nvidia-smi's: device 0 is the first listed GPU; "
		    "per-rank GPU choice and NUMA binding must follow it too",
		    "keep the list in bus order unless the reorder is intended", "CUDA_VISIBLE_DEVICES=%s is not in nvidia-smi order%s",
		    v, numa_mixed ? " and spans NUMA nodes" : "");
	else if (order && strcmp(order, "PCI_BUS_ID"))
		ADD(out, id, NW_SEV_INFO, "with FASTEST_FIRST, CUDA indices can differ from nvidia-smi's",
		    "set CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=%s with CUDA_DEVICE_ORDER=%s", v, order);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "CUDA_VISIBLE_DEVICES=%s: %d GPU%s, in bus order", v, n,
		    n == 1 ? "" : "s");
}

/* 1 loopback, 2 private/link-local/CGNAT, 3 public, 0 not an IP literal. */
static int addr_kind(const char *a)
{
	unsigned char b[16];
	if (!strcmp(a, "localhost") || !strncmp(a, "localhost.", 10))
		return 1;
	if (inet_pton(AF_INET, a, b) == 1) {
		if (b[0] == 127)
			return 1;
		if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
		    (b[0] == 169 && b[1] == 254) || (b[0] == 100 && (b[1] & 0xc0) == 64))
			return 2;
		return 3;
	}
	if (inet_pton(AF_INET6, a, b) == 1) {
		static const unsigned char lo[16] = { [15] = 1 };
		if (!memcmp(b, lo, 16))
			return 1;
		if ((b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80))
			return 2;
		return 3;
	}
	return 0;
}

void nw_doc_chk_master_addr(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.master_addr";
	const char *a = nw_doc_getenv(c->env, "MASTER_ADDR");
	if (!a) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "MASTER_ADDR is not set");
		return;
	}
	long world = nw_doc_env_long(c->env, "WORLD_SIZE"), local = nw_doc_env_long(c->env, "LOCAL_WORLD_SIZE");
	long nnodes = nw_doc_env_long(c->env, "SLURM_NNODES");
	if (nnodes < 0)
		nnodes = nw_doc_env_long(c->env, "SLURM_JOB_NUM_NODES");
	int multi = (world > 0 && local > 0 && world > local) || nnodes > 1;
	int unknown = !(world > 0 && local > 0) && nnodes < 0;
	int k = addr_kind(a);
	if (k == 1 && (multi || unknown))
		ADD(out, id, multi ? NW_SEV_ERROR : NW_SEV_WARN,
		    "ranks on other hosts cannot reach a loopback address: the rendezvous hangs until timeout",
		    "set MASTER_ADDR to rank 0's address on the cluster network",
		    "MASTER_ADDR=%s is loopback%s", a,
		    multi ? " in a multi-node job" : " (job size unknown: fine only if every rank is on this host)");
	else if (k == 3 && multi)
		ADD(out, id, NW_SEV_WARN,
		    "the rendezvous (and NCCL's bootstrap, which follows the same route) crosses a public network",
		    "use rank 0's address on the private cluster network",
		    "MASTER_ADDR=%s is a public address in a multi-node job", a);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "MASTER_ADDR=%s (%s)", a,
		    k == 0 ? "a host name" : k == 1 ? "loopback, single host" : k == 2 ? "private" : "public, single host");
}
