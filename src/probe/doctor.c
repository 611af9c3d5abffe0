/* SPDX-License-Identifier: Apache-2.0 */
/* doctor: findings, the check runner, and gathering facts under a root (see doctor.h). */
#include "probe/doctor.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "probe/doctor_checks.h"
#include "probe/sysfs.h"
#include "util/util.h"

extern char **environ;

const char *nw_sev_name(enum nw_sev s)
{
	static const char *n[] = { "ok", "skip", "info", "warn", "error" };
	return s <= NW_SEV_ERROR ? n[s] : "?";
}

void nw_doc_add(struct nw_findings *out, const char *id, enum nw_sev sev, const char *why,
                const char *fix, const char *seen_fmt, ...)
{
	if (out->n == out->cap) {
		out->cap = out->cap ? out->cap * 2 : 32;
		out->v = nw_realloc(out->v, out->cap * sizeof(*out->v));
	}
	struct nw_finding *f = &out->v[out->n++];
	memset(f, 0, sizeof(*f));
	nw_strlcpy(f->id, id, sizeof(f->id));
	f->sev = sev;
	va_list ap;
	va_start(ap, seen_fmt);
	vsnprintf(f->seen, sizeof(f->seen), seen_fmt, ap);
	va_end(ap);
	if (why)
		nw_strlcpy(f->why, why, sizeof(f->why));
	if (fix)
		nw_strlcpy(f->fix, fix, sizeof(f->fix));
}

void nw_findings_release(struct nw_findings *f)
{
	free(f->v);
	memset(f, 0, sizeof(*f));
}

enum nw_sev nw_findings_worst(const struct nw_findings *f)
{
	enum nw_sev w = NW_SEV_OK;
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].sev > w)
			w = f->v[i].sev;
	return w;
}

int nw_findings_exit(const struct nw_findings *f)
{
	enum nw_sev w = nw_findings_worst(f);
	return w == NW_SEV_ERROR ? 2 : w == NW_SEV_WARN ? 1 : 0;
}

json_t *nw_findings_to_json(const struct nw_findings *f)
{
	json_t *a = json_array();
	for (size_t i = 0; i < f->n; i++) {
		const struct nw_finding *x = &f->v[i];
		json_t *o = json_object();
		json_object_set_new(o, "id", json_string(x->id));
		json_object_set_new(o, "severity", json_string(nw_sev_name(x->sev)));
		json_object_set_new(o, "seen", json_string(x->seen));
		if (x->why[0])
			json_object_set_new(o, "why", json_string(x->why));
		if (x->fix[0])
			json_object_set_new(o, "fix", json_string(x->fix));
		json_array_append_new(a, o);
	}
	return a;
}

int nw_doc_selects(const char *name, const char *id)
{
	size_t len = strlen(name);
	return !strcmp(name, id) || (len && !strncmp(name, id, len) && id[len] == '.');
}

/* Whether check id runs: every check when nonly is 0, else those a name of only[] selects. */
static int selected(const char *id, const char *const *only, size_t nonly)
{
	int want = nonly == 0;
	for (size_t k = 0; k < nonly && !want; k++)
		want = nw_doc_selects(only[k], id);
	return want;
}

size_t nw_doc_nselected(const char *const *only, size_t nonly)
{
	size_t n, nsel = 0;
	const struct nw_doc_check *t = nw_doc_checks(&n);
	for (size_t i = 0; i < n; i++)
		nsel += (size_t)selected(t[i].id, only, nonly);
	return nsel;
}

const char *nw_doc_unmatched(const char *const *only, size_t nonly)
{
	for (size_t k = 0; k < nonly; k++)
		if (nw_doc_nselected(&only[k], 1) == 0)
			return only[k];
	return NULL;
}

void nw_doc_run(const struct nw_doc_ctx *c, const char *const *only, size_t nonly,
                struct nw_findings *out)
{
	size_t n;
	const struct nw_doc_check *t = nw_doc_checks(&n);
	for (size_t i = 0; i < n; i++)
		if (selected(t[i].id, only, nonly))
			t[i].fn(c, out);
}

const char *nw_doc_getenv(char *const *env, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, len) && env[i][len] == '=')
			return env[i] + len + 1;
	return NULL;
}

