/* SPDX-License-Identifier: Apache-2.0 */
/*
 * be_nccl_mem: the NCCL backend's memory: the send and receive buffers of
 * each local GPU (cuMemAlloc, or ncclMemAlloc registered with the
 * communicator for -R), copies to and from them, pinned host staging
 * buffers, and free device memory for -M.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/be_nccl_int.h"
#include "util/util.h"

void bn_free_buffers(struct nw_backend *be)
{
	struct bn_priv *p = bn_p(be);
	bn_deregister_buffers(be);
	for (int i = 0; i < be->nlocal; i++) {
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		nw_CUdeviceptr b[2] = { p->send[i], p->recv[i] };
		for (int k = 0; k < 2; k++) {
			if (b[k] && p->reg)
				p->nc->pfn_ncclMemFree((void *)(uintptr_t)b[k]);
			else if (b[k])
				p->cu->pfn_cuMemFree(b[k]);
		}
		p->send[i] = p->recv[i] = 0;
	}
	p->bytes = 0;
}

static int alloc_registered(struct nw_backend *be, size_t bytes, char *err, size_t errlen);

int bn_alloc(struct nw_backend *be, size_t bytes, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	bn_free_buffers(be);
	bytes = (bytes + 4095) & ~(size_t)4095;
	for (int i = 0; i < be->nlocal; i++) {
		if (bn_set_ctx(be, i, err, errlen))
			return -1;
		size_t freeb = 0, total = 0;
		p->cu->pfn_cuMemGetInfo(&freeb, &total);
		if (freeb < 2 * bytes + (256u << 20))
			return nw_seterr(err, errlen,
			                 "too little GPU memory on GPU %d: the sweep needs 2 x %.2f GiB (send and receive "
			                 "buffers for -e), %.2f GiB is free of %.2f GiB; lower -e or free the GPU",
			                 (int)p->dev[i], bytes / 1073741824.0, freeb / 1073741824.0, total / 1073741824.0);
	}
	int64_t before[NW_MAX_LOCAL], after[NW_MAX_LOCAL];
	bn_mem_snapshot(be, before);
	if (p->reg && alloc_registered(be, bytes, err, errlen))
		return -1;
	for (int i = 0; i < be->nlocal && !p->reg; i++) {
		if (bn_set_ctx(be, i, err, errlen))
			return -1;
		nw_CUresult r = p->cu->pfn_cuMemAlloc(&p->send[i], bytes);
		if (!r)
			r = p->cu->pfn_cuMemAlloc(&p->recv[i], bytes);
		if (r)
			return bn_cu_fail(p, r, p->dev[i], "allocating buffers", err, errlen);
	}
	for (int i = 0; i < be->nlocal; i++) {
		p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
		/* a defined value everywhere (1.0f); patterns are written before checks */
		p->cu->pfn_cuMemsetD32(p->send[i], 0x3f800000u, bytes / 4);
		p->cu->pfn_cuMemsetD32(p->recv[i], 0x3f800000u, bytes / 4);
	}
	p->bytes = bytes;
	bn_mem_snapshot(be, after);
	be->mem_user = 0;
	for (int i = 0; i < be->nlocal; i++)
		if (before[i] - after[i] > be->mem_user)
			be->mem_user = before[i] - after[i];
	return 0;
}

nw_CUdeviceptr bn_bufptr(struct bn_priv *p, int i, enum nw_buf b)
{
	return b == NW_BUF_SEND ? p->send[i] : p->recv[i];
}

