/*
 * Open MPI opened at run time (see mpi_abi.h): the portable build needs no
 * MPI to start, and opens libmpi.so.40 only when an MPI launcher started it.
 */
#if NW_HAVE_MPI && NW_MPI_DL

#include "comm/mpi_abi.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

struct nw_mpi_api nw_mpi;

/* Functions are stored through void ** so one table fills every type. */
#define FN(f) { (void **)(void *)&nw_mpi.f, "MPI_" #f }
#define OBJ(f, sym) { (void **)(void *)&nw_mpi.f, sym }

/*
 * Resolves every entry of nw_mpi from handle h. 0, or -1 with err naming
 * the first symbol that is missing (the library is then not Open MPI's).
 */
static int resolve(void *h, const char *path, char *err, size_t errlen)
{
	const struct { void **slot; const char *name; } syms[] = {
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
	for (size_t i = 0; i < NW_ARRAY_LEN(syms); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot)
			return nw_seterr(err, errlen,
			                 "'%s' lacks %s: it is not Open MPI's libmpi.so.40 (MPICH's ABI is not "
			                 "supported by this build); point NCCLWATCH_MPI_LIB at Open MPI's or HPC-X's "
			                 "libmpi.so.40, or launch with torchrun instead", path, syms[i].name);
	}
	return 0;
}

int nw_mpi_load(char *err, size_t errlen)
{
	static int loaded;
	if (loaded)
		return 0;
	const char *env = getenv("NCCLWATCH_MPI_LIB");
	const char *path = env && *env ? env : "libmpi.so.40";
	/* Global: Open MPI's own plugins, opened by libmpi, resolve its symbols. */
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *why = dlerror();
		return nw_seterr(err, errlen,
		                 "MPI is needed (an MPI launcher started this process, or --backend mpi), but Open MPI's "
		                 "library could not be opened (%s); "
		                 "put the directory of the launcher's libmpi.so.40 on LD_LIBRARY_PATH or set "
		                 "NCCLWATCH_MPI_LIB=PATH, or launch with torchrun / RANK, WORLD_SIZE, "
		                 "MASTER_ADDR, MASTER_PORT instead", why ? why : path);
	}
	if (resolve(h, path, err, errlen) != 0) {
		memset(&nw_mpi, 0, sizeof(nw_mpi));
		dlclose(h);
		return -1;
	}
	loaded = 1;
	return 0;
}

#else

/* Built with MPI linked in, or without MPI: nothing is opened at run time. */
typedef int nw_mpi_dl_unused;

#endif
