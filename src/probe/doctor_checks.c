/*
 * The doctor's checks, one small function each, and their table. Every
 * check reads only the context (struct nw_doc_ctx) and adds at least one
 * finding, an "ok" or "skip" included, so the report shows what was looked
 * at. docs/doctor.md describes each one.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/doctor.h"
#include "probe/ncclenv.h"
#include "probe/sysfs.h"
#include "util/util.h"

#define ADD nw_doc_add

static int has_gpus(const struct nw_doc_ctx *c)
{
	return c->topo->ngpus > 0;
}

static const char *nvml_why(const struct nw_doc_ctx *c)
{
	return c->snap->why[0] ? c->snap->why : "NVML did not answer";
}

/* Whether any RDMA (InfiniBand or RoCE) port is active. */
static int rdma_active(const struct nw_doc_ctx *c, char *names, size_t len)
{
	int n = 0;
	if (len)
		names[0] = '\0';
	for (int i = 0; i < c->topo->nnics; i++) {
		const struct nw_topo_nic *x = &c->topo->nics[i];
		if (strcmp(x->kind, "eth") && x->up) {
			size_t used = strlen(names);
			snprintf(names + used, len - used, "%s%s:%d", n ? "," : "", x->name, x->port);
			n++;
		}
	}
	return n;
}

static int rdma_present(const struct nw_doc_ctx *c)
{
	for (int i = 0; i < c->topo->nnics; i++)
		if (strcmp(c->topo->nics[i].kind, "eth"))
			return 1;
	return 0;
}

/* ---------------- versions ---------------- */

static void check_driver(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.driver";
	if (!c->snap->loaded) {
		ADD(out, id, has_gpus(c) ? NW_SEV_ERROR : NW_SEV_SKIP,
		    has_gpus(c) ? "NCCL needs the NVIDIA driver; without it no GPU can be used" : NULL,
		    has_gpus(c) ? "install the NVIDIA driver on the host and expose it to the container "
		                  "(NVIDIA Container Toolkit: --gpus all)" : NULL,
		    "skipped: %s", nvml_why(c));
		return;
	}
	char cuda[16] = "unknown";
	if (c->snap->cuda_driver > 0)
		snprintf(cuda, sizeof(cuda), "%d.%d", c->snap->cuda_driver / 1000, (c->snap->cuda_driver % 1000) / 10);
	ADD(out, id, NW_SEV_OK, NULL, NULL, "driver %s, CUDA driver API %s, %d GPU%s (NVML: %s)",
	    c->snap->driver[0] ? c->snap->driver : "unknown", cuda, c->snap->ngpus,
	    c->snap->ngpus == 1 ? "" : "s", c->snap->lib);
}

/* "2.28.9" -> 22809; "13.0" -> 13000 style numbers for comparisons. */
static long ver_num(const char *v, int cuda_style)
{
	int a = 0, b = 0, c = 0;
	if (sscanf(v, "%d.%d.%d", &a, &b, &c) < 2)
		return -1;
	return cuda_style ? a * 1000L + b * 10L : a * 10000L + b * 100L + c;
}

static void check_nccl(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.nccl";
	if (c->nccl_state < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NCCL was not looked for");
		return;
	}
	if (c->nccl_state == 0) {
		ADD(out, id, has_gpus(c) ? NW_SEV_ERROR : NW_SEV_INFO,
		    "nothing can run NCCL collectives without libnccl.so.2",
		    "install NCCL (pip's nvidia-nccl-cu* or the system package) or point "
		    "--nccl-lib / NCCLWATCH_NCCL_LIB at libnccl.so.2",
		    "no NCCL found: %s", c->nccl_err);
		return;
	}
	ADD(out, id, NW_SEV_OK, NULL, NULL, "NCCL %s%s%s%s from %s (%s)",
	    c->nccl.version[0] ? c->nccl.version : "(version unknown)", c->nccl_cuda[0] ? " built for CUDA " : "",
	    c->nccl_cuda, "", c->nccl.path, c->nccl.how);
}

static void check_nccl_cuda(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.nccl_cuda";
	if (c->nccl_state != 1 || !c->nccl_cuda[0] || !c->snap->loaded || c->snap->cuda_driver <= 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s",
		    c->nccl_state != 1 ? "no NCCL located" :
		    !c->nccl_cuda[0] ? "the NCCL library does not say which CUDA it was built for" :
		    nvml_why(c));
		return;
	}
	long need = ver_num(c->nccl_cuda, 1), have = c->snap->cuda_driver;
	if (need > have)
		ADD(out, id, NW_SEV_ERROR,
		    "a library built for a newer CUDA than the driver supports fails at init "
		    "(\"CUDA driver version is insufficient\")",
		    "update the NVIDIA driver, or use an NCCL built for the driver's CUDA (or older)",
		    "NCCL %s at %s was built for CUDA %s; the driver supports CUDA %ld.%ld",
		    c->nccl.version, c->nccl.path, c->nccl_cuda, have / 1000, (have % 1000) / 10);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "NCCL built for CUDA %s; the driver supports CUDA %ld.%ld",
		    c->nccl_cuda, have / 1000, (have % 1000) / 10);
}

