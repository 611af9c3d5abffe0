/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of MPI that comm/ uses, for code built under NW_HAVE_MPI.
 *
 * Built with NW_MPI_DL=1 (the portable build), nothing of MPI is needed at
 * build or load time: Open MPI's ABI is declared here and libmpi.so.40 is
 * opened by nw_mpi_load() when the process was started by an MPI launcher.
 * Open MPI (and HPC-X, which is Open MPI) exports its predefined handles as
 * global objects whose addresses are the handles (MPI_COMM_WORLD is
 * &ompi_mpi_comm_world), so they are resolved with dlsym like the functions.
 * MPICH and its derivatives use integer handles and libmpi.so.12: a
 * different ABI, not supported by this build (use torchrun's variables, or
 * build from source against MPICH's mpicc).
 *
 * Without NW_MPI_DL this is <mpi.h> and nw_mpi_load() does nothing.
 * The MPI_* names below are macros over one table of pointers, so no symbol
 * of MPI's own name is defined by ncclwatch.
 * (No mpi_abi.c: mpi_dl.c implements the loader.)
 */
#ifndef NW_COMM_MPI_ABI_H
#define NW_COMM_MPI_ABI_H

#include <stddef.h>

#if NW_MPI_DL

typedef struct nw_ompi_comm *MPI_Comm;
typedef struct nw_ompi_datatype *MPI_Datatype;
typedef struct nw_ompi_op *MPI_Op;
typedef struct nw_ompi_info *MPI_Info;
typedef struct nw_ompi_errhandler *MPI_Errhandler;
typedef struct nw_ompi_status MPI_Status; /* only ever MPI_STATUS_IGNORE here */
typedef struct nw_ompi_request *MPI_Request;

/* Open MPI's constants (mpi.h of 4.x and 5.x). */
#define MPI_SUCCESS 0
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_LIBRARY_VERSION_STRING 256
#define MPI_THREAD_SERIALIZED 2
#define MPI_COMM_TYPE_SHARED 0
#define MPI_IN_PLACE ((void *)1)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)

/* The entry points and predefined handles comm/ uses, filled by nw_mpi_load(). */
struct nw_mpi_api {
	int (*Initialized)(int *);
	int (*Init_thread)(int *, char ***, int, int *);
	int (*Finalized)(int *);
	int (*Finalize)(void);
	int (*Abort)(MPI_Comm, int);
	int (*Error_string)(int, char *, int *);
	int (*Get_library_version)(char *, int *);
	int (*Comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
	int (*Comm_rank)(MPI_Comm, int *);
	int (*Comm_size)(MPI_Comm, int *);
	int (*Comm_split_type)(MPI_Comm, int, int, MPI_Info, MPI_Comm *);
	int (*Comm_free)(MPI_Comm *);
	int (*Barrier)(MPI_Comm);
	int (*Bcast)(void *, int, MPI_Datatype, int, MPI_Comm);
	int (*Allgather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
	int (*Allreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
	int (*Reduce)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
	int (*Reduce_scatter_block)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
	int (*Alltoall)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
	int (*Gather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
	int (*Scatter)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
	int (*Sendrecv)(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int, int,
	                MPI_Comm, MPI_Status *);
	int (*Sendrecv_replace)(void *, int, MPI_Datatype, int, int, int, int, MPI_Comm, MPI_Status *);
	/* Nonblocking forms, so that a wait can end at a deadline (-T). */
	int (*Comm_dup)(MPI_Comm, MPI_Comm *);
	int (*Test)(MPI_Request *, int *, MPI_Status *);
	int (*Isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
	int (*Irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
	int (*Ibarrier)(MPI_Comm, MPI_Request *);
	int (*Ibcast)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
	int (*Iallgather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, MPI_Request *);
	int (*Iallreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
	int (*Ireduce)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm, MPI_Request *);
	int (*Ireduce_scatter_block)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
	int (*Ialltoall)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, MPI_Request *);
	int (*Igather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
	int (*Iscatter)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
	/* bench's alltoallv and NCCL_TESTS_SPLIT */
	int (*Ialltoallv)(const void *, const int *, const int *, MPI_Datatype, void *, const int *, const int *,
	                  MPI_Datatype, MPI_Comm, MPI_Request *);
	int (*Comm_split)(MPI_Comm, int, int, MPI_Comm *);
	MPI_Comm comm_world;
	MPI_Info info_null;
	MPI_Errhandler errors_return;
	MPI_Datatype byte, int8, uint8, int32, uint32, int64, uint64, flt, dbl, datatype_null;
	MPI_Op sum, prod, max, min;
};
extern struct nw_mpi_api nw_mpi;

#define MPI_Initialized nw_mpi.Initialized
#define MPI_Init_thread nw_mpi.Init_thread
#define MPI_Finalized nw_mpi.Finalized
#define MPI_Finalize nw_mpi.Finalize
#define MPI_Abort nw_mpi.Abort
#define MPI_Error_string nw_mpi.Error_string
#define MPI_Get_library_version nw_mpi.Get_library_version
#define MPI_Comm_set_errhandler nw_mpi.Comm_set_errhandler
#define MPI_Comm_rank nw_mpi.Comm_rank
#define MPI_Comm_size nw_mpi.Comm_size
#define MPI_Comm_split_type nw_mpi.Comm_split_type
#define MPI_Comm_free nw_mpi.Comm_free
#define MPI_Barrier nw_mpi.Barrier
#define MPI_Bcast nw_mpi.Bcast
#define MPI_Allgather nw_mpi.Allgather
#define MPI_Allreduce nw_mpi.Allreduce
#define MPI_Reduce nw_mpi.Reduce
#define MPI_Reduce_scatter_block nw_mpi.Reduce_scatter_block
#define MPI_Alltoall nw_mpi.Alltoall
#define MPI_Gather nw_mpi.Gather
#define MPI_Scatter nw_mpi.Scatter
#define MPI_Sendrecv nw_mpi.Sendrecv
#define MPI_Sendrecv_replace nw_mpi.Sendrecv_replace
#define MPI_Comm_dup nw_mpi.Comm_dup
#define MPI_Test nw_mpi.Test
#define MPI_Isend nw_mpi.Isend
#define MPI_Irecv nw_mpi.Irecv
#define MPI_Ibarrier nw_mpi.Ibarrier
#define MPI_Ibcast nw_mpi.Ibcast
#define MPI_Iallgather nw_mpi.Iallgather
#define MPI_Iallreduce nw_mpi.Iallreduce
#define MPI_Ireduce nw_mpi.Ireduce
#define MPI_Ireduce_scatter_block nw_mpi.Ireduce_scatter_block
#define MPI_Ialltoall nw_mpi.Ialltoall
#define MPI_Igather nw_mpi.Igather
#define MPI_Iscatter nw_mpi.Iscatter
#define MPI_Ialltoallv nw_mpi.Ialltoallv
#define MPI_Comm_split nw_mpi.Comm_split

#define MPI_COMM_WORLD nw_mpi.comm_world
#define MPI_INFO_NULL nw_mpi.info_null
#define MPI_ERRORS_RETURN nw_mpi.errors_return
#define MPI_BYTE nw_mpi.byte
#define MPI_INT8_T nw_mpi.int8
#define MPI_UINT8_T nw_mpi.uint8
#define MPI_INT32_T nw_mpi.int32
#define MPI_UINT32_T nw_mpi.uint32
#define MPI_INT64_T nw_mpi.int64
#define MPI_UINT64_T nw_mpi.uint64
#define MPI_FLOAT nw_mpi.flt
#define MPI_DOUBLE nw_mpi.dbl
#define MPI_DATATYPE_NULL nw_mpi.datatype_null
#define MPI_SUM nw_mpi.sum
#define MPI_PROD nw_mpi.prod
#define MPI_MAX nw_mpi.max
#define MPI_MIN nw_mpi.min

/*
 * Opens Open MPI's libmpi.so.40 (or $NCCLWATCH_MPI_LIB) once and fills
 * nw_mpi. 0 on success; -1 with err saying what is missing and what to do.
 * The library stays loaded for the life of the process.
 */
int nw_mpi_load(char *err, size_t errlen);

#else

#include <mpi.h>

static inline int nw_mpi_load(char *err, size_t errlen)
{
	(void)err; (void)errlen;
	return 0;
}

#endif
#endif
