#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# report: a self-contained HTML page (no script, nothing fetched) and SVG
# charts from real nccl-tests outputs; rendered by headless Chromium.
source "$(dirname "$0")/lib.sh"
FIX=$SRCDIR/tests/fixtures/nccltests

# the same planted drop as test_compare.sh
awk '/^#/ || NF < 13 { print; next }
     $1 + 0 >= 67108864 && $1 + 0 <= 268435456 {
	printf "%12s  %12s  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %6s  %7.2f  %6.2f  %6.2f  %6s\n",
	       $1, $2, $3, $4, $5, $6 * 1.25, $7 / 1.25, $8 / 1.25, $9, $10 * 1.25, $11 / 1.25, $12 / 1.25, $13
	next }
     { print }' "$FIX/nt_all_reduce.txt" >"$TMP/after.txt"

run "$NW" report "$FIX/nt_all_reduce.txt" "$TMP/after.txt" -o "$TMP/r.html" --link-gbs 478.1
expect_rc "report of two runs" 0
expect_err "says where it wrote" "wrote $TMP/r.html"
cp "$TMP/r.html" "$OUT"
expect_out "is HTML" '^<!DOCTYPE html>'
expect_out "has an inline SVG chart" '<svg xmlns="http://www.w3.org/2000/svg"'
expect_out "has both runs in the legend" 'after\.txt</text>'
expect_out "has the link line" 'link 478 GB/s'
expect_out "has the comparison verdict" 'regression: 6 of 62 sizes slower'
expect_out "has the slower band" 'out-of-place, 64M&ndash;256M \(3 sizes\): -20\.0% busbw'
expect_out "has the fingerprints" '<h2>Fingerprints</h2>'
expect_out "has a time chart (log-log)" 'all_reduce time by size</title>'
expect_out "time on a log axis" 'time \(us, log scale\)</text>'
expect_out "busbw on a log axis, small sizes not flat at zero" 'busbw \(GB/s, log scale\)</text>'
n=$(grep -c '<circle class="regression"' "$OUT"); RC=$n
expect_rc "the 6 slower sizes ringed on the charts (busbw and time, each in its placement)" 12
expect_out "placements switchable" '<input type="checkbox" id="other"><label for="other"> show in-place rows instead</label>'
expect_out "the attribution as compare gives it" '<b>In short:</b> '
expect_out "what differs listed" '<b>What differs</b> \(most likely to matter first\)'
expect_no_out "no script" '<script'
expect_no_out "nothing fetched" '(src|href)='
n=$(grep -o 'https\?://[^"]*' "$OUT" | grep -vc '^http://www.w3.org/2000/svg$'); RC=$n
expect_rc "no URL but the SVG namespace" 0

run "$NW" report "$FIX/nt_all_reduce.txt" "$FIX/nt_all_gather.txt" "$FIX/nt_broadcast.txt" -o "$TMP/three.html"
expect_rc "report of three runs" 0
n=$(grep -c '<div class="pair main"' "$TMP/three.html"); RC=$n; expect_rc "one chart pair per op" 3
n=$(grep -c '<svg ' "$TMP/three.html"); RC=$n; expect_rc "busbw and time, both placements, per op" 12
expect_true "no comparison with three runs" sh -c "! grep -q '<h2>Comparison' '$TMP/three.html'"

# a path that is no regular file (a pipe here, /dev/null for users) is written
# to, never replaced by a rename
mkfifo "$TMP/pipe"
cat "$TMP/pipe" >"$TMP/piped.html" &
reader=$!
run "$NW" report "$FIX/nt_all_reduce.txt" -o "$TMP/pipe"
wait "$reader"
expect_rc "report into a pipe: exit 0" 0
expect_true "report into a pipe: still a pipe" test -p "$TMP/pipe"
expect_true "report into a pipe: the page went through it" grep -q '</html>' "$TMP/piped.html"
expect_true "report into a pipe: no temporary file left" bash -c "! ls '$TMP' | grep -q 'pipe.tmp'"

run "$NW" report "$FIX/nt_all_reduce.txt" "$TMP/after.txt" --svg "$TMP/ar.svg"
expect_rc "one SVG chart" 0
cp "$TMP/ar.svg" "$OUT"
expect_out "SVG document" '^<svg xmlns='
n=$(grep -c '<polyline' "$OUT"); RC=$n; expect_rc "two lines" 2
n=$(grep -c '<circle' "$OUT"); RC=$n; expect_rc "one point per size per run" 62
run "$NW" report "$FIX/nt_all_reduce.txt" --svg - --op all_gather
expect_rc "op absent from the runs" 2
expect_err "says so" "no out-of-place rows for 'all_gather'"
run "$NW" report "$FIX/nt_all_reduce.txt" --svg - --inplace
expect_rc "in-place chart to stdout" 0
expect_out "in-place named" 'in-place</text>'

# Bad usage: clear errors, nothing half-written.
run "$NW" report "$FIX/nt_all_reduce.txt"
expect_rc "no output named" 2
expect_err "says how" 'say where to write: -O FILE.html'
run "$NW" report -o "$TMP/x.html"
expect_rc "no run" 2
run "$NW" report "$TMP/absent.txt" -o "$TMP/x.html"
expect_rc "missing input" 2
expect_true "no file written on error" test ! -e "$TMP/x.html"
run "$NW" report "$FIX/nt_all_reduce.txt" -o "$TMP/nodir/x.html"
expect_rc "unwritable output" 2
expect_err "names the output" "cannot write '$TMP/nodir/x.html'"
run "$NW" report "$FIX/nt_all_reduce.txt" -o "$TMP/x.html" --link-gbs fast
expect_rc "bad --link-gbs" 2

# Render it as a browser would, and look at the pixels.
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	skip "report renders in headless chromium" "chromium is not installed"
else
	screenshot "$TMP/r.html" "$TMP/shot.png" 1200,1600
	expect_true "chromium wrote a screenshot" test -s "$TMP/shot.png"
	# The chart's two series colours must be on screen (decoded with Python's zlib):
	# B in full orange; A wide and pale blue (#0072B2 at 45% on white) where B leaves it
	# visible; the link line red. The first chart is in the top half (800 rows).
	if command -v python3 >/dev/null; then
		python3 "$SRCDIR/tests/cli/pngcolours.py" --rows 800 "$TMP/shot.png" d55e00 8cbfdc~25 b22222 \
			>"$TMP/colours" 2>"$ERR"
		RC=$?
		awk '$2 == "yes" { y[$1] = 1 }
		     END { print (y["d55e00"] && y["8cbfdc~25"]) ? "blue" : "missing"; print y["b22222"] ? "red" : "nolink" }' \
			"$TMP/colours" >"$OUT"
		expect_rc "screenshot decoded" 0
		expect_out "both series drawn" '^blue$'
		expect_out "link line drawn" '^red$'
	fi
fi
