#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a host install gets (make install, the Debian package): the binary,
# the plugin, man pages, completions, docs, the license and notices, and
# the exporter's systemd unit with its /etc/default file; the unit checked
# by systemd itself (systemd-analyze verify, without starting anything).
. "$(dirname "$0")/lib.sh"
cd "$SRCDIR" || exit 1

expect_true "LICENSE is the Apache License 2.0" grep -q "Apache License" LICENSE
expect_true "NOTICE names what the portable binary links in" grep -q "Jansson" NOTICE
expect_true "the package's copyright is DEP-5 and licensed" sh -c \
	'head -1 packaging/copyright | grep -q copyright-format && ! grep -q UNSPECIFIED packaging/copyright && grep -q "^License: Apache-2.0" packaging/copyright'

D=$TMP/root
run make -s install INSTALL_FROM="$BUILD" DESTDIR="$D" PREFIX=/usr/local
expect_rc "make install into a DESTDIR" 0
for f in usr/local/bin/ncclwatch usr/local/lib/libnccl-profiler-ncclwatch.so usr/local/lib/libncclwatch-interpose.so \
	usr/local/share/man/man1/ncclwatch-exporter.1.gz \
	usr/local/share/bash-completion/completions/ncclwatch usr/local/lib/systemd/system/ncclwatch-exporter.service \
	etc/default/ncclwatch usr/local/share/doc/ncclwatch/README.md usr/local/share/doc/ncclwatch/NOTICE \
	usr/local/share/doc/ncclwatch/docs/deploy.md; do
	expect_true "installed: $f" test -s "$D/$f"
done
expect_true "the installed unit runs the installed binary" \
	grep -q "^ExecStart=/usr/local/bin/ncclwatch exporter " "$D/usr/local/lib/systemd/system/ncclwatch-exporter.service"
# a second install keeps the administrator's /etc/default/ncclwatch
echo 'NCCLWATCH_EXPORTER_ARGS="--listen 10.0.0.1:9850"' >"$D/etc/default/ncclwatch"
make -s install INSTALL_FROM="$BUILD" DESTDIR="$D" PREFIX=/usr/local >/dev/null 2>&1
expect_true "reinstalling keeps /etc/default/ncclwatch" grep -q 10.0.0.1 "$D/etc/default/ncclwatch"

if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s|^ExecStart=/usr/bin/ncclwatch|ExecStart=$NW|; s|^EnvironmentFile=.*|EnvironmentFile=-$SRCDIR/packaging/ncclwatch.default|" \
		packaging/ncclwatch-exporter.service >"$TMP/ncclwatch-exporter.service"
	run systemd-analyze verify --man=no "$TMP/ncclwatch-exporter.service"
	expect_rc "systemd-analyze verify: the unit is valid" 0
	expect_no_out "systemd-analyze verify: no warning" '.'
	run systemd-analyze security --offline=yes "$TMP/ncclwatch-exporter.service"
	expect_true "systemd-analyze security: exposure rated OK or better" grep -Eq 'Overall exposure level .*(OK|SAFE)' "$OUT"
else
	skip "systemd-analyze verify: the unit is valid" "systemd-analyze not installed (apt-get install systemd)"
fi
# what the default file sets is what the exporter accepts
. packaging/ncclwatch.default
mkdir -p "$TMP/stats"
# shellcheck disable=SC2086
run timeout 5 "$NW" exporter $NCCLWATCH_EXPORTER_ARGS --once --dir "$TMP/stats"
expect_rc "the default file's options are the exporter's" 0