static void check_nccl_many(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "version.nccl_many";
	if (c->all_state < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NCCL was not looked for");
		return;
	}
	char list[600] = "";
	size_t used = 0;
	int differ = 0;
	for (size_t i = 0; i < c->nall; i++) {
		const struct nw_nccl_where *w = &c->all[i];
		int n = snprintf(list + used, sizeof(list) - used, "%s%s %s (%s)", i ? "; " : "", w->path,
		                 w->version[0] ? w->version : "?", w->how);
		if (n > 0 && (size_t)n < sizeof(list) - used)
			used += (size_t)n;
		if (c->nccl_state == 1 && w->version[0] && c->nccl.version[0] &&
		    strcmp(w->version, c->nccl.version))
			differ++;
	}
	/* A PyTorch NCCL with another version than the one that loads: what we measure is not what trains. */
	int pytorch_other = 0;
	for (size_t i = 0; i < c->nall; i++)
		if (!strcmp(c->all[i].how, "pytorch") && c->nccl_state == 1 && strcmp(c->nccl.how, "pytorch") &&
		    c->all[i].version[0] && strcmp(c->all[i].version, c->nccl.version))
			pytorch_other = 1;
	if (c->nall == 0)
		ADD(out, id, NW_SEV_INFO, NULL, NULL, "no libnccl found on this machine");
	else if (differ && pytorch_other)
		ADD(out, id, NW_SEV_WARN,
		    "PyTorch loads its own NCCL, and it is not the one measured here: results and tuning "
		    "apply to a different library than the training job uses",
		    "measure PyTorch's NCCL (--nccl-lib PATH, or NCCLWATCH_NCCL_LIB), or make the job load the "
		    "same library",
		    "NCCL %s loads (%s, %s) but PyTorch's is another version: %s", c->nccl.version, c->nccl.how,
		    c->nccl.path, list);
	else if (differ)
		ADD(out, id, NW_SEV_INFO,
		    "two NCCLs on one machine: a tool built against the other one (nccl-tests, the system's) "
		    "measures a different library than the one that loads here",
		    "compare like with like: give such tools the same libnccl (LD_LIBRARY_PATH), or remove the stale copy",
		    "%zu libnccl files, versions differ from the one that loads (%s): %s", c->nall,
		    c->nccl_state == 1 ? c->nccl.version : "?", list);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%zu libnccl file%s, one version: %s", c->nall,
		    c->nall == 1 ? "" : "s", list);
}

/* ---------------- environment ---------------- */

static void check_env_names(const struct nw_doc_ctx *c, struct nw_findings *out)
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
	char missing[256], down[256], found[256]; /* comma-separated */
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
			char *dst = !match ? m->missing : !up ? m->down : m->found;
			size_t used = strlen(dst);
			snprintf(dst + used, 256 - used, "%s%s", used ? "," : "", item);
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
	struct list_match m;
	list_classify(c, p, exact, hca, &m);
	if (!hca && c->nifaces < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "%s=%s: skipped, /sys/class/net could not be read", var, val);
		return;
	}
	const char *what = hca ? "RDMA device" : "interface";
	if (exclude) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s=%s excludes %s", var, val, m.missing[0] || m.found[0] || m.down[0] ? "listed names" : "nothing");
		return;
	}
	if (!m.nfound)
		ADD(out, id, NW_SEV_ERROR,
		    hca ? "NCCL finds no usable HCA and falls back to sockets, or fails"
		        : "NCCL finds no interface to bootstrap on and fails at init (\"no socket interface found\")",
		    hca ? "name devices listed in /sys/class/infiniband (ibv_devices), or unset it"
		        : "name an interface listed by 'ip link' (prefix match; '=' for exact, '^' to exclude)",
		    "%s=%s: no %s matches '%s'%s%s", var, val, what, m.missing[0] ? m.missing : "-",
		    m.ndown ? "; down: " : "", m.down);
	else if (m.nmissing || m.ndown)
		ADD(out, id, NW_SEV_WARN, "part of the list is unusable: NCCL uses fewer links than you meant",
		    "fix or drop the missing/down names", "%s=%s: missing %s; down %s; usable %s", var, val,
		    m.missing[0] ? m.missing : "-", m.down[0] ? m.down : "-", m.found);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s=%s: every %s named exists and is up (%s)", var, val, what, m.found);
}

static void check_socket_ifname(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	check_list_var(c, out, "env.socket_ifname", "NCCL_SOCKET_IFNAME", 0);
}

static void check_ib_hca(const struct nw_doc_ctx *c, struct nw_findings *out)
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

static void check_workarounds(const struct nw_doc_ctx *c, struct nw_findings *out)
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
		int act = rdma_active(c, names, sizeof(names));
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

