#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the env-rendezvous bootstrap under a real torchrun (no GPU needed):
#   1. torchrun --no-python, static rendezvous on --master-port P: 4 ranks meet
#      on P+1 and finish;
#   2. the same with NCCLWATCH_PORT=P: refused with "port P is in use", which
#      shows that torchrun's own store holds MASTER_PORT (why the bootstrap
#      uses MASTER_PORT+1);
#   3. torchrun --standalone (c10d rendezvous, a port torchrun picks): 4 ranks
#      meet on its MASTER_PORT+1;
#   4. with GPUs: ncclwatch bench under torchrun, one rank per GPU (2 when the
#      machine has 2 or more; 1, which needs no bootstrap, when it has one).
# Run from the repository root after `make test` built build/tests/boot_probe:
#   OUT=./out scripts/boot_torchrun.sh
# Writes $OUT/boot_torchrun.txt (every rank's output) and prints one
# "ok"/"FAIL" line per check; exits non-zero when one fails.
set -u
OUT=${OUT:-./out}
PROBE=${PROBE:-build/tests/boot_probe}
mkdir -p "$OUT"
log=$OUT/boot_torchrun.txt
: >"$log"
command -v torchrun >/dev/null || { echo "FAIL torchrun not found on PATH"; exit 1; }
[ -x "$PROBE" ] || { echo "FAIL $PROBE not built (run make test)"; exit 1; }
fails=0
P=$((21000 + RANDOM % 8000))

check() { # NAME WANT_RC REGEX FILE
	local rc=$(cat "$4.rc")
	if [ "$rc" = "$2" ] && grep -Eq -- "$3" "$4"; then echo "ok   $1"; else echo "FAIL $1 (exit $rc)"; fails=$((fails + 1)); fi
}
run() { # NAME CMD...: output (all ranks, tagged by torchrun) to $OUT/NAME.txt
	local name=$1
	shift
	timeout 120 "$@" >"$OUT/$name.txt" 2>&1
	echo $? >"$OUT/$name.txt.rc"
	{ echo "== $name: $*"; cat "$OUT/$name.txt"; } >>"$log"
}

torchrun --version >>"$log" 2>&1 || python3 -c 'import torch; print("torch", torch.__version__)' >>"$log" 2>&1
run static torchrun --no-python --nnodes=1 --nproc-per-node=4 --tee=3 --master-addr=127.0.0.1 --master-port=$P \
	"$PROBE" --timeout 30
check "static rendezvous: 4 ranks meet on MASTER_PORT+1" 0 'gather 3 103' "$OUT/static.txt"
n=$(grep -c '^\[[^]]*\]:done$\|: done$\|^done$' "$OUT/static.txt")
echo "     ranks that printed done: $n (want 4)"

P2=$((P + 10))
run same torchrun --no-python --nnodes=1 --nproc-per-node=2 --tee=3 --master-addr=127.0.0.1 --master-port=$P2 \
	env NCCLWATCH_PORT=$P2 "$PROBE" --timeout 5
check "torchrun's store holds MASTER_PORT (bootstrap there is refused)" 1 "port $P2 is in use" "$OUT/same.txt"

run standalone torchrun --no-python --standalone --nproc-per-node=4 --tee=3 "$PROBE" --timeout 30
check "standalone (c10d) rendezvous: 4 ranks meet" 0 'gather 3 103' "$OUT/standalone.txt"

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$ngpu" -ge 1 ]; then
	np=$((ngpu >= 2 ? 2 : 1))
	run bench torchrun --no-python --standalone --nproc-per-node=$np --tee=3 \
		build/ncclwatch bench -b 8 -e 64M -f 4 -T 120
	check "ncclwatch bench under torchrun ($np rank(s), one per GPU)" 0 'Avg bus bandwidth' "$OUT/bench.txt"
else
	echo "     no GPU found by nvidia-smi: check 4 skipped"
fi

echo "outputs: $log"
[ "$fails" -eq 0 ]
