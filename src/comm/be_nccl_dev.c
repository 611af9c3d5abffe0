/* SPDX-License-Identifier: Apache-2.0 */
/*
 * be_nccl_dev: bench's -c on the GPUs. The check kernels (gpu/kern.h,
 * src/gpu/verify.ptx) are compiled by the driver once per GPU the first
 * time a check is asked for; inputs are written and outputs counted on the
 * device, so only a 64-bit count crosses PCIe. When the kernels cannot be
 * had (an old driver, a PTX version it refuses, NCCLWATCH_CHECKS=host),
 * dev_start says why once and the sweep checks on the host as before.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/be_nccl_int.h"
#include "util/util.h"

/* Scratch per GPU: the 64-bit counter, then the largest bitmap (2-byte codes). */
#define SCRATCH_MAP_OFF 64
#define SCRATCH_BYTES (SCRATCH_MAP_OFF + (size_t)NW_DCHECK_PERIOD * 65536 / 8)

void bn_dev_release(struct nw_backend *be)
{
	struct bn_priv *p = bn_p(be);
	for (int i = 0; i < be->nlocal; i++) {
		if (!p->kern[i].mod && !p->scratch[i])
			continue;
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		if (p->scratch[i])
			p->cu->pfn_cuMemFree(p->scratch[i]);
		p->scratch[i] = 0;
		nw_kern_unload(p->cu, &p->kern[i]);
	}
}

int bn_dev_start(struct nw_backend *be, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (p->dev_state)
		return p->dev_state > 0 ? 0 : nw_seterr(err, errlen, "%s", p->dev_why);
	p->dev_state = -1;
	const char *want = getenv("NCCLWATCH_CHECKS");
	if (want && !strcmp(want, "host")) {
		nw_seterr(err, errlen, "NCCLWATCH_CHECKS=host");
		nw_strlcpy(p->dev_why, err, sizeof(p->dev_why));
		return -1;
	}
	for (int i = 0; i < be->nlocal; i++) {
		char why[NW_ERRLEN];
		if (bn_set_ctx(be, i, err, errlen))
			goto fail;
		if (nw_kern_load(p->cu, &p->kern[i], why, sizeof(why))) {
			nw_seterr(err, errlen, "GPU %d: %s", p->dev[i], why);
			goto fail;
		}
		nw_CUresult r = p->cu->pfn_cuMemAlloc(&p->scratch[i], SCRATCH_BYTES);
		if (r) {
			p->scratch[i] = 0;
			bn_cu_fail(p, r, p->dev[i], "allocating the checks' scratch memory", err, errlen);
			goto fail;
		}
	}
	p->dev_state = 1;
	return 0;
fail:
	nw_strlcpy(p->dev_why, err, sizeof(p->dev_why));
	bn_dev_release(be);
	return -1;
}

int bn_dev_fill(struct nw_backend *be, int i, enum nw_buf b, size_t off, uint64_t n, unsigned es,
                const uint64_t tab[NW_DCHECK_PERIOD], char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (bn_set_ctx(be, i, err, errlen) ||
	    nw_kern_fill(p->cu, &p->kern[i], p->stream[i], bn_bufptr(p, i, b) + off, n, es, 0, tab, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuStreamSynchronize(p->stream[i]);
	return r ? bn_cu_fail(p, r, p->dev[i], "writing the input pattern", err, errlen) : 0;
}

/* One block of check c on GPU i, its counter at count. 0, or -1 with err. */
static int verify_block(struct bn_priv *p, int i, nw_CUdeviceptr buf, const struct nw_dcheck *c,
                        const struct nw_dcheck_block *bl, nw_CUdeviceptr count, char *err, size_t errlen)
{
	nw_CUdeviceptr at = buf + bl->start * c->es;
	switch (c->kind) {
	case NW_DCHECK_BITS:
		return nw_kern_verify_bits(p->cu, &p->kern[i], p->stream[i], at, bl->len, c->es, 0, count, bl->ref, err,
		                           errlen);
	case NW_DCHECK_MAP:
		return nw_kern_verify_map(p->cu, &p->kern[i], p->stream[i], at, bl->len, c->es, 0, count,
		                          p->scratch[i] + SCRATCH_MAP_OFF, err, errlen);
	case NW_DCHECK_TOL:
		return nw_kern_verify_tol(p->cu, &p->kern[i], p->stream[i], at, bl->len, c->es, 0, count, bl->rep, bl->want,
		                          bl->ts, err, errlen);
	}
	NW_BUG("unknown device check kind %d", (int)c->kind);
}

int bn_dev_verify(struct nw_backend *be, int i, size_t off, const struct nw_dcheck *c, uint64_t *wrong, char *err,
                  size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	NW_ASSERT(c->map_words * 4 <= SCRATCH_BYTES - SCRATCH_MAP_OFF);
	if (bn_set_ctx(be, i, err, errlen))
		return -1;
	nw_CUdeviceptr count = p->scratch[i];
	nw_CUresult r = p->cu->pfn_cuMemsetD32(count, 0, 2);
	if (!r && c->kind == NW_DCHECK_MAP)
		r = p->cu->pfn_cuMemcpyHtoD(p->scratch[i] + SCRATCH_MAP_OFF, c->map, c->map_words * 4);
	if (r)
		return bn_cu_fail(p, r, p->dev[i], "preparing a check", err, errlen);
	nw_CUdeviceptr buf = bn_bufptr(p, i, NW_BUF_RECV) + off;
	for (size_t b = 0; b < c->nblocks; b++)
		if (verify_block(p, i, buf, c, &c->blocks[b], count, err, errlen))
			return -1;
	uint64_t n = 0;
	r = p->cu->pfn_cuStreamSynchronize(p->stream[i]);
	if (!r)
		r = p->cu->pfn_cuMemcpyDtoH(&n, count, sizeof(n));
	if (r)
		return bn_cu_fail(p, r, p->dev[i], "checking the results", err, errlen);
	*wrong += n;
	return 0;
}