static void check_debug(const struct nw_doc_ctx *c, struct nw_findings *out)
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

static void check_cuda_visible(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.cuda_visible";
	const char *v = nw_doc_getenv(c->env, "CUDA_VISIBLE_DEVICES");
	if (!v) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "CUDA_VISIBLE_DEVICES is not set (every GPU visible)");
		return;
	}
	if (!*v) {
		ADD(out, id, has_gpus(c) ? NW_SEV_ERROR : NW_SEV_INFO, "an empty list hides every GPU from CUDA",
		    "unset it or list the GPUs to use", "CUDA_VISIBLE_DEVICES is set and empty");
		return;
	}
	if (!has_gpus(c)) {
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

static long env_long(char *const *env, const char *name)
{
	const char *v = nw_doc_getenv(env, name);
	char *end;
	if (!v || !*v)
		return -1;
	long x = strtol(v, &end, 10);
	return *end || x < 0 ? -1 : x;
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

static void check_master_addr(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "env.master_addr";
	const char *a = nw_doc_getenv(c->env, "MASTER_ADDR");
	if (!a) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "MASTER_ADDR is not set");
		return;
	}
	long world = env_long(c->env, "WORLD_SIZE"), local = env_long(c->env, "LOCAL_WORLD_SIZE");
	long nnodes = env_long(c->env, "SLURM_NNODES");
	if (nnodes < 0)
		nnodes = env_long(c->env, "SLURM_JOB_NUM_NODES");
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

/* ---------------- container and OS ---------------- */

static void check_shm(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.shm";
	if (c->shm_bytes < 0) {
		ADD(out, id, NW_SEV_WARN, "NCCL's shared-memory transport needs /dev/shm",
		    "mount a tmpfs on /dev/shm (docker: --ipc=host or --shm-size=8g)",
		    "/dev/shm: not mounted or size unknown (/proc/mounts)");
		return;
	}
	double mb = (double)c->shm_bytes / (1024.0 * 1024.0);
	if (c->shm_bytes < 256LL << 20)
		ADD(out, id, NW_SEV_ERROR,
		    "NCCL puts its intra-node buffers in /dev/shm; Docker's 64 MB default fails with "
		    "\"unhandled system error\" or bus errors as soon as several GPUs talk",
		    "docker run --ipc=host or --shm-size=8g; Kubernetes: an emptyDir with medium: Memory on /dev/shm",
		    "/dev/shm is %.0f MB", mb);
	else if (c->shm_bytes < 1LL << 30)
		ADD(out, id, NW_SEV_WARN, "large jobs with many peers can exhaust a small /dev/shm",
		    "give /dev/shm at least 1 GB (--shm-size=8g or --ipc=host)", "/dev/shm is %.0f MB", mb);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "/dev/shm is %.1f GB", mb / 1024.0);
}

static void check_memlock(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.memlock";
	int rdma = rdma_present(c);
	if (c->memlock == -1) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: locked-memory limit unknown (/proc/self/limits)");
		return;
	}
	if (c->memlock == -2) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "locked-memory limit: unlimited");
		return;
	}
	double mb = (double)c->memlock / (1024.0 * 1024.0);
	if (rdma)
		ADD(out, id, NW_SEV_ERROR,
		    "RDMA registers (pins) NCCL's buffers; a low limit makes ibv_reg_mr fail and NCCL falls back or aborts",
		    "ulimit -l unlimited (docker: --ulimit memlock=-1; Slurm: PropagateResourceLimits; "
		    "systemd: LimitMEMLOCK=infinity)",
		    "locked-memory limit %.1f MB with RDMA NICs present", mb);
	else
		ADD(out, id, NW_SEV_INFO, "matters only for RDMA (InfiniBand/RoCE), which this host does not have",
		    NULL, "locked-memory limit %.1f MB (no RDMA NIC)", mb);
}

