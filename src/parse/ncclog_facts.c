/* SPDX-License-Identifier: Apache-2.0 */
/* Facts the log analyser derives once from its tables, for the diagnosis rules and the report. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "parse/ncclog_int.h"

const char *const lg_tclass_names[T_NCLASS] = { "P2P", "SHM", "NET/Socket", "NET/IB", "NET/plugin", "NVLS", "CollNet", "other" };

enum lg_tclass lg_transport_class(const char *name)
{
	if (!strncmp(name, "P2P", 3))
		return T_P2P;
	if (!strncmp(name, "SHM", 3) || !strncmp(name, "direct shared memory", 20) || !strncmp(name, "shared memory", 13))
		return T_SHM; /* NCCL 2.4 and older: "via direct shared memory" */
	if (!strncmp(name, "NET/Socket", 10))
		return T_SOCKET;
	if (!strncmp(name, "NET/IB", 6))
		return T_IB;
	if (!strncmp(name, "NET/", 4))
		return T_NET_OTHER;
	if (!strncmp(name, "NVLS", 4))
		return T_NVLS;
	if (!strncasecmp(name, "COLLNET", 7))
		return T_COLLNET;
	return T_OTHER;
}

/* The host of rank in communicator comm: from its init line, else from the connections it printed; UINT32_MAX unknown. */
static uint32_t rank_host(const struct nw_log *lg, uint32_t comm, int rank)
{
	if (rank < 0)
		return UINT32_MAX;
	if (comm != UINT32_MAX) {
		uint32_t *r = lg_ht_get((struct lg_htab *)&lg->rank_idx, comm, (uint64_t)rank, 0, NULL);
		if (r)
			return lg->rank_host[*r];
	}
	uint32_t *h = lg_ht_get((struct lg_htab *)&lg->conn_host, comm, (uint64_t)rank, 0, NULL);
	return h ? *h : UINT32_MAX;
}

int lg_pair_same_node(const struct nw_log *lg, const struct lg_pair *p)
{
	if (p->comm != UINT32_MAX && lg->comms[p->comm].nnodes == 1)
		return 1;
	uint32_t a = rank_host(lg, p->comm, p->src), b = rank_host(lg, p->comm, p->dst);
	if (a != UINT32_MAX && b != UINT32_MAX)
		return a == b;
	/*
	 * else the transport says it: P2P, SHM and NVLS connect GPUs of one node
	 * only; NCCL takes the network between two GPUs of one node only when
	 * shared memory is off too, so a NET pair is between nodes unless the log
	 * shows NCCL_SHM_DISABLE set (or the communicator has one node)
	 */
	if (p->transport != UINT32_MAX && p->dst >= 0) {
		enum lg_tclass k = lg_transport_class(lg->transports[p->transport].name);
		if (k == T_P2P || k == T_SHM || k == T_NVLS)
			return 1;
		const struct lg_env *shm = lg_env_find(lg, "NCCL_SHM_DISABLE");
		if ((k == T_SOCKET || k == T_IB || k == T_NET_OTHER) && !(shm && strcmp(shm->value, "0")))
			return 0;
	}
	return -1;
}

/* Per-transport and per-class pair counts, largest communicator, NVLink and IB presence. */
void lg_compute_facts(const struct nw_log *lg, struct lg_facts *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < lg->npairs; i++) {
		const struct lg_pair *p = &lg->pairs[i];
		if (p->transport == UINT32_MAX)
			continue;
		struct lg_tstat *t = &f->t[p->transport];
		enum lg_tclass k = lg_transport_class(lg->transports[p->transport].name);
		int same = lg_pair_same_node(lg, p);
		t->pairs++;
		t->connections += p->connections;
		t->nics |= p->nics;
		if (!t->example)
			t->example = p;
		f->class_pairs[k]++;
		if (same == 1)
			t->intra++, f->class_intra[k]++;
		else if (same == 0)
			t->inter++, f->class_inter[k]++;
		if (strstr(lg->transports[p->transport].name, "GDRDMA")) {
			t->gdr++;
			if (k == T_IB)
				f->ib_gdr_pairs++;
		}
	}
	for (size_t i = 0; i < lg->ncomms; i++)
		if (lg->comms[i].nranks > f->max_nranks)
			f->max_nranks = lg->comms[i].nranks;
	for (size_t i = 0; i < lg->nprocs; i++)
		f->size1_procs += lg->procs[i].size1;
	for (size_t i = 0; i < lg->nhosts; i++) {
		if (lg->hosts[i].nvlink && !f->any_nvlink) {
			f->any_nvlink = 1;
			f->nvlink_host = lg->hosts[i].name;
		}
		if (lg->hosts[i].ib_devs[0] && !f->any_ib_devs) {
			f->any_ib_devs = 1;
			f->ib_host = lg->hosts[i].name;
		}
	}
}

const struct lg_env *lg_env_find(const struct nw_log *lg, const char *name)
{
	for (size_t i = 0; i < lg->nenvs; i++)
		if (!strcmp(lg->envs[i].name, name))
			return &lg->envs[i];
	return NULL;
}
