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
	'for p in libjansson4 libncursesw6 libsqlite3-0; do grep -q "==== $p" "$1" || exit 1; done' sh "$R/usr/share/doc/ncclwatch/THIRD-PARTY-NOTICES"
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
