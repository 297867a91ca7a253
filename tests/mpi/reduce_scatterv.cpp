// ctest `reduce_scatterv` (issue 21; docs/testing.md): every `<schedule>_v` of
// BCC_REDUCE_SCATTERV_SCHEDULES (MPI_Reduce_scatter with size_t recvcounts) against the MPI
// library's own MPI_Reduce_scatter on the same data, under mpirun at the p the ctest names.
// Layouts: seeded random counts, all zero, one rank holding 99% of the vector, equal counts,
// zeros between non-zeros. Per layout: MPI_INT with MPI_SUM (exact), MPI_DOUBLE sums
// (relative 1e-12), a non-contiguous datatype (MPI_INT resized to extent 8, against MPI on
// the packed ints), MPI_IN_PLACE
// (input in recvbuf, the block left at its start), and a non-commutative user operator (2x2
// matrix product on a derived type): exact for schedules proved order-preserving, refused
// with MPI_ERR_OP by the others. The send buffer must come back unchanged. Every case runs
// through the plain `_v` form, the persistent `_v_init` and the nonblocking `_v_i`.
#define BINE_IMPLEMENTATION
#include "bine_lib.h"

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "matmul_op.hpp"

namespace {

using VFn = int (*)(const void*, void*, const size_t*, MPI_Datatype, MPI_Op, MPI_Comm);
struct Entry {
  const char* name;
  VFn fn;
  bool ordered;
  int (*init)(const void*, void*, const size_t*, MPI_Datatype, MPI_Op, MPI_Comm, bcc_plan*);  ///< <name>_init
  int (*nb)(const void*, void*, const size_t*, MPI_Datatype, MPI_Op, MPI_Comm, bcc_request*);  ///< <name>_i
};
#define RSV_ENTRY(f, op, sb) {#f, f, (op) != 0, f##_init, f##_i},
const std::vector<Entry> kSchedules = {BCC_REDUCE_SCATTERV_SCHEDULES(RSV_ENTRY)};
#undef RSV_ENTRY

int g_rank = 0, g_p = 1, g_fail = 0, g_checks = 0;
/// Which form every call goes through: 0 the plain `_v`, 1 the persistent `_v_init` (then
/// bcc_plan_start twice, once for in-place calls, whose second start would reduce again,
/// then bcc_plan_free), 2 the nonblocking `_v_i` (then bcc_wait).
int g_form = 0;
const char* const kFormName[] = {"", " (persistent)", " (nonblocking)"};

int call(const Entry& e, const void* send, void* recv, const size_t* counts, MPI_Datatype t, MPI_Op op) {
  if (g_form == 2) {
    bcc_request rq = nullptr;
    const int rc = e.nb(send, recv, counts, t, op, MPI_COMM_WORLD, &rq);
    if (rc != MPI_SUCCESS) return rq == nullptr ? rc : MPI_ERR_OTHER;  // a refused start leaves no request
    return bcc_wait(&rq);
  }
  if (g_form == 0) return e.fn(send, recv, counts, t, op, MPI_COMM_WORLD);
  bcc_plan plan = nullptr;
  int rc = e.init(send, recv, counts, t, op, MPI_COMM_WORLD, &plan);
  if (rc != MPI_SUCCESS) return rc;
  for (int k = 0; k < (send == MPI_IN_PLACE ? 1 : 2) && rc == MPI_SUCCESS; ++k) rc = bcc_plan_start(plan);
  const int frc = bcc_plan_free(&plan);
  return rc != MPI_SUCCESS ? rc : frc;
}

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok && ++g_fail <= 20) std::fprintf(stderr, "rank %d p=%d: FAIL %s\n", g_rank, g_p, what.c_str());
}

using bine::test::matmul_op;

/// The layouts (the same on every rank: seeded by the layout's index only).
std::vector<std::vector<size_t>> layouts() {
  const size_t p = size_t(g_p);
  std::vector<std::vector<size_t>> all;
  std::mt19937 gen(12345u + unsigned(p));
  for (int k = 0; k < 3; ++k) {
    std::vector<size_t> c(p);
    for (size_t& x : c) x = gen() % 23;
    all.push_back(c);
  }
  all.push_back(std::vector<size_t>(p, 0));
  std::vector<size_t> skew(p, p > 1 ? 1 : 0);
  skew[p / 2] = 99 * (p > 1 ? p - 1 : 1);  // one rank holds 99% of the vector
  all.push_back(skew);
  all.push_back(std::vector<size_t>(p, 7));
  std::vector<size_t> gaps(p);
  for (size_t i = 0; i < p; ++i) gaps[i] = i % 2 ? 0 : 3 + i;
  all.push_back(gaps);
  return all;
}

std::string label(const Entry& e, size_t layout, const char* what) {
  return std::string(e.name) + kFormName[g_form] + " layout " + std::to_string(layout) + " " + what;
}

