/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ncclog_int: internal to the NCCL log analyser (src/parse/ncclog*.c);
 * nothing else includes it, the public API is parse/ncclog.h. It holds the
 * caps, the analysis state (struct nw_log and its tables) and the helpers
 * the analyser's files share. No ncclog_int.c: each declaration below is
 * grouped under the file that defines it.
 *
 * Where a line goes (and where to add to the analyser):
 *   ncclog.c         feeding: lines, launcher prefixes, NCCL's own prefix
 *                    (its host and process), then by level to the readers
 *   ncclog_info.c    NCCL INFO lines: versions, networks, graphs, algorithms,
 *                    environment, error traces
 *   ncclog_comm.c    INFO lines about communicators, ranks, channels, rings,
 *                    trees and the transport of each peer pair
 *   ncclog_other.c   lines that are not NCCL's: PyTorch, nccl-tests, crashes
 *   ncclog_nwline.c  the ncclwatch plugin's periodic lines (bandwidth over time)
 *   ncclog_errors.c  WARN and error lines grouped by cause, and the facts the
 *                    rules draw from error text
 *   ncclog_facts.c   facts derived once from the tables, for rules and report
 *   ncclog_rules.c   the diagnosis rules: one table of small pure functions
 *   ncclog_report.c  the JSON report
 *   ncclog_tables.c  the hash map and growable arrays
 *   ncclog_text.h    inline text helpers for the hot path
 */
#ifndef NW_NCCLOG_INT_H
#define NW_NCCLOG_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "parse/ncclog.h"

/* Caps: every table stops growing at these; what is dropped is counted. */
#define LG_MAX_LINE     65536
#define LG_MAX_HOSTS    4096
#define LG_MAX_PROCS    8192
#define LG_MAX_COMMS    1024
#define LG_MAX_RANKS    (1u << 17)
#define LG_MAX_PAIRS    (1u << 17)
#define LG_MAX_TRANSPORTS 64
#define LG_MAX_GRAPHS   32
#define LG_MAX_ALGOS    128
#define LG_MAX_ENV      256
#define LG_MAX_GROUPS   512
#define LG_MAX_TIMEOUTS 64
#define LG_MAX_DUPS     16
#define LG_NAME         64
#define LG_QUOTE        320  /* a line kept as the evidence of a fact */
#define LG_QUOTE_COMM   160  /* a communicator's lines kept as evidence (a table of up to LG_MAX_COMMS) */
#define LG_MAX_EVIDENCE 4    /* lines quoted by one diagnosis */

/* ---- storage (ncclog_tables.c): a capped open-addressing map from two 64-bit keys to a 32-bit value, arrays ---- */

struct lg_htab {
	uint64_t *ka, *kb;
	uint32_t *val;
	uint8_t *used;
	size_t cap, n, max;
};

/* Caller-owned map that grows (keeping at most half the slots used) up to max entries. */
void lg_ht_init(struct lg_htab *t, size_t max);
/* Frees what the map holds; the struct stays, to be initialised again. */
void lg_ht_release(struct lg_htab *t);
/*
 * The value slot of (a, b). With create, a missing key is inserted with
 * value UINT32_MAX and *created set (created may be NULL); NULL when
 * missing (or the map is full). The pointer is valid until the next insert.
 */
uint32_t *lg_ht_get(struct lg_htab *t, uint64_t a, uint64_t b, int create, int *created);
/* Make room for element n of an array of elem-sized items (zero-filled), doubling its capacity; returns the array. */
void *lg_grow(void *p, size_t *cap, size_t n, size_t elem);
/* FNV-1a of s[0..n). */
uint64_t lg_hash_str(const char *s, size_t n);

/* ---- the analysis state ---- */

/* The first topology dump NCCL printed on a host ("=== System : maxBw 48.0 totalBw 370.8 ===", then its tree). */
struct lg_topo {
	uint32_t proc;          /* the process whose dump is read (one per host) */
	uint8_t state;          /* 0 none, 1 reading, 2 done */
	uint8_t nvswitch;       /* an "NVS/" node */
	uint16_t gpus, nics, nets, nvl_peers;
	float max_bw, total_bw, nvl_bw, net_bw, gpu_pci_bw;
};

