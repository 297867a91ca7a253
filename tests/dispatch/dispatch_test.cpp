// The dispatchers of `bine-cc compile --dispatch tests/dispatch/table.json` (ctest `dispatch`,
// tests/dispatch/run.py, docs/testing.md).
//
//   dispatch_test choices P_MAX   prints "<key> <p> <bytes> <commutative> <same_bracketing> <choice>" for p = 1..P_MAX
//                                 and a grid of sizes around the table's bounds; run.py compares
//                                 them with its own reading of the table (no communication)
//   dispatch_test run             under mpirun: every dispatcher against the MPI library's own
//                                 collective (the oracle), and the reducing ones bit for bit
//                                 against the function their _choice names (so the dispatcher ran
//                                 the schedule the table picks: schedules bracket differently, and
//                                 double sums show it), non-commutative user operators on a
//                                 derived datatype, MPI_IN_PLACE, count 0, and a count above
//                                 INT_MAX sent to MPI by a rule (MPI_ERR_COUNT, buffers untouched)
#define BINE_IMPLEMENTATION
#include "bine_dispatch.h"

#include <mpi.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../mpi/matmul_op.hpp"

namespace {

int g_rank = 0, g_p = 1, g_failures = 0, g_checks = 0;

void fail(const std::string& what) {
  ++g_failures;
  if (g_failures <= 20) std::fprintf(stderr, "rank %d p=%d: FAIL %s\n", g_rank, g_p, what.c_str());
}

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) fail(what);
}

using ReduceAll = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
using ReduceRooted = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);

#define DT_ENTRY(f, op, sb) {#f, f},
const std::map<std::string, ReduceAll> kAllreduce = {BCC_ALLREDUCE_SCHEDULES(DT_ENTRY)};
const std::map<std::string, ReduceRooted> kReduce = {BCC_REDUCE_SCHEDULES(DT_ENTRY)};
const std::map<std::string, ReduceAll> kReduceScatter = {BCC_REDUCE_SCATTER_SCHEDULES(DT_ENTRY)};
const std::map<std::string, ReduceAll> kScan = {BCC_SCAN_SCHEDULES(DT_ENTRY)};
const std::map<std::string, ReduceAll> kExscan = {BCC_EXSCAN_SCHEDULES(DT_ENTRY)};
#undef DT_ENTRY

// ---------------------------------------------------------------------------------------
// choices

void print_choices(int p_max) {
  const uint64_t sizes[] = {0, 1, 16, 17, 32, 33, 40, 41, 64, 65, 100, 101, 4096, 4097, 1000000, 1000001};
  struct Key {
    const char* key;
    const char* (*choice)(int, size_t, int, int);
  };
  const Key keys[] = {{"allreduce", bcc_allreduce_choice},
                      {"bcast", bcc_bcast_choice},
                      {"reduce", bcc_reduce_choice},
                      {"allgather", bcc_allgather_choice},
                      {"gather", bcc_gather_choice},
                      {"scatter", bcc_scatter_choice},
                      {"reduce_scatter_block", bcc_reduce_scatter_block_choice},
                      {"alltoall", bcc_alltoall_choice},
                      {"scan", bcc_scan_choice},
                      {"exscan", bcc_exscan_choice},
                      {"barrier", bcc_barrier_choice}};
  for (const Key& k : keys)
    for (int p = 1; p <= p_max; ++p)
      for (uint64_t b : sizes)
        for (int c = 0; c <= 1; ++c)
          for (int sb = 0; sb <= 1; ++sb)
            std::printf("%s %d %llu %d %d %s\n", k.key, p, (unsigned long long)b, c, sb, k.choice(p, b, c, sb));
}

// ---------------------------------------------------------------------------------------
// run

std::vector<double> random_doubles(size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = d(gen) * std::pow(10.0, int(gen() % 7) - 3);
  return v;
}

bool close(const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) > 1e-9 * (1 + std::fabs(b[i]))) return false;
  return true;
}

std::string at(const char* what, size_t count) { return std::string(what) + " count=" + std::to_string(count); }

