/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procscan: the stats directories of a node's training processes, found
 * through /proc (docs/deploy.md, "Without hostPath").
 *
 * A training process needs only the plugin and NCCL_PROFILER_PLUGIN: its
 * stats stay in its own file system (by default /dev/shm/ncclwatch-<uid> of
 * its container, or its NCCLWATCH_DIR), and an exporter that sees the
 * node's processes (hostPID) reads them through /proc/PID/root. For each
 * process whose environment names the plugin (NCCL_PROFILER_PLUGIN
 * containing "ncclwatch"), the scan gives its stats directory as seen from
 * here, whose files to trust (the process's uid), and who runs it: the pod
 * UID and container id from /proc/PID/cgroup (kubepods, either cgroup
 * driver, containerd, CRI-O or Docker), and the pod, namespace and
 * container names from the kubelet's container log links
 * (LOGS/containers/<pod>_<namespace>_<container>-<id>.log) or pod log
 * directories (LOGS/pods/<namespace>_<pod>_<uid>), where LOGS is mounted.
 * No kubelet API.
 *
 * Reading another user's /proc/PID/environ and /proc/PID/root needs the
 * right to trace it (root with CAP_SYS_PTRACE, or the same user); files of
 * 0700 directories need CAP_DAC_READ_SEARCH. A process that cannot be read
 * is left out and counted.
 */
#ifndef NW_PROCSCAN_H
#define NW_PROCSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One stats directory and who writes it. */
struct nw_ps_job {
	char dir[512];            /* to open from here: <proc>/<pid>/root<dir inside> */
	uid_t uid;                /* the process's uid: only its files are read */
	pid_t pid;                /* the process it was found through (as this exporter sees it) */
	char pod_uid[40];         /* from the cgroup path; "" outside Kubernetes */
	char container_id[96];    /* "containerd://<64 hex>", "cri-o://...", "docker://..."; "" unknown */
	char pod[128], ns[64], container[64]; /* from the log names; "" unknown */
};

struct nw_ps_opts {
	const char *proc;         /* the proc file system: "/proc" */
	const char *logs;         /* the node's /var/log as mounted here; NULL: no names */
};

/* What the scan saw, for the exporter's own figures. */
struct nw_ps_stats {
	size_t processes;         /* processes looked at */
	size_t unreadable;        /* whose environment could not be read (another user, no CAP_SYS_PTRACE) */
	size_t plugin;            /* that name the plugin */
};

/* What a scan remembers of each process between scans (pid and start time). */
struct nw_ps_cache;
struct nw_ps_cache *nw_ps_cache_new(void);
void nw_ps_cache_free(struct nw_ps_cache *c);

/*
 * Scan o->proc: every stats directory of a process naming the plugin, one
 * entry per directory (processes of one container share theirs), into
 * *jobs (malloc'd, *n entries; free()). Directories that do not exist (yet)
 * are left out. 0, or -1 with err when o->proc cannot be listed.
 */
int nw_ps_scan(struct nw_ps_cache *c, const struct nw_ps_opts *o, struct nw_ps_job **jobs, size_t *n,
               struct nw_ps_stats *st, char *err, size_t errlen);

/*
 * The pod UID and container id in the text of /proc/PID/cgroup (every
 * line looked at; kubepods paths of the cgroupfs or the systemd driver):
 * 1 when a pod UID was found (container id "" when the path has none), 0
 * when the process is not in a pod.
 */
int nw_ps_parse_cgroup(const char *text, char *pod_uid, size_t uidlen, char *cid, size_t cidlen);

/*
 * A container log link name, "<pod>_<namespace>_<container>-<64 hex>.log":
 * 1 with its parts, 0 when the name is not one.
 */
int nw_ps_parse_logname(const char *name, char *pod, size_t podlen, char *ns, size_t nslen, char *container,
                        size_t containerlen, char *cid, size_t cidlen);

#endif
