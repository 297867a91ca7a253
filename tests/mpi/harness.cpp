// End-to-end test of generated code under a real MPI (tests/mpi/README.md).
//
//   harness check          every generated allreduce / bcast against MPI_Allreduce / MPI_Bcast
//                          on the same data: counts {0, 1, 7, 1000, 3p+1}, MPI_INT and
//                          MPI_DOUBLE, MPI_SUM and MPI_MAX, in place and not, several roots,
//                          a 3-int contiguous type; the send buffer must be left untouched;
//                          a non-commutative 2x2 matrix product must match the sequential
//                          product M_0 M_1 ... M_{p-1} when the verifier marked the schedule
//                          order-preserving, and be refused with MPI_ERR_OP otherwise.
//   harness trace DIR      records, through the PMPI shim, every call each schedule makes for
//                          a few (root, count) pairs and writes DIR/trace.<rank>.json for
//                          tests/mpi/validate_traces.py to compare with `bine-cc schedule`.
// Exit status 0 when every rank saw only matches.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#define BINE_IMPLEMENTATION
#include "bine_lib.h"
#include "pmpi_trace.h"

namespace {

using AllreduceFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
using BcastFn = int (*)(void*, size_t, MPI_Datatype, int, MPI_Comm);

struct AllreduceEntry {
  const char* name;
  AllreduceFn fn;
  bool order_preserving;
};
struct BcastEntry {
  const char* name;
  BcastFn fn;
};

#define BINE_AR_ENTRY(f, order, same) {#f, f, order != 0},
#define BINE_BC_ENTRY(f, order, same) {#f, f},
const std::vector<AllreduceEntry> kAllreduce = {BINE_ALLREDUCE_SCHEDULES(BINE_AR_ENTRY)};
const std::vector<BcastEntry> kBcast = {BINE_BCAST_SCHEDULES(BINE_BC_ENTRY)};

int rank = 0, size = 1;
long failures = 0, cases = 0;

void fail(const std::string& what) {
  ++failures;
  if (failures < 20) std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
}

std::vector<size_t> counts() {
  return {0, 1, 7, 1000, size_t(3 * size + 1)};
}

template <class T>
T value(int r, size_t i) {
  return T(int((r * 131 + int(i) * 7) % 1000) - 500);
}

template <class T>
void allreduce_case(const AllreduceEntry& e, MPI_Datatype dt, MPI_Op op, size_t n, bool in_place) {
  std::vector<T> send(n), expect(n), got(n), send_copy;
  for (size_t i = 0; i < n; ++i) send[i] = value<T>(rank, i);
  send_copy = send;
  MPI_Allreduce(send.data(), expect.data(), int(n), dt, op, MPI_COMM_WORLD);
  int rc;
  if (in_place) {
    got = send;
    rc = e.fn(MPI_IN_PLACE, got.data(), n, dt, op, MPI_COMM_WORLD);
  } else {
    for (auto& g : got) g = T(-7777);
    rc = e.fn(send.data(), got.data(), n, dt, op, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " n=" + std::to_string(n) +
                          (in_place ? " in-place" : "") + (dt == MPI_INT ? " int" : " double") + (op == MPI_SUM ? " sum" : " max");
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (std::memcmp(got.data(), expect.data(), n * sizeof(T)) != 0) fail(tag + ": result differs from MPI_Allreduce");
  if (!in_place && send != send_copy) fail(tag + ": send buffer modified");
}

// 2x2 matrices of uint32 (mod 2^32): a non-commutative, associative operator.
void matmul(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint32_t* a = static_cast<const uint32_t*>(in);
  uint32_t* b = static_cast<uint32_t*>(inout);
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    const uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                           a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, c, sizeof c);
  }
}

void noncommutative_case(const AllreduceEntry& e, MPI_Datatype mat, MPI_Op op, size_t n) {
  auto m = [](int r, size_t i, int j) { return uint32_t((r + 1) * 2654435761u + i * 40503u + uint32_t(j) * 977u) % 7u; };
  std::vector<uint32_t> send(4 * n), got(4 * n, 0), expect(4 * n);
  for (size_t i = 0; i < n; ++i)
    for (int j = 0; j < 4; ++j) send[4 * i + size_t(j)] = m(rank, i, j);
  for (size_t i = 0; i < n; ++i) {  // sequential reference M_0 * M_1 * ... * M_{p-1}
    uint32_t acc[4] = {m(0, i, 0), m(0, i, 1), m(0, i, 2), m(0, i, 3)};
    for (int r = 1; r < size; ++r) {
      uint32_t b[4] = {m(r, i, 0), m(r, i, 1), m(r, i, 2), m(r, i, 3)};
      int one = 1;
      matmul(acc, b, &one, nullptr);
      std::memcpy(acc, b, sizeof acc);
    }
    std::memcpy(&expect[4 * i], acc, sizeof acc);
  }
  const int rc = e.fn(send.data(), got.data(), n, mat, op, MPI_COMM_WORLD);
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " n=" + std::to_string(n) + " matrix product";
  // Proved order-preserving for every p: must be accepted. Otherwise MPI_ERR_OP is allowed
  // (the p at hand may be one where order was not proved), but an accepted call must be right.
  if (rc == MPI_ERR_OP && !e.order_preserving) return;
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from the sequential product");
}

template <class T>
void bcast_case(const BcastEntry& e, MPI_Datatype dt, int width, size_t n, int root) {
  std::vector<T> expect(n * size_t(width)), got(n * size_t(width));
  for (size_t i = 0; i < expect.size(); ++i) expect[i] = rank == root ? value<T>(root, i) : T(-1);
  got = expect;
  MPI_Bcast(expect.data(), int(n), dt, root, MPI_COMM_WORLD);
  const int rc = e.fn(got.data(), n, dt, root, MPI_COMM_WORLD);
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " root=" + std::to_string(root) + " n=" + std::to_string(n);
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from MPI_Bcast");
}

std::vector<int> roots() {
  std::vector<int> r = {0};
  for (int x : {size - 1, size / 2, 1 % size})
    if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
  return r;
}

int run_check() {
  MPI_Op matop;
  MPI_Op_create(matmul, /*commute=*/0, &matop);
  MPI_Datatype mat, int3, strided;
  MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  MPI_Type_commit(&mat);
  MPI_Type_contiguous(3, MPI_INT, &int3);
  MPI_Type_commit(&int3);
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  for (const AllreduceEntry& e : kAllreduce) {
    for (size_t n : counts())
      for (bool in_place : {false, true}) {
        allreduce_case<int>(e, MPI_INT, MPI_SUM, n, in_place);
        allreduce_case<int>(e, MPI_INT, MPI_MAX, n, in_place);
        allreduce_case<double>(e, MPI_DOUBLE, MPI_SUM, n, in_place);
        allreduce_case<double>(e, MPI_DOUBLE, MPI_MAX, n, in_place);
      }
    for (size_t n : {size_t(1), size_t(5), size_t(3 * size + 1)}) noncommutative_case(e, mat, matop, n);
    // A non-contiguous datatype is refused with MPI_ERR_TYPE, not mis-read.
    std::vector<int> a(8, 1), b(8, 0);
    ++cases;
    if (e.fn(a.data(), b.data(), 2, strided, MPI_SUM, MPI_COMM_WORLD) != MPI_ERR_TYPE)
      fail(std::string(e.name) + ": non-contiguous datatype not refused with MPI_ERR_TYPE");
  }
  for (const BcastEntry& e : kBcast)
    for (int root : roots())
      for (size_t n : counts()) {
        bcast_case<int>(e, MPI_INT, 1, n, root);
        bcast_case<double>(e, MPI_DOUBLE, 1, n, root);
        bcast_case<int>(e, int3, 3, n, root);
      }
  MPI_Type_free(&mat);
  MPI_Type_free(&int3);
  MPI_Type_free(&strided);
  MPI_Op_free(&matop);
  long total_fail = 0, total_cases = 0;
  MPI_Allreduce(&failures, &total_fail, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&cases, &total_cases, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("p=%d: %zu allreduce + %zu bcast schedules, %ld rank-cases, %ld failures\n", size, kAllreduce.size(),
                kBcast.size(), total_cases, total_fail);
  return total_fail == 0 ? 0 : 1;
}

void write_rounds(std::ofstream& f, const std::vector<trace::Round>& rounds) {
  f << "[";
  for (size_t i = 0; i < rounds.size(); ++i) {
    f << (i ? "," : "") << "[";
    for (size_t j = 0; j < rounds[i].size(); ++j) {
      const trace::Call& c = rounds[i][j];
      f << (j ? "," : "") << "[\"" << c.kind << "\"," << c.peer << "," << c.offset << "," << c.count << "]";
    }
    f << "]";
  }
  f << "]";
}

int run_trace(const std::string& dir) {
  std::ofstream f(dir + "/trace." + std::to_string(rank) + ".json");
  f << "[\n";
  bool first = true;
  auto record = [&](const std::string& name, int root, size_t n, const std::vector<trace::Round>& rounds) {
    f << (first ? "" : ",\n") << "{\"function\":\"" << name << "\",\"root\":" << root << ",\"count\":" << n << ",\"rounds\":";
    write_rounds(f, rounds);
    f << "}";
    first = false;
  };
  const std::vector<size_t> ns = {size_t(1), size_t(1000), size_t(3 * size + 1)};
  for (const AllreduceEntry& e : kAllreduce)
    for (size_t n : ns) {
      std::vector<int> s(n, 1), out(n, 0);
      trace::begin(out.data(), sizeof(int), int64_t(n));
      const int rc = e.fn(s.data(), out.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      record(e.name, 0, n, trace::end());
      if (rc != MPI_SUCCESS) fail(std::string(e.name) + " trace run returned an error");
    }
  for (const BcastEntry& e : kBcast)
    for (int root : roots())
      for (size_t n : ns) {
        std::vector<int> buf(n, rank);
        trace::begin(buf.data(), sizeof(int), int64_t(n));
        const int rc = e.fn(buf.data(), n, MPI_INT, root, MPI_COMM_WORLD);
        record(e.name, root, n, trace::end());
        if (rc != MPI_SUCCESS) fail(std::string(e.name) + " trace run returned an error");
      }
  f << "\n]\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const std::string mode = argc > 1 ? argv[1] : "check";
  int rc = 2;
  if (mode == "check") rc = run_check();
  else if (mode == "trace" && argc > 2) rc = run_trace(argv[2]);
  else if (rank == 0) std::fprintf(stderr, "usage: harness check | harness trace DIR\n");
  MPI_Finalize();
  return rc;
}
