// Full-buffer passes of local copying per schedule (issue 48, docs/performance.md): for every
// schedule of the generated library that applies at this p, one replayed call (a persistent
// plan: the third call of its shape) with a working buffer of 1 MiB, MPI_INT, MPI_SUM, root 0,
// sendbuf != recvbuf; the bytes the runtime copied locally (bine::mpi::copied_bytes(): the
// working buffer, scratch, the user's buffers; not messages, not reductions), divided by the
// buffer's bytes, maximum and mean over the ranks.
//
// The buffer: `count` x 4 B = 1 MiB for allreduce, reduce, bcast, scan and exscan; p blocks of
// 1 MiB / p for the rank-indexed collectives (allgather, gather, scatter, reduce_scatter_block,
// alltoall), whose working buffer holds p blocks.
//
// This translation unit holds its own definitions of the generated functions, built with
// BINE_COUNT_COPIES (the counter costs an addition per copy; other builds have none).
// usage: mpirun -np P bench_copy_passes [BYTES]   (default 1048576)
#define BINE_COUNT_COPIES 1
#define BINE_IMPLEMENTATION
#include "bine_lib.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_registry.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const size_t bytes = argc > 1 ? size_t(std::strtoull(argv[1], nullptr, 10)) : size_t(1) << 20;
  const size_t total = bytes / sizeof(int);
  if (rank == 0) {
    std::printf("# bench_copy_passes: p = %d, working buffer %zu B of MPI_INT, MPI_SUM, root 0, not in place\n", p, bytes);
    std::printf("# passes = bytes copied locally in one replayed call / buffer bytes (max and mean over ranks)\n");
    std::printf("%-22s %-38s %4s %8s %8s\n", "collective", "schedule", "p", "max", "mean");
  }
  std::vector<int> s(total + size_t(p)), r(total + size_t(p));
  int status = 0;
  for (const bine::bench::Coll& c : bine::bench::kColls) {
    const std::string key = c.key;
    if (key == "barrier") continue;
    const bool blocked = key == "allgather" || key == "gather" || key == "scatter" || key == "reduce_scatter_block" ||
                         key == "alltoall";
    const size_t n = blocked ? total / size_t(p) : total;  // elements per call (one block when rank-indexed)
    const double buffer = double(blocked ? n * size_t(p) : n) * sizeof(int);
    for (size_t i = 0; i < c.n; ++i) {
      const bine::bench::Entry& e = c.entries[i];
      if (!e.fn || !e.applicable(p)) continue;
      for (size_t k = 0; k < s.size(); ++k) s[k] = int(k % 97) + rank;
      int rc = MPI_SUCCESS;
      for (int call = 0; call < 2 && rc == MPI_SUCCESS; ++call)  // the first records the plan, the second replays
        rc = bine::bench::call(c.key, e, reinterpret_cast<char*>(s.data()), reinterpret_cast<char*>(r.data()), n,
                               MPI_INT, MPI_COMM_WORLD);
      bine::mpi::copied_bytes() = 0;
      if (rc == MPI_SUCCESS)
        rc = bine::bench::call(c.key, e, reinterpret_cast<char*>(s.data()), reinterpret_cast<char*>(r.data()), n,
                               MPI_INT, MPI_COMM_WORLD);
      const double mine = double(bine::mpi::copied_bytes()) / buffer;
      double mx = 0, sum = 0;
      int bad = rc != MPI_SUCCESS, anybad = 0;
      MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0) {
        if (anybad)
          std::printf("%-22s %-38s %4d %8s %8s\n", c.key, e.name, p, "ERROR", "-");
        else
          std::printf("%-22s %-38s %4d %8.2f %8.2f\n", c.key, e.name, p, mx, sum / p);
      }
      status |= anybad;
    }
  }
  MPI_Finalize();
  return status;
}
