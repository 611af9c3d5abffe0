# SPDX-License-Identifier: Apache-2.0
# The exporter finds training processes through /proc (exporter --procs,
# docs/deploy.md "Without hostPath"), as a DaemonSet with hostPID finds a
# node's pods, without Kubernetes: each "job" is the plugin harness run as
# a non-root user (65534) in its own PID and mount namespace (unshare), its
# stats in a private /tmp (a tmpfs of that namespace, invisible from here),
# in a cgroup laid out as kubelet lays out a pod's (one job the cgroupfs
# driver's way, one the systemd driver's), with container log links named
# as kubelet names them. The only environment the jobs get beyond the
# harness's own is NCCL_PROFILER_PLUGIN. Checked: both jobs found at once and
# attributed to their pods, the exporter restarted mid-job finds them again,
# --once does too, and nothing of a job is visible from outside but through
# its processes. As a non-root user: one job in a user namespace of its own
# (root there, as a rootless container), its default directory in a tmpfs
# of its own, found (not attributed: no pod cgroup without root).
source tests/cli/lib.sh
H=$NW_TESTS/plugin_harness
JOBS=() CGS=() EXP_PID='' STAGE=''
# kill_cgroup DIR: every process in the cgroup DIR (a job: its PID namespace's init first drops the
# rest; the harness ran under setpriv, which clears the parent-death signal of unshare --kill-child)
kill_cgroup() {
	local p
	for p in $(cat "$1/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
}
cleanup() {
	[ -n "$EXP_PID" ] && kill "$EXP_PID" 2>/dev/null
	for c in "${CGS[@]}"; do kill_cgroup "$c"; done
	for p in "${JOBS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${JOBS[@]}"; do wait "$p" 2>/dev/null; done
	for _ in $(seq 50); do
		left=0
		for c in "${CGS[@]}"; do [ -s "$c/cgroup.procs" ] && left=1; done
		[ $left = 0 ] && break
		sleep 0.1
	done
	for c in "${CGS[@]}"; do
		d=$c
		while [ "$d" != "$CGROOT" ] && [ -n "$d" ]; do rmdir "$d" 2>/dev/null; d=$(dirname "$d"); done
	done
	rm -rf "$TMP" ${STAGE:+"$STAGE"}
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! command -v unshare >/dev/null || ! unshare --help 2>&1 | grep -q -- --kill-child; then
	skip "training processes found through /proc" "unshare (util-linux 2.32 or newer) is missing"
	exit 0
fi

# start_exporter ARGS: a live exporter on a free port; EXP_PID, PORT
start_exporter() {
	"$NW" exporter --listen 127.0.0.1:0 --cache 0 "$@" 2>"$TMP/exp.err" &
	EXP_PID=$!
	PORT=$(exporter_port "$TMP/exp.err")
	[ -n "$PORT" ] || { RC=1; notok "exporter started" "$(cat "$TMP/exp.err")"; exit 1; }
}
# scrape_until FILE REGEX COUNT: scrape into FILE until COUNT lines match (at most 20 s)
scrape_until() {
	for _ in $(seq 100); do
		curl -s -m 5 -o "$1" "http://127.0.0.1:$PORT/metrics"
		[ "$(grep -Ec "$2" "$1")" -ge "$3" ] && return 0
		sleep 0.2
	done
	return 1
}

if [ "$(id -u)" != 0 ]; then
	# as an ordinary user: a job in a user namespace of its own (root there, this user here, as a
	# rootless container), its stats in a tmpfs of its own, found through /proc
	if ! unshare --map-root-user --pid --fork --mount-proc --mount true 2>/dev/null; then
		skip "training processes found through /proc" "needs root, or unprivileged user namespaces"
		exit 0
	fi
	unshare --map-root-user --kill-child --pid --mount-proc --mount sh -c \
		'mount -t tmpfs tmpfs /dev/shm && exec env NCCL_PROFILER_PLUGIN=ncclwatch "$0" --plugin "$1" --dir /dev/shm/ncclwatch-0 --ranks 2 --ops 5 --hold-ms 60000' \
		"$H" "$NW_PLUGIN" >"$TMP/job.out" 2>&1 &
	JOBS+=($!)
	start_exporter --procs
	scrape_until "$TMP/m" '^ncclwatch_rank_info\{.*state="live"' 4
	RC=$?
	expect_rc "a job in its own user, PID and mount namespace is found through /proc" 0
	exit 0
fi

for tool in setpriv curl; do
	command -v $tool >/dev/null || { skip "training processes found through /proc" "$tool is not installed"; exit 0; }
done
# A cgroup hierarchy we may write: cgroup v1's pids, else v2.
CGROOT=
for c in /sys/fs/cgroup/pids /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ -w "$c/cgroup.procs" ] && mkdir "$c/nwtest.$$" 2>/dev/null; then
		rmdir "$c/nwtest.$$"
		CGROOT=$c
		break
	fi
done
[ -n "$CGROOT" ] || { skip "training processes found through /proc" "no writable cgroup hierarchy"; exit 0; }

UIDA=0a1b2c3d-1111-4222-8333-444455556666 UIDB=9f8e7d6c-aaaa-4bbb-8ccc-dddd00001111
CIDA=$(printf 'a%.0s' $(seq 64)) CIDB=$(printf '%016x' 1 2 3 4)
# job A: the cgroupfs driver's layout; job B: the systemd driver's, containerd's scope
CGA=$CGROOT/kubepods/besteffort/pod$UIDA/$CIDA
CGB=$CGROOT/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UIDB//-/_}.slice/cri-containerd-$CIDB.scope
mkdir -p "$CGA" "$CGB"
CGS=("$CGA" "$CGB")
# what kubelet leaves in /var/log: container log links and pod log directories
LOGS=$TMP/varlog
mkdir -p "$LOGS/containers" "$LOGS/pods/ml_train-a-0_$UIDA" "$LOGS/pods/research_train-b-0_$UIDB"
ln -s "/var/log/pods/ml_train-a-0_$UIDA/pytorch/0.log" "$LOGS/containers/train-a-0_ml_pytorch-$CIDA.log"
ln -s "/var/log/pods/research_train-b-0_$UIDB/worker/0.log" "$LOGS/containers/train-b-0_research_worker-$CIDB.log"

# job CGROUP SCENARIO DIR: the harness as uid 65534 in its own PID and mount namespace, in
# CGROUP, its stats in a tmpfs of its own: job A in its /tmp (NCCLWATCH_DIR=/tmp/nwstats in its
# environment), job B where the plugin writes by default, /dev/shm/ncclwatch-<uid> (nothing set:
# the pod of docs/deploy.md, which sets NCCL_PROFILER_PLUGIN alone)
# Job A mounts a tmpfs of its own over /tmp: the harness and the plugin must
# not be under it (a clone in /tmp), so they run from a copy in /var/tmp.
STAGE=$(mktemp -d /var/tmp/nwprocs.XXXXXX)
cp "$H" "$NW_PLUGIN" "$STAGE/"
chmod 755 "$STAGE" "$STAGE"/*
H=$STAGE/${H##*/}
PLUGIN=$STAGE/${NW_PLUGIN##*/}
job() {
	local env=
	[ "$3" = /tmp/nwstats ] && env="NCCLWATCH_DIR=$3"
	unshare --kill-child --pid --mount-proc --mount sh -c \
		'mount -t tmpfs -o mode=1777 tmpfs "${4%/*}" && echo $$ >"$0/cgroup.procs" &&
		 exec setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin NCCL_PROFILER_PLUGIN=ncclwatch $5 \
		 "$1" --plugin "$2" --dir "$4" --ranks 2 --ops 5 --hold-ms 60000 --scenario "$3"' \
		"$1" "$H" "$PLUGIN" "$2" "$3" "$env" >"$TMP/job.$2.out" 2>&1 &
	JOBS+=($!)
}
job "$CGA" normal /tmp/nwstats
job "$CGB" fsdp /dev/shm/ncclwatch-65534

start_exporter --procs --pod-logs "$LOGS"
# job A: 2 ranks x (world + one solo comm each) = 4 files; job B: 2 ranks x 4 comms = 8
scrape_until "$TMP/m1" '^ncclwatch_rank_info\{.*state="live"' 12
RC=$?
expect_rc "two jobs at once, each in its own PID and mount namespace: their 12 ranks found, live" 0
expect_out_file() { if grep -Eq -- "$2" "$3"; then ok "$1"; else RC=1; notok "$1" "$3 lacks /$2/"; head -30 "$3" | sed 's/^/#   /'; fi; }
expect_out_file "job A (cgroupfs driver) attributed: pod, namespace, container, pod UID, container id" \
	"^ncclwatch_rank_info\\{Hostname=\"[^\"]+\",comm=\"5eed000000c0ffee\",rank=\"0\",pod=\"train-a-0\",namespace=\"ml\",container=\"pytorch\",.*uid=\"$UIDA\",container_id=\"$CIDA\"\\} 1" "$TMP/m1"
expect_out_file "job B (systemd driver, containerd) attributed the same way" \
	"^ncclwatch_rank_info\\{Hostname=\"[^\"]+\",comm=\"5eed000000c0ffee\",rank=\"1\",pod=\"train-b-0\",namespace=\"research\",container=\"worker\",.*uid=\"$UIDB\",container_id=\"containerd://$CIDB\"\\} 1" "$TMP/m1"
expect_out_file "every series of a job carries its pod" \
	'^ncclwatch_coll_ops_total\{.*pod="train-b-0",namespace="research",container="worker",.*op="all_gather"\}' "$TMP/m1"
expect_true "the exporter counts the processes naming the plugin" grep -Eq '^ncclwatch_exporter_plugin_processes\{.*\} [4-9]' "$TMP/m1"
expect_true "a job's stats are nowhere on this side but through its processes (its own tmpfs)" \
	sh -c "! ls /tmp/nwstats/*.nws /dev/shm/ncclwatch-65534/*.nws 2>/dev/null"
if command -v promtool >/dev/null; then
	expect_true "promtool check metrics accepts the scrape of two jobs" promtool check metrics <"$TMP/m1"
else
	skip "promtool check metrics on the scrape of two jobs" "promtool is not installed"
fi

# the exporter restarted mid-job: nothing to remember, the processes are found again
kill -TERM "$EXP_PID"; wait "$EXP_PID"; EXP_PID=
start_exporter --procs --pod-logs "$LOGS"
scrape_until "$TMP/m2" '^ncclwatch_rank_info\{.*state="live"' 12
RC=$?
expect_rc "the exporter restarted mid-job finds both jobs again" 0
expect_out_file "... attributed again" 'rank_info\{.*pod="train-a-0"' "$TMP/m2"
kill -TERM "$EXP_PID"; wait "$EXP_PID"; EXP_PID=

run "$NW" exporter --once --procs --pod-logs "$LOGS"
expect_rc "exporter --once --procs" 0
expect_out "--once finds them too" 'rank_info\{.*pod="train-b-0"'
run "$NW" exporter --once --procs --pod-logs "$TMP/nologs"
expect_out "without the log names: the pod UID and container id still attribute each rank" \
	"rank_info\\{.*uid=\"$UIDA\",container_id=\"$CIDA\""
run "$NW" exporter --once --pod-logs "$LOGS"
expect_rc "--pod-logs without --procs is bad usage" 2

# a job ended: its namespace is gone, and so are its ranks (no leftovers to clean, none exported)
kill_cgroup "$CGA"; wait "${JOBS[0]}" 2>/dev/null
run "$NW" exporter --once --procs --pod-logs "$LOGS"
expect_no_out "job A gone: none of its ranks is left" 'pod="train-a-0"'
expect_out "job B still there" 'rank_info\{.*pod="train-b-0"'