struct lg_host {
	char name[LG_NAME];
	uint8_t nvlink, ib_absent, socket_net;
	char ib_devs[96];
	char socket_ifs[96];
	char network[32];       /* "Using network X": IB, Socket, Libfabric, AWS Libfabric, IBext... */
	char ofi_provider[16];  /* aws-ofi-nccl's "Selected Provider is efa (found 16 nics)" */
	int ofi_nics;           /* -1 not said */
	char net_plugin[48];    /* the NET plugin's name and version ("aws-ofi-nccl 1.12.1-aws", "Libfabric (v10)") */
	char net_line[LG_QUOTE];/* the line that said which network the host uses (or that it found no IB device) */
	struct lg_topo topo;
};

struct lg_proc {
	uint32_t host;
	int pid;
	char version[40];
	long cuda_driver;
	uint8_t size1;
	uint64_t devs;      /* the devices ("[3]" of its lines, 0..63) it wrote NCCL lines for */
	uint64_t devs_used; /* those of them it ran a communicator on (init, rank or connection lines) */
};

struct lg_comm {
	uint64_t id;
	int has_id;
	int nranks, nnodes, local_ranks;
	int ranks_seen, init_started, init_completed;
	int nchannels, ring_lines, tree_lines;
	char ring[96];
	char tree[96];   /* the first "Trees [0] ..." line's first channel */
	char first_line[LG_QUOTE_COMM]; /* its first init or rank line (evidence) */
	char start_line[LG_QUOTE_COMM]; /* an "Init START" line of a rank that has not logged Init COMPLETE (rank_init) */
	int start_rank;
	uint8_t hostless;          /* lines of it came without their host: which ranks the log shows is not known */
};

struct lg_pair {
	uint32_t comm;
	int src, dst;
	uint32_t transport;
	uint32_t connections;
	uint64_t nics;      /* NIC indexes (the N of NET/IB/N, 0..63) its connections went through */
};

#define LG_TR_SAMPLES 4
struct lg_transport {
	char name[LG_NAME];
	/* the first connection lines of distinct pairs, to quote the one a rule rests on */
	size_t nsamples;
	struct { uint32_t comm; int src, dst; char line[LG_QUOTE]; } samples[LG_TR_SAMPLES];
};

struct lg_graph {
	int pattern, nchannels;
	char type[24];
	char bw[40];
	uint32_t count;
};

struct lg_algo {
	char op[24], algo[20], proto[16];
	uint64_t calls, min_bytes, max_bytes;
};

struct lg_env {
	char name[48], value[96];
	uint32_t lines;
};

enum lg_group_kind { G_NCCL_WARN, G_NCCL_TRACE, G_PYTORCH, G_NCCLTESTS, G_OTHER_ERROR, G_LIBFABRIC, G_NKINDS };

struct lg_group {
	enum lg_group_kind kind;
	char cause[160];
	char first[320];
	char first_host[LG_NAME];
	char last_error[200];      /* the line after PyTorch's "Last error:" (the cause), "" none */
	uint64_t count;
	uint32_t first_host_idx;
	uint8_t several_hosts;
	uint8_t nsites;            /* traces: the distinct "file.cc:N" places grouped here (first 8) */
	uint16_t sites[8];
};

/* A process's ring order and tree on a device before the communicator's line names it (NCCL 2.9 prints that line last). */
struct lg_pending {
	uint32_t proc;
	int dev;
	int nchannels, tree_lines;
	char ring[96], tree[96];
};
#define LG_MAX_PENDING 1024

struct lg_timeout {
	int rank;
	long long seq;
	char op[24];
	long long timeout_ms, ran_ms;
};

struct lg_dup {
	uint32_t comm;
	int rank_a, rank_b;
	uint32_t host;
	uint64_t bus;
	char line[LG_QUOTE];   /* the line of rank_b that named the GPU rank_a had */
};

/*
 * Facts the diagnosis rules rest on, each read from some kind of line: how
 * many lines said it, the host of the first (when the line named one) and
 * that first line itself, which the diagnosis quotes. A rule that has no
 * fact to quote does not fire.
 */
