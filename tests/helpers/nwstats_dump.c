/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nwstats_dump: print every stats file of a directory as plain lines, for
 * tests and for scripts/gpu/plugin-overhead.sh. Not a user command (that
 * is `ncclwatch top`); it shows the raw per-bucket figures.
 *
 *   rank file=<path> state=<s> host=<h> pid=<p> comm=<16 hex> name=<n> rank=<r> nranks=<n>
 *        abi=<v|interposer> ops=<n> dropped=<n> bad=<n> late=<n> kernel_ops=<n> slow=<n> mask=0x<m>
 *        switches=<n> busy_exact=<f> busy_est=<f> graph_ops=<n> blind=<what the interface cannot give,...|->
 *        repairs=<n> nccl=<version code the interposer wraps, 0 for the plugin>
 *   rec comm=<hex> rank=<r> op=<op> bucket=<lowest bytes> count=<n> bytes=<n>
 *        kernel=<n> proxy=<n> cpu=<n> src=<kernel|proxy|none> mean_us=<f> busbw=<f>
 *   straggler comm=<hex> rank=<r> mean_late_us=<f> nlast=<n> nseq=<n>
 *   bad file=<path> why=<text>
 *
 * Usage: nwstats_dump [DIR]   (default: $NCCLWATCH_DIR or /dev/shm/ncclwatch-<uid>)
 */
#include <stdio.h>
#include <string.h>

#include "export/statsfile.h"
#include "util/util.h"

int main(int argc, char **argv)
{
	char dirbuf[512], err[NW_ERRLEN];
	const char *dir = argc > 1 ? argv[1] : nw_sf_default_dir(dirbuf, sizeof(dirbuf));
	if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
		fprintf(stderr, "usage: nwstats_dump [DIR]\n");
		return 2;
	}
	struct nw_sf_set set;
	if (nw_sf_load(dir, &set, err, sizeof(err)) != 0) {
		fprintf(stderr, "nwstats_dump: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < set.n; i++) {
		const struct nw_sf_rank *r = &set.ranks[i];
		const struct nws_header *h = &r->hdr;
		char blind[200] = "-";
		size_t n = 0;
		for (unsigned b = 0; b < NWS_NBLIND; b++)
			if (h->mode.blind & (1u << b))
				n += (size_t)snprintf(blind + n, sizeof(blind) - n, "%s%s", n ? "," : "", nws_blind_name(b));
		char abi[16];
		snprintf(abi, sizeof(abi), nws_abi_interposer(h->abi) ? "interposer" : "%u", h->abi);
		printf("rank file=%s state=%s host=%s pid=%d comm=%016llx name=%s rank=%d nranks=%d abi=%s "
		       "ops=%llu dropped=%llu bad=%llu late=%llu kernel_ops=%llu slow=%llu mask=0x%x switches=%llu "
		       "busy_exact=%.4f busy_est=%.4f graph_ops=%u blind=%s repairs=%llu nccl=%u\n",
		       r->path, nw_sf_live_name(r->live), h->hostname, h->pid, (unsigned long long)h->comm_hash,
		       h->comm_name[0] ? h->comm_name : "-", h->rank, h->nranks, abi,
		       (unsigned long long)h->ops_total, (unsigned long long)h->ops_dropped,
		       (unsigned long long)h->events_bad, (unsigned long long)h->events_late,
		       (unsigned long long)h->kernel_ops, (unsigned long long)h->slow_ops, h->mask,
		       (unsigned long long)h->mask_switches, nw_sf_busy_exact(r), nw_sf_busy_est(r), h->graph_ops, blind,
		       (unsigned long long)h->mode.repairs, nws_abi_nccl_code(h->abi));
		const struct nws_progress *p = &h->prog;
		printf("prog comm=%016llx rank=%d completion=%u inflight=%llu oldest_seq=%llu enq_seq=%llu "
		       "last_event_ns=%llu hung=%u why=%u hung_ns=%llu hangs=%llu\n",
		       (unsigned long long)h->comm_hash, h->rank, p->completion, (unsigned long long)p->inflight,
		       (unsigned long long)p->oldest_seq, (unsigned long long)p->enq_seq,
		       (unsigned long long)p->last_event_ns, p->hang, p->hang_why, (unsigned long long)p->hung_ns,
		       (unsigned long long)p->hangs);
		const struct nws_overlap *o = &h->ovl;
		printf("ovl comm=%016llx rank=%d state=%u windows=%llu wall_ns=%llu compute_ns=%llu nccl_ns=%llu "
		       "exposed_ns=%llu alone=%llu kernels=%llu reason=%s\n",
		       (unsigned long long)h->comm_hash, h->rank, o->state, (unsigned long long)o->windows,
		       (unsigned long long)o->wall_ns, (unsigned long long)o->compute_ns, (unsigned long long)o->nccl_ns,
		       (unsigned long long)o->exposed_ns, (unsigned long long)o->alone_windows,
		       (unsigned long long)o->kernels, o->reason[0] ? o->reason : "-");
		for (int op = 0; op < NWS_NOPS; op++) {
			for (int b = 0; b < NWS_NBUCKETS; b++) {
				const struct nws_record *rec = &r->rec[op][b];
				if (!rec->count)
					continue;
				struct nw_sf_agg a;
				nw_sf_aggregate(r, op, b, &a);
				printf("rec comm=%016llx rank=%d op=%s bucket=%llu count=%llu bytes=%llu kernel=%llu "
				       "proxy=%llu cpu=%llu src=%s mean_us=%.3f busbw=%.3f\n",
				       (unsigned long long)h->comm_hash, h->rank, nws_op_name((unsigned)op),
				       (unsigned long long)nws_bucket_lo((unsigned)b), (unsigned long long)rec->count,
				       (unsigned long long)rec->bytes, (unsigned long long)rec->t[NWS_SRC_KERNEL].count,
				       (unsigned long long)rec->t[NWS_SRC_PROXY].count,
				       (unsigned long long)rec->t[NWS_SRC_CPU].count,
				       a.valid ? nws_src_name((unsigned)a.src) : "none", a.mean_us, a.busbw_gbs);
			}
		}
	}
	uint64_t comms[256];
	size_t nc = nw_sf_comms(&set, comms, NW_ARRAY_LEN(comms));
	for (size_t i = 0; i < nc && i < NW_ARRAY_LEN(comms); i++) {
		struct nw_sf_late late[64];
		size_t n = nw_sf_stragglers(&set, comms[i], 0, late, NW_ARRAY_LEN(late));
		if (n)
			printf("straggler comm=%016llx rank=%d mean_late_us=%.1f nlast=%llu nseq=%llu\n",
			       (unsigned long long)comms[i], late[0].rank, late[0].mean_late_us,
			       (unsigned long long)late[0].nlast, (unsigned long long)late[0].nseq);
	}
	for (size_t i = 0; i < set.nbad; i++)
		printf("bad file=%s why=%s\n", set.bad[i].path, set.bad[i].why);
	nw_sf_set_release(&set);
	return nw_finish_stdout() ? 1 : 0;
}
