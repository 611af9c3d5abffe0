/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gzip through zlib opened at run time (see gzip.h). Only three entry
 * points with plain arguments are used (compress2, compressBound, crc32),
 * so no zlib struct layout is declared here: compress2 makes a zlib stream
 * (RFC 1950: 2-byte header, raw deflate data, 4-byte Adler-32), whose
 * deflate data goes between a gzip header and a CRC-32 + size trailer.
 */
#include "export/gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/dl.h"
#include "util/util.h"

#define GZ_LEVEL 6 /* zlib's default: ~10x smaller metrics text at a few ms per MB */

static struct {
	int (*pfn_compress2)(unsigned char *dst, unsigned long *dstlen, const unsigned char *src,
	                     unsigned long srclen, int level);
	unsigned long (*pfn_compressBound)(unsigned long srclen);
	unsigned long (*pfn_crc32)(unsigned long crc, const unsigned char *buf, unsigned len);
	int ok;
	char why[160];
} z;

static const struct nw_dl_sym syms[] = {
	{ (void **)(void *)&z.pfn_compress2, { "compress2" }, 1 },
	{ (void **)(void *)&z.pfn_compressBound, { "compressBound" }, 1 },
	{ (void **)(void *)&z.pfn_crc32, { "crc32" }, 1 },
};

static const struct nw_dl_lib libz = { NULL, { "libz.so.1" }, 0 };
static struct nw_dl_once once = NW_DL_ONCE_INIT;

/* Open libz.so.1; z.ok says whether it can be used, z.why why not. Decided once: always 0. */
static int z_open(const void *arg, char *err, size_t errlen)
{
	(void)arg;
	(void)err;
	(void)errlen;
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (nw_dl_load(&libz, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why)))
		nw_seterr(z.why, sizeof(z.why), "%s: replies go uncompressed", why);
	else
		z.ok = 1;
	return 0;
}

/* Little-endian 32-bit v at p. */
static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

char *nw_gzip(const char *in, size_t n, size_t *outlen, char *err, size_t errlen)
{
	nw_dl_once(&once, z_open, NULL, NULL, 0);
	if (!z.ok)
		return nw_seterr(err, errlen, "%s", z.why), NULL;
	if (n > UINT32_MAX)
		return nw_seterr(err, errlen, "reply of %zu bytes is too large to compress", n), NULL;
	unsigned long zlen = z.pfn_compressBound((unsigned long)n);
	/* the zlib stream is written 8 bytes in, so that its 2-byte header ends where the 10-byte gzip header does */
	unsigned char *buf = nw_malloc(zlen + 16);
	if (z.pfn_compress2(buf + 8, &zlen, (const unsigned char *)in, (unsigned long)n, GZ_LEVEL) != 0 || zlen < 6) {
		free(buf);
		return nw_seterr(err, errlen, "zlib failed to compress the reply"), NULL;
	}
	static const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 /* Unix */ };
	memcpy(buf, hdr, sizeof(hdr));
	size_t deflate_len = zlen - 6; /* less the zlib header and the Adler-32 */
	unsigned char *tail = buf + 10 + deflate_len;
	put_le32(tail, (uint32_t)z.pfn_crc32(z.pfn_crc32(0, NULL, 0), (const unsigned char *)in, (unsigned)n));
	put_le32(tail + 4, (uint32_t)n);
	*outlen = 10 + deflate_len + 8;
	return (char *)buf;
}

/* The q value of one Accept-Encoding element e[0..n) ("gzip;q=0.5"): 1 when it has none. */
static double element_q(const char *e, size_t n)
{
	char item[64];
	if (n >= sizeof(item))
		n = sizeof(item) - 1;
	memcpy(item, e, n);
	item[n] = '\0';
	const char *q = strstr(item, "q=");
	return q ? strtod(q + 2, NULL) : 1.0;
}

int nw_gzip_accepted(const char *ae)
{
	for (const char *p = ae; p && *p;) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t name = strcspn(p, "; \t,");
		if (((name == 4 && !strncasecmp(p, "gzip", 4)) || (name == 1 && *p == '*')) && element_q(p, n) > 0)
			return 1;
		p += n;
	}
	return 0;
}
