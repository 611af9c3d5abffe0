#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The container image's root file system (make image-root; the Dockerfile
# copies the same into an empty image): the portable files, their glibc, a
# non-root user, the licenses, and nothing else: no shell. Run under chroot
# as that user. Needs root (chroot) and what make portable needs.
. "$(dirname "$0")/lib.sh"
cd "$SRCDIR" || exit 1
if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null || ! command -v chroot >/dev/null; then
	skip "image root" "needs root, chroot and debootstrap (as make portable does)"
	exit 0
fi
if ! make -s image-root >"$TMP/make.log" 2>&1; then
	RC=1; notok "make image-root" "$(tail -5 "$TMP/make.log")"
	exit 0
fi
R=$SRCDIR/build-image/rootfs
ok "make image-root"
expect_true "no shell in the image" test ! -e "$R/bin/sh" -a ! -e "$R/usr/bin/sh" -a ! -e "$R/bin/bash"
expect_true "the licenses are in the image" test -s "$R/usr/share/doc/ncclwatch/LICENSE" -a -s "$R/usr/share/doc/ncclwatch/NOTICE" \
	-a -s "$R/usr/share/doc/ncclwatch/THIRD-PARTY-NOTICES"
expect_true "THIRD-PARTY-NOTICES holds each linked library's license" sh -c \
	'for p in libjansson4 libncursesw6 libsqlite3-0 libmicrohttpd; do grep -q "==== $p" "$1" || exit 1; done' sh "$R/usr/share/doc/ncclwatch/THIRD-PARTY-NOTICES"
expect_true "the image's user is not root" grep -q '^ncclwatch:x:65532:65532:' "$R/etc/passwd"
size=$(du -sk "$R" | cut -f1)
expect_true "the image root is small (${size} KB < 16 MB)" test "$size" -lt 16384

as_user() { chroot --userspec=65532:65532 "$R" "$@"; }
run as_user /usr/bin/ncclwatch version
expect_rc "version as the image's user" 0
expect_out "version: the tool" '^ncclwatch [0-9]'
mkdir -p "$R/var/run/ncclwatch/job"
chown 65532:65532 "$R/var/run/ncclwatch/job"
chmod 700 "$R/var/run/ncclwatch/job"
run as_user /usr/bin/ncclwatch exporter --once --dir /var/run/ncclwatch/job
expect_rc "exporter --once as the image's user" 0
expect_out "exporter --once: metrics" '^# TYPE ncclwatch_'
run as_user /usr/bin/ncclwatch doctor --only env
expect_true "doctor runs in the image (exit 0, 1 or 2)" [ "$RC" -le 2 ]

# The exporter serving HTTP from the image root (nothing but the binary and
# glibc), a real Prometheus scraping it with the rules as shipped but every
# 'for:' made 0s: the straggler alert fires with its routing labels, and
# the exporter-down alert fires once the exporter stops.
if ! command -v prometheus >/dev/null || ! command -v curl >/dev/null; then
	skip "Prometheus scrapes the image's exporter" "prometheus or curl is not installed (apt-get install prometheus curl)"
	exit 0
fi
IEXP='' IPROM=''
stop_all() { for p in $IEXP $IPROM; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap stop_all EXIT
trap 'exit 1' INT TERM
# a job with a late rank 2, written as the image's user into the image's directory
run setpriv --reuid=65532 --regid=65532 --clear-groups "$NW_TESTS/plugin_harness" --plugin "$NW_PLUGIN" \
	--dir "$R/var/run/ncclwatch/job" --ranks 4 --ops 10 --late 2 --late-us 10000
expect_rc "a job's stats files written as the image's user" 0
# chroot itself, not the function: $! is then the exporter (chroot execs it)
chroot --userspec=65532:65532 "$R" /usr/bin/ncclwatch exporter --listen 127.0.0.1:0 --dir /var/run/ncclwatch/job --all \
	2>"$TMP/iexp.err" &
IEXP=$!
port=$(exporter_port "$TMP/iexp.err")
if [ -z "$port" ]; then
	RC=1; notok "the image's exporter listens" "$(cat "$TMP/iexp.err")"; exit 1
fi
run curl -s -m 5 "http://127.0.0.1:$port/metrics"
expect_out "the image's exporter serves /metrics over HTTP" '^ncclwatch_coll_ops_total\{.*op="all_reduce"'
sed -E 's/^( +for: ).*/\10s/' deploy/prometheus/ncclwatch-rules.yml >"$TMP/rules-now.yml"
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/prom.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $TMP/rules-now.yml
scrape_configs:
  - job_name: ncclwatch
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$port']
        labels:
          Hostname: image-node
CONF
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" --web.listen-address="127.0.0.1:$pport" \
	>"$TMP/prom.log" 2>&1 &
IPROM=$!
# firing NAME SECONDS: until ALERTS has NAME firing; its series in $TMP/alert.json
firing() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		curl -s -m 5 -G "http://127.0.0.1:$pport/api/v1/query" \
			--data-urlencode "query=ALERTS{alertname=\"$1\",alertstate=\"firing\"}" >"$TMP/alert.json" 2>/dev/null &&
			python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["data"]["result"] else 1)' \
				"$TMP/alert.json" 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}
if firing NcclwatchStragglerRank 60; then
	expect_true "straggler alert fires for rank 2, with Hostname, comm and severity to route it" python3 -c '
import json, sys
r = [a["metric"] for a in json.load(open(sys.argv[1]))["data"]["result"]]
sys.exit(0 if any(m.get("rank") == "2" and m.get("Hostname") and m.get("comm") and m.get("severity") == "warning" for m in r) else 1)' "$TMP/alert.json"
else
	RC=1; notok "straggler alert fires from the image's exporter" "$(cat "$TMP/alert.json" 2>/dev/null)" "$(tail -3 "$TMP/prom.log")"
fi
kill -TERM "$IEXP"
wait "$IEXP" 2>/dev/null
IEXP=
if firing NcclwatchExporterDown 60; then
	expect_true "exporter-down fires once it stops, with the node's Hostname" grep -q '"Hostname":"image-node"' "$TMP/alert.json"
else
	RC=1; notok "exporter-down fires once the exporter stops" "$(cat "$TMP/alert.json" 2>/dev/null)" "$(tail -3 "$TMP/prom.log")"
fi
