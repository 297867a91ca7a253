// bine-tune-bench: the measurement behind `bine-cc tune --measure` (docs/pmpi.md,
// "Tables from measurement"). An OSU-style loop over every schedule of the library it is
// built with (the registry of the generated header, the same functions the PMPI library
// calls) and over the MPI library's own collective ("mpi"), on the current machine.
//
//   mpirun -np P bine-tune-bench BYTES_MIN BYTES_MAX ELEM_SIZE ITERS [SCHEDULE ...]
//
// Sizes: powers of two in [BYTES_MIN, BYTES_MAX] that are multiples of ELEM_SIZE (1, 2, 4
// or 8: MPI_UINT8_T, MPI_UINT16_T, MPI_FLOAT, MPI_DOUBLE; MPI_SUM), counted as the PMPI
// library counts a call (the whole vector for allreduce, reduce, bcast, scan, exscan; one
// rank's block for the others; barrier: 0). ITERS 0 picks max(3, min(50, 2^20 / bytes)).
// With SCHEDULE names, only those (and "mpi"). Root 0. A schedule runs only where
// `_applicable(P) == 1`.
// Per (collective, schedule, bytes): one warm-up call (plans), a barrier, ITERS calls; the
// time is the slowest rank's mean per call. Rank 0 prints one JSON object per line:
//   {"collective": "allreduce", "schedule": "bine_allreduce_lat", "p": 4, "bytes": 64, "us": 12.5}
// and a progress bar on standard error. Exit 1 when a call fails (its error text printed).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bine/mpi_signatures.hpp"
#include "bine_lib.h"

