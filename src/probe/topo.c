/* SPDX-License-Identifier: Apache-2.0 */
/* Topology from NVML answers and the PCI tree under a root (see topo.h). */
#include "probe/topo.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/sysfs.h"
#include "util/strbuf.h"
#include "util/util.h"

const char *nw_path_label(enum nw_path p, int nvlinks, char *buf, size_t len)
{
	static const char *names[] = { "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?" };
	if (p == NW_PATH_NVL)
		snprintf(buf, len, "NV%d", nvlinks);
	else
		nw_strlcpy(buf, names[p <= NW_PATH_UNKNOWN ? p : NW_PATH_UNKNOWN], len);
	return buf;
}

double nw_pcie_gen_gts(int gen)
{
	static const double gts[] = { 0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	return gen >= 1 && gen <= 6 ? gts[gen] : 0.0;
}

double nw_pcie_gbs(const char *speed, int width)
{
	char *end;
	if (!speed || width <= 0)
		return 0.0;
	double gts = strtod(speed, &end);
	if (end == speed || gts <= 0 || gts > 1000)
		return 0.0;
	/* Line encoding: 8b/10b up to 5 GT/s, 128b/130b up to 32 GT/s, FLIT (242/256) after. */
	double enc = gts <= 5.0 ? 0.8 : gts <= 32.0 ? 128.0 / 130.0 : 242.0 / 256.0;
	return gts * width * enc / 8.0;
}

/* Whether a path component is a PCI address ("0000:00:06.0"). */
static int is_bdf(const char *s, size_t n)
{
	unsigned a, b, c, d;
	char tmp[32];
	if (n >= sizeof(tmp) || n < 7)
		return 0;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	char extra;
	return sscanf(tmp, "%x:%x:%x.%x%c", &a, &b, &c, &d, &extra) == 4;
}

/*
 * Split a resolved sysfs path into its host bridge ("pci0000:00") and the
 * chain of PCI addresses below it. Returns the chain length (at most max).
 */
static int pci_chain(const char *path, char *host, size_t hostlen, char chain[][20], int max)
{
	int n = 0;
	host[0] = '\0';
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len > 3 && !strncmp(p, "pci", 3) && is_bdf(p + 3, len - 3) == 0 && !host[0]) {
			size_t k = len < hostlen ? len : hostlen - 1;
			memcpy(host, p, k);
			host[k] = '\0';
		} else if (host[0] && is_bdf(p, len) && n < max) {
			size_t k = len < 19 ? len : 19;
			memcpy(chain[n], p, k);
			chain[n][k] = '\0';
			n++;
		}
		if (!e)
			break;
		p = e;
	}
	return n;
}

enum nw_path nw_pci_path_class(const char *path_a, const char *path_b, int numa_a, int numa_b)
{
	char ha[64], hb[64], ca[16][20], cb[16][20];
	if (!path_a[0] || !path_b[0])
		return NW_PATH_UNKNOWN;
	int na = pci_chain(path_a, ha, sizeof(ha), ca, 16);
	int nb = pci_chain(path_b, hb, sizeof(hb), cb, 16);
	if (!ha[0] || !hb[0] || na == 0 || nb == 0)
		return NW_PATH_UNKNOWN;
	if (!strcmp(path_a, path_b))
		return NW_PATH_SELF;
	if (strcmp(ha, hb)) {
		if (numa_a >= 0 && numa_b >= 0 && numa_a != numa_b)
			return NW_PATH_SYS;
		if (numa_a < 0 || numa_b < 0)
			return NW_PATH_SYS;
		return NW_PATH_NODE;
	}
	/* The last element of each chain is the device itself; bridges come before. */
	int common = 0;
	while (common < na - 1 && common < nb - 1 && !strcmp(ca[common], cb[common]))
		common++;
	if (common == 0)
		return NW_PATH_PHB;
	/* Bridges below the deepest common one, on the longer side. */
	int below = (na - 1 - common) > (nb - 1 - common) ? (na - 1 - common) : (nb - 1 - common);
	return below <= 1 ? NW_PATH_PIX : NW_PATH_PXB;
}

