// Generated collectives against the Bine authors' hand-written C (libbine, HLC-Lab/pico,
// include/libbine.h) and against the MPI library's own collective, call for call (issue 48).
// For each pair (a generated schedule and the libbine function of the same algorithm) and
// each size, the three calls are timed side by side in one loop: the order rotates with the
// repetition, every call after its own barrier; a figure is the median over repetitions of
// the slowest rank's time. Ratios: generated / libbine and generated / MPI; geomeans at the end.
// Before timing, each call's result is compared with the MPI library's (`WRONG` in the row and
// exit status 1 when the generated result differs; `n/a` for a libbine function that returns an
// error or differs at this p: its documented limits, e.g. bcast_bine_bdw_static's).
//
// Sizes: the whole vector for allreduce, bcast and reduce; one rank's block for allgather,
// gather, scatter, reduce_scatter (recvcount) and alltoall (the OSU convention). MPI_INT,
// MPI_SUM, root 0.
//
// libbine is not part of bine-cc: bench/libbine_compare.sh builds it from a pico checkout at
// bench time and links it here. usage: mpirun -np P bench_libbine_compare [REPS]
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bine_lib.h"

extern "C" {
// include/libbine.h of HLC-Lab/pico (the prototypes this program calls).
int allreduce_recursivedoubling(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
int allreduce_ring(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
int allreduce_rabenseifner(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
int allreduce_bine_lat(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
int allreduce_bine_bdw_static(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
int allgather_recursivedoubling(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
int allgather_ring(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
int allgather_bine_permute_static(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
int allgather_bine_send_static(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
int alltoall_bine(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
int bcast_bine_lat(void*, size_t, MPI_Datatype, int, MPI_Comm);
int bcast_bine_bdw_static(void*, size_t, MPI_Datatype, int, MPI_Comm);
int reduce_bine_lat(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);
int reduce_bine_bdw(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);
int reduce_scatter_recursivehalving(const void*, void*, const int[], MPI_Datatype, MPI_Op, MPI_Comm);
int reduce_scatter_bine_static(const void*, void*, const int[], MPI_Datatype, MPI_Op, MPI_Comm);
int gather_bine(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm);
int scatter_bine(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm);
}

namespace {

enum class Kind { allreduce, allgather, alltoall, bcast, reduce, reduce_scatter, gather, scatter };

/// One pair: the generated function and libbine's, as one signature each per kind.
struct Pair {
  Kind kind;
  const char* schedule;  ///< the generated schedule (bcc_<schedule>)
  const char* libbine;   ///< the libbine function
  void* gen;
  void* lib;
  int (*applicable)(int);
};

#define P(kind, sched, lib) {Kind::kind, #sched, #lib, reinterpret_cast<void*>(&bcc_##sched), reinterpret_cast<void*>(&lib), &bcc_##sched##_applicable}
const Pair kPairs[] = {
    P(allreduce, recursive_doubling_allreduce, allreduce_recursivedoubling),
    P(allreduce, ring_allreduce, allreduce_ring),
    P(allreduce, rabenseifner_allreduce, allreduce_rabenseifner),
    P(allreduce, bine_allreduce_lat, allreduce_bine_lat),
    P(allreduce, bine_allreduce_bdw, allreduce_bine_bdw_static),
    P(allgather, recursive_doubling_allgather, allgather_recursivedoubling),
    P(allgather, ring_allgather, allgather_ring),
    P(allgather, bine_allgather_permuted, allgather_bine_permute_static),
    P(allgather, bine_allgather_exchange, allgather_bine_send_static),
    P(alltoall, bine_alltoall, alltoall_bine),
    P(bcast, bine_bcast_lat, bcast_bine_lat),
    P(bcast, bine_bcast_bdw, bcast_bine_bdw_static),
    P(reduce, bine_reduce_lat, reduce_bine_lat),
    P(reduce, bine_reduce_bdw, reduce_bine_bdw),
    P(reduce_scatter, recursive_halving_reduce_scatter, reduce_scatter_recursivehalving),
    P(reduce_scatter, bine_reduce_scatter, reduce_scatter_bine_static),
    P(gather, bine_gather, gather_bine),
    P(scatter, bine_scatter, scatter_bine),
};
#undef P

using AllreduceFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
using BlocksFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
using RootedFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm);
using BcastFn = int (*)(void*, size_t, MPI_Datatype, int, MPI_Comm);
using ReduceFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);
using RsIntFn = int (*)(const void*, void*, const int[], MPI_Datatype, MPI_Op, MPI_Comm);

int g_p = 1, g_rank = 0;
std::vector<int> g_rcounts;

/// One call: impl 0 generated, 1 libbine, 2 MPI. n: elements (a block for the rank-indexed kinds).
int call(const Pair& pr, int impl, int* s, int* r, size_t n) {
  void* f = impl == 0 ? pr.gen : pr.lib;
  const MPI_Comm w = MPI_COMM_WORLD;
  switch (pr.kind) {
    case Kind::allreduce:
      return impl == 2 ? MPI_Allreduce(s, r, int(n), MPI_INT, MPI_SUM, w)
                       : reinterpret_cast<AllreduceFn>(f)(s, r, n, MPI_INT, MPI_SUM, w);
    case Kind::allgather:
      return impl == 2 ? MPI_Allgather(s, int(n), MPI_INT, r, int(n), MPI_INT, w)
                       : reinterpret_cast<BlocksFn>(f)(s, n, MPI_INT, r, n, MPI_INT, w);
    case Kind::alltoall:
      return impl == 2 ? MPI_Alltoall(s, int(n), MPI_INT, r, int(n), MPI_INT, w)
                       : reinterpret_cast<BlocksFn>(f)(s, n, MPI_INT, r, n, MPI_INT, w);
    case Kind::bcast:
      return impl == 2 ? MPI_Bcast(r, int(n), MPI_INT, 0, w) : reinterpret_cast<BcastFn>(f)(r, n, MPI_INT, 0, w);
    case Kind::reduce:
      return impl == 2 ? MPI_Reduce(s, r, int(n), MPI_INT, MPI_SUM, 0, w)
                       : reinterpret_cast<ReduceFn>(f)(s, r, n, MPI_INT, MPI_SUM, 0, w);
    case Kind::reduce_scatter:
      if (impl == 2) return MPI_Reduce_scatter_block(s, r, int(n), MPI_INT, MPI_SUM, w);
      if (impl == 0) return reinterpret_cast<AllreduceFn>(f)(s, r, n, MPI_INT, MPI_SUM, w);
      g_rcounts.assign(size_t(g_p), int(n));
      return reinterpret_cast<RsIntFn>(f)(s, r, g_rcounts.data(), MPI_INT, MPI_SUM, w);
    case Kind::gather:
      return impl == 2 ? MPI_Gather(s, int(n), MPI_INT, r, int(n), MPI_INT, 0, w)
                       : reinterpret_cast<RootedFn>(f)(s, n, MPI_INT, r, n, MPI_INT, 0, w);
    case Kind::scatter:
      return impl == 2 ? MPI_Scatter(s, int(n), MPI_INT, r, int(n), MPI_INT, 0, w)
                       : reinterpret_cast<RootedFn>(f)(s, n, MPI_INT, r, n, MPI_INT, 0, w);
  }
  return MPI_ERR_OTHER;
}

/// The part of the receive buffer the call defines at this rank (elements).
size_t result_elems(Kind k, size_t n) {
  switch (k) {
    case Kind::allgather:
    case Kind::alltoall: return n * size_t(g_p);
    case Kind::gather: return g_rank == 0 ? n * size_t(g_p) : 0;
    case Kind::reduce: return g_rank == 0 ? n : 0;
    default: return n;
  }
}

void fill(int* s, int* r, size_t elems, int seed) {
  for (size_t i = 0; i < elems; ++i) {
    s[i] = int((i * 7 + size_t(g_rank) * 13 + size_t(seed)) % 1009);
    r[i] = g_rank == 0 ? int(i % 31) : -1;  // bcast: the root's data; scatter reads s
  }
}

/// Whether impl's result equals MPI's at this size (on every rank).
bool agrees(const Pair& pr, int impl, size_t n, std::vector<int>& s, std::vector<int>& r, std::vector<int>& ref) {
  const size_t elems = s.size();
  fill(s.data(), ref.data(), elems, 1);
  int rc = call(pr, 2, s.data(), ref.data(), n);
  fill(s.data(), r.data(), elems, 1);
  rc |= call(pr, impl, s.data(), r.data(), n);
  const size_t m = result_elems(pr.kind, n);
  int ok = rc == MPI_SUCCESS && std::equal(r.begin(), r.begin() + long(m), ref.begin()) ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &g_p);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const int base_reps = argc > 1 ? std::atoi(argv[1]) : 1000;
  const size_t sizes[] = {8, 4096, 65536, 1 << 20};
  if (g_rank == 0) {
    std::printf("# bench_libbine_compare: p = %d; generated vs libbine (HLC-Lab/pico) vs the MPI library's collective\n", g_p);
    std::printf("# median over repetitions of the slowest rank's time, the three calls alternated in one loop, a barrier before each\n");
    std::printf("%-14s %-34s %-34s %7s %10s %10s %10s %8s %8s\n", "collective", "schedule", "libbine", "size", "gen us",
                "libbine us", "MPI us", "gen/lib", "gen/MPI");
  }
  double log_lib = 0, log_mpi = 0;
  int n_lib = 0, n_mpi = 0, status = 0;
  for (const Pair& pr : kPairs) {
    if (!pr.applicable(g_p)) continue;
    for (size_t bytes : sizes) {
      const size_t n = bytes / sizeof(int);
      const size_t elems = n * size_t(g_p) + 1;
      std::vector<int> s(elems), r(elems), ref(elems);
      const bool gen_ok = agrees(pr, 0, n, s, r, ref);
      const bool lib_ok = agrees(pr, 1, n, s, r, ref);
      status |= gen_ok ? 0 : 1;
      const int reps = bytes <= 4096 ? base_reps : bytes <= 65536 ? std::max(base_reps / 5, 10) : std::max(base_reps / 20, 5);
      std::vector<double> t[3];
      for (int rep = 0; rep < reps; ++rep) {
        for (int j = 0; j < 3; ++j) {
          const int impl = (rep + j) % 3;
          if (impl == 1 && !lib_ok) continue;
          MPI_Barrier(MPI_COMM_WORLD);
          const double t0 = MPI_Wtime();
          call(pr, impl, s.data(), r.data(), n);
          double mine = MPI_Wtime() - t0, slowest = 0;
          MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          t[impl].push_back(slowest * 1e6);
        }
      }
      if (g_rank != 0) continue;
      const double g = median(t[0]), m = median(t[2]);
      const double l = lib_ok ? median(t[1]) : 0;
      char lib_us[16] = "n/a", ratio_lib[16] = "-";
      if (lib_ok) {
        std::snprintf(lib_us, sizeof lib_us, "%.2f", l);
        std::snprintf(ratio_lib, sizeof ratio_lib, "%.2f", g / l);
        log_lib += std::log(g / l);
        ++n_lib;
      }
      log_mpi += std::log(g / m);
      ++n_mpi;
      char size[16];
      if (bytes >= 1024)
        std::snprintf(size, sizeof size, bytes >= (1 << 20) ? "%zu MiB" : "%zu KiB", bytes >= (1 << 20) ? bytes >> 20 : bytes >> 10);
      else
        std::snprintf(size, sizeof size, "%zu B", bytes);
      static const char* kNames[] = {"allreduce", "allgather", "alltoall", "bcast", "reduce", "reduce_scatter", "gather", "scatter"};
      std::printf("%-14s %-34s %-34s %7s %10.2f %10s %10.2f %8s %8.2f%s\n", kNames[int(pr.kind)], pr.schedule, pr.libbine,
                  size, g, lib_us, m, ratio_lib, g / m, gen_ok ? "" : "  WRONG");
    }
  }
  if (g_rank == 0)
    std::printf("# geomean gen/libbine %.3f over %d cells; gen/MPI %.3f over %d cells\n",
                n_lib ? std::exp(log_lib / n_lib) : 0.0, n_lib, n_mpi ? std::exp(log_mpi / n_mpi) : 0.0, n_mpi);
  MPI_Finalize();
  return status;
}
