/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace: the merged timeline of a job as Chrome/Perfetto trace JSON
 * (job.h): one process track per rank (its rank in its largest
 * communicator), one thread per communicator, an "X" event per operation
 * from its execution start to its end (its enqueue for operations the
 * plugin did not time), times in microseconds from the job's start on the
 * first node's clock, the other nodes' clock offsets applied.
 */
#include "job/job.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* The track (trace pid) of each rank: its world rank, or one past every world rank when two processes share one. */
static void tracks(const struct nw_job_view *v, int *track)
{
	int spare = v->world > 0 ? v->world : 0;
	for (size_t i = 0; i < v->nranks; i++) {
		const struct nw_jv_rank *r = &v->ranks[i];
		int same = -1, taken = 0;
		for (size_t k = 0; k < i; k++) {
			if (v->ranks[k].node == r->node && v->ranks[k].pid == r->pid)
				same = track[k];
			else if (track[k] == r->world)
				taken = 1;
		}
		track[i] = same >= 0 ? same : taken ? spare++ : r->world;
	}
}

/* The communicators as thread ids 1, 2 ... in order of first appearance. */
static int tid_of(const struct nw_job_view *v, uint64_t comm)
{
	int t = 0;
	uint64_t last = 0;
	for (size_t i = 0; i < v->nranks; i++) {
		if (i == 0 || v->ranks[i].comm != last)
			t++;
		last = v->ranks[i].comm;
		if (last == comm)
			return t;
	}
	return t + 1;
}

static json_t *meta(const char *what, int pid, int tid, const char *name)
{
	json_t *e = json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", pid, "args", "name", name);
	if (tid >= 0)
		json_object_set_new(e, "tid", json_integer(tid));
	else
		json_object_set_new(e, "tid", json_integer(0));
	return e;
}

static double us_from(const struct nw_job_view *v, uint64_t t)
{
	return t > v->start_ns ? (double)(t - v->start_ns) / 1e3 : -(double)(v->start_ns - t) / 1e3;
}

static json_t *op_event(const struct nw_job_view *v, const struct nw_jv_rank *r, const struct nw_jop *o, int pid,
                        int tid)
{
	uint64_t s = o->start_ns ? o->start_ns : o->enq_ns, e = o->end_ns > s ? o->end_ns : s;
	json_t *args = json_pack("{s:I, s:I, s:s, s:i, s:s, s:s, s:f}", "seq", (json_int_t)o->seq, "bytes",
	                         (json_int_t)o->bytes, "time_source", nws_src_name(o->src), "channels", o->nch, "algo",
	                         o->algo, "proto", o->proto, "enqueued_us", us_from(v, o->enq_ns));
	if (o->flags & NWS_OPF_SLOW)
		json_object_set_new(args, "slow", json_true());
	if (o->flags & NWS_OPF_INCOMPLETE)
		json_object_set_new(args, "incomplete", json_true());
	json_object_set_new(args, "rank", json_integer(r->rank));
	return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", nws_op_name(o->op), "cat",
	                 o->op >= NWS_OP_SEND && o->op <= NWS_OP_SENDRECV ? "p2p" : "coll", "ph", "X", "ts",
	                 us_from(v, s), "dur", (double)(e - s) / 1e3, "pid", pid, "tid", tid, "args", args);
}

static json_t *offsets(const struct nw_job_view *v)
{
	json_t *a = json_array();
	for (size_t n = 0; n < v->nnodes; n++)
		json_array_append_new(a, json_pack("{s:s, s:f, s:b, s:s}", "host", v->nodes[n].host, "offset_us",
		                                   (double)v->nodes[n].offset_ns / 1e3, "estimated",
		                                   v->nodes[n].offset_known, "how", v->nodes[n].offset_how));
	return a;
}

json_t *nw_job_trace(const struct nw_job_view *v)
{
	json_t *ev = json_array();
	int *track = nw_calloc(v->nranks + 1, sizeof(*track));
	tracks(v, track);
	for (size_t i = 0; i < v->nranks; i++) {
		const struct nw_jv_rank *r = &v->ranks[i];
		int tid = tid_of(v, r->comm);
		char name[160];
		int first = 1;
		for (size_t k = 0; k < i; k++)
			first &= track[k] != track[i];
		if (first) {
			snprintf(name, sizeof(name), "rank %d (%s pid %d)", r->world, r->host, r->pid);
			json_array_append_new(ev, meta("process_name", track[i], -1, name));
			json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "process_sort_index", "ph", "M",
			                                    "pid", track[i], "tid", 0, "args", "sort_index", track[i]));
		}
		snprintf(name, sizeof(name), "comm %016" PRIx64 "%s%s (rank %d of %d)", r->comm, r->name[0] ? " " : "",
		         r->name, r->rank, r->nranks);
		json_array_append_new(ev, meta("thread_name", track[i], tid, name));
		for (size_t k = 0; k < r->ntl; k++)
			json_array_append_new(ev, op_event(v, r, &r->tl[k], track[i], tid));
	}
	free(track);
	return json_pack("{s:o, s:s, s:{s:s, s:I, s:o}}", "traceEvents", ev, "displayTimeUnit", "ms", "otherData", "job",
	                 v->job, "start_ns", (json_int_t)v->start_ns, "clock_offsets", offsets(v));
}
