// CPU tests of the CUDA target (docs/cuda.md, "Tests"): the generated .cu part compiled as
// host C++ (BINE_DEVICE_HOST_ONLY), its plans run on the CPU through the very tile bodies
// the kernels run (bine/device_kernels.hpp), for every schedule of dsl/lib.
//
//   device_host check        every schedule, p = 1..16, against a brute-force reference
//   device_host trace DIR P  per schedule, the messages each rank's plan exchanges (DIR/<f>.json),
//                            for validate_rounds.py to compare with `bine-cc schedule --json`
//
// Compiled by nvcc with -DBINE_DEVICE_GPU (tests/gpu/run.sh), the same cases also run on the
// GPU through the generated runtime's in-process transport (bine::cuda::run_inproc: kernels
// launched, buffers in device memory), plus a CUDA graph capture and the bad-input errors:
//   gpu_test gpu [PMAX]
//
// Two independent executions of each plan:
// - in process: bine::dev::inproc_exec's merged batches (what the in-process CUDA transport
//   launches);
// - per rank: bine::dev::rank_exec's actions with a loopback transport written here (every
//   send copied at its post, receives matched per sender in order: MPI's eager semantics),
//   i.e. what the NCCL and MPI transports run.
// Checks per case: each rank's result equals the reference (exact: the inputs are small
// integers, so sums and products of every type are exact whatever the bracketing); the send
// buffers are unchanged; an order-preserving schedule (at that p) reduces a non-commutative
// operator (affine maps mod 2^32) in rank order; float32 sums with inexact values agree
// bitwise on every rank where the proof says same bracketing.
#ifndef BINE_DEVICE_GPU
#define BINE_DEVICE_HOST_ONLY
#endif
#include BINE_DEVICE_SOURCE

#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace bine;
using namespace bine::dev;

namespace {

int failures = 0;
#define CHECK(cond, ...)                 \
  do {                                   \
    if (!(cond)) {                       \
      ++failures;                        \
      if (failures <= 30) {              \
        std::printf("FAIL: " __VA_ARGS__); \
        std::printf("\n");               \
      }                                  \
    }                                    \
  } while (0)

// ---- element arithmetic (oracles: exhaustive round trips and brute-force nearest) ----

void test_conversions() {
  CHECK(float_to_half(1.0f) == 0x3c00, "half(1)");
  CHECK(float_to_half(-2.0f) == 0xc000, "half(-2)");
  CHECK(float_to_half(65504.0f) == 0x7bff, "half(max)");
  CHECK(float_to_half(65520.0f) == 0x7c00, "half(65520) rounds to inf");
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001, "half(smallest subnormal)");
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24), "float(half 1)");
  CHECK(float_to_bf16(1.0f) == 0x3f80, "bf16(1)");
  CHECK(bf16_to_float(0x4049) == 3.140625f, "float(bf16 pi)");
  // Every finite half and bf16 pattern survives the round trip through float.
  for (uint32_t h = 0; h < 65536; ++h) {
    const bool nan_h = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (!nan_h) CHECK(float_to_half(half_to_float(uint16_t(h))) == h, "half round trip %04x", h);
    const bool nan_b = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (!nan_b) CHECK(float_to_bf16(bf16_to_float(uint16_t(h))) == h, "bf16 round trip %04x", h);
  }
  // Rounding to nearest (even on ties) against a brute-force search over the halves.
  std::mt19937 rng(7);
  std::vector<float> halves;
  for (uint32_t h = 0; h < 0x7c00; ++h) halves.push_back(half_to_float(uint16_t(h)));
  for (int k = 0; k < 3000; ++k) {
    const float f = std::ldexp(float(rng() % 1000000) / 1000000.0f + 0.5f, int(rng() % 40) - 25);
    size_t best = 0;
    for (size_t i = 1; i < halves.size(); ++i) {
      const double d = std::fabs(double(halves[i]) - f), db = std::fabs(double(halves[best]) - f);
      if (d < db || (d == db && (i & 1) == 0)) best = i;
    }
    if (f > 65520.0f) best = 0x7c00;
    CHECK(float_to_half(f) == best || f >= 65504.0f, "half(%a) = %04x, nearest %04zx", double(f), float_to_half(f), best);
  }
}

// ---- running plans ----