int bn_write(struct nw_backend *be, int i, enum nw_buf b, size_t off, const void *src, size_t n,
                    char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (bn_set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemcpyHtoD(bn_bufptr(p, i, b) + off, src, n);
	return r ? bn_cu_fail(p, r, p->dev[i], "copying to the GPU", err, errlen) : 0;
}

int bn_read(struct nw_backend *be, int i, enum nw_buf b, size_t off, void *dst, size_t n,
                   char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (bn_set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemcpyDtoH(dst, bn_bufptr(p, i, b) + off, n);
	return r ? bn_cu_fail(p, r, p->dev[i], "copying from the GPU", err, errlen) : 0;
}

int bn_copy(struct nw_backend *be, int i, size_t soff, size_t doff, size_t n, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (bn_set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemcpyDtoD(p->recv[i] + doff, p->send[i] + soff, n);
	if (!r)
		r = p->cu->pfn_cuCtxSynchronize();
	return r ? bn_cu_fail(p, r, p->dev[i], "preparing in-place data", err, errlen) : 0;
}

int bn_fill32(struct nw_backend *be, int i, enum nw_buf b, uint32_t word, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	if (bn_set_ctx(be, i, err, errlen))
		return -1;
	nw_CUresult r = p->cu->pfn_cuMemsetD32(bn_bufptr(p, i, b), word, p->bytes / 4);
	if (!r)
		r = p->cu->pfn_cuCtxSynchronize();
	return r ? bn_cu_fail(p, r, p->dev[i], "filling a buffer", err, errlen) : 0;
}

/* One pinned staging buffer of 64 MiB (n == 0) or larger on request; kept until destroy. */
void *bn_host_alloc(struct nw_backend *be, size_t n)
{
	struct bn_priv *p = bn_p(be);
	if (n == 0) {
		if (p->npinned)
			return p->pinned[0];
		n = 64u << 20;
	}
	if (p->npinned >= (int)NW_ARRAY_LEN(p->pinned))
		return NULL;
	void *h = NULL;
	if (p->cu->pfn_cuMemHostAlloc(&h, n, 1 /* portable */) != 0)
		return NULL;
	p->pinned[p->npinned++] = h;
	return h;
}

/* Each local GPU's free memory into free_b[nlocal] (0 where the driver does not say). 0, or -1 with err. */
int bn_mem_free(struct nw_backend *be, int64_t *free_b, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	for (int i = 0; i < be->nlocal; i++) {
		size_t fr = 0, total = 0;
		if (bn_set_ctx(be, i, err, errlen))
			return -1;
		nw_CUresult r = p->cu->pfn_cuMemGetInfo(&fr, &total);
		if (r)
			return bn_cu_fail(p, r, p->dev[i], "asking free memory (-M)", err, errlen);
		free_b[i] = (int64_t)fr;
	}
	return 0;
}

/* bn_mem_free for the backend's own bookkeeping: zeros when the driver does not answer. */
int bn_mem_snapshot(struct nw_backend *be, int64_t *free_b)
{
	char e[NW_ERRLEN];
	int rc = bn_mem_free(be, free_b, e, sizeof(e));
	if (rc)
		memset(free_b, 0, sizeof(*free_b) * (size_t)be->nlocal);
	return rc;
}

/* One local rank's send and recv buffers from ncclMemAlloc (memory NCCL can map for its peers). 0, or -1 with err. */
static int nccl_mem_alloc(struct nw_backend *be, int i, size_t bytes, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	void *sb = NULL, *rb = NULL;
	if (bn_set_ctx(be, i, err, errlen))
		return -1;
	nw_ncclResult_t rc = p->nc->pfn_ncclMemAlloc(&sb, bytes);
	if (!rc)
		p->send[i] = (nw_CUdeviceptr)(uintptr_t)sb;
	if (!rc)
		rc = p->nc->pfn_ncclMemAlloc(&rb, bytes);
	if (!rc)
		p->recv[i] = (nw_CUdeviceptr)(uintptr_t)rb;
	return rc ? bn_nccl_fail(p, rc, i, "ncclMemAlloc (-R)", err, errlen) : 0;
}

/*
 * -R, as nccl-tests does it: every local rank's buffers from ncclMemAlloc,
 * then registered with its communicator in one NCCL group (window
 * registration is collective): ncclCommRegister (-R 1) or
 * ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC (-R 2). The handles
 * stay in p until bn_deregister_buffers. 0, or -1 with err.
 */
static int alloc_registered(struct nw_backend *be, size_t bytes, char *err, size_t errlen)
{
	struct bn_priv *p = bn_p(be);
	const struct nw_nccl *nc = p->nc;
	for (int i = 0; i < be->nlocal; i++)
		if (nccl_mem_alloc(be, i, bytes, err, errlen))
			return -1;
	nw_ncclResult_t rc = nc->pfn_ncclGroupStart();
	int at = 0;
	for (; at < be->nlocal && !rc; at++) {
		void *sb = (void *)(uintptr_t)p->send[at], *rb = (void *)(uintptr_t)p->recv[at];
		p->cu->pfn_cuCtxSetCurrent(p->ctx[at]);
		if (p->reg == 2) {
			rc = nc->pfn_ncclCommWindowRegister(p->comm[at], sb, bytes, &p->win_send[at], NW_NCCL_WIN_COLL_SYMMETRIC);
			if (!rc)
				rc = nc->pfn_ncclCommWindowRegister(p->comm[at], rb, bytes, &p->win_recv[at],
				                                    NW_NCCL_WIN_COLL_SYMMETRIC);
		} else {
			rc = nc->pfn_ncclCommRegister(p->comm[at], sb, bytes, &p->reg_send[at]);
			if (!rc)
				rc = nc->pfn_ncclCommRegister(p->comm[at], rb, bytes, &p->reg_recv[at]);
		}
	}
	nw_ncclResult_t end = nc->pfn_ncclGroupEnd();
	if (rc || end)
		return bn_nccl_fail(p, rc ? rc : end, at > 0 ? at - 1 : 0,
		                 p->reg == 2 ? "ncclCommWindowRegister (-R 2)" : "ncclCommRegister (-R 1)", err, errlen);
	return 0;
}

/* Undo alloc_registered's registrations (not the memory); nothing for communicators already gone. */
void bn_deregister_buffers(struct nw_backend *be)
{
	struct bn_priv *p = bn_p(be);
	for (int i = 0; i < be->nlocal; i++) {
		if (p->comm[i]) {
			p->cu->pfn_cuCtxSetCurrent(p->ctx[i]);
			void *h[2] = { p->reg_send[i], p->reg_recv[i] };
			nw_ncclWindow_t w[2] = { p->win_send[i], p->win_recv[i] };
			for (int k = 0; k < 2; k++) {
				if (h[k])
					p->nc->pfn_ncclCommDeregister(p->comm[i], h[k]);
				if (w[k])
					p->nc->pfn_ncclCommWindowDeregister(p->comm[i], w[k]);
			}
		}
		p->reg_send[i] = p->reg_recv[i] = NULL;
		p->win_send[i] = p->win_recv[i] = NULL;
	}
}

/* The highest -R the loaded NCCL can do: 1 from 2.19 (ncclCommRegister), 2 from 2.27 (windows). */
int bn_reg_max(const struct nw_nccl *nc)
{
	if (!nc->pfn_ncclMemAlloc || !nc->pfn_ncclMemFree || !nc->pfn_ncclCommRegister || !nc->pfn_ncclCommDeregister ||
	    nc->version_code < 21900)
		return 0;
	if (!nc->pfn_ncclCommWindowRegister || !nc->pfn_ncclCommWindowDeregister || nc->version_code < 22700)
		return 1;
	return 2;
}
