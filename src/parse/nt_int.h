/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nt_int: internal to the nccl-tests reader, shared by its files and by
 * nothing else: nccltests.c (entry points), nt_stream.c (streams and their
 * tables), nt_text.c (text lines and rows), nt_header.c (header and footer
 * lines), nt_json.c (-J documents) and nt_jsonl.c (rccl-tests' records).
 * Names carry the prefix nt_.
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
#define NT_MAX_TOKENS 40     /* words of a text line */

/* A word of a line and its column. */
struct nt_tok {
	const char *s;
	size_t n;
	size_t col;
};

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
	int whole_rows;      /* text rows with both placements */
	int half_rows;       /* text rows with only their out-of-place half: cut short when the others have both */
	int have_oob;
	int64_t oob;
	int have_avg;
	double avg;
	int footer_read;     /* its one table's footer was read: a row now starts another table */
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

/* Streams and their tables (nt_stream.c). */

/* Forget what a stream said (its tables are released), keeping its tag. */
void nt_stream_reset(struct nt_stream *st);
/* Whether a stream's table has rows yet. */
int nt_stream_has_rows(const struct nt_stream *st);
/* An NCCL version code ("22809") as a version ("2.28.9") into buf; "" when it is not one. */
void nt_version_from_code(long code, char *buf, size_t len);
/* The collective of a program's path ("./build/all_reduce_perf" -> "all_reduce"); unknown names kept as they are. */
void nt_op_from_program(const char *s, size_t n, char *op, size_t len);
/* Add host h[0..n) to hosts (NT_MAX_HOSTS at most) unless it is there already. */
void nt_add_host(char hosts[][64], int *nhosts, const char *h, size_t n);
/* Count one more GPU named name[0..n) (trailing blanks dropped) on st. */
void nt_add_gpu(struct nt_stream *st, const char *name, size_t n);
/* Count a rank of the device list; returns 0 when it was listed already. */
int nt_note_rank(struct nt_stream *st, long long rank);
/* s[0..n) into dst (room for len bytes), cut to fit, always terminated. */
void nt_copy_bounded(char *dst, size_t len, const char *s, size_t n);
/*
 * A row after the footer ("Avg bus bandwidth") of the stream's one table:
 * that table becomes a run now, with its own footer, and the stream keeps
 * its header for the table the row starts, which has none of its own
 * (several processes' tables interleaved wait for the end, as before).
 */
void nt_stream_close_table(struct nt_ctx *c, struct nt_stream *st);
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

/* Text lines (nt_text.c). */

/* Split s[0..n) at blanks into at most max words (with their columns); -1 when there are more. */
int nt_tokenize(const char *s, size_t n, struct nt_tok *t, int max);
/* Whether a word is w. */
int nt_tok_is(const struct nt_tok *t, const char *w);
/* A word as a finite or infinite double (the whole word must be read): 0, or -1. */
int nt_tok_double(const struct nt_tok *t, double *v);
/* A word of decimal digits (a leading '-' when allow_sign) as a long long: 0, or -1. */
int nt_tok_ll(const struct nt_tok *t, long long *v, int allow_sign);
/* A word into dst (room for len bytes), cut to fit. */
void nt_tok_copy(const struct nt_tok *t, char *dst, size_t len);
/* A result row of text into st's tables: 0 when it was one, -1 when not. */
int nt_parse_row(struct nt_stream *st, const char *s, size_t n);
/* One line of text output (line[len] is '\0'; the line may be changed). */
void nt_process_line(struct nt_ctx *c, char *line, size_t len);

/* Header and footer lines (nt_header.c). */

/* A header or footer line (s: after its '#', if it had one). */
void nt_parse_comment(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n);
/* An RCCL banner, or a header or footer line whose '#' was lost: read, and 1; 0 when s is neither. */
int nt_text_header_line(struct nt_ctx *c, struct nt_stream *st, const char *s, size_t n);

/* -J documents (nt_json.c). */

/* One or more -J documents, or rccl-tests' records, from buf[0..len) into c; returns 0. */
int nt_parse_json(struct nt_ctx *c, const char *buf, size_t len);
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