enum lg_fact {
	/* setup and usage errors named by their text */
	F_NO_IFACE, F_SHM_FAIL, F_DUP_GPU_WARN, F_RENDEZVOUS, F_SOCK_LOOPBACK, F_COLL_MISMATCH, F_DRIVER_OLD,
	F_COLLNET_FAIL, F_RING_LOOP, F_SMEM_EXCEED,
	/* root causes named by error text */
	F_BUS_ERROR, F_SEGV, F_OOM, F_SOCK_CONNECT, F_NVLS_FAIL, F_SYSFS, F_PEER_CLOSED, F_IB_STATUS,
	/* GPUDirect RDMA off: for a GPU and NIC too far apart, or for a NIC (no way to register GPU memory) */
	F_GDR_DISTANCE, F_GDR_HCA,
	/* libfabric and aws-ofi-nccl (NET/OFI) */
	F_OFI_NO_PROVIDER, F_OFI_COMPLETION, F_OFI_SETUP, F_OFI_TCP,
	/* communicators, sizes, hangs */
	F_ABORT, F_SIZE1, F_NT_RANK0, F_WATCHDOG, F_RAS_MISMATCH, F_RAS_MISSING, F_RAS_STATUS, F_PLUGIN_HANG,
	/* error codes by ncclResult_t (F_ERR + 1 .. F_ERR + 7) */
	F_ERR, F_ERR_LAST = F_ERR + 7,
	F_NFACTS
};

struct lg_fact_rec {
	uint64_t n;
	uint32_t host;           /* host of the first line, UINT32_MAX unknown */
	char line[LG_QUOTE];     /* the first line (its message, as the log printed it) */
};

/* One line a diagnosis rests on, copied (with its host, "" unknown). */
struct lg_evidence {
	size_t n;
	struct { char line[LG_QUOTE]; char host[LG_NAME]; } e[LG_MAX_EVIDENCE];
};

/* ---- the ncclwatch plugin's periodic lines (ncclog_nwline.c) ---- */

#define LG_MAX_NWSERIES 1024  /* communicator x rank series */
#define LG_NW_OPS       8     /* ops per series */
#define LG_NW_SAMPLES   4096  /* busbw samples kept per op for the median (min and max see all) */
#define LG_NW_TOP       4     /* ops in one line's top= (the plugin writes 2) */

/* One "key=value" token of a line (a token without '=' has vn 0 and v at its end). */
struct lg_kv {
	const char *k, *v;
	size_t kn, vn;
};

/* What one "NCCLWATCH v=1 ..." line says; figures absent from it are 0 (busy_pct, exposed_pct: -1). */
struct lg_nwline {
	uint64_t comm;
	char name[49];
	double t, rank, nranks, interval_s, ops, bytes, busy_pct, slow_ops, exposed_pct, hung;
	int ntop;
	struct { char op[24]; double gbs; } top[LG_NW_TOP];
};
#define LG_NW_HAVE_T    (1u << 0)
#define LG_NW_HAVE_RANK (1u << 1)
#define LG_NW_HAVE_COMM (1u << 10)

struct lg_nwop {
	char op[24];
	uint64_t n;            /* samples seen */
	double min, max;
	float *samples;        /* the first LG_NW_SAMPLES, owned */
	size_t cap;
};

/* The lines of one communicator and rank: a bandwidth-over-time summary. */
struct lg_nwseries {
	uint64_t comm;
	int rank, nranks;
	char name[49];
	double first_t, last_t, first_hung_t;
	uint64_t lines, hung_lines, ops, bytes, slow_ops;
	double busy_min, busy_max;   /* busy_min < 0: no line said */
	struct lg_nwop bw[LG_NW_OPS]; /* busbw per op, in order of first appearance */
	size_t nbw;
};

/*
 * Split s[0..n) at blanks into at most max tokens "key=value" (pointers
 * into s, nothing copied or allocated); returns how many.
 */
size_t lg_kv_split(const char *s, size_t n, struct lg_kv *kv, size_t max);
/* A plain decimal "123" or "12.5" (at most 18 integer and 9 fraction digits) into *out; -1 otherwise. */
int lg_kv_num(const char *v, size_t n, double *out);
/* Read one plugin line (from "NCCLWATCH"); 0, or -1 when it is malformed or lacks t, comm or rank. */
int lg_nwline_parse(const char *s, size_t n, struct lg_nwline *l);
/* A plugin line met in the log (after NCCL's "NCCL INFO " or on its own): added to its series, or counted bad. */
void lg_nw_line(struct nw_log *lg, const char *s, size_t n);
/* Free the series (the log state stays usable). */
void lg_nw_release(struct nw_log *lg);
/* Median of the kept samples of o (sorts them in place). */
double lg_nw_median(const struct lg_nwop *o);
/* The report's "bandwidth" array: one object per series (docs/logscan.md); caller owns it. */
json_t *lg_nw_report(const struct nw_log *lg);

