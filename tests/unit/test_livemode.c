/* SPDX-License-Identifier: Apache-2.0 */
/*
 * livemode: NCCL version -> profiler interface, the decision between the
 * plugin, the interposer and nothing on recorded facts, the libraries
 * found relative to the binary, and the variable each mode sets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "probe/livemode.h"

static void versions(void **state)
{
	(void)state;
	assert_int_equal(nw_live_version_code("2.28.9"), 22809);
	assert_int_equal(nw_live_version_code("2.18.3"), 21803);
	assert_int_equal(nw_live_version_code("2.30"), 23000);
	assert_int_equal(nw_live_version_code(""), -1);
	assert_int_equal(nw_live_version_code("version"), -1);
	assert_int_equal(nw_live_version_code("2.300.1"), -1);
	/* the table of docs/run.md: 2.23 v1, 2.24-2.25 v2, 2.26 v3, 2.27 v4, 2.28 v5, 2.29+ v6 */
	static const struct {
		const char *v;
		int abi;
	} t[] = { { "2.17.1", 0 }, { "2.22.3", 0 }, { "2.23.4", 1 }, { "2.24.3", 2 }, { "2.25.1", 2 }, { "2.26.2", 3 },
		  { "2.27.7", 4 }, { "2.28.9", 5 }, { "2.29.1", 6 }, { "2.30.0", 6 }, { "3.0.0", 6 } };
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(nw_live_abi(nw_live_version_code(t[i].v)), t[i].abi);
}

static void facts(struct nw_live_facts *f, const char *version, unsigned abis, int interpose)
{
	memset(f, 0, sizeof(*f));
	f->nccl_found = 1;
	strcpy(f->nccl_path, "/venv/site-packages/nvidia/nccl/lib/libnccl.so.2");
	strcpy(f->nccl_how, "pytorch");
	strcpy(f->nccl_version, version);
	strcpy(f->plugin.looked, "/opt/nw/bin, /usr/lib");
	strcpy(f->interpose.looked, "/opt/nw/bin, /usr/lib");
	if (abis) {
		f->plugin.found = 1;
		strcpy(f->plugin.path, "/opt/nw/bin/libnccl-profiler-ncclwatch.so");
		f->plugin.abis = abis;
	}
	if (interpose) {
		f->interpose.found = 1;
		strcpy(f->interpose.path, "/opt/nw/bin/libncclwatch-interpose.so");
	}
}

#define ALL_ABIS (0x7eu) /* v1 to v6 */

static void decide(void **state)
{
	(void)state;
	struct nw_live_facts f;
	struct nw_live l;
	facts(&f, "2.28.9", ALL_ABIS, 1);
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_PLUGIN);
	assert_int_equal(l.abi, 5);
	assert_string_equal(l.file, "/opt/nw/bin/libnccl-profiler-ncclwatch.so");
	assert_non_null(strstr(l.why, "NCCL 2.28.9 (/venv/site-packages/nvidia/nccl/lib/libnccl.so.2, chosen by pytorch) has profiler interface v5"));
	/* 2.21: no profiler interface, the interposer */
	facts(&f, "2.21.5", ALL_ABIS, 1);
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_INTERPOSE);
	assert_string_equal(l.file, "/opt/nw/bin/libncclwatch-interpose.so");
	assert_non_null(strstr(l.why, "has no profiler interface"));
	/* ... without it: none, and where it was looked for */
	facts(&f, "2.21.5", ALL_ABIS, 0);
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_NONE);
	assert_string_equal(l.file, "");
	assert_non_null(strstr(l.why, "libncclwatch-interpose.so is not installed (looked in /opt/nw/bin, /usr/lib)"));
	/* 2.23 with a plugin that has only v4-v6: the interposer serves it */
	facts(&f, "2.23.4", 0x70u, 1);
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_INTERPOSE);
	assert_non_null(strstr(l.why, "exports no ncclProfiler_v1 (only v4, v5, v6"));
	/* 2.26 with no plugin installed and no interposer */
	facts(&f, "2.26.2", 0, 0);
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_NONE);
	assert_non_null(strstr(l.why, "libnccl-profiler-ncclwatch.so is not installed"));
	/* older than 2.18: nothing, whatever is installed */
	facts(&f, "2.17.1", ALL_ABIS, 1);
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_NONE);
	assert_non_null(strstr(l.why, "older than 2.18"));
	/* an NCCL not found here: the plugin anyway (an older NCCL ignores it) */
	facts(&f, "", ALL_ABIS, 1);
	f.nccl_found = 0;
	strcpy(f.nccl_err, "no NCCL found");
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_PLUGIN);
	assert_int_equal(l.abi, 0);
	assert_non_null(strstr(l.why, "was not found from here (no NCCL found)"));
	/* a plugin that cannot be loaded */
	facts(&f, "2.28.9", 0, 0);
	f.plugin.found = 1;
	strcpy(f.plugin.path, "/x/libnccl-profiler-ncclwatch.so");
	strcpy(f.plugin.why, "wrong ELF class");
	nw_live_decide(&f, &l);
	assert_int_equal(l.mode, NW_LIVE_NONE);
	assert_non_null(strstr(l.why, "cannot be loaded (wrong ELF class)"));
}