/* The last RemoveIPC= in file order (later files override earlier ones). */
static void check_removeipc(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.removeipc";
	if (!c->logind_present || !c->logind) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL,
		    "skipped: no systemd-logind configuration (/etc/systemd/logind.conf), as in most containers");
		return;
	}
	char value[16] = "", where[256] = "", file[256] = "";
	for (const char *line = c->logind; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		if (!strncmp(line, "# file ", 7) && len - 7 < sizeof(file)) {
			memcpy(file, line + 7, len - 7);
			file[len - 7] = '\0';
		} else {
			const char *p = line;
			while (p < line + len && isspace((unsigned char)*p))
				p++;
			if (!strncmp(p, "RemoveIPC", 9)) {
				p += 9;
				while (*p == ' ' || *p == '\t')
					p++;
				if (*p == '=') {
					p++;
					while (*p == ' ' || *p == '\t')
						p++;
					size_t k = strcspn(p, " \t\n#");
					if (k < sizeof(value)) {
						memcpy(value, p, k);
						value[k] = '\0';
						nw_strlcpy(where, file, sizeof(where));
					}
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	if (!c->systemd_running) {
		ADD(out, id, NW_SEV_INFO, "logind is not running here (a container?): the host's setting is what counts",
		    NULL, "RemoveIPC=%s in %s, but /run/systemd/system is absent", value[0] ? value : "(default yes)",
		    where[0] ? where : "logind.conf");
		return;
	}
	int yes = !value[0] || !strcasecmp(value, "yes") || !strcmp(value, "1") || !strcasecmp(value, "true") ||
	          !strcasecmp(value, "on");
	if (yes && c->uid >= 0 && c->uid < 1000)
		ADD(out, id, NW_SEV_INFO, "RemoveIPC spares system users; jobs run as a regular user are exposed",
		    "set RemoveIPC=no if jobs run as regular users", "RemoveIPC=%s in %s; this process runs as uid %ld",
		    value[0] ? value : "yes (default)", where[0] ? where : "logind.conf", c->uid);
	else if (yes)
		ADD(out, id, NW_SEV_WARN,
		    "logind removes a user's shared memory and semaphores when their last session ends: "
		    "a job started from a login that closes loses NCCL's /dev/shm segments mid-run",
		    "set RemoveIPC=no in /etc/systemd/logind.conf (or a .d drop-in) and restart systemd-logind",
		    value[0] ? "RemoveIPC=%s in %s" : "RemoveIPC not set (systemd's default is yes)%s", value[0] ? value : "",
		    where);
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "RemoveIPC=%s in %s", value, where);
}

static void check_acs(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.pcie_acs";
	if (c->nacs == 0) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no PCIe bridge above the GPUs and NICs (%s)",
		    c->topo->ngpus || c->topo->nnics ? "devices sit on the root bus" : "no GPU or NIC found");
		return;
	}
	int on = 0, unread = 0, checked = 0;
	char unread_list[256] = "";
	for (int i = 0; i < c->nacs; i++) {
		const struct nw_doc_acs *a = &c->acs[i];
		if (!a->readable) {
			size_t used = strlen(unread_list);
			snprintf(unread_list + used, sizeof(unread_list) - used, "%s%s", used ? "," : "", a->bdf);
			unread++;
			continue;
		}
		checked++;
		/* P2P Request Redirect (bit 2) and Completion Redirect (bit 3) send peer traffic to the root. */
		if (a->has_acs && (a->ctrl & 0x000c)) {
			on++;
			ADD(out, id, NW_SEV_ERROR,
			    "ACS redirects peer-to-peer traffic up to the root complex: GPU-GPU and GPU-NIC P2P "
			    "(GPUDirect RDMA) slow down or hang",
			    "disable ACS on the bridge (setpci -s BDF ECAP_ACS+0x6.w=0000 at boot, or the BIOS option); "
			    "with an IOMMU, use iommu=pt",
			    "bridge %s above %s: ACS control 0x%04x (P2P redirect on)", a->bdf, a->below, a->ctrl);
		}
	}
	if (unread)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL,
		    "could not read the ACS control of %d bridge%s (%s): extended config space needs root",
		    unread, unread == 1 ? "" : "s", unread_list);
	if (checked && !on)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "ACS peer redirect off on %d bridge%s above GPUs/NICs", checked,
		    checked == 1 ? "" : "s");
}

static int cmdline_has(const char *cmdline, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = cmdline; (p = strstr(p, word)); p += n)
		if ((p == cmdline || isspace((unsigned char)p[-1])) &&
		    (p[n] == '\0' || isspace((unsigned char)p[n]) || p[n] == ','))
			return 1;
	return 0;
}

static void check_iommu(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.iommu";
	if (!c->cmdline) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: /proc/cmdline could not be read");
		return;
	}
	int pt = cmdline_has(c->cmdline, "iommu=pt") || cmdline_has(c->cmdline, "iommu.passthrough=1");
	int on = cmdline_has(c->cmdline, "intel_iommu=on") || cmdline_has(c->cmdline, "amd_iommu=on") ||
	         cmdline_has(c->cmdline, "amd_iommu=force_isolation");
	int units = c->iommu_units;
	if ((on || units > 0) && !pt)
		ADD(out, id, NW_SEV_WARN,
		    "an IOMMU that translates DMA adds latency to every GPU and NIC transfer, and with ACS "
		    "breaks peer-to-peer",
		    "add iommu=pt to the kernel command line (keeps the IOMMU for VMs, passthrough for the host)",
		    "IOMMU %s (%d unit%s in /sys/class/iommu) and no iommu=pt on /proc/cmdline",
		    on ? "enabled on the command line" : "active", units > 0 ? units : 0, units == 1 ? "" : "s");
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s", pt ? "IOMMU in passthrough (iommu=pt)"
		                                              : "no IOMMU translating DMA (/proc/cmdline, /sys/class/iommu)");
}

