// ctest `bbs_mpi` (tests/bbs/run.py): the generated function of a `frames` schedule (BBS
// broadcast, docs/language.md "frames") against the MPI library's MPI_Bcast under mpirun.
//
//   bbs_bcast FUNCTION_INDEX [refused]
//
// For every root, element count (0, 1, below, at and above the packet count N, not
// divisible by N, and large) and datatype (MPI_INT, MPI_DOUBLE, a strided vector type):
// every rank fills its buffer with rank- and root-dependent values; the root's values are
// broadcast with the generated function and, separately, with MPI_Bcast; the two buffers
// must be equal byte for byte on every rank (the gaps of the strided type included: they must
// keep their sentinel). Also the persistent form (two starts) and a p mismatch refused.
// Prints "ok: ..." on rank 0 and exits 0, else prints the first difference and aborts.
#define BINE_IMPLEMENTATION
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bbs_lib.h"

namespace {

typedef int (*BcastFn)(void*, size_t, MPI_Datatype, int, MPI_Comm);
typedef int (*InitFn)(void*, size_t, MPI_Datatype, int, MPI_Comm, bcc_plan*);

struct Schedule {
  const char* name;
  BcastFn fn;
  InitFn init;
};
#define X(fn, order, bits) {#fn, fn, fn##_init},
const Schedule kSchedules[] = {BCC_BCAST_SCHEDULES(X)};
#undef X

int rank_ = 0, p_ = 1;

void fail(const char* what, const char* name, int root, size_t count, const char* type, size_t at) {
  std::fprintf(stderr, "rank %d: %s: %s, root %d, count %zu, %s: first difference at byte %zu\n", rank_, name, what, root,
               count, type, at);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void fill(std::vector<unsigned char>& b, int root) {
  for (size_t i = 0; i < b.size(); ++i) b[i] = (unsigned char)((i * 131 + size_t(rank_) * 17 + size_t(root) * 7 + 3) & 0xff);
}

/// One case: the generated function (or a start of its persistent plan) against MPI_Bcast.
void one(const Schedule& s, int root, size_t count, MPI_Datatype type, const char* tname, bool persistent) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  const size_t bytes = count * size_t(extent) + 64;
  std::vector<unsigned char> a(bytes), b(bytes);
  fill(a, root);
  fill(b, root);
  int rc = MPI_SUCCESS;
  if (persistent) {
    bcc_plan plan = nullptr;
    rc = s.init(a.data(), count, type, root, MPI_COMM_WORLD, &plan);
    if (rc == MPI_SUCCESS) {
      for (int k = 0; k < 2 && rc == MPI_SUCCESS; ++k) rc = bcc_plan_start(plan);
      bcc_plan_free(&plan);
    }
  } else {
    rc = s.fn(a.data(), count, type, root, MPI_COMM_WORLD);
  }
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "rank %d: %s returned %d (root %d, count %zu, %s): %s\n", rank_, s.name, rc, root, count, tname,
                 bcc_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Bcast(b.data(), int(count), type, root, MPI_COMM_WORLD);
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != b[i]) fail(persistent ? "persistent form differs from MPI_Bcast" : "differs from MPI_Bcast", s.name, root, count, tname, i);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &p_);
  const int index = argc > 1 ? std::atoi(argv[1]) : 0;
  const int n = int(sizeof kSchedules / sizeof kSchedules[0]);
  if (index < 0 || index >= n) {
    if (rank_ == 0) std::fprintf(stderr, "bbs_bcast: schedule index %d outside 0..%d\n", index, n - 1);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const Schedule& s = kSchedules[index];
  if (argc > 2 && std::strcmp(argv[2], "refused") == 0) {
    // At a p other than the topology's node count the call must fail on every rank, name
    // the condition, and leave the buffer alone.
    std::vector<unsigned char> a(800), b;
    fill(a, 0);
    b = a;
    const int rc = s.fn(a.data(), 200, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS || std::strstr(bcc_last_error(), "node count of the frames' topology") == nullptr || a != b) {
      std::fprintf(stderr, "rank %d: %s at p = %d: expected a refusal naming the frames' node count, got %d (%s)\n", rank_,
                   s.name, p_, rc, bcc_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank_ == 0) std::printf("ok: %s at p = %d refused: %s\n", s.name, p_, bcc_last_error());
    MPI_Finalize();
    return 0;
  }
  MPI_Datatype strided;
  MPI_Type_vector(3, 2, 5, MPI_INT, &strided);  // 2 of every 5 ints, 3 times: gaps between
  MPI_Type_commit(&strided);
  const size_t counts[] = {0, 1, 7, 99, 100, 101, 1000, 100003};
  const int roots[] = {0, 1, p_ / 2, p_ - 1};
  int cases = 0;
  for (int root : roots)
    for (size_t count : counts) {
      one(s, root, count, MPI_INT, "MPI_INT", false);
      one(s, root, count, MPI_DOUBLE, "MPI_DOUBLE", false);
      if (count <= 1000) one(s, root, count, strided, "vector(3,2,5,MPI_INT)", false);
      cases += count <= 1000 ? 3 : 2;
    }
  one(s, 1, 1000, MPI_DOUBLE, "MPI_DOUBLE", true);
  ++cases;
  MPI_Type_free(&strided);
  if (rank_ == 0) std::printf("ok: %s at p = %d: %d cases equal to MPI_Bcast\n", s.name, p_, cases);
  MPI_Finalize();
  return 0;
}
