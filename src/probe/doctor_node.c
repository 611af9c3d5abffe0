/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor's node health checks, the ones a pre-flight needs beyond NCCL's
 * own setup: the GPU count a node should have, GPU Xid errors in the
 * kernel log since boot, clocks held down right now (NVML's clocks event
 * reasons), and the InfiniBand/RoCE ports (state, rate, link-down and
 * error counters from sysfs). The facts are gathered here too (under the
 * root prefix, so a recorded tree replays them); the checks read only the
 * context. docs/doctor.md describes each.
 */
#include "probe/doctor_checks.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/sysfs.h"
#include "util/strbuf.h"
#include "util/util.h"

/* The kernel log read at most: /dev/kmsg holds the ring buffer, a few MB. */
#define KMSG_MAX (32u << 20)

static const char *const ibcnt_files[NW_IBC_N] = {
	"link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors", "local_link_integrity_errors",
	"excessive_buffer_overrun_errors",
};

/* "4: ACTIVE" -> "ACTIVE" (sysfs writes the number and the name). */
static void state_word(const char *in, char *out, size_t len)
{
	const char *c = strchr(in, ':');
	c = c ? c + 1 : in;
	while (*c == ' ')
		c++;
	nw_strlcpy(out, c, len);
}

/* One port's files under base ("/sys/class/infiniband/mlx5_0/ports/1"). */
static void read_ibport(const char *root, const char *base, struct nw_doc_ibport *p)
{
	char path[PATH_MAX], buf[128];
	nw_sys_fmt(path, sizeof(path), "%s/link_layer", base);
	if (nw_sys_line(root, path, buf, sizeof(buf)) == 0)
		p->ethernet = !strcmp(buf, "Ethernet");
	nw_sys_fmt(path, sizeof(path), "%s/state", base);
	if (nw_sys_line(root, path, buf, sizeof(buf)) == 0)
		state_word(buf, p->state, sizeof(p->state));
	nw_sys_fmt(path, sizeof(path), "%s/phys_state", base);
	if (nw_sys_line(root, path, buf, sizeof(buf)) == 0)
		state_word(buf, p->phys, sizeof(p->phys));
	nw_sys_fmt(path, sizeof(path), "%s/rate", base);
	if (nw_sys_line(root, path, p->rate, sizeof(p->rate)) == 0)
		p->rate_gbps = strtod(p->rate, NULL);
	for (int k = 0; k < NW_IBC_N; k++) {
		long v;
		nw_sys_fmt(path, sizeof(path), "%s/counters/%s", base, ibcnt_files[k]);
		p->cnt[k] = nw_sys_long(root, path, &v) == 0 ? v : -1;
	}
}

/* Every port of every RDMA device; nibports stays -1 when the class cannot be read. */
static void gather_ibports(struct nw_doc_ctx *c, const char *root)
{
	char **devs;
	int nd = nw_sys_list(root, "/sys/class/infiniband", &devs);
	if (nd < 0)
		return;
	c->nibports = 0;
	for (int i = 0; i < nd; i++) {
		char p[PATH_MAX], **ports;
		nw_sys_fmt(p, sizeof(p), "/sys/class/infiniband/%s/ports", devs[i]);
		int np = nw_sys_list(root, p, &ports);
		for (int k = 0; k < np && c->nibports < NW_DOC_MAX_IBPORTS; k++) {
			struct nw_doc_ibport *x = &c->ibports[c->nibports++];
			memset(x, 0, sizeof(*x));
			snprintf(x->name, sizeof(x->name), "%s:%s", devs[i], ports[k]);
			nw_sys_fmt(p, sizeof(p), "/sys/class/infiniband/%s/ports/%s", devs[i], ports[k]);
			read_ibport(root, p, x);
		}
		nw_sys_free_names(ports, np > 0 ? np : 0);
	}
	nw_sys_free_names(devs, nd);
}

