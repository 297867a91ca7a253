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

#include "bine_lib.h"
#include "bench_registry.hpp"

namespace {

using bine::bench::Coll;
using bine::bench::Entry;
using bine::bench::kColls;

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
        int rc = bine::bench::call(c.key, e, s.data(), r.data(), n, t, MPI_COMM_WORLD);  // warm-up: plans
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int it = 0; it < iters && rc == MPI_SUCCESS; ++it) rc = bine::bench::call(c.key, e, s.data(), r.data(), n, t, MPI_COMM_WORLD);
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
