/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish: the plugin's one background thread. Each period it drains every
 * communicator's finished slots into its stats file (account.c,
 * statsfile.c), checks for hangs (hang.c), runs the KernelCh
 * activation-mask policy and writes the trace dumps asked for (trace.c).
 * This file holds the thread, its configuration from the environment and
 * the mask policy. None of this runs on NCCL's threads.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/nwp.h"

#define TRIGGER_EVERY_NS (200 * NWP_MS)
#define BURST_OPS 16                /* ops timed by one KernelCh sample */
#define POLICY_EVERY_NS NWP_SEC
#define SWITCH_DWELL_NS (2 * NWP_SEC) /* least time between two policy switches */
#define ON_RATIO 0.005              /* KernelCh on when it costs <= 0.5% of execution time */
#define OFF_RATIO 0.01              /* ... and off again above 1% */

/* --- configuration --- */

static int env_long(const char *name, long def, long min, long max, long *out, char *err, size_t errlen)
{
	const char *s = getenv(name);
	*out = def;
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		snprintf(err, errlen, "%s='%s' is not a whole number in [%ld, %ld]", name, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static void on_sigusr2(int sig)
{
	(void)sig;
	__atomic_store_n(&nwp_g.dump_requested, 1, __ATOMIC_RELAXED);
}

/* The stats directory: NCCLWATCH_DIR, else /dev/shm/ncclwatch-<uid>; -1 with err when too long. */
static int config_dir(char *err, size_t errlen)
{
	const char *dir = getenv("NCCLWATCH_DIR");
	if (dir && *dir) {
		if (strlen(dir) >= sizeof(nwp_g.dir) - 80) {
			snprintf(err, errlen, "NCCLWATCH_DIR is too long");
			return -1;
		}
		snprintf(nwp_g.dir, sizeof(nwp_g.dir), "%s", dir);
	} else {
		snprintf(nwp_g.dir, sizeof(nwp_g.dir), "/dev/shm/ncclwatch-%u", (unsigned)getuid());
	}
	return 0;
}

/* NCCLWATCH_KERNEL: auto (default), on or 1, off or 0; -1 with err otherwise. */
static int config_kernel(char *err, size_t errlen)
{
	const char *k = getenv("NCCLWATCH_KERNEL");
	if (!k || !*k || !strcasecmp(k, "auto"))
		nwp_g.kmode = NWS_KMODE_AUTO;
	else if (!strcasecmp(k, "on") || !strcmp(k, "1"))
		nwp_g.kmode = NWS_KMODE_ON;
	else if (!strcasecmp(k, "off") || !strcmp(k, "0"))
		nwp_g.kmode = NWS_KMODE_OFF;
	else {
		snprintf(err, errlen, "NCCLWATCH_KERNEL='%s' is not auto, on or off", k);
		return -1;
	}
	return 0;
}

/* Let SIGUSR2 request a dump, unless the job already handles SIGUSR2. */
static void sigusr2_install(void)
{
	struct sigaction old;
	if (sigaction(SIGUSR2, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigusr2;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR2, &sa, NULL);
	}
}

/* Read the NCCLWATCH_* environment into nwp_g; -1 with err naming a bad variable. */
int nwp_config(char *err, size_t errlen)
{
	long v;
	if (config_dir(err, errlen) || config_kernel(err, errlen))
		return -1;
	if (env_long("NCCLWATCH_SAMPLE_S", 10, 0, 86400, &v, err, errlen))
		return -1;
	nwp_g.sample_ns = (uint64_t)v * NWP_SEC;
	if (env_long("NCCLWATCH_POOL", 4096, 64, 1 << 20, &v, err, errlen))
		return -1;
	if (v & (v - 1)) {
		snprintf(err, errlen, "NCCLWATCH_POOL=%ld is not a power of two", v);
		return -1;
	}
	nwp_g.pool_size = (uint32_t)v;
	if (env_long("NCCLWATCH_RING", NWS_RING_DEFAULT, 16, 1 << 16, &v, err, errlen))
		return -1;
	nwp_g.ring_len = (uint32_t)v;
	if (env_long("NCCLWATCH_SLOW_FACTOR", 10, 2, 100000, &v, err, errlen))
		return -1;
	nwp_g.slow_factor = (double)v;
	if (env_long("NCCLWATCH_SLOW_MIN_US", 50, 0, 1000000000L, &v, err, errlen))
		return -1;
	nwp_g.slow_floor_ns = (uint64_t)v * 1000;
	if (env_long("NCCLWATCH_DUMP_MIN_S", 60, 0, 86400, &v, err, errlen))
		return -1;
	nwp_g.dump_min_ns = (uint64_t)v * NWP_SEC;
	if (env_long("NCCLWATCH_PERIOD_MS", 5, 1, 1000, &v, err, errlen))
		return -1;
	nwp_g.period_ns = (uint64_t)v * NWP_MS;
	if (env_long("NCCLWATCH_BUSY_WINDOW_S", 10, 1, 60, &v, err, errlen))
		return -1;
	nwp_g.busy_window_s = (uint64_t)v;
	if (env_long("NCCLWATCH_MAX_COMMS", 64, 1, 4096, &v, err, errlen))
		return -1;
	nwp_g.max_comms = (int)v;
	if (env_long("NCCLWATCH_HANG_S", 120, 0, 86400, &v, err, errlen))
		return -1;
	nwp_g.hang_ns = (uint64_t)v * NWP_SEC;
	if (env_long("NCCLWATCH_SIGUSR2", 0, 0, 1, &v, err, errlen))
		return -1;
	if (nwp_overlap_config(err, errlen))
		return -1;
	if (v)
		sigusr2_install();
	nwp_logline_config(); /* NCCLWATCH_LOG_S, _LOG, _LOG_RANKS: a bad one turns off only the log lines */
	return 0;
}

/* --- activation-mask policy --- */

static void set_mask(int m)
{
	int *mp = nwp_mask_ptr();
	if (!mp)
		return;
	int cur = __atomic_load_n(mp, __ATOMIC_RELAXED);
	if (cur == m)
		return;
	__atomic_store_n(mp, m, __ATOMIC_RELAXED);
	nwp_g.mask_switches++;
}

/*
 * NCCL reads the mask (one int per process, shared by every communicator)
 * at each collective or p2p call. KernelCh stays on only while the cost
 * model says it is cheap relative to the ops being run; otherwise a burst
 * of BURST_OPS ops is sampled every NCCLWATCH_SAMPLE_S seconds.
 */
static void policy(uint64_t now)
{
	int base = nwp_g.base_mask;
	if (nwp_g.kmode != NWS_KMODE_AUTO) {
		nwp_g.kernel_on = nwp_g.kmode == NWS_KMODE_ON;
		nwp_g.mask = base | (nwp_g.kernel_on ? NWP_EV_KERNELCH : 0);
		set_mask(nwp_g.mask);
		return;
	}
	int burst = __atomic_load_n(&nwp_g.burst_left, __ATOMIC_RELAXED);
	if (burst > 0 && now - nwp_g.burst_started_ns > NWP_SEC) {
		__atomic_store_n(&nwp_g.burst_left, 0, __ATOMIC_RELAXED); /* no ops came: end it */
		burst = 0;
	}
	if (!nwp_g.win_start_ns)
		nwp_g.win_start_ns = now;
	if (now - nwp_g.win_start_ns >= POLICY_EVERY_NS) {
		if (nwp_g.win_exec_ns > 0 && now - nwp_g.last_switch_ns >= SWITCH_DWELL_NS) {
			double ratio = nwp_g.win_cost_ns / nwp_g.win_exec_ns;
			int want = nwp_g.kernel_on ? ratio <= OFF_RATIO : ratio <= ON_RATIO;
			if (want != nwp_g.kernel_on) {
				nwp_g.kernel_on = want;
				nwp_g.last_switch_ns = now;
			}
		}
		nwp_g.win_start_ns = now;
		nwp_g.win_exec_ns = 0;
		nwp_g.win_cost_ns = 0;
	}
	nwp_g.mask = base | (nwp_g.kernel_on ? NWP_EV_KERNELCH : 0);
	if (burst > 0)
		return; /* the hot path ends the burst */
	if (!nwp_g.kernel_on && nwp_g.sample_ns && now - nwp_g.last_sample_ns >= nwp_g.sample_ns) {
		nwp_g.last_sample_ns = now;
		nwp_g.burst_started_ns = now;
		__atomic_store_n(&nwp_g.burst_left, BURST_OPS, __ATOMIC_RELAXED);
		set_mask(base | NWP_EV_KERNELCH);
		nwp_g.mask_switches++; /* the hot path switches it back */
		return;
	}
	set_mask(nwp_g.mask);
}

/* mtime of $NCCLWATCH_DIR/dump in ns, 0 when absent. */
static int64_t trigger_mtime(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/dump", nwp_g.dir);
	struct stat st;
	if (stat(p, &st) != 0)
		return 0;
	return (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
}

/* --- the thread --- */

/* The dumps asked for this cycle: one after a hang was declared (the headers then name it), else a trigger, SIGUSR2 or slow op. */
static void dumps(uint64_t now)
{
	if (now - nwp_g.last_trigger_check_ns >= TRIGGER_EVERY_NS) {
		nwp_g.last_trigger_check_ns = now;
		int64_t m = trigger_mtime();
		if (m && m != nwp_g.trigger_mtime) {
			nwp_g.trigger_mtime = m;
			__atomic_store_n(&nwp_g.dump_requested, 1, __ATOMIC_RELAXED);
		}
	}
	int req = __atomic_exchange_n(&nwp_g.dump_requested, 0, __ATOMIC_ACQ_REL);
	if (nwp_g.hang_dump) {
		nwp_g.hang_dump = 0;
		nwp_dump_all("hang");
		for (int i = 0; i < nwp_g.max_comms; i++) {
			struct nwp_comm *c = nwp_comm_at(i);
			if (c && __atomic_load_n(&c->alive, __ATOMIC_ACQUIRE)) {
				nwp_publish_header(c, now, NWS_STATE_RUNNING);
				nwp_sync(c, 1);
			}
		}
	} else if (req) {
		nwp_dump_all(req == 2 ? "slow operation" : "requested");
	}
}

static void *thread_main(void *arg)
{
	int gen = (int)(intptr_t)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* the job's signals go to the job's threads */
	pthread_setname_np(pthread_self(), "ncclwatch"); /* what top -H and /proc/PID/task/TID/comm show */
	int disabled_seen = 0;
	nwp_g.trigger_mtime = trigger_mtime();
	while (__atomic_load_n(nwp_thread_gen(), __ATOMIC_ACQUIRE) == gen) {
		struct timespec ts = { 0, (long)nwp_g.period_ns };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&nwp_g.lock);
		uint64_t now = nwp_realtime_ns();
		int disabled = __atomic_load_n(&nwp_g.disabled, __ATOMIC_ACQUIRE);
		if (!disabled && nwp_g.front && nwp_g.front->tick)
			nwp_g.front->tick(now); /* the interposer's completions, before the drain reads them */
		for (int i = 0; i < nwp_g.max_comms; i++) {
			struct nwp_comm *c = nwp_comm_at(i);
			if (!c || !__atomic_load_n(&c->alive, __ATOMIC_ACQUIRE))
				continue;
			if (nwp_comm_ready(c) != 0)
				continue; /* v1 to v3: no op has named it yet */
			nwp_learned(c);
			if (disabled) {
				if (!disabled_seen)
					nwp_publish_header(c, now, NWS_STATE_DISABLED);
				nwp_sync(c, !disabled_seen);
				continue;
			}
			nwp_drain(c, now, 0);
			nwp_hang_check(c, now);
			/* GPU clock offset: keep the minimum of this and the previous 10 s window,
			 * so a drifting clock is followed and one delayed event changes nothing */
			if (now / (10 * NWP_SEC) != c->off_window) {
				c->off_window = now / (10 * NWP_SEC);
				c->off_prev = __atomic_exchange_n(&c->off_min, INT64_MAX, __ATOMIC_RELAXED);
			}
			nwp_publish_header(c, now, NWS_STATE_RUNNING);
			nwp_sync(c, 0);
			nwp_logline_tick(c, now);
		}
		if (disabled) {
			disabled_seen = 1;
			pthread_mutex_unlock(&nwp_g.lock);
			continue;
		}
		if (!nwp_g.front)
			policy(now); /* NCCL's activation mask: the profiler plugin's alone */
		dumps(now);
		nwp_overlap_tick(nwp_mono_ns());
		pthread_mutex_unlock(&nwp_g.lock);
	}
	pthread_mutex_lock(&nwp_g.lock);
	nwp_overlap_shutdown();
	pthread_mutex_unlock(&nwp_g.lock);
	return NULL;
}

/* Start the publisher (caller holds nwp_g.lock). */
int nwp_thread_start(void)
{
	int gen = __atomic_add_fetch(nwp_thread_gen(), 1, __ATOMIC_ACQ_REL);
	return pthread_create(&nwp_g.thread, NULL, thread_main, (void *)(intptr_t)gen) == 0 ? 0 : -1;
}

/* Tell the publisher to stop (caller holds nwp_g.lock); returns the thread to join. */
pthread_t nwp_thread_stop(void)
{
	__atomic_add_fetch(nwp_thread_gen(), 1, __ATOMIC_ACQ_REL);
	return nwp_g.thread;
}
