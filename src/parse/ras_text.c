/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ras_text: the text answer of NCCL's RAS port (every version since 2.24),
 * as NCCL's src/ras/client_support.cc writes it: version lines, "Job
 * summary", "Communicators", "Errors" and "Warnings" sections, each title
 * underlined with '='; problems come as blocks separated by blank lines.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/ras_int.h"
#include "util/util.h"

enum sect { S_TOP, S_JOB, S_COMMS, S_ERRORS, S_WARNINGS, S_OTHER };
enum bmode { M_NONE, M_COUNTS, M_STATUS, M_ERRS };

/* One group of ranks inside a count block ("30 ranks have launched up to operation 640"). */
struct cgroup { uint64_t value; int listed; };

struct tstate {
	struct nw_ras *r;
	enum sect sect;
	int job_cols;              /* numbers expected on the job summary's next line; 0 none */
	char *block; size_t blen;  /* the Errors/Warnings block being read */
	struct nw_ras_comm *comm;  /* the communicator the block is about; NULL job-wide */
	char kind[32];             /* the block's title ("INCOMPLETE", "DEAD", "MISMATCH") */
	enum bmode mode;
	int op;                    /* count block's op; -1 none */
	struct cgroup groups[64]; int ngroups;
	char gtext[48];            /* status or error of the current group */
	uint64_t gvalue;           /* count of the current group */
};

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* ---- Errors and Warnings blocks ---- */

/* After a count block: the one group RAS did not list gives the rest's value. */
static void counts_end(struct tstate *t)
{
	if (t->mode == M_COUNTS && t->comm && t->op >= 0) {
		int unlisted = 0;
		uint64_t v = 0;
		for (int i = 0; i < t->ngroups; i++)
			if (!t->groups[i].listed) {
				unlisted++;
				v = t->groups[i].value;
			}
		if (unlisted == 1)
			t->comm->rest[t->op] = v;
	}
	t->ngroups = 0;
	t->op = -1;
	t->mode = M_NONE;
}

static void group_add(struct tstate *t, uint64_t value, int listed)
{
	t->gvalue = value;
	if (t->ngroups < (int)NW_ARRAY_LEN(t->groups))
		t->groups[t->ngroups++] = (struct cgroup){ value, listed };
}

/* "-- GPU 4 (NVML 5) managed by process 323032 on node 10.137.190.124" into k. */
static void rank_where(const char *s, struct nw_ras_rank *k)
{
	const char *g = strstr(s, "-- GPU ");
	if (!g)
		return;
	k->cuda_dev = k->nvml_dev = atoi(g + 7);
	const char *nv = strstr(g, "(NVML ");
	if (nv)
		k->nvml_dev = atoi(nv + 6);
	const char *p = strstr(g, "managed by process ");
	if (p)
		k->pid = atoi(p + 19);
	const char *h = strstr(g, " on node ");
	if (h)
		nw_strlcpy(k->host, h + 9, sizeof(k->host));
}

/* A "Rank R ..." line inside a communicator's block. */
static void rank_line(struct tstate *t, const char *s)
{
	char *end;
	long rk = strtol(s + 5, &end, 10);
	if (end == s + 5 || rk < 0 || rk > NW_RAS_MAXRANK)
		return;
	struct nw_ras_rank *k = nw_ras_rank_get(t->comm, (int)rk);
	rank_where(end, k);
	unsigned long long v;
	char word[48];
	if (sscanf(end, " has launched up to operation %llu", &v) == 1) {
		group_add(t, v, 1);
	} else if (starts(end, " has not launched any operations")) {
		group_add(t, 0, 1);
	} else if (sscanf(end, " has status %15s", word) == 1) {
		nw_strlcpy(t->gtext, word, sizeof(t->gtext));
	} else if (sscanf(end, " reported %47[^-\n]", word) == 1) {
		nw_strlcpy(t->gtext, word, sizeof(t->gtext));
		t->gtext[strcspn(t->gtext, "\r")] = '\0';
		for (size_t n = strlen(t->gtext); n && t->gtext[n - 1] == ' '; n--)
			t->gtext[n - 1] = '\0';
	} else if (t->mode == M_COUNTS && t->ngroups) {
		t->groups[t->ngroups - 1].listed = 1;
	}
	if (!strcmp(t->kind, "INCOMPLETE"))
		k->missing = 1;
	else if (t->mode == M_COUNTS && t->op >= 0)
		k->counts[t->op] = t->gvalue;
	else if (t->mode == M_STATUS)
		nw_strlcpy(k->status, t->gtext, sizeof(k->status));
	else if (t->mode == M_ERRS)
		nw_strlcpy(k->error, t->gtext, sizeof(k->error));
}

