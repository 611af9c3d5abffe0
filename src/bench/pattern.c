/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pattern: each rank's input values and the output each rank must see,
 * per collective, type and reduction op; conversion to and from every data
 * type (half, bfloat16 and fp8 included); filling a buffer and counting
 * the wrong elements of one.
 */
#include "bench/pattern.h"

#include "util/util.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Largest integer magnitude exactly representable, per type (0: wraps). */
static double exact_limit(int dtype)
{
	switch (dtype) {
	case NW_HALF: return 2048;
	case NW_BFLOAT16: return 256;
	case NW_FP8E4M3: return 16;
	case NW_FP8E5M2: return 8;
	case NW_FLOAT: return 16777216.0;
	case NW_DOUBLE: return 9007199254740992.0;
	default: return 0;
	}
}

static int is_unsigned(int t)
{
	return t == NW_UINT8 || t == NW_UINT32 || t == NW_UINT64;
}

static int is_float(int t)
{
	return t == NW_HALF || t == NW_FLOAT || t == NW_DOUBLE || t == NW_BFLOAT16 ||
	       t == NW_FP8E4M3 || t == NW_FP8E5M2;
}

/* The sum of mulsum's scalars over n ranks: 1 for each even rank, 2 for each odd one. */
static int scalar_sum(int n)
{
	return n + n / 2;
}

/* Amplitude of values so that sums over every rank (mulsum's: each times 1 or 2) stay exact. */
static int64_t amplitude(const struct nw_pattern *p)
{
	double lim = exact_limit(p->dtype);
	int64_t a = 5;
	int n = p->nranks > 0 ? p->nranks : 1;
	if (p->redop == NW_MULSUM && nw_coll_get(p->op)->has_redop)
		n = scalar_sum(n);
	if (lim > 0) {
		int64_t m = (int64_t)(lim / n);
		if (m < a)
			a = m;
	}
	return a < 1 ? 1 : a;
}

#define PRIME 13u
_Static_assert(PRIME == NW_DCHECK_PERIOD, "the device checks assume the pattern's period");

int64_t nw_pattern_value(const struct nw_pattern *p, int r, uint64_t i)
{
	uint64_t h = (i + (uint64_t)r * 7u + p->seed) % PRIME;
	if (p->redop == NW_PROD && nw_coll_get(p->op)->has_redop) {
		/* at most one rank in thirteen holds a 2 at a given i: products stay tiny */
		return ((i + (uint64_t)r * 3u + p->seed) % PRIME) == 0 ? 2 : 1;
	}
	int64_t a = amplitude(p);
	int64_t span = 2 * a + 1;
	int64_t v = (int64_t)(h % (uint64_t)span);
	return is_unsigned(p->dtype) ? v : v - a;
}

uint64_t nw_pattern_input_count(const struct nw_pattern *p, int r)
{
	switch (p->op) {
	case NW_REDUCE_SCATTER:
	case NW_ALLTOALL:
		return p->count * (uint64_t)p->nranks;
	case NW_SCATTER:
		return r == p->root ? p->count * (uint64_t)p->nranks : 0;
	case NW_ALLTOALLV:
		return nw_alltoallv_total(p->count, nw_dtype_size(p->dtype), p->nranks);
	default:
		return p->count;
	}
}

uint64_t nw_pattern_output_count(const struct nw_pattern *p, int r)
{
	switch (p->op) {
	case NW_ALL_GATHER:
	case NW_ALLTOALL:
	case NW_HYPERCUBE:
		return p->count * (uint64_t)p->nranks;
	case NW_ALLTOALLV:
		return nw_alltoallv_total(p->count, nw_dtype_size(p->dtype), p->nranks);
	case NW_GATHER:
		return r == p->root ? p->count * (uint64_t)p->nranks : 0;
	case NW_REDUCE:
		return r == p->root ? p->count : 0;
	default:
		return p->count;
	}
}

