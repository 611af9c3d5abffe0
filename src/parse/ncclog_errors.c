/* SPDX-License-Identifier: Apache-2.0 */
/* WARN and error lines of the log analyser: grouped by cause, and the facts their text gives the diagnosis rules. */
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

/*
 * The WARN lines NCCL and libfabric print on healthy machines (no
 * InfiniBand library, no MSCCL++, a topology search falling back, the
 * GPUDirect RDMA probe of a machine without InfiniBand, aws-ofi-nccl
 * turning libfabric's shared memory off): not errors of the job.
 */
int lg_benign(const char *cause)
{
	static const char *const benign[] = {
		"Failed to open libibverbs", "lib wrapper not initialized", "Cannot enable MSCCL",
		"Could not find a path for pattern", "NET/IB : No device found", "net_ib/gdr.cc",
		"FI_OPT_SHARED_MEMORY_PERMITTED set to false",
	};
	for (size_t k = 0; k < NW_ARRAY_LEN(benign); k++)
		if (strstr(cause, benign[k]))
			return 1;
	return 0;
}

struct lg_group *lg_add_group(struct nw_log *lg, enum lg_group_kind kind, uint32_t host, const char *msg, size_t n)
{
	char key[160];
	size_t kn = normalize(msg, n, key, sizeof(key));
	int created;
	uint32_t *v = lg_ht_get(&lg->group_idx, lg_hash_str(key, kn), (uint64_t)kind, 1, &created);
	if (!v) {
		lg->groups_overflow++;
		return NULL;
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
	if (!lg_benign(g->cause))
		copy_str(lg->last_error_line, sizeof(lg->last_error_line), msg, n);
	return g;
}

void lg_fact(struct nw_log *lg, enum lg_fact f, uint32_t host, const char *s, size_t n)
{
	struct lg_fact_rec *r = &lg->facts[f];
	if (!r->n++) {
		r->host = host;
		copy_str(r->line, sizeof(r->line), s, n);
	}
}

const char *const lg_nccl_results[8] = {
	"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
};

/* "... with status=12 ..." / "... with error 12, ...": an IB work completion's status. */
static void ib_completion(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	const char *p = find(s, n, "with status=");
	size_t off = p ? 12 : 11;
	if (!p)
		p = find(s, n, "with error ");
	if (!p || !find(s, n, "completion"))
		return;
	size_t used, at = (size_t)(p - s) + off;
	long long st = parse_ll(s + at, n - at, &used);
	if (!used)
		return;
	if (!lg->facts[F_IB_STATUS].n)
		lg->ib_status = (int)st;
	lg_fact(lg, F_IB_STATUS, host, s, n);
}

/*
 * aws-ofi-nccl's NET/OFI errors: a completion that failed ("Request 0x..
 * completed with error. RC: 113. Error: 2 (UNDELIVERABLE)"), no usable
 * libfabric provider, endpoints or address vectors that could not be set up.
 */
static void ofi_error(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	const char *p;
	if (!find(s, n, "NET/OFI"))
		return;
	if (find(s, n, "completed with error")) {
		if (!lg->facts[F_OFI_COMPLETION].n && (p = find(s, n, "RC: "))) {
			const char *e = find(p, (size_t)(s + n - p), ". Completed");
			copy_str(lg->ofi_error, sizeof(lg->ofi_error), p, e ? (size_t)(e - p) : (size_t)(s + n - p));
		}
		lg_fact(lg, F_OFI_COMPLETION, host, s, n);
	} else if (find(s, n, "fi_getinfo() call failed") || find(s, n, "Couldn't find any optimal provider") ||
	           find(s, n, "Only EFA provider is supported")) {
		lg_fact(lg, F_OFI_NO_PROVIDER, host, s, n);
	} else if (find(s, n, "Couldn't open AV") || find(s, n, "address vector") || find(s, n, "Creating new endpoint") ||
	           find(s, n, "fabric access domain") || find(s, n, "Couldn't open a fabric")) {
		lg_fact(lg, F_OFI_SETUP, host, s, n);
	}
}

/* "GPU Direct RDMA Disabled for GPU g / HCA h (distance d > l)" or "... Disabled for HCA 0 'mlx5_0'". */
static void gdr_off(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	if (!find(s, n, "GPU Direct RDMA Disabled") && !find(s, n, "GDR is disabled") && !find(s, n, "GDRDMA disabled"))
		return;
	if (starts(s, n, "NET/Socket"))
		return; /* sockets never use GPUDirect RDMA: NCCL says so for every interface */
	lg_fact(lg, find(s, n, "(distance ") ? F_GDR_DISTANCE : F_GDR_HCA, host, s, n);
}

/*
 * Root causes that an error text names: crashes, GPU memory, IB completion
 * status, socket connects, NVLS, sysfs, a peer that closed the connection.
 */
static void lg_classify_cause(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	if (find(s, n, "Bus error") || find(s, n, "signal 7 "))
		lg_fact(lg, F_BUS_ERROR, host, s, n);
	if (find(s, n, "Segmentation fault") || find(s, n, "SIGSEGV") || find(s, n, "signal 11 "))
		lg_fact(lg, F_SEGV, host, s, n);
	if (find(s, n, "out of memory") || find(s, n, "Failed to CUDA calloc") || find(s, n, "CUDA_ERROR_OUT_OF_MEMORY"))
		lg_fact(lg, F_OOM, host, s, n);
	ib_completion(lg, host, s, n);
	if ((find(s, n, "socketStartConnect") || find(s, n, "Connect to ") || find(s, n, "connect failed")) &&
	    (find(s, n, "failed") || find(s, n, "refused") || find(s, n, "abort") || find(s, n, "timed out"))) {
		lg_fact(lg, F_SOCK_CONNECT, host, s, n);
		if (find(s, n, "to 127.") || find(s, n, "to ::1<") || find(s, n, "to [::1]"))
			lg_fact(lg, F_SOCK_LOOPBACK, host, s, n);
	}
	if (find(s, n, "collective mismatch error"))
		lg_fact(lg, F_COLL_MISMATCH, host, s, n);
	if (find(s, n, "driver version is insufficient") || find(s, n, "CUDA_ERROR_INSUFFICIENT_DRIVER"))
		lg_fact(lg, F_DRIVER_OLD, host, s, n);
	if (find(s, n, "SHARP group create") || find(s, n, "Failed to lock SAT tree") || find(s, n, "CollNet setup failed"))
		lg_fact(lg, F_COLLNET_FAIL, host, s, n);
	if (find(s, n, "does not loop back to start"))
		lg_fact(lg, F_RING_LOOP, host, s, n);
	if (find(s, n, "nvls.cc") || find(s, n, "NVLS"))
		lg_fact(lg, F_NVLS_FAIL, host, s, n);
	if (find(s, n, "Could not find real path of /sys"))
		lg_fact(lg, F_SYSFS, host, s, n);
	/* PyTorch's "remote process exited or there was a network error" names ncclRemoteError, not a closed connection */
	if (find(s, n, "Connection closed by remote peer") || find(s, n, "Connection reset by peer") ||
	    (find(s, n, "remote process exited") && !find(s, n, "remote process exited or there was a network error")))
		lg_fact(lg, F_PEER_CLOSED, host, s, n);
	ofi_error(lg, host, s, n);
}

/* "N/M clients joined" of c10d's store timeout. */
static void rendezvous(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	if (find(s, n, "DistStoreError") || find(s, n, "waiting for clients") || find(s, n, "clients joined") ||
	    (find(s, n, "Socket Timeout") && find(s, n, "store")))
		lg_fact(lg, F_RENDEZVOUS, host, s, n);
	const char *w = find(s, n, "waiting for clients. ");
	if (w) {
		size_t off = (size_t)(w - s) + strlen("waiting for clients. "), u1, u2 = 0;
		long long joined = parse_ll(s + off, n - off, &u1), expected = 0;
		if (u1 && off + u1 < n && s[off + u1] == '/')
			expected = parse_ll(s + off + u1 + 1, n - off - u1 - 1, &u2);
		if (u2 && joined >= 0 && expected > joined && find(s, n, "clients joined"))
			lg->rdv_joined = joined, lg->rdv_expected = expected;
	}
}

/* ncclResult_t names in the text, or NCCL's own words for them after "NCCL error". */
static void error_codes(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	for (int i = 1; i < 8; i++)
		if (find(s, n, lg_nccl_results[i]))
			lg_fact(lg, (enum lg_fact)(F_ERR + i), host, s, n);
	static const struct { const char *text; int code; } texts[] = {
		{ "unhandled cuda error", 1 }, { "unhandled system error", 2 }, { "internal error", 3 },
		{ "invalid argument", 4 }, { "invalid usage", 5 }, { "remote process exited or there was a network error", 6 },
	};
	if (find(s, n, "NCCL error") || find(s, n, "NCCL failure") || find(s, n, "NCCL Error"))
		for (size_t i = 0; i < NW_ARRAY_LEN(texts); i++)
			if (find(s, n, texts[i].text))
				lg_fact(lg, (enum lg_fact)(F_ERR + texts[i].code), host, s, n);
}

void lg_classify(struct nw_log *lg, uint32_t host, const char *s, size_t n)
{
	if (find(s, n, "no socket interface found") || find(s, n, "no interface found") ||
	    find(s, n, "No usable listening interface") || find(s, n, "no usable interface"))
		lg_fact(lg, F_NO_IFACE, host, s, n);
	if (find(s, n, "/dev/shm") || find(s, n, "shm_open") || find(s, n, "shared memory") || find(s, n, "posix_fallocate") ||
	    find(s, n, "Shared memory") || find(s, n, "ShmSegment"))
		if (!find(s, n, "NET/OFI")) /* "NET/OFI Disabling shared memory failed" is libfabric's, not /dev/shm */
			lg_fact(lg, F_SHM_FAIL, host, s, n);
	if (find(s, n, "Duplicate GPU detected"))
		lg_fact(lg, F_DUP_GPU_WARN, host, s, n);
	gdr_off(lg, host, s, n);
	rendezvous(lg, host, s, n);
	lg_classify_cause(lg, host, s, n);
	error_codes(lg, host, s, n);
}

void lg_warn_line(struct nw_log *lg, uint32_t host, const char *msg, size_t n)
{
	lg_classify(lg, host, msg, n);
	lg_add_group(lg, G_NCCL_WARN, host, msg, n);
}

/*
 * libfabric's own log lines, "libfabric:PID:TIME:PROV:SUBSYS:FUNC():LINE<LEVEL> text"
 * (older: one ':' less). Warnings and errors are grouped; what they say of
 * the provider goes to the facts: a provider with no usable device
 * ("fi_getinfo: provider efa output empty list"), a CXI NIC without a VNI
 * for the job.
 */
int lg_libfabric_line(struct nw_log *lg, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	if (!starts(s, n, "libfabric:"))
		return 0;
	const char *lt = memchr(s, '<', n < 200 ? n : 200), *gt;
	if (!lt || !(gt = memchr(lt, '>', (size_t)(s + n - lt))))
		return 1;
	size_t ln = (size_t)(gt - lt - 1);
	int bad = (ln == 4 && !memcmp(lt + 1, "warn", 4)) || (ln == 5 && !memcmp(lt + 1, "error", 5));
	if (!bad)
		return 1; /* <info>, <debug>, <trace> */
	const char *m = gt + 1;
	while (m < s + n && *m == ' ')
		m++;
	size_t mn = (size_t)(s + n - m);
	const char *p;
	if ((p = find(m, mn, "provider ")) && find(m, mn, "output empty list")) {
		lg_fact(lg, F_OFI_NO_PROVIDER, UINT32_MAX, s, n);
		const char *e = p + 9;
		while (e < s + n && *e != ' ')
			e++;
		copy_str(lg->ofi_empty_provider, sizeof(lg->ofi_empty_provider), p + 9, (size_t)(e - p - 9));
	} else if (find(m, mn, "valid default rgroup and vni")) {
		lg_fact(lg, F_OFI_NO_PROVIDER, UINT32_MAX, s, n);
	} else if (find(m, mn, "FI_HMEM capability requires RDMA")) {
		lg_fact(lg, F_GDR_HCA, UINT32_MAX, s, n);
	}
	lg_add_group(lg, G_LIBFABRIC, UINT32_MAX, m, mn);
	return 1;
}