int nw_doc_nccl_cuda(const char *path, char *out, size_t len)
{
	static const char tag[] = "NCCL version ";
	int rc = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (off_t)4 << 30) {
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	const char *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	const char *p = m, *end = m + size;
	while ((p = memmem(p, (size_t)(end - p), tag, sizeof(tag) - 1))) {
		const char *q = p + sizeof(tag) - 1, *stop = q;
		while (stop < end && stop - q < 64 && *stop && !isspace((unsigned char)*stop))
			stop++;
		const char *cu = memmem(q, (size_t)(stop - q), "+cuda", 5);
		if (cu) {
			cu += 5;
			size_t k = (size_t)(stop - cu);
			if (k && k < len && isdigit((unsigned char)*cu)) {
				memcpy(out, cu, k);
				out[k] = '\0';
				rc = 0;
				break;
			}
		}
		p = q;
	}
	munmap((void *)m, size);
	return rc;
}

void nw_doc_ctx_init(struct nw_doc_ctx *c, const struct nw_nvml_snap *snap, const struct nw_topo *topo)
{
	memset(c, 0, sizeof(*c));
	c->snap = snap;
	c->topo = topo;
	c->nifaces = -1;
	c->nccl_state = -1;
	c->all_state = -1;
	c->live_state = -1;
	c->peermem_sysmodule = -1;
	c->hypervisor = -1;
	c->shm_bytes = -1;
	c->memlock = -1;
	c->iommu_units = -1;
	c->ncpus_online = -1;
	c->uid = -1;
	c->expect_gpus = -1;
	c->nibports = -1;
	c->kmsg_state = -1;
}

void nw_doc_ctx_release(struct nw_doc_ctx *c)
{
	free(c->cmdline);
	free(c->modules);
	free(c->logind);
	free(c->all);
	c->cmdline = c->modules = c->logind = NULL;
	c->all = NULL;
}

/* "size=65536k" style tmpfs option into bytes; -1 when absent. */
static long long mount_size(const char *opts)
{
	const char *s = strstr(opts, "size=");
	if (!s || (s != opts && s[-1] != ','))
		return -1;
	char *end;
	long long v = strtoll(s + 5, &end, 10);
	if (end == s + 5 || v < 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': v *= 1024LL; break;
	case 'm': case 'M': v *= 1024LL * 1024; break;
	case 'g': case 'G': v *= 1024LL * 1024 * 1024; break;
	case '%': return -1;
	default: break;
	}
	return v;
}

static long long read_shm(const char *root)
{
	char *mounts = nw_sys_slurp(root, "/proc/mounts", 1 << 20);
	long long size = -1;
	int found = 0;
	for (char *line = mounts, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char dev[128], dir[256], type[64], opts[512];
		if (sscanf(line, "%127s %255s %63s %511s", dev, dir, type, opts) == 4 &&
		    !strcmp(dir, "/dev/shm")) {
			found = 1;
			size = mount_size(opts);
		}
		if (!next)
			break;
	}
	free(mounts);
	if (found && size < 0) {
		/* tmpfs without size=: half of RAM. */
		char *mi = nw_sys_slurp(root, "/proc/meminfo", 1 << 16);
		const char *p = mi ? strstr(mi, "MemTotal:") : NULL;
		if (p)
			size = strtoll(p + 9, NULL, 10) * 1024LL / 2;
		free(mi);
	}
	/* Live: the filesystem's own answer is exact. */
	struct statvfs sv;
	if (!root[0] && statvfs("/dev/shm", &sv) == 0)
		size = (long long)sv.f_blocks * (long long)sv.f_frsize;
	return size;
}

static long long read_memlock(const char *root)
{
	char *lim = nw_sys_slurp(root, "/proc/self/limits", 1 << 16);
	long long v = -1;
	const char *p = lim ? strstr(lim, "Max locked memory") : NULL;
	if (p) {
		p += strlen("Max locked memory");
		while (*p == ' ')
			p++;
		if (!strncmp(p, "unlimited", 9))
			v = -2;
		else {
			char *end;
			long long x = strtoll(p, &end, 10);
			if (end != p && x >= 0)
				v = x;
		}
	}
	free(lim);
	return v;
}

