// bine/cuda_runtime.cuh: the runtime of `bine-cc compile --target cuda` (docs/cuda.md).
// Header-only CUDA C++17; the generated .cu part includes it. Optional transports:
//   -DBINE_CUDA_WITH_NCCL   NCCL point-to-point (link -lnccl)
//   -DBINE_CUDA_WITH_MPI    CUDA-aware MPI (device pointers to MPI_Isend / MPI_Irecv)
// The in-process transport (p virtual ranks in one process, on one device) is always there.
//
// Execution (bine/device_plan.hpp builds the plans):
// - A call looks up the plan of its shape (schedule, collective, p, rank, root, count,
//   element size, in-place, operand-order request) in its communicator's cache; the first
//   call of a shape runs the schedule body on the host, compiles the rounds to batches of
//   device operations, uploads them and allocates the working, staging and arena memory
//   (cudaMalloc, cudaMemcpy: synchronous, once). Later calls of the shape only enqueue.
// - Everything a call does is enqueued on the caller's stream: one kernel launch per batch
//   (grid-stride over 8192-element tiles, 16-byte accesses where aligned, the reduction
//   and copy bodies of bine/device_kernels.hpp), and per round either one NCCL group of
//   ncclSend / ncclRecv (stream-ordered), or, for CUDA-aware MPI, a cudaStreamSynchronize
//   then MPI_Isend / MPI_Irecv / MPI_Waitall on device pointers (MPI is not stream-ordered:
//   that transport synchronizes the stream once per round and cannot be captured). No host
//   synchronisation otherwise: a call on the in-process or NCCL transport whose plan exists
//   can be captured in a CUDA graph (make one warm-up call first).
// - Reduction operand order is the round model's (the lower rank's data on the left). For
//   floating-point types at a p where the verifier proved the schedule order-preserving,
//   the body is planned with `commutative` false, so every run gives the same bits and,
//   where it also proved the same bracketing on all ranks, every rank does.
// Errors (BINE_CUDA_ERR_*, bine/cuda_api.h) are checked before anything is enqueued;
// the calling thread's error text (error_text(), exported as <prefix>cuda_last_error)
// says why.
#pragma once
#include <cuda_runtime.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "bine/device_plan.hpp"

#ifdef BINE_CUDA_WITH_NCCL
#include <nccl.h>
#endif
#ifdef BINE_CUDA_WITH_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only (Open MPI's C++ bindings do not build with -Werror)
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

