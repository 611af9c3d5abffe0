#include "parse/ncclog.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/lineprefix.h"
#include "util/util.h"

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

/* ---- a fixed-capacity open-addressing map from two 64-bit keys to a 32-bit value ---- */

struct lg_htab {
	uint64_t *ka, *kb;
	uint32_t *val;
	uint8_t *used;
	size_t cap, n, max;
};

/* Starts small and doubles (keeping at most half the slots used) until max entries. */
static void ht_alloc(struct lg_htab *t, size_t cap)
{
	t->cap = cap;
	t->ka = nw_calloc(cap, sizeof(*t->ka));
	t->kb = nw_calloc(cap, sizeof(*t->kb));
	t->val = nw_calloc(cap, sizeof(*t->val));
	t->used = nw_calloc(cap, 1);
}

static void lg_ht_init(struct lg_htab *t, size_t max)
{
	t->max = max;
	t->n = 0;
	ht_alloc(t, 16);
}

static void lg_ht_release(struct lg_htab *t)
{
	free(t->ka);
	free(t->kb);
	free(t->val);
	free(t->used);
}

static size_t ht_slot(const struct lg_htab *t, uint64_t a, uint64_t b);

static void ht_grow(struct lg_htab *t)
{
	struct lg_htab old = *t;
	ht_alloc(t, old.cap * 2);
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.used[i])
			continue;
		size_t j = ht_slot(t, old.ka[i], old.kb[i]);
		t->used[j] = 1;
		t->ka[j] = old.ka[i];
		t->kb[j] = old.kb[i];
		t->val[j] = old.val[i];
	}
	lg_ht_release(&old);
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * The value slot of (a, b). With create, a missing key is inserted with
 * value UINT32_MAX and *created set; NULL when missing (or the map is full).
 */
/* The slot holding (a, b), or the empty slot where it would go. */
static size_t ht_slot(const struct lg_htab *t, uint64_t a, uint64_t b)
{
	size_t mask = t->cap - 1;
	size_t i = (size_t)(mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL))) & mask;
	while (t->used[i] && !(t->ka[i] == a && t->kb[i] == b))
		i = (i + 1) & mask;
	return i;
}

static uint32_t *lg_ht_get(struct lg_htab *t, uint64_t a, uint64_t b, int create, int *created)
{
	if (created)
		*created = 0;
	size_t i = ht_slot(t, a, b);
	if (t->used[i])
		return &t->val[i];
	if (!create || t->n >= t->max)
		return NULL;
	if ((t->n + 1) * 2 > t->cap) {
		ht_grow(t);
		i = ht_slot(t, a, b);
	}
	t->used[i] = 1;
	t->ka[i] = a;
	t->kb[i] = b;
	t->val[i] = UINT32_MAX;
	t->n++;
	if (created)
		*created = 1;
	return &t->val[i];
}

/* Make room for element n of an array of elem-sized items (zero-filled), doubling its capacity. */
static void *lg_grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc <= n)
		nc *= 2;
	p = nw_realloc(p, nc * elem);
	memset((char *)p + *cap * elem, 0, (nc - *cap) * elem);
	*cap = nc;
	return p;
}

