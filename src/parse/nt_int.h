/*
 * nt_int: what the nccl-tests reader (nccltests.c) shares with its JSON
 * lines reader (nt_jsonl.c): the streams a file's tables are rebuilt on.
 */
#ifndef NW_PARSE_NT_INT_H
#define NW_PARSE_NT_INT_H

#include <stdint.h>

#include <jansson.h>

#include "model/result.h"
#include "parse/nccltests.h"

#define NT_MAX_STREAMS 64    /* launcher streams ("[1,3]<stdout>:") kept apart */
#define NT_MAX_SUB 64        /* processes repeating the same table in one stream */
#define NT_MAX_HOSTS 16
#define NT_MAX_GPUNAMES 8

struct nt_gpu {
	char name[96];
	int n;
};

/* What one output stream has said so far about the run it is printing. */
struct nt_stream {
	char tag[48];
	struct nw_run *sub;  /* one table per process printing it, NT_MAX_SUB at most */
	int nsub, cap_sub;
	char op[24];
	char cmd_op[24];     /* from a command line pasted above the table ("mpirun ... ./all_gather_perf"): used when nothing else says the op */
	char nt_version[32];
	int nccl_code;
	long nthread, ngpus, iters, warmup, validation, graph;
	int ranks_seen[64];  /* distinct rank numbers of the device list (first 64) */
	int nranks_seen;
	long nranks_declared;   /* ncclwatch's own "# Using devices: ... (N ranks)", rccl-tests JSON's ranks */
	long nnodes_declared;   /* rccl-tests JSON's "nodes" (0: not said) */
	int dup_ranks;       /* Rank lines whose number was already listed */
	uint64_t ids[256];   /* distinct devices (host, pid, device) of the device list (first 256) */
	int nids;
	char hosts[NT_MAX_HOSTS][64];
	int nhosts;
	struct nt_gpu gpus[NT_MAX_GPUNAMES];
	int ngpunames;
	int error_column;
	int root_column;     /* the header names a root column: rows without one lack columns */
	int short_rows;      /* rows that lacked columns, left out */
	int have_oob;
	int64_t oob;
	int have_avg;
	double avg;
	char pending[1024];  /* a row cut by NCCL log lines, rebuilt piece by piece */
	size_t plen;
	int rccl;            /* rccl-tests, or RCCL/HIP banners */
	int no_footer;       /* the format has none (rccl-tests JSON lines): its runs are not cut for lacking one */
	char rccl_version[48];
	char start_time[32]; /* -J: what the file says of the run, never this process's */
	char cmdline[1024];
	json_t *env;         /* -J "env" as an object; owned */
};

/* One reading of an input: the runs found so far, the streams still being read. */
struct nt_ctx {
	const char *name;
	struct nw_run *runs;
	size_t nruns, cap;
	size_t unparsed;
	struct nt_stream *streams[NT_MAX_STREAMS];
	int nstreams;
	char known_hosts[NT_MAX_HOSTS][64]; /* hosts named at the start of NCCL log lines */
	int nknown;
	struct nw_nt_seen *seen; /* where a device list without a table is told (may be NULL) */
	char cmd_op[24];     /* the op of the last command line seen ("./build/all_gather_perf -b 8"), for tables after it */
};

/* The stream of a launcher tag, created empty when new (the first one when there are too many). */
struct nt_stream *nt_get_stream(struct nt_ctx *c, const char *tag);
/* End of a stream's run: its tables become runs of c (headers filled), and the stream is emptied for the next. */
void nt_stream_finish(struct nt_ctx *c, struct nt_stream *st);
/*
 * Add a size's out-of-place and in-place rows (either may be NULL) to the
 * first table of st whose sizes are still below it (a new table when
 * none is); raw: the old "error" values, or NULL. Per-iteration arrays of
 * the rows become the table's. -1 when there are too many tables.
 */
int nt_add_rows(struct nt_stream *st, const struct nw_row *oop, const struct nw_row *ip, char raw[2][24]);
/* A string member of a JSON object, or NULL. */
const char *nt_jstr(const json_t *o, const char *k);
/* A number member of a JSON object, or dflt. */
double nt_jnum(const json_t *o, const char *k, double dflt);

/* rccl-tests' JSON lines ("--output_file", one object per size and placement), read in file order. */
struct nt_jsonl {
	struct nw_row oop;   /* an out-of-place row waiting for its in-place twin */
	int have_oop;
	char name[32];       /* the collective of the run being read ("AllReduce") */
	size_t records;      /* records read so far */
};

/* Whether a JSON value is one rccl-tests record (an object with "name", "size" and "busBw" or "inPlace"). */
int nt_jsonl_is_record(const json_t *v);
/* One record into c: a new run when its collective differs from the one before; a bad record is counted unparsed. */
void nt_jsonl_add(struct nt_ctx *c, struct nt_jsonl *jl, const json_t *rec);
/* The end of the records (or of a run of them): the run being read is finished. */
void nt_jsonl_end(struct nt_ctx *c, struct nt_jsonl *jl);

#endif