namespace bine::cuda {

using dev::Batches;
using dev::DevOp;
using dev::Tile;

/// Largest p of an in-process communicator (the kernel's base-pointer table is a launch
/// parameter: 4 buffers per rank and the arena, 8 bytes each).
inline constexpr int kMaxInprocRanks = 64;

/// Bytes of the per-thread error text, terminating NUL included.
inline constexpr size_t kErrorTextBytes = 512;
inline char* error_text() {
  static thread_local char text[kErrorTextBytes] = "";
  return text;
}
inline int fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/// Records the calling thread's error text and returns `code`.
inline int fail(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(error_text(), kErrorTextBytes, fmt, ap);
  va_end(ap);
  return code;
}
inline int cuda_fail(cudaError_t e, const char* what) {
  return fail(BINE_CUDA_ERR_CUDA, "%s: CUDA error %d: %s", what, int(e), cudaGetErrorString(e));
}

/// Base pointers of a launch, one per buffer id (a launch parameter, captured by value).
template <int N>
struct Bases {
  char* p[N];
};

template <int T, int Op, int N>
__global__ void batch_kernel(const DevOp* ops, const Tile* tiles, uint32_t first, uint32_t last, Bases<N> bases,
                             uint32_t esize) {
  for (uint32_t t = first + blockIdx.x; t < last; t += gridDim.x)
    dev::run_tile<T, Op>(ops, tiles[t], bases.p, esize, threadIdx.x, blockDim.x);
}

template <int N>
struct Launcher {
  const DevOp* ops;
  const Tile* tiles;
  uint32_t first, last;
  const Bases<N>* bases;
  uint32_t esize;
  cudaStream_t stream;
  template <int T, int Op>
  void operator()() const {
    const uint32_t n = last - first;
    const uint32_t grid = n < 2048 ? n : 2048;
    batch_kernel<T, Op, N><<<grid, 256, 0, stream>>>(ops, tiles, first, last, *bases, esize);
  }
};

/// A plan on the device: the batches' operations and tiles uploaded, the memory it needs.
struct DevicePlan {
  Batches batches;                     ///< host copy (batch boundaries)
  DevOp* d_ops = nullptr;
  Tile* d_tiles = nullptr;
  std::vector<dev::Msg> msgs;          ///< per-rank plans
  std::vector<dev::RankExec::Action> actions;
  std::vector<char*> work, stage;      ///< per rank (one for a per-rank plan); null when unused
  std::vector<bool> work_internal;
  char* arena = nullptr;
  ~DevicePlan() {
    cudaFree(d_ops);
    cudaFree(d_tiles);
    for (char* w : work) cudaFree(w);
    for (char* s : stage) cudaFree(s);
    cudaFree(arena);
  }
};

struct PlanKey {
  const void* schedule;
  int64_t root;
  uint64_t count;
  uint32_t esize;
  bool commutative;
  uint64_t in_place;  ///< bit r: rank r's call is in place (p <= 64)
  bool operator==(const PlanKey& o) const {
    return schedule == o.schedule && root == o.root && count == o.count && esize == o.esize &&
           commutative == o.commutative && in_place == o.in_place;
  }
};

}  // namespace bine::cuda

/// The communicator (bine/cuda_api.h): its transport, its ranks, its plans.
struct bine_cuda_comm_s {
  enum class Kind { inproc, nccl, mpi } kind = Kind::inproc;
  int p = 1, rank = 0, device = 0;
#ifdef BINE_CUDA_WITH_NCCL
  ncclComm_t nccl = nullptr;
#endif
#ifdef BINE_CUDA_WITH_MPI
  MPI_Comm mpi = MPI_COMM_NULL;
#endif
  std::mutex mu;  ///< guards plans
  std::vector<std::pair<bine::cuda::PlanKey, std::unique_ptr<bine::cuda::DevicePlan>>> plans;
};

