// bine/mpi_signatures.hpp: the function types of the MPI target's generated collectives
// (docs/cli.md, "compile"), for code that holds them in tables: the PMPI library
// (pmpi/bine_pmpi.cpp) and bine-tune-bench (bench/tune_bench.cpp).
#pragma once
#include <mpi.h>

#include <cstddef>

namespace bine::mpi {

/// allreduce, scan, exscan, reduce_scatter (sendbuf, recvbuf, count, datatype, op, comm).
using ReduceAllFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
/// bcast (buffer, count, datatype, root, comm).
using BcastFn = int (*)(void*, size_t, MPI_Datatype, int, MPI_Comm);
/// reduce (sendbuf, recvbuf, count, datatype, op, root, comm).
using ReduceFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);
/// allgather, alltoall (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm).
using BlocksFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
/// gather, scatter (the same with root before comm).
using RootedBlocksFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm);
/// allgather's irregular form (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
/// recvtype, comm).
using AllgathervFn = int (*)(const void*, size_t, MPI_Datatype, void*, const size_t*, const size_t*, MPI_Datatype,
                             MPI_Comm);
/// reduce_scatter's irregular form (sendbuf, recvbuf, recvcounts, datatype, op, comm).
using ReduceScatterVFn = int (*)(const void*, void*, const size_t*, MPI_Datatype, MPI_Op, MPI_Comm);
/// gather's irregular form (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
/// recvtype, root, comm).
using GathervFn = int (*)(const void*, size_t, MPI_Datatype, void*, const size_t*, const size_t*, MPI_Datatype, int,
                          MPI_Comm);
/// scatter's irregular form (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
/// recvtype, root, comm).
using ScattervFn = int (*)(const void*, const size_t*, const size_t*, MPI_Datatype, void*, size_t, MPI_Datatype, int,
                           MPI_Comm);
/// alltoall's irregular form (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
/// rdispls, recvtype, comm).
using AlltoallvFn = int (*)(const void*, const size_t*, const size_t*, MPI_Datatype, void*, const size_t*, const size_t*,
                            MPI_Datatype, MPI_Comm);
/// barrier (comm).
using BarrierFn = int (*)(MPI_Comm);

/// The irregular forms' nonblocking functions (`<schedule>_v_i`): the same arguments, then
/// the generated header's request (`<prefix>request*`, an opaque pointer here).
template <class Req>
struct VNb {
  using ReduceScatter = int (*)(const void*, void*, const size_t*, MPI_Datatype, MPI_Op, MPI_Comm, Req*);
  using Allgather = int (*)(const void*, size_t, MPI_Datatype, void*, const size_t*, const size_t*, MPI_Datatype,
                            MPI_Comm, Req*);
  using Gather = int (*)(const void*, size_t, MPI_Datatype, void*, const size_t*, const size_t*, MPI_Datatype, int,
                         MPI_Comm, Req*);
  using Scatter = int (*)(const void*, const size_t*, const size_t*, MPI_Datatype, void*, size_t, MPI_Datatype, int,
                          MPI_Comm, Req*);
  using Alltoall = int (*)(const void*, const size_t*, const size_t*, MPI_Datatype, void*, const size_t*, const size_t*,
                           MPI_Datatype, MPI_Comm, Req*);
};

}  // namespace bine::mpi
