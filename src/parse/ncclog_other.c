/* Lines of the log that are not NCCL's: PyTorch errors and watchdog timeouts, nccl-tests, crashes. */
#include <stdint.h>
#include <string.h>

#include "parse/ncclog_int.h"
#include "parse/ncclog_text.h"
#include "util/util.h"

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
void lg_other_line(struct nw_log *lg, const char *s, size_t n)
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
