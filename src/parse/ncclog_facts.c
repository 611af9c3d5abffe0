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

int lg_pair_same_node(const struct nw_log *lg, const struct lg_pair *p)
{
	if (p->comm == UINT32_MAX)
		return -1;
	const struct lg_comm *c = &lg->comms[p->comm];
	if (c->nnodes == 1)
		return 1;
	struct lg_htab *t = (struct lg_htab *)&lg->rank_idx;
	uint32_t *a = lg_ht_get(t, p->comm, (uint64_t)p->src, 0, NULL);
	uint32_t *b = lg_ht_get(t, p->comm, (uint64_t)p->dst, 0, NULL);
	if (!a || !b)
		return -1;
	return lg->rank_host[*a] == lg->rank_host[*b];
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