static uint64_t lg_hash_str(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* ---- the analysis state ---- */

struct lg_host {
	char name[LG_NAME];
	uint8_t nvlink, ib_absent;
	char ib_devs[96];
	char socket_ifs[96];
};

struct lg_proc {
	uint32_t host;
	int pid;
	char version[40];
	long cuda_driver;
	uint8_t size1;
};

struct lg_comm {
	uint64_t id;
	int has_id;
	int nranks, nnodes, local_ranks;
	int ranks_seen, init_started, init_completed;
	int nchannels, ring_lines, tree_lines;
	char ring[96];
	char tree[96];   /* the first "Trees [0] ..." line's first channel */
};

struct lg_pair {
	uint32_t comm;
	int src, dst;
	uint32_t transport;
	uint32_t connections;
};

struct lg_transport {
	char name[LG_NAME];
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

enum lg_group_kind { G_NCCL_WARN, G_NCCL_TRACE, G_PYTORCH, G_NCCLTESTS, G_OTHER_ERROR, G_NKINDS };
static const char *const group_kind_names[G_NKINDS] = { "nccl-warn", "nccl-trace", "pytorch", "nccl-tests", "error" };

struct lg_group {
	enum lg_group_kind kind;
	char cause[160];
	char first[320];
	char first_host[LG_NAME];
	uint64_t count;
	uint32_t first_host_idx;
	uint8_t several_hosts;
};

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
};

struct nw_log {
	/* counters */
	uint64_t lines, bytes, nccl_lines, other_lines, unparsed, long_lines, blank_lines;
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
	uint64_t no_iface_lines, shm_fail_lines, dup_gpu_warn_lines, gdr_off_lines, rendezvous_lines;
	long long rdv_joined, rdv_expected; /* c10d store: "N/M clients joined" (M 0 when not seen) */
	uint64_t err_codes[8];     /* by ncclResult_t (1..7) */
	uint64_t tracebacks;
	int nvls_channels_max, nvls_available, collnet_connected;
	char torch_nccl_version[40];
	/* nccl-tests "#  Rank  0 ... Pid P on HOST" printed by several processes */
	uint64_t nt_rank0_keys[16];
	size_t nt_rank0;
	/* last report */
	int nerrors;
	/* line being fed: where it came from */
	char tag[48];
	/* a one-entry cache of the last host and process looked up */
	uint32_t last_host;
	int last_pid;
	uint32_t last_proc;
	int last_valid;
	uint32_t cached_host;
	char cached_host_name[LG_NAME];
	size_t cached_host_len;
};

struct nw_log *nw_log_new(void)
{
	struct nw_log *lg = nw_calloc(1, sizeof(*lg));
	lg->files = json_array();
	lg_ht_init(&lg->host_idx, LG_MAX_HOSTS);
	lg_ht_init(&lg->proc_idx, LG_MAX_PROCS);
	lg_ht_init(&lg->comm_key, LG_MAX_COMMS);
	lg_ht_init(&lg->comm_ptr, LG_MAX_PROCS * 4);
	lg_ht_init(&lg->comm_dev, LG_MAX_PROCS * 4);
	lg_ht_init(&lg->rank_idx, LG_MAX_RANKS);
	lg_ht_init(&lg->gpu_idx, LG_MAX_RANKS);
	lg_ht_init(&lg->pair_idx, LG_MAX_PAIRS);
	lg_ht_init(&lg->group_idx, LG_MAX_GROUPS);
	lg->last_proc = UINT32_MAX;
	return lg;
}

void nw_log_free(struct nw_log *lg)
{
	if (!lg)
		return;
	json_decref(lg->files);
	free(lg->hosts);
	lg_ht_release(&lg->host_idx);
	free(lg->procs);
	lg_ht_release(&lg->proc_idx);
	free(lg->comms);
	lg_ht_release(&lg->comm_key);
	lg_ht_release(&lg->comm_ptr);
	lg_ht_release(&lg->comm_dev);
	lg_ht_release(&lg->rank_idx);
	lg_ht_release(&lg->gpu_idx);
	free(lg->rank_host);
	free(lg->rank_bus);
	free(lg->rank_flags);
	free(lg->pairs);
	lg_ht_release(&lg->pair_idx);
	free(lg->groups);
	lg_ht_release(&lg->group_idx);
	free(lg);
}

/* ---- small text helpers (s, n: not NUL-terminated) ---- */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int starts(const char *s, size_t n, const char *w)
{
	size_t m = strlen(w);
	return n >= m && !memcmp(s, w, m);
}

static const char *find(const char *s, size_t n, const char *w)
{
	return memmem(s, n, w, strlen(w));
}

static void copy_str(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
			dst[i] = '?';
}

/* Leading decimal number of s (with sign), *used set to digits consumed (0 when none). */
static long long parse_ll(const char *s, size_t n, size_t *used)
{
	size_t i = 0;
	int neg = 0;
	long long v = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	size_t d = i;
	while (i < n && is_digit(s[i]) && i - d < 18)
		v = v * 10 + (s[i++] - '0');
	*used = i == d ? 0 : i;
	return neg ? -v : v;
}

/* Leading hex number (with or without 0x). */
static uint64_t parse_hex(const char *s, size_t n, size_t *used)
{
	size_t i = 0;
	uint64_t v = 0;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	size_t d = i;
	for (; i < n && i - d < 16; i++) {
		char c = s[i];
		int x = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
		if (x < 0)
			break;
		v = v * 16 + (uint64_t)x;
	}
	*used = i == d ? 0 : i;
	return v;
}

/* The value after "key " (or "key=") in s, as a token; returns its length, 0 when absent. */
static size_t after_key(const char *s, size_t n, const char *key, const char **val)
{
	size_t kl = strlen(key);
	const char *p = s;
	while ((p = memmem(p, n - (size_t)(p - s), key, kl))) {
		int left_ok = p == s || p[-1] == ' ' || p[-1] == '(' || p[-1] == ',';
		const char *v = p + kl;
		p += kl;
		if (!left_ok || v >= s + n || (*v != ' ' && *v != '='))
			continue;
		v++;
		const char *e = v;
		while (e < s + n && *e != ' ' && *e != ',' && *e != ')')
			e++;
		*val = v;
		return (size_t)(e - v);
	}
	return 0;
}

static long long key_ll(const char *s, size_t n, const char *key, long long dflt)
{
	const char *v;
	size_t vn = after_key(s, n, key, &v), used;
	if (!vn)
		return dflt;
	long long x = parse_ll(v, vn, &used);
	return used ? x : dflt;
}

/* ---- tables ---- */

static uint32_t lg_host_get(struct nw_log *lg, const char *s, size_t n, int create)
{
	if (n >= LG_NAME)
		n = LG_NAME - 1;
	if (create && n == lg->cached_host_len && n && !memcmp(s, lg->cached_host_name, n))
		return lg->cached_host;
	int created;
	uint32_t *v = lg_ht_get(&lg->host_idx, lg_hash_str(s, n), n, create, &created);
	if (!v) {
		if (create)
			lg->dropped++;
		return UINT32_MAX;
	}
	if (created) {
		lg->hosts = lg_grow(lg->hosts, &lg->cap_hosts, lg->nhosts, sizeof(*lg->hosts));
		*v = (uint32_t)lg->nhosts++;
		copy_str(lg->hosts[*v].name, LG_NAME, s, n);
	}
	if (create) {
		memcpy(lg->cached_host_name, s, n);
		lg->cached_host_len = n;
		lg->cached_host = *v;
	}
	return *v;
}

static uint32_t lg_proc_get(struct nw_log *lg, uint32_t host, int pid)
{
	if (host == lg->last_host && pid == lg->last_pid && lg->last_valid) {
		if (lg->last_proc == UINT32_MAX)
			lg->dropped++;
		return lg->last_proc;
	}
	int created;
	uint32_t *v = lg_ht_get(&lg->proc_idx, host, (uint64_t)(uint32_t)pid, 1, &created);
	lg->last_host = host;
	lg->last_pid = pid;
	lg->last_valid = 1;
	if (!v) {
		lg->dropped++;
		lg->last_proc = UINT32_MAX;
		return UINT32_MAX;
	}
	if (created) {
		lg->procs = lg_grow(lg->procs, &lg->cap_procs, lg->nprocs, sizeof(*lg->procs));
		*v = (uint32_t)lg->nprocs++;
		lg->procs[*v].host = host;
		lg->procs[*v].pid = pid;
		lg->procs[*v].cuda_driver = -1;
	}
	lg->last_host = host;
	lg->last_pid = pid;
	lg->last_proc = *v;
	return *v;
}

static uint32_t lg_transport_get(struct nw_log *lg, const char *s, size_t n)
{
	if (n >= LG_NAME)
		n = LG_NAME - 1;
	for (size_t i = 0; i < lg->ntransports; i++)
		if (strlen(lg->transports[i].name) == n && !memcmp(lg->transports[i].name, s, n))
			return (uint32_t)i;
	if (lg->ntransports == LG_MAX_TRANSPORTS) {
		lg->dropped++;
		return UINT32_MAX;
	}
	copy_str(lg->transports[lg->ntransports].name, LG_NAME, s, n);
	return (uint32_t)lg->ntransports++;
}

/* ---- error groups ---- */

/* A cause key: the message with numbers and addresses replaced by '#'. */
static size_t normalize(const char *s, size_t n, char *out, size_t len)
{
	size_t w = 0;
	for (size_t i = 0; i < n && w + 1 < len;) {
		if (is_digit(s[i])) {
			if (s[i] == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X'))
				i += 2;
			while (i < n && (is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
				i++;
			out[w++] = '#';
			continue;
		}
		out[w++] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
		i++;
	}
	out[w] = '\0';
	return w;
}

static void lg_add_group(struct nw_log *lg, enum lg_group_kind kind, uint32_t host, const char *msg, size_t n)
{
	char key[160];
	size_t kn = normalize(msg, n, key, sizeof(key));
	int created;
	uint32_t *v = lg_ht_get(&lg->group_idx, lg_hash_str(key, kn), (uint64_t)kind, 1, &created);
	if (!v) {
		lg->groups_overflow++;
		return;
	}
	if (created) {
		lg->groups = lg_grow(lg->groups, &lg->cap_groups, lg->ngroups, sizeof(*lg->groups));
		*v = (uint32_t)lg->ngroups++;
		struct lg_group *g = &lg->groups[*v];
		g->kind = kind;
		nw_strlcpy(g->cause, key, sizeof(g->cause));
		copy_str(g->first, sizeof(g->first), msg, n);
		g->first_host_idx = host;
		if (host != UINT32_MAX)
			nw_strlcpy(g->first_host, lg->hosts[host].name, sizeof(g->first_host));
	}
	struct lg_group *g = &lg->groups[*v];
	g->count++;
	if (host != g->first_host_idx)
		g->several_hosts = 1;
}

static const char *const lg_nccl_results[8] = {
	"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
};

/* Facts that the diagnosis rules need, from any error or warning text. */
static void lg_classify(struct nw_log *lg, const char *s, size_t n)
{
	if (find(s, n, "no socket interface found") || find(s, n, "no interface found") ||
	    find(s, n, "No usable listening interface") || find(s, n, "no usable interface"))
		lg->no_iface_lines++;
	if (find(s, n, "/dev/shm") || find(s, n, "shm_open") || find(s, n, "shared memory") ||
	    find(s, n, "Shared memory") || find(s, n, "ShmSegment"))
		lg->shm_fail_lines++;
	if (find(s, n, "Duplicate GPU detected"))
		lg->dup_gpu_warn_lines++;
	if (find(s, n, "GPU Direct RDMA Disabled") || find(s, n, "GDR is disabled") || find(s, n, "GDRDMA disabled"))
		lg->gdr_off_lines++;
	if (find(s, n, "DistStoreError") || find(s, n, "waiting for clients") || find(s, n, "clients joined") ||
	    (find(s, n, "Socket Timeout") && find(s, n, "store")))
		lg->rendezvous_lines++;
	const char *w = find(s, n, "waiting for clients. ");
	if (w) {
		size_t off = (size_t)(w - s) + strlen("waiting for clients. "), u1, u2 = 0;
		long long joined = parse_ll(s + off, n - off, &u1), expected = 0;
		if (u1 && off + u1 < n && s[off + u1] == '/')
			expected = parse_ll(s + off + u1 + 1, n - off - u1 - 1, &u2);
		if (u2 && joined >= 0 && expected > joined && find(s, n, "clients joined"))
			lg->rdv_joined = joined, lg->rdv_expected = expected;
	}
	for (int i = 1; i < 8; i++)
		if (find(s, n, lg_nccl_results[i]))
			lg->err_codes[i]++;
	static const struct { const char *text; int code; } texts[] = {
		{ "unhandled cuda error", 1 }, { "unhandled system error", 2 }, { "internal error", 3 },
		{ "invalid argument", 4 }, { "invalid usage", 5 }, { "remote process exited or there was a network error", 6 },
	};
	if (find(s, n, "NCCL error") || find(s, n, "NCCL failure") || find(s, n, "NCCL Error"))
		for (size_t i = 0; i < NW_ARRAY_LEN(texts); i++)
			if (find(s, n, texts[i].text))
				lg->err_codes[texts[i].code]++;
}

/* ---- NCCL INFO lines ---- */

static struct lg_comm *lg_comm_of_dev(struct nw_log *lg, uint32_t proc, int dev, uint32_t *idx)
{
	uint32_t *v = lg_ht_get(&lg->comm_dev, proc, (uint64_t)(uint32_t)dev, 0, NULL);
	if (!v || *v == UINT32_MAX)
		return NULL;
	if (idx)
		*idx = *v;
	return &lg->comms[*v];
}

/*
 * "ncclCommInitRank[Config] comm 0x.. rank R nranks N cudaDev D [nvmlDev X] busId B [commId 0x..] - Init START|COMPLETE"
 * "comm 0x.. rank R nranks N cudaDev D busId B - Init COMPLETE" (older, no commId)
 * "comm 0x.. rank R nRanks N nNodes X localRanks L localRank l MNNVL m"
 */
static void info_comm(struct nw_log *lg, uint32_t proc, int dev, const char *s, size_t n)
{
	const char *v;
	size_t vn = after_key(s, n, "comm", &v), used;
	if (!vn || proc == UINT32_MAX)
		return;
	uint64_t ptr = parse_hex(v, vn, &used);
	if (find(s, n, "Destroy") || find(s, n, "Abort"))
		return;
	long long rank = key_ll(s, n, "rank", -1);
	long long nranks = key_ll(s, n, "nranks", -1);
	if (nranks < 0)
		nranks = key_ll(s, n, "nRanks", -1);
	if (rank < 0 || nranks <= 0 || rank >= nranks || nranks > (1 << 20))
		return;
	uint64_t id = 0;
	int has_id = 0;
	if ((vn = after_key(s, n, "commId", &v)) || (vn = after_key(s, n, "commHash", &v))) {
		id = parse_hex(v, vn, &used);
		has_id = used > 0;
	}
	uint32_t ci = UINT32_MAX;
	uint32_t *pv = lg_ht_get(&lg->comm_ptr, proc, ptr, 0, NULL);
	if (pv && *pv != UINT32_MAX)
		ci = *pv;
	if (has_id || ci == UINT32_MAX) {
		int created;
		uint32_t *kv = lg_ht_get(&lg->comm_key, has_id ? id : (uint64_t)nranks, (uint64_t)has_id, 1, &created);
		if (!kv) {
			lg->dropped++;
			return;
		}
		if (created) {
			lg->comms = lg_grow(lg->comms, &lg->cap_comms, lg->ncomms, sizeof(*lg->comms));
			*kv = (uint32_t)lg->ncomms++;
			struct lg_comm *c = &lg->comms[*kv];
			c->id = id;
			c->has_id = has_id;
			c->nranks = (int)nranks;
			c->nnodes = c->local_ranks = -1;
		}
		ci = *kv;
	}
	struct lg_comm *c = &lg->comms[ci];
	uint32_t *slot = lg_ht_get(&lg->comm_ptr, proc, ptr, 1, NULL);
	if (slot)
		*slot = ci;
	slot = lg_ht_get(&lg->comm_dev, proc, (uint64_t)(uint32_t)dev, 1, NULL);
	if (slot)
		*slot = ci;
	if (nranks == 1)
		lg->procs[proc].size1 = 1;
	long long nnodes = key_ll(s, n, "nNodes", -1), local = key_ll(s, n, "localRanks", -1);
	if (nnodes > 0)
		c->nnodes = (int)nnodes;
	if (local > 0)
		c->local_ranks = (int)local;

	int created;
	uint32_t *rv = lg_ht_get(&lg->rank_idx, ci, (uint64_t)rank, 1, &created);
	if (!rv) {
		lg->dropped++;
		return;
	}
	if (created) {
		lg->rank_host = lg_grow(lg->rank_host, &lg->cap_rank_host, lg->nranks, sizeof(*lg->rank_host));
		lg->rank_bus = lg_grow(lg->rank_bus, &lg->cap_rank_bus, lg->nranks, sizeof(*lg->rank_bus));
		lg->rank_flags = lg_grow(lg->rank_flags, &lg->cap_rank_flags, lg->nranks, 1);
		*rv = (uint32_t)lg->nranks++;
		lg->rank_host[*rv] = lg->procs[proc].host;
		c->ranks_seen++;
	}
	uint32_t ri = *rv;
	if ((vn = after_key(s, n, "busId", &v))) {
		uint64_t bus = parse_hex(v, vn, &used);
		if (used && !(lg->rank_flags[ri] & 4)) {
			lg->rank_flags[ri] |= 4;
			lg->rank_bus[ri] = bus;
			uint32_t *gv = lg_ht_get(&lg->gpu_idx, ((uint64_t)ci << 32) | lg->procs[proc].host, bus, 1, &created);
			if (gv && created)
				*gv = (uint32_t)rank;
			else if (gv && *gv != (uint32_t)rank && lg->ndups < LG_MAX_DUPS)
				lg->dups[lg->ndups++] = (struct lg_dup){ ci, (int)*gv, (int)rank, lg->procs[proc].host, bus };
		}
	}
	if (find(s, n, "Init START") && !(lg->rank_flags[ri] & 1)) {
		lg->rank_flags[ri] |= 1;
		c->init_started++;
	}
	if (find(s, n, "Init COMPLETE") && !(lg->rank_flags[ri] & 2)) {
		lg->rank_flags[ri] |= 2;
		c->init_completed++;
	}
}

/* Drop NIC/port indexes from a transport: "NET/IB/0/GDRDMA" -> "NET/IB/GDRDMA". */
static size_t normalize_transport(const char *s, size_t n, char *out, size_t len)
{
	size_t w = 0, i = 0;
	while (i < n && w + 1 < len) {
		size_t j = i;
		while (j < n && s[j] != '/')
			j++;
		int numeric = j > i;
		for (size_t k = i; k < j; k++)
			if (!is_digit(s[k]) && s[k] != '(' && s[k] != ')')
				numeric = 0;
		if (!numeric && j > i) {
			if (w && w + 1 < len)
				out[w++] = '/';
			for (size_t k = i; k < j && w + 1 < len; k++)
				out[w++] = s[k];
		}
		i = j + 1;
	}
	out[w] = '\0';
	return w;
}

/* "Channel 00/0 : 0[0] -> 1[1] [send] via P2P/direct pointer" (also "Ring 00 : ..." before 2.5). */
static void info_connection(struct nw_log *lg, uint32_t proc, int dev, const char *s, size_t n, const char *via)
{
	const char *colon = memchr(s, ':', (size_t)(via - s));
	if (!colon || proc == UINT32_MAX)
		return;
	const char *p = colon + 1, *e = via;
	while (p < e && *p == ' ')
		p++;
	size_t used;
	long long src = parse_ll(p, (size_t)(e - p), &used);
	if (!used)
		return;
	const char *arrow = memmem(p, (size_t)(e - p), "->", 2);
	if (!arrow)
		return;
	p = arrow + 2;
	while (p < e && *p == ' ')
		p++;
	long long dst = parse_ll(p, (size_t)(e - p), &used);
	if (!used || src < 0 || dst < 0 || src > (1 << 20) || dst > (1 << 20))
		return;
	const char *t = via + 5, *te = s + n;
	const char *cut = memmem(t, (size_t)(te - t), " comm ", 6);
	if (cut)
		te = cut;
	while (te > t && (te[-1] == ' ' || te[-1] == '\r'))
		te--;
	char name[LG_NAME];
	size_t nn = normalize_transport(t, (size_t)(te - t), name, sizeof(name));
	uint32_t ti = lg_transport_get(lg, name, nn);
	uint32_t ci = UINT32_MAX;
	lg_comm_of_dev(lg, proc, dev, &ci);
	int created;
	uint32_t *v = lg_ht_get(&lg->pair_idx, ci, ((uint64_t)src << 32) | (uint64_t)dst, 1, &created);
	if (!v) {
		lg->dropped++;
		return;
	}
	if (created) {
		lg->pairs = lg_grow(lg->pairs, &lg->cap_pairs, lg->npairs, sizeof(*lg->pairs));
		*v = (uint32_t)lg->npairs++;
		lg->pairs[*v] = (struct lg_pair){ ci, (int)src, (int)dst, ti, 0 };
	}
	lg->pairs[*v].connections++;
	if (lg->pairs[*v].transport == UINT32_MAX)
		lg->pairs[*v].transport = ti;
}

/* "Channel 00/24 : 0 1" (ring order, 2.5+) or "Ring 00 : 0 1 2 3" (older). */
static void info_ring_order(struct nw_log *lg, uint32_t proc, int dev, const char *s, size_t n)
{
	struct lg_comm *c = lg_comm_of_dev(lg, proc, dev, NULL);
	if (!c)
		return;
	const char *slash = memchr(s, '/', n), *colon = memchr(s, ':', n);
	if (!colon)
		return;
	if (slash && slash < colon) {
		size_t used;
		long long total = parse_ll(slash + 1, (size_t)(colon - slash - 1), &used);
		if (used && total > c->nchannels && total < 4096)
			c->nchannels = (int)total;
	} else {
		size_t used;
		long long ch = parse_ll(s + 5, n > 5 ? n - 5 : 0, &used);
		if (used && ch + 1 > c->nchannels && ch < 4096)
			c->nchannels = (int)ch + 1;
	}
	if (!c->ring[0]) {
		const char *p = colon + 1, *e = s + n;
		size_t w = 0;
		int space = 0;
		while (p < e && w + 2 < sizeof(c->ring)) {
			if (*p == ' ') {
				space = w > 0;
			} else {
				if (space)
					c->ring[w++] = ' ';
				space = 0;
				c->ring[w++] = (unsigned char)*p < 0x20 ? '?' : *p;
			}
			p++;
		}
		c->ring[w] = '\0';
	}
}

/* "Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000, type NVL/PIX, sameChannels 1" */
static void info_pattern(struct nw_log *lg, const char *s, size_t n)
{
	size_t used;
	long long pat = parse_ll(s + 8, n - 8, &used);
	if (!used)
		return;
	long long nch = key_ll(s, n, "nChannels", -1);
	const char *v;
	char type[24] = "", bw[40] = "";
	size_t vn = after_key(s, n, "type", &v);
	copy_str(type, sizeof(type), v, vn);
	vn = after_key(s, n, "bw", &v);
	copy_str(bw, sizeof(bw), v, vn);
	for (size_t i = 0; i < lg->ngraphs; i++) {
		struct lg_graph *g = &lg->graphs[i];
		if (g->pattern == pat && g->nchannels == nch && !strcmp(g->type, type) && !strcmp(g->bw, bw)) {
			g->count++;
			return;
		}
	}
	if (lg->ngraphs == LG_MAX_GRAPHS) {
		lg->dropped++;
		return;
	}
	struct lg_graph *g = &lg->graphs[lg->ngraphs++];
	g->pattern = (int)pat;
	g->nchannels = (int)nch;
	nw_strlcpy(g->type, type, sizeof(g->type));
	nw_strlcpy(g->bw, bw, sizeof(g->bw));
	g->count = 1;
}

static const char *const algo_names[] = { "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT" };
static const char *const proto_names[] = { "LL", "LL128", "SIMPLE" };

/* "AllReduce: 67108864 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}" (older: numbers). */
static int info_algo(struct nw_log *lg, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n < 24 ? n : 24);
	if (!colon || colon + 2 >= s + n || colon[1] != ' ')
		return 0;
	const char *p = colon + 2;
	size_t used;
	long long bytes = parse_ll(p, (size_t)(s + n - p), &used);
	if (!used || bytes < 0)
		return 0;
	p += used;
	if (!starts(p, (size_t)(s + n - p), " Bytes -> Algo "))
		return 0;
	p += 15;
	const char *a = p;
	while (p < s + n && *p != ' ')
		p++;
	size_t an = (size_t)(p - a);
	if (!starts(p, (size_t)(s + n - p), " proto "))
		return 0;
	p += 7;
	const char *pr = p;
	while (p < s + n && *p != ' ')
		p++;
	size_t pn = (size_t)(p - pr);
	char op[24], algo[20], proto[16];
	copy_str(op, sizeof(op), s, (size_t)(colon - s));
	copy_str(algo, sizeof(algo), a, an);
	copy_str(proto, sizeof(proto), pr, pn);
	long long x;
	if (an && (x = parse_ll(a, an, &used), used == an) && x >= 0 && x < (long long)NW_ARRAY_LEN(algo_names))
		nw_strlcpy(algo, algo_names[x], sizeof(algo));
	if (pn && (x = parse_ll(pr, pn, &used), used == pn) && x >= 0 && x < (long long)NW_ARRAY_LEN(proto_names))
		nw_strlcpy(proto, proto_names[x], sizeof(proto));
	struct lg_algo *g = NULL;
	for (size_t i = 0; i < lg->nalgos; i++)
		if (!strcmp(lg->algos[i].op, op) && !strcmp(lg->algos[i].algo, algo) && !strcmp(lg->algos[i].proto, proto)) {
			g = &lg->algos[i];
			break;
		}
	if (!g) {
		if (lg->nalgos == LG_MAX_ALGOS) {
			lg->dropped++;
			return 1;
		}
		g = &lg->algos[lg->nalgos++];
		nw_strlcpy(g->op, op, sizeof(g->op));
		nw_strlcpy(g->algo, algo, sizeof(g->algo));
		nw_strlcpy(g->proto, proto, sizeof(g->proto));
		g->min_bytes = UINT64_MAX;
	}
	g->calls++;
	if ((uint64_t)bytes < g->min_bytes)
		g->min_bytes = (uint64_t)bytes;
	if ((uint64_t)bytes > g->max_bytes)
		g->max_bytes = (uint64_t)bytes;
	return 1;
}

/* "NCCL_NVLS_ENABLE set by environment to 0." */
static void info_env(struct nw_log *lg, const char *s, size_t n, const char *at)
{
	const char *name = s;
	while (name < at && *name == ' ')
		name++;
	size_t nn = (size_t)(at - name);
	if (nn < 6 || !starts(name, nn, "NCCL_") || memchr(name, ' ', nn))
		return;
	const char *v = at + 23, *e = s + n; /* strlen(" set by environment to ") */
	if (v > e)
		return;
	while (e > v && (e[-1] == '.' || e[-1] == ' ' || e[-1] == '\r'))
		e--;
	char nbuf[48], vbuf[96];
	copy_str(nbuf, sizeof(nbuf), name, nn);
	copy_str(vbuf, sizeof(vbuf), v, (size_t)(e - v));
	for (size_t i = 0; i < lg->nenvs; i++)
		if (!strcmp(lg->envs[i].name, nbuf) && !strcmp(lg->envs[i].value, vbuf)) {
			lg->envs[i].lines++;
			return;
		}
	if (lg->nenvs == LG_MAX_ENV) {
		lg->dropped++;
		return;
	}
	struct lg_env *en = &lg->envs[lg->nenvs++];
	nw_strlcpy(en->name, nbuf, sizeof(en->name));
	nw_strlcpy(en->value, vbuf, sizeof(en->value));
	en->lines = 1;
}

/* "init.cc:1234 -> 2": NCCL's trace of an error code on its way up. */
static int info_trace(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 80 && s[i] != ':' && s[i] != ' ')
		i++;
	if (i >= n || s[i] != ':' || i < 3 || !memchr(s, '.', i))
		return 0;
	size_t used;
	parse_ll(s + i + 1, n - i - 1, &used);
	if (!used)
		return 0;
	const char *p = s + i + 1 + used;
	if (!starts(p, (size_t)(s + n - p), " -> "))
		return 0;
	long long code = parse_ll(p + 4, (size_t)(s + n - p - 4), &used);
	if (!used)
		return 0;
	if (code > 0 && code < 8)
		lg->err_codes[code]++;
	/* group by file and code, keeping line numbers: they name the place */
	char key[160];
	int kn = snprintf(key, sizeof(key), "%.*s -> %lld (%s)", (int)(p - s), s, code,
	                  code > 0 && code < 8 ? lg_nccl_results[code] : "unknown");
	lg_add_group(lg, G_NCCL_TRACE, host, key, kn > 0 ? (size_t)kn : 0);
	return 1;
}

/* One "NCCL INFO" message (s: after the level), dispatched on its first letter to keep the hot path short. */
static void lg_info_line(struct nw_log *lg, uint32_t host, uint32_t proc, int dev, const char *s, size_t n)
{
	const char *at;
	if (!n)
		return;
	switch (s[0]) {
	case 'N':
		if (starts(s, n, "NCCL version ")) {
			const char *v = s + 13, *e = v;
			while (e < s + n && *e != ' ')
				e++;
			if (proc != UINT32_MAX)
				copy_str(lg->procs[proc].version, sizeof(lg->procs[proc].version), v, (size_t)(e - v));
			return;
		}
		if (starts(s, n, "NET/IB : No device found")) {
			if (host != UINT32_MAX)
				lg->hosts[host].ib_absent = 1;
			return;
		}
		if (starts(s, n, "NET/IB : Using [") && n > 16 && is_digit(s[16])) {
			if (host != UINT32_MAX && !lg->hosts[host].ib_devs[0])
				copy_str(lg->hosts[host].ib_devs, sizeof(lg->hosts[host].ib_devs), s + 15, n - 15);
			return;
		}
		if (starts(s, n, "NET/Socket : Using [")) {
			if (host != UINT32_MAX && !lg->hosts[host].socket_ifs[0])
				copy_str(lg->hosts[host].socket_ifs, sizeof(lg->hosts[host].socket_ifs), s + 19, n - 19);
			return;
		}
		if (starts(s, n, "NVLS multicast support is available")) {
			lg->nvls_available = 1;
			return;
		}
		if (starts(s, n, "NET/IB") && find(s, n, "GPU Direct RDMA Disabled")) {
			lg->gdr_off_lines++;
			return;
		}
		break;
	case 'c':
		if (starts(s, n, "cudaDriverVersion ")) {
			size_t used;
			long long v = parse_ll(s + 18, n - 18, &used);
			if (used && proc != UINT32_MAX)
				lg->procs[proc].cuda_driver = (long)v;
			return;
		}
		if (starts(s, n, "comm 0x")) {
			info_comm(lg, proc, dev, s, n);
			return;
		}
		break;
	case 'n':
		if (starts(s, n, "ncclComm")) {
			info_comm(lg, proc, dev, s, n);
			return;
		}
		break;
	case 'C':
		if (starts(s, n, "Channel ")) {
			if ((at = find(s, n, " via ")))
				info_connection(lg, proc, dev, s, n, at);
			else
				info_ring_order(lg, proc, dev, s, n);
			return;
		}
		if (starts(s, n, "Connected") && find(s, n, "CollNet")) {
			lg->collnet_connected++;
			return;
		}
		break;
	case 'R':
		if (starts(s, n, "Ring ")) {
			if ((at = find(s, n, " via "))) {
				info_connection(lg, proc, dev, s, n, at);
			} else if (find(s, n, "->")) {
				struct lg_comm *c = lg_comm_of_dev(lg, proc, dev, NULL);
				if (c)
					c->ring_lines++;
			} else {
				info_ring_order(lg, proc, dev, s, n);
			}
			return;
		}
		break;
	case 'T':
		if (starts(s, n, "Tree ") || starts(s, n, "Trees ")) {
			struct lg_comm *c = lg_comm_of_dev(lg, proc, dev, NULL);
			if (c) {
				c->tree_lines++;
				if (!c->tree[0] && starts(s, n, "Trees ")) {
					/* "Trees [0] -1/-1/-1->1->0 [1] ...": keep channel 0's */
					const char *e = s + 6;
					while (e < s + n && *e != ' ')
						e++;
					if (e < s + n)
						e++;
					while (e < s + n && *e != ' ')
						e++;
					copy_str(c->tree, sizeof(c->tree), s + 6, (size_t)(e - (s + 6)));
				}
			}
			return;
		}
		break;
	case 'P':
		if (starts(s, n, "Pattern ")) {
			info_pattern(lg, s, n);
			if (host != UINT32_MAX && find(s, n, "NVL"))
				lg->hosts[host].nvlink = 1;
			return;
		}
		break;
	case 'G':
	case '+':
	case ' ':
		if (host != UINT32_MAX && !lg->hosts[host].nvlink && (find(s, n, "NVL[") || find(s, n, "/NVL)")))
			lg->hosts[host].nvlink = 1;
		return;
	default:
		if (is_digit(s[0]) && (at = find(s, n, " nvls channels"))) {
			const char *c = at;
			while (c > s && (is_digit(c[-1])))
				c--;
			size_t used;
			long long v = parse_ll(c, (size_t)(at - c), &used);
			if (used && v > lg->nvls_channels_max && v < 4096)
				lg->nvls_channels_max = (int)v;
			return;
		}
		break;
	}
	if (starts(s, n, "NCCL_") && (at = find(s, n, " set by environment to "))) {
		info_env(lg, s, n, at);
		return;
	}
	if (s[0] >= 'A' && s[0] <= 'Z' && info_algo(lg, s, n))
		return;
	if (s[0] >= 'a' && s[0] <= 'z')
		info_trace(lg, host, s, n);
}

/* ---- lines that are not NCCL's ---- */

/* "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ... Timeout(ms)=600000) ran for 600041 milliseconds" */
static void watchdog(struct nw_log *lg, const char *s, size_t n)
{
	struct lg_timeout t;
	memset(&t, 0, sizeof(t));
	t.rank = -1;
	const char *r = find(s, n, "[Rank ");
	size_t used;
	if (r) {
		long long v = parse_ll(r + 6, (size_t)(s + n - r - 6), &used);
		if (used && v >= 0 && v < (1 << 24))
			t.rank = (int)v;
	} else if (!strncmp(lg->tag, "rank", 4)) {
		long long v = parse_ll(lg->tag + 4, strlen(lg->tag + 4), &used);
		if (used && v >= 0 && v < (1 << 24))
			t.rank = (int)v;
	}
	const char *v;
	size_t vn;
	t.seq = -1;
	if ((v = find(s, n, "SeqNum="))) {
		t.seq = parse_ll(v + 7, (size_t)(s + n - v - 7), &used);
		if (!used)
			t.seq = -1;
	}
	if ((v = find(s, n, "OpType="))) {
		v += 7;
		vn = 0;
		while (v + vn < s + n && v[vn] != ',' && v[vn] != ')' && v[vn] != ' ')
			vn++;
		copy_str(t.op, sizeof(t.op), v, vn);
	}
	t.timeout_ms = -1;
	if ((v = find(s, n, "Timeout(ms)="))) {
		t.timeout_ms = parse_ll(v + 12, (size_t)(s + n - v - 12), &used);
		if (!used)
			t.timeout_ms = -1;
	}
	t.ran_ms = -1;
	if ((v = find(s, n, "ran for "))) {
		t.ran_ms = parse_ll(v + 8, (size_t)(s + n - v - 8), &used);
		if (!used)
			t.ran_ms = -1;
	}
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

/* A line that is not NCCL's: nccl-tests' device list, PyTorch errors and timeouts, other error lines. */
static void lg_other_line(struct nw_log *lg, const char *s, size_t n)
{
	lg->other_lines++;
	if (!n)
		return;
	enum lg_group_kind kind = G_OTHER_ERROR;
	int err = 0;
	const char *p;
	if (s[0] == '#') {
		/* nccl-tests: "#  Rank  0 Group  0 Pid    643 on         vm device  0 [...] NAME" */
		if (n > 8 && starts(s, n, "#  Rank ") && (p = find(s, n, " Pid "))) {
			size_t used, i = 8;
			while (i < n && s[i] == ' ')
				i++;
			long long rank = parse_ll(s + i, n - i, &used);
			const char *on = find(s, n, " on ");
			if (used && rank == 0 && on) {
				const char *pp = p + 5;
				while (pp < s + n && *pp == ' ')
					pp++;
				long long pid = parse_ll(pp, (size_t)(s + n - pp), &used);
				const char *h = on + 4;
				while (h < s + n && *h == ' ')
					h++;
				const char *he = h;
				while (he < s + n && *he != ' ')
					he++;
				uint64_t key = lg_hash_str(h, (size_t)(he - h)) ^ (uint64_t)pid;
				int seen = 0;
				for (size_t k = 0; k < lg->nt_rank0; k++)
					seen |= lg->nt_rank0_keys[k] == key;
				if (!seen && lg->nt_rank0 < NW_ARRAY_LEN(lg->nt_rank0_keys))
					lg->nt_rank0_keys[lg->nt_rank0++] = key;
			}
		}
		return;
	}
	if ((p = find(s, n, "Watchdog caught collective operation timeout"))) {
		watchdog(lg, s, n);
		kind = G_PYTORCH;
		err = 1;
	} else if (starts(s, n, "Traceback (most recent call last)")) {
		lg->tracebacks++;
		return;
	} else if (find(s, n, "Test NCCL failure") || find(s, n, "Test CUDA failure") || find(s, n, "Test failure")) {
		kind = G_NCCLTESTS;
		err = 1;
	} else if (python_exception(s, n)) {
		kind = G_PYTORCH;
		err = 1;
	} else if (n > 2 && s[0] == '[' && s[1] == 'E' && is_digit(s[2])) {
		kind = G_PYTORCH; /* c10 error log line "[E1130 11:39:33.123 ...] ..." */
		err = 1;
	} else if ((p = find(s, n, "NCCL version: ")) || (p = find(s, n, "NCCL version "))) {
		if (!lg->torch_nccl_version[0]) {
			const char *v = p + (p[12] == ':' ? 14 : 13), *e = v;
			while (e < s + n && *e != ' ' && *e != ',' && *e != ')')
				e++;
			if (e > v && is_digit(*v))
				copy_str(lg->torch_nccl_version, sizeof(lg->torch_nccl_version), v, (size_t)(e - v));
		}
	} else if (find(s, n, "NCCL error") || find(s, n, "Segmentation fault") || find(s, n, "CUDA error") ||
	           find(s, n, "DistStoreError") || find(s, n, "Bus error")) {
		err = 1;
	}
	if (err) {
		lg_classify(lg, s, n);
		lg_add_group(lg, kind, UINT32_MAX, s, n);
	}
}

/* Where an NCCL log line starts inside s when something was printed before it without a newline. */
static size_t glued_nccl_line(struct nw_log *lg, const char *s, size_t n)
{
	const char *p = find(s, n, " NCCL ");
	if (!p)
		return 0;
	const char *lb = NULL;
	for (const char *b = p; b > s && p - b < 160; b--)
		if (*b == '[') {
			lb = b;
			break;
		}
	if (!lb || lb - s < 5 || lb[-1] != ' ')
		return 0;
	const char *b = lb - 1;
	int colons = 0;
	while (b > s && colons < 2) {
		b--;
		if (*b == ':')
			colons++;
		else if (!is_digit(*b))
			break;
	}
	if (colons < 2 || *b != ':')
		return 0;
	const char *host_end = b, *start = b;
	while (start > s && start[-1] != ' ' && start[-1] != '\t')
		start--;
	/* host names may begin with digits that belong to what came before: prefer a known host */
	for (const char *c = start; c < host_end; c++)
		if (lg_host_get(lg, c, (size_t)(host_end - c), 0) != UINT32_MAX) {
			start = c;
			break;
		}
	if (!nw_lp_nccl_prefix(start, (size_t)(s + n - start)))
		return 0;
	return (size_t)(start - s);
}

/*
 * Lines starting with NCCL's prefix go straight to their level's reader;
 * others lose their launcher prefixes first (and may turn out to hold an
 * NCCL line glued after other output).
 */
void nw_log_feed_line(struct nw_log *lg, char *line, size_t len)
{
	lg->lines++;
	lg->bytes += len + 1;
	if (len > LG_MAX_LINE) {
		lg->long_lines++;
		len = LG_MAX_LINE;
	}
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	size_t n = len, pl = 0;
	const char *s = line;
	if (!memchr(line, '\x1b', len))
		pl = nw_lp_nccl_prefix(line, len);
	if (!pl) {
		struct nw_lp lp;
		size_t off = nw_lp_strip(line, len, &n, &lp);
		s = line + off;
		nw_strlcpy(lg->tag, lp.tag, sizeof(lg->tag));
		if (!n) {
			lg->blank_lines++;
			return;
		}
		pl = nw_lp_nccl_prefix(s, n);
	} else {
		lg->tag[0] = '\0';
	}
	if (!pl && memchr(s, 'N', n)) {
		size_t g = glued_nccl_line(lg, s, n);
		if (g) {
			s += g;
			n -= g;
			pl = nw_lp_nccl_prefix(s, n);
		}
	}
	if (!pl) {
		if (find(s, n, "NCCL INFO") || find(s, n, "NCCL WARN")) {
			lg->unparsed++;
			return;
		}
		lg_other_line(lg, s, n);
		return;
	}
	lg->nccl_lines++;
	/* "host:pid:tid [dev] " */
	const char *c1 = memchr(s, ':', pl);
	uint32_t host = lg_host_get(lg, s, (size_t)(c1 - s), 1);
	size_t used;
	long long pid = parse_ll(c1 + 1, pl - (size_t)(c1 + 1 - s), &used);
	const char *lb = memchr(s, '[', pl);
	long long dev = parse_ll(lb + 1, pl - (size_t)(lb + 1 - s), &used);
	uint32_t proc = host == UINT32_MAX ? UINT32_MAX : lg_proc_get(lg, host, (int)pid);
	const char *m = s + pl;
	size_t mn = n - pl;
	if (starts(m, mn, "NCCL INFO ")) {
		lg_info_line(lg, host, proc, (int)dev, m + 10, mn - 10);
		return;
	}
	const char *w = find(m, mn < 200 ? mn : 200, "NCCL WARN ");
	if (w) {
		const char *msg = w + 10;
		size_t msn = (size_t)(m + mn - msg);
		lg_classify(lg, msg, msn);
		lg_add_group(lg, G_NCCL_WARN, host, msg, msn);
		return;
	}
	if (find(m, mn < 200 ? mn : 200, "NCCL INFO ") || find(m, mn < 200 ? mn : 200, "NCCL TRACE ") ||
	    starts(m, mn, "NCCL "))
		return; /* TRACE lines and INFO with a file:line before the level */
	lg->unparsed++;
}

void nw_log_feed_buf(struct nw_log *lg, const char *buf, size_t len)
{
	char *line = nw_malloc(LG_MAX_LINE + 1);
	size_t off = 0;
	while (off < len) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
		size_t take = n > LG_MAX_LINE ? LG_MAX_LINE + 1 : n;
		memcpy(line, buf + off, take);
		nw_log_feed_line(lg, line, take);
		if (n > take)
			lg->bytes += n - take;
		off += n + (nl ? 1 : 0);
	}
	free(line);
}

int nw_log_feed_file(struct nw_log *lg, FILE *f, const char *name, char *err, size_t errlen)
{
	enum { BLOCK = 1 << 20 };
	char *buf = nw_malloc(BLOCK + LG_MAX_LINE + 2);
	size_t have = 0;
	int skipping = 0; /* inside the tail of an over-long line */
	int rc = 0;
	json_array_append_new(lg->files, json_string(name));
	for (;;) {
		size_t got = fread(buf + have, 1, BLOCK + LG_MAX_LINE + 1 - have, f);
		if (got == 0) {
			if (ferror(f))
				rc = nw_seterr(err, errlen, "cannot read '%s': %s", name, strerror(errno));
			break;
		}
		size_t end = have + got, start = 0;
		for (;;) {
			char *nl = memchr(buf + start, '\n', end - start);
			if (!nl)
				break;
			size_t n = (size_t)(nl - (buf + start));
			if (skipping) {
				lg->bytes += n + 1;
				skipping = 0;
			} else {
				nw_log_feed_line(lg, buf + start, n);
			}
			start += n + 1;
		}
		have = end - start;
		if (have > LG_MAX_LINE) {
			/* a line longer than the cap: read its start, skip the rest */
			if (!skipping)
				nw_log_feed_line(lg, buf + start, have);
			else
				lg->bytes += have;
			skipping = 1;
			have = 0;
		} else {
			memmove(buf, buf + start, have);
		}
	}
	if (have && !skipping && rc == 0)
		nw_log_feed_line(lg, buf, have);
	free(buf);
	return rc;
}

/* ---- report: derived facts ---- */

enum lg_tclass { T_P2P, T_SHM, T_SOCKET, T_IB, T_NET_OTHER, T_NVLS, T_COLLNET, T_OTHER, T_NCLASS };
static const char *const lg_tclass_names[T_NCLASS] = { "P2P", "SHM", "NET/Socket", "NET/IB", "NET/plugin", "NVLS", "CollNet", "other" };

static enum lg_tclass lg_transport_class(const char *name)
{
	if (!strncmp(name, "P2P", 3))
		return T_P2P;
	if (!strncmp(name, "SHM", 3))
		return T_SHM;
	if (!strncmp(name, "NET/Socket", 10))
		return T_SOCKET;
	if (!strncmp(name, "NET/IB", 6))
		return T_IB;
	if (!strncmp(name, "NET/", 4))
		return T_NET_OTHER;
	if (!strncmp(name, "NVLS", 4))
		return T_NVLS;
	if (!strncasecmp(name, "COLLNET", 7))
		return T_COLLNET;
	return T_OTHER;
}

/* 1: both ranks of a pair on one host, 0: on two hosts, -1: unknown. */
static int lg_pair_same_node(const struct nw_log *lg, const struct lg_pair *p)
{
	if (p->comm == UINT32_MAX)
		return -1;
	const struct lg_comm *c = &lg->comms[p->comm];
	if (c->nnodes == 1)
		return 1;
	struct lg_htab *t = (struct lg_htab *)&lg->rank_idx;
	uint32_t *a = lg_ht_get(t, p->comm, (uint64_t)p->src, 0, NULL);
	uint32_t *b = lg_ht_get(t, p->comm, (uint64_t)p->dst, 0, NULL);
	if (!a || !b)
		return -1;
	return lg->rank_host[*a] == lg->rank_host[*b];
}

struct lg_tstat {
	uint64_t pairs, connections, intra, inter, gdr;
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

/* Per-transport and per-class pair counts, largest communicator, NVLink and IB presence. */
static void lg_compute_facts(const struct nw_log *lg, struct lg_facts *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < lg->npairs; i++) {
		const struct lg_pair *p = &lg->pairs[i];
		if (p->transport == UINT32_MAX)
			continue;
		struct lg_tstat *t = &f->t[p->transport];
		enum lg_tclass k = lg_transport_class(lg->transports[p->transport].name);
		int same = lg_pair_same_node(lg, p);
		t->pairs++;
		t->connections += p->connections;
		if (!t->example)
			t->example = p;
		f->class_pairs[k]++;
		if (same == 1)
			t->intra++, f->class_intra[k]++;
		else if (same == 0)
			t->inter++, f->class_inter[k]++;
		if (strstr(lg->transports[p->transport].name, "GDRDMA")) {
			t->gdr++;
			if (k == T_IB)
				f->ib_gdr_pairs++;
		}
	}
	for (size_t i = 0; i < lg->ncomms; i++)
		if (lg->comms[i].nranks > f->max_nranks)
			f->max_nranks = lg->comms[i].nranks;
	for (size_t i = 0; i < lg->nprocs; i++)
		f->size1_procs += lg->procs[i].size1;
	for (size_t i = 0; i < lg->nhosts; i++) {
		if (lg->hosts[i].nvlink && !f->any_nvlink) {
			f->any_nvlink = 1;
			f->nvlink_host = lg->hosts[i].name;
		}
		if (lg->hosts[i].ib_devs[0] && !f->any_ib_devs) {
			f->any_ib_devs = 1;
			f->ib_host = lg->hosts[i].name;
		}
	}
}

static const struct lg_env *lg_env_find(const struct nw_log *lg, const char *name)
{
	for (size_t i = 0; i < lg->nenvs; i++)
		if (!strcmp(lg->envs[i].name, name))
			return &lg->envs[i];
	return NULL;
}

/* ---- the diagnosis rules: one table ---- */

struct rule_ctx {
	const struct nw_log *lg;
	const struct lg_facts *f;
};

typedef int (*rule_fn)(const struct rule_ctx *x, char *msg, size_t len);

static int r_version_mismatch(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	const char *seen[8];
	size_t nseen = 0, used = 0;
	for (size_t i = 0; i < lg->nprocs && nseen < NW_ARRAY_LEN(seen); i++) {
		const char *v = lg->procs[i].version;
		if (!v[0])
			continue;
		int dup = 0;
		for (size_t k = 0; k < nseen; k++)
			dup |= !strcmp(seen[k], v);
		if (!dup)
			seen[nseen++] = v;
	}
	if (nseen < 2)
		return 0;
	used += (size_t)snprintf(msg, len, "processes load different NCCL versions:");
	for (size_t k = 0; k < nseen && used < len; k++) {
		size_t np = 0;
		const char *host = "";
		for (size_t i = 0; i < lg->nprocs; i++)
			if (!strcmp(lg->procs[i].version, seen[k]))
				np++, host = lg->hosts[lg->procs[i].host].name;
		used += (size_t)snprintf(msg + used, len - used, "%s %s (%zu process%s, e.g. on '%s')",
		                         k ? "," : "", seen[k], np, np == 1 ? "" : "es", host);
	}
	return 1;
}

static int r_size1(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (x->f->size1_procs >= 2 && x->f->max_nranks == 1) {
		snprintf(msg, len, "%zu processes each formed a communicator of 1 rank and no communicator has more: "
		         "the launcher started processes that NCCL never connected", x->f->size1_procs);
		return 1;
	}
	if (lg->nt_rank0 >= 2) {
		snprintf(msg, len, "%zu different processes each printed nccl-tests' device list as rank 0: "
		         "each ran its own test instead of one test across all", lg->nt_rank0);
		return 1;
	}
	return 0;
}

/* The first pair of ranks seen on one host name and bus id; with
 * local_only, only in a communicator that NCCL did not count as several
 * nodes (ranks told apart by NCCL_HOSTID, or same-named hosts, are on
 * different nodes for NCCL, which then accepts the shared bus id).
 * Returns a pointer into lg or NULL. */
static const struct lg_dup *first_dup(const struct nw_log *lg, int local_only)
{
	for (size_t i = 0; i < lg->ndups; i++)
		if (!local_only || lg->comms[lg->dups[i].comm].nnodes <= 1)
			return &lg->dups[i];
	return NULL;
}

static int r_duplicate_gpu(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	const struct lg_dup *d = first_dup(lg, lg->dup_gpu_warn_lines == 0);
	if (d) {
		snprintf(msg, len, "ranks %d and %d of one communicator use the same GPU (busId %" PRIx64 ") on '%s'%s",
		         d->rank_a, d->rank_b, d->bus, lg->hosts[d->host].name,
		         lg->dup_gpu_warn_lines ? "; NCCL refused it (\"Duplicate GPU detected\")" : "");
		return 1;
	}
	if (lg->dup_gpu_warn_lines) {
		snprintf(msg, len, "NCCL reported \"Duplicate GPU detected\" (%" PRIu64 " line%s): two ranks of one communicator are on one GPU",
		         lg->dup_gpu_warn_lines, lg->dup_gpu_warn_lines == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

static int r_no_iface(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->no_iface_lines)
		return 0;
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_SOCKET_IFNAME");
	snprintf(msg, len, "NCCL found no usable network interface for its sockets%s%s%s",
	         e ? " (NCCL_SOCKET_IFNAME=" : "", e ? e->value : "", e ? " matches none)" : "");
	return 1;
}

static int r_shm_failure(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->shm_fail_lines)
		return 0;
	snprintf(msg, len, "shared memory (/dev/shm) failures: %" PRIu64 " line%s", x->lg->shm_fail_lines,
	         x->lg->shm_fail_lines == 1 ? "" : "s");
	return 1;
}

static int r_watchdog(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	if (!lg->ntimeouts)
		return 0;
	size_t used = (size_t)snprintf(msg, len, "PyTorch's watchdog timed out on %zu collective%s:", lg->ntimeouts,
	                               lg->ntimeouts == 1 ? "" : "s");
	for (size_t i = 0; i < lg->ntimeouts && i < 8 && used < len; i++) {
		const struct lg_timeout *t = &lg->timeouts[i];
		used += (size_t)snprintf(msg + used, len - used, "%s rank %d %s SeqNum=%lld", i ? "," : "", t->rank,
		                         t->op[0] ? t->op : "?", t->seq);
		if (used < len && t->timeout_ms >= 0)
			used += (size_t)snprintf(msg + used, len - used, " (timeout %lld ms, ran %lld ms)", t->timeout_ms, t->ran_ms);
	}
	return 1;
}

static int r_rendezvous(const struct rule_ctx *x, char *msg, size_t len)
{
	if (!x->lg->rendezvous_lines)
		return 0;
	if (x->lg->rdv_expected > 0)
		snprintf(msg, len, "the rendezvous (c10d store) timed out waiting for ranks to join: %lld of %lld joined",
		         x->lg->rdv_joined, x->lg->rdv_expected);
	else
		snprintf(msg, len, "the rendezvous (c10d store) timed out waiting for ranks to join");
	return 1;
}

static int r_nccl_error(const struct rule_ctx *x, char *msg, size_t len)
{
	size_t used = 0;
	for (int i = 1; i < 7; i++)
		if (x->lg->err_codes[i] && used < len)
			used += (size_t)snprintf(msg + used, len - used, "%s%s (%" PRIu64 " line%s)",
			                         used ? ", " : "NCCL returned errors: ", lg_nccl_results[i], x->lg->err_codes[i],
			                         x->lg->err_codes[i] == 1 ? "" : "s");
	return used > 0;
}

static int r_init_incomplete(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		if (c->init_started > c->init_completed) {
			snprintf(msg, len, "%d of %d rank%s of communicator %s%" PRIx64 " started init but never logged Init COMPLETE",
			         c->init_started - c->init_completed, c->init_started, c->init_started == 1 ? "" : "s",
			         c->has_id ? "0x" : "of size ", c->has_id ? c->id : (uint64_t)c->nranks);
			return 1;
		}
	}
	return 0;
}

static int r_net_within_node(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	uint64_t n = f->class_intra[T_SOCKET] + f->class_intra[T_IB] + f->class_intra[T_NET_OTHER];
	if (!n)
		return 0;
	size_t used = (size_t)snprintf(msg, len, "%" PRIu64 " peer pair%s on the same node talk through the network (%s)%s", n,
	                               n == 1 ? "" : "s", f->class_intra[T_SOCKET] ? "TCP sockets" : "NIC loopback",
	                               f->any_nvlink ? ", although the GPUs are joined by NVLink" : "");
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_HOSTID");
	if (e && used < len)
		used += (size_t)snprintf(msg + used, len - used,
		                         "; NCCL_HOSTID is set by the environment (e.g. to %s): NCCL counts ranks with different host ids as different nodes, unset it",
		                         e->value);
	const struct lg_dup *d = first_dup(x->lg, 0);
	if (d && used < len)
		snprintf(msg + used, len - used, "; ranks %d and %d share the GPU at busId %" PRIx64 " on '%s'", d->rank_a,
		         d->rank_b, d->bus, x->lg->hosts[d->host].name);
	return 1;
}

static int r_socket_between_nodes(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	uint64_t n = f->class_inter[T_SOCKET];
	if (!n)
		return 0;
	if (f->any_ib_devs)
		snprintf(msg, len, "%" PRIu64 " peer pair%s between nodes use TCP sockets although InfiniBand/RoCE devices were found (on '%s')",
		         n, n == 1 ? "" : "s", f->ib_host);
	else
		snprintf(msg, len, "%" PRIu64 " peer pair%s between nodes use TCP sockets: NCCL found no InfiniBand/RoCE device", n,
		         n == 1 ? "" : "s");
	return 1;
}

static int r_shm(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	if (!f->class_pairs[T_SHM])
		return 0;
	const struct lg_env *e = lg_env_find(x->lg, "NCCL_P2P_DISABLE");
	snprintf(msg, len, "%" PRIu64 " peer pair%s go through host shared memory (SHM) instead of GPU peer-to-peer%s%s",
	         f->class_pairs[T_SHM], f->class_pairs[T_SHM] == 1 ? "" : "s",
	         e && strcmp(e->value, "0") ? " because NCCL_P2P_DISABLE is set" : "",
	         f->any_nvlink ? "; the GPUs are joined by NVLink" : "");
	return 1;
}

static int r_gdr(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_facts *f = x->f;
	if (f->class_pairs[T_IB] && !f->ib_gdr_pairs) {
		snprintf(msg, len, "%" PRIu64 " InfiniBand peer pair%s copy through host memory: GPUDirect RDMA is not used",
		         f->class_pairs[T_IB], f->class_pairs[T_IB] == 1 ? "" : "s");
		return 1;
	}
	if (x->lg->gdr_off_lines) {
		snprintf(msg, len, "NCCL reports GPUDirect RDMA disabled (%" PRIu64 " line%s)", x->lg->gdr_off_lines,
		         x->lg->gdr_off_lines == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

static int r_forced(const struct rule_ctx *x, char *msg, size_t len, const char *var, const char *what)
{
	const struct lg_env *e = lg_env_find(x->lg, var);
	if (!e)
		return 0;
	snprintf(msg, len, "%s is forced by the environment: %s=%s", what, var, e->value);
	return 1;
}

static int r_forced_algo(const struct rule_ctx *x, char *msg, size_t len)
{
	return r_forced(x, msg, len, "NCCL_ALGO", "the algorithm");
}

static int r_forced_proto(const struct rule_ctx *x, char *msg, size_t len)
{
	return r_forced(x, msg, len, "NCCL_PROTO", "the protocol");
}

static int r_transport_disabled(const struct rule_ctx *x, char *msg, size_t len)
{
	static const struct { const char *var, *bad[3]; } vars[] = {
		{ "NCCL_P2P_DISABLE", { "1", NULL, NULL } },
		{ "NCCL_SHM_DISABLE", { "1", NULL, NULL } },
		{ "NCCL_IB_DISABLE", { "1", NULL, NULL } },
		{ "NCCL_NET_GDR_LEVEL", { "0", "LOC", NULL } },
		{ "NCCL_P2P_LEVEL", { "0", "LOC", NULL } },
	};
	size_t used = 0;
	for (size_t i = 0; i < NW_ARRAY_LEN(vars); i++) {
		const struct lg_env *e = lg_env_find(x->lg, vars[i].var);
		if (!e)
			continue;
		for (int k = 0; k < 3 && vars[i].bad[k]; k++)
			if (!strcmp(e->value, vars[i].bad[k]) && used < len)
				used += (size_t)snprintf(msg + used, len - used, "%s%s=%s", used ? ", " : "transports disabled by the environment: ",
				                         vars[i].var, e->value);
	}
	return used > 0;
}

static int r_ranks_missing(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct nw_log *lg = x->lg;
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		if (c->has_id && c->ranks_seen < c->nranks) {
			snprintf(msg, len, "communicator 0x%" PRIx64 " has %d ranks but only %d appear in the log", c->id,
			         c->nranks, c->ranks_seen);
			return 1;
		}
	}
	return 0;
}

static int r_nccl_warn(const struct rule_ctx *x, char *msg, size_t len)
{
	uint64_t lines = 0, groups = 0;
	const struct lg_group *first = NULL;
	for (size_t i = 0; i < x->lg->ngroups; i++)
		if (x->lg->groups[i].kind == G_NCCL_WARN) {
			lines += x->lg->groups[i].count;
			groups++;
			if (!first)
				first = &x->lg->groups[i];
		}
	if (!lines)
		return 0;
	snprintf(msg, len, "%" PRIu64 " NCCL WARN line%s, %" PRIu64 " distinct cause%s; first: %.200s", lines,
	         lines == 1 ? "" : "s", groups, groups == 1 ? "" : "s", first->first);
	return 1;
}

struct rule {
	struct nw_log_rule_info info;
	rule_fn fn;
};

static const struct rule rules[] = {
	{ { "nccl-version-mismatch", NW_LOG_ERROR, "processes load different NCCL versions",
	    "load one NCCL everywhere: same container image, or set LD_LIBRARY_PATH/LD_PRELOAD to one libnccl.so.2 on every node" }, r_version_mismatch },
	{ { "size1-communicators", NW_LOG_ERROR, "every process formed its own 1-rank communicator (processes not connected)",
	    "nccl-tests under mpirun must be built with MPI=1; torch.distributed needs WORLD_SIZE/RANK from the launcher (torchrun, srun) rather than defaults" }, r_size1 },
	{ { "duplicate-gpu", NW_LOG_ERROR, "two ranks of one communicator on the same GPU",
	    "give each local rank its own device: torch.cuda.set_device(LOCAL_RANK), or CUDA_VISIBLE_DEVICES per rank; do not start more ranks per node than GPUs" }, r_duplicate_gpu },
	{ { "no-socket-interface", NW_LOG_ERROR, "no usable network interface for NCCL's sockets",
	    "set NCCL_SOCKET_IFNAME to an interface that exists and is up on every node (ip -br addr), or unset it" }, r_no_iface },
	{ { "shm-failure", NW_LOG_ERROR, "shared memory (/dev/shm) failures",
	    "give the container more /dev/shm (docker --shm-size=1g or --ipc=host; Kubernetes: an emptyDir of medium Memory on /dev/shm)" }, r_shm_failure },
	{ { "watchdog-timeout", NW_LOG_ERROR, "PyTorch watchdog timed out on a collective",
	    "find the rank that did not reach this collective (SeqNum): it crashed, hung, or ran a different sequence of collectives; raise the timeout only for known slow steps" }, r_watchdog },
	{ { "rendezvous-timeout", NW_LOG_ERROR, "rendezvous timed out waiting for ranks",
	    "check that every rank started and reaches MASTER_ADDR:MASTER_PORT, and that WORLD_SIZE matches the ranks launched" }, r_rendezvous },
	{ { "nccl-error", NW_LOG_ERROR, "NCCL calls returned errors",
	    "read the WARN lines above the first error: ncclSystemError is the OS or network (interfaces, /dev/shm, ulimits), ncclRemoteError a peer that died, ncclUnhandledCudaError the GPU or driver, ncclInvalidUsage the program" }, r_nccl_error },
	{ { "init-incomplete", NW_LOG_WARNING, "communicator initialisation started but did not complete",
	    "a rank hung or died during init: look at the ranks that have Init START but no Init COMPLETE, and at their WARN lines" }, r_init_incomplete },
	{ { "net-within-node", NW_LOG_WARNING, "ranks on one node talk through the network",
	    "unset NCCL_P2P_DISABLE/NCCL_SHM_DISABLE (and NCCL_HOSTID when it differs between ranks of one host); in containers allow GPU peer access (--ipc=host, all GPUs visible to every rank)" }, r_net_within_node },
	{ { "socket-between-nodes", NW_LOG_WARNING, "inter-node traffic over TCP sockets",
	    "make the InfiniBand/RoCE devices visible (--device=/dev/infiniband, rdma-core installed), unset NCCL_IB_DISABLE, or install the cloud's NET plugin (aws-ofi-nccl, gIB)" }, r_socket_between_nodes },
	{ { "shm-instead-of-p2p", NW_LOG_WARNING, "peer pairs through host shared memory instead of P2P",
	    "unset NCCL_P2P_DISABLE; check that the GPUs can reach each other (nvidia-smi topo -m), and that containers see all GPUs of the node" }, r_shm },
	{ { "gdr-disabled", NW_LOG_WARNING, "GPUDirect RDMA not used on InfiniBand",
	    "load nvidia-peermem (or use DMA-BUF with a recent driver), check NCCL_NET_GDR_LEVEL, and keep NICs and GPUs under the same PCIe switch" }, r_gdr },
	{ { "forced-algorithm", NW_LOG_WARNING, "NCCL_ALGO forced by the environment",
	    "unset NCCL_ALGO unless a measurement on this machine shows it helps ('ncclwatch tune')" }, r_forced_algo },
	{ { "forced-protocol", NW_LOG_WARNING, "NCCL_PROTO forced by the environment",
	    "unset NCCL_PROTO unless a measurement on this machine shows it helps ('ncclwatch tune')" }, r_forced_proto },
	{ { "transport-disabled", NW_LOG_WARNING, "a transport disabled by the environment",
	    "unset the variable unless it works around a known problem on this machine" }, r_transport_disabled },
	{ { "nccl-warnings", NW_LOG_WARNING, "NCCL printed WARN lines",
	    "read the grouped WARN lines; the first one in time is usually the cause" }, r_nccl_warn },
	{ { "ranks-missing", NW_LOG_INFO, "a communicator has ranks whose lines are not in the log",
	    "give logscan the logs of every node (NCCL_DEBUG_FILE=/path/nccl.%h.%p.log writes one per process)" }, r_ranks_missing },
};

size_t nw_log_rules(const struct nw_log_rule_info **out)
{
	static struct nw_log_rule_info infos[NW_ARRAY_LEN(rules)];
	for (size_t i = 0; i < NW_ARRAY_LEN(rules); i++)
		infos[i] = rules[i].info;
	*out = infos;
	return NW_ARRAY_LEN(rules);
}

static const char *severity_name(enum nw_log_severity s)
{
	return s == NW_LOG_ERROR ? "error" : s == NW_LOG_WARNING ? "warning" : "info";
}

/* ---- report ---- */

static const char *pattern_name(int p)
{
	static const char *const names[] = { "?", "balanced-tree", "split-tree", "tree", "ring", "nvls", "collnet-direct" };
	return p >= 0 && p < (int)NW_ARRAY_LEN(names) ? names[p] : "?";
}

static json_t *jstr(const char *s)
{
	/* table strings come from the log: make sure they are valid UTF-8 for JSON */
	json_t *v = json_string(s);
	if (v)
		return v;
	char buf[512];
	size_t i = 0;
	for (; s[i] && i + 1 < sizeof(buf); i++)
		buf[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	buf[i] = '\0';
	return json_string(buf);
}

json_t *nw_log_report(struct nw_log *lg)
{
	struct lg_facts f;
	lg_compute_facts(lg, &f);
	json_t *doc = json_object();
	json_object_set_new(doc, "schema", json_string("ncclwatch.logscan/1"));

	json_t *in = json_object();
	json_object_set(in, "files", lg->files);
	json_object_set_new(in, "lines", json_integer((json_int_t)lg->lines));
	json_object_set_new(in, "bytes", json_integer((json_int_t)lg->bytes));
	json_object_set_new(in, "nccl_lines", json_integer((json_int_t)lg->nccl_lines));
	json_object_set_new(in, "other_lines", json_integer((json_int_t)lg->other_lines));
	json_object_set_new(in, "unparsed", json_integer((json_int_t)lg->unparsed));
	json_object_set_new(in, "long_lines", json_integer((json_int_t)lg->long_lines));
	json_object_set_new(in, "not_recorded", json_integer((json_int_t)(lg->dropped + lg->groups_overflow)));
	json_object_set_new(doc, "input", in);

	json_t *hosts = json_array();
	for (size_t i = 0; i < lg->nhosts && i < 256; i++)
		json_array_append_new(hosts, jstr(lg->hosts[i].name));
	json_object_set_new(doc, "hosts", hosts);
	json_object_set_new(doc, "nhosts", json_integer((json_int_t)lg->nhosts));
	json_object_set_new(doc, "processes", json_integer((json_int_t)lg->nprocs));

	/* versions: one entry per distinct version string (the first 64) */
	struct { const char *v; size_t np; long cuda; json_t *hosts; uint32_t last_host; } vs[64];
	size_t nvs = 0;
	for (size_t i = 0; i < lg->nprocs; i++) {
		const struct lg_proc *p = &lg->procs[i];
		if (!p->version[0])
			continue;
		size_t k = 0;
		while (k < nvs && strcmp(vs[k].v, p->version))
			k++;
		if (k == nvs) {
			if (nvs == NW_ARRAY_LEN(vs))
				continue;
			vs[nvs].v = p->version;
			vs[nvs].np = 0;
			vs[nvs].cuda = p->cuda_driver;
			vs[nvs].hosts = json_array();
			vs[nvs].last_host = UINT32_MAX;
			nvs++;
		}
		vs[k].np++;
		if (p->host != vs[k].last_host && json_array_size(vs[k].hosts) < 16) {
			const char *h = lg->hosts[p->host].name;
			int hdup = 0;
			size_t idx;
			json_t *x;
			json_array_foreach(vs[k].hosts, idx, x) hdup |= !strcmp(json_string_value(x), h);
			if (!hdup)
				json_array_append_new(vs[k].hosts, jstr(h));
			vs[k].last_host = p->host;
		}
	}
	json_t *vers = json_array();
	for (size_t k = 0; k < nvs; k++) {
		json_t *o = json_object();
		json_object_set_new(o, "version", jstr(vs[k].v));
		json_object_set_new(o, "processes", json_integer((json_int_t)vs[k].np));
		json_object_set_new(o, "hosts", vs[k].hosts);
		if (vs[k].cuda > 0)
			json_object_set_new(o, "cuda_driver", json_integer(vs[k].cuda));
		json_array_append_new(vers, o);
	}
	json_object_set_new(doc, "versions", vers);
	if (lg->torch_nccl_version[0])
		json_object_set_new(doc, "pytorch_nccl_version", jstr(lg->torch_nccl_version));

	json_t *comms = json_array();
	for (size_t i = 0; i < lg->ncomms; i++) {
		const struct lg_comm *c = &lg->comms[i];
		json_t *o = json_object();
		char id[32];
		if (c->has_id)
			snprintf(id, sizeof(id), "0x%" PRIx64, c->id);
		else
			snprintf(id, sizeof(id), "size-%d", c->nranks);
		json_object_set_new(o, "id", json_string(id));
		json_object_set_new(o, "nranks", json_integer(c->nranks));
		json_object_set_new(o, "ranks_seen", json_integer(c->ranks_seen));
		json_object_set_new(o, "nnodes", c->nnodes > 0 ? json_integer(c->nnodes) : json_null());
		json_object_set_new(o, "local_ranks", c->local_ranks > 0 ? json_integer(c->local_ranks) : json_null());
		json_object_set_new(o, "init_started", json_integer(c->init_started));
		json_object_set_new(o, "init_completed", json_integer(c->init_completed));
		json_object_set_new(o, "channels", json_integer(c->nchannels));
		json_object_set_new(o, "ring", jstr(c->ring));
		json_object_set_new(o, "ring_lines", json_integer(c->ring_lines));
		json_object_set_new(o, "tree_lines", json_integer(c->tree_lines));
		json_object_set_new(o, "tree", jstr(c->tree));
		json_array_append_new(comms, o);
	}
	json_object_set_new(doc, "communicators", comms);

	json_t *tr = json_array();
	for (size_t i = 0; i < lg->ntransports; i++) {
		const struct lg_tstat *t = &f.t[i];
		if (!t->pairs)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "transport", jstr(lg->transports[i].name));
		json_object_set_new(o, "class", json_string(lg_tclass_names[lg_transport_class(lg->transports[i].name)]));
		json_object_set_new(o, "gdrdma", json_boolean(t->gdr > 0));
		json_object_set_new(o, "pairs", json_integer((json_int_t)t->pairs));
		json_object_set_new(o, "connections", json_integer((json_int_t)t->connections));
		json_object_set_new(o, "intra_node_pairs", json_integer((json_int_t)t->intra));
		json_object_set_new(o, "inter_node_pairs", json_integer((json_int_t)t->inter));
		char ex[64];
		snprintf(ex, sizeof(ex), "%d -> %d", t->example->src, t->example->dst);
		json_object_set_new(o, "example", json_string(ex));
		json_array_append_new(tr, o);
	}
	json_object_set_new(doc, "transports", tr);
	json_t *pairs = json_array();
	for (size_t i = 0; i < lg->npairs && i < 1024; i++) {
		const struct lg_pair *p = &lg->pairs[i];
		if (p->transport == UINT32_MAX)
			continue;
		json_t *o = json_object();
		char id[32] = "";
		if (p->comm != UINT32_MAX) {
			const struct lg_comm *c = &lg->comms[p->comm];
			if (c->has_id)
				snprintf(id, sizeof(id), "0x%" PRIx64, c->id);
			else
				snprintf(id, sizeof(id), "size-%d", c->nranks);
		}
		json_object_set_new(o, "comm", json_string(id));
		json_object_set_new(o, "src", json_integer(p->src));
		json_object_set_new(o, "dst", json_integer(p->dst));
		json_object_set_new(o, "transport", jstr(lg->transports[p->transport].name));
		json_object_set_new(o, "connections", json_integer(p->connections));
		int same = lg_pair_same_node(lg, p);
		json_object_set_new(o, "same_node", same < 0 ? json_null() : json_boolean(same));
		json_array_append_new(pairs, o);
	}
	json_object_set_new(doc, "pairs", pairs);
	json_object_set_new(doc, "npairs", json_integer((json_int_t)lg->npairs));
	json_t *nv = json_object();
	json_object_set_new(nv, "nvls_available", json_boolean(lg->nvls_available));
	json_object_set_new(nv, "nvls_channels", json_integer(lg->nvls_channels_max));
	json_object_set_new(nv, "collnet_connected", json_boolean(lg->collnet_connected > 0));
	json_object_set_new(nv, "nvlink_seen", json_boolean(f.any_nvlink));
	json_object_set_new(doc, "collective_transports", nv);

	json_t *nets = json_array();
	for (size_t i = 0; i < lg->nhosts && json_array_size(nets) < 64; i++) {
		const struct lg_host *h = &lg->hosts[i];
		if (!h->ib_devs[0] && !h->socket_ifs[0] && !h->ib_absent)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "host", jstr(h->name));
		json_object_set_new(o, "ib", jstr(h->ib_devs[0] ? h->ib_devs : h->ib_absent ? "none found" : ""));
		json_object_set_new(o, "socket", jstr(h->socket_ifs));
		json_array_append_new(nets, o);
	}
	json_object_set_new(doc, "networks", nets);

	json_t *gr = json_array();
	for (size_t i = 0; i < lg->ngraphs; i++) {
		const struct lg_graph *g = &lg->graphs[i];
		json_t *o = json_object();
		json_object_set_new(o, "pattern", json_string(pattern_name(g->pattern)));
		json_object_set_new(o, "pattern_id", json_integer(g->pattern));
		json_object_set_new(o, "channels", json_integer(g->nchannels));
		json_object_set_new(o, "bw", jstr(g->bw));
		json_object_set_new(o, "type", jstr(g->type));
		json_object_set_new(o, "lines", json_integer(g->count));
		json_array_append_new(gr, o);
	}
	json_object_set_new(doc, "graphs", gr);

	json_t *al = json_array();
	for (size_t i = 0; i < lg->nalgos; i++) {
		const struct lg_algo *a = &lg->algos[i];
		json_t *o = json_object();
		json_object_set_new(o, "op", jstr(a->op));
		json_object_set_new(o, "algo", jstr(a->algo));
		json_object_set_new(o, "proto", jstr(a->proto));
		json_object_set_new(o, "calls", json_integer((json_int_t)a->calls));
		json_object_set_new(o, "min_bytes", json_integer((json_int_t)a->min_bytes));
		json_object_set_new(o, "max_bytes", json_integer((json_int_t)a->max_bytes));
		json_array_append_new(al, o);
	}
	json_object_set_new(doc, "algorithms", al);

	json_t *env = json_array();
	for (size_t i = 0; i < lg->nenvs; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "name", jstr(lg->envs[i].name));
		json_object_set_new(o, "value", jstr(lg->envs[i].value));
		json_object_set_new(o, "lines", json_integer(lg->envs[i].lines));
		json_array_append_new(env, o);
	}
	json_object_set_new(doc, "env", env);

	int nerr = 0;
	json_t *errs = json_array();
	for (size_t i = 0; i < lg->ngroups; i++) {
		const struct lg_group *g = &lg->groups[i];
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(group_kind_names[g->kind]));
		json_object_set_new(o, "cause", jstr(g->cause));
		json_object_set_new(o, "count", json_integer((json_int_t)g->count));
		json_object_set_new(o, "first", jstr(g->first));
		json_object_set_new(o, "first_host", jstr(g->first_host));
		json_object_set_new(o, "several_hosts", json_boolean(g->several_hosts));
		json_array_append_new(errs, o);
		nerr++;
	}
	json_object_set_new(doc, "errors", errs);
	if (lg->groups_overflow)
		json_object_set_new(doc, "errors_not_grouped", json_integer((json_int_t)lg->groups_overflow));

	json_t *to = json_array();
	for (size_t i = 0; i < lg->ntimeouts; i++) {
		const struct lg_timeout *t = &lg->timeouts[i];
		json_t *o = json_object();
		json_object_set_new(o, "rank", t->rank >= 0 ? json_integer(t->rank) : json_null());
		json_object_set_new(o, "op", jstr(t->op));
		json_object_set_new(o, "seq", t->seq >= 0 ? json_integer(t->seq) : json_null());
		json_object_set_new(o, "timeout_ms", t->timeout_ms >= 0 ? json_integer(t->timeout_ms) : json_null());
		json_object_set_new(o, "ran_ms", t->ran_ms >= 0 ? json_integer(t->ran_ms) : json_null());
		json_array_append_new(to, o);
	}
	json_object_set_new(doc, "timeouts", to);

	json_t *dg = json_array();
	struct rule_ctx x = { lg, &f };
	for (size_t i = 0; i < NW_ARRAY_LEN(rules); i++) {
		char msg[1024];
		msg[0] = '\0';
		if (!rules[i].fn(&x, msg, sizeof(msg)))
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "id", json_string(rules[i].info.id));
		json_object_set_new(o, "severity", json_string(severity_name(rules[i].info.severity)));
		json_object_set_new(o, "message", jstr(msg));
		json_object_set_new(o, "fix", json_string(rules[i].info.fix));
		json_array_append_new(dg, o);
		if (rules[i].info.severity == NW_LOG_ERROR)
			nerr++;
	}
	json_object_set_new(doc, "diagnoses", dg);
	lg->nerrors = nerr;
	return doc;
}

int nw_log_nerrors(const struct nw_log *lg)
{
	return lg->nerrors;
}
