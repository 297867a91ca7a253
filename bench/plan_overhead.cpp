// Per-call overhead of one generated collective against the same algorithm in Open MPI
// (issue item 5, "persistent plans": the measurement half). For one (collective, schedule)
// and vectors of 8 B, 64 B, 512 B, 4 KiB, 64 KiB and 1 MiB of MPI_INT (MPI_SUM for
// reductions), in one run:
// - latency: the generated function and the MPI collective timed side by side, alternated
//   inside one loop (even repetitions the generated call first, odd ones MPI's), each call
//   after its own barrier; the figure is the median over repetitions of the slowest rank's
//   time. Ratio = bine / MPI; PASS or MISS against the targets (ratio <= 1.10 for
//   8 B - 4 KiB, <= 1.05 at 1 MiB; 64 KiB is reported only);
// - heap allocations per call, after warm-up, over kCountedCalls calls, the maximum over
//   ranks: `operator new`/`new[]` (what the C++ runtime allocates) and, separately, C
//   malloc/calloc/realloc on the calling thread (through a wrapper that forwards to glibc's
//   __libc_malloc; it sees Open MPI's own allocations too, so it is also given for the MPI
//   call). posix_memalign/aligned_alloc are not counted.
// - correctness: once per size, the generated result must equal MPI's (else the row says
//   WRONG and the exit status is 1).
// Open MPI's algorithm cannot be chosen after MPI_Init, so the caller forces it with MCA
// parameters (coll_tuned_use_dynamic_rules, coll_tuned_<collective>_algorithm);
// bench/plan_overhead.sh does that for every pair of the list at p = 2 and 4.
//
// Sizes: allreduce and bcast: the whole vector; allgather and alltoall: one rank's block
// (sendcount x 4 B, the OSU convention), so the receive buffer holds p times the size.
//
// Build target bench_plan_overhead (build/bench/); run one pair by hand:
//   mpirun -np 2 --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 3
//     build/bench/bench_plan_overhead allreduce recursive_doubling_allreduce [--reps N] [--header]
// (one command line), or every pair at p = 2 and 4: bench/plan_overhead.sh.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#define BINE_IMPLEMENTATION
#include "bine_lib.h"

// ---- Allocation counting ---------------------------------------------------------------
// Counters are per thread (static TLS of the executable: no allocation on access), so an
// Open MPI progress thread does not disturb the calling thread's figures.

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);
extern "C" void __libc_free(void*);

