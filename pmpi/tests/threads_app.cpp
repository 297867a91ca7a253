// An unmodified multi-threaded MPI program for the PMPI thread test (pmpi/tests/run_threads.sh):
// MPI_Init_thread(MPI_THREAD_MULTIPLE), T communicators (duplicates of MPI_COMM_WORLD, every
// other one with the ranks reversed), and T threads, each running a loop of MPI_Allreduce,
// MPI_Bcast and MPI_Allgather on its own communicator with varied counts, roots and
// operators. Every result is compared with the value computed locally from the known inputs
// of every rank (integers: exact). The threads wait at a start gate and the first call on
// each communicator happens inside its thread, so the library sets itself up (attribute key,
// private communicators) from several threads at once.
// usage: pmpi_threads_app [THREADS [ITERATIONS]]
// Rank 0 prints "expected allreduce A bcast B allgather C" (the calls each rank makes, the
// report's counts), then "threads: PASS ..." or "threads: FAIL ..."; exit 1 on a mismatch.
// Without MPI_THREAD_MULTIPLE it prints a SKIP line and exits 0.
// The C bindings only (as the library intercepts): no MPI C++ bindings pulled in.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

/// The input element i of `rank` in iteration `it` of thread `t`, for collective `c`.
long long input(int c, int t, int it, int rank, long long i) {
  return (c * 7919LL + t * 104729LL + it * 1299709LL + rank * 15485863LL + i * 31LL) % 100003 - 50000;
}

/// The element counts the loop cycles through: below and above the default table's
/// latency / bandwidth thresholds (4 KiB allreduce, 16 KiB bcast at 8 B elements).
const int kCounts[] = {1, 3, 17, 64, 511, 1000, 2049, 4096};
const int kNumCounts = int(sizeof kCounts / sizeof kCounts[0]);

struct Result {
  long long checked = 0, wrong = 0, errors = 0;
  char first[256] = "";
};

void mismatch(Result& r, const char* what, int t, int it, long long i, long long got, long long want) {
  if (r.wrong++ == 0)
    std::snprintf(r.first, sizeof r.first, "%s thread %d iteration %d element %lld: got %lld, expected %lld", what, t,
                  it, i, got, want);
}

/// The start gate: every thread spins until all have started, then all begin at once.
std::atomic<int> g_started{0};

/// Thread t's loop on its communicator (of `threads` threads).
void run(MPI_Comm comm, int t, int threads, int iters, Result* res) {
  g_started.fetch_add(1);
  while (g_started.load() < threads) std::this_thread::yield();
  Result& r = *res;
  int rank = 0, p = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &p);
  std::vector<long long> in, out, expect;
  for (int it = 0; it < iters; ++it) {
    const int n = kCounts[(it * 3 + t) % kNumCounts];
    // Allreduce: MPI_SUM, every third iteration MPI_MAX.
    const bool max = it % 3 == 2;
    in.assign(size_t(n), 0);
    out.assign(size_t(n), 0);
    for (int i = 0; i < n; ++i) in[size_t(i)] = input(0, t, it, rank, i);
    if (MPI_Allreduce(in.data(), out.data(), n, MPI_LONG_LONG, max ? MPI_MAX : MPI_SUM, comm) != MPI_SUCCESS)
      r.errors++;
    for (int i = 0; i < n; ++i) {
      long long want = max ? input(0, t, it, 0, i) : 0;
      for (int q = 0; q < p; ++q) {
        const long long v = input(0, t, it, q, i);
        want = max ? (v > want ? v : want) : want + v;
      }
      if (out[size_t(i)] != want) mismatch(r, "allreduce", t, it, i, out[size_t(i)], want);
      r.checked++;
    }
    // Bcast from a rotating root; the other ranks start from garbage.
    const int root = (it + t) % p;
    for (int i = 0; i < n; ++i) out[size_t(i)] = rank == root ? input(1, t, it, root, i) : -1 - i;
    if (MPI_Bcast(out.data(), n, MPI_LONG_LONG, root, comm) != MPI_SUCCESS) r.errors++;
    for (int i = 0; i < n; ++i) {
      if (out[size_t(i)] != input(1, t, it, root, i)) mismatch(r, "bcast", t, it, i, out[size_t(i)], input(1, t, it, root, i));
      r.checked++;
    }
    // Allgather of n / 4 + 1 elements per rank.
    const int b = n / 4 + 1;
    for (int i = 0; i < b; ++i) in[size_t(i)] = input(2, t, it, rank, i);
    out.assign(size_t(b) * size_t(p), -7);
    if (MPI_Allgather(in.data(), b, MPI_LONG_LONG, out.data(), b, MPI_LONG_LONG, comm) != MPI_SUCCESS) r.errors++;
    for (int q = 0; q < p; ++q)
      for (int i = 0; i < b; ++i) {
        const long long got = out[size_t(q) * size_t(b) + size_t(i)];
        if (got != input(2, t, it, q, i)) mismatch(r, "allgather", t, it, q * b + i, got, input(2, t, it, q, i));
        r.checked++;
      }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, p = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("SKIP: the MPI library provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
    MPI_Finalize();
    return 0;
  }
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 200;
  std::vector<MPI_Comm> comms(size_t(threads), MPI_COMM_NULL);
  for (int t = 0; t < threads; ++t) {
    if (t % 2 == 0) MPI_Comm_dup(MPI_COMM_WORLD, &comms[size_t(t)]);
    else MPI_Comm_split(MPI_COMM_WORLD, 0, p - 1 - rank, &comms[size_t(t)]);  // ranks reversed
  }
  std::vector<Result> results(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(run, comms[size_t(t)], t, threads, iters, &results[size_t(t)]);
  for (std::thread& th : pool) th.join();

  long long local[3] = {0, 0, 0}, total[3] = {0, 0, 0};
  for (const Result& r : results) {
    local[0] += r.checked, local[1] += r.wrong, local[2] += r.errors;
    if (r.wrong) std::printf("rank %d: first mismatch: %s\n", rank, r.first);
  }
  // Back on one thread: the totals (one more allreduce, on MPI_COMM_WORLD).
  MPI_Allreduce(local, total, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
  const bool ok = total[1] == 0 && total[2] == 0 && total[0] > 0;
  if (rank == 0) {
    const long long calls = (long long)threads * iters;
    std::printf("expected allreduce %lld bcast %lld allgather %lld\n", calls + 1, calls, calls);
    std::printf("threads: %s p = %d, %d threads x %d iterations, %lld elements checked, %lld wrong, %lld error codes\n",
                ok ? "PASS" : "FAIL", p, threads, iters, total[0], total[1], total[2]);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