/* The PCI device directory of a sysfs device path: its deepest PCI address. */
static void pci_device_of(const char *resolved, char *out, size_t len, char *bus, size_t buslen)
{
	out[0] = bus[0] = '\0';
	const char *p = resolved, *best_end = NULL, *best = NULL;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (is_bdf(p, n)) {
			best = p;
			best_end = p + n;
		}
		if (!e)
			break;
		p = e;
	}
	if (!best)
		return;
	size_t n = (size_t)(best_end - resolved);
	if (n >= len)
		return;
	memcpy(out, resolved, n);
	out[n] = '\0';
	char tmp[32];
	size_t k = (size_t)(best_end - best);
	if (k < sizeof(tmp)) {
		memcpy(tmp, best, k);
		tmp[k] = '\0';
		nw_pci_bus_norm(tmp, bus, buslen);
	}
}

static int read_numa(const char *root, const char *devdir)
{
	char p[PATH_MAX];
	long v;
	nw_sys_fmt(p, sizeof(p), "%s/numa_node", devdir);
	if (nw_sys_long(root, p, &v) < 0 || v < 0 || v > 4096)
		return -1;
	return (int)v;
}

static void read_pcie(const char *root, const char *devdir, struct nw_topo_gpu *g)
{
	char p[PATH_MAX], speed[64], mspeed[64];
	long w;
	nw_sys_fmt(p, sizeof(p), "%s/max_link_width", devdir);
	if (nw_sys_long(root, p, &w) == 0 && w > 0 && w <= 32)
		g->width_max = (int)w;
	nw_sys_fmt(p, sizeof(p), "%s/current_link_width", devdir);
	if (nw_sys_long(root, p, &w) == 0 && w > 0 && w <= 32)
		g->width_cur = (int)w;
	nw_sys_fmt(p, sizeof(p), "%s/max_link_speed", devdir);
	if (nw_sys_line(root, p, mspeed, sizeof(mspeed)) == 0 && g->width_max > 0)
		g->pcie_gbs = nw_pcie_gbs(mspeed, g->width_max);
	nw_sys_fmt(p, sizeof(p), "%s/current_link_speed", devdir);
	(void)nw_sys_line(root, p, speed, sizeof(speed));
	static const double gts[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	for (int i = 0; i < 6; i++) {
		if (g->gen_max < 0 && strtod(mspeed, NULL) == gts[i])
			g->gen_max = i + 1;
		if (g->gen_cur < 0 && strtod(speed, NULL) == gts[i])
			g->gen_cur = i + 1;
	}
}

static void gpu_init(struct nw_topo_gpu *g, int index)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->numa = -1;
	g->gen_cur = g->gen_max = g->width_cur = g->width_max = -1;
}

/* Fill the sysfs side of a GPU whose bus_id is set. */
static void gpu_sysfs(const char *root, struct nw_topo_gpu *g)
{
	char p[PATH_MAX], dev[PATH_MAX];
	nw_sys_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s", g->bus_id);
	if (nw_sys_resolve(root, p, dev, sizeof(dev)) < 0)
		return;
	nw_strlcpy(g->pci_path, dev, sizeof(g->pci_path));
	g->numa = read_numa(root, dev);
	nw_sys_fmt(p, sizeof(p), "%s/local_cpulist", dev);
	(void)nw_sys_line(root, p, g->cpus, sizeof(g->cpus));
	read_pcie(root, dev, g);
}

