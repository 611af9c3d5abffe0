# SPDX-License-Identifier: Apache-2.0
# The portable build (make portable): both files load with glibc 2.31 alone.
# Checks their ELF headers, then runs them under chroot in two roots: one
# holding nothing but this machine's glibc libraries and the files, and the
# Debian 11 (glibc 2.31) root that debootstrap made for the build.
# Needs root (chroot) and debootstrap with a reachable Debian mirror: as an
# ordinary user the checks say skip (not root); as root without debootstrap
# or a mirror they say skip too, and fail under NW_TEST_ALL=1.
. tests/cli/lib.sh
P=${NW_PORTABLE:-$SRCDIR/build-portable}
FX=$SRCDIR/tests/fixtures

if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null || ! command -v chroot >/dev/null; then
	skip_root "portable build" "needs root, chroot and debootstrap"
	exit 0
fi
# Built afresh from these sources (the Debian 11 root is made once, then kept).
if [ -z "${NW_PORTABLE:-}" ] && ! make -C "$SRCDIR" -s portable >"$TMP/make.log" 2>&1; then
	if grep -q 'debootstrap of Debian 11' "$TMP/make.log"; then
		skip "Debian 11 root made with debootstrap" "$(tail -1 "$TMP/make.log")"
	else
		RC=1; notok "make portable" "$(tail -5 "$TMP/make.log")"
	fi
	exit 0
fi
ok "make portable"
FILES="$P/ncclwatch $P/libnccl-profiler-ncclwatch.so $P/libncclwatch-interpose.so"

# ELF: only glibc's libraries, no symbol version above GLIBC_2.31.
for f in $FILES; do
	n=$(basename "$f")
	other=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
		grep -Ev '^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64)\.so\.[0-9]+$' || true)
	RC=0
	if [ -z "$other" ]; then ok "$n needs only glibc libraries"; else notok "$n needs only glibc libraries" "NEEDED: $other"; fi
	top=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
	expect_true "$n needs GLIBC_$top <= 2.31" test "$(printf '%s\n2.31\n' "$top" | sort -V | tail -1)" = 2.31
done

# mkroot DIR: the files, the plugin harness and test inputs under DIR/nw.
mkroot() {
	mkdir -p "$1/nw/in" "$1/tmp"
	cp $FILES "$P/tests/plugin_harness" "$1/nw/"
	cp "$FX/nccltests/nt_all_reduce.txt" "$FX/logs/h200x1_default.log" "$1/nw/in/"
	sed 's/ 346\.00 / 300.00 /g' "$FX/nccltests/nt_all_reduce.txt" >"$1/nw/in/slow.txt"
}

# in_root ROOT CMD...: runs CMD in ROOT with a clean environment and its own
# history and stats places.
in_root() {
	local r=$1
	shift
	run chroot "$r" /usr/bin/env -i PATH=/nw:/usr/bin:/bin HOME=/tmp XDG_DATA_HOME=/tmp/xdg \
		NCCLWATCH_DB=/tmp/h.db NCCLWATCH_DIR=/tmp/stats "$@"
}

# every_command ROOT LABEL: what a user runs in an image that has nothing else.
every_command() {
	local r=$1 label=$2
	rm -rf "$r/tmp/h.db" "$r/tmp/stats" "$r/tmp/r.html"
	in_root "$r" ncclwatch version
	expect_rc "$label: version exits 0" 0
	expect_out "$label: version names itself" '^ncclwatch [0-9]'
	in_root "$r" ncclwatch doctor
	expect_no_crash "$label: doctor runs"
	expect_out "$label: doctor reports its checks" 'ncclwatch doctor: [0-9]+ checks'
	in_root "$r" ncclwatch logscan /nw/in/h200x1_default.log
	expect_rc "$label: logscan exits 0" 0
	in_root "$r" ncclwatch import --json /nw/in/nt_all_reduce.txt
	expect_rc "$label: import exits 0" 0
	in_root "$r" ncclwatch compare /nw/in/nt_all_reduce.txt /nw/in/slow.txt
	expect_no_crash "$label: compare runs"
	expect_out "$label: compare finds the slower rows" 'all_reduce'
	in_root "$r" ncclwatch history
	expect_rc "$label: history exits 0" 0
	in_root "$r" ncclwatch report /nw/in/nt_all_reduce.txt /nw/in/slow.txt -o /tmp/r.html
	expect_rc "$label: report exits 0" 0
	expect_true "$label: report wrote HTML" grep -q '<svg' "$r/tmp/r.html"
	in_root "$r" ncclwatch bench --backend mpi
	expect_rc "$label: bench --backend mpi without MPI exits 3" 3
	expect_err "$label: bench --backend mpi says Open MPI is missing" "Open MPI's library could not be opened.*libmpi\.so\.40"
	in_root "$r" plugin_harness --plugin /nw/libnccl-profiler-ncclwatch.so --dir /tmp/stats --ranks 2 --ops 5 --check
	expect_rc "$label: the plugin harness loads the plugin" 0
	in_root "$r" ncclwatch exporter --once
	expect_rc "$label: exporter --once exits 0" 0
	expect_out "$label: exporter --once shows the harness's collectives" '^ncclwatch_[a-z_]+\{.*rank="1"'
	# the HTTP endpoint from the binary alone (libmicrohttpd is linked in)
	chroot "$r" /usr/bin/env -i PATH=/nw:/usr/bin:/bin NCCLWATCH_DIR=/tmp/stats \
		ncclwatch exporter --listen 127.0.0.1:0 2>"$TMP/pexp.err" &
	local ep=$! port
	port=$(exporter_port "$TMP/pexp.err")
	RC=0
	expect_true "$label: exporter --listen serves /metrics with nothing beside the binary" \
		sh -c "[ -n '$port' ] && curl -s -m 5 http://127.0.0.1:$port/metrics | grep -q '^ncclwatch_coll_ops_total{'"
	kill "$ep" 2>/dev/null; wait "$ep" 2>/dev/null
}

# A root with this machine's glibc libraries and nothing else.
G=$TMP/glibc-root
mkroot "$G"
for l in $(ldd "$P/ncclwatch" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'); do
	mkdir -p "$G$(dirname "$l")"
	cp -L "$l" "$G$l"
done
mkdir -p "$G/usr/bin"
cp -L /usr/bin/env "$G/usr/bin/env"
every_command "$G" "glibc only"
# top's live view in a root without terminfo: says what to do
if command -v script >/dev/null; then
	TERM=xterm timeout 20 script -qfec "chroot $G /usr/bin/env -i PATH=/nw TERM=xterm ncclwatch top --dir /tmp" /dev/null >"$TMP/top.tty" 2>&1
	expect_true "glibc only: top without terminfo says to set TERM or TERMINFO, or use --once" \
		grep -q "no description of terminal 'xterm'.*TERMINFO.*--once" "$TMP/top.tty"
fi

# The Debian 11 root (glibc 2.31) that make portable built in.
D=$P/rootfs
mkroot "$D"
every_command "$D" "Debian 11"
rm -rf "$D/nw"