namespace {
thread_local uint64_t g_news = 0;     ///< operator new / new[] calls
thread_local uint64_t g_mallocs = 0;  ///< malloc / calloc / realloc calls (C, incl. libmpi)

void* counted_new(size_t n) {
  ++g_news;
  if (void* p = __libc_malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* counted_new_aligned(size_t n, std::align_val_t a) {
  ++g_news;
  if (void* p = __libc_memalign(size_t(a), n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

extern "C" void* malloc(size_t n) noexcept {
  ++g_mallocs;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) noexcept {
  ++g_mallocs;
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) noexcept {
  ++g_mallocs;
  return __libc_realloc(p, n);
}

void* operator new(size_t n) { return counted_new(n); }
void* operator new[](size_t n) { return counted_new(n); }
void* operator new(size_t n, std::align_val_t a) { return counted_new_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return counted_new_aligned(n, a); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  ++g_news;
  return __libc_malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  ++g_news;
  return __libc_malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }

// ---- Benchmark ---------------------------------------------------------------------------
namespace {

constexpr size_t kSizes[] = {8, 64, 512, 4096, 65536, 1 << 20};  ///< bytes
constexpr int kWarmup = 5;                                       ///< untimed calls of each side before timing
constexpr int kCountedCalls = 20;                                ///< calls over which allocations are counted

int rank = 0, size = 1;

/// The target for the ratio at this size, 0 when the size is reported only.
double target(size_t bytes) { return bytes <= 4096 ? 1.10 : bytes == (size_t(1) << 20) ? 1.05 : 0.0; }

/// One (collective, schedule) at one size: the generated call and MPI's, over g_buf.
struct Calls {
  int (*bine)() = nullptr;  ///< returns the generated function's rc
  void (*mpi)() = nullptr;
};

/// Buffers of one size: input `in`, outputs `out_bine` and `out_mpi`, counts in ints.
struct Buffers {
  size_t n = 0;  ///< ints per vector (allreduce, bcast) or per rank's block (allgather, alltoall)
  std::vector<int> in, out_bine, out_mpi;
};

Buffers g_buf;  ///< the buffers of the size being measured
int (*g_allreduce)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm) = nullptr;
int (*g_bcast)(void*, size_t, MPI_Datatype, int, MPI_Comm) = nullptr;
/// allgather and alltoall share the signature, generated and MPI's alike.
int (*g_blocks)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm) = nullptr;
int (*g_mpi_blocks)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm) = nullptr;

Calls allreduce_calls() {
  Calls c;
  c.bine = []() {
    return g_allreduce(g_buf.in.data(), g_buf.out_bine.data(), g_buf.n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  };
  c.mpi = []() {
    MPI_Allreduce(g_buf.in.data(), g_buf.out_mpi.data(), int(g_buf.n), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  };
  return c;
}
/// bcast: each side broadcasts its own output buffer from root 0.
Calls bcast_calls() {
  Calls c;
  c.bine = []() { return g_bcast(g_buf.out_bine.data(), g_buf.n, MPI_INT, 0, MPI_COMM_WORLD); };
  c.mpi = []() { MPI_Bcast(g_buf.out_mpi.data(), int(g_buf.n), MPI_INT, 0, MPI_COMM_WORLD); };
  return c;
}
/// allgather, alltoall: blocks of n ints, through g_blocks and g_mpi_blocks.
Calls block_calls() {
  Calls c;
  c.bine = []() {
    return g_blocks(g_buf.in.data(), g_buf.n, MPI_INT, g_buf.out_bine.data(), g_buf.n, MPI_INT, MPI_COMM_WORLD);
  };
  c.mpi = []() {
    g_mpi_blocks(g_buf.in.data(), int(g_buf.n), MPI_INT, g_buf.out_mpi.data(), int(g_buf.n), MPI_INT, MPI_COMM_WORLD);
  };
  return c;
}

/// Finds `schedule` (with or without the bcc_ prefix) of `collective` in the generated
/// registry and sets its function pointer; false when there is no such schedule.
/// `in_per_n`, `out_per_n`: ints of the input and of each output per n (0: one int).
bool pick_schedule(const std::string& collective, const std::string& schedule, Calls& calls, size_t& in_per_n,
                   size_t& out_per_n, int& applicable) {
  const std::string fn = schedule.rfind("bcc_", 0) == 0 ? schedule : "bcc_" + schedule;
#define BENCH_PICK(var, f, o, s) \
  if (fn == #f) var = f, applicable = f##_applicable(size);
#define BENCH_AR(f, o, s) BENCH_PICK(g_allreduce, f, o, s)
#define BENCH_BC(f, o, s) BENCH_PICK(g_bcast, f, o, s)
#define BENCH_BLOCKS(f, o, s) BENCH_PICK(g_blocks, f, o, s)
  const size_t p = size_t(size);
  if (collective == "allreduce") {
    BCC_ALLREDUCE_SCHEDULES(BENCH_AR)
    calls = allreduce_calls(), in_per_n = 1, out_per_n = 1;
    return g_allreduce != nullptr;
  }
  if (collective == "bcast") {
    BCC_BCAST_SCHEDULES(BENCH_BC)
    calls = bcast_calls(), in_per_n = 0, out_per_n = 1;
    return g_bcast != nullptr;
  }
  if (collective == "allgather") {
    BCC_ALLGATHER_SCHEDULES(BENCH_BLOCKS)
    g_mpi_blocks = MPI_Allgather;
    calls = block_calls(), in_per_n = 1, out_per_n = p;
    return g_blocks != nullptr;
  }
  if (collective == "alltoall") {
    BCC_ALLTOALL_SCHEDULES(BENCH_BLOCKS)
    g_mpi_blocks = MPI_Alltoall;
    calls = block_calls(), in_per_n = p, out_per_n = p;
    return g_blocks != nullptr;
  }
#undef BENCH_PICK
#undef BENCH_AR
#undef BENCH_BC
#undef BENCH_BLOCKS
  return false;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double bine_us, mpi_us;
};

/// Median over `reps` of the slowest rank's time of each side, the two calls alternated.
Timing time_pair(const Calls& c, int reps) {
  std::vector<double> tb, tm;
  tb.reserve(size_t(reps));
  tm.reserve(size_t(reps));
  for (int i = 0; i < reps; ++i) {
    double t[2] = {0, 0};  // bine, MPI
    for (int k = 0; k < 2; ++k) {
      const bool bine = (k == 0) == (i % 2 == 0);  // even repetitions: generated call first
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (bine)
        c.bine();
      else
        c.mpi();
      t[bine ? 0 : 1] = MPI_Wtime() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    tb.push_back(t[0] * 1e6);
    tm.push_back(t[1] * 1e6);
  }
  return {median(tb), median(tm)};
}

struct Allocs {
  double bine_new, bine_malloc, mpi_malloc;  ///< per call, maximum over ranks
};

/// Allocations per call over kCountedCalls back-to-back calls of each side.
Allocs count_allocs(const Calls& c) {
  uint64_t d[3];
  MPI_Barrier(MPI_COMM_WORLD);
  uint64_t n0 = g_news, m0 = g_mallocs;
  for (int i = 0; i < kCountedCalls; ++i) c.bine();
  d[0] = g_news - n0;
  d[1] = g_mallocs - m0;
  MPI_Barrier(MPI_COMM_WORLD);
  m0 = g_mallocs;
  for (int i = 0; i < kCountedCalls; ++i) c.mpi();
  d[2] = g_mallocs - m0;
  MPI_Allreduce(MPI_IN_PLACE, d, 3, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return {double(d[0]) / kCountedCalls, double(d[1]) / kCountedCalls, double(d[2]) / kCountedCalls};
}

std::string size_text(size_t bytes) {
  if (bytes >= (size_t(1) << 20)) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

void fill_inputs(const std::string& collective) {
  for (size_t i = 0; i < g_buf.in.size(); ++i) g_buf.in[i] = int(1000 * rank + i % 997);
  std::fill(g_buf.out_bine.begin(), g_buf.out_bine.end(), -1);
  std::fill(g_buf.out_mpi.begin(), g_buf.out_mpi.end(), -2);
  if (collective == "bcast" && rank == 0)
    for (size_t i = 0; i < g_buf.n; ++i) g_buf.out_bine[i] = g_buf.out_mpi[i] = int(7 + i % 991);
}

void usage() {
  if (rank == 0)
    std::fprintf(stderr,
                 "usage: bench_plan_overhead allreduce|bcast|allgather|alltoall SCHEDULE [--mpi-alg LABEL] "
                 "[--reps N] [--header]\n");
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t mallocs_before_init = g_mallocs;
  MPI_Init(&argc, &argv);
  const uint64_t init_mallocs = g_mallocs - mallocs_before_init;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string collective, schedule, mpi_alg = "?";
  int reps = 2000;  // for sizes up to 4 KiB; a quarter at 64 KiB, a tenth at 1 MiB
  bool header = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--header")
      header = true;
    else if (a == "--mpi-alg" && i + 1 < argc)
      mpi_alg = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (collective.empty())
      collective = a;
    else if (schedule.empty())
      schedule = a;
    else {
      usage();
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (header && rank == 0) {
    std::printf(
        "# Generated collective vs the same algorithm forced in Open MPI (coll tuned); MPI_INT, MPI_SUM.\n"
        "# Times: median over repetitions (%d up to 4 KiB, %d at 64 KiB, %d at 1 MiB) of the slowest rank,\n"
        "# generated and MPI calls alternated in one loop. Target: ratio <= 1.10 for 8 B - 4 KiB, <= 1.05 at\n"
        "# 1 MiB; 64 KiB reported only. allgather/alltoall sizes are one rank's block.\n"
        "# Heap allocations per call after warm-up (%d calls, max over ranks): new = operator new/new[] in\n"
        "# the generated call; malloc, MPI mal = C malloc/calloc/realloc on the calling thread in the\n"
        "# generated call and in the MPI call: %s.\n",
        reps, std::max(1, reps / 4), std::max(1, reps / 10), kCountedCalls,
        init_mallocs > 0 ? "counted by a wrapper forwarding to glibc's __libc_malloc (Open MPI's own included)"
                         : "NOT counted (the malloc wrapper saw no call in MPI_Init)");
    std::printf("%-9s %-30s %-22s %2s %7s %10s %10s %6s %-5s %6s %8s %8s\n", "coll", "schedule", "Open MPI algorithm",
                "p", "size", "bine us", "MPI us", "ratio", "goal", "new", "malloc", "MPI mal");
  }
  Calls calls;
  size_t in_per_n = 1, out_per_n = 1;
  int applicable = 0;
  if (collective.empty() || schedule.empty() ||
      !pick_schedule(collective, schedule, calls, in_per_n, out_per_n, applicable)) {
    if (rank == 0)
      std::fprintf(stderr, "bench_plan_overhead: no schedule '%s' of collective '%s'\n", schedule.c_str(),
                   collective.c_str());
    usage();
    MPI_Finalize();
    return 2;
  }
  if (applicable != 1) {
    if (rank == 0)
      std::printf("%-9s %-30s %-22s %2d  does not apply\n", collective.c_str(), schedule.c_str(), mpi_alg.c_str(),
                  size);
    MPI_Finalize();
    return 0;
  }
  int status = 0;
  for (const size_t bytes : kSizes) {
    const size_t n = bytes / sizeof(int);
    g_buf.n = n;
    g_buf.in.assign(in_per_n ? n * in_per_n : 1, 0);
    g_buf.out_bine.assign(n * out_per_n, 0);
    g_buf.out_mpi.assign(n * out_per_n, 0);
    fill_inputs(collective);
    const int rc = calls.bine();
    calls.mpi();
    int ok = rc == MPI_SUCCESS && g_buf.out_bine == g_buf.out_mpi;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) std::fprintf(stderr, "rank %d: %s\n", rank, bcc_last_error());
    for (int i = 0; i < kWarmup; ++i) calls.bine(), calls.mpi();
    const int r = bytes <= 4096 ? reps : bytes < (size_t(1) << 20) ? std::max(1, reps / 4) : std::max(1, reps / 10);
    const Timing t = time_pair(calls, r);
    const Allocs a = count_allocs(calls);
    const double ratio = t.bine_us / t.mpi_us, goal = target(bytes);
    const char* verdict = !ok ? "WRONG" : goal == 0 ? "-" : ratio <= goal ? "PASS" : "MISS";
    if (!ok) status = 1;
    if (rank == 0)
      std::printf("%-9s %-30s %-22s %2d %7s %10.2f %10.2f %6.2f %-5s %6.1f %8.1f %8.1f\n", collective.c_str(),
                  schedule.c_str(), mpi_alg.c_str(), size, size_text(bytes).c_str(), t.bine_us, t.mpi_us, ratio,
                  verdict, a.bine_new, a.bine_malloc, a.mpi_malloc);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return status;
}
