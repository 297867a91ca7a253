// Generated collectives against Open MPI's own (default algorithm selection), side by side
// in one run: for each schedule and message size, the median over repetitions of the
// slowest rank's time, and the ratio bine / MPI. Build target bench_mpi_compare; run:
//   mpirun -np 8 build/bench/bench_mpi_compare [max_bytes]
// Figures from a 2-core machine with oversubscribed ranks measure software overhead and
// message counts, not network behaviour; say so when quoting them.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define BINE_IMPLEMENTATION
#include "bine_lib.h"

namespace {

int rank = 0, size = 1;

/// Median over `reps` of the maximum over ranks of one call's time, in microseconds.
double time_us(const std::function<void()>& call, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps + 2; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    call();
    double dt = MPI_Wtime() - t0, mx = 0;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 2) t.push_back(mx * 1e6);  // first two are warm-up
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// time_us(call) when the schedule applies at this p, else -1 (no row printed).
double time_if(bool applies, const std::function<void()>& call, int reps) { return applies ? time_us(call, reps) : -1.0; }

void row(const char* coll, const char* name, size_t bytes, double bine, double mpi) {
  if (bine < 0) return;  // the schedule does not apply at this p
  if (rank == 0) std::printf("%-15s %-36s %9zu B %10.1f us %10.1f us %7.2fx\n", coll, name, bytes, bine, mpi, bine / mpi);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t max_bytes = argc > 1 ? size_t(std::atoll(argv[1])) : size_t(1) << 20;
  if (rank == 0)
    std::printf("p = %d; times: median of the slowest rank; ratio < 1: generated code faster\n%-15s %-36s %11s %13s %13s %8s\n",
                size, "collective", "schedule", "size", "bine", "Open MPI", "ratio");
  const size_t p = size_t(size);
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 16) {
    const size_t n = bytes / sizeof(int);
    const int reps = bytes <= 4096 ? 50 : 10;
    std::vector<int> a(n * p, 1), b(n * p, 0);
    double ref = time_us([&] { MPI_Allreduce(a.data(), b.data(), int(n), MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, reps);
#define AR(f, o, s) row("allreduce", #f, bytes, time_if(f##_applicable(size), [&] { f(a.data(), b.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, reps), ref);
    BCC_ALLREDUCE_SCHEDULES(AR)
    // Segmentation (the `segment` clause, here through its BINE_SEGMENT_BYTES override):
    // bine_allreduce_rsag with pieces of 1/16 and 1/4 of the vector, same run, same ref.
    for (size_t div : {size_t(16), size_t(4)}) {
      if (bytes < 32768 || !bcc_bine_allreduce_rsag_applicable(size)) break;
      const std::string seg = std::to_string(bytes / div);
      setenv("BINE_SEGMENT_BYTES", seg.c_str(), 1);
      bine::mpi::reread_environment();
      const std::string name = "bine_allreduce_rsag, segment " + seg;
      row("allreduce", name.c_str(), bytes,
          time_us([&] { bcc_bine_allreduce_rsag(a.data(), b.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, reps), ref);
      unsetenv("BINE_SEGMENT_BYTES");
      bine::mpi::reread_environment();
    }
    ref = time_us([&] { MPI_Bcast(a.data(), int(n), MPI_INT, 0, MPI_COMM_WORLD); }, reps);
#define BC(f, o, s) row("bcast", #f, bytes, time_if(f##_applicable(size), [&] { f(a.data(), n, MPI_INT, 0, MPI_COMM_WORLD); }, reps), ref);
    BCC_BCAST_SCHEDULES(BC)
    ref = time_us([&] { MPI_Reduce(a.data(), b.data(), int(n), MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); }, reps);
#define RD(f, o, s) row("reduce", #f, bytes, time_if(f##_applicable(size), [&] { f(a.data(), b.data(), n, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); }, reps), ref);
    BCC_REDUCE_SCHEDULES(RD)
    const size_t nb = std::max<size_t>(1, n / p);  // per-rank block: total vector ~ bytes
    ref = time_us([&] { MPI_Allgather(a.data(), int(nb), MPI_INT, b.data(), int(nb), MPI_INT, MPI_COMM_WORLD); }, reps);
#define AG(f, o, s) row("allgather", #f, nb * p * 4, time_if(f##_applicable(size), [&] { f(a.data(), nb, MPI_INT, b.data(), nb, MPI_INT, MPI_COMM_WORLD); }, reps), ref);
    BCC_ALLGATHER_SCHEDULES(AG)
    ref = time_us([&] { MPI_Gather(a.data(), int(nb), MPI_INT, b.data(), int(nb), MPI_INT, 0, MPI_COMM_WORLD); }, reps);
#define GA(f, o, s) row("gather", #f, nb * p * 4, time_if(f##_applicable(size), [&] { f(a.data(), nb, MPI_INT, b.data(), nb, MPI_INT, 0, MPI_COMM_WORLD); }, reps), ref);
    BCC_GATHER_SCHEDULES(GA)
    ref = time_us([&] { MPI_Scatter(a.data(), int(nb), MPI_INT, b.data(), int(nb), MPI_INT, 0, MPI_COMM_WORLD); }, reps);
#define SC(f, o, s) row("scatter", #f, nb * p * 4, time_if(f##_applicable(size), [&] { f(a.data(), nb, MPI_INT, b.data(), nb, MPI_INT, 0, MPI_COMM_WORLD); }, reps), ref);
    BCC_SCATTER_SCHEDULES(SC)
    ref = time_us([&] { MPI_Reduce_scatter_block(a.data(), b.data(), int(nb), MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, reps);
#define RS(f, o, s) row("reduce_scatter", #f, nb * p * 4, time_if(f##_applicable(size), [&] { f(a.data(), b.data(), nb, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, reps), ref);
    BCC_REDUCE_SCATTER_SCHEDULES(RS)
    std::vector<int> c(nb * p, 0);
    ref = time_us([&] { MPI_Alltoall(a.data(), int(nb), MPI_INT, c.data(), int(nb), MPI_INT, MPI_COMM_WORLD); }, reps);
#define A2A(f, o, s) row("alltoall", #f, nb * p * 4, time_if(f##_applicable(size), [&] { f(a.data(), nb, MPI_INT, c.data(), nb, MPI_INT, MPI_COMM_WORLD); }, reps), ref);
    BCC_ALLTOALL_SCHEDULES(A2A)
  }
  MPI_Finalize();
  return 0;
}
