/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result: the one result model shared by bench, check, import, history,
 * compare, report and tune; and its three renderings (nccl-tests' text
 * table, JSON, CSV). Field names are the documented schema (docs/results.md).
 */
#ifndef NW_MODEL_RESULT_H
#define NW_MODEL_RESULT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* One rank's view of one row (only with --per-rank). */
struct nw_rank_time {
	int rank;
	int gpu;           /* device index on its host, -1 for host backends */
	char host[64];
	double time_us;
};

/* One (op, dtype, redop, size, placement) measurement. */
struct nw_row {
	char op[24];       /* "all_reduce" */
	char dtype[16];    /* nccl-tests' spelling: "float" */
	char redop[8];     /* "sum" ... or "none" */
	int root;          /* -1 when the op has none */
	uint64_t size_bytes; /* as nccl-tests reports "size" */
	uint64_t count;    /* as nccl-tests reports "count" */
	int nranks;        /* 0 when unknown, as the run's (see struct nw_run_header) */
	int inplace;       /* 0 out-of-place, 1 in-place */
	double time_us;
	double algbw_gbs;
	double busbw_gbs;
	int64_t wrong;     /* mismatched elements; -1 when not checked (N/A) */
	int nrank_times;   /* 0 unless per-rank detail was gathered */
	struct nw_rank_time *rank_times; /* owned by the row */
	int niter;         /* per-iteration times recorded (-I 1), 0 when none */
	int iter_skip;     /* leading iterations the summary leaves out (-K) */
	double *iter_us;   /* niter times in us, slowest rank per iteration; owned by the row */
	/*
	 * How much the time moves with nothing changed: the relative spread
	 * (max - min) / mean of the per-launch times of three batches of the
	 * same launches, timed one after the other (bench; the two repeats at
	 * most 25 ms each); compare's noise. 0 when not measured.
	 */
	double noise;
};

/* nccl-tests' per-iteration summary (-I 1) of times[skip..n). */
struct nw_iter_stats {
	int n;             /* times summarised (n - skip of the row's) */
	double min, max, avg, p50, p95, p99, stdev, cv_pct; /* us, cv in % */
};

/* Where a run came from and what it ran on. Strings are "" when unknown. */
struct nw_run_header {
	char tool_version[32];
	char source[16];         /* "bench", "check", "import", "tune" */
	char backend[16];        /* "nccl", "mpi", or "nccl-tests" for imports */
	char nccl_version[32];   /* "2.28.9" */
	char nccl_path[512];
	char driver[32];         /* "580.159.04" */
	char cuda_driver[16];    /* "13.0" */
	char host[256];
	char gpus[512];          /* "2 x NVIDIA H200" */
	char cmdline[2048];
	char time[32];           /* ISO 8601 UTC */
	char input[512];         /* file an import came from */
	/*
	 * 0 when unknown (an nccl-tests output that does not say): never a
	 * count. JSON writes it as null, the history stores NULL, and compare
	 * neither compares nor groups on it.
	 */
	int nranks;
	int nhosts;
	double link_gbs;         /* bottleneck link, GB/s each way; 0 unknown */
	int rank;                /* process rank that filled the run (0 reports); not serialised */
	int nthreads, gpus_per_thread; /* this process's -t and GPUs per thread (table header); not serialised */
	json_t *extra;           /* optional object (fingerprint, settings); owned */
};

struct nw_run {
	struct nw_run_header h;
	struct nw_row *rows;
	size_t nrows, cap;
};

void nw_run_init(struct nw_run *run);
/* Frees rows, per-rank arrays and h.extra; leaves an empty, reusable run. */
void nw_run_release(struct nw_run *run);
/* Appends a copy of row (per-rank and per-iteration arrays are moved: they become the run's). */
struct nw_row *nw_run_add(struct nw_run *run, const struct nw_row *row);

/* Frees a row's per-rank and per-iteration arrays; the row stays, without them. */
void nw_row_release(struct nw_row *row);

/*
 * nccl-tests' per-iteration statistics of a row's times after its skipped
 * ones (population stdev; p95/p99 the ceil(n*p/100)-th smallest). 0, or
 * -1 when the row has no times past the skip.
 */
int nw_row_iter_stats(const struct nw_row *row, struct nw_iter_stats *st);

/* Fill time/algbw/busbw of a row from its op, size, nranks and time_us. */
void nw_row_compute_bw(struct nw_row *row);

/* Mean busbw over every row (both placements), as nccl-tests' footer. */
double nw_run_avg_busbw(const struct nw_run *run);
/* Whether run was ended early by a signal (its extra says "interrupted": true): it holds only the sizes before. */
int nw_run_interrupted(const struct nw_run *run);
/*
 * Why run is incomplete (its extra says "incomplete": true: an imported
 * output cut short, a row without its in-place half), or NULL when it is
 * not. The text belongs to run.
 */
const char *nw_run_incomplete(const struct nw_run *run);
/* The row of op with the highest busbw (the first of equals), or NULL when the run has none of op. */
const struct nw_row *nw_run_peak(const struct nw_run *run, const char *op);

/*
 * nccl-tests' text table. nw_nt_format_row writes one result line (no
 * newline) for an out-of-place row and its in-place twin (ip may be NULL:
 * the in-place columns are then left blank). Byte-identical to
 * nccl-tests 2.19's rows.
 */
void nw_nt_format_row(char *buf, size_t len, const struct nw_row *oop, const struct nw_row *ip);
void nw_nt_print_table_header(FILE *f);
/* The header of -I 1 tables: each placement with i_min i_max i_p99 i_cv% (rows with per-iteration times print them). */
void nw_nt_print_table_header_iter(FILE *f);
/* Either header, with nccl-tests' timestamp column (-S 1) when timestamps, "cputime" for "time" (-C 1) when cputime. */
void nw_nt_print_header(FILE *f, int per_iter, int timestamps, int cputime);
/* Does any row of run carry per-iteration times? */
int nw_run_has_iters(const struct nw_run *run);
/* "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X " */
void nw_nt_print_footer(FILE *f, int64_t wrong_total, double avg_busbw);

/* A row's per-iteration times as JSON: {"skipped_iterations", "min_us", "max_us", "p99_us", "cv_pct", "times_us"}. */
json_t *nw_row_iters_to_json(const struct nw_row *row);
/* What nw_row_iters_to_json wrote into row (iter_us allocated); nothing when pi is not such an object. */
void nw_row_iters_from_json(const json_t *pi, struct nw_row *row);

/* JSON: {"schema":"ncclwatch.results/1","run":{...},"results":[...]} */
json_t *nw_run_to_json(const struct nw_run *run, int per_rank);
/* Parse what nw_run_to_json wrote; -1 with err filled on a bad document. */
int nw_run_from_json(const json_t *doc, struct nw_run *run, char *err, size_t errlen);
int nw_run_write_json(const struct nw_run *run, FILE *f, int per_rank);

/* CSV: a header line, one line per row; with per_rank, one line per rank too. */
void nw_csv_print_header(FILE *f, int per_rank);
void nw_csv_print_row(FILE *f, const struct nw_row *row, int per_rank);
int nw_run_write_csv(const struct nw_run *run, FILE *f, int per_rank);

/* Fill tool_version, host, time and cmdline of a fresh header. */
void nw_header_fill_local(struct nw_run_header *h, const char *source, int argc, char **argv);

#endif