/* "The missing ranks: 3,5,21" (NCCL 2.24 and 2.25). */
static void missing_list(struct tstate *t, const char *s)
{
	s = strchr(s, ':');
	if (!s)
		return;
	s++;
	for (;;) {
		char *end;
		long rk = strtol(s, &end, 10);
		if (end == s)
			break;
		if (rk >= 0 && rk <= NW_RAS_MAXRANK)
			nw_ras_rank_get(t->comm, (int)rk)->missing = 1;
		s = end + strspn(end, ", ");
	}
}

/* A line of a block about one communicator ("#0-0 (hash) KIND"). */
static void comm_line(struct tstate *t, const char *s)
{
	char name[32], word[48];
	int n;
	unsigned long long v;
	if (sscanf(s, "Missing communicator data from %d rank", &n) == 1) {
		t->comm->nmissing = n;
	} else if (starts(s, "The missing rank")) {
		missing_list(t, s);
	} else if (strstr(s, " operation counts") &&
	           sscanf(s, "Communicator ranks have different %31s operation counts", name) == 1) {
		counts_end(t);
		t->mode = M_COUNTS;
		t->op = nw_ras_op(name);
	} else if (starts(s, "Communicator ranks have different status")) {
		counts_end(t);
		t->mode = M_STATUS;
	} else if (strstr(s, " error") && strstr(s, " on ") && !starts(s, "Rank ")) {
		counts_end(t);
		t->mode = M_ERRS;
	} else if (sscanf(s, "%d ranks have launched up to operation %llu", &n, &v) == 2) {
		group_add(t, v, 0);
	} else if (strstr(s, " ranks have not launched any operations")) {
		group_add(t, 0, 0);
	} else if (sscanf(s, "%d ranks have status %15s", &n, word) == 2 ||
	           sscanf(s, "%d ranks reported %47[^\n]", &n, word) == 2) {
		nw_strlcpy(t->gtext, word, sizeof(t->gtext));
	} else if (starts(s, "Rank ")) {
		rank_line(t, s);
	}
}

/* A line of a job-wide block ("INCOMPLETE", "DEAD", "TIMEOUT"). */
static void job_line(struct tstate *t, const char *s)
{
	int pid, n;
	char host[64];
	struct nw_ras *r = t->r;
	if (sscanf(s, "Process %d on node %63s", &pid, host) == 2 &&
	    (!strcmp(t->kind, "INCOMPLETE") || !strcmp(t->kind, "DEAD"))) {
		r->procs_out = nw_realloc(r->procs_out, (r->nprocs_out + 1) * sizeof(*r->procs_out));
		struct nw_ras_proc *p = &r->procs_out[r->nprocs_out++];
		nw_strlcpy(p->host, host, sizeof(p->host));
		p->pid = pid;
		p->dead = !strcmp(t->kind, "DEAD");
	} else if (sscanf(s, "Encountered %d communication timeout", &n) == 1) {
		r->timeouts = n;
	}
}

/* The group row of the communicator table that "#G-i" refers to. */
static const struct nw_ras_group *group_of(const struct nw_ras *r, int g)
{
	for (size_t i = 0; i < r->ngroups; i++)
		if (r->groups[i].group == g)
			return &r->groups[i];
	return NULL;
}

static void block_title(struct tstate *t, const char *s)
{
	int g, i;
	unsigned long long hash;
	char kind[32];
	t->comm = NULL;
	t->kind[0] = '\0';
	if (sscanf(s, "#%d-%d (%llx) %31s", &g, &i, &hash, kind) == 4) {
		t->comm = nw_ras_comm_get(t->r, hash);
		snprintf(t->comm->id, sizeof(t->comm->id), "#%d-%d", g, i);
		const struct nw_ras_group *gr = group_of(t->r, g);
		if (gr) {
			t->comm->size = gr->ranks_per_comm;
			nw_strlcpy(t->comm->status, gr->status, sizeof(t->comm->status));
			nw_strlcpy(t->comm->errors, gr->errors, sizeof(t->comm->errors));
		}
		nw_strlcpy(t->kind, kind, sizeof(t->kind));
	} else {
		nw_strlcpy(t->kind, s, sizeof(t->kind));
	}
}

static void block_end(struct tstate *t)
{
	counts_end(t);
	if (t->blen) {
		if (t->sect == S_ERRORS)
			nw_ras_strlist_add(&t->r->errors, &t->r->nerrors, t->block);
		else
			nw_ras_strlist_add(&t->r->warnings, &t->r->nwarnings, t->block);
	}
	free(t->block);
	t->block = NULL;
	t->blen = 0;
	t->comm = NULL;
}

static void block_line(struct tstate *t, const char *line)
{
	const char *s = line + strspn(line, " \t");
	if (!*s) {
		block_end(t);
		return;
	}
	size_t l = strlen(line);
	t->block = nw_realloc(t->block, t->blen + l + 2);
	memcpy(t->block + t->blen, line, l);
	t->blen += l;
	t->block[t->blen++] = '\n';
	t->block[t->blen] = '\0';
	if (t->blen == l + 1)
		block_title(t, s);
	else if (t->comm)
		comm_line(t, s);
	else
		job_line(t, s);
}

