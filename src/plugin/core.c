/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core: what both front ends of the recording code share (the profiler
 * plugin's event callbacks, plugin.c, and the interposer's wrappers of
 * NCCL's API, ipose*.c): the process-wide state, the clocks, the one way
 * to disable recording and the log lines with or without NCCL's logger.
 */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "plugin/nwp.h"

struct nwp_global nwp_g = { .lock = PTHREAD_MUTEX_INITIALIZER };

uint64_t nwp_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t nwp_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The name of what records, for log lines: "ncclwatch profiler" or "ncclwatch interposer". */
static const char *who(void)
{
	return nwp_g.front ? "ncclwatch interposer" : "ncclwatch profiler";
}

/*
 * Disable recording for good: clear the activation mask (NCCL's, or the
 * interposer's own) so no more events come, make every callback and
 * wrapper pass at once, and log one line (only the first call logs), also
 * on stderr when NCCL gave a logger: NCCL shows WARN lines only with
 * NCCL_DEBUG set, and a job that publishes nothing must say so where its
 * user looks. stderr is written only when that cannot block.
 */
void nwp_disable(const char *fmt, ...)
{
	if (__atomic_exchange_n(&nwp_g.disabled, 1, __ATOMIC_ACQ_REL))
		return;
	int *mp = nwp_mask_ptr();
	if (mp)
		__atomic_store_n(mp, 0, __ATOMIC_RELAXED);
	char msg[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(nwp_g.disabled_reason, msg, sizeof(msg));
	if (__atomic_exchange_n(&nwp_g.logged, 1, __ATOMIC_ACQ_REL))
		return;
	nwp_log(NWP_LOG_WARN, "%s disabled: %s", who(), msg);
	if (!__atomic_load_n(&nwp_g.logfn, __ATOMIC_ACQUIRE))
		return; /* nwp_log wrote stderr itself */
	char line[sizeof(msg) + 48];
	int n = snprintf(line, sizeof(line), "%s disabled: %s\n", who(), msg);
	struct pollfd p = { .fd = STDERR_FILENO, .events = POLLOUT };
	if (n > 0 && (size_t)n < sizeof(line) && poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
		(void)!write(STDERR_FILENO, line, (size_t)n);
}

/* NCCL_DEBUG asks for INFO lines (INFO or TRACE)? */
static int debug_info(void)
{
	const char *d = getenv("NCCL_DEBUG");
	return d && (!strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE"));
}

void nwp_log(int level, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nwp_logfn_t fn = __atomic_load_n(&nwp_g.logfn, __ATOMIC_ACQUIRE);
	if (fn) {
		fn(level, 1 /* NCCL_INIT */, __FILE__, __LINE__, "%s", msg);
		return;
	}
	if (level != NWP_LOG_WARN && !debug_info())
		return;
	char line[700];
	int n = snprintf(line, sizeof(line), "%s:%d:%d ncclwatch %s %s\n", nwp_g.host[0] ? nwp_g.host : "-",
	                 (int)getpid(), (int)gettid(), level == NWP_LOG_WARN ? "WARN" : "INFO", msg);
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	struct pollfd pfd = { 2, POLLOUT, 0 };
	if (n > 0 && poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLOUT))
		(void)!write(2, line, (size_t)n);
}

uint64_t nwp_bad_events(void) { return __atomic_load_n(&nwp_g.bad_events, __ATOMIC_RELAXED); }
uint64_t nwp_late_events(void) { return __atomic_load_n(&nwp_g.late_events, __ATOMIC_RELAXED); }
int *nwp_thread_gen(void) { return &nwp_g.thread_gen; }
struct nwp_comm *nwp_comm_at(int i) { return nwp_comm_table ? &nwp_comm_table[i] : NULL; }