static void check_vm(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "os.vm";
	static const char *vms[] = { "QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Amazon EC2",
	                             "Google Compute Engine", "Virtual Machine", "OpenStack", "Firecracker" };
	const char *hit = NULL;
	for (size_t i = 0; i < NW_ARRAY_LEN(vms) && c->dmi[0]; i++)
		if (strstr(c->dmi, vms[i]))
			hit = vms[i];
	if (c->hypervisor != 1 && !hit) {
		ADD(out, id, c->hypervisor < 0 && !c->dmi[0] ? NW_SEV_SKIP : NW_SEV_OK, NULL, NULL, "%s",
		    c->hypervisor < 0 && !c->dmi[0] ? "skipped: neither /proc/cpuinfo nor DMI could be read"
		                                    : "bare metal (no hypervisor flag in /proc/cpuinfo)");
		return;
	}
	int flat = has_gpus(c) > 0;
	/* A VM that puts every GPU straight on its root bus hides the host's PCIe switches. */
	int nvl_all = 1;
	for (int i = 0; i < c->topo->ngpus; i++)
		for (int k = i + 1; k < c->topo->ngpus; k++)
			if (c->topo->pairs[i][k].path != NW_PATH_NVL)
				nvl_all = 0;
	if (c->topo->ngpus > 1 && !nvl_all)
		ADD(out, id, NW_SEV_WARN,
		    "the VM's virtual PCIe tree hides the real one: NCCL may pick rings and NICs that cross "
		    "the host's CPU sockets, and P2P may be off",
		    "give NCCL the host's topology with NCCL_TOPO_FILE (the cloud vendor publishes one), or "
		    "use a VM shape that exposes the PCIe switches",
		    "virtual machine (%s%s%s) with GPUs not all joined by NVLink", c->hypervisor == 1 ? "hypervisor flag" : "",
		    c->hypervisor == 1 && hit ? ", " : "", hit ? c->dmi : "");
	else
		ADD(out, id, NW_SEV_INFO,
		    flat ? "PCIe path classes come from the VM's virtual tree; NVLink paths are real" : NULL, NULL,
		    "virtual machine (%s%s%s)", c->hypervisor == 1 ? "hypervisor flag in /proc/cpuinfo" : "",
		    c->hypervisor == 1 && hit ? "; DMI " : "", hit ? c->dmi : "");
}

/* ---------------- hardware ---------------- */

static void check_nvlink(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.nvlink";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nvml_why(c));
		return;
	}
	int total = 0, up = 0, bad = 0;
	static const char *names[] = { "replay", "recovery", "CRC flit", "CRC data" };
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		int gup = 0;
		char downs[160] = "";
		for (int k = 0; k < x->nlinks; k++) {
			const struct nw_nvml_link *l = &x->links[k];
			total++;
			if (l->active == 1)
				up++, gup++;
			else {
				size_t used = strlen(downs);
				snprintf(downs + used, sizeof(downs) - used, "%s%d", used ? "," : "", l->link);
			}
			for (int e = 0; e < NW_NVL_NERR; e++) {
				if (l->err_later[e] >= 0 && l->err[e] >= 0 && l->err_later[e] > l->err[e]) {
					bad++;
					ADD(out, id, NW_SEV_ERROR,
					    "errors growing while you watch: the link retrains or replays, bandwidth drops and may fail",
					    "reseat/replace the NVLink bridge or board; call the vendor if it persists after a reset",
					    "GPU%d link %d: %s errors grew %lld -> %lld", x->index, l->link, names[e], l->err[e],
					    l->err_later[e]);
				} else if (l->err[e] > 0 && (e == NW_NVL_ERR_RECOVERY || e == NW_NVL_ERR_CRC_DATA ||
				                             l->err[e] >= 1000)) {
					bad++;
					ADD(out, id, NW_SEV_WARN, "a link that has had to recover or corrupts data may be failing",
					    "watch it (ncclwatch doctor --interval 10s); reset counters with nvidia-smi nvlink -r",
					    "GPU%d link %d: %lld %s errors since the counters were cleared", x->index, l->link,
					    l->err[e], names[e]);
				}
			}
		}
		if (x->nlinks && gup < x->nlinks) {
			bad++;
			ADD(out, id, NW_SEV_ERROR,
			    "a link that is down cuts this GPU's NVLink bandwidth by its share; NCCL may route around it "
			    "through PCIe",
			    "check nvidia-smi nvlink -s; reset the GPU (nvidia-smi -r) or service the board",
			    "GPU%d: %d of %d NVLinks up; down: %s", x->index, gup, x->nlinks, downs);
		}
	}
	if (!total)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no NVLink on %d GPU%s", c->snap->ngpus, c->snap->ngpus == 1 ? "" : "s");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d/%d NVLinks up on %d GPUs, no link errors", up, total,
		    c->snap->ngpus);
}

static double speed_gts(const char *s)
{
	return strtod(s, NULL);
}