static void read_logind(struct nw_doc_ctx *c, const char *root)
{
	static const char *dirs[] = { "/etc/systemd/logind.conf.d", "/run/systemd/logind.conf.d",
	                              "/usr/lib/systemd/logind.conf.d" };
	size_t cap = 0, len = 0;
	char *all = NULL;
	const char *files[32];
	char store[32][PATH_MAX];
	int nf = 0;
	if (nw_sys_exists(root, "/etc/systemd/logind.conf"))
		nw_strlcpy(store[nf], "/etc/systemd/logind.conf", PATH_MAX), files[nf] = store[nf], nf++;
	for (size_t d = 0; d < NW_ARRAY_LEN(dirs); d++) {
		char **names;
		int n = nw_sys_list(root, dirs[d], &names);
		for (int i = 0; i < n && nf < 32; i++) {
			size_t l = strlen(names[i]);
			if (l > 5 && !strcmp(names[i] + l - 5, ".conf") &&
			    nw_sys_fmt(store[nf], PATH_MAX, "%s/%s", dirs[d], names[i]) == 0) {
				files[nf] = store[nf];
				nf++;
			}
		}
		nw_sys_free_names(names, n > 0 ? n : 0);
	}
	for (int i = 0; i < nf; i++) {
		char *text = nw_sys_slurp(root, files[i], 1 << 16);
		if (!text)
			continue;
		char *chunk = nw_asprintf("# file %s\n%s\n", files[i], text);
		size_t cl = strlen(chunk);
		if (len + cl + 1 > cap) {
			cap = (len + cl + 1) * 2;
			all = nw_realloc(all, cap);
		}
		memcpy(all + len, chunk, cl + 1);
		len += cl;
		free(chunk);
		free(text);
	}
	c->logind_present = nf > 0;
	c->logind = all;
}

/* ACS control from a PCI config space dump; -1 when the extended space is not there. */
static int acs_from_config(const unsigned char *cfg, size_t len, int *has, unsigned *ctrl)
{
	*has = 0;
	if (len < 0x104)
		return -1;
	unsigned off = 0x100;
	for (int guard = 0; off >= 0x100 && off + 8 <= len && guard < 64; guard++) {
		unsigned hdr = cfg[off] | cfg[off + 1] << 8 | cfg[off + 2] << 16 | (unsigned)cfg[off + 3] << 24;
		if (hdr == 0 || hdr == 0xffffffffu)
			break;
		if ((hdr & 0xffff) == 0x000d) {
			*has = 1;
			*ctrl = cfg[off + 6] | cfg[off + 7] << 8;
			return 0;
		}
		off = (hdr >> 20) & 0xffc;
	}
	return 0;
}

static void add_bridge(struct nw_doc_ctx *c, const char *root, const char *bdf, const char *dir,
                       const char *below)
{
	for (int i = 0; i < c->nacs; i++)
		if (!strcmp(c->acs[i].bdf, bdf))
			return;
	if (c->nacs >= NW_DOC_MAX_ACS)
		return;
	struct nw_doc_acs *a = &c->acs[c->nacs++];
	memset(a, 0, sizeof(*a));
	nw_strlcpy(a->bdf, bdf, sizeof(a->bdf));
	nw_strlcpy(a->below, below, sizeof(a->below));
	char p[PATH_MAX], full[PATH_MAX];
	nw_sys_fmt(p, sizeof(p), "%s/config", dir);
	if (nw_sys_path(root, p, full, sizeof(full)) == 0) {
		size_t len = 0;
		unsigned char *cfg = (unsigned char *)nw_read_file(full, 4097, &len);
		if (cfg) {
			a->readable = acs_from_config(cfg, len, &a->has_acs, &a->ctrl) == 0;
			free(cfg);
		}
	}
}

static void add_link(struct nw_doc_ctx *c, const char *root, const char *devdir, const char *what)
{
	if (c->nlinks >= (int)NW_ARRAY_LEN(c->links))
		return;
	struct nw_doc_link *l = &c->links[c->nlinks];
	memset(l, 0, sizeof(*l));
	char p[PATH_MAX];
	long w;
	nw_sys_fmt(p, sizeof(p), "%s/current_link_speed", devdir);
	if (nw_sys_line(root, p, l->speed_cur, sizeof(l->speed_cur)) < 0)
		return;
	nw_sys_fmt(p, sizeof(p), "%s/max_link_speed", devdir);
	if (nw_sys_line(root, p, l->speed_max, sizeof(l->speed_max)) < 0)
		return;
	nw_sys_fmt(p, sizeof(p), "%s/current_link_width", devdir);
	l->width_cur = nw_sys_long(root, p, &w) == 0 ? (int)w : -1;
	nw_sys_fmt(p, sizeof(p), "%s/max_link_width", devdir);
	l->width_max = nw_sys_long(root, p, &w) == 0 ? (int)w : -1;
	nw_strlcpy(l->what, what, sizeof(l->what));
	c->nlinks++;
}

