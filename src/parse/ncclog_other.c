/* SPDX-License-Identifier: Apache-2.0 */
/* Lines of the log that are not NCCL's: PyTorch errors and watchdog timeouts, nccl-tests, crashes. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

/* The number after the first key in s ("SeqNum=5" for key "SeqNum="); -1 when there is none. */
static long long number_after(const char *s, size_t n, const char *key)
{
	const char *v = find(s, n, key);
	if (!v)
		return -1;
	size_t k = strlen(key), used;
	long long x = parse_ll(v + k, (size_t)(s + n - v - k), &used);
	return used ? x : -1;
}

/* The rank of a watchdog line: "[Rank 3]" in it, else the launcher's "[rank3]:" tag; -1 when neither says. */
static int watchdog_rank(const struct nw_log *lg, const char *s, size_t n)
{
	const char *r = find(s, n, "[Rank ");
	size_t used;
	long long v;
	if (r)
		v = parse_ll(r + 6, (size_t)(s + n - r - 6), &used);
	else if (!strncmp(lg->tag, "rank", 4))
		v = parse_ll(lg->tag + 4, strlen(lg->tag + 4), &used);
	else
		return -1;
	return used && v >= 0 && v < (1 << 24) ? (int)v : -1;
}

/* "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ... Timeout(ms)=600000) ran for 600041 milliseconds" */
static void watchdog(struct nw_log *lg, const char *s, size_t n)
{
	struct lg_timeout t;
	memset(&t, 0, sizeof(t));
	t.rank = watchdog_rank(lg, s, n);
	t.seq = number_after(s, n, "SeqNum=");
	const char *v = find(s, n, "OpType=");
	if (v) {
		v += 7;
		size_t vn = 0;
		while (v + vn < s + n && v[vn] != ',' && v[vn] != ')' && v[vn] != ' ')
			vn++;
		copy_str(t.op, sizeof(t.op), v, vn);
	}
	t.timeout_ms = number_after(s, n, "Timeout(ms)=");
	t.ran_ms = number_after(s, n, "ran for ");
	for (size_t i = 0; i < lg->ntimeouts; i++)
		if (lg->timeouts[i].rank == t.rank && lg->timeouts[i].seq == t.seq && !strcmp(lg->timeouts[i].op, t.op))
			return;
	if (lg->ntimeouts < LG_MAX_TIMEOUTS)
		lg->timeouts[lg->ntimeouts++] = t;
	else
		lg->dropped++;
}

/* A Python exception's last line: "torch.distributed.DistBackendError: NCCL error ..." */
static int python_exception(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 120 && s[i] != ':' && s[i] != ' ')
		i++;
	if (i >= n || s[i] != ':' || i < 5)
		return 0;
	return (i >= 5 && !memcmp(s + i - 5, "Error", 5)) || (i >= 9 && !memcmp(s + i - 9, "Exception", 9)) ||
	       (i >= 7 && !memcmp(s + i - 7, "Timeout", 7));
}

/* The end of the blank-separated word at s (at most e). */
static const char *word_end(const char *s, const char *e)
{
	while (s < e && *s != ' ')
		s++;
	return s;
}

/* Remember key among the first NW_ARRAY_LEN(keys) distinct ones; returns 1 when it is new. */
static int key_add(uint64_t *keys, size_t *n, size_t cap, uint64_t key)
{
	for (size_t k = 0; k < *n; k++)
		if (keys[k] == key)
			return 0;
	if (*n < cap)
		keys[(*n)++] = key;
	return 1;
}

/*
 * nccl-tests' device list, "#  Rank  0 Group  0 Pid    643 on         vm device  0 [...] NAME"
 * (older versions: no Group, "#   Rank"): the rank number and the host (a
 * host of the log), each distinct device (host, pid, device: processes that
 * each listed themselves as rank 0 are as many ranks), and each distinct
 * process (host and pid) that printed itself as rank 0.
 */
