# SPDX-License-Identifier: Apache-2.0
# The ncclwatch image: the portable binary, plugin and interposer (glibc 2.31, nothing
# else at load time), their glibc, a non-root user, no shell.
#   docker build -t ncclwatch:0.1.0 .
# The exporter is the default command (docs/deploy.md); any other command
# runs as `docker run ncclwatch:0.1.0 <command> ...`.
# make image-root builds the same root file system as a directory (tests run
# it under chroot).

FROM debian:11 AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc make libc6-dev libjansson-dev libsqlite3-dev \
      libncurses-dev binutils \
 && rm -rf /var/lib/apt/lists/*
COPY Makefile VERSION LICENSE NOTICE /src/
COPY src /src/src
COPY tests/helpers /src/tests/helpers
COPY packaging /src/packaging
COPY scripts/image-root scripts/build-mhd /src/scripts/
# libmicrohttpd (the exporter's HTTP server) as a static library without
# TLS, from Debian's source package, as make portable builds it.
RUN /src/scripts/build-mhd /opt/libmicrohttpd && rm -rf /var/lib/apt/lists/*
# As make portable builds (scripts/portable): static Jansson, SQLite,
# ncurses and libmicrohttpd; MPI, libpq and the rest opened at run time; hardened.
RUN CFLAGS="-O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong" LDFLAGS="-Wl,-z,relro -Wl,-z,now" \
    make -C /src -j"$(nproc)" BUILD=out MPI=dl PQ=dl STATIC=1 MHD_STATIC=/opt/libmicrohttpd all \
 && strip --strip-unneeded --remove-section=.comment /src/out/ncclwatch /src/out/libnccl-profiler-ncclwatch.so \
      /src/out/libncclwatch-interpose.so \
 && /src/scripts/image-root /src/out / /rootfs

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
EXPOSE 9850
ENTRYPOINT ["/usr/bin/ncclwatch"]
CMD ["exporter", "--listen", "0.0.0.0:9850"]