namespace bine::cuda {

using dev::Schedule;
using dev::body_commutative;

inline int check_dtype_op(const Schedule& s, int dtype, int op) {
  if (dtype < 0 || dtype >= BINE_CUDA_DTYPE_COUNT)
    return fail(BINE_CUDA_ERR_TYPE, "%s: datatype %d is not a bine_cuda_dtype_t", s.function, dtype);
  if (collective_reduces(s.kind) && (op < 0 || op >= BINE_CUDA_OP_COUNT))
    return fail(BINE_CUDA_ERR_OP, "%s: operator %d is not a bine_cuda_op_t", s.function, op);
  return BINE_CUDA_SUCCESS;
}

/// BINE_CUDA_ERR_ARG unless `ptr` (holding `bytes` > 0 bytes) is device or managed memory;
/// BINE_CUDA_ERR_DEVICE when it is on another device than `device`.
inline int check_device_ptr(const Schedule& s, const void* ptr, uint64_t bytes, int device, const char* what) {
  if (bytes == 0) return BINE_CUDA_SUCCESS;
  if (!ptr) return fail(BINE_CUDA_ERR_ARG, "%s: the %s is NULL", s.function, what);
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, ptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(BINE_CUDA_ERR_ARG, "%s: the %s is not a CUDA pointer (%s)", s.function, what, cudaGetErrorString(e));
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    return fail(BINE_CUDA_ERR_ARG, "%s: the %s is host memory; device memory is required", s.function, what);
  if (a.type == cudaMemoryTypeDevice && a.device != device)
    return fail(BINE_CUDA_ERR_DEVICE, "%s: the %s is on device %d, the communicator on device %d", s.function, what,
                a.device, device);
  return BINE_CUDA_SUCCESS;
}

inline int check_stream(const Schedule& s, cudaStream_t stream, int device) {
  int dev = -1;
  const cudaError_t e = cudaStreamGetDevice(stream, &dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(BINE_CUDA_ERR_ARG, "%s: an invalid stream (%s)", s.function, cudaGetErrorString(e));
  }
  if (dev != device)
    return fail(BINE_CUDA_ERR_DEVICE, "%s: the stream is on device %d, the communicator on device %d", s.function, dev,
                device);
  return BINE_CUDA_SUCCESS;
}

using dev::buffer_elems;

/// In place, the NCCL way: the send and receive buffers are one (allreduce, reduce at the
/// root, bcast at the root, scan, exscan, alltoall), or the rank's own block of the bigger
/// one (allgather, gather at the root: sendbuf = recvbuf + rank * count; reduce_scatter,
/// scatter at the root: recvbuf = sendbuf + rank * count).
inline bool is_in_place(Collective c, const void* in, const void* out, int64_t rank, int64_t root, uint64_t count,
                        uint32_t esize) {
  const char* i = static_cast<const char*>(in);
  const char* o = static_cast<const char*>(out);
  const uint64_t off = uint64_t(rank) * count * esize;
  switch (c) {
    case Collective::allgather: return i == o + off;
    case Collective::gather: return rank == root && i == o + off;
    case Collective::reduce_scatter: return o == i + off;
    case Collective::scatter: return rank == root && o == i + off;
    case Collective::reduce:
    case Collective::bcast: return rank == root && i == o;
    default: return i == o;
  }
}

template <class T>
inline int upload(const std::vector<T>& v, T** d) {
  if (v.empty()) return BINE_CUDA_SUCCESS;
  cudaError_t e = cudaMalloc(reinterpret_cast<void**>(d), v.size() * sizeof(T));
  if (e != cudaSuccess) return fail(BINE_CUDA_ERR_NO_MEM, "cannot allocate %zu bytes of plan", v.size() * sizeof(T));
  e = cudaMemcpy(*d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return e == cudaSuccess ? BINE_CUDA_SUCCESS : cuda_fail(e, "uploading a plan");
}
inline int alloc(uint64_t bytes, char** d) {
  if (bytes == 0) return BINE_CUDA_SUCCESS;
  if (cudaMalloc(reinterpret_cast<void**>(d), bytes) != cudaSuccess) {
    cudaGetLastError();
    return fail(BINE_CUDA_ERR_NO_MEM, "cannot allocate %llu bytes of device memory", (unsigned long long)bytes);
  }
  return BINE_CUDA_SUCCESS;
}

/// Builds the plan of `key` for `comm` (per rank, or in process for all p ranks).
inline int build_plan(const Schedule& s, bine_cuda_comm_s* comm, const PlanKey& key, DevicePlan& dp) {
  const bool inproc = comm->kind == bine_cuda_comm_s::Kind::inproc;
  const int64_t first = inproc ? 0 : comm->rank, last = inproc ? comm->p : comm->rank + 1;
  std::vector<dev::RankPlan> plans;
  std::string err;
  for (int64_t r = first; r < last; ++r) {
    dev::PlanRequest q;
    q.kind = s.kind, q.p = comm->p, q.rank = r, q.root = key.root, q.count = key.count, q.elem_bytes = key.esize;
    q.commutative = key.commutative, q.in_place = (key.in_place >> (r - first)) & 1u;
    plans.emplace_back();
    const int rc = dev::build_rank_plan(s.body, s.function, q, plans.back(), err);
    if (rc != dev::kOk) return fail(rc, "%s", err.c_str());
  }
  int rc;
  if (inproc) {
    dev::InprocExec ex;
    if ((rc = dev::inproc_exec(plans, ex, err)) != dev::kOk) return fail(rc, "%s: %s", s.function, err.c_str());
    dp.batches = std::move(ex.batches);
    if ((rc = alloc(ex.arena_elems * key.esize, &dp.arena)) != BINE_CUDA_SUCCESS) return rc;
  } else {
    dev::RankExec ex = dev::rank_exec(plans[0]);
    dp.batches = std::move(ex.batches);
    dp.msgs = std::move(ex.msgs);
    dp.actions = std::move(ex.actions);
  }
  for (const dev::RankPlan& rp : plans) {
    dp.work.push_back(nullptr);
    dp.stage.push_back(nullptr);
    dp.work_internal.push_back(rp.work_internal);
    if ((rc = alloc(rp.work_elems * key.esize, &dp.work.back())) != BINE_CUDA_SUCCESS) return rc;
    if ((rc = alloc(rp.stage_elems * key.esize, &dp.stage.back())) != BINE_CUDA_SUCCESS) return rc;
  }
  if ((rc = upload(dp.batches.ops, &dp.d_ops)) != BINE_CUDA_SUCCESS) return rc;
  return upload(dp.batches.tiles, &dp.d_tiles);
}

/// The plan of `key`, built on first use; null (error text set) when it cannot be built.
inline DevicePlan* find_plan(const Schedule& s, bine_cuda_comm_s* comm, const PlanKey& key, int* rc) {
  std::lock_guard<std::mutex> lock(comm->mu);
  for (auto& e : comm->plans)
    if (e.first == key) return e.second.get();
  std::unique_ptr<DevicePlan> dp(new (std::nothrow) DevicePlan);
  if (!dp) {
    *rc = fail(BINE_CUDA_ERR_NO_MEM, "%s: cannot allocate a plan", s.function);
    return nullptr;
  }
  int dev_before = 0;
  cudaGetDevice(&dev_before);
  cudaSetDevice(comm->device);
  *rc = build_plan(s, comm, key, *dp);
  cudaSetDevice(dev_before);
  if (*rc != BINE_CUDA_SUCCESS) return nullptr;
  comm->plans.emplace_back(key, std::move(dp));
  return comm->plans.back().second.get();
}

template <int N>
inline int launch_batches(const DevicePlan& dp, uint32_t first, uint32_t count, const Bases<N>& bases, int dtype,
                          int op, uint32_t esize, cudaStream_t stream) {
  for (uint32_t k = first; k < first + count; ++k) {
    const uint32_t t0 = dp.batches.batch[k], t1 = dp.batches.batch[k + 1];
    if (t0 == t1) continue;
    dev::dispatch(dtype, op, Launcher<N>{dp.d_ops, dp.d_tiles, t0, t1, &bases, esize, stream});
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return cuda_fail(e, "launching a batch kernel");
  }
  return BINE_CUDA_SUCCESS;
}

/// One round's messages of a per-rank plan on the communicator's transport.
inline int exchange(bine_cuda_comm_s* comm, const DevicePlan& dp, const dev::RankExec::Action& a, char* const* base,
                    uint32_t esize, cudaStream_t stream) {
#ifdef BINE_CUDA_WITH_NCCL
  if (comm->kind == bine_cuda_comm_s::Kind::nccl) {
    ncclResult_t r = ncclGroupStart();
    for (uint32_t i = 0; i < a.count && r == ncclSuccess; ++i) {
      const dev::Msg& m = dp.msgs[a.first + i];
      char* ptr = base[m.buf] + m.off * esize;
      r = m.recv ? ncclRecv(ptr, m.n * esize, ncclUint8, int(m.peer), comm->nccl, stream)
                 : ncclSend(ptr, m.n * esize, ncclUint8, int(m.peer), comm->nccl, stream);
    }
    const ncclResult_t g = ncclGroupEnd();
    if (r == ncclSuccess) r = g;
    return r == ncclSuccess ? BINE_CUDA_SUCCESS
                            : fail(BINE_CUDA_ERR_TRANSPORT, "NCCL error %d: %s", int(r), ncclGetErrorString(r));
  }
#endif
#ifdef BINE_CUDA_WITH_MPI
  if (comm->kind == bine_cuda_comm_s::Kind::mpi) {
    const cudaError_t e = cudaStreamSynchronize(stream);  // MPI is not stream-ordered
    if (e != cudaSuccess) return cuda_fail(e, "cudaStreamSynchronize before MPI");
    std::vector<MPI_Request> reqs;
    int rc = MPI_SUCCESS;
    for (uint32_t i = 0; i < a.count && rc == MPI_SUCCESS; ++i) {
      const dev::Msg& m = dp.msgs[a.first + i];
      char* ptr = base[m.buf] + m.off * esize;
      const uint64_t bytes = m.n * esize;
      for (uint64_t d = 0; d < bytes && rc == MPI_SUCCESS; d += uint64_t(INT_MAX)) {
        const int c = int(bytes - d < uint64_t(INT_MAX) ? bytes - d : uint64_t(INT_MAX));
        reqs.push_back(MPI_REQUEST_NULL);
        rc = m.recv ? MPI_Irecv(ptr + d, c, MPI_BYTE, int(m.peer), 27423, comm->mpi, &reqs.back())
                    : MPI_Isend(ptr + d, c, MPI_BYTE, int(m.peer), 27423, comm->mpi, &reqs.back());
      }
    }
    const int w = MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS) rc = w;
    return rc == MPI_SUCCESS ? BINE_CUDA_SUCCESS : fail(BINE_CUDA_ERR_TRANSPORT, "MPI error %d", rc);
  }
#endif
  (void)comm, (void)dp, (void)a, (void)base, (void)esize, (void)stream;
  return fail(BINE_CUDA_ERR_ARG, "a communicator of a transport this build lacks");
}

/// A call on a per-rank communicator (NCCL or CUDA-aware MPI): rank comm->rank's buffers.
inline int run(const Schedule& s, const void* sendbuf, void* recvbuf, size_t count, int dtype, int op, int root,
               bine_cuda_comm_t comm, cudaStream_t stream) {
  if (!comm) return fail(BINE_CUDA_ERR_ARG, "%s: a NULL communicator", s.function);
  if (comm->kind == bine_cuda_comm_s::Kind::inproc)
    return fail(BINE_CUDA_ERR_ARG, "%s: an in-process communicator: call %s_inproc", s.function, s.function);
  int rc = check_dtype_op(s, dtype, op);
  if (rc != BINE_CUDA_SUCCESS) return rc;
  if (!collective_reduces(s.kind)) op = BINE_CUDA_SUM;  // copies only
  if (root < 0 || root >= comm->p) return fail(BINE_CUDA_ERR_ARG, "%s: root %d outside 0..%d", s.function, root, comm->p - 1);
  const uint32_t es = dev::dtype_bytes(dtype);
  uint64_t nin = 0, nout = 0;
  buffer_elems(s.kind, comm->p, comm->rank, root, count, nin, nout);
  if ((rc = check_stream(s, stream, comm->device)) != BINE_CUDA_SUCCESS) return rc;
  if ((rc = check_device_ptr(s, sendbuf, nin * es, comm->device, "send buffer")) != BINE_CUDA_SUCCESS) return rc;
  if ((rc = check_device_ptr(s, recvbuf, nout * es, comm->device, "receive buffer")) != BINE_CUDA_SUCCESS) return rc;
  if (count == 0) return BINE_CUDA_SUCCESS;
  const PlanKey key{&s, root, count, es, body_commutative(s, dtype, comm->p),
                    is_in_place(s.kind, sendbuf, recvbuf, comm->rank, root, count, es) ? 1u : 0u};
  DevicePlan* dp = find_plan(s, comm, key, &rc);
  if (!dp) return rc;
  Bases<dev::kBufsPerRank> b{};
  b.p[dev::kWork] = dp->work_internal[0] ? dp->work[0] : static_cast<char*>(recvbuf);
  b.p[dev::kStage] = dp->stage[0];
  b.p[dev::kIn] = const_cast<char*>(static_cast<const char*>(sendbuf));
  b.p[dev::kOut] = static_cast<char*>(recvbuf);
  for (const dev::RankExec::Action& a : dp->actions) {
    rc = a.p2p ? exchange(comm, *dp, a, b.p, es, stream) : launch_batches(*dp, a.first, a.count, b, dtype, op, es, stream);
    if (rc != BINE_CUDA_SUCCESS) return rc;
  }
  error_text()[0] = '\0';
  return BINE_CUDA_SUCCESS;
}

/// A call on an in-process communicator: rank i's buffers are sendbufs[i] and recvbufs[i];
/// every rank's work is enqueued on `stream`.
inline int run_inproc(const Schedule& s, const void* const* sendbufs, void* const* recvbufs, size_t count, int dtype,
                      int op, int root, bine_cuda_comm_t comm, cudaStream_t stream) {
  if (!comm) return fail(BINE_CUDA_ERR_ARG, "%s_inproc: a NULL communicator", s.function);
  if (comm->kind != bine_cuda_comm_s::Kind::inproc)
    return fail(BINE_CUDA_ERR_ARG, "%s_inproc: not an in-process communicator", s.function);
  if (!sendbufs || !recvbufs) return fail(BINE_CUDA_ERR_ARG, "%s_inproc: NULL buffer arrays", s.function);
  int rc = check_dtype_op(s, dtype, op);
  if (rc != BINE_CUDA_SUCCESS) return rc;
  if (!collective_reduces(s.kind)) op = BINE_CUDA_SUM;
  if (root < 0 || root >= comm->p) return fail(BINE_CUDA_ERR_ARG, "%s: root %d outside 0..%d", s.function, root, comm->p - 1);
  const uint32_t es = dev::dtype_bytes(dtype);
  if ((rc = check_stream(s, stream, comm->device)) != BINE_CUDA_SUCCESS) return rc;
  PlanKey key{&s, root, count, es, body_commutative(s, dtype, comm->p), 0};
  for (int r = 0; r < comm->p; ++r) {
    uint64_t nin = 0, nout = 0;
    buffer_elems(s.kind, comm->p, r, root, count, nin, nout);
    if ((rc = check_device_ptr(s, sendbufs[r], nin * es, comm->device, "send buffer")) != BINE_CUDA_SUCCESS) return rc;
    if ((rc = check_device_ptr(s, recvbufs[r], nout * es, comm->device, "receive buffer")) != BINE_CUDA_SUCCESS) return rc;
    if (is_in_place(s.kind, sendbufs[r], recvbufs[r], r, root, count, es)) key.in_place |= uint64_t(1) << r;
  }
  if (count == 0) return BINE_CUDA_SUCCESS;
  DevicePlan* dp = find_plan(s, comm, key, &rc);
  if (!dp) return rc;
  Bases<kMaxInprocRanks * dev::kBufsPerRank + 1> b{};
  for (int r = 0; r < comm->p; ++r) {
    b.p[r * dev::kBufsPerRank + dev::kWork] = dp->work_internal[size_t(r)] ? dp->work[size_t(r)] : static_cast<char*>(recvbufs[r]);
    b.p[r * dev::kBufsPerRank + dev::kStage] = dp->stage[size_t(r)];
    b.p[r * dev::kBufsPerRank + dev::kIn] = const_cast<char*>(static_cast<const char*>(sendbufs[r]));
    b.p[r * dev::kBufsPerRank + dev::kOut] = static_cast<char*>(recvbufs[r]);
  }
  b.p[comm->p * dev::kBufsPerRank] = dp->arena;
  if ((rc = launch_batches(*dp, 0, uint32_t(dp->batches.size()), b, dtype, op, es, stream)) != BINE_CUDA_SUCCESS)
    return rc;
  error_text()[0] = '\0';
  return BINE_CUDA_SUCCESS;
}

/// An in-process communicator of p virtual ranks on the current device.
inline int comm_init_inproc(int p, bine_cuda_comm_t* out) {
  if (!out) return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_inproc: NULL output");
  *out = nullptr;
  if (p < 1 || p > kMaxInprocRanks)
    return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_inproc: p = %d outside 1..%d", p, kMaxInprocRanks);
  bine_cuda_comm_s* c = new (std::nothrow) bine_cuda_comm_s;
  if (!c) return fail(BINE_CUDA_ERR_NO_MEM, "cuda_comm_init_inproc: out of memory");
  c->kind = bine_cuda_comm_s::Kind::inproc;
  c->p = p;
  const cudaError_t e = cudaGetDevice(&c->device);
  if (e != cudaSuccess) {
    delete c;
    return cuda_fail(e, "cuda_comm_init_inproc");
  }
  *out = c;
  return BINE_CUDA_SUCCESS;
}

/// A communicator over an NCCL communicator (its ranks, its device; not owned).
inline int comm_init_nccl(void* nccl_comm, bine_cuda_comm_t* out) {
  if (!out) return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_nccl: NULL output");
  *out = nullptr;
#ifdef BINE_CUDA_WITH_NCCL
  ncclComm_t nc = static_cast<ncclComm_t>(nccl_comm);
  if (!nc) return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_nccl: a NULL ncclComm_t");
  std::unique_ptr<bine_cuda_comm_s> c(new (std::nothrow) bine_cuda_comm_s);
  if (!c) return fail(BINE_CUDA_ERR_NO_MEM, "cuda_comm_init_nccl: out of memory");
  c->kind = bine_cuda_comm_s::Kind::nccl;
  c->nccl = nc;
  if (ncclCommCount(nc, &c->p) != ncclSuccess || ncclCommUserRank(nc, &c->rank) != ncclSuccess ||
      ncclCommCuDevice(nc, &c->device) != ncclSuccess)
    return fail(BINE_CUDA_ERR_TRANSPORT, "cuda_comm_init_nccl: cannot query the NCCL communicator");
  *out = c.release();
  return BINE_CUDA_SUCCESS;
#else
  (void)nccl_comm;
  return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_nccl: built without BINE_CUDA_WITH_NCCL");
#endif
}

/// A communicator over a CUDA-aware MPI communicator (*mpi_comm, an MPI_Comm; not owned)
/// on the current device.
inline int comm_init_mpi(const void* mpi_comm, bine_cuda_comm_t* out) {
  if (!out) return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_mpi: NULL output");
  *out = nullptr;
#ifdef BINE_CUDA_WITH_MPI
  if (!mpi_comm) return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_mpi: a NULL MPI_Comm pointer");
  std::unique_ptr<bine_cuda_comm_s> c(new (std::nothrow) bine_cuda_comm_s);
  if (!c) return fail(BINE_CUDA_ERR_NO_MEM, "cuda_comm_init_mpi: out of memory");
  c->kind = bine_cuda_comm_s::Kind::mpi;
  c->mpi = *static_cast<const MPI_Comm*>(mpi_comm);
  if (MPI_Comm_size(c->mpi, &c->p) != MPI_SUCCESS || MPI_Comm_rank(c->mpi, &c->rank) != MPI_SUCCESS)
    return fail(BINE_CUDA_ERR_TRANSPORT, "cuda_comm_init_mpi: cannot query the MPI communicator");
  const cudaError_t e = cudaGetDevice(&c->device);
  if (e != cudaSuccess) return cuda_fail(e, "cuda_comm_init_mpi");
  *out = c.release();
  return BINE_CUDA_SUCCESS;
#else
  (void)mpi_comm;
  return fail(BINE_CUDA_ERR_ARG, "cuda_comm_init_mpi: built without BINE_CUDA_WITH_MPI");
#endif
}

/// Frees a communicator and its plans (device memory); waits for the device first.
inline int comm_free(bine_cuda_comm_t* comm) {
  if (!comm || !*comm) return BINE_CUDA_SUCCESS;
  int dev_before = 0;
  cudaGetDevice(&dev_before);
  cudaSetDevice((*comm)->device);
  cudaDeviceSynchronize();
  delete *comm;
  cudaSetDevice(dev_before);
  *comm = nullptr;
  return BINE_CUDA_SUCCESS;
}

}  // namespace bine::cuda