namespace {

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
const Entry kAllreduce[] = {BCC_ALLREDUCE_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kBcast[] = {BCC_BCAST_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kReduce[] = {BCC_REDUCE_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kAllgather[] = {BCC_ALLGATHER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kGather[] = {BCC_GATHER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kScatter[] = {BCC_SCATTER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kReduceScatter[] = {BCC_REDUCE_SCATTER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kAlltoall[] = {BCC_ALLTOALL_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kScan[] = {BCC_SCAN_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kExscan[] = {BCC_EXSCAN_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
const Entry kBarrier[] = {BCC_BARRIER_SCHEDULES(BINE_TB_ENTRY){"mpi", nullptr, nullptr}};
#undef BINE_TB_ENTRY

struct Coll {
  const char* key;  ///< the PMPI table's key
  const Entry* entries;
  size_t n;
};
#define BINE_TB_COLL(key, arr) {key, arr, sizeof(arr) / sizeof(arr[0])}
const Coll kColls[] = {BINE_TB_COLL("allreduce", kAllreduce), BINE_TB_COLL("bcast", kBcast),
                       BINE_TB_COLL("reduce", kReduce),       BINE_TB_COLL("allgather", kAllgather),
                       BINE_TB_COLL("gather", kGather),       BINE_TB_COLL("scatter", kScatter),
                       BINE_TB_COLL("reduce_scatter_block", kReduceScatter),
                       BINE_TB_COLL("alltoall", kAlltoall),   BINE_TB_COLL("scan", kScan),
                       BINE_TB_COLL("exscan", kExscan),       BINE_TB_COLL("barrier", kBarrier)};
#undef BINE_TB_COLL

/// One call of `e` for collective `key` with `n` elements (one rank's block for the
/// rank-indexed collectives), into buffers of at least p * n elements.
int call(const char* key, const Entry& e, char* s, char* r, size_t n, MPI_Datatype t, int p, MPI_Comm comm) {
  const std::string k = key;
  const bool mpi = e.fn == nullptr;
  (void)p;
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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc < 5) {
    if (me == 0) std::fprintf(stderr, "usage: bine-tune-bench BYTES_MIN BYTES_MAX ELEM_SIZE ITERS [SCHEDULE ...]\n");
    MPI_Finalize();
    return 2;
  }
  const uint64_t bmin = std::strtoull(argv[1], nullptr, 10), bmax = std::strtoull(argv[2], nullptr, 10);
  const uint64_t es = std::strtoull(argv[3], nullptr, 10);
  const int iters_arg = std::atoi(argv[4]);
  std::vector<std::string> only(argv + 5, argv + argc);
  MPI_Datatype t = es == 1 ? MPI_UINT8_T : es == 2 ? MPI_UINT16_T : es == 4 ? MPI_FLOAT : es == 8 ? MPI_DOUBLE : MPI_DATATYPE_NULL;
  if (t == MPI_DATATYPE_NULL || bmin > bmax) {
    if (me == 0) std::fprintf(stderr, "bine-tune-bench: ELEM_SIZE must be 1, 2, 4 or 8 and BYTES_MIN <= BYTES_MAX\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<uint64_t> sizes;
  for (uint64_t b = 1; b <= bmax && b != 0; b *= 2)
    if (b >= bmin && b % es == 0) sizes.push_back(b);
  auto wanted = [&](const Entry& e) {
    if (!e.fn) return true;
    if (e.applicable(p) != 1) return false;
    return only.empty() || std::find(only.begin(), only.end(), e.name) != only.end();
  };
  size_t total = 0, done = 0;
  for (const Coll& c : kColls)
    for (size_t i = 0; i < c.n; ++i)
      if (wanted(c.entries[i])) total += std::string(c.key) == "barrier" ? 1 : sizes.size();
  const uint64_t maxb = sizes.empty() ? 0 : sizes.back();
  std::vector<char> s(maxb * uint64_t(p) + 64, 1), r(maxb * uint64_t(p) + 64, 0);
  int status = 0;
  const bool tty = isatty(2) != 0;
  for (const Coll& c : kColls) {
    const bool barrier = std::string(c.key) == "barrier";
    for (size_t i = 0; i < c.n && status == 0; ++i) {
      const Entry& e = c.entries[i];
      if (!wanted(e)) continue;
      for (size_t k = 0; k < (barrier ? 1 : sizes.size()) && status == 0; ++k) {
        const uint64_t bytes = barrier ? 0 : sizes[k];
        const size_t n = size_t(bytes / es);
        const int iters = iters_arg > 0 ? iters_arg : int(std::max<uint64_t>(3, std::min<uint64_t>(50, (1u << 20) / std::max<uint64_t>(bytes, 1))));
        int rc = call(c.key, e, s.data(), r.data(), n, t, p, MPI_COMM_WORLD);  // warm-up: plans
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int it = 0; it < iters && rc == MPI_SUCCESS; ++it) rc = call(c.key, e, s.data(), r.data(), n, t, p, MPI_COMM_WORLD);
        double mine = (MPI_Wtime() - t0) / iters * 1e6, slowest = 0;
        int any_rc = 0;
        MPI_Allreduce(&rc, &any_rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (any_rc != MPI_SUCCESS) {
          if (rc != MPI_SUCCESS) std::fprintf(stderr, "bine-tune-bench: %s %s %llu bytes failed: %s\n", c.key, e.name,
                                              (unsigned long long)bytes, bcc_last_error());
          status = 1;
          break;
        }
        ++done;
        if (me == 0) {
          std::printf("{\"collective\": \"%s\", \"schedule\": \"%s\", \"p\": %d, \"bytes\": %llu, \"us\": %.3f}\n", c.key,
                      e.name, p, (unsigned long long)bytes, slowest);
          // A progress bar on a terminal; elsewhere (logs, CI) one line per tenth.
          const int width = 30, fill = int(double(done) / double(total ? total : 1) * width);
          if (tty)
            std::fprintf(stderr, "\rtune p=%-3d [%.*s%*s] %zu/%zu %-22s%s", p, fill, "##############################",
                         width - fill, "", done, total, c.key, done == total ? "\n" : "");
          else if (done * 10 / total != (done - 1) * 10 / total)
            std::fprintf(stderr, "tune p=%d: %zu/%zu cells measured (%s)\n", p, done, total, c.key);
        }
      }
    }
  }
  std::fflush(stdout);
  MPI_Finalize();
  return status;
}
