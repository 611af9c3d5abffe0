/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view: the table `ncclwatch top` shows, built from the loaded stats files
 * and two samples (rates over the last interval), then filtered and sorted.
 * One row per communicator x rank x op (all size buckets together). The
 * module only computes; cmd/top.c draws it (ncurses or plain text).
 */
#ifndef NW_VIEW_H
#define NW_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "export/sample.h"
#include "export/statsfile.h"

enum nw_view_sort {
	NW_VIEW_SORT_COMM,   /* communicator, op, rank (the default) */
	NW_VIEW_SORT_BUSBW,  /* busbw, highest first */
	NW_VIEW_SORT_RATE,   /* calls/s, highest first */
	NW_VIEW_SORT_TIME,   /* p50 time, longest first */
	NW_VIEW_SORT_BUSY,   /* busy %, highest first */
	NW_VIEW_NSORT
};

struct nw_view_opts {
	enum nw_view_sort sort;
	int reverse;        /* the sort's order turned around (ties stay in communicator order) */
	const char *op;     /* show only ops whose name contains this; NULL: all */
	const char *comm;   /* show only comms whose hex id starts with, or name contains, this */
	int all;            /* also show stale files (dead processes) */
	size_t late_window; /* collectives compared for lateness (0: all in the rings) */
};

struct nw_view_row {
	uint64_t comm_hash;
	char comm_name[64];
	char host[64];
	int32_t pid;
	int rank, nranks;
	unsigned op;              /* enum nws_op */
	enum nw_sf_live live;
	uint64_t calls, bytes;    /* since the rank started */
	double calls_per_s;       /* over the interval (or the file's life, see `interval`) */
	int src;                  /* nws_src of the times, -1 when none was timed */
	double busbw_gbs;         /* GB/s (1e9), valid when src >= 0 */
	double p50_us, p99_us;    /* NAN when not timed */
	double busy;              /* 0..1, -1 unknown (per comm rank, same for its ops) */
	double late_us;           /* mean lateness vs the earliest rank; NAN unknown */
	int straggler;            /* this rank arrives last most: the others wait for it */
	int interval;             /* 1: rates over the last interval; 0: over the file's life */
	int hung;                 /* its communicator is hung (rows of hung comms come first) */
};

/* A hung communicator, as one line of text (docs/hang.md). */
struct nw_view_hang {
	uint64_t comm_hash;
	char text[512];           /* "HUNG: communicator ... at all_reduce seq N: not arrived ..." */
};

/* Exposed communication of one process (NCCLWATCH_OVERLAP=1; every file of the process carries the same). */
struct nw_view_ovl {
	char host[64];
	int32_t pid;
	int rank, nranks;         /* in the largest communicator of the process shown */
	char comm_name[64];
	struct nws_overlap o;     /* copy of the file's figures */
};

/* Stats files per writer (nws_mode_index: profiler interface 1 to 6, the interposer), and what each cannot give. */
struct nw_view_modes {
	size_t n[NWS_NMODES];
	uint32_t blind[NWS_NMODES];   /* NWS_BLIND_* over its files */
	unsigned nccl[NWS_NMODES];    /* the interposer's: the NCCL version code it wraps (of the last file) */
};

/* Count the file whose header is h. */
void nw_view_modes_add(struct nw_view_modes *m, const struct nws_header *h);

/*
 * The note on what the files of writer mode i cannot give: "profiler v3
 * (NCCL 2.26), 4 files, cannot see: ...", "interposer (NCCL 2.21.5), 2
 * files, cannot see: ..."; 0 when they give everything (or there are
 * none). top and hang print it.
 */
int nw_view_mode_note(char *buf, size_t len, const struct nw_view_modes *m, unsigned i);

/* Windows in a row with over 90% of NCCL time exposed before top says "collectives run alone". */
#define NW_VIEW_ALONE_WINDOWS 3

struct nw_view {
	struct nw_view_row *rows; /* owned */
	size_t n;
	size_t nfiles, nlive, nfinished, ndisabled, nstale, nbad, nhidden;
	size_t nsolo;             /* shown files of one-rank communicators with no ops */
	uint64_t ngraph;          /* calls captured into CUDA graphs in the shown files (replays unseen) */
	struct nw_view_modes modes; /* shown files per writer (profiler interface, interposer) */
	struct nw_view_hang *hangs; /* hung communicators among the shown ones; owned */
	size_t nhangs;
	struct nw_view_ovl *ovl;  /* processes that measure (or tried to measure) exposed communication; owned */
	size_t novl;
};

/* Parse a sort key name ("busbw", "rate", "calls", "time", "busy", "comm"); -1 unknown. */
int nw_view_sort_find(const char *name);
const char *nw_view_sort_name(enum nw_view_sort s);

/*
 * Build v from set. now is a sample of set; prev an older one (NULL: rates
 * over each file's life, created_ns to updated_ns). v is zeroed first;
 * free with nw_view_release. Communicators the cross-rank diagnosis finds
 * hung (model/progress) are listed in v->hangs and their rows come first.
 */
void nw_view_build(const struct nw_sf_set *set, const struct nw_sample *now,
                   const struct nw_sample *prev, const struct nw_view_opts *o, struct nw_view *v);
void nw_view_release(struct nw_view *v);

/*
 * Text of the table, shared by the terminal view and --once: the column
 * header and one row (no newline), each at most NW_VIEW_LINE bytes. The
 * straggler's rank carries a '*' ("3*"); a stale rank's state says "stale".
 */
#define NW_VIEW_LINE 256
void nw_view_format_header(char *buf, size_t len);
/* bytes for people: "8 B", "82.5 MiB", "1023 KiB" (1024-based, at most 8 characters below 1000 TiB) */
void nw_view_format_bytes(uint64_t bytes, char *buf, size_t len);
void nw_view_format_row(char *buf, size_t len, const struct nw_view_row *r);
/*
 * The same for narrow terminals (about 90 columns): communicator id cut to
 * its first 8 hex digits; no name, state, host, calls or bytes columns.
 */
void nw_view_format_header_compact(char *buf, size_t len);
void nw_view_format_row_compact(char *buf, size_t len, const struct nw_view_row *r);
/*
 * One line on a process's exposed communication: its share of wall time,
 * NCCL and compute kernel time in the last window, or why it is off.
 */
void nw_view_format_ovl(char *buf, size_t len, const struct nw_view_ovl *p);
/*
 * The diagnosis when p's collectives have run alone (over 90% of NCCL time
 * exposed) for NW_VIEW_ALONE_WINDOWS windows in a row: 1 with the text in
 * buf, 0 (buf untouched) otherwise.
 */
int nw_view_alone_note(char *buf, size_t len, const struct nw_view_ovl *p);
/* A duration in us as "850ns", "12.3us", "4.56ms", "1.20s"; "-" for NAN. */
void nw_view_format_us(double us, char *buf, size_t len);

#endif