/// Runs batches [first, first + count) on base pointers.
using BatchRunner = std::function<void(const Batches&, uint32_t, uint32_t, char* const*)>;

/// How a case runs on the host, and its device enums for the GPU (-1: host only).
struct Exec {
  BatchRunner run;
  int dtype, op;
};
Exec typed_runner(int dtype, int op) {
  return {[=](const Batches& b, uint32_t first, uint32_t count, char* const* base) {
            if (!run_host(b, first, count, base, dtype, op)) CHECK(false, "run_host refused dtype %d op %d", dtype, op);
          },
          dtype, op};
}

/// A non-commutative, associative operator on int64 elements: affine maps x -> a x + b
/// mod 2^32 stored as (a << 32 | b); l op r = l after r... composition in rank order.
uint64_t affine(uint64_t l, uint64_t r) {
  const uint32_t a1 = uint32_t(l >> 32), b1 = uint32_t(l), a2 = uint32_t(r >> 32), b2 = uint32_t(r);
  return (uint64_t(uint32_t(a1 * a2)) << 32) | uint32_t(a1 * b2 + b1);
}
Exec affine_runner() {
  return {[](const Batches& b, uint32_t first, uint32_t count, char* const* base) {
    for (uint32_t k = first; k < first + count; ++k)
      for (uint32_t t = b.batch[k]; t < b.batch[k + 1]; ++t) {
        const Tile& tl = b.tiles[t];
        const DevOp& o = b.ops[tl.op];
        char* d = base[o.dst_buf] + (o.dst + tl.begin) * 8;
        const char* x = base[o.a_buf] + (o.a + tl.begin) * 8;
        if (!o.reduce) {
          std::memcpy(d, x, tl.n * 8ull);
          continue;
        }
        const char* y = base[o.b_buf] + (o.b + tl.begin) * 8;
        for (uint32_t i = 0; i < tl.n; ++i) {
          uint64_t u, v;
          std::memcpy(&u, x + i * 8, 8);
          std::memcpy(&v, y + i * 8, 8);
          const uint64_t w = affine(u, v);
          std::memcpy(d + i * 8, &w, 8);
        }
      }
  }, -1, -1};
}

struct RankBuffers {
  std::vector<char> in, out, work, stage;
};

struct Case {
  const Schedule* s;
  int64_t p, root;
  uint64_t count;
  uint32_t es;
  bool commutative;
  int dtype = -1, op = -1;  ///< the device enums (-1: an operator only the host runner has)
};

[[maybe_unused]] bool gpu_mode = false;  ///< also run each case on the GPU (BINE_DEVICE_GPU builds)

/// Builds every rank's plan; 1 when the schedule does not apply (requires), -1 on error.
int plans_for(const Case& c, std::vector<RankPlan>& plans) {
  plans.assign(size_t(c.p), RankPlan{});
  for (int64_t r = 0; r < c.p; ++r) {
    PlanRequest q;
    q.kind = c.s->kind, q.p = c.p, q.rank = r, q.root = c.root, q.count = c.count, q.elem_bytes = c.es;
    q.commutative = c.commutative;
    std::string err;
    const int rc = build_rank_plan(c.s->body, c.s->function, q, plans[size_t(r)], err);
    if (rc == BINE_CUDA_ERR_REQUIRES) return 1;
    if (rc != kOk) {
      CHECK(false, "%s p=%lld: plan: %s", c.s->function, (long long)c.p, err.c_str());
      return -1;
    }
  }
  return 0;
}

void alloc_rank(const RankPlan& rp, const Case& c, RankBuffers& b, const std::vector<char>& input, int64_t r) {
  uint64_t nin = 0, nout = 0;
  buffer_elems(c.s->kind, c.p, r, c.root, c.count, nin, nout);
  b.in = input;
  b.out.assign(nout * c.es + 1, char(0x5a));  // +1: never a null pointer
  b.work.assign(rp.work_elems * c.es + 1, 0);
  b.stage.assign(rp.stage_elems * c.es + 1, 0);
  (void)nin;
}