static void nt_device_line(struct nw_log *lg, const char *s, size_t n)
{
	const char *p, *e = s + n;
	size_t used, i = 1;
	while (i < n && s[i] == ' ')
		i++;
	if (i < 2 || !starts(s + i, n - i, "Rank ") || !(p = find(s, n, " Pid ")))
		return;
	i += 5;
	while (i < n && s[i] == ' ')
		i++;
	long long rank = parse_ll(s + i, n - i, &used);
	if (used)
		lg_note_rank(lg, rank);
	const char *on = find(s, n, " on ");
	if (!used || !on)
		return;
	const char *pp = p + 5;
	while (pp < e && *pp == ' ')
		pp++;
	long long pid = parse_ll(pp, (size_t)(e - pp), &used);
	const char *h = on + 4;
	while (h < e && *h == ' ')
		h++;
	const char *he = word_end(h, e);
	if (he > h)
		lg_host_add(lg, h, (size_t)(he - h));
	const char *dev = find(he, (size_t)(e - he), " device ");
	long long d = dev ? parse_ll(dev + 8, (size_t)(e - dev - 8), &used) : -1;
	uint64_t key = lg_hash_str(h, (size_t)(he - h)) ^ (uint64_t)pid;
	key_add(lg->nt_dev_keys, &lg->nt_ndev, NW_ARRAY_LEN(lg->nt_dev_keys), key * 1000003u + (uint64_t)(d + 1));
	if (rank == 0 && key_add(lg->nt_rank0_keys, &lg->nt_rank0, NW_ARRAY_LEN(lg->nt_rank0_keys), key))
		lg_fact(lg, F_NT_RANK0, UINT32_MAX, s, n);
}

/* nccl-tests' "# nThread 1 nGpus 8 minBytes ...": one process's nThread x nGpus ranks at least (a device list may be cut). */
static void nt_params_line(struct nw_log *lg, const char *s, size_t n)
{
	const char *t = find(s, n, "nThread "), *g = find(s, n, " nGpus ");
	size_t ut, ug;
	if (!t || !g)
		return;
	long long nt = parse_ll(t + 8, (size_t)(s + n - t - 8), &ut), ng = parse_ll(g + 7, (size_t)(s + n - g - 7), &ug);
	if (ut && ug && nt > 0 && ng > 0 && nt < 4096 && ng < 4096)
		lg_note_rank(lg, nt * ng - 1);
}

/* PyTorch's "NCCL version: 2.21.5" or "NCCL version 2.21.5" (p: where it starts in s): the first one is kept. */
static void torch_nccl_version(struct nw_log *lg, const char *s, size_t n, const char *p)
{
	if (lg->torch_nccl_version[0])
		return;
	const char *v = p + (p[12] == ':' ? 14 : 13), *e = v;
	while (e < s + n && *e != ' ' && *e != ',' && *e != ')')
		e++;
	if (e > v && is_digit(*v))
		copy_str(lg->torch_nccl_version, sizeof(lg->torch_nccl_version), v, (size_t)(e - v));
}

/*
 * Read a line that is not NCCL's and return the group of errors it belongs
 * to, or G_NKINDS when it is no error (tracebacks and PyTorch's NCCL
 * version are only noted). The tests run in this order; a new kind of
 * error line (a crash, a launcher's message) is one more test here.
 */
static enum lg_group_kind other_kind(struct nw_log *lg, const char *s, size_t n)
{
	const char *p;
	if (find(s, n, "Watchdog caught collective operation timeout")) {
		watchdog(lg, s, n);
		lg_fact(lg, F_WATCHDOG, UINT32_MAX, s, n);
		return G_PYTORCH;
	}
	if (starts(s, n, "Traceback (most recent call last)")) {
		lg->tracebacks++;
		return G_NKINDS;
	}
	if (find(s, n, "Test NCCL failure") || find(s, n, "Test CUDA failure") || find(s, n, "Test failure"))
		return G_NCCLTESTS;
	if (python_exception(s, n)) {
		if ((p = find(s, n, "NCCL version: ")) || (p = find(s, n, "NCCL version ")))
			torch_nccl_version(lg, s, n, p); /* "DistBackendError: NCCL error in: ..., NCCL version 2.20.5" */
		return G_PYTORCH;
	}
	if (n > 2 && s[0] == '[' && s[1] == 'E' && is_digit(s[2]))
		return G_PYTORCH; /* c10 error log line "[E1130 11:39:33.123 ...] ..." */
	if ((p = find(s, n, "NCCL version: ")) || (p = find(s, n, "NCCL version "))) {
		torch_nccl_version(lg, s, n, p);
		if (!find(s, n, "NCCL error") && !find(s, n, "Error"))
			return G_NKINDS; /* PyTorch errors end with the version: they stay errors */
	}
	if (find(s, n, "NCCL error") || find(s, n, "Segmentation fault") || find(s, n, "CUDA error") ||
	    find(s, n, "DistStoreError") || find(s, n, "Bus error"))
		return G_OTHER_ERROR;
	return G_NKINDS;
}

