// The generated library's schedules as a table, and one call of any of them or of the MPI
// library's own collective: the registry shared by the measuring programs
// (bench/tune_bench.cpp, bine-tune-bench; bench/smpi_bench.cpp, bine-smpi-bench).
// Include after "bine_lib.h" (its BCC_<COLLECTIVE>_SCHEDULES macros).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "bine/mpi_signatures.hpp"

namespace bine::bench {

using bine::mpi::BarrierFn;
using bine::mpi::BcastFn;
using bine::mpi::BlocksFn;
using bine::mpi::ReduceAllFn;
using bine::mpi::ReduceFn;
using bine::mpi::RootedBlocksFn;

/// One candidate: a generated function (any of the types above) and its applicability.
struct Entry {
  const char* name;  ///< schedule name (the function's without "bcc_"), or "mpi"
  void* fn;          ///< null for "mpi"
  int (*applicable)(int);
};

#define BINE_TB_ENTRY(f, ord, br) {#f + 4, reinterpret_cast<void*>(&f), &f##_applicable},
inline const Entry kAllreduce[] = {BCC_ALLREDUCE_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kBcast[] = {BCC_BCAST_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kReduce[] = {BCC_REDUCE_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kAllgather[] = {BCC_ALLGATHER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kGather[] = {BCC_GATHER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kScatter[] = {BCC_SCATTER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kReduceScatter[] = {BCC_REDUCE_SCATTER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kAlltoall[] = {BCC_ALLTOALL_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kScan[] = {BCC_SCAN_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kExscan[] = {BCC_EXSCAN_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
inline const Entry kBarrier[] = {BCC_BARRIER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
#undef BINE_TB_ENTRY

/// One collective: its key (the PMPI table's) and its candidates, "mpi" last.
struct Coll {
  const char* key;
  const Entry* entries;
  size_t n;
};
#define BINE_TB_COLL(key, arr) {key, arr, sizeof(arr) / sizeof(arr[0])}
inline const Coll kColls[] = {BINE_TB_COLL("allreduce", kAllreduce), BINE_TB_COLL("bcast", kBcast),
                              BINE_TB_COLL("reduce", kReduce),       BINE_TB_COLL("allgather", kAllgather),
                              BINE_TB_COLL("gather", kGather),       BINE_TB_COLL("scatter", kScatter),
                              BINE_TB_COLL("reduce_scatter_block", kReduceScatter),
                              BINE_TB_COLL("alltoall", kAlltoall),   BINE_TB_COLL("scan", kScan),
                              BINE_TB_COLL("exscan", kExscan),       BINE_TB_COLL("barrier", kBarrier)};
#undef BINE_TB_COLL

/// One call of `e` for collective `key` with `n` elements of `t` (one rank's block for the
/// rank-indexed collectives: allgather, gather, scatter, reduce_scatter_block, alltoall),
/// MPI_SUM, root 0, from `s` into `r` (bcast: in `r`); both hold at least p * n elements.
/// Returns the call's MPI error code.
inline int call(const char* key, const Entry& e, char* s, char* r, size_t n, MPI_Datatype t, MPI_Comm comm) {
  const std::string k = key;
  const bool mpi = e.fn == nullptr;
  if (k == "allreduce")
    return mpi ? MPI_Allreduce(s, r, int(n), t, MPI_SUM, comm) : reinterpret_cast<ReduceAllFn>(e.fn)(s, r, n, t, MPI_SUM, comm);
  if (k == "scan")
    return mpi ? MPI_Scan(s, r, int(n), t, MPI_SUM, comm) : reinterpret_cast<ReduceAllFn>(e.fn)(s, r, n, t, MPI_SUM, comm);
  if (k == "exscan")
    return mpi ? MPI_Exscan(s, r, int(n), t, MPI_SUM, comm) : reinterpret_cast<ReduceAllFn>(e.fn)(s, r, n, t, MPI_SUM, comm);
  if (k == "bcast") return mpi ? MPI_Bcast(r, int(n), t, 0, comm) : reinterpret_cast<BcastFn>(e.fn)(r, n, t, 0, comm);
  if (k == "reduce")
    return mpi ? MPI_Reduce(s, r, int(n), t, MPI_SUM, 0, comm) : reinterpret_cast<ReduceFn>(e.fn)(s, r, n, t, MPI_SUM, 0, comm);
  if (k == "allgather")
    return mpi ? MPI_Allgather(s, int(n), t, r, int(n), t, comm) : reinterpret_cast<BlocksFn>(e.fn)(s, n, t, r, n, t, comm);
  if (k == "alltoall")
    return mpi ? MPI_Alltoall(s, int(n), t, r, int(n), t, comm) : reinterpret_cast<BlocksFn>(e.fn)(s, n, t, r, n, t, comm);
  if (k == "gather")
    return mpi ? MPI_Gather(s, int(n), t, r, int(n), t, 0, comm) : reinterpret_cast<RootedBlocksFn>(e.fn)(s, n, t, r, n, t, 0, comm);
  if (k == "scatter")
    return mpi ? MPI_Scatter(s, int(n), t, r, int(n), t, 0, comm) : reinterpret_cast<RootedBlocksFn>(e.fn)(s, n, t, r, n, t, 0, comm);
  if (k == "reduce_scatter_block")
    return mpi ? MPI_Reduce_scatter_block(s, r, int(n), t, MPI_SUM, comm)
               : reinterpret_cast<ReduceAllFn>(e.fn)(s, r, n, t, MPI_SUM, comm);
  return mpi ? MPI_Barrier(comm) : reinterpret_cast<BarrierFn>(e.fn)(comm);
}

}  // namespace bine::bench