/* NVIDIA display or 3D controllers on the PCI bus, in address order. */
static void gpus_from_sysfs(struct nw_topo *t, const char *root)
{
	char **names;
	int n = nw_sys_list(root, "/sys/bus/pci/devices", &names);
	for (int i = 0; i < n && t->ngpus < NW_NVML_MAX_GPUS; i++) {
		char p[PATH_MAX];
		long vendor, cls, device = 0;
		nw_sys_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/vendor", names[i]);
		if (nw_sys_long(root, p, &vendor) < 0 || vendor != 0x10de)
			continue;
		nw_sys_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/class", names[i]);
		if (nw_sys_long(root, p, &cls) < 0 || ((cls >> 8) != 0x0302 && (cls >> 8) != 0x0300))
			continue;
		nw_sys_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/device", names[i]);
		(void)nw_sys_long(root, p, &device);
		struct nw_topo_gpu *g = &t->gpus[t->ngpus];
		gpu_init(g, t->ngpus);
		if (nw_pci_bus_norm(names[i], g->bus_id, sizeof(g->bus_id)) < 0)
			continue;
		snprintf(g->model, sizeof(g->model), "NVIDIA 10de:%04lx", (unsigned long)device & 0xffff);
		gpu_sysfs(root, g);
		t->ngpus++;
	}
	nw_sys_free_names(names, n > 0 ? n : 0);
}

static const char *p2p_reason(int st)
{
	switch (st) {
	case 1: return "chipset not supported";
	case 2: return "GPU not supported";
	case 3: return "topology not supported";
	case 4: return "disabled by regkey";
	case 5: return "not supported";
	default: return "unknown";
	}
}

static enum nw_path path_from_nvml_level(int level)
{
	switch (level) {
	case NW_TOPO_INTERNAL: return NW_PATH_SELF;
	case NW_TOPO_SINGLE: return NW_PATH_PIX;
	case NW_TOPO_MULTIPLE: return NW_PATH_PXB;
	case NW_TOPO_HOSTBRIDGE: return NW_PATH_PHB;
	case NW_TOPO_NODE: return NW_PATH_NODE;
	case NW_TOPO_SYSTEM: return NW_PATH_SYS;
	default: return NW_PATH_UNKNOWN;
	}
}

static void gpus_from_nvml(struct nw_topo *t, const char *root, const struct nw_nvml_snap *s)
{
	for (int i = 0; i < s->ngpus && i < NW_NVML_MAX_GPUS; i++) {
		const struct nw_nvml_gpu *n = &s->gpus[i];
		struct nw_topo_gpu *g = &t->gpus[t->ngpus++];
		gpu_init(g, n->index);
		nw_strlcpy(g->bus_id, n->bus_id, sizeof(g->bus_id));
		nw_strlcpy(g->model, n->name[0] ? n->name : "NVIDIA GPU", sizeof(g->model));
		nw_strlcpy(g->uuid, n->uuid, sizeof(g->uuid));
		gpu_sysfs(root, g);
		/* NVML's answers win over sysfs for the GPU's own link. */
		if (n->pcie_gen_max > 0)
			g->gen_max = n->pcie_gen_max;
		if (n->pcie_gen_cur > 0)
			g->gen_cur = n->pcie_gen_cur;
		if (n->pcie_width_max > 0)
			g->width_max = n->pcie_width_max;
		if (n->pcie_width_cur > 0)
			g->width_cur = n->pcie_width_cur;
		if (g->pcie_gbs == 0 && g->gen_max > 0 && g->width_max > 0) {
			char sp[32];
			snprintf(sp, sizeof(sp), "%.1f GT/s", nw_pcie_gen_gts(g->gen_max));
			g->pcie_gbs = nw_pcie_gbs(sp, g->width_max);
		}
		g->nvlinks_total = n->nlinks;
		for (int k = 0; k < n->nlinks; k++) {
			if (n->links[k].active != 1)
				continue;
			g->nvlinks_active++;
			if (n->links[k].remote_type == NW_NVL_REMOTE_SWITCH)
				g->nvlinks_to_switch++;
		}
		g->nvlink_gbs = n->nvlink_gbs;
	}
}