static void check_pcie(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.pcie_link";
	int bad = 0, looked = 0;
	for (int i = 0; i < c->topo->ngpus; i++) {
		const struct nw_topo_gpu *g = &c->topo->gpus[i];
		if (g->width_cur <= 0 || g->width_max <= 0)
			continue;
		looked++;
		if (g->width_cur < g->width_max) {
			bad++;
			ADD(out, id, NW_SEV_WARN,
			    "a GPU trained at fewer lanes has that much less PCIe bandwidth (host copies, NIC traffic "
			    "without NVLink)",
			    "reseat the GPU or riser; check the slot's wiring and BIOS bifurcation settings",
			    "GPU%d (%s): PCIe x%d of x%d", g->index, g->bus_id, g->width_cur, g->width_max);
		}
		if (g->gen_cur > 0 && g->gen_max > 0 && g->gen_cur < g->gen_max)
			ADD(out, id, NW_SEV_INFO, "idle GPUs lower their PCIe speed to save power; it rises under load",
			    NULL, "GPU%d (%s): PCIe Gen%d now, Gen%d max (normal when idle)", g->index, g->bus_id,
			    g->gen_cur, g->gen_max);
	}
	for (int i = 0; i < c->nlinks; i++) {
		const struct nw_doc_link *l = &c->links[i];
		looked++;
		int slow = speed_gts(l->speed_cur) > 0 && speed_gts(l->speed_cur) < speed_gts(l->speed_max);
		int narrow = l->width_cur > 0 && l->width_max > 0 && l->width_cur < l->width_max;
		if (slow || narrow) {
			bad++;
			ADD(out, id, NW_SEV_WARN,
			    "a NIC or bridge trained below its maximum caps the bandwidth of everything behind it",
			    "reseat the card or cable; check BIOS PCIe speed settings",
			    "%s: PCIe %s x%d, max %s x%d", l->what, l->speed_cur, l->width_cur, l->speed_max,
			    l->width_max);
		}
	}
	if (!looked)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: no PCIe link widths readable for GPUs, NICs or bridges");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d PCIe link%s at full width%s", looked, looked == 1 ? "" : "s",
		    c->nlinks ? " and speed" : "");
}

static void check_p2p(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.p2p";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nvml_why(c));
		return;
	}
	if (c->topo->ngpus < 2) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d GPU: no pair to check", c->topo->ngpus);
		return;
	}
	int bad = 0, known = 0;
	char lab[16];
	for (int i = 0; i < c->topo->ngpus; i++)
		for (int k = i + 1; k < c->topo->ngpus; k++) {
			const struct nw_topo_pair *p = &c->topo->pairs[i][k];
			if (p->p2p < 0)
				continue;
			known++;
			if (p->p2p == 0 && (p->path == NW_PATH_NVL || p->path == NW_PATH_PIX || p->path == NW_PATH_PXB)) {
				bad++;
				ADD(out, id, p->path == NW_PATH_NVL ? NW_SEV_ERROR : NW_SEV_WARN,
				    "GPUs that should talk directly go through host memory instead, at a fraction of the bandwidth",
				    "check ACS and IOMMU (os.pcie_acs, os.iommu), the driver's P2P registry keys, and that "
				    "fabric manager runs on NVSwitch systems",
				    "GPU%d-GPU%d (%s): peer-to-peer not supported (%s)", c->topo->gpus[i].index,
				    c->topo->gpus[k].index, nw_path_label(p->path, p->nvlinks, lab, sizeof(lab)), p->p2p_why);
			}
		}
	if (!known)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NVML gave no peer-to-peer status");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "peer-to-peer supported on every GPU pair that should have it (%d pair%s)",
		    known, known == 1 ? "" : "s");
}

static void check_persistence(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.persistence";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nvml_why(c));
		return;
	}
	char off[128] = "";
	int n = 0, known = 0;
	for (int g = 0; g < c->snap->ngpus; g++) {
		if (c->snap->gpus[g].persistence < 0)
			continue;
		known++;
		if (c->snap->gpus[g].persistence == 0) {
			size_t used = strlen(off);
			snprintf(off + used, sizeof(off) - used, "%sGPU%d", n++ ? "," : "", c->snap->gpus[g].index);
		}
	}
	if (n)
		ADD(out, id, NW_SEV_WARN,
		    "without persistence the driver tears GPUs down between processes: every start pays seconds of "
		    "initialisation, and clocks/ECC state reset",
		    "nvidia-smi -pm 1, or run nvidia-persistenced", "persistence mode off on %s", off);
	else if (known)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "persistence mode on for %d GPU%s", known, known == 1 ? "" : "s");
	else
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NVML does not report persistence mode");
}