/* One "NVRM: Xid (PCI:0000:44:00): 79, ..." line into c->xids, counted by code and GPU. */
static void add_xid(struct nw_doc_ctx *c, const char *line, size_t len)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
	const char *at = strstr(buf, "NVRM: Xid (PCI:");
	if (!at)
		return;
	at += strlen("NVRM: Xid (PCI:");
	const char *close = strstr(at, "): ");
	char *end;
	if (!close || close - at >= 24)
		return;
	long code = strtol(close + 3, &end, 10);
	if (end == close + 3 || code < 0 || code > 100000)
		return;
	char pci[24];
	snprintf(pci, sizeof(pci), "%.*s", (int)(close - at), at);
	for (int i = 0; i < c->nxids; i++)
		if (c->xids[i].code == code && !strcmp(c->xids[i].pci, pci)) {
			c->xids[i].count++;
			return;
		}
	if (c->nxids >= NW_DOC_MAX_XIDS)
		return;
	struct nw_doc_xid *x = &c->xids[c->nxids++];
	x->code = (int)code;
	x->count = 1;
	nw_strlcpy(x->pci, pci, sizeof(x->pci));
	while (*end == ',' || *end == ' ')
		end++;
	nw_strlcpy(x->text, end, sizeof(x->text));
}

void nw_doc_parse_xids(struct nw_doc_ctx *c, const char *text)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (memmem(p, len, "NVRM: Xid", 9))
			add_xid(c, p, len);
		p = nl ? nl + 1 : NULL;
	}
}

/*
 * The kernel log since boot from root + /dev/kmsg, read without blocking
 * (each read of the live device returns one record; EAGAIN ends the
 * buffer; EPIPE means a record was overwritten while reading, so go on).
 * A recorded tree holds a regular file in the same format.
 */
static void gather_kmsg(struct nw_doc_ctx *c, const char *root)
{
	char path[PATH_MAX];
	if (nw_sys_path(root, "/dev/kmsg", path, sizeof(path)) < 0)
		return;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		c->kmsg_state = 0;
		snprintf(c->kmsg_why, sizeof(c->kmsg_why), "cannot read %s: %s%s", path, strerror(errno),
		         errno == EPERM || errno == EACCES ? " (kernel.dmesg_restrict: run as root or with CAP_SYSLOG)" : "");
		return;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = nw_malloc(cap);
	for (;;) {
		if (cap - len < 8193) {
			if (cap >= KMSG_MAX)
				break;
			cap *= 2;
			buf = nw_realloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n > 0)
			len += (size_t)n;
		else if (n < 0 && (errno == EPIPE || errno == EINTR))
			continue;
		else
			break;
	}
	close(fd);
	buf[len] = '\0';
	c->kmsg_state = 1;
	nw_doc_parse_xids(c, buf);
	free(buf);
}

void nw_doc_gather_node(struct nw_doc_ctx *c, const char *root)
{
	gather_ibports(c, root);
	gather_kmsg(c, root);
}

void nw_doc_chk_gpu_count(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "node.gpu_count";
	if (c->expect_gpus < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: no --expect-gpus N given");
		return;
	}
	int seen = c->snap->loaded ? c->snap->ngpus : c->topo->ngpus;
	const char *how = c->snap->loaded ? "NVML sees" : "the PCI bus has";
	if (seen == c->expect_gpus) {
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%s %d GPU%s, as expected", how, seen, seen == 1 ? "" : "s");
		return;
	}
	char also[96] = "";
	if (c->snap->loaded && c->topo->ngpus != seen)
		snprintf(also, sizeof(also), " (%d in the topology)", c->topo->ngpus);
	ADD(out, id, NW_SEV_ERROR,
	    seen < c->expect_gpus ? "a GPU missing from the driver has fallen off the bus, failed to initialise or is "
	                            "held by another driver: jobs sized for the node fail or run short"
	                          : "more GPUs than expected: --expect-gpus or the node's inventory is wrong",
	    seen < c->expect_gpus ? "look for Xid 79 in the kernel log and at nvidia-smi -q; reset or reseat the GPU, "
	                            "else call the vendor"
	                          : "fix --expect-gpus for this node type",
	    "%s %d GPU%s, expected %d%s%s", how, seen, seen == 1 ? "" : "s", c->expect_gpus, also,
	    c->snap->loaded || !c->topo->nvml_why[0] ? "" : " (no NVML: counted on the PCI bus)");
}