/* Bridges above a device (every PCI address in its path but the last) and their links. */
static void walk_up(struct nw_doc_ctx *c, const char *root, const char *pci_path, const char *name)
{
	char prefix[PATH_MAX];
	const char *p = pci_path;
	char last[32] = "";
	size_t lastend = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char comp[32];
		unsigned a, b, d, f;
		char x;
		if (n < sizeof(comp)) {
			memcpy(comp, p, n);
			comp[n] = '\0';
			if (sscanf(comp, "%x:%x:%x.%x%c", &a, &b, &d, &f, &x) == 4) {
				if (last[0] && lastend < sizeof(prefix)) {
					char what[64];
					snprintf(what, sizeof(what), "bridge %s above %s", last, name);
					memcpy(prefix, pci_path, lastend);
					prefix[lastend] = '\0';
					add_bridge(c, root, last, prefix, name);
					add_link(c, root, prefix, what);
				}
				nw_strlcpy(last, comp, sizeof(last));
				lastend = (size_t)(p + n - pci_path);
			}
		}
		if (!e)
			break;
		p = e;
	}
}

/* Network interfaces and their operstate (/sys/class/net); nifaces -1 when unreadable. */
static void gather_ifaces(struct nw_doc_ctx *c, const char *root)
{
	char **names;
	int n = nw_sys_list(root, "/sys/class/net", &names);
	c->nifaces = n < 0 ? -1 : 0;
	for (int i = 0; i < n && c->nifaces < 64; i++) {
		char p[PATH_MAX];
		nw_strlcpy(c->ifaces[c->nifaces], names[i], sizeof(c->ifaces[0]));
		nw_sys_fmt(p, sizeof(p), "/sys/class/net/%s/operstate", names[i]);
		if (nw_sys_line(root, p, c->ifstate[c->nifaces], sizeof(c->ifstate[0])) < 0)
			nw_strlcpy(c->ifstate[c->nifaces], "unknown", sizeof(c->ifstate[0]));
		c->nifaces++;
	}
	nw_sys_free_names(names, n > 0 ? n : 0);
}

/* The NCCL that would load (and the CUDA it was built for), and every libnccl on the machine. */
static void gather_nccl(struct nw_doc_ctx *c)
{
	c->nccl_state = nw_nccl_locate(c->nccl_override, &c->nccl, c->nccl_err, sizeof(c->nccl_err)) == 0;
	if (c->nccl_state == 1)
		(void)nw_doc_nccl_cuda(c->nccl.path, c->nccl_cuda, sizeof(c->nccl_cuda));
	c->nall = nw_nccl_find_all(&c->all);
	c->all_state = 1;
	memset(&c->live, 0, sizeof(c->live));
	c->live.nccl_found = c->nccl_state == 1;
	nw_strlcpy(c->live.nccl_err, c->nccl_err, sizeof(c->live.nccl_err));
	if (c->nccl_state == 1) {
		nw_strlcpy(c->live.nccl_path, c->nccl.path, sizeof(c->live.nccl_path));
		nw_strlcpy(c->live.nccl_how, c->nccl.how, sizeof(c->live.nccl_how));
		nw_strlcpy(c->live.nccl_version, c->nccl.version, sizeof(c->live.nccl_version));
	}
	nw_live_find_libs(NULL, &c->live);
	c->live_state = 1;
}