void lg_tag_proc(struct nw_log *lg, uint32_t proc)
{
	size_t k = 0;
	while (k < lg->ntag_procs && strcmp(lg->tag_procs[k].tag, lg->tag))
		k++;
	if (k == lg->ntag_procs) {
		if (k == NW_ARRAY_LEN(lg->tag_procs))
			return;
		nw_strlcpy(lg->tag_procs[k].tag, lg->tag, sizeof(lg->tag_procs[k].tag));
		lg->ntag_procs++;
	}
	lg->tag_procs[k].proc = proc;
}

/* The process whose NCCL line came last under the current tag (any tag when none), or UINT32_MAX. */
static uint32_t tag_last_proc(const struct nw_log *lg)
{
	if (!lg->tag[0])
		return lg->last_valid ? lg->last_proc : UINT32_MAX;
	for (size_t k = 0; k < lg->ntag_procs; k++)
		if (!strcmp(lg->tag_procs[k].tag, lg->tag))
			return lg->tag_procs[k].proc;
	return UINT32_MAX;
}

/* Keep version ver among the banners no process could be given (once). */
static void banner_keep(struct nw_log *lg, const char *ver)
{
	for (size_t k = 0; k < lg->nbanners; k++)
		if (!strcmp(lg->banners[k], ver))
			return;
	if (lg->nbanners < NW_ARRAY_LEN(lg->banners))
		nw_strlcpy(lg->banners[lg->nbanners++], ver, sizeof(lg->banners[0]));
}

int lg_banner_line(struct nw_log *lg, const char *s, size_t n)
{
	const char *v = s + 13, *e;
	if (!starts(s, n, "NCCL version ") || n <= 13 || !is_digit(*v))
		return 0;
	for (e = v; e < s + n && *e != ' ' && *e != '\t'; e++)
		;
	char ver[40];
	copy_str(ver, sizeof(ver), v, (size_t)(e - v));
	uint32_t p = tag_last_proc(lg);
	if (p != UINT32_MAX && !lg->procs[p].version[0]) {
		nw_strlcpy(lg->procs[p].version, ver, sizeof(lg->procs[p].version));
		return 1;
	}
	if (p != UINT32_MAX && !strcmp(lg->procs[p].version, ver))
		return 1;
	if (p == UINT32_MAX && lg->npending_banners < NW_ARRAY_LEN(lg->pending_banners)) {
		/* no NCCL line of this tag yet: the process whose lines follow printed it */
		nw_strlcpy(lg->pending_banners[lg->npending_banners].tag, lg->tag, sizeof(lg->pending_banners[0].tag));
		nw_strlcpy(lg->pending_banners[lg->npending_banners].version, ver, sizeof(lg->pending_banners[0].version));
		lg->npending_banners++;
		return 1;
	}
	banner_keep(lg, ver);
	return 1;
}

void lg_banners_unclaimed(struct nw_log *lg)
{
	for (size_t k = 0; k < lg->npending_banners; k++)
		banner_keep(lg, lg->pending_banners[k].version);
	lg->npending_banners = 0;
}

void lg_take_banner(struct nw_log *lg, uint32_t proc)
{
	for (size_t k = 0; k < lg->npending_banners; k++) {
		if (strcmp(lg->pending_banners[k].tag, lg->tag))
			continue;
		if (!lg->procs[proc].version[0])
			nw_strlcpy(lg->procs[proc].version, lg->pending_banners[k].version, sizeof(lg->procs[proc].version));
		else if (strcmp(lg->procs[proc].version, lg->pending_banners[k].version))
			banner_keep(lg, lg->pending_banners[k].version);
		lg->pending_banners[k] = lg->pending_banners[--lg->npending_banners];
		return;
	}
}

/*
 * NCCL RAS's status answer (ncclras): "Communicator ranks have different
 * AllGather operation counts", then "30 ranks have launched up to operation
 * 640" per group. Kept as one sentence for the hang diagnosis.
 */
static void ras_line(struct nw_log *lg, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	size_t used = strlen(lg->ras_mismatch);
	if (starts(s, n, "Communicator ranks have different ") && !used) {
		copy_str(lg->ras_mismatch, sizeof(lg->ras_mismatch), s + 34, n - 34);
		lg_fact(lg, F_RAS_MISMATCH, UINT32_MAX, s, n);
	}
	else if (used && find(s, n, " ranks have launched up to operation ") && used + 3 < sizeof(lg->ras_mismatch))
		snprintf(lg->ras_mismatch + used, sizeof(lg->ras_mismatch) - used, "; %.*s", (int)n, s);
}

/*
 * A row of NCCL RAS's communicator table, "0  1  32  8  256  256  RUNNING  OK"
 * (group, communicators, nodes, ranks per node, per communicator, in the
 * group, status, errors); 0 when s is none.
 */
