#!/usr/bin/env bash
# The env-rendezvous bootstrap with real processes on loopback: four ranks
# agree; a rank that dies, stops, differs, never starts or cannot reach
# rank 0 makes every other rank fail, by name, within the timeout; bad
# RANK/WORLD_SIZE combinations are refused by name.
. "$(dirname "$0")/lib.sh"
PROBE=$NW_TESTS/boot_probe
TO=2        # the bootstrap timeout given to every probe
LIMIT=30    # a probe still running after this is killed (and the check fails)

for v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT NCCLWATCH_PORT $(compgen -e | grep '^SLURM_'); do
	unset "$v"
done

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# A free loopback port (asks the kernel; a random high port if python3 is missing).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((30000 + RANDOM % 20000))
}

# start NAME RANK WORLD [VAR=value ...] -- [probe args]: one rank in the background.
start() {
	local name=$1 r=$2 w=$3
	shift 3
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	(
		env RANK="$r" WORLD_SIZE="$w" LOCAL_RANK="$r" MASTER_ADDR=127.0.0.1 MASTER_PORT=$((PORT - 1)) "${envs[@]}" \
			timeout "$LIMIT" "$PROBE" --timeout "$TO" "$@" >"$TMP/$name.$r.out" 2>"$TMP/$name.$r.err"
		echo $? >"$TMP/$name.$r.rc"
	) &
	PIDS+=($!)
}

# finish: wait for every started rank; ELAPSED is the wall time since the first start.
finish() {
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	PIDS=()
	ELAPSED=$(($(date +%s) - T0))
}
begin() { PORT=$(free_port); T0=$(date +%s); }

# rank_is NAME RANK: load that rank's results into $OUT, $ERR, $RC for lib.sh's checks.
rank_is() { cp "$TMP/$1.$2.out" "$OUT"; cp "$TMP/$1.$2.err" "$ERR"; RC=$(cat "$TMP/$1.$2.rc"); }
# every_rank NAME "RANKS" CHECK ARGS...: run a check on each rank's results.
every_rank() {
	local name=$1 ranks=$2 check=$3 label=$4
	shift 4
	for r in $ranks; do rank_is "$name" "$r"; "$check" "$label (rank $r)" "$@"; done
}
in_time() { if [ "$ELAPSED" -le $((TO * 2 + 6)) ]; then ok "$1"; else notok "$1" "took ${ELAPSED}s with a ${TO}s timeout"; fi; }

# --- four ranks agree
begin
for r in 0 1 2 3; do start ok "$r" 4; done
finish
every_rank ok "0 1 2 3" expect_rc "four ranks finish" 0
every_rank ok "0 1 2 3" expect_out "every rank has every value" '^gather 3 103$'
every_rank ok "0 1 2 3" expect_out "the 128-byte blob arrives" '^bcast ok$'
every_rank ok "0 1 2 3" expect_out "every hostname is known" '^host 3 [^ ]+$'
every_rank ok "0 1 2 3" expect_out "local size from the hostnames" 'size=4 local_rank=[0-3] local_size=4$'
rank_is ok 2
expect_out "rank 2 knows itself" '^rank=2 size=4 local_rank=2'
expect_out "the probe got to the end" '^done$'

# --- a broadcast from rank 2, and NCCLWATCH_PORT in place of MASTER_PORT+1
begin
for r in 0 1 2 3; do start root2 "$r" 4 NCCLWATCH_PORT="$PORT" MASTER_PORT=1 LOCAL_WORLD_SIZE=4 -- --root 2; done
finish
every_rank root2 "0 1 2 3" expect_rc "broadcast from rank 2" 0
every_rank root2 "0 1 2 3" expect_out "broadcast from rank 2 arrives" '^bcast ok$'

# --- rank 2 dies before the allgather
begin
for r in 0 1 3; do start die "$r" 4; done
start die 2 4 -- --exit-at gather
finish
every_rank die "0 1 3" expect_rc "a dead rank fails the others" 1
every_rank die "0 1 3" expect_err "the dead rank is named" 'rank 2 on [^ ]+ disconnected.* during allgather #1'
every_rank die "0 1 3" expect_no_crash "no crash when a peer dies"
in_time "a dead rank is noticed within the timeout"

# --- rank 0 dies before the broadcast (the others must not hang or get SIGPIPE)
begin
for r in 1 2 3; do start die0 "$r" 4; done
start die0 0 4 -- --exit-at bcast
finish
every_rank die0 "1 2 3" expect_rc "a dead rank 0 fails the others" 1
every_rank die0 "1 2 3" expect_err "rank 0 is named" 'rank 0 on [^ ]+ disconnected'
in_time "a dead rank 0 is noticed within the timeout"

# --- rank 1 stops on purpose (nw_boot_abort) before the barrier
begin
for r in 0 2 3; do start stop "$r" 4; done
start stop 1 4 -- --abort-at barrier
finish
every_rank stop "0 2 3" expect_rc "an abort fails the others" 1
every_rank stop "0 2 3" expect_err "the abort names its rank and reason" 'rank 1 on [^ ]+ stopped: the probe was asked to stop'
rank_is stop 1
expect_rc "the aborting rank exits with its own status" 2

# --- rank 3 is slow: the others give up, naming it
begin
for r in 0 1 2; do start slow "$r" 4; done
start slow 3 4 -- --sleep-at barrier:$((TO * 2 + 1))
finish
every_rank slow "0 1 2" expect_rc "a rank that never reaches the barrier fails the others" 1
every_rank slow "0 1 2" expect_err "the slow rank is named" 'rank 3 on [^ ]+ did not reach barrier #3 within 2 s'