/* How bad an Xid is: 2 the GPU or node needs attention, 1 worth a look, 0 the application's own fault. */
static int xid_level(int code)
{
	/* From NVIDIA's Xid catalog: hardware, ECC, NVLink, GSP and bus errors. */
	static const int hard[] = { 48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 95, 109, 119, 120, 140 };
	static const int app[] = { 13, 31, 43, 45 };
	for (size_t i = 0; i < NW_ARRAY_LEN(hard); i++)
		if (hard[i] == code)
			return 2;
	for (size_t i = 0; i < NW_ARRAY_LEN(app); i++)
		if (app[i] == code)
			return 0;
	return 1;
}

/* "79 x2 on 0000:44:00 (GPU has fallen off the bus)" for every Xid at level, into list (emptied first); how many. */
static int xid_list(const struct nw_doc_ctx *c, int level, struct nw_strbuf *list)
{
	int n = 0;
	nw_strbuf_reset(list);
	for (int i = 0; i < c->nxids; i++) {
		const struct nw_doc_xid *x = &c->xids[i];
		if (xid_level(x->code) != level)
			continue;
		nw_strbuf_addf(list, "%sXid %d", n++ ? "; " : "", x->code);
		if (x->count > 1)
			nw_strbuf_addf(list, " x%d", x->count);
		nw_strbuf_addf(list, " on %s (%.60s)", x->pci, x->text);
	}
	return n;
}

void nw_doc_chk_xid(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "node.xid";
	if (c->kmsg_state < 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: the kernel log was not read");
		return;
	}
	if (c->kmsg_state == 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", c->kmsg_why);
		return;
	}
	int bad = 0;
	struct nw_strbuf list;
	nw_strbuf_init(&list);
	if (xid_list(c, 2, &list) > 0 && ++bad)
		ADD(out, id, NW_SEV_ERROR, "these Xids mean failing GPU memory, NVLink, GSP firmware or a GPU lost from the bus",
		    "drain the node; reset the GPU (nvidia-smi -r) or reboot, and call the vendor if it returns",
		    "since boot: %s", list.buf);
	if (xid_list(c, 1, &list) > 0 && ++bad)
		ADD(out, id, NW_SEV_WARN, "an Xid that is not plainly an application's fault: the driver or GPU had trouble",
		    "look the code up in NVIDIA's Xid catalog; watch whether it repeats", "since boot: %s", list.buf);
	if (xid_list(c, 0, &list) > 0 && ++bad)
		ADD(out, id, NW_SEV_INFO, "usually an application's fault (bad memory access, killed context), not the node's",
		    NULL, "since boot: %s", list.buf);
	nw_strbuf_release(&list);
	if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no GPU Xid in the kernel log since boot");
}

/* nvmlClocksEventReasons bits (nvml.h) */
#define CLK_SW_POWER_CAP 0x4ULL
#define CLK_HW_SLOWDOWN 0x8ULL
#define CLK_SW_THERMAL 0x20ULL
#define CLK_HW_THERMAL 0x40ULL
#define CLK_HW_POWER_BRAKE 0x80ULL

/* The reasons of mask among bits as words ("HW thermal slowdown, ..."), into words (emptied first). */
static void clock_words(unsigned long long mask, struct nw_strbuf *words)
{
	static const struct { unsigned long long bit; const char *name; } names[] = {
		{ CLK_HW_SLOWDOWN, "HW slowdown" }, { CLK_HW_THERMAL, "HW thermal slowdown" },
		{ CLK_HW_POWER_BRAKE, "HW power brake" }, { CLK_SW_THERMAL, "SW thermal slowdown" },
		{ CLK_SW_POWER_CAP, "SW power cap" },
	};
	nw_strbuf_reset(words);
	for (size_t i = 0; i < NW_ARRAY_LEN(names); i++)
		if (mask & names[i].bit)
			nw_strbuf_addf(words, "%s%s", words->len ? ", " : "", names[i].name);
}

