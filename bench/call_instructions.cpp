// Instructions per call of a generated collective and of libbine's hand-written function for
// the same algorithm, 8-byte messages (bench/call_instructions.sh runs it under callgrind and
// prints the instructions in the program's own code, the MPI library's excluded, per call).
// usage: call_instructions gen|lib|start NAME CALLS   (NAME: a pair of kNames below; start:
// the generated persistent form, _init once, then bcc_plan_start per call; allreduce pairs)
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define BINE_IMPLEMENTATION
#include "bine_lib.h"
extern "C" {
#include "libbine.h"
}

namespace {
struct Named {
  const char* name;
  int (*gen)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*lib)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
  int (*gen_blocks)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
  int (*lib_blocks)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
  int (*init)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm, bcc_plan*);
};
int lib_rd(const void* s, void* r, size_t n, MPI_Datatype t, MPI_Op o, MPI_Comm c) {
  return allreduce_recursivedoubling(s, r, n, t, o, c);
}
int lib_lat(const void* s, void* r, size_t n, MPI_Datatype t, MPI_Op o, MPI_Comm c) {
  return allreduce_bine_lat(s, r, n, t, o, c);
}
int lib_a2a(const void* s, size_t sc, MPI_Datatype st, void* r, size_t rc, MPI_Datatype rt, MPI_Comm c) {
  return alltoall_bine(s, sc, st, r, rc, rt, c);
}
int lib_ag(const void* s, size_t sc, MPI_Datatype st, void* r, size_t rc, MPI_Datatype rt, MPI_Comm c) {
  return allgather_recursivedoubling(s, sc, st, r, rc, rt, c);
}
const Named kNames[] = {
    {"recursive_doubling_allreduce", bcc_recursive_doubling_allreduce, lib_rd, nullptr, nullptr,
     bcc_recursive_doubling_allreduce_init},
    {"bine_allreduce_lat", bcc_bine_allreduce_lat, lib_lat, nullptr, nullptr, bcc_bine_allreduce_lat_init},
    {"bine_alltoall", nullptr, nullptr, bcc_bine_alltoall, lib_a2a, nullptr},
    {"recursive_doubling_allgather", nullptr, nullptr, bcc_recursive_doubling_allgather, lib_ag, nullptr},
};
}  // namespace

bcc_plan g_plan = nullptr;  ///< start: the persistent plan

__attribute__((noinline)) int measured_loop(const Named& f, bool gen, int calls, std::vector<double>& a,
                                            std::vector<double>& b, int p) {
  int rc = MPI_SUCCESS;
  for (int i = 0; i < calls && rc == MPI_SUCCESS; ++i) {
    if (g_plan) {
      rc = bcc_plan_start(g_plan);
      continue;
    }
    if (f.gen)
      rc = (gen ? f.gen : f.lib)(a.data(), b.data(), 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
      rc = (gen ? f.gen_blocks : f.lib_blocks)(a.data(), 1, MPI_DOUBLE, b.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  }
  (void)p;
  return rc;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc != 4) {
    std::fprintf(stderr, "usage: call_instructions gen|lib NAME CALLS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const bool start = std::strcmp(argv[1], "start") == 0;
  const bool gen = start || std::strcmp(argv[1], "gen") == 0;
  const int calls = std::atoi(argv[3]);
  const Named* f = nullptr;
  for (const Named& n : kNames)
    if (std::strcmp(n.name, argv[2]) == 0) f = &n;
  if (!f) MPI_Abort(MPI_COMM_WORLD, 2);
  std::vector<double> a(size_t(p), 1.0), b(size_t(p), 0.0);
  if (start && (!f->init || f->init(a.data(), b.data(), 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &g_plan) != MPI_SUCCESS))
    MPI_Abort(MPI_COMM_WORLD, 2);
  int rc = measured_loop(*f, gen, 3, a, b, p);  // the plan, its recording: not measured
  MPI_Barrier(MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS) rc = measured_loop(*f, gen, calls, a, b, p);
  if (g_plan) bcc_plan_free(&g_plan);
  MPI_Finalize();
  return rc == MPI_SUCCESS ? 0 : 1;
}