/* ---- top, job summary, communicator table ---- */

static void top_line(struct nw_ras *r, const char *s)
{
	char v[32];
	if (sscanf(s, "NCCL version %31s", v) == 1)
		nw_strlcpy(r->nccl_version, v, sizeof(r->nccl_version));
	else if (starts(s, "CUDA runtime version "))
		sscanf(s, "CUDA runtime version %d, driver version %d", &r->cuda_runtime, &r->cuda_driver);
}

static void job_summary_line(struct tstate *t, const char *s)
{
	struct nw_ras *r = t->r;
	int a[5];
	if (starts(s, "(total)")) {
		t->job_cols = strstr(s, "per node") ? 5 : 3;
		return;
	}
	if (t->job_cols == 5 && sscanf(s, "%d %d %d %d %d", &a[0], &a[1], &a[2], &a[3], &a[4]) == 5) {
		r->nodes = a[0];
		r->procs = a[3];
		r->gpus = a[4];
	} else if (t->job_cols == 3 && sscanf(s, "%d %d %d", &a[0], &a[1], &a[2]) == 3) {
		r->nodes = a[0];
		r->procs = a[1];
		r->gpus = a[2];
	}
	t->job_cols = 0;
}

static void comms_line(struct nw_ras *r, const char *s)
{
	struct nw_ras_group g;
	memset(&g, 0, sizeof(g));
	if (sscanf(s, "%d %d %d %15s %d %d %15s %31s", &g.group, &g.ncomms, &g.nodes, g.ranks_per_node,
	           &g.ranks_per_comm, &g.ranks_in_group, g.status, g.errors) != 8)
		return;
	r->groups = nw_realloc(r->groups, (r->ngroups + 1) * sizeof(*r->groups));
	r->groups[r->ngroups++] = g;
}

/* A section title: the line before a line of '='. */
static enum sect sect_of(const char *title)
{
	const char *s = title + strspn(title, " ");
	if (starts(s, "Job summary"))
		return S_JOB;
	if (starts(s, "Communicators"))
		return S_COMMS;
	if (starts(s, "Errors"))
		return S_ERRORS;
	if (starts(s, "Warnings"))
		return S_WARNINGS;
	return S_OTHER;
}

static int underline(const char *s)
{
	return s[0] == '=' && strspn(s, "=") == strlen(s);
}

static void one_line(struct tstate *t, const char *line, const char *next)
{
	const char *s = line + strspn(line, " \t");
	if (next && underline(next) && !underline(line)) {
		block_end(t);
		t->sect = sect_of(line);
		double secs;
		const char *p = strchr(line, '(');
		if (t->sect == S_COMMS && p && sscanf(p, "(%lfs)", &secs) == 1)
			t->r->collection_s = secs;
		return;
	}
	if (underline(line))
		return;
	if (starts(s, "Group ") && strstr(s, " Comms ")) {
		t->sect = S_COMMS; /* the table alone, as NCCL's docs quote it */
		return;
	}
	switch (t->sect) {
	case S_TOP: top_line(t->r, s); break;
	case S_JOB: job_summary_line(t, s); break;
	case S_COMMS: comms_line(t->r, s); break;
	case S_ERRORS: case S_WARNINGS: block_line(t, line); break;
	default: break;
	}
}

/* Split buf into lines (without '\r'); one_line sees each with the next. */
static char **split_lines(const char *buf, size_t len, size_t *n)
{
	char **lines = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t off = 0; off < len;) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (buf + off)) : len - off;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			lines = nw_realloc(lines, cap * sizeof(*lines));
		}
		char *s = nw_malloc(l + 1);
		memcpy(s, buf + off, l);
		s[l] = '\0';
		for (size_t k = l; k && (s[k - 1] == '\r' || s[k - 1] == ' '); k--)
			s[k - 1] = '\0';
		lines[(*n)++] = s;
		off += l + 1;
	}
	return lines;
}

int nw_ras_parse_text(const char *buf, size_t len, struct nw_ras *r, char *err, size_t errlen)
{
	if (memchr(buf, '\0', len))
		return nw_seterr(err, errlen, "RAS answer holds binary data: not an answer of NCCL's RAS port");
	size_t n;
	char **lines = split_lines(buf, len, &n);
	struct tstate t = { .r = r, .sect = S_TOP, .op = -1 };
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		one_line(&t, lines[i], i + 1 < n ? lines[i + 1] : NULL);
		seen |= t.sect != S_TOP && t.sect != S_OTHER;
	}
	block_end(&t);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	if (!seen && !r->nccl_version[0])
		return nw_seterr(err, errlen, "RAS answer has no version line and no section of one: "
		                 "not an answer of NCCL's RAS port");
	return 0;
}