static void check_ecc(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.ecc";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nvml_why(c));
		return;
	}
	int bad = 0, known = 0;
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		if (x->remap_pending >= 0 || x->retired_pending >= 0 || x->ecc_uncorrected >= 0)
			known++;
		if (x->remap_pending == 1 || x->retired_pending == 1) {
			bad++;
			ADD(out, id, NW_SEV_ERROR,
			    "memory rows/pages wait to be retired: until the GPU is reset, bad memory stays in use",
			    "drain the node and reset the GPU (nvidia-smi -r -i N), then re-check",
			    "GPU%d: %s pending", x->index, x->remap_pending == 1 ? "row remapping" : "page retirement");
		}
		if (x->remap_failure == 1) {
			bad++;
			ADD(out, id, NW_SEV_ERROR, "the GPU ran out of spare rows: memory errors can no longer be repaired",
			    "replace the GPU", "GPU%d: row remapping failure", x->index);
		}
		if (x->ecc_uncorrected > 0) {
			bad++;
			ADD(out, id, NW_SEV_WARN, "uncorrectable memory errors since the driver loaded: results may be wrong",
			    "reset the GPU; replace it if they come back",
			    "GPU%d: %lld uncorrected ECC errors (volatile)", x->index, x->ecc_uncorrected);
		}
	}
	if (!bad)
		ADD(out, id, known ? NW_SEV_OK : NW_SEV_SKIP, NULL, NULL, "%s",
		    known ? "no pending row remapping or page retirement, no uncorrected ECC errors"
		          : "skipped: NVML reports no ECC state");
}

static void check_peermem(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.gpudirect_rdma";
	if (!rdma_present(c) || !has_gpus(c)) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "not needed: %s", !has_gpus(c) ? "no GPU" : "no InfiniBand/RoCE NIC");
		return;
	}
	int loaded = c->peermem_sysmodule == 1;
	if (c->modules && (strstr(c->modules, "nvidia_peermem ") || strstr(c->modules, "nv_peer_mem ")))
		loaded = 1;
	if (!c->modules && c->peermem_sysmodule < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: neither /proc/modules nor /sys/module could be read");
		return;
	}
	if (!loaded)
		ADD(out, id, NW_SEV_WARN,
		    "without GPUDirect RDMA the NIC cannot read GPU memory: network traffic is staged through host "
		    "memory (unless NCCL uses DMA-BUF, which needs the open kernel modules and Linux 5.12+)",
		    "modprobe nvidia_peermem on the host (or load it from the GPU operator)",
		    "RDMA NICs present, nvidia_peermem not in /proc/modules or /sys/module");
	else
		ADD(out, id, NW_SEV_OK, NULL, NULL, "nvidia_peermem loaded, RDMA NICs present");
}

static void check_fabric(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "hw.fabric_manager";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nvml_why(c));
		return;
	}
	int nvswitch = 0, bad = 0;
	for (int g = 0; g < c->topo->ngpus; g++)
		nvswitch |= c->topo->gpus[g].nvlinks_to_switch > 0;
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		if (x->fabric_state > NW_FABRIC_NOT_SUPPORTED)
			nvswitch = 1;
		if (x->fabric_state == NW_FABRIC_NOT_STARTED || x->fabric_state == NW_FABRIC_IN_PROGRESS ||
		    (x->fabric_state == NW_FABRIC_COMPLETED && x->fabric_status > 0)) {
			bad++;
			ADD(out, id, NW_SEV_ERROR,
			    "on NVSwitch systems GPUs cannot use NVLink until fabric manager has registered them: CUDA "
			    "init fails or NCCL falls back to PCIe",
			    "start nvidia-fabricmanager on the host (systemctl start nvidia-fabricmanager) with the "
			    "driver's exact version",
			    "GPU%d: fabric registration %s%s", x->index,
			    x->fabric_state == NW_FABRIC_NOT_STARTED ? "not started" :
			    x->fabric_state == NW_FABRIC_IN_PROGRESS ? "in progress" : "completed with an error",
			    x->fabric_state == NW_FABRIC_COMPLETED ? "" : " (fabric manager not running?)");
		}
	}
	if (!nvswitch)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no NVSwitch: fabric manager not needed");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "NVSwitch fabric registered for every GPU");
}

/* ---------------- CPU binding ---------------- */