struct nw_log {
	/* counters */
	uint64_t lines, bytes, nccl_lines, other_lines, unparsed, long_lines, blank_lines;
	/* what the input looks like when it is no log: nccl-tests and topology-matrix lines, binary start */
	uint64_t nt_table_lines, topo_lines;
	/* one more than the highest rank number any line showed (connections, ring orders, nccl-tests' device list) */
	int ranks_hint;
	int binary, utf16;
	uint64_t dropped; /* table entries that did not fit */
	json_t *files;
	/* tables */
	struct lg_host *hosts;
	size_t nhosts, cap_hosts;
	struct lg_htab host_idx;
	struct lg_proc *procs;
	size_t nprocs, cap_procs;
	struct lg_htab proc_idx;
	struct lg_comm *comms;
	size_t ncomms, cap_comms;
	struct lg_htab comm_key, comm_ptr, comm_dev;
	struct lg_htab rank_idx, gpu_idx;
	struct lg_htab conn_host;  /* (comm, rank) -> host of the process that printed the rank's own connection lines */
	uint32_t *rank_host;
	uint64_t *rank_bus;
	uint8_t *rank_flags;
	size_t nranks, cap_rank_host, cap_rank_bus, cap_rank_flags;
	struct lg_pair *pairs;
	size_t npairs, cap_pairs;
	struct lg_htab pair_idx;
	struct lg_transport transports[LG_MAX_TRANSPORTS];
	size_t ntransports;
	struct lg_graph graphs[LG_MAX_GRAPHS];
	size_t ngraphs;
	struct lg_algo algos[LG_MAX_ALGOS];
	size_t nalgos;
	struct lg_env envs[LG_MAX_ENV];
	size_t nenvs;
	struct lg_group *groups;
	size_t ngroups, cap_groups;
	struct lg_htab group_idx;
	uint64_t groups_overflow;
	struct lg_timeout timeouts[LG_MAX_TIMEOUTS];
	size_t ntimeouts;
	struct lg_dup dups[LG_MAX_DUPS];
	size_t ndups;
	/* facts for the diagnosis rules */
	struct lg_fact_rec facts[F_NFACTS];
	long long rdv_joined, rdv_expected; /* c10d store: "N/M clients joined" (M 0 when not seen) */
	int world_hint;            /* the job's size as the launcher says it ("Starting with 2 processes"); 0 unknown */
	int ras_nodes, ras_gpus;   /* NCCL RAS's job summary: nodes and GPUs in all; 0 unknown */
	int ras_job_row;           /* the job summary's header was read: its numbers come next */
	char ras_mismatch[200];    /* NCCL RAS status: "different AllGather operation counts; 30 ranks ... 640; ..." */
	/* NCCL RAS's communicator table and its Errors blocks */
	int ras_table;             /* 1: after the table's header, 2: after its second header line (rows follow) */
	int ras_groups, ras_groups_ok;
	char ras_block[16];        /* the Errors/Warnings block being read ("DEAD", "INCOMPLETE"), "" none */
	int ras_dead, ras_missing; /* processes RAS names considered dead, or missing its data */
	int ib_status;             /* the first IB completion status seen (status=N), -1 none */
	char ofi_error[48];        /* the first NET/OFI completion error: "RC: 113. Error: 2 (UNDELIVERABLE)" */
	char ofi_empty_provider[16]; /* libfabric's "provider efa output empty list": that provider */
	/* communicators aborted ("comm 0x.. rank R ... - Abort COMPLETE") */
	int abort_ranks[8];
	size_t nabort_ranks;
	char last_error_line[LG_QUOTE]; /* the last WARN or error line read, "" none */
	char abort_after[LG_QUOTE];     /* the error line read last before the first abort, "" none */
	/* Ray's log deduplication: lines that ended "[repeated Nx across cluster]", and the lines they stood for */
	uint64_t ray_dedup_lines, ray_folded_lines;
	/* lines the topology dump was read from, and "Using network" lines without a host (pasted cut) */
	char hostless_net[32];
	char hostless_provider[16];
	int hostless_nics;
	uint64_t tracebacks;
	int want_last_error;       /* the line before ended with "Last error:" */
	char last_error_prefix[64];/* what stood before "Last error:" on it ("node1: "), also before the cause */
	int nvls_channels_max, nvls_available, collnet_connected;
	char torch_nccl_version[40];
	/* nccl-tests "#  Rank  0 ... Pid P on HOST" printed by several processes */
	uint64_t nt_rank0_keys[16];
	size_t nt_rank0;
	/* the ncclwatch plugin's periodic lines */
	struct lg_nwseries *nw;
	size_t nnw, cap_nw;
	uint64_t nw_lines, nw_bad;
	/* its distinct devices (host, pid, device), the first 1024: ranks even when each process says "Rank 0" */
	uint64_t nt_dev_keys[1024];
	size_t nt_ndev;
	/* last report */
	int nerrors;
	/* line being fed: where it came from */
	char tag[48];
	/* the last process seen under each launcher tag ("1,0"), for banners printed without NCCL's prefix */
	struct { char tag[48]; uint32_t proc; } tag_procs[16];
	size_t ntag_procs;
	/* "NCCL version X" banners that no process could be given (no NCCL line before them, nor after under their tag) */
	char banners[8][40];
	size_t nbanners;
	/* banners printed before any NCCL line of their tag: the process whose lines follow gets them */
	struct { char tag[48]; char version[40]; } pending_banners[8];
	size_t npending_banners;
	/* what NCCL 2.9-style logs say of a communicator before its only "comm 0x.. - Init COMPLETE" line: per process and device */
	struct lg_htab pend_idx;
	struct lg_pending *pend;
	size_t npend, cap_pend;
	/* a one-entry cache of the last host and process looked up */
	uint32_t last_host;
	int last_pid;
	uint32_t last_proc;
	int last_valid;
	uint32_t cached_host;
	char cached_host_name[LG_NAME];
	size_t cached_host_len;
};