static void fill_pairs(struct nw_topo *t, const struct nw_nvml_snap *s)
{
	for (int i = 0; i < t->ngpus; i++)
		for (int j = 0; j < t->ngpus; j++) {
			struct nw_topo_pair *p = &t->pairs[i][j];
			struct nw_topo_gpu *a = &t->gpus[i], *b = &t->gpus[j];
			memset(p, 0, sizeof(*p));
			p->p2p = -1;
			if (i == j) {
				p->path = NW_PATH_SELF;
				continue;
			}
			int direct = 0;
			if (s->loaded && i < s->ngpus) {
				const struct nw_nvml_gpu *n = &s->gpus[i];
				for (int k = 0; k < n->nlinks; k++)
					if (n->links[k].active == 1 && !strcmp(n->links[k].remote_bus_id, b->bus_id))
						direct++;
			}
			int sw = a->nvlinks_to_switch < b->nvlinks_to_switch ? a->nvlinks_to_switch
			                                                      : b->nvlinks_to_switch;
			if (direct || sw) {
				p->path = NW_PATH_NVL;
				p->nvlinks = direct ? direct : sw;
				double rate = a->nvlink_gbs > 0 ? a->nvlink_gbs : b->nvlink_gbs;
				p->link_gbs = rate * p->nvlinks;
			} else {
				p->path = NW_PATH_UNKNOWN;
				if (s->loaded && i < s->ngpus && j < s->ngpus)
					p->path = path_from_nvml_level(s->pairs[i][j].topo_level);
				if (p->path == NW_PATH_UNKNOWN)
					p->path = nw_pci_path_class(a->pci_path, b->pci_path, a->numa, b->numa);
				double ga = a->pcie_gbs, gb = b->pcie_gbs;
				p->link_gbs = ga > 0 && gb > 0 ? (ga < gb ? ga : gb) : (ga > 0 ? ga : gb);
			}
			if (s->loaded && i < s->ngpus && j < s->ngpus) {
				int st = s->pairs[i][j].p2p_read;
				if (st >= 0) {
					p->p2p = st == 0;
					if (st != 0)
						nw_strlcpy(p->p2p_why, p2p_reason(st), sizeof(p->p2p_why));
				}
			}
		}
}

/* Locate the PCI device behind a class device ("/sys/class/net/eth0"). */
static void nic_pci(const char *root, const char *classdev, struct nw_topo_nic *nic)
{
	char p[PATH_MAX], dev[PATH_MAX], pcidev[PATH_MAX];
	nw_sys_fmt(p, sizeof(p), "%s/device", classdev);
	if (nw_sys_resolve(root, p, dev, sizeof(dev)) < 0)
		return;
	pci_device_of(dev, pcidev, sizeof(pcidev), nic->bus_id, sizeof(nic->bus_id));
	if (!pcidev[0])
		return;
	nw_strlcpy(nic->pci_path, pcidev, sizeof(nic->pci_path));
	nic->numa = read_numa(root, pcidev);
}

static struct nw_topo_nic *nic_new(struct nw_topo *t, const char *name, const char *kind)
{
	if (t->nnics >= NW_TOPO_MAX_NICS)
		return NULL;
	struct nw_topo_nic *n = &t->nics[t->nnics++];
	memset(n, 0, sizeof(*n));
	nw_strlcpy(n->name, name, sizeof(n->name));
	nw_strlcpy(n->kind, kind, sizeof(n->kind));
	n->numa = -1;
	n->port = -1;
	n->nearest_path = NW_PATH_UNKNOWN;
	return n;
}

