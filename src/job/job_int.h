/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job_int: what the files of src/job share inside the module (the
 * watcher's state, read by part.c to build a node's part). Internal: other
 * folders use job/job.h.
 */
#ifndef NW_JOB_INT_H
#define NW_JOB_INT_H

#include <stddef.h>
#include <stdint.h>

#include "export/sample.h"
#include "job/job.h"

/* Intervals and lateness samples kept; past it, neighbours are merged and the stride doubles. */
#define JW_MAX_INTERVALS 1024
#define JW_MAX_LATE 1024
#define JW_MAX_OVL 4096
#define JW_MAX_INC 256
#define JW_MAX_COMMS 256

/* What one stats file (a rank of a communicator in one process) has shown. */
struct jw_file {
	uint64_t comm, proc_start;
	int rank, nranks, pid, gpu;
	char host[64], name[64];
	int live;               /* enum nw_sf_live at the last read */
	uint32_t abi, state;
	char disabled[128];
	uint64_t ops_total, ops_dropped, slow_ops, dumps;
	uint64_t last_idx;      /* newest flight-recorder entry taken */
	uint64_t missed;        /* entries that left the recorder between two reads */
	struct nw_jop *ops;     /* the newest cap operations, circular from head when full */
	size_t n, cap, head;
	uint64_t tl_dropped;    /* operations pushed out by the cap */
	uint64_t said_slow, said_dumps, said_dropped; /* counters already turned into incidents */
	int said_disabled;
	int new_dump;            /* wrote a dump since the last tick (said once per communicator and tick) */
	char last_dump[128];
	struct nws_progress prog; /* at the last read */
	uint64_t created_ns, updated_ns;
};

/* Figures of one communicator x op x size bucket over one interval, summed over the node's ranks. */
struct jw_cell {
	uint64_t comm;
	uint16_t op, bucket;
	uint64_t count, bytes;
	uint64_t t_count[2], t_bytes[2], t_ns[2]; /* [0] kernel, [1] proxy */
};

struct jw_interval {
	uint64_t t0, t1;        /* realtime ns */
	struct jw_cell *c;
	size_t n, cap;
};

/* Lateness of the node's ranks of one communicator at one sample. */
struct jw_late {
	uint64_t t, comm;
	int n;
	int *rank;
	double *late_us;        /* mean lateness over the newest common collectives */
};

/* One exposed-communication window of one process. */
struct jw_ovl {
	uint64_t t0, t1;
	int pid, rank;
	uint64_t wall, nccl, compute, exposed;
};

struct jw_inc {
	uint64_t t;
	char kind[16];
	char text[768];
};

struct jw_hang {
	uint64_t comm;
	int hung;
};

struct nw_jobw {
	struct nw_jobw_opts o;
	char dir[1024];
	uint64_t first_ns, last_ns;
	struct jw_file *f;
	size_t nf, capf;
	struct nw_sample prev;  /* the last sample (cumulative figures per file, op, bucket) */
	int have_prev;
	uint64_t prev_ns;
	struct jw_interval *iv; /* closed intervals, then the open one at iv[niv] when open */
	size_t niv;
	int open;               /* iv[niv] is being filled */
	unsigned stride, in_open; /* samples per interval, samples in the open one */
	struct jw_late *late;
	size_t nlate;
	unsigned late_stride, late_skip;
	struct jw_ovl *ovl;
	size_t novl;
	uint64_t *ovl_windows;  /* windows seen per pid (pairs pid, windows) */
	size_t novl_pids;
	struct jw_inc *inc;
	size_t ninc;
	uint64_t inc_dropped;
	struct jw_hang hang[JW_MAX_COMMS];
	size_t nhang;
	int reads;              /* successful reads of the directory */
};

/* Add an incident (kept up to JW_MAX_INC, then counted). */
void jw_incident(struct nw_jobw *w, uint64_t t, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* view.c: reading parts and placing their times (view_charts.c builds the rest) */
uint64_t jv_u64(const json_t *o, const char *k);
const char *jv_str(const json_t *o, const char *k);
uint64_t jv_hex_of(const char *s);
unsigned jv_op_of(const char *name);
int jv_ranks_from(const json_t *parts, struct nw_job_view *v, char *err, size_t errlen);
void jv_clock_offsets(struct nw_job_view *v);
void jv_apply_offsets(struct nw_job_view *v);
void jv_bins(struct nw_job_view *v);
uint64_t jv_at(const struct nw_job_view *v, size_t node, uint64_t t);
size_t jv_bin_of(const struct nw_job_view *v, uint64_t t);
struct nw_jv_line *jv_chart_line(struct nw_jv_chart *c, size_t nbins, const char *label);
int jv_comm_size(const struct nw_job_view *v, uint64_t comm);

#endif
