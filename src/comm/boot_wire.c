/* SPDX-License-Identifier: Apache-2.0 */
/* boot_wire: the wire format: the 16-byte header, the hello and rank 0's answer, packed and checked. */
#include <stdlib.h>
#include <string.h>

#include "comm/boot_int.h"

#define HELLO_MAX (26 + NW_BOOT_MAX_HOST + NW_BOOT_MAX_FP)

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void nw_boot_hdr_pack(const struct nw_boot_hdr *h, uint8_t out[NW_BOOT_HDR_LEN])
{
	put32(out, NW_BOOT_MAGIC);
	out[4] = h->type;
	out[5] = h->proto;
	put16(out + 6, h->arg);
	put32(out + 8, h->seq);
	put32(out + 12, h->len);
}

/* The most payload a message of this type may carry. */
static uint32_t type_max(int type)
{
	switch (type) {
	case NW_BOOT_HELLO: return HELLO_MAX;
	case NW_BOOT_ABORT: return NW_BOOT_MAX_WHY;
	case NW_BOOT_ENTER: case NW_BOOT_BARRIER: return 0;
	default: return NW_BOOT_MAX_PAYLOAD;
	}
}

int nw_boot_hdr_unpack(const uint8_t in[NW_BOOT_HDR_LEN], struct nw_boot_hdr *h, char *err,
                       size_t errlen)
{
	uint32_t magic = get32(in);
	if (magic != NW_BOOT_MAGIC)
		return nw_seterr(err, errlen, "not ncclwatch bootstrap traffic (magic 0x%08x)", magic);
	h->type = in[4];
	h->proto = in[5];
	h->arg = get16(in + 6);
	h->seq = get32(in + 8);
	h->len = get32(in + 12);
	if (h->proto != NW_BOOT_PROTO)
		return nw_seterr(err, errlen,
		                 "bootstrap protocol %u where this ncclwatch speaks %u: run the same ncclwatch build on every rank",
		                 h->proto, NW_BOOT_PROTO);
	if (h->type < NW_BOOT_HELLO || h->type >= NW_BOOT_NTYPES)
		return nw_seterr(err, errlen, "unknown message type %u", h->type);
	if (h->len > type_max(h->type))
		return nw_seterr(err, errlen, "a message of type %u announcing %u bytes (at most %u)", h->type,
		                 h->len, type_max(h->type));
	return 0;
}

int boot_hdr_other_build(const uint8_t hdr[NW_BOOT_HDR_LEN])
{
	return get32(hdr) == NW_BOOT_MAGIC && hdr[5] != NW_BOOT_PROTO;
}