/* Kernel, modules, virtualisation, logind, limits and IOMMU: the OS and container facts. */
static void gather_os(struct nw_doc_ctx *c, const char *root)
{
	c->cmdline = nw_sys_slurp(root, "/proc/cmdline", 1 << 16);
	c->modules = nw_sys_slurp(root, "/proc/modules", 1 << 20);
	c->peermem_sysmodule = nw_sys_exists(root, "/sys/module/nvidia_peermem") ||
	                       nw_sys_exists(root, "/sys/module/nv_peer_mem");
	char *cpuinfo = nw_sys_slurp(root, "/proc/cpuinfo", 4 << 20);
	if (cpuinfo) {
		const char *fl = strstr(cpuinfo, "\nflags");
		const char *eol = fl ? strchr(fl + 1, '\n') : NULL;
		const char *hv = fl ? strstr(fl, " hypervisor") : NULL;
		c->hypervisor = hv && (!eol || hv < eol);
		free(cpuinfo);
	}
	char vendor[80] = "", product[80] = "";
	nw_sys_line(root, "/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	nw_sys_line(root, "/sys/class/dmi/id/product_name", product, sizeof(product));
	if (vendor[0] || product[0])
		snprintf(c->dmi, sizeof(c->dmi), "%s%s%s", vendor, vendor[0] && product[0] ? " " : "", product);
	read_logind(c, root);
	c->systemd_running = nw_sys_exists(root, "/run/systemd/system");
	c->uid = (long)geteuid();
	c->shm_bytes = read_shm(root);
	c->memlock = read_memlock(root);
	char **names;
	int n = nw_sys_list(root, "/sys/class/iommu", &names);
	c->iommu_units = n;
	nw_sys_free_names(names, n > 0 ? n : 0);
}

/* The bridges above every GPU and NIC, and the PCIe links of NICs and bridges. */
static void gather_pcie(struct nw_doc_ctx *c, const char *root, const struct nw_topo *t)
{
	for (int i = 0; i < t->ngpus; i++) {
		char name[32];
		snprintf(name, sizeof(name), "GPU%d", t->gpus[i].index);
		if (t->gpus[i].pci_path[0])
			walk_up(c, root, t->gpus[i].pci_path, name);
	}
	for (int i = 0; i < t->nnics; i++) {
		if (!t->nics[i].pci_path[0])
			continue;
		walk_up(c, root, t->nics[i].pci_path, t->nics[i].name);
		char what[64];
		snprintf(what, sizeof(what), "%s (%s)", t->nics[i].name, t->nics[i].bus_id);
		int dup = 0;
		for (int k = 0; k < i; k++)
			dup |= !strcmp(t->nics[k].pci_path, t->nics[i].pci_path);
		if (!dup)
			add_link(c, root, t->nics[i].pci_path, what);
	}
}

/* This process's allowed CPUs (/proc/self/status) and how many CPUs are online. */
static void gather_cpus(struct nw_doc_ctx *c, const char *root)
{
	char *status = nw_sys_slurp(root, "/proc/self/status", 1 << 16);
	const char *al = status ? strstr(status, "Cpus_allowed_list:") : NULL;
	if (al) {
		char list[4096];
		al += strlen("Cpus_allowed_list:");
		while (*al == ' ' || *al == '\t')
			al++;
		size_t k = strcspn(al, "\n");
		if (k < sizeof(list)) {
			memcpy(list, al, k);
			list[k] = '\0';
			c->have_affinity = nw_cpulist_parse(list, c->affinity, NW_DOC_CPU_BITS) > 0;
		}
	}
	free(status);
	char online[4096];
	unsigned long long bits[NW_DOC_CPU_BITS / 64];
	if (nw_sys_line(root, "/sys/devices/system/cpu/online", online, sizeof(online)) == 0)
		c->ncpus_online = nw_cpulist_parse(online, bits, NW_DOC_CPU_BITS);
}

void nw_doc_gather(struct nw_doc_ctx *c, const char *root, char **env,
                   const struct nw_nvml_snap *snap, const struct nw_topo *t)
{
	const char *override = c->nccl_override;
	nw_doc_ctx_init(c, snap, t);
	c->nccl_override = override;
	c->env = env ? env : environ;
	gather_ifaces(c, root);
	gather_nccl(c);
	gather_os(c, root);
	gather_pcie(c, root, t);
	gather_cpus(c, root);
	nw_doc_gather_node(c, root);
}

int nw_doc_probe_all(const char *root, const char *nvml_json, const char *nccl_lib, double interval,
                     struct nw_nvml_snap *snap, struct nw_topo *topo, struct nw_doc_ctx *c, char *err,
                     size_t errlen)
{
	nw_doc_ctx_init(c, snap, topo);
	if (nw_probe_nvml(snap, nvml_json, err, errlen) < 0)
		return -1;
	nw_topo_probe(topo, root, snap);
	c->nccl_override = nccl_lib;
	nw_doc_gather(c, root, NULL, snap, topo);
	int has_links = 0;
	for (int g = 0; g < snap->ngpus; g++)
		has_links |= snap->gpus[g].nlinks > 0;
	int live = !nvml_json && !getenv("NCCLWATCH_NVML_JSON");
	if (interval < 0)
		interval = has_links && live ? 1.0 : 0.0;
	if (interval > 0 && has_links && live) {
		usleep((useconds_t)(interval * 1e6));
		(void)nw_nvml_reread_errors(snap);
	}
	return 0;
}