static void nics_rdma(struct nw_topo *t, const char *root)
{
	char **devs;
	int nd = nw_sys_list(root, "/sys/class/infiniband", &devs);
	for (int i = 0; i < nd; i++) {
		char p[PATH_MAX], **ports;
		nw_sys_fmt(p, sizeof(p), "/sys/class/infiniband/%s/ports", devs[i]);
		int np = nw_sys_list(root, p, &ports);
		for (int k = 0; k < np; k++) {
			char base[PATH_MAX], buf[128];
			long port;
			char *end;
			port = strtol(ports[k], &end, 10);
			if (*end || end == ports[k])
				continue;
			snprintf(base, sizeof(base), "/sys/class/infiniband/%s/ports/%s", devs[i], ports[k]);
			nw_sys_fmt(p, sizeof(p), "%s/link_layer", base);
			nw_sys_line(root, p, buf, sizeof(buf));
			struct nw_topo_nic *n = nic_new(t, devs[i], !strcmp(buf, "Ethernet") ? "roce" : "ib");
			if (!n)
				break;
			n->port = (int)port;
			nw_sys_fmt(p, sizeof(p), "%s/state", base);
			if (nw_sys_line(root, p, buf, sizeof(buf)) == 0) {
				const char *c = strchr(buf, ':');
				c = c ? c + 1 : buf;
				while (*c == ' ')
					c++;
				nw_strlcpy(n->state, c, sizeof(n->state));
				n->up = !strcmp(n->state, "ACTIVE");
			}
			nw_sys_fmt(p, sizeof(p), "%s/rate", base);
			if (nw_sys_line(root, p, buf, sizeof(buf)) == 0)
				n->rate_gbps = strtod(buf, NULL);
			nw_sys_fmt(p, sizeof(p), "/sys/class/infiniband/%s", devs[i]);
			nic_pci(root, p, n);
			/* The network interface on the same PCI function, if any. */
			char **nets;
			nw_sys_fmt(p, sizeof(p), "/sys/class/infiniband/%s/device/net", devs[i]);
			int nn = nw_sys_list(root, p, &nets);
			if (nn > 0)
				nw_strlcpy(n->netdev, nets[0], sizeof(n->netdev));
			nw_sys_free_names(nets, nn > 0 ? nn : 0);
		}
		nw_sys_free_names(ports, np > 0 ? np : 0);
	}
	nw_sys_free_names(devs, nd > 0 ? nd : 0);
}

static int netdev_taken(const struct nw_topo *t, const char *name)
{
	for (int i = 0; i < t->nnics; i++)
		if (!strcmp(t->nics[i].netdev, name))
			return 1;
	return 0;
}

/* Ethernet interfaces that sit on a device (virtual ones have no "device"). */
static void nics_net(struct nw_topo *t, const char *root)
{
	char **ifs;
	int ni = nw_sys_list(root, "/sys/class/net", &ifs);
	for (int i = 0; i < ni; i++) {
		char p[PATH_MAX], buf[64];
		long type = 1, speed;
		nw_sys_fmt(p, sizeof(p), "/sys/class/net/%s/device", ifs[i]);
		if (!nw_sys_exists(root, p) || netdev_taken(t, ifs[i]))
			continue;
		nw_sys_fmt(p, sizeof(p), "/sys/class/net/%s/type", ifs[i]);
		(void)nw_sys_long(root, p, &type);
		if (type == 32) /* IPoIB: its RDMA device is listed already or will be */
			continue;
		struct nw_topo_nic *n = nic_new(t, ifs[i], "eth");
		if (!n)
			break;
		nw_strlcpy(n->netdev, ifs[i], sizeof(n->netdev));
		nw_sys_fmt(p, sizeof(p), "/sys/class/net/%s/operstate", ifs[i]);
		if (nw_sys_line(root, p, buf, sizeof(buf)) == 0) {
			nw_strlcpy(n->state, buf, sizeof(n->state));
			n->up = !strcmp(buf, "up");
		}
		nw_sys_fmt(p, sizeof(p), "/sys/class/net/%s/speed", ifs[i]);
		if (nw_sys_long(root, p, &speed) == 0 && speed > 0)
			n->rate_gbps = (double)speed / 1000.0;
		nw_sys_fmt(p, sizeof(p), "/sys/class/net/%s", ifs[i]);
		nic_pci(root, p, n);
	}
	nw_sys_free_names(ifs, ni > 0 ? ni : 0);
}

