/* SPDX-License-Identifier: Apache-2.0 */
/*
 * group: the processes of one run and the small host-side exchanges they
 * need (the NCCL unique id, per-rank times, hostnames). Launched by MPI
 * (mpirun, srun with PMI/PMIx), by env rendezvous (torchrun, Kubernetes,
 * Slurm variables) or alone.
 */
#ifndef NW_GROUP_H
#define NW_GROUP_H

#include <stddef.h>

enum nw_group_kind { NW_GROUP_LOCAL, NW_GROUP_MPI, NW_GROUP_ENV };

struct nw_group {
	enum nw_group_kind kind;
	int rank, size;            /* of processes */
	int local_rank, local_size;
	const char *kind_name;     /* "local", "mpi", "env" */
	char host[64];
	double timeout_s;          /* an exchange not done in this long fails, naming who is missing; 0: no limit */
	void *priv;
};

/* Is this process started by an MPI launcher (mpirun, srun --mpi)? */
int nw_group_mpi_launched(void);

/*
 * Join the run's process group: MPI when launched by MPI (or force_mpi),
 * env rendezvous when RANK/WORLD_SIZE or Slurm variables say so, else a
 * group of one. 'fingerprint' must be equal on every process (tool
 * version and arguments): a mismatch is refused by name. 0; -1 with err;
 * -2 with err when the launcher's variables are wrong (a usage error).
 */
int nw_group_open(struct nw_group **out, int force_mpi, const char *fingerprint, double timeout_s,
                  char *err, size_t errlen);
int nw_group_bcast(struct nw_group *g, void *buf, size_t len, int root, char *err, size_t errlen);
int nw_group_allgather(struct nw_group *g, const void *mine, void *all, size_t len, char *err, size_t errlen);
int nw_group_barrier(struct nw_group *g, char *err, size_t errlen);
/*
 * After a timeout in the run's own traffic (NCCL), every rank that timed
 * out calls this: within a few seconds it learns which ranks still answer.
 * 0 when every rank answered (or alone); -1 with err naming the ranks that
 * did not (stopped, dead or unreachable).
 */
int nw_group_roll_call(struct nw_group *g, char *err, size_t errlen);

/*
 * Tell the other processes to stop (best effort), with the reason. Under
 * env rendezvous they hear it at once, naming this rank. Under MPI the job
 * is torn down (MPI_Abort) when this process exits, so that the caller can
 * still report why; nw_group_close then leaves MPI unfinalized.
 */
void nw_group_abort(struct nw_group *g, const char *why);
void nw_group_close(struct nw_group *g);

#endif