/// In process: one merged sequence of batches.
bool run_inproc(const Case& c, const std::vector<RankPlan>& plans, std::vector<RankBuffers>& bufs,
                const BatchRunner& run) {
  InprocExec ex;
  std::string err;
  if (inproc_exec(plans, ex, err) != kOk) {
    CHECK(false, "%s p=%lld: inproc_exec: %s", c.s->function, (long long)c.p, err.c_str());
    return false;
  }
  std::vector<char> arena(ex.arena_elems * c.es + 1);
  std::vector<char*> base(size_t(c.p) * kBufsPerRank + 1);
  for (int64_t r = 0; r < c.p; ++r) {
    RankBuffers& b = bufs[size_t(r)];
    char** rb = base.data() + r * kBufsPerRank;
    rb[kWork] = plans[size_t(r)].work_internal ? b.work.data() : b.out.data();
    rb[kStage] = b.stage.data();
    rb[kIn] = b.in.data();
    rb[kOut] = b.out.data();
  }
  base.back() = arena.data();
  run(ex.batches, 0, uint32_t(ex.batches.size()), base.data());
  return true;
}

/// Per rank, over a loopback transport (messages copied at their post, matched per sender
/// in order); records each rank's message groups for `trace`.
bool run_per_rank(const Case& c, const std::vector<RankPlan>& plans, std::vector<RankBuffers>& bufs,
                  const BatchRunner& run, std::vector<std::vector<std::vector<Msg>>>* trace = nullptr) {
  const size_t p = size_t(c.p);
  std::vector<RankExec> ex(p);
  std::vector<std::array<char*, kBufsPerRank>> base(p);
  for (size_t r = 0; r < p; ++r) {
    ex[r] = rank_exec(plans[r]);
    RankBuffers& b = bufs[r];
    base[r] = {plans[r].work_internal ? b.work.data() : b.out.data(), b.stage.data(), b.in.data(), b.out.data()};
  }
  if (trace) trace->assign(p, {});
  std::map<std::pair<size_t, size_t>, std::deque<std::vector<char>>> chan;
  std::vector<size_t> at(p, 0);
  std::vector<char> posted(p, 0);
  size_t done = 0;
  for (size_t r = 0; r < p; ++r) done += ex[r].actions.empty();
  while (done < p) {
    bool progress = false;
    for (size_t r = 0; r < p; ++r) {
      while (at[r] < ex[r].actions.size()) {
        const RankExec::Action& a = ex[r].actions[at[r]];
        if (!a.p2p) {
          run(ex[r].batches, a.first, a.count, base[r].data());
        } else {
          if (!posted[r]) {
            // NCCL and MPI read a send and write a receive while both are in flight: no
            // receive of an exchange may land where one of its sends reads.
            for (uint32_t i = 0; i < a.count; ++i)
              for (uint32_t j = 0; j < a.count; ++j) {
                const Msg& x = ex[r].msgs[a.first + i];
                const Msg& y = ex[r].msgs[a.first + j];
                if (x.recv && !y.recv && x.buf == y.buf && x.off < y.off + y.n && y.off < x.off + x.n)
                  CHECK(false, "%s p=%lld: rank %zu receives into elements its exchange sends", c.s->function,
                        (long long)c.p, r);
              }
            for (uint32_t i = 0; i < a.count; ++i) {
              const Msg& m = ex[r].msgs[a.first + i];
              if (m.recv) continue;
              const char* src = base[r][m.buf] + m.off * c.es;
              chan[{r, size_t(m.peer)}].emplace_back(src, src + m.n * c.es);
            }
            posted[r] = 1;
            progress = true;
          }
          std::map<size_t, size_t> need;
          bool ready = true;
          for (uint32_t i = 0; i < a.count; ++i) {
            const Msg& m = ex[r].msgs[a.first + i];
            if (m.recv && chan[{size_t(m.peer), r}].size() < ++need[size_t(m.peer)]) ready = false;
          }
          if (!ready) break;
          for (uint32_t i = 0; i < a.count; ++i) {
            const Msg& m = ex[r].msgs[a.first + i];
            if (!m.recv) continue;
            std::deque<std::vector<char>>& q = chan[{size_t(m.peer), r}];
            if (q.front().size() != m.n * c.es) {
              CHECK(false, "%s p=%lld: rank %zu receives %llu elements from %lld, which sent %zu bytes", c.s->function,
                    (long long)c.p, r, (unsigned long long)m.n, (long long)m.peer, q.front().size());
              return false;
            }
            std::memcpy(base[r][m.buf] + m.off * c.es, q.front().data(), q.front().size());
            q.pop_front();
          }
          posted[r] = 0;
          if (trace)
            (*trace)[r].emplace_back(ex[r].msgs.begin() + a.first, ex[r].msgs.begin() + a.first + a.count);
        }
        progress = true;
        if (++at[r] == ex[r].actions.size()) ++done;
      }
    }
    if (!progress) {
      CHECK(false, "%s p=%lld: the per-rank plans deadlock", c.s->function, (long long)c.p);
      return false;
    }
  }
  for (auto& [k, q] : chan) CHECK(q.empty(), "%s p=%lld: a message from %zu to %zu is never received", c.s->function,
                                  (long long)c.p, k.first, k.second);
  return true;
}