/*
 * A bare "NCCL version 2.18.3+cuda12.2" banner (NCCL at WARN/VERSION level,
 * or up to about 2.21 at INFO): the version of the process whose NCCL lines
 * came before it under the same launcher tag. Returns 1 when s was one.
 */
int lg_banner_line(struct nw_log *lg, const char *s, size_t n);
/* Length of a leading "file.cc:123" (a source place NCCL prints), 0 when s starts with none. */
size_t lg_file_line(const char *s, size_t n);
/*
 * A line that says fact f (s[0..n): its message; host may be UINT32_MAX):
 * counted, and kept when it is the first (with its host).
 */
void lg_fact(struct nw_log *lg, enum lg_fact f, uint32_t host, const char *s, size_t n);
/* Lines that said fact f so far. */
static inline uint64_t lg_nfact(const struct nw_log *lg, enum lg_fact f)
{
	return lg->facts[f].n;
}
/* Note that process proc printed the line being fed under the current launcher tag. */
void lg_tag_proc(struct nw_log *lg, uint32_t proc);
/* Give process proc the banner printed before any NCCL line of the current launcher tag, if there is one. */
void lg_take_banner(struct nw_log *lg, uint32_t proc);
/* Banners no process's lines followed: kept as banners without a process. */
void lg_banners_unclaimed(struct nw_log *lg);

/* Note a host that a line named outside NCCL's prefix (nccl-tests' device list). */
void lg_host_add(struct nw_log *lg, const char *s, size_t n);

/* Note that a line showed rank number r (ignored when out of range). */
void lg_note_rank(struct nw_log *lg, long long r);

/* ---- WARN and error lines (ncclog_errors.c) ---- */

/* ncclResult_t names by code (0..7). */
extern const char *const lg_nccl_results[8];
/*
 * Count msg[0..n) in the group of its cause (numbers and addresses
 * ignored); host may be UINT32_MAX. Returns the group (valid until the next
 * group is added), NULL when the table is full.
 */
