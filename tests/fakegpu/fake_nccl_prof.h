/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_nccl_prof: the fake NCCL's profiler plugin support, as NCCL 2.23 to
 * 2.30 load and drive a plugin (fake_nccl_prof.c; the layouts come from
 * profiler_abi.h). Internal to the fake NCCL (libnccl.so.2).
 *
 * The plugin is opened at the first communicator's init the way the
 * version FAKE_NCCL_VERSION names does (NCCL_PROFILER_PLUGIN, or
 * libnccl-profiler.so; the newest table that version knows first; no
 * plugin below 2.23), and each communicator of more than one rank gets
 * init and finalize. Every call launched raises, as NCCL does, a Group
 * event and its Coll or P2p event (started and stopped: enqueued) when the
 * activation mask asks for them; when the mask also asked for KernelCh
 * (v3+), the op's kernel channel events come once it has run (timestamps
 * from CLOCK_REALTIME as the fake GPU's clock; v3 carries none). A call
 * replayed from a CUDA graph raises nothing (its events came at capture,
 * its kernel events at its first run).
 */
#ifndef FAKE_NCCL_PROF_H
#define FAKE_NCCL_PROF_H

#include <stddef.h>
#include <stdint.h>

/* Per communicator: the plugin's context, and NCCL's sequence numbers per function. */
struct fprof_comm {
	void *ctx;              /* NULL: not watched (no plugin, or one rank) */
	uint64_t hash;
	int n, rank;
	uint64_t seq[16];
};

/* A communicator of n ranks whose unique id is id (128 bytes) was made: init of the plugin, if any. */
void fprof_comm_init(struct fprof_comm *p, const unsigned char *id, int n, int rank, int version);
/* It is going away: the plugin's finalize. */
void fprof_comm_fini(struct fprof_comm *p);
/*
 * One call launched: kind numbers its function (0 to 15: its sequence
 * numbers), func is NCCL's name ("AllReduce", "Send"), dtype the
 * ncclDataType_t number, root the root or the peer, coll 0 for send and
 * recv. Returns a token for fprof_ran (0: nothing to follow).
 */
uint64_t fprof_launch(struct fprof_comm *p, int kind, const char *func, int coll, int dtype, size_t count, int root);
/* The call of token ran (the first time): its kernel channel events. */
void fprof_ran(uint64_t token);

#endif