/// Element i of rank r's input (small values: exact arithmetic in every type).
template <class S>
using Fold = std::function<S(S, S)>;

/// The reference outputs of every rank (empty where undefined: exscan's rank 0).
template <class S>
std::vector<std::vector<S>> reference(const Case& c, const std::vector<std::vector<S>>& in, const Fold<S>& op) {
  const size_t p = size_t(c.p), n = c.count;
  std::vector<std::vector<S>> out(p);
  auto fold = [&](size_t lo, size_t hi, size_t idx) {  // in[lo][idx] op ... op in[hi-1][idx]
    S acc = in[lo][idx];
    for (size_t k = lo + 1; k < hi; ++k) acc = op(acc, in[k][idx]);
    return acc;
  };
  for (size_t r = 0; r < p; ++r) {
    const bool root = int64_t(r) == c.root;
    switch (c.s->kind) {
      case Collective::allreduce: for (size_t i = 0; i < n; ++i) out[r].push_back(fold(0, p, i)); break;
      case Collective::reduce: if (root) for (size_t i = 0; i < n; ++i) out[r].push_back(fold(0, p, i)); break;
      case Collective::scan: for (size_t i = 0; i < n; ++i) out[r].push_back(fold(0, r + 1, i)); break;
      case Collective::exscan: if (r > 0) for (size_t i = 0; i < n; ++i) out[r].push_back(fold(0, r, i)); break;
      case Collective::bcast: for (size_t i = 0; i < n; ++i) out[r].push_back(in[size_t(c.root)][i]); break;
      case Collective::reduce_scatter: for (size_t i = 0; i < n; ++i) out[r].push_back(fold(0, p, r * n + i)); break;
      case Collective::allgather:
        for (size_t j = 0; j < p; ++j) for (size_t i = 0; i < n; ++i) out[r].push_back(in[j][i]);
        break;
      case Collective::gather:
        if (root) for (size_t j = 0; j < p; ++j) for (size_t i = 0; i < n; ++i) out[r].push_back(in[j][i]);
        break;
      case Collective::scatter: for (size_t i = 0; i < n; ++i) out[r].push_back(in[size_t(c.root)][r * n + i]); break;
      case Collective::alltoall:
        for (size_t j = 0; j < p; ++j) for (size_t i = 0; i < n; ++i) out[r].push_back(in[j][r * n + i]);
        break;
      case Collective::barrier: break;
    }
  }
  return out;
}

template <class S>
std::vector<char> bytes_of(const std::vector<S>& v) {
  std::vector<char> b(v.size() * sizeof(S) + 1, 0);
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(S));
  return b;
}

/// One case with element type S (storage), values from `gen`, operator `op` (reference) and
/// the executor's runner; both executions checked.
#ifdef BINE_DEVICE_GPU
template <class S>
void gpu_case(const Case& c, const Exec& ex, const std::vector<std::vector<S>>& in,
              const std::vector<std::vector<S>>& want, const char* what);
#endif

