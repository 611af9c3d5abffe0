# SPDX-License-Identifier: Apache-2.0
# The two long torture tests of the stats readers and the exporter's HTTP
# layer, NW_TORTURE_S seconds each (default 60):
#  - readers: one process rewrites, truncates, replaces and deletes stats
#    files in a loop while a live exporter is scraped 10 times a second and
#    `top --once` runs in a loop: no crash, no hang, every scrape answered;
#  - connections: 500 idle and 50 trickling connections held open (idle
#    ones reopened when the exporter closes them) while a scraper polls
#    every second: every scrape answered within 1 s.
source tests/cli/lib.sh

DUR=${NW_TORTURE_S:-60}
EXP_PID=
stop_exporter() {
	[ -n "$EXP_PID" ] || return 0
	kill -TERM "$EXP_PID" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$EXP_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$EXP_PID" 2>/dev/null
	wait "$EXP_PID" 2>/dev/null
	EXP_PID=
}
trap 'stop_exporter; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM

# start_exporter DIR: a live exporter on a free port; sets EXP_PID and PORT
start_exporter() {
	"$NW" exporter --dir "$1" --listen 127.0.0.1:0 2>"$TMP/exp.err" &
	EXP_PID=$!
	PORT=$(exporter_port "$TMP/exp.err")
	expect_true "exporter says its port" [ -n "$PORT" ]
	[ -n "$PORT" ] || exit 1
}

late_rank_files "$TMP/good"
D=$TMP/stats; mkdir -p "$D"; chmod 700 "$D"
cp "$TMP/good"/*.nws "$D/"
SIZE=$(stat -c %s "$(ls "$TMP/good"/*.nws | head -1)")

# ---- readers ----
start_exporter "$D"
(
	end=$((SECONDS + DUR))
	while [ $SECONDS -lt $end ]; do
		for src in "$TMP/good"/*.nws; do
			f=$D/$(basename "$src")
			cat "$src" >"$f"                                  # rewrite in place
			truncate -s 4096 "$f"; truncate -s "$SIZE" "$f"   # truncate, grow back
			cp "$src" "$f.tmp" && mv "$f.tmp" "$f"             # replace
			rm -f "$f"; cp "$src" "$f"                         # delete, recreate
		done
	done
) &
WRITER=$!
(
	bad=0 n=0
	end=$((SECONDS + DUR))
	while [ $SECONDS -lt $end ]; do
		timeout 10 "$NW" top --once --dir "$D" >/dev/null 2>&1
		r=$?
		n=$((n + 1))
		[ $r -ge 124 ] && bad=$r
	done
	echo "$n $bad" >"$TMP/top.res"
) &
TOPS=$!
run python3 - "$PORT" "$DUR" <<'PY'
import sys, time, urllib.request
port, dur = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + dur
n = failed = 0
while time.time() < end:
    t0 = time.time()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            body = r.read()
            if r.status != 200 or b"ncclwatch_stats_files" not in body:
                failed += 1
    except Exception as e:
        failed += 1
        print("scrape failed:", e, file=sys.stderr)
    n += 1
    time.sleep(max(0.0, 0.1 - (time.time() - t0)))
print(f"scrapes {n} failed {failed}")
sys.exit(1 if failed or n < dur else 0)
PY
expect_rc "readers: every scrape of the live exporter answered while files change under it" 0
expect_out "readers: scrapes counted" "^scrapes [0-9]+ failed 0$"
wait $WRITER $TOPS
read -r TOPN TOPBAD <"$TMP/top.res"
expect_true "readers: $TOPN runs of top --once, none crashed or hung (last bad status $TOPBAD)" [ "$TOPBAD" = 0 ]
expect_true "readers: the exporter is still alive" kill -0 "$EXP_PID"
stop_exporter

# ---- connections ----
start_exporter "$TMP/good"
run python3 - "$PORT" "$DUR" <<'PY'
import socket, sys, threading, time, urllib.request
port, dur = int(sys.argv[1]), float(sys.argv[2])
stop = time.time() + dur

def conn():
    s = socket.socket()
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s

def hold():
    idle = [conn() for _ in range(500)]
    trick = [conn() for _ in range(50)]
    for s in trick:
        s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    reopened = 0
    while time.time() < stop:
        for i, s in enumerate(idle):       # reopen what the exporter closed
            try:
                if s.recv(1) == b"":
                    raise OSError
            except BlockingIOError:
                continue
            except OSError:
                pass
            s.close()
            try:
                idle[i] = conn()
                reopened += 1
            except OSError:
                pass
        for i, s in enumerate(trick):      # one header line now and then
            try:
                s.send(b"X-Slow: 1\r\n")
            except OSError:
                s.close()
                try:
                    trick[i] = conn()
                    trick[i].send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                except OSError:
                    pass
        time.sleep(1)
    print(f"held 500 idle and 50 trickling connections, reopened {reopened}")

t = threading.Thread(target=hold, daemon=True)
t.start()
time.sleep(2)  # let the crowd connect first
n = failed = 0
worst = 0.0
while time.time() < stop - 1:
    t0 = time.time()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
            ok = r.status == 200 and b"ncclwatch_stats_files" in r.read()
    except Exception as e:
        ok = False
        print("scrape failed:", e, file=sys.stderr)
    dt = time.time() - t0
    worst = max(worst, dt)
    n += 1
    if not ok or dt > 1.0:
        failed += 1
    time.sleep(max(0.0, 1.0 - dt))
t.join()
print(f"scrapes {n} failed {failed} worst {worst:.3f}s")
sys.exit(1 if failed or n < max(1, (dur - 3) / 2) else 0)
PY
expect_rc "connections: every scrape answered within 1 s while 550 clients hold connections" 0
expect_out "connections: scrapes counted" "^scrapes [0-9]+ failed 0 "
expect_true "connections: the exporter is still alive" kill -0 "$EXP_PID"
stop_exporter