static void settings(void **state)
{
	(void)state;
	struct nw_live l = { .mode = NW_LIVE_INTERPOSE };
	strcpy(l.file, "/lib/libncclwatch-interpose.so");
	char name[64], value[512];
	nw_live_setting(&l, NULL, name, sizeof(name), value, sizeof(value));
	assert_string_equal(name, "LD_PRELOAD");
	assert_string_equal(value, "/lib/libncclwatch-interpose.so");
	nw_live_setting(&l, "/lib/libjemalloc.so", name, sizeof(name), value, sizeof(value));
	assert_string_equal(value, "/lib/libncclwatch-interpose.so:/lib/libjemalloc.so");
	nw_live_setting(&l, "/a.so:/lib/libncclwatch-interpose.so", name, sizeof(name), value, sizeof(value));
	assert_string_equal(value, "/a.so:/lib/libncclwatch-interpose.so");
	l.mode = NW_LIVE_PLUGIN;
	strcpy(l.file, "/lib/libnccl-profiler-ncclwatch.so");
	nw_live_setting(&l, "/a.so", name, sizeof(name), value, sizeof(value));
	assert_string_equal(name, "NCCL_PROFILER_PLUGIN");
	assert_string_equal(value, "/lib/libnccl-profiler-ncclwatch.so");
	l.mode = NW_LIVE_NONE;
	nw_live_setting(&l, "/a.so", name, sizeof(name), value, sizeof(value));
	assert_string_equal(name, "");
}

/* The interposer installed as make install lays it out: bin/ncclwatch, lib/libncclwatch-interpose.so. */
static void find_relative(void **state)
{
	(void)state;
	char dir[] = "/tmp/nwlive.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char bin[128], lib[128], exe[160], so[200];
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	snprintf(exe, sizeof(exe), "%s/ncclwatch", bin);
	snprintf(so, sizeof(so), "%s/libncclwatch-interpose.so", lib);
	assert_int_equal(mkdir(bin, 0700), 0);
	assert_int_equal(mkdir(lib, 0700), 0);
	FILE *f = fopen(exe, "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(so, "w");
	assert_non_null(f);
	fclose(f);
	struct nw_live_facts lf;
	memset(&lf, 0, sizeof(lf));
	nw_live_find_libs(exe, &lf);
	assert_int_equal(lf.interpose.found, 1);
	assert_string_equal(lf.interpose.path, so);
	assert_non_null(strstr(lf.interpose.looked, bin));
	unlink(so);
	unlink(exe);
	rmdir(lib);
	rmdir(bin);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(versions),
		cmocka_unit_test(decide),
		cmocka_unit_test(settings),
		cmocka_unit_test(find_relative),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