void run(const Entry& e, size_t li, const std::vector<size_t>& counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  const size_t mine = counts[size_t(g_rank)];
  std::vector<int> icounts(counts.begin(), counts.end());
  // MPI_INT, MPI_SUM: exact
  {
    std::vector<int> send(total), keep, got(mine + 1, -1), want(mine + 1, -1);
    for (size_t i = 0; i < total; ++i) send[i] = int(i * 7 + size_t(g_rank) * 1009) % 1000 - 500;
    keep = send;
    const int rc = call(e, send.data(), got.data(), counts.data(), MPI_INT, MPI_SUM);
    MPI_Reduce_scatter(send.data(), want.data(), icounts.data(), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    expect(rc == MPI_SUCCESS, label(e, li, "int sum: ") + bcc_last_error());
    expect(got == want, label(e, li, "int sum differs from MPI_Reduce_scatter"));
    expect(send == keep, label(e, li, "int sum changed the send buffer"));
    // in place: the input in recvbuf, this rank's block left at its start
    std::vector<int> inplace = keep;
    inplace.resize(total + 1, -1);
    const int rc2 = call(e, MPI_IN_PLACE, inplace.data(), counts.data(), MPI_INT, MPI_SUM);
    expect(rc2 == MPI_SUCCESS, label(e, li, "in place: ") + bcc_last_error());
    expect(std::equal(want.begin(), want.begin() + std::ptrdiff_t(mine), inplace.begin()),
           label(e, li, "in place differs from MPI_Reduce_scatter"));
  }
  // MPI_DOUBLE sums: within 1e-12 relative
  {
    std::mt19937_64 gen(99u + unsigned(g_rank) + unsigned(li));
    std::uniform_real_distribution<double> d(-1, 1);
    std::vector<double> send(total), got(mine), want(mine);
    for (double& x : send) x = d(gen);
    const int rc = call(e, send.data(), got.data(), counts.data(), MPI_DOUBLE, MPI_SUM);
    MPI_Reduce_scatter(send.data(), want.data(), icounts.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    bool close = rc == MPI_SUCCESS;
    for (size_t i = 0; i < mine; ++i) close &= std::fabs(got[i] - want[i]) <= 1e-12 * (1 + std::fabs(want[i])) * g_p;
    expect(close, label(e, li, "double sum differs from MPI_Reduce_scatter"));
  }
  // a non-contiguous datatype: MPI_INT resized to extent 8 (every other int)
  {
    MPI_Datatype strided;
    MPI_Type_create_resized(MPI_INT, 0, 8, &strided);
    MPI_Type_commit(&strided);
    std::vector<int> send(2 * total + 1), got(2 * mine + 1, -3), want(2 * mine + 1, -3);
    for (size_t i = 0; i < send.size(); ++i) send[i] = int(i) * 3 + g_rank;
    const int rc = call(e, send.data(), got.data(), counts.data(), strided, MPI_SUM);
    // The oracle on the packed elements (Open MPI refuses MPI_SUM on a derived type), spread
    // back to every other int; the ints between them stay untouched.
    std::vector<int> packed(total), pwant(mine + 1);
    for (size_t i = 0; i < total; ++i) packed[i] = send[2 * i];
    MPI_Reduce_scatter(packed.data(), pwant.data(), icounts.data(), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < mine; ++i) want[2 * i] = pwant[i];
    expect(rc == MPI_SUCCESS, label(e, li, "strided: ") + bcc_last_error());
    expect(got == want, label(e, li, "strided type differs from MPI_Reduce_scatter (or wrote between elements)"));
    MPI_Type_free(&strided);
  }
  // a non-commutative operator on a derived type
  {
    MPI_Datatype mat;
    MPI_Op op;
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
    MPI_Type_commit(&mat);
    MPI_Op_create(matmul_op, 0, &op);
    std::vector<uint32_t> send(4 * total), got(4 * mine, 9), want(4 * mine, 9);
    std::mt19937 gen(7u * unsigned(g_rank) + unsigned(li));
    for (uint32_t& x : send) x = gen() % 5;
    const int rc = call(e, send.data(), got.data(), counts.data(), mat, op);
    MPI_Reduce_scatter(send.data(), want.data(), icounts.data(), mat, op, MPI_COMM_WORLD);
    if (e.ordered) {
      expect(rc == MPI_SUCCESS && got == want, label(e, li, "matrix product differs from MPI_Reduce_scatter"));
    } else {
      int cls = MPI_SUCCESS;
      MPI_Error_class(rc, &cls);
      expect(rc == MPI_SUCCESS ? got == want : cls == MPI_ERR_OP,
             label(e, li, "not order-preserving: must refuse with MPI_ERR_OP or be exact"));
    }
    MPI_Op_free(&op);
    MPI_Type_free(&mat);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_p);
  expect(kSchedules.size() >= 3, "fewer than 3 reduce_scatter schedules have a _v form");
  int calls = 0;
  const auto all = layouts();
  for (g_form = 0; g_form < 3; ++g_form)
    for (const Entry& e : kSchedules)
      for (size_t li = 0; li < all.size(); ++li) run(e, li, all[li]), ++calls;
  g_form = 0;
  // A NULL count array is an error on every rank, not a crash.
  if (!kSchedules.empty()) {
    int x = 0;
    const int rc = kSchedules[0].fn(&x, &x, nullptr, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    expect(cls == MPI_ERR_ARG, std::string("NULL recvcounts: ") + bcc_last_error());
  }
  int fails = 0;
  MPI_Allreduce(&g_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("reduce_scatterv p=%d: %zu schedules, %d schedule x layout runs, %d checks per rank, %d failures\n", g_p,
                kSchedules.size(), calls, g_checks, fails);
  MPI_Finalize();
  return fails ? 1 : 0;
}