void nw_doc_chk_clocks(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "node.clocks";
	if (!c->snap->loaded) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s", nw_doc_nvml_why(c));
		return;
	}
	int known = 0, bad = 0;
	struct nw_strbuf words;
	nw_strbuf_init(&words);
	for (int g = 0; g < c->snap->ngpus; g++) {
		const struct nw_nvml_gpu *x = &c->snap->gpus[g];
		if (x->clock_reasons < 0)
			continue;
		known++;
		unsigned long long m = (unsigned long long)x->clock_reasons;
		if (m & (CLK_HW_SLOWDOWN | CLK_HW_THERMAL | CLK_HW_POWER_BRAKE)) {
			clock_words(m, &words);
			bad++;
			ADD(out, id, NW_SEV_ERROR, "the hardware holds the clocks down (overheating, power supply or brake): "
			    "every collective on this GPU runs slow and the whole job waits for it",
			    "check cooling, fans and power delivery (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER); "
			    "drain the node until it clears", "GPU%d clocks held down: %s (reasons 0x%llx)", x->index, words.buf,
			    m);
		} else if (m & (CLK_SW_THERMAL | CLK_SW_POWER_CAP)) {
			clock_words(m, &words);
			bad++;
			ADD(out, id, m & CLK_SW_THERMAL ? NW_SEV_WARN : NW_SEV_INFO,
			    m & CLK_SW_THERMAL ? "the driver slows the GPU because it runs hot" : "normal under full load; on an idle GPU the power limit is set low",
			    m & CLK_SW_THERMAL ? "check cooling and the temperature limits (nvidia-smi -q -d TEMPERATURE)" : NULL,
			    "GPU%d clocks lowered: %s (reasons 0x%llx)", x->index, words.buf, m);
		}
	}
	nw_strbuf_release(&words);
	if (!known)
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: NVML gave no clocks event reasons");
	else if (!bad)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "no GPU has its clocks held down (%d GPU%s)", known, known == 1 ? "" : "s");
}

/* Append "name" (and a detail) to a "; "-separated list. */
static void list_add(struct nw_strbuf *list, const char *name, const char *detail)
{
	nw_strbuf_addf(list, "%s%s%s%s%s", list->len ? "; " : "", name, detail[0] ? " (" : "", detail,
	               detail[0] ? ")" : "");
}

/* The fastest rate among the active ports of one link layer, Gb/s. */
static double best_rate(const struct nw_doc_ctx *c, int ethernet)
{
	double best = 0;
	for (int i = 0; i < c->nibports; i++)
		if (c->ibports[i].ethernet == ethernet && !strcmp(c->ibports[i].state, "ACTIVE") &&
		    c->ibports[i].rate_gbps > best)
			best = c->ibports[i].rate_gbps;
	return best;
}

/* The non-zero error counters of a port, "link_downed 3, symbol_error 41", into list (emptied first); how many. */
static int port_errors(const struct nw_doc_ibport *p, struct nw_strbuf *list)
{
	int n = 0;
	nw_strbuf_reset(list);
	for (int k = 0; k < NW_IBC_N; k++)
		if (p->cnt[k] > 0)
			nw_strbuf_addf(list, "%s%s %lld", n++ ? ", " : "", ibcnt_files[k], p->cnt[k]);
	return n;
}

/* The ports' problems, sorted into lists by kind (ib_lists_release frees the lists). */
struct ib_lists {
	struct nw_strbuf down_ib, down_eth, slow, errs;
	int nib, nib_up, neth, neth_up;
};

