/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: messages and error buffers, allocation that aborts on failure,
 * bounded string copies, parsing of numbers, sizes, percentages and
 * durations, clocks and time stamps, small file and host facts, and a
 * pool of threads for one parallel loop.
 */
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* One message in one write, so that messages of several ranks sharing a terminal or log do not interleave. */
static void vreport(const char *kind, const char *fmt, va_list ap)
{
	char buf[4096];
	int head = snprintf(buf, sizeof(buf), "ncclwatch: %s: ", kind);
	int len = vsnprintf(buf + head, sizeof(buf) - (size_t)head - 1, fmt, ap);
	if (len < 0)
		len = 0;
	size_t n = (size_t)head + ((size_t)len < sizeof(buf) - (size_t)head - 1 ? (size_t)len : sizeof(buf) - (size_t)head - 2);
	buf[n++] = '\n';
	fflush(stdout);
	fwrite(buf, 1, n, stderr);
}

int nw_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
	return -1;
}

void nw_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("warning", fmt, ap);
	va_end(ap);
}

void nw_bug(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "ncclwatch: BUG at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

int nw_seterr(char *err, size_t len, const char *fmt, ...)
{
	if (err && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void *oom(size_t n)
{
	fprintf(stderr, "ncclwatch: error: out of memory (asked for %zu bytes)\n", n);
	exit(70);
}

void *nw_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	return p ? p : oom(n);
}

void *nw_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	return p ? p : oom(n * size);
}

void *nw_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	return q ? q : oom(n);
}

char *nw_strdup(const char *s)
{
	char *p = strdup(s ? s : "");
	return p ? p : oom(strlen(s));
}

char *nw_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	char *buf = nw_malloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(buf, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return buf;
}

size_t nw_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);
	if (size) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

int nw_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	if (!s || !*s)
		return nw_seterr(err, errlen, "empty size: give bytes, optionally with K, M or G (1024-based)");
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return nw_seterr(err, errlen, "bad size '%s': give bytes, optionally with K, M or G (1024-based)", s);
	double mult = 1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mult = 1024.0; break;
		case 'm': case 'M': mult = 1024.0 * 1024; break;
		case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
		case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
		default:
			return nw_seterr(err, errlen, "bad size '%s': unknown suffix '%c' (use K, M or G)", s, *end);
		}
		end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return nw_seterr(err, errlen, "bad size '%s': trailing text '%s'", s, end);
	}
	double bytes = v * mult;
	if (bytes >= 18446744073709551615.0)
		return nw_seterr(err, errlen, "size '%s' is too large", s);
	*out = (uint64_t)bytes;
	return 0;
}

int nw_parse_long(const char *s, long min, long max, long *out, const char *what,
                  char *err, size_t errlen)
{
	if (!s || !*s)
		return nw_seterr(err, errlen, "%s: empty value, expected a whole number", what);
	errno = 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno)
		return nw_seterr(err, errlen, "%s: '%s' is not a whole number", what, s);
	if (v < min || v > max)
		return nw_seterr(err, errlen, "%s: %ld is out of range [%ld, %ld]", what, v, min, max);
	*out = v;
	return 0;
}

int nw_parse_double(const char *s, double min, double max, double *out, const char *what,
                    char *err, size_t errlen)
{
	if (!s || !*s)
		return nw_seterr(err, errlen, "%s: empty value, expected a number", what);
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v))
		return nw_seterr(err, errlen, "%s: '%s' is not a number", what, s);
	if (v < min || v > max)
		return nw_seterr(err, errlen, "%s: %g is out of range [%g, %g]", what, v, min, max);
	*out = v;
	return 0;
}

int nw_parse_percent(const char *s, double *out, const char *what, char *err, size_t errlen)
{
	char buf[64];
	if (nw_strlcpy(buf, s ? s : "", sizeof(buf)) >= sizeof(buf))
		return nw_seterr(err, errlen, "%s: '%s' is too long, give a percentage such as 5", what, s);
	size_t n = strlen(buf);
	if (n && buf[n - 1] == '%')
		buf[n - 1] = '\0';
	double v;
	if (nw_parse_double(buf, 0, 1000, &v, what, err, errlen))
		return -1;
	*out = v / 100;
	return 0;
}

int nw_parse_duration(const char *s, double *out, char *err, size_t errlen)
{
	if (!s || !*s)
		return nw_seterr(err, errlen, "empty duration: give seconds or a number with s, m or h");
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return nw_seterr(err, errlen, "bad duration '%s': give seconds or a number with ms, s, m or h", s);
	double mult = 1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mult = 1;
	else if (!strcmp(end, "ms"))
		mult = 1e-3;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mult = 60;
	else if (!strcmp(end, "h"))
		mult = 3600;
	else
		return nw_seterr(err, errlen, "bad duration '%s': unknown unit '%s' (use ms, s, m or h)", s, end);
	*out = v * mult;
	return 0;
}

void nw_format_size(uint64_t b, char *buf, size_t len)
{
	static const char suf[] = "KMGT";
	int i = -1;
	while (b && b % 1024 == 0 && i < 3) {
		b /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)b);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)b, suf[i]);
}

double nw_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void nw_utc_iso(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void nw_hostname(char *buf, size_t len)
{
	if (gethostname(buf, len) != 0 || !buf[0])
		nw_strlcpy(buf, "unknown", len);
	buf[len - 1] = '\0';
}

int nw_finish_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ncclwatch: error: writing standard output failed: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

char *nw_read_file(const char *path, size_t max, size_t *len_out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = nw_malloc(cap);
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= max) {
				break;
			}
			cap *= 2;
			buf = nw_realloc(buf, cap);
		}
		size_t want = cap - len - 1;
		size_t n = fread(buf + len, 1, want, f);
		len += n;
		if (n < want)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	return buf;
}

int nw_ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

struct par {
	void (*fn)(void *arg, int i, int n);
	void *arg;
	int i, n;
};

static void *par_main(void *v)
{
	struct par *p = v;
	p->fn(p->arg, p->i, p->n);
	return NULL;
}

void nw_parallel(int nthreads, void (*fn)(void *arg, int i, int n), void *arg)
{
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > NW_PARALLEL_MAX)
		nthreads = NW_PARALLEL_MAX;
	pthread_t tid[NW_PARALLEL_MAX];
	struct par p[NW_PARALLEL_MAX];
	int started[NW_PARALLEL_MAX] = { 0 };
	for (int i = 1; i < nthreads; i++) {
		p[i] = (struct par){ fn, arg, i, nthreads };
		started[i] = pthread_create(&tid[i], NULL, par_main, &p[i]) == 0;
		if (!started[i])
			fn(arg, i, nthreads);
	}
	fn(arg, 0, nthreads);
	for (int i = 1; i < nthreads; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
}

void nw_path_dir(const char *path, char *out, size_t outlen)
{
	nw_strlcpy(out, path, outlen);
	char *slash = strrchr(out, '/');
	if (!slash)
		nw_strlcpy(out, ".", outlen);
	else
		slash[slash == out] = '\0';
}