static int ras_row(struct nw_log *lg, const char *s, size_t n)
{
	size_t i = 0, used;
	int k = 0;
	for (; k < 6; k++) {
		while (i < n && s[i] == ' ')
			i++;
		parse_ll(s + i, n - i, &used);
		if (!used)
			return 0;
		i += used;
		if (k == 3 && i < n && s[i] == '-') /* ranks per node "7-8" */
			for (i++; i < n && is_digit(s[i]); i++)
				;
	}
	while (i < n && s[i] == ' ')
		i++;
	const char *status = s + i;
	while (i < n && s[i] != ' ')
		i++;
	if (status == s + i || status[0] < 'A' || status[0] > 'Z')
		return 0;
	while (i < n && s[i] == ' ')
		i++;
	lg->ras_groups++;
	lg->ras_groups_ok += n - i == 2 && !memcmp(s + i, "OK", 2);
	lg_fact(lg, F_RAS_STATUS, UINT32_MAX, s, n);
	return 1;
}

/*
 * NCCL RAS's status answer beyond its job summary: the communicator table
 * ("Group  Comms ... Status  Errors", a second header line, then a row per
 * group) and, in its Errors section, the processes it names: "DEAD" and
 * "INCOMPLETE" blocks with "Process 3748990 on node node1 managing GPU 3"
 * (or, per communicator, "Rank 7 -- GPU 3 managed by process ..."). Returns
 * 1 when the line was one of these.
 */
static int ras_table_line(struct nw_log *lg, const char *s, size_t n)
{
	while (n && *s == ' ')
		s++, n--;
	if (starts(s, n, "Group ") && find(s, n, "Status") && find(s, n, "Errors")) {
		lg->ras_table = 1;
		return 1;
	}
	if (lg->ras_table == 1 && starts(s, n, "#") && find(s, n, "in group")) {
		lg->ras_table = 2;
		return 1;
	}
	if (lg->ras_table == 2) {
		if (ras_row(lg, s, n))
			return 1;
		lg->ras_table = 0;
	}
	if ((n == 4 && !memcmp(s, "DEAD", 4)) || (n == 10 && !memcmp(s, "INCOMPLETE", 10)) ||
	    (n == 8 && (!memcmp(s, "Warnings", 8) || !memcmp(s, "MISMATCH", 8)))) {
		copy_str(lg->ras_block, sizeof(lg->ras_block), s, n);
		return 1;
	}
	if (s[0] == '#' && n > 3 && s[1] >= '0' && s[1] <= '9' && find(s, n, ") ")) {
		const char *k = find(s, n, ") ") + 2;
		copy_str(lg->ras_block, sizeof(lg->ras_block), k, (size_t)(s + n - k)); /* "#0-0 (cf264af53edbe986) INCOMPLETE" */
		return 1;
	}
	int dead = !strcmp(lg->ras_block, "DEAD"), incomplete = !strcmp(lg->ras_block, "INCOMPLETE");
	if ((dead || incomplete) && (starts(s, n, "Process ") || (starts(s, n, "Rank ") && find(s, n, " managed by process ")) ||
	                             starts(s, n, "The missing rank"))) {
		if (starts(s, n, "Process "))
			*(dead ? &lg->ras_dead : &lg->ras_missing) += 1;
		lg_fact(lg, F_RAS_MISSING, UINT32_MAX, s, n);
		return 1;
	}
	return 0;
}

/*
 * What the launcher or NCCL RAS says of the job's size, when NCCL's own
 * lines may not: PyTorch Lightning's "Starting with 2 processes" and
 * "MEMBER: 1/2", PyTorch's "Rank 1: Completed store-based barrier", the
 * job summary of an NCCL RAS answer ("(total)" header, then nodes ... GPUs
 * in all), and Open MPI's "Local host: NAME" (a host of the job). Returns 1
 * when the line was one of these.
 */
