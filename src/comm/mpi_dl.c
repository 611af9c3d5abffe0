/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open MPI opened at run time (see mpi_abi.h): the portable build needs no
 * MPI to start, and opens libmpi.so.40 only when an MPI launcher started it.
 */
#if NW_HAVE_MPI && NW_MPI_DL

#include "comm/mpi_abi.h"

#include "util/dl.h"
#include "util/util.h"

struct nw_mpi_api nw_mpi;

/* Functions are stored through void ** so one table fills every type. */
#define FN(f) { (void **)(void *)&nw_mpi.f, { "MPI_" #f }, 1 }
#define OBJ(f, sym) { (void **)(void *)&nw_mpi.f, { sym }, 1 }

/* Every entry of nw_mpi, all required (without one, the library is not Open MPI's). */
static const struct nw_dl_sym syms[] = {
	FN(Initialized), FN(Init_thread), FN(Finalized), FN(Finalize), FN(Abort),
	FN(Error_string), FN(Get_library_version), FN(Comm_set_errhandler), FN(Comm_rank),
	FN(Comm_size), FN(Comm_split_type), FN(Comm_free), FN(Barrier), FN(Bcast),
	FN(Allgather), FN(Allreduce), FN(Reduce), FN(Reduce_scatter_block), FN(Alltoall),
	FN(Gather), FN(Scatter), FN(Sendrecv), FN(Sendrecv_replace), FN(Comm_dup), FN(Test),
	FN(Isend), FN(Irecv), FN(Ibarrier), FN(Ibcast), FN(Iallgather), FN(Iallreduce), FN(Ireduce),
	FN(Ireduce_scatter_block), FN(Ialltoall), FN(Igather), FN(Iscatter),
	FN(Ialltoallv), FN(Comm_split),
	OBJ(comm_world, "ompi_mpi_comm_world"), OBJ(info_null, "ompi_mpi_info_null"),
	OBJ(errors_return, "ompi_mpi_errors_return"), OBJ(byte, "ompi_mpi_byte"),
	OBJ(int8, "ompi_mpi_int8_t"), OBJ(uint8, "ompi_mpi_uint8_t"),
	OBJ(int32, "ompi_mpi_int32_t"), OBJ(uint32, "ompi_mpi_uint32_t"),
	OBJ(int64, "ompi_mpi_int64_t"), OBJ(uint64, "ompi_mpi_uint64_t"),
	OBJ(flt, "ompi_mpi_float"), OBJ(dbl, "ompi_mpi_double"),
	OBJ(datatype_null, "ompi_mpi_datatype_null"), OBJ(sum, "ompi_mpi_op_sum"),
	OBJ(prod, "ompi_mpi_op_prod"), OBJ(max, "ompi_mpi_op_max"), OBJ(min, "ompi_mpi_op_min"),
};

/* Global: Open MPI's own plugins, opened by libmpi, resolve its symbols. */
static const struct nw_dl_lib libmpi = { "NCCLWATCH_MPI_LIB", { "libmpi.so.40" }, 1 };
static struct nw_dl_once once = NW_DL_ONCE_INIT;

static int load(const void *arg, char *err, size_t errlen)
{
	(void)arg;
	struct nw_dl dl;
	char why[NW_ERRLEN];
	if (!nw_dl_load(&libmpi, syms, NW_ARRAY_LEN(syms), &dl, why, sizeof(why)))
		return 0;
	if (dl.missing)
		return nw_seterr(err, errlen,
		                 "%s: it is not Open MPI's libmpi.so.40 (MPICH's ABI is not supported by this build); "
		                 "point NCCLWATCH_MPI_LIB at Open MPI's or HPC-X's libmpi.so.40, or launch with "
		                 "torchrun instead", why);
	return nw_seterr(err, errlen,
	                 "MPI is needed (an MPI launcher started this process, or --backend mpi), but Open MPI's "
	                 "library could not be opened (%s); "
	                 "put the directory of the launcher's libmpi.so.40 on LD_LIBRARY_PATH or set "
	                 "NCCLWATCH_MPI_LIB=PATH, or launch with torchrun / RANK, WORLD_SIZE, "
	                 "MASTER_ADDR, MASTER_PORT instead", dl.why);
}

int nw_mpi_load(char *err, size_t errlen)
{
	return nw_dl_once(&once, load, NULL, err, errlen);
}

#else

/* Built with MPI linked in, or without MPI: nothing is opened at run time. */
typedef int nw_mpi_dl_unused;

#endif