static void nic_nearest(struct nw_topo *t)
{
	for (int i = 0; i < t->nnics; i++) {
		struct nw_topo_nic *n = &t->nics[i];
		n->nnearest = 0;
		n->nearest_path = NW_PATH_UNKNOWN;
		for (int g = 0; g < t->ngpus; g++) {
			enum nw_path c = nw_pci_path_class(n->pci_path, t->gpus[g].pci_path, n->numa,
			                                   t->gpus[g].numa);
			if (c == NW_PATH_UNKNOWN)
				continue;
			if (c < n->nearest_path) {
				n->nearest_path = c;
				n->nnearest = 0;
			}
			if (c == n->nearest_path)
				n->nearest[n->nnearest++] = g;
		}
	}
}

int nw_topo_probe(struct nw_topo *t, const char *root, const struct nw_nvml_snap *snap)
{
	memset(t, 0, sizeof(*t));
	t->cuda_driver = -1;
	if (snap->loaded) {
		nw_strlcpy(t->gpu_source, "nvml", sizeof(t->gpu_source));
		nw_strlcpy(t->nvml_lib, snap->lib, sizeof(t->nvml_lib));
		nw_strlcpy(t->driver, snap->driver, sizeof(t->driver));
		t->cuda_driver = snap->cuda_driver;
		gpus_from_nvml(t, root, snap);
	} else {
		nw_strlcpy(t->gpu_source, "sysfs", sizeof(t->gpu_source));
		nw_strlcpy(t->nvml_why, snap->why, sizeof(t->nvml_why));
		gpus_from_sysfs(t, root);
	}
	fill_pairs(t, snap);
	nics_rdma(t, root);
	nics_net(t, root);
	nic_nearest(t);
	return 0;
}

/* One GPU as JSON: index, model, bus, NUMA, PCIe link and NVLinks (what is known). */
static json_t *gpu_json(const struct nw_topo_gpu *g)
{
	json_t *j = json_object();
	json_object_set_new(j, "index", json_integer(g->index));
	json_object_set_new(j, "model", json_string(g->model));
	json_object_set_new(j, "bus_id", json_string(g->bus_id));
	if (g->uuid[0])
		json_object_set_new(j, "uuid", json_string(g->uuid));
	if (g->numa >= 0)
		json_object_set_new(j, "numa_node", json_integer(g->numa));
	if (g->cpus[0])
		json_object_set_new(j, "local_cpus", json_string(g->cpus));
	json_t *pc = json_object();
	if (g->gen_cur > 0) json_object_set_new(pc, "gen_cur", json_integer(g->gen_cur));
	if (g->gen_max > 0) json_object_set_new(pc, "gen_max", json_integer(g->gen_max));
	if (g->width_cur > 0) json_object_set_new(pc, "width_cur", json_integer(g->width_cur));
	if (g->width_max > 0) json_object_set_new(pc, "width_max", json_integer(g->width_max));
	if (g->pcie_gbs > 0) json_object_set_new(pc, "max_gbs", json_real(g->pcie_gbs));
	json_object_set_new(j, "pcie", pc);
	if (g->nvlinks_total > 0) {
		json_t *nv = json_object();
		json_object_set_new(nv, "links", json_integer(g->nvlinks_total));
		json_object_set_new(nv, "active", json_integer(g->nvlinks_active));
		json_object_set_new(nv, "to_nvswitch", json_integer(g->nvlinks_to_switch));
		if (g->nvlink_gbs > 0)
			json_object_set_new(nv, "link_gbs", json_real(g->nvlink_gbs));
		json_object_set_new(j, "nvlink", nv);
	}
	return j;
}