struct lg_group *lg_add_group(struct nw_log *lg, enum lg_group_kind kind, uint32_t host, const char *msg, size_t n);
/* Whether a group's cause is a WARN that NCCL or libfabric print on healthy machines. */
int lg_benign(const char *cause);
/* Facts that the diagnosis rules need, from any error or warning text (host: of the line, UINT32_MAX unknown). */
void lg_classify(struct nw_log *lg, uint32_t host, const char *s, size_t n);
/* A libfabric line ("libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> ..."); 1 when s was one. */
int lg_libfabric_line(struct nw_log *lg, const char *s, size_t n);
/* The message of an "NCCL WARN" line (after the level), from host (may be UINT32_MAX). */
void lg_warn_line(struct nw_log *lg, uint32_t host, const char *msg, size_t n);

/* ---- line readers ---- */

/* Where an NCCL line came from, by its prefix "host:pid:tid [dev] ": table indexes (UINT32_MAX when a table was full) and the device. */
struct lg_from {
	uint32_t host, proc;
	int dev;
};

/*
 * The readers of NCCL INFO lines: each returns 1 when the line was of its
 * kind (recorded or not), 0 to let another reader try it.
 * ncclog_comm.c: "ncclCommInitRank..." and "comm 0x.. rank R nranks N ..." lines.
 */
int lg_info_comm(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n);
/* ncclog_comm.c: "Channel ..." lines: a connection between two ranks ("via"), or the ring order. */
int lg_info_channel(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n);
/* ncclog_comm.c: "Ring ..." lines (before NCCL 2.5). */
int lg_info_ring(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n);
/* "CollNet 05/0 : 5 [receive] via COLLNET/...": a rank's connection to the collective network. */
int lg_info_collnet_channel(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n);
/* ncclog_comm.c: "Tree ..." and "Trees [0] ..." lines. */
int lg_info_tree(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n);
/* ncclog_info.c: one "NCCL INFO" message (s: after the level), to the reader of its kind. */
void lg_info_line(struct nw_log *lg, const struct lg_from *from, const char *s, size_t n);
/* ncclog_other.c: a line that is not NCCL's (launcher prefixes already stripped). */
void lg_other_line(struct nw_log *lg, const char *s, size_t n);

/* ---- facts derived once for the rules and the report (ncclog_facts.c) ---- */

enum lg_tclass { T_P2P, T_SHM, T_SOCKET, T_IB, T_NET_OTHER, T_NVLS, T_COLLNET, T_OTHER, T_NCLASS };
extern const char *const lg_tclass_names[T_NCLASS];

struct lg_tstat {
	uint64_t pairs, connections, intra, inter, gdr;
	uint64_t nics;      /* every NIC index its pairs used */
	const struct lg_pair *example;
};

struct lg_facts {
	struct lg_tstat t[LG_MAX_TRANSPORTS];
	uint64_t class_pairs[T_NCLASS], class_intra[T_NCLASS], class_inter[T_NCLASS], ib_gdr_pairs;
	int max_nranks;
	size_t size1_procs;
	int any_nvlink, any_ib_devs;
	const char *nvlink_host, *ib_host;
};

/* The class of a (normalised) transport name. */
enum lg_tclass lg_transport_class(const char *name);
/* 1: both ranks of a pair on one host, 0: on two hosts, -1: unknown. */
int lg_pair_same_node(const struct nw_log *lg, const struct lg_pair *p);
/* Per-transport and per-class pair counts, largest communicator, NVLink and IB presence; f is caller-owned and points into lg. */
void lg_compute_facts(const struct nw_log *lg, struct lg_facts *f);
/* The NCCL_* variable name as set by the environment (its first value), or NULL. */
const struct lg_env *lg_env_find(const struct nw_log *lg, const char *name);

/* ---- diagnosis rules (ncclog_rules.c) ---- */

/*
 * Rule i of the table (the order of nw_log_rules()) over lg and f: 1 when
 * it fires, with its message in msg; 0 when it does not (or i is past the
 * table's end). A new rule is one function and one row in that table.
 */
int lg_rule_check(size_t i, const struct nw_log *lg, const struct lg_facts *f, char *msg, size_t len,
                  struct lg_evidence *ev);
/* Rule i's cause keyword for this log (nccl-error's depends on the error codes seen). */
const char *lg_rule_cause(size_t i, const struct nw_log *lg);

#endif
