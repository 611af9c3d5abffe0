/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded waits on MPI's nonblocking operations, for comm/ only: MPI's
 * blocking calls never return while a peer is stopped, so every exchange
 * and collective here is started nonblocking and waited on against a
 * deadline, and a timeout names the ranks that did not answer.
 */
#ifndef NW_COMM_MPI_WAIT_H
#define NW_COMM_MPI_WAIT_H

#if NW_HAVE_MPI
#include <stddef.h>

#include "comm/group.h"
#include "comm/mpi_abi.h"

/*
 * Waits until the n requests in req are complete, at most timeout_s
 * (0: no limit). 0 when done; -1 with err on an MPI error, or on timeout
 * naming 'what', the limit and the ranks of g that did not answer a
 * roll call (they are stopped, dead or unreachable). After a timeout the
 * requests stay pending: the caller ends the job (nw_group_abort).
 */
int nw_mpi_wait(struct nw_group *g, MPI_Request *req, int n, double timeout_s, const char *what,
                char *err, size_t errlen);
#endif

#endif