template <class S>
void run_case(const Case& c, const std::function<S(size_t, size_t)>& gen, const Fold<S>& op, const Exec& ex,
              const char* what, std::vector<std::vector<char>>* outs = nullptr, bool compare = true) {
  std::vector<RankPlan> plans;
  if (plans_for(c, plans) != 0) return;
  std::vector<std::vector<S>> in(size_t(c.p));
  for (int64_t r = 0; r < c.p; ++r) {
    uint64_t nin = 0, nout = 0;
    buffer_elems(c.s->kind, c.p, r, c.root, c.count, nin, nout);
    // Ranks without a send buffer still get the full-size reference input (bcast, scatter).
    const uint64_t nref = std::max<uint64_t>(nin, c.count * (bine::collective_has_rank_blocks(c.s->kind) ? uint64_t(c.p) : 1));
    for (uint64_t i = 0; i < nref; ++i) in[size_t(r)].push_back(gen(size_t(r), i));
  }
  const std::vector<std::vector<S>> want = reference(c, in, op);
  for (int path = 0; path < 2; ++path) {
    std::vector<RankBuffers> bufs(size_t(c.p));
    for (int64_t r = 0; r < c.p; ++r) alloc_rank(plans[size_t(r)], c, bufs[size_t(r)], bytes_of(in[size_t(r)]), r);
    const bool ok = path == 0 ? run_inproc(c, plans, bufs, ex.run) : run_per_rank(c, plans, bufs, ex.run);
    if (!ok) return;
    for (int64_t r = 0; r < c.p; ++r) {
      const RankBuffers& b = bufs[size_t(r)];
      CHECK(b.in == bytes_of(in[size_t(r)]), "%s %s p=%lld root=%lld n=%llu rank %lld: the send buffer changed",
            c.s->function, what, (long long)c.p, (long long)c.root, (unsigned long long)c.count, (long long)r);
      const std::vector<S>& w = want[size_t(r)];
      if (w.empty()) continue;
      const bool same = !compare || std::memcmp(b.out.data(), w.data(), w.size() * sizeof(S)) == 0;
      if (!same) {
        size_t i = 0;
        while (std::memcmp(b.out.data() + i * sizeof(S), &w[i], sizeof(S)) == 0) ++i;
        CHECK(false, "%s %s (%s) p=%lld root=%lld n=%llu: rank %lld element %zu differs", c.s->function, what,
              path == 0 ? "in process" : "per rank", (long long)c.p, (long long)c.root, (unsigned long long)c.count,
              (long long)r, i);
      }
      if (outs && path == 0) outs->push_back(std::vector<char>(b.out.begin(), b.out.begin() + long(w.size() * sizeof(S))));
    }
  }
#ifdef BINE_DEVICE_GPU
  if (gpu_mode && ex.dtype >= 0 && compare) gpu_case(c, ex, in, want, what);
#endif
}

bool rooted(Collective c) {
  return c == Collective::bcast || c == Collective::reduce || c == Collective::gather || c == Collective::scatter;
}

