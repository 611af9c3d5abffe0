#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The first ten minutes of a new user: progress on a terminal only, flags
# with one meaning, suggestions, errors once per job, messages that say
# what is true (issue 20), and the small refusals of the reliability issue.
. "$(dirname "$0")/lib.sh"
export NCCLWATCH_CUDA_LIB=/nonexistent/libcuda.so.1
unset NCCLWATCH_PROGRESS
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
SWEEP="--backend mpi --no-history -b 8 -e 64K -n 2 -w 1"

# Progress: on a terminal (script(1) gives the command one), redrawn in place
# on stderr; never in a pipe; --progress/--no-progress force it.
if command -v script >/dev/null; then
	script -qec "$NW bench $SWEEP >/dev/null" /dev/null >"$TMP/tty.out" 2>&1 </dev/null
	if grep -aq $'\rbench: all_reduce float .* ([0-9]*/14 done' "$TMP/tty.out"; then ok "progress: drawn on a terminal"; else RC=1; notok "progress: drawn on a terminal" "$(od -c "$TMP/tty.out" | head -5)"; fi
	if grep -aq $'\033\\[K' "$TMP/tty.out"; then ok "progress: redrawn in place"; else RC=1; notok "progress: redrawn in place"; fi
	script -qec "$NW bench $SWEEP --no-progress >/dev/null" /dev/null >"$TMP/tty2.out" 2>&1 </dev/null
	if grep -aq 'done)' "$TMP/tty2.out"; then RC=1; notok "progress: --no-progress on a terminal" "$(cat -v "$TMP/tty2.out")"; else ok "progress: --no-progress on a terminal"; fi
	script -qec "$NW check --backend mpi --no-history >/dev/null" /dev/null >"$TMP/tty3.out" 2>&1 </dev/null
	if grep -aq $'\rcheck: .*done' "$TMP/tty3.out"; then ok "progress: check on a terminal"; else RC=1; notok "progress: check on a terminal" "$(cat -v "$TMP/tty3.out" | head -5)"; fi
else
	skip "progress: drawn on a terminal" "script(1) (bsdutils) is not installed"
fi
run "$NW" bench $SWEEP
expect_rc "progress: pipe run exit 0" 0
if grep -q 'done)' "$ERR"; then notok "progress: none in a pipe"; else ok "progress: none in a pipe"; fi
run "$NW" bench $SWEEP --progress
if grep -aq $'\rbench: .*done' "$ERR"; then ok "progress: --progress forces it in a pipe"; else notok "progress: --progress forces it in a pipe"; fi
if grep -aq '(1/14 done, about' "$ERR"; then notok "progress: no time left told after the first size (it holds the set-up and warm-up)"; else ok "progress: no time left told after the first size (it holds the set-up and warm-up)"; fi
run "$NW" bench $SWEEP --progress --quiet
if grep -aq 'done' "$ERR"; then ok "progress: --progress wins over --quiet"; else notok "progress: --progress wins over --quiet"; fi

# The sweep's size cap is reported, not silently cut.
run "$NW" bench --backend mpi --no-history -b 1 -e 1T -i 1 -f 1
expect_rc "sweep over 100000 sizes: exit 2" 2
expect_err "sweep over 100000 sizes: says so" "more than 100000 sizes"

# tune's "[i/n] variant" lines: one line redrawn in place on a terminal, lines in a pipe.
FAKE=$NW_TESTS/fake_bench
if [ -x "$FAKE" ] && command -v script >/dev/null; then
	script -qec "$NW tune --bench-cmd $FAKE --op all_reduce -e 1M --settings none --var NCCL_PROTO=LL --repeats 3 --no-history >/dev/null" /dev/null >"$TMP/tune.out" 2>&1 </dev/null
	if grep -aq $'\rtune: \\[1/' "$TMP/tune.out"; then ok "progress: tune on a terminal"; else RC=1; notok "progress: tune on a terminal" "$(cat -v "$TMP/tune.out" | head -5)"; fi
	run "$NW" tune --bench-cmd "$FAKE" --op all_reduce -e 1M --settings none --var NCCL_PROTO=LL --repeats 3 --no-history
	if grep -q $'\r' "$ERR"; then notok "progress: tune in a pipe prints lines"; else expect_err "progress: tune in a pipe prints lines" "^tune: \[1/"; fi