int nw_pattern_checks_rank(const struct nw_pattern *p, int r)
{
	if (p->op == NW_REDUCE || p->op == NW_GATHER)
		return r == p->root;
	if (p->pair)
		return r == p->pair_a || r == p->pair_b;
	return 1;
}

/* Wrap an integer to the width of an integer type (two's complement). */
static double wrap_int(int t, int64_t v)
{
	switch (t) {
	case NW_INT8: return (double)(int8_t)v;
	case NW_UINT8: return (double)(uint8_t)v;
	case NW_INT32: return (double)(int32_t)v;
	case NW_UINT32: return (double)(uint32_t)v;
	case NW_UINT64: return (double)(uint64_t)v;
	default: return (double)v;
	}
}

/*
 * The reduction over every rank of v(r, i); mulsum's is the sum of
 * scalar(r) v(r, i), exact in every type (the amplitude keeps it so).
 */
static double reduced(const struct nw_pattern *p, uint64_t i)
{
	int mul = p->redop == NW_MULSUM;
	int64_t acc = nw_pattern_value(p, 0, i) * (mul ? nw_mulsum_scalar(0) : 1);
	for (int r = 1; r < p->nranks; r++) {
		int64_t v = nw_pattern_value(p, r, i);
		switch (p->redop) {
		case NW_PROD: acc *= v; break;
		case NW_MAX: acc = v > acc ? v : acc; break;
		case NW_MIN: acc = v < acc ? v : acc; break;
		case NW_MULSUM: acc += v * nw_mulsum_scalar(r); break;
		default: acc += v; break;
		}
	}
	if (p->redop == NW_AVG) {
		if (is_float(p->dtype))
			return (double)acc / p->nranks;
		/* integer avg: the wrapped sum divided, truncating */
		double s = wrap_int(p->dtype, acc);
		return trunc(s / p->nranks);
	}
	return is_float(p->dtype) ? (double)acc : wrap_int(p->dtype, acc);
}

/*
 * alltoallv: rank r's output element j comes from the segment of source
 * *src, which starts at output element *start and holds *len elements.
 */
static void v_segment(const struct nw_pattern *p, int r, uint64_t j, int *src, uint64_t *start, uint64_t *len)
{
	size_t es = nw_dtype_size(p->dtype);
	uint64_t off = 0;
	int s = 0;
	for (; s < p->nranks; s++) {
		uint64_t k = nw_alltoallv_count(p->count, es, p->nranks, s, r);
		if (j < off + k) {
			*len = k;
			break;
		}
		off += k;
	}
	if (s == p->nranks)
		*len = 1; /* past every segment: nothing is defined there */
	*src = s;
	*start = off;
}

/* alltoallv: what rank r must hold at output element j (the sender's element at its send offset for r). */
static double expected_v(const struct nw_pattern *p, int r, uint64_t j)
{
	int src;
	uint64_t start, len;
	v_segment(p, r, j, &src, &start, &len);
	if (src >= p->nranks)
		return 0;
	uint64_t from = nw_alltoallv_before(p->count, nw_dtype_size(p->dtype), p->nranks, src, r);
	return (double)nw_pattern_value(p, src, from + (j - start));
}

/* What rank r must hold at output element j. */
static double expected(const struct nw_pattern *p, int r, uint64_t j)
{
	uint64_t c = p->count ? p->count : 1;
	int n = p->nranks;
	switch (p->op) {
	case NW_ALL_REDUCE:
	case NW_REDUCE:
		return reduced(p, j);
	case NW_REDUCE_SCATTER:
		return reduced(p, (uint64_t)r * c + j);
	case NW_ALL_GATHER:
	case NW_GATHER:
	case NW_HYPERCUBE:
		return (double)nw_pattern_value(p, (int)(j / c), j % c);
	case NW_ALLTOALLV:
		return expected_v(p, r, j);
	case NW_BROADCAST:
		return (double)nw_pattern_value(p, p->root, j);
	case NW_ALLTOALL:
		return (double)nw_pattern_value(p, (int)(j / c), (uint64_t)r * c + j % c);
	case NW_SENDRECV:
		if (p->pair)
			return (double)nw_pattern_value(p, r == p->pair_a ? p->pair_b : p->pair_a, j);
		return (double)nw_pattern_value(p, (r - 1 + n) % n, j);
	case NW_SCATTER:
		return (double)nw_pattern_value(p, p->root, (uint64_t)r * c + j);
	default:
		return 0;
	}
}