static int job_size_line(struct nw_log *lg, const char *s, size_t n)
{
	size_t used;
	const char *p;
	if (lg->ras_job_row) {
		int cols = lg->ras_job_row, a[5] = { 0 }, k = 0;
		lg->ras_job_row = 0;
		for (size_t i = 0; k < cols && i < n; k++) {
			while (i < n && s[i] == ' ')
				i++;
			long long v = parse_ll(s + i, n - i, &used);
			if (!used || v < 0 || v > (1 << 24))
				return 0;
			a[k] = (int)v;
			i += used;
		}
		if (k < cols)
			return 0;
		lg->ras_nodes = a[0];
		lg->ras_gpus = a[cols - 1];
		return 1;
	}
	while (n && *s == ' ')
		s++, n--;
	if (starts(s, n, "Local host:")) {
		/* Open MPI's help messages name the host they come from */
		size_t i = 11;
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		size_t e = i;
		while (e < n && s[e] != ' ' && s[e] != '\t')
			e++;
		if (e > i)
			lg_host_add(lg, s + i, e - i);
		return e > i;
	}
	if (starts(s, n, "(total)")) {
		lg->ras_job_row = find(s, n, "per node") ? 5 : 3;
		return 1;
	}
	long long v = -1;
	if ((p = find(s, n, "Starting with ")) != NULL && find(p, (size_t)(s + n - p), " processes"))
		v = parse_ll(p + 14, (size_t)(s + n - p - 14), &used);
	else if ((p = find(s, n, "MEMBER: ")) != NULL && (p = memchr(p, '/', (size_t)(s + n - p))) != NULL)
		v = parse_ll(p + 1, (size_t)(s + n - p - 1), &used);
	else if (starts(s, n, "Rank ") && find(s, n, ": Completed store-based barrier")) {
		long long r = parse_ll(s + 5, n - 5, &used);
		if (used)
			lg_note_rank(lg, r);
		return used > 0;
	}
	if (v > 0 && v < (1 << 20) && used) {
		if (v > lg->world_hint)
			lg->world_hint = (int)v;
		return 1;
	}
	return 0;
}

/*
 * The cause after PyTorch's "Last error:" (on its line or the next one),
 * kept with the error group before it. classify: the text is new to the
 * analyser (a line of its own), so it also tells the rules what it names.
 */
static void last_error(struct nw_log *lg, const char *s, size_t n, int classify)
{
	size_t i = 0, used;
	while (i < n && s[i] == ' ')
		i++;
	parse_ll(s + i, n - i, &used); /* "10: socketStartConnect: ..." flattened with its srun label */
	if (used && i + used + 1 < n && s[i + used] == ':' && s[i + used + 1] == ' ')
		i += used + 2;
	if (i >= n)
		return;
	if (classify)
		lg_classify(lg, UINT32_MAX, s + i, n - i);
	if (lg->ngroups && !lg->groups[lg->ngroups - 1].last_error[0])
		copy_str(lg->groups[lg->ngroups - 1].last_error, sizeof(lg->groups[0].last_error), s + i, n - i);
}

void lg_other_line(struct nw_log *lg, const char *s, size_t n)
{
	lg->other_lines++;
	if (!n)
		return;
	if (starts(s, n, "NCCLWATCH ")) {
		lg_nw_line(lg, s, n); /* the ncclwatch plugin's periodic line, on stderr */
		return;
	}
	if (lg->want_last_error) {
		size_t pn = strlen(lg->last_error_prefix);
		lg->want_last_error = 0;
		if (pn && starts(s, n, lg->last_error_prefix))
			s += pn, n -= pn;
		last_error(lg, s, n, 1);
		return;
	}
	const char *le = find(s, n, "Last error:");
	if (le) {
		size_t off = (size_t)(le - s) + 11;
		while (off < n && s[off] == ' ')
			off++;
		if (off >= n) {
			lg->want_last_error = 1;
			copy_str(lg->last_error_prefix, sizeof(lg->last_error_prefix), s, (size_t)(le - s));
			return;
		}
	}
	if (find(s, n, "ranks have different ") || find(s, n, "ranks have launched up to operation ")) {
		ras_line(lg, s, n);
		return;
	}
	if (lg_banner_line(lg, s, n) || job_size_line(lg, s, n) || lg_libfabric_line(lg, s, n) ||
	    ((s[0] == ' ' || s[0] == 'G' || s[0] == '#' || (s[0] >= 'A' && s[0] <= 'Z') || is_digit(s[0])) &&
	     ras_table_line(lg, s, n)))
		return;
	if (s[0] == '#') {
		if (find(s, n, "Avg bus bandwidth") || find(s, n, "out-of-place"))
			lg->nt_table_lines++;
		nt_params_line(lg, s, n);
		nt_device_line(lg, s, n);
		return;
	}
	if (starts(s, n, "Legend:") || find(s, n, "X    = Self") || (s[0] == '\t' && starts(s + 1, n - 1, "GPU0")))
		lg->topo_lines++;
	enum lg_group_kind kind = other_kind(lg, s, n);
	if (kind == G_NKINDS)
		return;
	lg_classify(lg, UINT32_MAX, s, n);
	lg_add_group(lg, kind, UINT32_MAX, s, n);
	if (le)
		last_error(lg, le + 11, (size_t)(s + n - (le + 11)), 0);
}