#ifdef BINE_DEVICE_GPU
#define CUDA_OK(x)                                                                      \
  do {                                                                                  \
    const cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

/// The in-process communicator of p ranks (one per p, kept for the run: plans are cached).
bine_cuda_comm_t gpu_comm(int64_t p) {
  static std::map<int64_t, bine_cuda_comm_t> comms;
  bine_cuda_comm_t& c = comms[p];
  if (!c && bine::cuda::comm_init_inproc(int(p), &c) != BINE_CUDA_SUCCESS) {
    std::printf("comm_init_inproc(%lld): %s\n", (long long)p, bine::cuda::error_text());
    std::exit(1);
  }
  return c;
}

/// The case on the GPU: device buffers, bine::cuda::run_inproc, results against `want`.
template <class S>
void gpu_case(const Case& c, const Exec& ex, const std::vector<std::vector<S>>& in,
              const std::vector<std::vector<S>>& want, const char* what) {
  const size_t p = size_t(c.p);
  std::vector<void*> sb(p, nullptr), rb(p, nullptr);
  std::vector<uint64_t> nin(p), nout(p);
  for (size_t r = 0; r < p; ++r) {
    buffer_elems(c.s->kind, c.p, int64_t(r), c.root, c.count, nin[r], nout[r]);
    CUDA_OK(cudaMalloc(&sb[r], nin[r] * sizeof(S) + 16));
    CUDA_OK(cudaMalloc(&rb[r], nout[r] * sizeof(S) + 16));
    CUDA_OK(cudaMemcpy(sb[r], in[r].data(), nin[r] * sizeof(S), cudaMemcpyHostToDevice));
  }
  const int rc = bine::cuda::run_inproc(*c.s, sb.data(), rb.data(), c.count, ex.dtype, ex.op, int(c.root), gpu_comm(c.p),
                                        cudaStreamPerThread);
  CHECK(rc == BINE_CUDA_SUCCESS, "%s %s (gpu) p=%lld: %s", c.s->function, what, (long long)c.p, bine::cuda::error_text());
  CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  for (size_t r = 0; r < p && rc == BINE_CUDA_SUCCESS; ++r) {
    std::vector<S> got(nout[r]), sent(nin[r]);
    CUDA_OK(cudaMemcpy(got.data(), rb[r], nout[r] * sizeof(S), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(sent.data(), sb[r], nin[r] * sizeof(S), cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(sent.data(), in[r].data(), nin[r] * sizeof(S)) == 0, "%s %s (gpu) p=%lld rank %zu: send buffer changed",
          c.s->function, what, (long long)c.p, r);
    if (!want[r].empty())
      CHECK(std::memcmp(got.data(), want[r].data(), want[r].size() * sizeof(S)) == 0,
            "%s %s (gpu) p=%lld root=%lld n=%llu: rank %zu differs", c.s->function, what, (long long)c.p,
            (long long)c.root, (unsigned long long)c.count, r);
  }
  for (size_t r = 0; r < p; ++r) cudaFree(sb[r]), cudaFree(rb[r]);
}

const Schedule* find_schedule(Collective kind) {
  for (size_t k = 0; k < bine_device_schedule_count; ++k)
    if (bine_device_schedules[k].kind == kind) return &bine_device_schedules[k];
  return nullptr;
}

/// A CUDA graph: an allreduce captured after a warm-up call, replayed, gives the result of
/// the direct call; bad inputs give their codes and enqueue nothing.
void gpu_graph_and_errors() {
  const Schedule* s = find_schedule(Collective::allreduce);
  if (!s) return;
  const int p = 8;
  const size_t n = 1000;
  bine_cuda_comm_t comm = gpu_comm(p);
  std::vector<void*> sb(p), rb(p);
  std::vector<float> host(n);
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < n; ++i) host[i] = float(r + 1);
    CUDA_OK(cudaMalloc(&sb[r], n * 4));
    CUDA_OK(cudaMalloc(&rb[r], n * 4));
    CUDA_OK(cudaMemcpy(sb[r], host.data(), n * 4, cudaMemcpyHostToDevice));
  }
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CHECK(bine::cuda::run_inproc(*s, sb.data(), rb.data(), n, BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 0, comm, st) == 0,
        "graph warm-up: %s", bine::cuda::error_text());
  CUDA_OK(cudaStreamSynchronize(st));
  for (int r = 0; r < p; ++r) CUDA_OK(cudaMemset(rb[r], 0, n * 4));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  const int rc = bine::cuda::run_inproc(*s, sb.data(), rb.data(), n, BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 0, comm, st);
  CUDA_OK(cudaStreamEndCapture(st, &graph));
  CHECK(rc == 0, "captured call: %s", bine::cuda::error_text());
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, st));
  CUDA_OK(cudaStreamSynchronize(st));
  for (int r = 0; r < p; ++r) {
    CUDA_OK(cudaMemcpy(host.data(), rb[r], n * 4, cudaMemcpyDeviceToHost));
    CHECK(host[0] == float(p * (p + 1) / 2) && host[n - 1] == float(p * (p + 1) / 2), "graph replay: rank %d got %g", r,
          double(host[0]));
  }
  // Bad inputs: a host pointer, a datatype and an operator outside the enums.
  std::vector<char> on_host(n * 4);
  std::vector<void*> bad = sb;
  bad[3] = on_host.data();
  CHECK(bine::cuda::run_inproc(*s, bad.data(), rb.data(), n, BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 0, comm, st) ==
            BINE_CUDA_ERR_ARG, "a host send buffer is refused");
  std::printf("host pointer: %s\n", bine::cuda::error_text());
  CHECK(bine::cuda::run_inproc(*s, sb.data(), rb.data(), n, bine_cuda_dtype_t(42), BINE_CUDA_SUM, 0, comm, st) ==
            BINE_CUDA_ERR_TYPE, "datatype 42 is refused");
  CHECK(bine::cuda::run_inproc(*s, sb.data(), rb.data(), n, BINE_CUDA_FLOAT32, bine_cuda_op_t(9), 0, comm, st) ==
            BINE_CUDA_ERR_OP, "operator 9 is refused");
  CHECK(bine::cuda::run(*s, sb[0], rb[0], n, BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 0, comm, st) == BINE_CUDA_ERR_ARG,
        "an in-process communicator through the per-rank entry is refused");
  int devices = 0;
  CUDA_OK(cudaGetDeviceCount(&devices));
  if (devices > 1) {  // a stream of another device
    cudaStream_t other;
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaStreamCreate(&other));
    CUDA_OK(cudaSetDevice(0));
    CHECK(bine::cuda::run_inproc(*s, sb.data(), rb.data(), n, BINE_CUDA_FLOAT32, BINE_CUDA_SUM, 0, comm, other) ==
              BINE_CUDA_ERR_DEVICE, "a stream of device 1 is refused");
  }
  for (int r = 0; r < p; ++r) cudaFree(sb[r]), cudaFree(rb[r]);
}
#endif