static void check_affinity(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "cpu.affinity";
	if (!c->have_affinity) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: this process's CPU affinity is unknown (/proc/self/status)");
		return;
	}
	char mine[256];
	nw_cpulist_format(c->affinity, NW_DOC_CPU_BITS, mine, sizeof(mine));
	int nmine = 0;
	for (int i = 0; i < NW_DOC_CPU_BITS / 64; i++)
		nmine += __builtin_popcountll(c->affinity[i]);
	/* The GPU this process would drive: LOCAL_RANK's (or SLURM_LOCALID's) visible GPU, else all. */
	int pos[NW_NVML_MAX_GPUS];
	int nvis = nw_topo_visible(c->topo, nw_doc_getenv(c->env, "CUDA_VISIBLE_DEVICES"), pos,
	                           NW_NVML_MAX_GPUS, NULL, 0);
	long lr = env_long(c->env, "LOCAL_RANK");
	if (lr < 0)
		lr = env_long(c->env, "SLURM_LOCALID");
	if (lr < 0)
		lr = env_long(c->env, "OMPI_COMM_WORLD_LOCAL_RANK");
	if (nvis <= 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: no visible GPU to compare this process's CPUs (%s) with", mine);
		return;
	}
	int first = 0, last = nvis;
	if (lr >= 0 && lr < nvis)
		first = (int)lr, last = (int)lr + 1;
	int bad = 0, compared = 0;
	for (int k = first; k < last; k++) {
		const struct nw_topo_gpu *g = &c->topo->gpus[pos[k]];
		unsigned long long gb[NW_DOC_CPU_BITS / 64];
		if (!g->cpus[0] || nw_cpulist_parse(g->cpus, gb, NW_DOC_CPU_BITS) <= 0)
			continue;
		compared++;
		int inside = 0;
		for (int i = 0; i < NW_DOC_CPU_BITS / 64; i++)
			inside += __builtin_popcountll(c->affinity[i] & gb[i]);
		if (inside == 0) {
			bad++;
			ADD(out, id, NW_SEV_WARN,
			    "a process bound away from its GPU's NUMA node sends every host-side copy and NCCL proxy "
			    "thread across the CPU interconnect",
			    "bind each rank to its GPU's local CPUs (numactl --cpunodebind, srun --cpu-bind, "
			    "torchrun with a launcher that binds)",
			    "this process runs on CPUs %s; GPU%d's local CPUs are %s (NUMA %d)", mine, g->index, g->cpus,
			    g->numa);
		} else if (inside < nmine && lr >= 0)
			ADD(out, id, NW_SEV_INFO, "part of this process's CPUs are remote to its GPU", NULL,
			    "this process runs on CPUs %s; %d of them are local to GPU%d (%s)", mine, inside, g->index, g->cpus);
	}
	if (!compared)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: the GPUs' local CPUs are unknown (sysfs local_cpulist)");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "this process runs on CPUs %s%s, which include %s local CPUs", mine,
		    c->ncpus_online > 0 && nmine == c->ncpus_online ? " (not bound)" : "",
		    lr >= 0 ? "its GPU's" : "the visible GPUs'");
}

static const struct nw_doc_check checks[] = {
	{ "version.driver", "NVIDIA driver and CUDA driver API version", check_driver },
	{ "version.nccl", "the NCCL that will be loaded", check_nccl },
	{ "version.nccl_cuda", "NCCL built for a CUDA newer than the driver supports", check_nccl_cuda },
	{ "version.nccl_many", "other libnccl copies with other versions (PyTorch's vs the system's)", check_nccl_many },
	{ "env.nccl_names", "NCCL_* variables NCCL does not know (typos)", check_env_names },
	{ "env.socket_ifname", "NCCL_SOCKET_IFNAME names interfaces that exist and are up", check_socket_ifname },
	{ "env.ib_hca", "NCCL_IB_HCA names RDMA devices that exist and are up", check_ib_hca },
	{ "env.workarounds", "workarounds that cost bandwidth (P2P/SHM/IB disabled, P2P_LEVEL, ALGO, PROTO)", check_workarounds },
	{ "env.debug", "NCCL_DEBUG=INFO or TRACE", check_debug },
	{ "env.cuda_visible", "CUDA_VISIBLE_DEVICES valid and ordered", check_cuda_visible },
	{ "env.master_addr", "MASTER_ADDR loopback or public in a multi-node job", check_master_addr },
	{ "os.shm", "/dev/shm large enough for NCCL", check_shm },
	{ "os.memlock", "locked-memory limit for RDMA", check_memlock },
	{ "os.removeipc", "systemd-logind RemoveIPC", check_removeipc },
	{ "os.pcie_acs", "PCIe ACS on bridges above GPUs and NICs", check_acs },
	{ "os.iommu", "IOMMU not in passthrough", check_iommu },
	{ "os.vm", "virtual machine hiding the PCIe topology", check_vm },
	{ "hw.nvlink", "NVLink links down or with errors", check_nvlink },
	{ "hw.pcie_link", "PCIe links trained below maximum width or speed", check_pcie },
	{ "hw.p2p", "GPU peer-to-peer where the topology allows it", check_p2p },
	{ "hw.persistence", "persistence mode", check_persistence },
	{ "hw.ecc", "ECC: pending retirement/remapping, uncorrected errors", check_ecc },
	{ "hw.gpudirect_rdma", "nvidia_peermem with InfiniBand/RoCE NICs", check_peermem },
	{ "hw.fabric_manager", "fabric manager on NVSwitch systems", check_fabric },
	{ "cpu.affinity", "this process's CPUs versus its GPU's local CPUs", check_affinity },
};

const struct nw_doc_check *nw_doc_checks(size_t *n)
{
	*n = NW_ARRAY_LEN(checks);
	return checks;
}