fi

# An unknown command or flag suggests the nearest one.
run "$NW" benc
expect_rc "unknown command: exit 2" 2
expect_err "unknown command: suggests bench" "did you mean 'bench'\?"
run "$NW" help tpo
expect_err "help of an unknown command: suggests topo" "did you mean 'topo'\?"
run "$NW" bench --itres 3
expect_rc "unknown flag: exit 2" 2
expect_err "unknown flag: suggests --iters" "did you mean '--iters'\?"
run "$NW" bench --frobnicate
if grep -q "did you mean" "$ERR"; then notok "unknown flag: no wild guess"; else ok "unknown flag: no wild guess"; fi

# help bench prints one % sign where it means one.
run "$NW" help bench
if grep -q '%%' "$OUT"; then notok "help bench: no %%"; else ok "help bench: no %%"; fi

# report: -O/--output is the page; -o still works, with a deprecation note.
NT=$SRCDIR/tests/fixtures/nccltests/nt_all_reduce.txt
[ -f "$NT" ] || NT=$(ls "$SRCDIR"/tests/fixtures/*/nt_all_reduce.txt | head -1)
run "$NW" report "$NT" -O "$TMP/a.html"
expect_rc "report -O FILE" 0
expect_true "report -O wrote the page" test -s "$TMP/a.html"
run "$NW" report "$NT" --output "$TMP/b.html"
expect_rc "report --output FILE" 0
run "$NW" report "$NT" -o "$TMP/c.html"
expect_rc "report -o still works" 0
expect_err "report -o: deprecation note" "-o is deprecated here .*use -O or --output"

# One message for a recorded run, in every command that records.
run "$NW" import --db "$TMP/h.db" "$NT"
expect_err "import: the one recorded message" "^ncclwatch: import: recorded as run 1 \(ncclwatch history show 1\)$"
run "$NW" check --backend mpi --db "$TMP/h.db"
expect_err "check: the one recorded message" "^ncclwatch: check: recorded as run 2 \(ncclwatch history show 2\)$"

# Reliability leftovers (issue 13, item 15).
run "$NW" exporter --listen 1.2.3.4.5:9850
expect_rc "bad --listen: exit 2" 2
expect_err "bad --listen: names --listen" "^ncclwatch: error: --listen: bad listen address"
run "$NW" exporter --listen 1.2.3.4.5:9850 --once
expect_rc "bad --listen with --once: exit 2" 2
run "$NW" import --csv --json "$NT"
expect_rc "import --csv --json: refused" 2
expect_err "import --csv --json: says they conflict" "--csv and --json both ask for standard output"
for c in doctor topo check; do
	run "$NW" $c --sysroot /nonexistent
	# check's usage errors are its "cannot check" status (3), so a prolog never drains on them
	want=2; [ "$c" = check ] && want=3
	expect_rc "$c --sysroot /nonexistent: exit $want" "$want"
	expect_err "$c --sysroot /nonexistent: named" "--sysroot '/nonexistent'"
done
run "$NW" help exporter
expect_out "help exporter: :0 binds every address" ":0 is every address"
run "${MPIRUN[@]}" -np 1 "$NW" bench --backend mpi --no-history --pairs
expect_rc "--pairs on one rank: exit 2 (usage)" 2
expect_err "--pairs on one rank: says how" "needs at least 2 ranks .*mpirun -np 2"

# Errors once per job: 4 ranks without a GPU say it once, from rank 0, with no MPI abort.
run "${MPIRUN[@]}" -np 4 "$NW" bench --no-history
expect_rc "no GPU under mpirun: exit 3" 3
expect_true "no GPU under mpirun: one message" test "$(grep -c 'no NVIDIA driver' "$ERR")" -eq 1
expect_err "no GPU under mpirun: names every rank" "every rank \(4\): no NVIDIA driver"
if grep -q "MPI_ABORT" "$ERR"; then notok "no GPU under mpirun: no MPI_ABORT banner"; else ok "no GPU under mpirun: no MPI_ABORT banner"; fi

# One rank on the host backend: "ranks", not "GPUs"; check says SKIP, not PASS.
run "$NW" bench --backend mpi --no-history -b 8 -e 1K
expect_out "bench --backend mpi alone: says ranks" "use 2 or more ranks"
expect_no_out "bench --backend mpi alone: not GPUs" "use 2 or more GPUs"
run "$NW" check --backend mpi --no-history
expect_out "check on one rank: link items SKIP" "^  SKIP all_reduce"
expect_no_out "check on one rank: no PASS for a link" "^  PASS all_(reduce|gather)"

# History writers and readers waiting on a locked database say so after a
# second or two, and give up at --lock-timeout (issue 13, item 9).
hold_db_lock "$TMP/locked.db" 30
holder=$HOLDER
start=$SECONDS
run "$NW" history --db "$TMP/locked.db" --lock-timeout 3
took=$((SECONDS - start))
expect_true "locked: the reader gives up (exit $RC)" test "$RC" -ne 0
expect_true "locked: the reader waits the --lock-timeout bound, not more (took ${took}s)" test "$took" -le 6
expect_err "locked: the reader says what it waits for" "waiting for the history database '.*locked.db': another ncclwatch is writing it \(giving up after 3 s"
start=$SECONDS
run "$NW" import --db "$TMP/locked.db" --lock-timeout=3 "$NT"
took=$((SECONDS - start))
expect_err "locked: the writer says what it waits for" "waiting for the history database .*another ncclwatch is writing it"
expect_true "locked: the writer waits the bound, not more (took ${took}s)" test "$took" -le 6
run "$NW" history --db "$TMP/locked.db" --lock-timeout 0
expect_rc "--lock-timeout 0: refused" 2
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true

# Stats files of another uid are read when their group is NCCLWATCH_GROUP
# (a node exporter over a directory shared with training pods), not otherwise.
SD=$TMP/shared-stats
late_rank_files "$TMP/statsrc"
ONE=$(ls "$TMP"/statsrc/*.nws | head -1)
mkdir -p "$SD"; cp "$ONE" "$SD/pod.nws"
if chown 65534:65534 "$SD" "$SD/pod.nws" 2>/dev/null && chmod 2770 "$SD" && chmod 640 "$SD/pod.nws"; then
	run env -u NCCLWATCH_GROUP "$NW" top --once --dir "$SD"
	expect_rc "shared dir of another uid: refused without NCCLWATCH_GROUP" 1
	expect_err "shared dir: the refusal names NCCLWATCH_GROUP" "NCCLWATCH_GROUP"
	run env NCCLWATCH_GROUP=65534 "$NW" top --once --dir "$SD"
	expect_rc "NCCLWATCH_GROUP=65534: read" 0
	expect_no_out "NCCLWATCH_GROUP: the pod's file is not bad" '1 bad\)'
	run env NCCLWATCH_GROUP=$(getent group 65534 | cut -d: -f1) "$NW" exporter --once --dir "$SD"
	expect_rc "NCCLWATCH_GROUP by name: exporter reads it" 0
	expect_out "NCCLWATCH_GROUP: exporter counts it live or stale, not bad" 'state="bad"\} 0$'
	chmod 646 "$SD/pod.nws"
	run env NCCLWATCH_GROUP=65534 "$NW" top --once --dir "$SD"
	expect_err "NCCLWATCH_GROUP: a file others can write is still skipped" "pod\.nws.*owned by uid 65534"
else
	skip_root "NCCLWATCH_GROUP" "cannot chown a file to another user"
fi

# top: a SIZE column in human units, a reversible sort, '?' help, the
# straggler's LATE column kept on a narrow terminal, NO_COLOR respected.
H=$TMP/statsrc
run "$NW" top --once --all --dir "$H"
expect_rc "top --once: exit 0" 0
expect_out "top --once: SIZE column" "^COMM +NAME +STATE +RANK +OP +HOST +CALLS +BYTES +SIZE +CALLS/S"
expect_out "top --once: sizes for people (KiB, MiB)" " [0-9.]+ (B|KiB|MiB) +[0-9.-]+ +"
run "$NW" top --once --all --dir "$H" --sort rate
grep -E '^[0-9a-f]{16} ' "$OUT" | awk '{print $1, $4, $5}' >"$TMP/fwd"
run "$NW" top --once --all --dir "$H" --sort rate --reverse
grep -E '^[0-9a-f]{16} ' "$OUT" | awk '{print $1, $4, $5}' >"$TMP/rev"
expect_true "top --reverse: the same rows" cmp -s <(sort "$TMP/fwd") <(sort "$TMP/rev")
expect_true "top --reverse: another order" sh -c "! cmp -s '$TMP/fwd' '$TMP/rev'"
if command -v script >/dev/null; then
	waitfor() { for _ in $(seq 300); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
	: >"$TMP/t1"
	(waitfor "$TMP/t1" "ncclwatch top: "; printf '?'; waitfor "$TMP/t1" "any key returns"; printf 'x'; sleep 0.3; printf 'bb'; sleep 0.4; printf q) |
		TERM=xterm timeout 40 script -qfec "stty cols 60 rows 30; exec $NW top --all --dir $H --interval 0.2" /dev/null >"$TMP/t1" 2>&1
	RC=$?
	expect_rc "top live: ? then q" 0
	expect_true "top live: ? shows the keys" grep -q "any key returns" "$TMP/t1"
	expect_true "top live: the same sort key again reverses it" grep -q "reversed) |" "$TMP/t1"
	expect_true "top live: 60 columns keep LATE" grep -Eq "RANK OP .{0,12}LATE" "$TMP/t1"
	: >"$TMP/t2"
	(waitfor "$TMP/t2" "ncclwatch top: "; sleep 0.3; printf q) | TERM=xterm timeout 40 script -qfec "exec $NW top --all --dir $H --interval 0.2" /dev/null >"$TMP/t2" 2>&1
	expect_true "top live: the straggler in colour on a terminal" grep -q $'\033\\[31m' "$TMP/t2"
	: >"$TMP/t3"
	(waitfor "$TMP/t3" "ncclwatch top: "; sleep 0.3; printf q) | NO_COLOR=1 TERM=xterm timeout 40 script -qfec "exec $NW top --all --dir $H --interval 0.2" /dev/null >"$TMP/t3" 2>&1
	expect_true "top live: NO_COLOR: no colour" sh -c "! grep -q $'\033\\\\[3[0-7]m' '$TMP/t3'"
fi

# README's first command on a machine without a GPU: the host backend's
# default sweep stops at 32 MiB (seconds, not minutes); -e still goes further.
run "${MPIRUN[@]}" -np 2 "$NW" bench --backend mpi --no-history -n 1 -w 0 -c 0
expect_rc "host backend default sweep: exit 0" 0
expect_out "host backend default sweep: up to 32 MiB" "^ +33554432 +8388608 +float"
expect_no_out "host backend default sweep: not to 1 GiB" "^ +67108864 "
run "$NW" bench --backend mpi --no-history -b 64M -n 1 -w 0 -c 0 --oop-only
expect_out "host backend: -b above 32M alone still runs that size" "^ +67108864 "