bool in_order_range(const Schedule& s, int64_t p) {
  for (int i = 0; i < s.norder; ++i)
    if (p >= s.order[i][0] && p <= s.order[i][1]) return true;
  return false;
}

int check(int pmax) {
  test_conversions();
  size_t cases = 0;
  for (size_t k = 0; k < bine_device_schedule_count; ++k) {
    const Schedule& s = bine_device_schedules[k];
    const bool reduces = collective_reduces(s.kind);
    for (int64_t p = 1; p <= pmax; ++p) {
      std::vector<int64_t> roots{0};
      if (rooted(s.kind) && p > 2) roots = {0, p - 1, p / 2};
      for (int64_t root : roots)
        for (uint64_t n : {uint64_t(1), uint64_t(p) + 3, uint64_t(3 * p - 1), uint64_t(0)}) {
          ++cases;
          Case c{&s, p, root, n, 4, true};
          run_case<int32_t>(c, [](size_t r, size_t i) { return int32_t((r * 7 + i * 13) % 11) - 5; },
                            [](int32_t a, int32_t b) { return a + b; }, typed_runner(BINE_CUDA_INT32, BINE_CUDA_SUM),
                            "int32 sum");
          if (!reduces) {
            Case c8{&s, p, root, n, 1, true};
            run_case<uint8_t>(c8, [](size_t r, size_t i) { return uint8_t(r * 31 + i); },
                              [](uint8_t a, uint8_t) { return a; }, typed_runner(BINE_CUDA_UINT8, BINE_CUDA_SUM),
                              "uint8 copy");
            continue;
          }
          Case ch{&s, p, root, n, 2, true};
          run_case<uint16_t>(ch, [](size_t r, size_t i) { return float_to_half(float((r + i) % 4)); },
                             [](uint16_t a, uint16_t b) { return float_to_half(half_to_float(a) + half_to_float(b)); },
                             typed_runner(BINE_CUDA_FLOAT16, BINE_CUDA_SUM), "float16 sum");
          run_case<uint16_t>(ch, [](size_t r, size_t i) { return float_to_bf16(float(int((r * 5 + i) % 9) - 4)); },
                             [](uint16_t a, uint16_t b) { return bf16_to_float(a) < bf16_to_float(b) ? b : a; },
                             typed_runner(BINE_CUDA_BFLOAT16, BINE_CUDA_MAX), "bfloat16 max");
          Case cd{&s, p, root, n, 8, true};
          run_case<double>(cd, [](size_t r, size_t i) { return double((r * 3 + i) % 2 + 1); },
                           [](double a, double b) { return a * b; }, typed_runner(BINE_CUDA_FLOAT64, BINE_CUDA_PROD),
                           "float64 prod");
          run_case<int64_t>(cd, [](size_t r, size_t i) { return int64_t((r * 11 + i * 7) % 23) - 11; },
                            [](int64_t a, int64_t b) { return b < a ? b : a; },
                            typed_runner(BINE_CUDA_INT64, BINE_CUDA_MIN), "int64 min");
          Case cu{&s, p, root, n, 1, true};
          run_case<uint8_t>(cu, [](size_t r, size_t i) { return uint8_t(r * 3 + i + 1); },
                            [](uint8_t a, uint8_t b) { return uint8_t(a * b); }, typed_runner(BINE_CUDA_UINT8, BINE_CUDA_PROD),
                            "uint8 prod");
          if (in_order_range(s, p)) {  // canonical order for a non-commutative operator
            Case cn{&s, p, root, n, 8, false};
            run_case<uint64_t>(cn, [](size_t r, size_t i) { return (uint64_t(2 * r + 3 + i) << 32) | uint64_t(r * 5 + i + 1); },
                               affine, affine_runner(), "non-commutative (affine)");
            if (s.kind == Collective::allreduce && s.same_bracketing && n > 0) {
              // Inexact float sums: every rank's bits agree (same bracketing everywhere).
              Case cf{&s, p, root, n, 4, false};
              std::vector<std::vector<char>> outs;
              run_case<float>(cf, [](size_t r, size_t i) { return 1.0f / float(r + 3) + float(i) * 1e-3f; },
                              [](float a, float b) { return a + b; }, typed_runner(BINE_CUDA_FLOAT32, BINE_CUDA_SUM),
                              "float32 bits", &outs, /*compare=*/false);
              for (size_t r = 1; r < outs.size(); ++r)
                CHECK(outs[r] == outs[0], "%s p=%lld: float32 sum bits differ between rank 0 and rank %zu", s.function,
                      (long long)p, r);
            }
          }
        }
    }
  }
  std::printf("device_host: %zu schedules, p = 1..%d, %zu shapes: %d failures\n", bine_device_schedule_count, pmax,
              cases, failures);
  return failures == 0 ? 0 : 1;
}

