/* WARN and error lines of the log analyser: grouped by cause, and what their text tells the diagnosis rules. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

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

void lg_add_group(struct nw_log *lg, enum lg_group_kind kind, uint32_t host, const char *msg, size_t n)
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

const char *const lg_nccl_results[8] = {
	"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
};

/*
 * Root causes that an error text names: crashes, GPU memory, IB completion
 * status, socket connects, NVLS, sysfs, a peer that closed the connection.
 */
static void lg_classify_cause(struct nw_log *lg, const char *s, size_t n)
{
	const char *p;
	if (find(s, n, "Bus error") || find(s, n, "signal 7 "))
		lg->bus_error_lines++;
	if (find(s, n, "Segmentation fault") || find(s, n, "SIGSEGV") || find(s, n, "signal 11 "))
		lg->segv_lines++;
	if (find(s, n, "out of memory") || find(s, n, "Failed to CUDA calloc") || find(s, n, "CUDA_ERROR_OUT_OF_MEMORY"))
		lg->oom_lines++;
	if ((p = find(s, n, "with status=")) || (p = find(s, n, "with error "))) {
		size_t off = (size_t)(p - s) + (p[5] == 's' ? 12 : 11), used;
		long long st = parse_ll(s + off, n - off, &used);
		if (used && find(s, n, "completion") && !lg->ib_status_lines++)
			lg->ib_status = (int)st;
	}
	if ((find(s, n, "socketStartConnect") || find(s, n, "Connect to ") || find(s, n, "connect failed")) &&
	    (find(s, n, "failed") || find(s, n, "refused") || find(s, n, "abort") || find(s, n, "timed out"))) {
		lg->sock_connect_lines++;
		if (find(s, n, "to 127.") || find(s, n, "to ::1<") || find(s, n, "to [::1]"))
			lg->sock_loopback_lines++;
	}
	if (find(s, n, "collective mismatch error"))
		lg->coll_mismatch_lines++;
	if (find(s, n, "driver version is insufficient") || find(s, n, "CUDA_ERROR_INSUFFICIENT_DRIVER"))
		lg->driver_old_lines++;
	if (find(s, n, "SHARP group create") || find(s, n, "Failed to lock SAT tree") || find(s, n, "CollNet setup failed"))
		lg->collnet_fail_lines++;
	if (find(s, n, "does not loop back to start"))
		lg->ring_loop_lines++;
	if (find(s, n, "nvls.cc") || find(s, n, "NVLS"))
		lg->nvls_fail_lines++;
	if (find(s, n, "Could not find real path of /sys"))
		lg->sysfs_lines++;
	if (find(s, n, "Connection closed by remote peer") || find(s, n, "Connection reset by peer") ||
	    find(s, n, "remote process exited"))
		lg->peer_closed_lines++;
}

/* Facts that the diagnosis rules need, from any error or warning text. */
void lg_classify(struct nw_log *lg, const char *s, size_t n)
{
	if (find(s, n, "no socket interface found") || find(s, n, "no interface found") ||
	    find(s, n, "No usable listening interface") || find(s, n, "no usable interface"))
		lg->no_iface_lines++;
	if (find(s, n, "/dev/shm") || find(s, n, "shm_open") || find(s, n, "shared memory") || find(s, n, "posix_fallocate") ||
	    find(s, n, "Shared memory") || find(s, n, "ShmSegment"))
		lg->shm_fail_lines++;
	if (find(s, n, "Duplicate GPU detected"))
		lg->dup_gpu_warn_lines++;
	if (find(s, n, "GPU Direct RDMA Disabled") || find(s, n, "GDR is disabled") || find(s, n, "GDRDMA disabled")) {
		if (!lg->gdr_off_lines++)
			copy_str(lg->gdr_detail, sizeof(lg->gdr_detail), s, n);
	}
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
	lg_classify_cause(lg, s, n);
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

/* The root-cause counters whose first host is remembered (at most NW_ARRAY_LEN(nw_log.cause_host)). */
static const size_t lg_cause_counters[] = {
	offsetof(struct nw_log, bus_error_lines), offsetof(struct nw_log, segv_lines), offsetof(struct nw_log, oom_lines),
	offsetof(struct nw_log, sock_connect_lines), offsetof(struct nw_log, nvls_fail_lines),
	offsetof(struct nw_log, sysfs_lines), offsetof(struct nw_log, peer_closed_lines),
	offsetof(struct nw_log, shm_fail_lines), offsetof(struct nw_log, no_iface_lines),
	offsetof(struct nw_log, sock_loopback_lines), offsetof(struct nw_log, coll_mismatch_lines),
	offsetof(struct nw_log, driver_old_lines), offsetof(struct nw_log, collnet_fail_lines),
	offsetof(struct nw_log, ring_loop_lines), offsetof(struct nw_log, smem_exceed_lines),
};
_Static_assert(NW_ARRAY_LEN(lg_cause_counters) <= NW_ARRAY_LEN(((struct nw_log *)0)->cause_host),
               "cause_host too small");

static uint64_t counter_at(const struct nw_log *lg, size_t k)
{
	uint64_t v;
	memcpy(&v, (const char *)lg + lg_cause_counters[k], sizeof(v));
	return v;
}

const char *lg_cause_host(const struct nw_log *lg, const uint64_t *counter)
{
	for (size_t k = 0; k < NW_ARRAY_LEN(lg_cause_counters); k++)
		if ((const char *)lg + lg_cause_counters[k] == (const char *)counter && lg->cause_host[k])
			return lg->hosts[lg->cause_host[k] - 1].name;
	return NULL;
}

void lg_warn_line(struct nw_log *lg, uint32_t host, const char *msg, size_t n)
{
	uint64_t before[NW_ARRAY_LEN(lg_cause_counters)];
	for (size_t k = 0; k < NW_ARRAY_LEN(before); k++)
		before[k] = counter_at(lg, k);
	lg_classify(lg, msg, n);
	if (host != UINT32_MAX)
		for (size_t k = 0; k < NW_ARRAY_LEN(before); k++)
			if (!before[k] && counter_at(lg, k) && !lg->cause_host[k])
				lg->cause_host[k] = host + 1;
	lg_add_group(lg, G_NCCL_WARN, host, msg, n);
}
