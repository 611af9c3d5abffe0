/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ntjson: a run written as nccl-tests' own -J JSON document (file version
 * 3, byte for byte as nccl-tests 2.19 writes it), and the NCCL version
 * code and local time that document carries.
 */
#include "model/ntjson.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/util.h"

void nw_nt_json_now(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	if (!len)
		return;
	buf[0] = '\0';
	if (localtime_r(&now, &tm))
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

int nw_nt_version_code(const char *version)
{
	int major, minor, patch;
	if (!version || sscanf(version, "%d.%d.%d", &major, &minor, &patch) != 3 || major < 0 || minor < 0 || patch < 0 ||
	    major > 99 || minor > 99 || patch > 99)
		return 0;
	/* NCCL_VERSION_CODE: major*1000+minor*100+patch before 2.9, major*10000+minor*100+patch since */
	if (major < 2 || (major == 2 && minor < 9))
		return major * 1000 + minor * 100 + patch;
	return major * 10000 + minor * 100 + patch;
}

/* A JSON string, escaped (quotes, backslashes, control bytes). */
static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* "key":"value" with a leading comma unless first. */
static void kv_str(FILE *f, const char *key, const char *v, int first)
{
	fprintf(f, "%s\"%s\":", first ? "" : ",", key);
	put_str(f, v);
}

/* A double as nccl-tests writes it: %lf, NaN as the string "nan". */
static void put_dbl(FILE *f, double v)
{
	if (isnan(v))
		fputs("\"nan\"", f);
	else
		fprintf(f, "%lf", v);
}

static void kv_dbl(FILE *f, const char *key, double v)
{
	fprintf(f, ",\"%s\":", key);
	put_dbl(f, v);
}

/* "config": the options, then the devices (one per rank) from the header's extra. */
static void put_config(FILE *f, const struct nw_run *run, const struct nw_nt_config *c)
{
	fprintf(f, ",\"config\":{\"nthreads\":%d,\"ngpus\":%d,\"minimum_bytes\":%llu,\"maximum_bytes\":%llu", c->nthreads,
	        c->ngpus, (unsigned long long)c->min_bytes, (unsigned long long)c->max_bytes);
	if (c->step_factor > 1)
		fprintf(f, ",\"step_factor\":%g", c->step_factor);
	else
		fprintf(f, ",\"step_bytes\":%llu", (unsigned long long)c->step_bytes);
	fprintf(f, ",\"warmup_iters\":%d,\"iterations\":%d,\"aggregated_iterations\":%d,\"validation\":%d,\"graph\":%d",
	        c->warmup, c->iters, c->agg_iters, c->validation, c->graph);
	kv_str(f, "blocking_collectives", c->blocking ? "true" : "false", 0);
	kv_str(f, "per_iter_timing", c->per_iter ? "true" : "false", 0);
	fprintf(f, ",\"per_iter_skip\":%d", c->per_iter_skip);
	kv_str(f, "parallel_init", c->parallel_init ? "true" : "false", 0);
	/* "2 x NVIDIA H200" -> "NVIDIA H200" */
	const char *name = run->h.gpus, *x = strstr(name, " x ");
	if (x && strspn(name, "0123456789") == (size_t)(x - name))
		name = x + 3;
	fputs(",\"devices\":[", f);
	const json_t *devs = run->h.extra ? json_object_get(run->h.extra, "devices") : NULL;
	size_t i;
	const json_t *d;
	json_array_foreach(devs, i, d) {
		const json_t *host = json_object_get(d, "host");
		/* group: NCCL_TESTS_SPLIT's color (absent, so 0, without a split) */
		fprintf(f, "%s{\"rank\":%d,\"group\":%d,\"pid\":%d", i ? "," : "",
		        (int)json_integer_value(json_object_get(d, "rank")), (int)json_integer_value(json_object_get(d, "group")),
		        (int)json_integer_value(json_object_get(d, "pid")));
		kv_str(f, "hostname", json_is_string(host) ? json_string_value(host) : "", 0);
		fprintf(f, ",\"device\":%d", (int)json_integer_value(json_object_get(d, "device")));
		/* the PCI address and model of the device line (runs recorded before they were gathered: "" and the run's model) */
		const char *pci = json_string_value(json_object_get(d, "pci")), *model = json_string_value(json_object_get(d, "name"));
		kv_str(f, "device_hex", pci && strcmp(pci, "-") ? pci : "", 0);
		kv_str(f, "device_info", model ? model : name, 0);
		fputc('}', f);
	}
	fputs("]}", f);
}

/* "out_of_place":{...} (or "in_place"), then its "_per_iter" object when the row has per-iteration times. */
static void put_body(FILE *f, const struct nw_row *r, const char *key)
{
	fprintf(f, ",\"%s\":", key);
	if (!r) {
		fputs("null", f);
		return;
	}
	fputs("{\"time\":", f);
	put_dbl(f, r->time_us);
	kv_dbl(f, "alg_bw", r->algbw_gbs);
	kv_dbl(f, "bus_bw", r->busbw_gbs);
	fputs(",\"nwrong\":", f);
	if (r->wrong >= 0)
		put_dbl(f, (double)r->wrong);
	else
		fputs("null", f);
	fputc('}', f);
	struct nw_iter_stats st;
	if (nw_row_iter_stats(r, &st))
		return;
	fprintf(f, ",\"%s_per_iter\":{\"skipped_iterations\":%d", key, r->iter_skip);
	kv_dbl(f, "min_us", st.min);
	kv_dbl(f, "max_us", st.max);
	kv_dbl(f, "avg_us", st.avg);
	kv_dbl(f, "p50_us", st.p50);
	kv_dbl(f, "p95_us", st.p95);
	kv_dbl(f, "p99_us", st.p99);
	kv_dbl(f, "stdev_us", st.stdev);
	kv_dbl(f, "cv_pct", st.cv_pct);
	fputs(",\"times_us\":[", f);
	for (int i = 0; i < r->niter; i++) {
		if (i)
			fputc(',', f);
		put_dbl(f, r->iter_us[i]);
	}
	fputs("]}", f);
}

/* Same result line in nccl-tests' table: an in-place row that goes with an out-of-place one. */
static int twins(const struct nw_row *a, const struct nw_row *b)
{
	return !a->inplace && b->inplace && a->size_bytes == b->size_bytes && a->root == b->root &&
	       !strcmp(a->op, b->op) && !strcmp(a->dtype, b->dtype) && !strcmp(a->redop, b->redop);
}

/* "results":[...]; fills the wrong-element total and the mean busbw of op's rows. */
static void put_results(FILE *f, const struct nw_run *run, const char *op, const struct nw_nt_config *c,
                        int64_t *wrong, double *avg)
{
	double sum = 0;
	int n = 0, first = 1;
	*wrong = 0;
	fputs(",\"results\":[", f);
	for (size_t k = 0; k < run->nrows; k++) {
		const struct nw_row *r = &run->rows[k], *oop = NULL, *ip = NULL;
		if (strcmp(r->op, op) != 0)
			continue;
		if (r->inplace) {
			ip = r;
		} else {
			oop = r;
			if (k + 1 < run->nrows && twins(r, &run->rows[k + 1]))
				ip = &run->rows[++k];
		}
		for (int j = 0; j < 2; j++) {
			const struct nw_row *x = j ? ip : oop;
			if (x) {
				sum += x->busbw_gbs;
				n++;
				*wrong += x->wrong > 0 ? x->wrong : 0;
			}
		}
		char root[16];
		snprintf(root, sizeof(root), "%6i", r->root);
		fprintf(f, "%s{\"size\":%llu,\"count\":%llu", first ? "" : ",", (unsigned long long)r->size_bytes,
		        (unsigned long long)r->count);
		kv_str(f, "type", r->dtype, 0);
		kv_str(f, "redop", r->redop, 0);
		kv_str(f, "root", root, 0);
		put_body(f, oop, "out_of_place");
		if (ip)
			put_body(f, ip, "in_place");
		fprintf(f, ",\"actual_iterations\":%d", c->iters);
		kv_str(f, "experiment_name", "", 0);
		fputc('}', f);
		first = 0;
	}
	fputc(']', f);
	*avg = n ? sum / n : 0;
}

int nw_nt_write_json(FILE *f, const struct nw_run *run, const char *op, const struct nw_nt_config *cfg)
{
	fprintf(f, "{\"version\":%d", NW_NT_JSON_VERSION);
	kv_str(f, "start_time", cfg->start_time, 0);
	fputs(",\"args\":[", f);
	if (cfg->prog)
		put_str(f, cfg->prog);
	for (int i = 0; i < cfg->argc; i++) {
		if (i || cfg->prog)
			fputc(',', f);
		put_str(f, cfg->argv[i]);
	}
	fputs("],\"env\":[", f);
	for (char **e = cfg->envp; e && *e; e++) {
		if (e != cfg->envp)
			fputc(',', f);
		put_str(f, *e);
	}
	fprintf(f, "],\"nccl_version\":%d", nw_nt_version_code(run->h.nccl_version));
	put_config(f, run, cfg);
	int64_t wrong;
	double avg;
	put_results(f, run, op, cfg, &wrong, &avg);
	fprintf(f, ",\"out_of_bounds\":{\"count\":%d", (int)wrong);
	kv_str(f, "okay", wrong ? "false" : "true", 0);
	fputs("},\"average_bus_bandwidth\":{\"bandwidth\":", f);
	put_dbl(f, avg);
	kv_str(f, "okay", "unchecked", 0);
	fputs("},\"errors\":[\"\"]", f);
	char end[32];
	nw_nt_json_now(end, sizeof(end));
	kv_str(f, "end_time", end, 0);
	fputc('}', f); /* no newline, as nccl-tests */
	return ferror(f) ? -1 : 0;
}