# --- rank 3 has other arguments: refused on every rank, naming it and the text
begin
for r in 0 1 2; do start fp "$r" 4 -- --fp "0.1.0 bench -b 8 -e 1G -n 20"; done
start fp 3 4 -- --fp "0.1.0 bench -b 8 -e 2G -n 20"
finish
every_rank fp "0 1 2 3" expect_rc "different arguments are refused" 1
every_rank fp "0 1 2 3" expect_err "the differing rank and text are named" \
	"rank 3 on [^ ]+ has '\\.\\.\\.-e 2G\\.\\.\\.' where rank 0 on [^ ]+ has '\\.\\.\\.-e 1G\\.\\.\\.'"

# --- rank 3 never starts
begin
for r in 0 1 2; do start miss "$r" 4; done
finish
every_rank miss "0 1 2" expect_rc "a missing rank fails the others" 1
every_rank miss "0 1 2" expect_err "the missing rank is named with the address" \
	"rank 3 never connected to 127\\.0\\.0\\.1:$PORT \\(MASTER_ADDR, MASTER_PORT\\+1\\) within 2 s \\(connected: 0-2 on "
in_time "a missing rank is reported within the timeout"

# --- two processes claim rank 1
begin
start dup 0 3
start dup 1 3
start dup 1 3
finish
rank_is dup 0
expect_rc "a claimed-twice rank is refused" 1
expect_err "the claimed-twice rank is named" 'rank 1 is claimed twice: by pid [0-9]+ on [^ ]+ and by pid [0-9]+ on'
for f in "$TMP"/dup.1.rc; do RC=$(cat "$f"); expect_rc "the duplicates fail too" 1; done

# --- a rank started with another WORLD_SIZE
begin
start ws 0 2
start ws 1 3
finish
rank_is ws 0
expect_rc "a different world size is refused" 1
expect_err "the different world size is named" 'rank 1 on [^ ]+ \(pid [0-9]+\) has a world size of 3 where rank 0 on [^ ]+ has 2'

# --- rank 0 is unreachable (nobody listens on 127.0.0.2 at that port)
begin
start unreach 1 2 MASTER_ADDR=127.0.0.2
finish
rank_is unreach 1
expect_rc "an unreachable rank 0 fails" 1
expect_err "the unreachable address is named" "could not connect to rank 0 at 127\\.0\\.0\\.2:$PORT \\(MASTER_ADDR, MASTER_PORT\\+1\\) within 2 s \\(connection refused\\)"
in_time "an unreachable rank 0 is reported within the timeout"

# --- the port is taken: the second rank 0 says so
begin
start busy 0 2
sleep 0.5
start busy2 0 2
finish
rank_is busy2 0
expect_rc "a port in use is refused" 1
expect_err "the port in use is named" "port $PORT is in use .*NCCLWATCH_PORT"

# --- a stray connection sending junk is ignored; the ranks still meet
begin
start junk 0 2
start junk 1 2 -- --sleep-at init:1
sleep 0.3
{ printf 'GET / HTTP/1.0\r\n\r\n' >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
{ head -c 3000 /dev/urandom >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
{ printf 'NWBO\001\001\000\000\000\000\000\000\377\377\377\377' >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
finish
every_rank junk "0 1" expect_rc "junk on the port does not stop the ranks" 0
every_rank junk "0 1" expect_out "the ranks still finish" '^done$'

# --- a process of another bootstrap protocol (another ncclwatch build) is refused by name
begin
start proto 0 2
sleep 0.3
{ printf 'NWBO\001\011\000\000\000\000\000\000\000\000\000\000' >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
finish
rank_is proto 0
expect_rc "another protocol version is refused" 1
expect_err "another protocol version is named" 'the process at 127\.0\.0\.1:[0-9]+ speaks bootstrap protocol 9 where this ncclwatch speaks 1'

# --- bad combinations, refused by name before any network
bad() {
	local label=$1 want=$2
	shift 2
	run env "$@" "$PROBE" --timeout "$TO"
	expect_rc "$label is refused" 1
	expect_err "$label is named" "$want"
}
bad "RANK=4 WORLD_SIZE=4" "RANK='4' must be below WORLD_SIZE='4'" RANK=4 WORLD_SIZE=4 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
bad "WORLD_SIZE=0" "WORLD_SIZE='0' is out of range" RANK=0 WORLD_SIZE=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
bad "WORLD_SIZE=abc" "WORLD_SIZE='abc' is not a whole number" RANK=0 WORLD_SIZE=abc LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
bad "RANK=-1" "RANK='-1' is out of range" RANK=-1 WORLD_SIZE=4 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
bad "a missing MASTER_ADDR" "MASTER_ADDR is not set \\(WORLD_SIZE='2'\\)" RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_PORT=1
bad "a missing LOCAL_RANK" "LOCAL_RANK is not set" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
bad "LOCAL_RANK=2 LOCAL_WORLD_SIZE=2" "LOCAL_RANK='2' must be below LOCAL_WORLD_SIZE='2'" RANK=1 WORLD_SIZE=4 LOCAL_RANK=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
bad "a missing MASTER_PORT" "MASTER_PORT is not set" RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1
bad "RANK without WORLD_SIZE" "RANK='1' is set but WORLD_SIZE is not" RANK=1

# --- no variables: a single process; WORLD_SIZE=1: works without a network
run "$PROBE"
expect_rc "no variables is a single process" 0
expect_out "no variables is a single process (output)" '^single$'
run env RANK=0 WORLD_SIZE=1 "$PROBE"
expect_rc "WORLD_SIZE=1 needs no MASTER_ADDR" 0
expect_out "WORLD_SIZE=1 runs every call locally" '^done$'
run env SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_LOCALID=0 SLURM_JOB_ID=5 "$PROBE"
expect_out "a Slurm batch script (no srun step) is a single process" '^single$'