static void sort_ports(const struct nw_doc_ctx *c, struct ib_lists *l)
{
	memset(l, 0, sizeof(*l));
	nw_strbuf_init(&l->down_ib);
	nw_strbuf_init(&l->down_eth);
	nw_strbuf_init(&l->slow);
	nw_strbuf_init(&l->errs);
	struct nw_strbuf detail;
	nw_strbuf_init(&detail);
	for (int i = 0; i < c->nibports; i++) {
		const struct nw_doc_ibport *p = &c->ibports[i];
		int up = !strcmp(p->state, "ACTIVE");
		*(p->ethernet ? &l->neth : &l->nib) += 1;
		*(p->ethernet ? &l->neth_up : &l->nib_up) += up;
		nw_strbuf_reset(&detail);
		if (!up) {
			nw_strbuf_addf(&detail, "%s, %s", p->state[0] ? p->state : "state unknown",
			               p->phys[0] ? p->phys : "physical state unknown");
			list_add(p->ethernet ? &l->down_eth : &l->down_ib, p->name, detail.buf);
			continue;
		}
		double best = best_rate(c, p->ethernet);
		if (p->rate_gbps > 0 && p->rate_gbps < best) {
			nw_strbuf_addf(&detail, "%s; others at %g Gb/s", p->rate, best);
			list_add(&l->slow, p->name, detail.buf);
		}
		if (port_errors(p, &detail) > 0)
			list_add(&l->errs, p->name, detail.buf);
	}
	nw_strbuf_release(&detail);
}

static void ib_lists_release(struct ib_lists *l)
{
	nw_strbuf_release(&l->down_ib);
	nw_strbuf_release(&l->down_eth);
	nw_strbuf_release(&l->slow);
	nw_strbuf_release(&l->errs);
}

void nw_doc_chk_ib_ports(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *id = "node.ib_ports";
	if (c->nibports <= 0) {
		ADD(out, id, NW_SEV_SKIP, NULL, NULL, "skipped: %s",
		    c->nibports < 0 ? "/sys/class/infiniband cannot be read (no RDMA driver loaded)" : "no InfiniBand/RoCE port");
		return;
	}
	struct ib_lists l;
	sort_ports(c, &l);
	if (l.down_ib.len)
		ADD(out, id, NW_SEV_ERROR, "an InfiniBand port that is not ACTIVE carries no traffic: NCCL uses fewer rails "
		    "or falls back to sockets, and multi-node bandwidth drops",
		    "Polling: check the cable and the switch port; INIT/ARMED: the subnet manager has not brought it up; "
		    "Disabled: enable it (ibportstate)", "not ACTIVE: %s", l.down_ib.buf);
	if (l.slow.len)
		ADD(out, id, NW_SEV_WARN, "a port that trained below its peers (fewer lanes or a lower speed) caps every "
		    "ring through it", "reseat or replace the cable or transceiver; check the switch port",
		    "slower than the others: %s", l.slow.buf);
	if (l.errs.len)
		ADD(out, id, NW_SEV_WARN, "link-down and error counts mean a flapping or noisy link: retransmissions "
		    "and stalls in collectives", "watch whether they grow; replace the cable or transceiver if they do "
		    "(counters clear with perfquery -x -R or a driver reload)", "errors since the counters were cleared: %s",
		    l.errs.buf);
	if (l.down_eth.len)
		ADD(out, id, NW_SEV_INFO, "a RoCE port that is down is fine when nothing uses it (a storage or spare port)",
		    "if NCCL should use it (NCCL_IB_HCA), bring the link up", "RoCE ports not ACTIVE: %s", l.down_eth.buf);
	if (!l.down_ib.len && !l.slow.len && !l.errs.len)
		ADD(out, id, NW_SEV_OK, NULL, NULL, "%d InfiniBand port%s ACTIVE, %d of %d RoCE ports ACTIVE; rates even, "
		    "no link-down or error counts", l.nib_up, l.nib_up == 1 ? "" : "s", l.neth_up, l.neth);
	ib_lists_release(&l);
}