/* Copy a wire string into out, replacing anything unprintable. */
void boot_clean_copy(char *out, size_t outlen, const uint8_t *p, size_t n)
{
	size_t i;
	if (n >= outlen)
		n = outlen - 1;
	for (i = 0; i < n; i++)
		out[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	out[i] = '\0';
}

uint8_t *nw_boot_hello_pack(const struct nw_boot_hello *h, size_t *len)
{
	size_t hl = strnlen(h->host, NW_BOOT_MAX_HOST);
	size_t fl = h->fingerprint ? strlen(h->fingerprint) : 0;
	if (fl > NW_BOOT_MAX_FP)
		fl = NW_BOOT_MAX_FP;
	size_t n = 20 + 2 + hl + 4 + fl;
	uint8_t *p = nw_malloc(n);
	put32(p, (uint32_t)h->rank);
	put32(p + 4, (uint32_t)h->size);
	put32(p + 8, (uint32_t)h->local_rank);
	put32(p + 12, (uint32_t)h->local_size);
	put32(p + 16, (uint32_t)h->pid);
	put16(p + 20, (uint16_t)hl);
	memcpy(p + 22, h->host, hl);
	put32(p + 22 + hl, (uint32_t)fl);
	if (fl)
		memcpy(p + 26 + hl, h->fingerprint, fl);
	*len = n;
	return p;
}

int nw_boot_hello_unpack(const uint8_t *p, size_t len, struct nw_boot_hello *h, char *err,
                         size_t errlen)
{
	memset(h, 0, sizeof(*h));
	if (len < 26)
		return nw_seterr(err, errlen, "a hello of %zu bytes (too short)", len);
	uint32_t v[5];
	for (int i = 0; i < 5; i++)
		v[i] = get32(p + 4 * i);
	if (v[0] >= BOOT_MAX_RANKS || v[1] > BOOT_MAX_RANKS || v[2] >= BOOT_MAX_RANKS || v[3] > BOOT_MAX_RANKS)
		return nw_seterr(err, errlen, "a hello with rank %u of %u (local %u of %u) out of range", v[0],
		                 v[1], v[2], v[3]);
	size_t hl = get16(p + 20);
	if (hl > NW_BOOT_MAX_HOST || 26 + hl > len)
		return nw_seterr(err, errlen, "a hello with a host name of %zu bytes in %zu", hl, len);
	size_t fl = get32(p + 22 + hl);
	if (fl > NW_BOOT_MAX_FP || 26 + hl + fl != len)
		return nw_seterr(err, errlen, "a hello with a fingerprint of %zu bytes in %zu", fl, len);
	h->rank = (int)v[0];
	h->size = (int)v[1];
	h->local_rank = (int)v[2];
	h->local_size = (int)v[3];
	h->pid = (long)v[4];
	boot_clean_copy(h->host, sizeof(h->host), p + 22, hl);
	h->fingerprint = nw_malloc(fl + 1);
	memcpy(h->fingerprint, p + 26 + hl, fl);
	h->fingerprint[fl] = '\0';
	if (strlen(h->fingerprint) != fl) {
		nw_boot_hello_release(h);
		return nw_seterr(err, errlen, "a hello whose fingerprint holds a NUL byte");
	}
	return 0;
}

void nw_boot_hello_release(struct nw_boot_hello *h)
{
	free(h->fingerprint);
	h->fingerprint = NULL;
}

/* Rank 0's answer: the world size, then each rank's local rank, local size, pid and host. */
uint8_t *boot_welcome_pack(const struct nw_boot *b, const struct roster *ro, size_t *len)
{
	size_t n = 4;
	for (int r = 0; r < b->size; r++)
		n += 14 + strlen(b->hosts[r]);
	uint8_t *p = nw_malloc(n), *q = p;
	put32(q, (uint32_t)b->size);
	q += 4;
	for (int r = 0; r < b->size; r++) {
		size_t hl = strlen(b->hosts[r]);
		put32(q, (uint32_t)ro->lrank[r]);
		put32(q + 4, (uint32_t)ro->lsize[r]);
		put32(q + 8, (uint32_t)ro->pid[r]);
		put16(q + 12, (uint16_t)hl);
		memcpy(q + 14, b->hosts[r], hl);
		q += 14 + hl;
	}
	*len = n;
	return p;
}

/* Parse rank 0's table of hosts into b. */
int boot_welcome_unpack(struct nw_boot *b, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len < 4 || get32(p) != (uint32_t)b->size)
		return nw_seterr(err, errlen, "rank 0 sent a startup answer for another world size");
	size_t off = 4;
	for (int r = 0; r < b->size; r++) {
		if (off + 14 > len)
			return nw_seterr(err, errlen, "rank 0 sent a short startup answer");
		uint32_t lr = get32(p + off), ls = get32(p + off + 4);
		size_t hl = get16(p + off + 12);
		if (hl > NW_BOOT_MAX_HOST || off + 14 + hl > len || ls > BOOT_MAX_RANKS || lr >= BOOT_MAX_RANKS)
			return nw_seterr(err, errlen, "rank 0 sent a bad startup answer");
		char host[NW_BOOT_MAX_HOST + 1];
		boot_clean_copy(host, sizeof(host), p + off + 14, hl);
		free(b->hosts[r]);
		b->hosts[r] = nw_strdup(host);
		if (r == b->rank)
			b->local_size = (int)ls;
		off += 14 + hl;
	}
	return 0;
}