/* GPUs i and k of t as a pair: path, NVLinks, link speed, peer-to-peer status. */
static json_t *pair_json(const struct nw_topo *t, int i, int k)
{
	const struct nw_topo_pair *p = &t->pairs[i][k];
	char lab[16];
	json_t *j = json_object();
	json_object_set_new(j, "a", json_integer(t->gpus[i].index));
	json_object_set_new(j, "b", json_integer(t->gpus[k].index));
	json_object_set_new(j, "path", json_string(nw_path_label(p->path, p->nvlinks, lab, sizeof(lab))));
	if (p->nvlinks)
		json_object_set_new(j, "nvlinks", json_integer(p->nvlinks));
	if (p->link_gbs > 0)
		json_object_set_new(j, "link_gbs", json_real(p->link_gbs));
	if (p->p2p >= 0)
		json_object_set_new(j, "p2p", json_boolean(p->p2p));
	if (p->p2p_why[0])
		json_object_set_new(j, "p2p_why", json_string(p->p2p_why));
	return j;
}

/* NIC n of t: name, kind, port, state, speed, bus, NUMA and its nearest GPUs. */
static json_t *nic_json(const struct nw_topo *t, const struct nw_topo_nic *n)
{
	char lab[16];
	json_t *j = json_object();
	json_object_set_new(j, "name", json_string(n->name));
	json_object_set_new(j, "kind", json_string(n->kind));
	if (n->port >= 0)
		json_object_set_new(j, "port", json_integer(n->port));
	if (n->netdev[0])
		json_object_set_new(j, "netdev", json_string(n->netdev));
	if (n->state[0])
		json_object_set_new(j, "state", json_string(n->state));
	json_object_set_new(j, "up", json_boolean(n->up));
	if (n->rate_gbps > 0)
		json_object_set_new(j, "rate_gbps", json_real(n->rate_gbps));
	if (n->bus_id[0])
		json_object_set_new(j, "bus_id", json_string(n->bus_id));
	if (n->numa >= 0)
		json_object_set_new(j, "numa_node", json_integer(n->numa));
	if (n->nnearest) {
		json_t *near = json_array();
		for (int k = 0; k < n->nnearest; k++)
			json_array_append_new(near, json_integer(t->gpus[n->nearest[k]].index));
		json_object_set_new(j, "nearest_gpus", near);
		json_object_set_new(j, "nearest_path", json_string(nw_path_label(n->nearest_path, 0, lab, sizeof(lab))));
	}
	return j;
}

json_t *nw_topo_to_json(const struct nw_topo *t)
{
	json_t *o = json_object();
	json_object_set_new(o, "gpu_source", json_string(t->gpu_source));
	if (t->nvml_lib[0])
		json_object_set_new(o, "nvml_lib", json_string(t->nvml_lib));
	if (t->nvml_why[0])
		json_object_set_new(o, "nvml_unavailable", json_string(t->nvml_why));
	if (t->driver[0])
		json_object_set_new(o, "driver", json_string(t->driver));
	if (t->cuda_driver > 0) {
		char cv[16];
		snprintf(cv, sizeof(cv), "%d.%d", t->cuda_driver / 1000, (t->cuda_driver % 1000) / 10);
		json_object_set_new(o, "cuda_driver", json_string(cv));
	}
	json_t *gpus = json_array();
	for (int i = 0; i < t->ngpus; i++)
		json_array_append_new(gpus, gpu_json(&t->gpus[i]));
	json_object_set_new(o, "gpus", gpus);
	json_t *pairs = json_array();
	for (int i = 0; i < t->ngpus; i++)
		for (int k = i + 1; k < t->ngpus; k++)
			json_array_append_new(pairs, pair_json(t, i, k));
	json_object_set_new(o, "pairs", pairs);
	json_t *nics = json_array();
	for (int i = 0; i < t->nnics; i++)
		json_array_append_new(nics, nic_json(t, &t->nics[i]));
	json_object_set_new(o, "nics", nics);
	return o;
}