/// The messages of every rank's plan at p, count n (int32), as JSON: ranks -> exchanges ->
/// [is_recv, peer, elements], for validate_rounds.py.
int trace(const char* dir, int64_t p, uint64_t n) {
  for (size_t k = 0; k < bine_device_schedule_count; ++k) {
    const Schedule& s = bine_device_schedules[k];
    Case c{&s, p, 0, n, 4, true};
    std::vector<RankPlan> plans;
    if (plans_for(c, plans) != 0) continue;
    std::vector<RankBuffers> bufs(static_cast<size_t>(p));
    for (int64_t r = 0; r < p; ++r) {
      uint64_t nin = 0, nout = 0;
      buffer_elems(s.kind, p, r, 0, n, nin, nout);
      alloc_rank(plans[size_t(r)], c, bufs[size_t(r)], std::vector<char>(nin * 4 + 1, 1), r);
    }
    std::vector<std::vector<std::vector<Msg>>> tr;
    if (!run_per_rank(c, plans, bufs, typed_runner(BINE_CUDA_INT32, BINE_CUDA_SUM).run, &tr)) continue;
    const std::string path = std::string(dir) + "/" + s.function + ".json";
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return 2;
    std::fprintf(f, "{\"function\": \"%s\", \"p\": %lld, \"count\": %llu, \"ranks\": [", s.function, (long long)p,
                 (unsigned long long)n);
    for (size_t r = 0; r < tr.size(); ++r) {
      std::fprintf(f, "%s[", r ? ", " : "");
      for (size_t x = 0; x < tr[r].size(); ++x) {
        std::fprintf(f, "%s[", x ? ", " : "");
        for (size_t m = 0; m < tr[r][x].size(); ++m)
          std::fprintf(f, "%s[%d, %lld, %llu]", m ? ", " : "", tr[r][x][m].recv ? 1 : 0, (long long)tr[r][x][m].peer,
                       (unsigned long long)tr[r][x][m].n);
        std::fprintf(f, "]");
      }
      std::fprintf(f, "]");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "check") return check(argc > 2 ? std::atoi(argv[2]) : 16);
#ifdef BINE_DEVICE_GPU
  if (mode == "gpu") {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::printf("gpu_test: skipped: no CUDA device\n");
      return 0;
    }
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    std::printf("gpu_test on %s\n", prop.name);
    gpu_mode = true;
    gpu_graph_and_errors();
    return check(argc > 2 ? std::atoi(argv[2]) : 16);
  }
#endif
  if (mode == "trace" && argc > 4) return trace(argv[2], std::atoll(argv[3]), std::strtoull(argv[4], nullptr, 10));
  std::fprintf(stderr, "usage: device_host check [PMAX] | trace DIR P COUNT\n");
  return 2;
}
