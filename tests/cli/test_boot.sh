#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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

# A free loopback port below Linux's ephemeral range (32768 and up), so that
# no outgoing connection of another program can take it meanwhile.
free_port() {
	local p i
	for i in $(seq 1 50); do
		p=$((20000 + RANDOM % 12000))
		if command -v python3 >/dev/null; then
			python3 -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null && break
		else
			{ : >/dev/tcp/127.0.0.1/"$p"; } 2>/dev/null || break
		fi
	done
	echo "$p"
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

# listening: wait (at most 10 s) until something listens on $PORT, rank 0's
# bootstrap port, so that what a test sends next reaches it on a loaded
# machine too. Without ss(8), a fixed half second.
listening() {
	local i
	if ! command -v ss >/dev/null; then sleep 0.5; return; fi
	for i in $(seq 100); do
		[ -n "$(ss -Hltn "sport = :$PORT" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
}

# rank_is NAME RANK: load that rank's results into $OUT, $ERR, $RC for lib.sh's checks.
rank_is() { cp "$TMP/$1.$2.out" "$OUT"; cp "$TMP/$1.$2.err" "$ERR"; RC=$(cat "$TMP/$1.$2.rc"); }
# every_rank NAME "RANKS" CHECK ARGS...: run a check on each rank's results.
every_rank() {
	local name=$1 ranks=$2 check=$3 label=$4
	shift 4
	for r in $ranks; do rank_is "$name" "$r"; "$check" "$label (rank $r)" "$@"; done
}
in_time() { if [ "$ELAPSED" -le $((TO * 2 + 6)) ]; then ok "$1"; else notok "$1" "took ${ELAPSED}s with a ${TO}s timeout"; fi; }

# --- four ranks agree (a long timeout: checks that succeed must not depend on the load)
begin
for r in 0 1 2 3; do start ok "$r" 4 -- --timeout 20; done
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
for r in 0 1 2 3; do start root2 "$r" 4 NCCLWATCH_PORT="$PORT" MASTER_PORT=1 LOCAL_WORLD_SIZE=4 -- --root 2 --timeout 20; done
finish
every_rank root2 "0 1 2 3" expect_rc "broadcast from rank 2" 0
every_rank root2 "0 1 2 3" expect_out "broadcast from rank 2 arrives" '^bcast ok$'

# --- srun's variables in place of torchrun's (rank 0's host from the step's node list)
begin
for r in 0 1 2; do
	(
		env SLURM_PROCID="$r" SLURM_STEP_NUM_TASKS=3 SLURM_LOCALID="$r" SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=3 \
			SLURM_STEP_ID=0 SLURM_JOB_ID=4242 SLURM_STEP_NODELIST=127.0.0.1 NCCLWATCH_PORT="$PORT" \
			timeout "$LIMIT" "$PROBE" --timeout 20 >"$TMP/slurm.$r.out" 2>"$TMP/slurm.$r.err"
		echo $? >"$TMP/slurm.$r.rc"
	) &
	PIDS+=($!)
done
finish
every_rank slurm "0 1 2" expect_rc "srun tasks meet" 0
every_rank slurm "0 1 2" expect_out "srun tasks know their place" '^rank=[0-2] size=3 local_rank=[0-2] local_size=3$'
every_rank slurm "0 1 2" expect_out "srun tasks finish" '^done$'

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
listening
start busy2 0 2
finish
rank_is busy2 0
expect_rc "a port in use is refused" 1
expect_err "the port in use is named" "port $PORT is in use .*NCCLWATCH_PORT"

# --- a stray connection sending junk is ignored; the ranks still meet
begin
start junk 0 2 -- --timeout 20
start junk 1 2 -- --sleep-at init:1 --timeout 20
listening
{ printf 'GET / HTTP/1.0\r\n\r\n' >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
{ head -c 3000 /dev/urandom >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
{ printf 'NWBO\001\001\000\000\000\000\000\000\377\377\377\377' >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
finish
every_rank junk "0 1" expect_rc "junk on the port does not stop the ranks" 0
every_rank junk "0 1" expect_out "the ranks still finish" '^done$'

# --- a process of another bootstrap protocol (another ncclwatch build) is refused by name
begin
start proto 0 2
listening
{ printf 'NWBO\001\011\000\000\000\000\000\000\000\000\000\000' >/dev/tcp/127.0.0.1/"$PORT"; } 2>/dev/null
finish
rank_is proto 0
expect_rc "another protocol version is refused" 1
expect_err "another protocol version is named" 'the process at 127\.0\.0\.1:[0-9]+ speaks bootstrap protocol 9 where this ncclwatch speaks 1'

# --- a peer that joins properly and then misbehaves (a fake rank in python3)
cat >"$TMP/fake.py" <<'PY'
import socket, struct, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
MAGIC, PROTO = 0x4E57424F, 1
HELLO, WELCOME, ABORT, ENTER, GATHER, BCAST, BARRIER, RESULT = range(1, 9)
def msg(t, arg, seq, payload=b""):
    return struct.pack(">IBBHII", MAGIC, t, PROTO, arg, seq, len(payload)) + payload
def recv_msg(s):
    h = b""
    while len(h) < 16:
        c = s.recv(16 - len(h))
        if not c:
            return None
        h += c
    _, t, _, arg, seq, n = struct.unpack(">IBBHII", h)
    p = b""
    while len(p) < n:
        p += s.recv(n - len(p))
    return t, arg, seq, p
host = b"fakehost"
if mode.startswith("rank1"):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    fp = b"probe"
    hello = struct.pack(">IIIII", 1, 2, 0, 1, 4242) + struct.pack(">H", len(host)) + host + struct.pack(">I", len(fp)) + fp
    s.sendall(msg(HELLO, 0, 0, hello))
    assert recv_msg(s)[0] == WELCOME
    if mode == "rank1-junk":
        s.sendall(b"X" * 16)
    elif mode == "rank1-badlen":
        s.sendall(msg(GATHER, 0, 1, b"abcd"))
    elif mode == "rank1-badseq":
        s.sendall(msg(GATHER, 0, 7, b"abcdefgh"))
    elif mode == "rank1-bcast":
        s.sendall(msg(BCAST, 1, 1, b"abcdefgh"))
else:
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port))
    l.listen(4)
    l.settimeout(10)
    s, _ = l.accept()
    s.settimeout(10)
    assert recv_msg(s)[0] == HELLO
    table = struct.pack(">I", 2)
    for r in range(2):
        table += struct.pack(">IIIH", r, 2, 4242, len(host)) + host
    s.sendall(msg(WELCOME, 0, 0, table))
    recv_msg(s)  # the real rank's allgather part
    if mode == "rank0-junk":
        s.sendall(bytes(range(256)))
    elif mode == "rank0-biglen":
        s.sendall(msg(RESULT, GATHER, 1, b"z" * 1000))
    elif mode == "rank0-otherop":
        s.sendall(msg(RESULT, BCAST, 1, b"z" * 16))
s.settimeout(10)
try:
    while s.recv(4096):
        pass
except OSError:
    pass
PY
fake() { # fake MODE NAME LABEL REGEX: the fake is one rank of 2, the probe the other
	local mode=$1 name=$2 label=$3 want=$4 real=0
	case $mode in rank0-*) real=1 ;; esac
	begin
	if [ $real = 1 ]; then
		timeout "$LIMIT" python3 "$TMP/fake.py" "$mode" "$PORT" 2>/dev/null &
		PIDS+=($!)
		listening
		start "$name" 1 2 -- --value 7 --timeout 20
	else
		# a long timeout: a Python interpreter may take seconds to start on a loaded machine
		start "$name" 0 2 -- --timeout 20
		listening
		timeout "$LIMIT" python3 "$TMP/fake.py" "$mode" "$PORT" 2>/dev/null &
		PIDS+=($!)
	fi
	finish
	rank_is "$name" $real
	expect_rc "$label is refused" 1
	expect_err "$label is named" "$want"
	expect_no_crash "$label does not crash"
}
if command -v python3 >/dev/null; then
	fake rank1-junk f1 "junk from a joined rank" 'rank 1 on fakehost sent not ncclwatch bootstrap traffic \(magic 0x58585858\) during allgather #1'
	fake rank1-badlen f2 "a part of the wrong size" 'rank 1 on fakehost gave 4 bytes to allgather #1 where rank 0 gave 8'
	fake rank1-badseq f3 "a part for a later allgather" 'rank 1 on fakehost called allgather #7 while rank 0 called allgather #1'
	fake rank1-bcast f4 "a broadcast where rank 0 gathers" 'rank 1 on fakehost called broadcast #1 while rank 0 called allgather #1'
	fake rank0-junk f5 "junk from rank 0" 'rank 0 on fakehost sent not ncclwatch bootstrap traffic'
	fake rank0-biglen f6 "an answer of the wrong size" 'rank 0 on fakehost answered allgather #1 with 1000 bytes where this rank expects 16'
	fake rank0-otherop f7 "an answer to another call" 'rank 0 on fakehost called broadcast #1 while rank 1 on [^ ]+ called allgather #1'
else
	echo "# python3 not found: the fake-peer checks did not run"
fi

# --- the real command: ncclwatch bench joins through the bootstrap and refuses
# ranks started with different arguments before it touches a GPU
start_nw() { # NAME RANK WORLD bench-args...
	local name=$1 r=$2 w=$3
	shift 3
	(
		env RANK="$r" WORLD_SIZE="$w" LOCAL_RANK="$r" MASTER_ADDR=127.0.0.1 MASTER_PORT=$((PORT - 1)) \
			timeout "$LIMIT" "$NW" "$@" >"$TMP/$name.$r.out" 2>"$TMP/$name.$r.err"
		echo $? >"$TMP/$name.$r.rc"
	) &
	PIDS+=($!)
}
begin
start_nw nwfp 0 2 bench -b 8 -e 1M -T "$TO"
start_nw nwfp 1 2 bench -b 8 -e 2M -T "$TO"
finish
every_rank nwfp "0 1" expect_rc "bench refuses different arguments" 3
every_rank nwfp "0 1" expect_err "bench names the rank and the argument" \
	"rank 1 on [^ ]+ has '[^']*e=2097152[^']*' where rank 0 on [^ ]+ has '[^']*e=1048576"
begin
start_nw nwmiss 0 2 bench -b 8 -e 1M -T "$TO"
finish
rank_is nwmiss 0
expect_rc "bench without its other rank fails" 3
expect_err "bench names the missing rank" 'rank 1 never connected to 127\.0\.0\.1'
in_time "bench gives up on a missing rank within -T"

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