/// allreduce, reduce_scatter_block, scan, exscan: the dispatcher vs the chosen function (bits)
/// and vs MPI's collective (values). `block` is the count per rank of reduce_scatter_block.
void reducing(const char* key, int (*dispatcher)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm),
              const char* (*choice)(int, size_t, int, int), const std::map<std::string, ReduceAll>& registry,
              int (*mpi)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm), bool scatter) {
  for (size_t count : {size_t(0), size_t(1), size_t(2), size_t(4), size_t(5), size_t(8), size_t(9), size_t(512),
                       size_t(513), size_t(125000), size_t(125001)}) {
    const size_t in = scatter ? count * size_t(g_p) : count;
    const std::vector<double> send = random_doubles(in, 1000u + unsigned(g_rank) + unsigned(count));
    std::vector<double> got(count, -7), chosen(count, -7), ref(count, -7);
    // MPI_SUM on doubles needs the same bracketing on all ranks (bine::mpi::bracketing_sensitive()).
    const std::string name = choice(g_p, count * sizeof(double), 1, 1);
    expect(dispatcher(send.data(), got.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
           at(key, count) + " returned an error: " + bcc_last_error());
    if (name == "mpi") {
      mpi(send.data(), chosen.data(), int(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else {
      auto it = registry.find(name);
      expect(it != registry.end(), at(key, count) + ": _choice names " + name + ", not in the registry");
      if (it != registry.end()) it->second(send.data(), chosen.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    mpi(send.data(), ref.data(), int(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const bool defined = !(std::strcmp(key, "exscan") == 0 && g_rank == 0);  // rank 0's exscan result is undefined
    if (!defined) continue;
    expect(std::memcmp(got.data(), chosen.data(), count * sizeof(double)) == 0,
           at(key, count) + ": not bit-identical to " + name + " (the dispatcher ran another schedule)");
    expect(close(got, ref), at(key, count) + ": differs from the MPI library's result");
  }
}

/// reduce at root p-1: the same two comparisons.
void reduce_check() {
  const int root = g_p - 1;
  for (size_t count : {size_t(0), size_t(1), size_t(8), size_t(9), size_t(5000)}) {
    const std::vector<double> send = random_doubles(count, 77u + unsigned(g_rank) + unsigned(count));
    std::vector<double> got(count, -7), chosen(count, -7), ref(count, -7);
    const std::string name = bcc_reduce_choice(g_p, count * sizeof(double), 1, 1);
    expect(bcc_reduce(send.data(), got.data(), count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD) == MPI_SUCCESS,
           at("reduce", count) + " returned an error: " + bcc_last_error());
    if (name == "mpi") MPI_Reduce(send.data(), chosen.data(), int(count), MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    else kReduce.at(name)(send.data(), chosen.data(), count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    MPI_Reduce(send.data(), ref.data(), int(count), MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    if (g_rank != root) continue;
    expect(std::memcmp(got.data(), chosen.data(), count * sizeof(double)) == 0,
           at("reduce", count) + ": not bit-identical to " + name);
    expect(close(got, ref), at("reduce", count) + ": differs from MPI_Reduce");
  }
}

/// A non-commutative operator: the product of 2x2 integer matrices (wrapping), on a derived
/// datatype of four ints. Every dispatcher must agree exactly with MPI's collective.
using bine::test::matmul_op;

void noncommutative() {
  MPI_Op op;
  MPI_Datatype mat;
  MPI_Op_create(matmul_op, 0, &op);
  MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  MPI_Type_commit(&mat);
  for (size_t count : {size_t(1), size_t(3), size_t(40)}) {
    std::vector<uint32_t> send(4 * count * size_t(g_p));
    std::mt19937 gen(unsigned(g_rank) * 31u + unsigned(count));
    for (uint32_t& x : send) x = gen() % 5;
    std::vector<uint32_t> got(send.size(), 9), ref(send.size(), 9);
    const int n = int(count);
    auto same = [&](const char* what, size_t elems) {
      expect(std::memcmp(got.data(), ref.data(), elems * 16) == 0, at(what, count) + " (matrix product) differs from MPI's");
    };
    expect(bcc_allreduce(send.data(), got.data(), count, mat, op, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce matmul rc");
    MPI_Allreduce(send.data(), ref.data(), n, mat, op, MPI_COMM_WORLD);
    same("allreduce", count);
    expect(bcc_reduce(send.data(), got.data(), count, mat, op, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "reduce matmul rc");
    MPI_Reduce(send.data(), ref.data(), n, mat, op, 0, MPI_COMM_WORLD);
    if (g_rank == 0) same("reduce", count);
    expect(bcc_scan(send.data(), got.data(), count, mat, op, MPI_COMM_WORLD) == MPI_SUCCESS, "scan matmul rc");
    MPI_Scan(send.data(), ref.data(), n, mat, op, MPI_COMM_WORLD);
    same("scan", count);
    expect(bcc_exscan(send.data(), got.data(), count, mat, op, MPI_COMM_WORLD) == MPI_SUCCESS, "exscan matmul rc");
    MPI_Exscan(send.data(), ref.data(), n, mat, op, MPI_COMM_WORLD);
    if (g_rank != 0) same("exscan", count);
    expect(bcc_reduce_scatter_block(send.data(), got.data(), count, mat, op, MPI_COMM_WORLD) == MPI_SUCCESS,
           "reduce_scatter_block matmul rc");
    MPI_Reduce_scatter_block(send.data(), ref.data(), n, mat, op, MPI_COMM_WORLD);
    same("reduce_scatter_block", count);
  }
  MPI_Type_free(&mat);
  MPI_Op_free(&op);
}

std::vector<int> ints(size_t n, int salt) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int(i) * 131 + g_rank * 7919 + salt;
  return v;
}

/// The collectives without an operator: exact equality with MPI's.
void moving() {
  for (size_t count : {size_t(0), size_t(1), size_t(4), size_t(5), size_t(10), size_t(11), size_t(3000)}) {
    const size_t all = count * size_t(g_p);
    const int n = int(count);
    for (int root : {0, g_p - 1}) {
      std::vector<int> got = ints(count, root), ref = got;
      expect(bcc_bcast(got.data(), count, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS, at("bcast", count) + " rc");
      MPI_Bcast(ref.data(), n, MPI_INT, root, MPI_COMM_WORLD);
      expect(got == ref, at("bcast", count) + " root " + std::to_string(root) + " differs from MPI_Bcast");
    }
    const std::vector<int> mine = ints(count, 1), blocks = ints(all, 2);
    std::vector<int> got(all, -1), ref(all, -1);
    expect(bcc_allgather(mine.data(), count, MPI_INT, got.data(), count, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS,
           at("allgather", count) + " rc");
    MPI_Allgather(mine.data(), n, MPI_INT, ref.data(), n, MPI_INT, MPI_COMM_WORLD);
    expect(got == ref, at("allgather", count) + " differs from MPI_Allgather");
    std::vector<int> inplace(all, -1);
    std::copy(mine.begin(), mine.end(), inplace.begin() + std::ptrdiff_t(size_t(g_rank) * count));
    expect(bcc_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, inplace.data(), count, MPI_INT, MPI_COMM_WORLD) ==
               MPI_SUCCESS,
           at("allgather in place", count) + " rc");
    expect(inplace == ref, at("allgather in place", count) + " differs from MPI_Allgather");
    const int root = 1 % g_p;
    std::fill(got.begin(), got.end(), -1), std::fill(ref.begin(), ref.end(), -1);
    expect(bcc_gather(mine.data(), count, MPI_INT, got.data(), count, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS,
           at("gather", count) + " rc: " + bcc_last_error());
    MPI_Gather(mine.data(), n, MPI_INT, ref.data(), n, MPI_INT, root, MPI_COMM_WORLD);
    if (g_rank == root) expect(got == ref, at("gather", count) + " differs from MPI_Gather");
    std::vector<int> part(count, -1), pref(count, -1);
    expect(bcc_scatter(blocks.data(), count, MPI_INT, part.data(), count, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS,
           at("scatter", count) + " rc");
    MPI_Scatter(blocks.data(), n, MPI_INT, pref.data(), n, MPI_INT, root, MPI_COMM_WORLD);
    expect(part == pref, at("scatter", count) + " differs from MPI_Scatter");
    std::fill(got.begin(), got.end(), -1), std::fill(ref.begin(), ref.end(), -1);
    expect(bcc_alltoall(blocks.data(), count, MPI_INT, got.data(), count, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS,
           at("alltoall", count) + " rc");
    MPI_Alltoall(blocks.data(), n, MPI_INT, ref.data(), n, MPI_INT, MPI_COMM_WORLD);
    expect(got == ref, at("alltoall", count) + " differs from MPI_Alltoall");
  }
  // allreduce in place (the input in recvbuf)
  std::vector<double> v = random_doubles(9, 5u + unsigned(g_rank)), ref(9);
  MPI_Allreduce(v.data(), ref.data(), 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  expect(bcc_allreduce(MPI_IN_PLACE, v.data(), 9, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
         "allreduce in place rc");
  expect(close(v, ref), "allreduce in place differs from MPI_Allreduce");
  expect(bcc_barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "barrier rc");
}

/// The table sends gathers of more than 40 bytes to MPI_Gather: a count above INT_MAX
/// cannot go there, so MPI_ERR_COUNT comes back before any buffer is read or written.
void count_above_int() {
  char one = 'x', out = 'y';
  const size_t big = size_t(INT_MAX) + 1;
  const std::string name = bcc_gather_choice(g_p, big, 1, 0);
  expect(name == "mpi", "the table should send a gather of 2^31 bytes to mpi, got " + name);
  const int rc = bcc_gather(&one, big, MPI_BYTE, &out, big, MPI_BYTE, 0, MPI_COMM_WORLD);
  int cls = -1;
  MPI_Error_class(rc, &cls);
  expect(cls == MPI_ERR_COUNT, "gather with count 2^31 to mpi: error class " + std::to_string(cls) + ", want MPI_ERR_COUNT");
  expect(std::strstr(bcc_last_error(), "bcc_gather") != nullptr, std::string("last_error: ") + bcc_last_error());
  expect(one == 'x' && out == 'y', "gather with count 2^31 touched the buffers");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "choices") == 0) {
    print_choices(std::atoi(argv[2]));
    return 0;
  }
  if (argc != 2 || std::strcmp(argv[1], "run") != 0) {
    std::fprintf(stderr, "usage: dispatch_test choices P_MAX | run\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_p);
  reducing("allreduce", bcc_allreduce, bcc_allreduce_choice, kAllreduce, MPI_Allreduce, false);
  reducing("reduce_scatter_block", bcc_reduce_scatter_block, bcc_reduce_scatter_block_choice, kReduceScatter,
           MPI_Reduce_scatter_block, true);
  reducing("scan", bcc_scan, bcc_scan_choice, kScan, MPI_Scan, false);
  reducing("exscan", bcc_exscan, bcc_exscan_choice, kExscan, MPI_Exscan, false);
  reduce_check();
  noncommutative();
  moving();
  count_above_int();
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("dispatch p=%d: %d checks per rank, %d failures\n", g_p, g_checks, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