/* ---- element encodings ---- */

static uint16_t f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	uint32_t man = x & 0x7fffffu;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t half = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
	uint32_t rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;
	return (uint16_t)h;
}

static float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
	uint32_t x;
	if (exp == 0) {
		if (!man) {
			x = sign;
		} else {
			int e = -1;
			do {
				man <<= 1;
				e++;
			} while (!(man & 0x400u));
			x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
		}
	} else if (exp == 31) {
		x = sign | 0x7f800000u | (man << 13);
	} else {
		x = sign | ((exp - 15 + 127) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	uint32_t lsb = (x >> 16) & 1u;
	x += 0x7fffu + lsb;
	return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

/*
 * fp8: e4m3 (bias 7, no infinities, S.1111.111 is NaN, max 448) and e5m2
 * (bias 15, IEEE-like). Encoded by searching the nearest representable
 * value: exact for the small integers patterns use, and round-to-nearest
 * for anything else.
 */
static double fp8_decode(uint8_t b, int e4m3)
{
	int sign = b >> 7;
	int ebits = e4m3 ? 4 : 5, mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
	int exp = (b >> mbits) & ((1 << ebits) - 1);
	int man = b & ((1 << mbits) - 1);
	double v;
	if (e4m3 && exp == 15 && man == 7)
		return NAN;
	if (!e4m3 && exp == 31)
		return man ? NAN : (sign ? -INFINITY : INFINITY);
	if (exp == 0)
		v = ldexp((double)man, 1 - bias - mbits);
	else
		v = ldexp((double)((1 << mbits) | man), exp - bias - mbits);
	return sign ? -v : v;
}

static uint8_t fp8_encode(double v, int e4m3)
{
	if (isnan(v))
		return e4m3 ? 0x7f : 0x7e;
	uint8_t sign = v < 0 ? 0x80 : 0;
	double a = fabs(v);
	uint8_t best = 0;
	double bestd = INFINITY;
	for (int b = 0; b < 128; b++) {
		double d = fp8_decode((uint8_t)b, e4m3);
		if (isnan(d) || isinf(d))
			continue;
		double diff = fabs(d - a);
		if (diff < bestd || (diff == bestd && !(b & 1))) {
			bestd = diff;
			best = (uint8_t)b;
		}
	}
	return (uint8_t)(sign | best);
}

void nw_dtype_store(enum nw_dtype t, void *dst, double v)
{
	switch (t) {
	case NW_INT8: { int8_t x = (int8_t)(int64_t)v; memcpy(dst, &x, 1); break; }
	case NW_UINT8: { uint8_t x = (uint8_t)(int64_t)v; memcpy(dst, &x, 1); break; }
	case NW_INT32: { int32_t x = (int32_t)(int64_t)v; memcpy(dst, &x, 4); break; }
	case NW_UINT32: { uint32_t x = (uint32_t)(int64_t)v; memcpy(dst, &x, 4); break; }
	case NW_INT64: { int64_t x = (int64_t)v; memcpy(dst, &x, 8); break; }
	case NW_UINT64: { uint64_t x = (uint64_t)(int64_t)v; memcpy(dst, &x, 8); break; }
	case NW_HALF: { uint16_t x = f32_to_f16((float)v); memcpy(dst, &x, 2); break; }
	case NW_FLOAT: { float x = (float)v; memcpy(dst, &x, 4); break; }
	case NW_DOUBLE: memcpy(dst, &v, 8); break;
	case NW_BFLOAT16: { uint16_t x = f32_to_bf16((float)v); memcpy(dst, &x, 2); break; }
	case NW_FP8E4M3: { uint8_t x = fp8_encode(v, 1); memcpy(dst, &x, 1); break; }
	case NW_FP8E5M2: { uint8_t x = fp8_encode(v, 0); memcpy(dst, &x, 1); break; }
	default: break;
	}
}

double nw_dtype_load(enum nw_dtype t, const void *src)
{
	switch (t) {
	case NW_INT8: { int8_t x; memcpy(&x, src, 1); return x; }
	case NW_UINT8: { uint8_t x; memcpy(&x, src, 1); return x; }
	case NW_INT32: { int32_t x; memcpy(&x, src, 4); return x; }
	case NW_UINT32: { uint32_t x; memcpy(&x, src, 4); return x; }
	case NW_INT64: { int64_t x; memcpy(&x, src, 8); return (double)x; }
	case NW_UINT64: { uint64_t x; memcpy(&x, src, 8); return (double)x; }
	case NW_HALF: { uint16_t x; memcpy(&x, src, 2); return f16_to_f32(x); }
	case NW_FLOAT: { float x; memcpy(&x, src, 4); return x; }
	case NW_DOUBLE: { double x; memcpy(&x, src, 8); return x; }
	case NW_BFLOAT16: { uint16_t x; memcpy(&x, src, 2); return bf16_to_f32(x); }
	case NW_FP8E4M3: { uint8_t x; memcpy(&x, src, 1); return fp8_decode(x, 1); }
	case NW_FP8E5M2: { uint8_t x; memcpy(&x, src, 1); return fp8_decode(x, 0); }
	default: return NAN;
	}
}

/* Inputs repeat every PRIME elements: encode one period, replicate it, copy it round. */
void nw_pattern_fill(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, void *dst)
{
	enum { REPS = 512 };
	size_t es = nw_dtype_size(p->dtype);
	unsigned m = n < PRIME ? (unsigned)n : PRIME;
	char *tab = nw_malloc((size_t)PRIME * REPS * es);
	for (unsigned k = 0; k < m; k++)
		nw_dtype_store(p->dtype, tab + k * es, (double)nw_pattern_value(p, r, first + k));
	for (unsigned k = 1; k < REPS; k++)
		memcpy(tab + (size_t)k * m * es, tab, (size_t)m * es);
	char *d = dst;
	size_t period = (size_t)m * REPS * es, total = (size_t)n * es;
	for (size_t off = 0; off < total; off += period)
		memcpy(d + off, tab, total - off < period ? total - off : period);
	free(tab);
}

/* Tolerance for avg on floating types (a relative error bound). */
static double tolerance(const struct nw_pattern *p)
{
	if (p->redop != NW_AVG || !is_float(p->dtype) || !nw_coll_get(p->op)->has_redop)
		return 0;
	switch (p->dtype) {
	case NW_HALF: return 1e-2;
	case NW_BFLOAT16: return 2e-2;
	case NW_FP8E4M3: return 0.13;
	case NW_FP8E5M2: return 0.26;
	case NW_FLOAT: return 1e-5;
	default: return 1e-12;
	}
}

/*
 * Length of the block of outputs that j lies in, within which expected()
 * repeats with period PRIME: chunked outputs (one chunk per source rank)
 * change phase at each chunk; the others never do.
 */
static uint64_t block_end(const struct nw_pattern *p, int r, uint64_t j)
{
	if (p->op == NW_ALLTOALLV) {
		int src;
		uint64_t start, len;
		v_segment(p, r, j, &src, &start, &len);
		return start + len;
	}
	if (p->op == NW_ALL_GATHER || p->op == NW_GATHER || p->op == NW_ALLTOALL || p->op == NW_HYPERCUBE) {
		uint64_t c = p->count ? p->count : 1;
		return (j / c + 1) * c;
	}
	return UINT64_MAX;
}

/*
 * Exact comparison, fast: within a block the expected encodings repeat
 * every PRIME elements, so they are computed once per block and compared
 * bit for bit (small integers have one encoding; the poison never matches).
 */
static uint64_t verify_exact(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, const char *o)
{
	enum { REPS = 512 }; /* periods per reference buffer: memcmp runs on ~26 KB at a time */
	size_t es = nw_dtype_size(p->dtype);
	char *ref = nw_malloc((size_t)PRIME * REPS * es);
	uint64_t wrong = 0, j = first, end = first + n;
	while (j < end) {
		uint64_t be = block_end(p, r, j);
		if (be > end)
			be = end;
		uint64_t len = be - j;
		unsigned m = len < PRIME ? (unsigned)len : PRIME;
		for (unsigned k = 0; k < m; k++)
			nw_dtype_store(p->dtype, ref + k * es, expected(p, r, j + k));
		for (unsigned k = 1; k < REPS; k++)
			memcpy(ref + (size_t)k * m * es, ref, (size_t)m * es);
		uint64_t span = (uint64_t)m * REPS; /* elements in ref, a whole number of periods */
		const char *q = o + (j - first) * es;
		for (uint64_t x = 0; x < len; x += span) {
			uint64_t k = len - x < span ? len - x : span;
			if (memcmp(q + x * es, ref, (size_t)k * es) == 0)
				continue;
			for (uint64_t e = 0; e < k; e++)
				wrong += memcmp(q + (x + e) * es, ref + e * es, es) != 0;
		}
		j = be;
	}
	free(ref);
	return wrong;
}

uint64_t nw_pattern_verify(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, const void *out)
{
	if (tolerance(p) == 0)
		return verify_exact(p, r, first, n, out);
	size_t es = nw_dtype_size(p->dtype);
	const char *o = out;
	double tol = tolerance(p);
	uint64_t wrong = 0;
	for (uint64_t k = 0; k < n; k++) {
		double want = expected(p, r, first + k);
		double got = nw_dtype_load(p->dtype, o + k * es);
		if (tol > 0) {
			/* the expected value as the type can hold it, then a relative margin */
			char tmp[8];
			nw_dtype_store(p->dtype, tmp, want);
			double rep = nw_dtype_load(p->dtype, tmp);
			double scale = fabs(want) > 1 ? fabs(want) : 1;
			if (!(fabs(got - rep) <= tol * scale) && !(fabs(got - want) <= tol * scale))
				wrong++;
		} else if (!(got == want)) {
			wrong++;
		}
	}
	return wrong;
}

/* ---- checks on the device ---- */

/* The encoding of v as the type, zero-extended to 64 bits. */
static uint64_t encode64(enum nw_dtype t, double v)
{
	unsigned char b[8] = { 0 };
	uint64_t x = 0;
	nw_dtype_store(t, b, v);
	for (int i = 7; i >= 0; i--)
		x = x << 8 | b[i];
	return x;
}

void nw_pattern_fill_table(const struct nw_pattern *p, int r, uint64_t first, uint64_t tab[NW_DCHECK_PERIOD])
{
	for (unsigned k = 0; k < PRIME; k++)
		tab[k] = encode64(p->dtype, (double)nw_pattern_value(p, r, first + k));
}

/* Exact checks: one block per stretch where expected() keeps its period (as verify_exact walks them). */
static void dcheck_bits(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, struct nw_dcheck *c)
{
	size_t cap = 0;
	for (uint64_t j = first, end = first + n; j < end;) {
		uint64_t be = block_end(p, r, j);
		if (be > end)
			be = end;
		if (c->nblocks == cap) {
			cap = cap ? cap * 2 : 8;
			c->blocks = nw_realloc(c->blocks, cap * sizeof(*c->blocks));
		}
		struct nw_dcheck_block *b = &c->blocks[c->nblocks++];
		memset(b, 0, sizeof(*b));
		b->start = j - first;
		b->len = be - j;
		for (unsigned k = 0; k < PRIME && k < b->len; k++)
			b->ref[k] = encode64(p->dtype, expected(p, r, j + k));
		j = be;
	}
}

/*
 * Checks under a tolerance (avg on floating types; ops with a reduction,
 * whose expected values keep their period over the whole range): 1- and
 * 2-byte types get the set of accepted codes per period entry, tried with
 * the host's own test; float and double the test's three operands.
 */
/*
 * The last bitmap made, and what it was made for: a sweep checks the same
 * type and values at every size, and a 2-byte type's bitmap takes 852K
 * evaluations of the host's test.
 */
static struct {
	pthread_mutex_t mu;
	enum nw_dtype dtype;
	double tol, want[PRIME];
	uint32_t *map;
	size_t words;
} map_cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* The accepted codes of each period entry, into c->map (from the cache when it holds them). */
static void dcheck_map(enum nw_dtype dtype, double tol, const struct nw_dcheck_block *b, struct nw_dcheck *c)
{
	size_t ncodes = (size_t)1 << (8 * c->es);
	c->map_words = PRIME * ncodes / 32;
	c->map = nw_calloc(c->map_words, sizeof(uint32_t));
	pthread_mutex_lock(&map_cache.mu);
	if (map_cache.map && map_cache.dtype == dtype && map_cache.tol == tol && map_cache.words == c->map_words &&
	    !memcmp(map_cache.want, b->want, sizeof(b->want))) {
		memcpy(c->map, map_cache.map, c->map_words * sizeof(uint32_t));
		pthread_mutex_unlock(&map_cache.mu);
		return;
	}
	for (unsigned k = 0; k < PRIME; k++)
		for (size_t code = 0; code < ncodes; code++) {
			unsigned char e[2] = { (unsigned char)code, (unsigned char)(code >> 8) };
			double got = nw_dtype_load(dtype, e);
			if (fabs(got - b->rep[k]) <= b->ts[k] || fabs(got - b->want[k]) <= b->ts[k])
				c->map[(k * ncodes + code) / 32] |= 1u << (code % 32);
		}
	free(map_cache.map);
	map_cache.map = nw_malloc(c->map_words * sizeof(uint32_t));
	memcpy(map_cache.map, c->map, c->map_words * sizeof(uint32_t));
	map_cache.words = c->map_words;
	map_cache.dtype = dtype;
	map_cache.tol = tol;
	memcpy(map_cache.want, b->want, sizeof(b->want));
	pthread_mutex_unlock(&map_cache.mu);
}

static void dcheck_tol(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, double tol, struct nw_dcheck *c)
{
	struct nw_dcheck_block *b = nw_calloc(1, sizeof(*b));
	c->blocks = b;
	c->nblocks = 1;
	b->len = n;
	c->kind = c->es <= 2 ? NW_DCHECK_MAP : NW_DCHECK_TOL;
	for (unsigned k = 0; k < PRIME; k++) {
		double want = expected(p, r, first + k);
		char tmp[8];
		nw_dtype_store(p->dtype, tmp, want);
		double rep = nw_dtype_load(p->dtype, tmp);
		double scale = fabs(want) > 1 ? fabs(want) : 1;
		b->rep[k] = rep;
		b->want[k] = want;
		b->ts[k] = tol * scale;
	}
	if (c->kind == NW_DCHECK_MAP)
		dcheck_map(p->dtype, tol, b, c);
}

void nw_pattern_dcheck(const struct nw_pattern *p, int r, uint64_t first, uint64_t n, struct nw_dcheck *out)
{
	memset(out, 0, sizeof(*out));
	out->es = (unsigned)nw_dtype_size(p->dtype);
	double tol = tolerance(p);
	if (tol == 0) {
		out->kind = NW_DCHECK_BITS;
		dcheck_bits(p, r, first, n, out);
	} else {
		dcheck_tol(p, r, first, n, tol, out);
	}
}

void nw_dcheck_release(struct nw_dcheck *c)
{
	free(c->blocks);
	free(c->map);
	memset(c, 0, sizeof(*c));
}