int nw_topo_visible(const struct nw_topo *t, const char *cvd, int *pos, int max, char *err,
                    size_t errlen)
{
	int n = 0;
	if (!cvd) {
		for (int i = 0; i < t->ngpus && n < max; i++)
			pos[n++] = i;
		return n;
	}
	const char *p = cvd;
	while (*p && n < max) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char item[128];
		if (len >= sizeof(item))
			return nw_seterr(err, errlen, "CUDA_VISIBLE_DEVICES entry is too long");
		memcpy(item, p, len);
		item[len] = '\0';
		int found = -1, matches = 0;
		char *end;
		long idx = strtol(item, &end, 10);
		if (len && !*end) {
			for (int i = 0; i < t->ngpus; i++)
				if (t->gpus[i].index == idx)
					found = i, matches = 1;
		} else if (len) {
			for (int i = 0; i < t->ngpus; i++)
				if (t->gpus[i].uuid[0] && !strncmp(t->gpus[i].uuid, item, len))
					found = i, matches++;
		}
		if (found < 0 || matches != 1)
			return nw_seterr(err, errlen, "CUDA_VISIBLE_DEVICES entry '%s' matches %s", item,
			                 matches > 1 ? "several GPUs" : "no GPU");
		for (int k = 0; k < n; k++)
			if (pos[k] == found)
				return nw_seterr(err, errlen, "CUDA_VISIBLE_DEVICES names GPU '%s' twice", item);
		pos[n++] = found;
		if (!e)
			break;
		p = e + 1;
	}
	return n;
}

void nw_topo_subset(const struct nw_topo *in, const int *pos, int n, struct nw_topo *out)
{
	if (out != in)
		memcpy(out, in, sizeof(*out));
	struct nw_topo_gpu *g = nw_calloc((size_t)n, sizeof(*g));
	struct nw_topo_pair(*pr)[NW_NVML_MAX_GPUS] = nw_calloc(NW_NVML_MAX_GPUS, sizeof(*pr));
	for (int i = 0; i < n; i++) {
		g[i] = in->gpus[pos[i]];
		for (int k = 0; k < n; k++)
			pr[i][k] = in->pairs[pos[i]][pos[k]];
	}
	out->ngpus = n;
	for (int i = 0; i < n; i++) {
		out->gpus[i] = g[i];
		for (int k = 0; k < n; k++)
			out->pairs[i][k] = pr[i][k];
	}
	free(g);
	free(pr);
	nic_nearest(out);
}

int nw_probe_nvml(struct nw_nvml_snap *s, const char *path, char *err, size_t errlen)
{
	if (!path) {
		const char *e = getenv("NCCLWATCH_NVML_JSON");
		path = e && *e ? e : NULL;
	}
	if (path)
		return nw_nvml_snap_load(path, s, err, errlen);
	nw_nvml_snapshot(s);
	return 0;
}

void nw_topo_summary(const struct nw_topo *t, char *buf, size_t len, char hash[17])
{
	char lab[32];
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	for (int a = 0; a < t->ngpus; a++)
		for (int b = a + 1; b < t->ngpus && sb.len + 64 < len; b++) { /* whole pairs only: the hash reads the text */
			const struct nw_topo_pair *pr = &t->pairs[a][b];
			nw_strbuf_addf(&sb, "%sGPU%d-GPU%d %s %.1f GB/s", sb.len ? "; " : "", a, b,
			               nw_path_label(pr->path, pr->nvlinks, lab, sizeof(lab)), pr->link_gbs);
		}
	if (!sb.len)
		nw_strbuf_addf(&sb, "%d GPU", t->ngpus);
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
	unsigned long long h = 1469598103934665603ULL;
	for (const char *c = buf; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	snprintf(hash, 17, "%016llx", h);
}
