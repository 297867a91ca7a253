// bine/flat_replay.hpp: the flat replay of a generated collective's persistent plan (issue
// 48, docs/architecture.md "Flat replay"), and the runtime's local primitives it shares with
// bine/mpi_runtime.hpp (the error text, local copies, the testing hooks).
//
// A generated collective's plain entry keeps, per thread, a few FlatPlans: the exact list of
// MPI calls, local reductions and copies a replay of its persistent plan made for one call
// shape (every argument but the buffer addresses), with each address as (buffer, offset): the
// user's first or second buffer argument, or the plan's own arena (the working and scratch
// memory the replay took from the BufferPool). The list is *recorded* from a replay by the
// general executor (BasicContext's rounds, DeferredInput, copy-out), not derived a second
// time, so it does what that replay did, in its order. A later call of the same shape whose
// facts still hold (FlatPlan::applies: the communicator not freed since, the environment
// unchanged, no nonblocking call in flight, the send and receive buffers not aliased) runs
// the list and nothing else: no context, no argument re-checks beyond those that depend on
// the addresses, no datatype or operator queries, no round executor.
#pragma once
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "bine/mpi_transport.hpp"

/// Inlining hints of the flat path (GCC, Clang; nothing elsewhere): the flat path is
/// inlined into each generated entry, the general path and error handling are not.
#if defined(__GNUC__)
#define BINE_ALWAYS_INLINE __attribute__((always_inline))
#define BINE_NOINLINE __attribute__((noinline))
#define BINE_COLD __attribute__((noinline, cold))
#else
#define BINE_ALWAYS_INLINE
#define BINE_NOINLINE
#define BINE_COLD
#endif

namespace bine::mpi {

#ifdef BINE_MAX_CHUNK
inline constexpr uint64_t kMaxChunk = BINE_MAX_CHUNK;
#else
inline constexpr uint64_t kMaxChunk = INT_MAX;
#endif

/// Bytes of the per-thread error text, terminating NUL included (longer texts are cut).
inline constexpr size_t kErrorTextBytes = 512;
/// The calling thread's error text: why the last generated collective it called failed,
/// "" after a successful call or before any. Static thread-local storage, no allocation.
inline char* error_text() {
  static thread_local char text[kErrorTextBytes] = "";
  return text;
}

/// Describes MPI error `rc` of function `name` as the thread's error_text() ("<name>: MPI
/// error <rc>: <MPI_Error_string>"), for a failure no other text describes.
inline void describe_mpi_error(const char* name, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "unknown");
  std::snprintf(error_text(), kErrorTextBytes, "%s: MPI error %d: %s", name, rc, text);
}

/// Bytes the calling thread's generated collectives copied locally (working buffer, scratch,
/// the user's buffers: everything but messages and reductions), counted only in a build with
/// BINE_COUNT_COPIES defined (bench/copy_passes.cpp: full-buffer passes per schedule).
inline uint64_t& copied_bytes() {
  static thread_local uint64_t n = 0;
  return n;
}
/// memcpy / memmove of the runtime's local copies (copied_bytes()).
inline void local_copy(void* to, const void* from, size_t n) {
#ifdef BINE_COUNT_COPIES
  copied_bytes() += n;
#endif
  std::memcpy(to, from, n);
}
inline void local_move(void* to, const void* from, size_t n) {
#ifdef BINE_COUNT_COPIES
  copied_bytes() += n;
#endif
  std::memmove(to, from, n);
}

/// Testing hook: when set, called with the working buffer (base, element bytes, elements)
/// once a call has set it up, so a PMPI tracer can express offsets in its elements. While
/// it is set no call takes the flat replay (the tracer sees every call set up).
inline void (*&working_buffer_hook())(const void*, uint64_t, uint64_t) {
  static void (*hook)(const void*, uint64_t, uint64_t) = nullptr;
  return hook;
}
/// Testing hook: when set, called with the user's input (base, element bytes, elements) when
/// a call replays with its copy-in deferred (DeferredInput): sends then read element e of
/// the vector at base + e * element bytes, so a tracer maps those addresses to offsets too.
inline void (*&input_buffer_hook())(const void*, uint64_t, uint64_t) {
  static void (*hook)(const void*, uint64_t, uint64_t) = nullptr;
  return hook;
}

inline bool nb_any_live();                       // bine/mpi_runtime.hpp
inline std::atomic<int64_t>& segment_env_cache();  // bine/mpi_runtime.hpp

/// Calls the calling thread ran as flat plans (FlatCache::run), for tests and benchmarks.
inline uint64_t& flat_calls() {
  static thread_local uint64_t n = 0;
  return n;
}

/// How many communicators with flat plans were freed so far, process-wide: a FlatPlan made
/// at another value may name a handle that MPI has since reused for a new communicator (of
/// another size or rank), so it no longer applies. Counted by the delete callback of an
/// attribute flat_watch() puts on each communicator a FlatPlan is made for.
inline std::atomic<uint64_t>& flat_epoch() {
  static std::atomic<uint64_t> e{0};
  return e;
}
/// Makes MPI_Comm_free of `comm` advance flat_epoch() (an attribute with a delete callback,
/// not copied by MPI_Comm_dup). False when the attribute cannot be set (no flat plan then).
inline bool flat_watch(MPI_Comm comm) {
  static int keyval = MPI_KEYVAL_INVALID;
  static std::once_flag once;
  std::call_once(once, [] {
    auto del = [](MPI_Comm, int, void*, void*) -> int {
      flat_epoch().fetch_add(1, std::memory_order_relaxed);
      return MPI_SUCCESS;
    };
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, &keyval, nullptr) != MPI_SUCCESS)
      keyval = MPI_KEYVAL_INVALID;
  });
  if (keyval == MPI_KEYVAL_INVALID) return false;
  void* v = nullptr;
  int flag = 0;
  if (MPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS) return false;
  static char marker;
  return flag || MPI_Comm_set_attr(comm, keyval, &marker) == MPI_SUCCESS;
}

/// The shape of one call of a generated collective: every argument but the buffer
/// addresses, exactly (counts, datatype, operator and communicator handles, root), and of
/// each buffer argument (at most two: sendbuf / recvbuf, or bcast's buffer) only whether it
/// is NULL or MPI_IN_PLACE. Two calls of equal shapes make the same checks and the same
/// rounds; their addresses are what differs.
struct CallKey {
  static constexpr int kWords = 7, kPtrs = 2;
  uint64_t word[kWords] = {};
  const void* ptr[kPtrs] = {};
  uint32_t nwords = 0, nptrs = 0, ptr_class = 0;  ///< 2 bits per buffer: 0 an address, 1 NULL, 2 MPI_IN_PLACE
  bool fits = true;                               ///< false: more arguments than kept (no flat plan)

  template <class... Args>
  explicit CallKey(const Args&... args) {
    (add(args), ...);
  }
  template <class T>
  void add(const T& v) {
    if constexpr (std::is_pointer_v<T> && std::is_void_v<std::remove_cv_t<std::remove_pointer_t<T>>>) {
      if (nptrs == kPtrs) {
        fits = false;
        return;
      }
      const void* p = v;
      const uint32_t cls = p == nullptr ? 1u : p == MPI_IN_PLACE ? 2u : 0u;
      ptr_class |= cls << (2 * nptrs);
      ptr[nptrs++] = p;
    } else if constexpr (std::is_pointer_v<T>) {
      // A handle (Open MPI: a pointer to its object) or an array argument.
      word_of(reinterpret_cast<uintptr_t>(v));
    } else {
      static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "a call argument CallKey cannot key");
      word_of(uint64_t(v));
    }
  }
  void word_of(uint64_t w) {
    if (nwords == kWords) {
      fits = false;
      return;
    }
    word[nwords++] = w;
  }
  /// Equal shapes (the addresses are not compared).
  bool same_shape(const CallKey& o) const {
    // Every word, unused ones zero: one comparison of the whole key, no loop.
    static_assert(kWords == 7, "same_shape compares seven words");
    const uint64_t d = (word[0] ^ o.word[0]) | (word[1] ^ o.word[1]) | (word[2] ^ o.word[2]) |
                       (word[3] ^ o.word[3]) | (word[4] ^ o.word[4]) | (word[5] ^ o.word[5]) |
                       (word[6] ^ o.word[6]) | uint64_t(nwords ^ o.nwords) | uint64_t(nptrs ^ o.nptrs) |
                       uint64_t(ptr_class ^ o.ptr_class);
    return d == 0;
  }
  /// Buffer argument i holds an address (not NULL, not MPI_IN_PLACE).
  bool addressed(uint32_t i) const { return i < nptrs && ((ptr_class >> (2 * i)) & 3u) == 0; }
};

/// One operation of a flat plan. Buffers: kBuf0 / kBuf1 the call's first / second buffer
/// argument, kArena the plan's own memory, kNone no address (an empty message).
struct FlatStep {
  enum Kind : uint8_t { isend, irecv, waitall, send, recv, sendrecv, reduce, copy, move };
  static constexpr uint8_t kBuf0 = 0, kBuf1 = 1, kArena = 2, kNone = 3;
  Kind kind = waitall;
  uint8_t ra = kNone, rb = kNone;  ///< a: the send side / source / reduce input; b: the receive side / destination / inout
  int32_t peer = -1, peer2 = -1;   ///< messages: a's peer, b's peer (sendrecv)
  int32_t n = 0, n2 = 0;           ///< messages and reductions: elements of a's, b's side
  uint64_t a = 0, b = 0;           ///< byte offsets into ra, rb
  uint64_t bytes = 0;              ///< copies: bytes
};

/// An aliasing check of the original call that depends on the addresses (MPI 3.1 Sec. 2.3),
/// made again by every flat call: buffer `i`'s bytes [lo_i, hi_i) relative to its address
/// must not overlap buffer `j`'s, nor may the two addresses be equal.
struct FlatAlias {
  uint8_t i = 0, j = 1;
  bool ranges = true;  ///< both types contiguous: byte ranges compared (else the addresses only)
  int64_t lo_i = 0, hi_i = 0, lo_j = 0, hi_j = 0;
};

/// The operations one replay of a persistent plan made, for one call shape (CallKey).
struct FlatPlan {
  CallKey key;
  MpiTransport transport;    ///< bound as the recorded call's (communicator, datatype, operator, tag)
  uint64_t epoch = 0;        ///< flat_epoch() when made
  int64_t segment = -1;      ///< the BINE_SEGMENT_BYTES value it was made under (segment_env())
  std::vector<FlatStep> steps;
  std::vector<FlatAlias> aliases;
  uint64_t arena_bytes = 0;  ///< its own memory (working buffer, scratch), allocated once
  uint32_t max_posts = 0;    ///< requests in flight at once
};

/// What the flat replay of one generated function keeps per thread: up to kEntries plans (by
/// shape; when full, a new shape replaces a pseudo-random one), each with its arena and
/// request array. Not copyable.
class FlatCache {
 public:
  static constexpr int kEntries = 16;
  FlatCache() = default;
  FlatCache(const FlatCache&) = delete;
  FlatCache& operator=(const FlatCache&) = delete;
  ~FlatCache() {
    for (Entry& e : e_) std::free(e.arena);
  }
  /// Keeps `p`, replacing the entry of the same shape, else a free one, else a pseudo-random
  /// one. False (nothing kept) when its arena or requests cannot be allocated.
  bool insert(std::unique_ptr<FlatPlan> p) {
    Entry* old = entry(p->key);
    int at = old ? int(old - e_) : -1;
    if (at < 0) {
      // Full: a pseudo-random entry (a fixed sequence, so runs repeat), which keeps a share of
      // the shapes of a cycle through more shapes than entries, where replacing the oldest
      // would keep none.
      next_ = next_ * 6364136223846793005ull + 1442695040888963407ull;
      at = used_ < kEntries ? used_++ : int((next_ >> 33) % kEntries);
    }
    Entry& e = e_[at];
    std::free(e.arena);
    e.arena = nullptr;
    e.plan.reset();
    if (p->arena_bytes > 0 && !(e.arena = static_cast<char*>(std::aligned_alloc(64, (p->arena_bytes + 63) / 64 * 64))))
      return false;
    try {
      e.requests.assign(p->max_posts, MPI_REQUEST_NULL);
    } catch (const std::bad_alloc&) {
      std::free(e.arena);
      e.arena = nullptr;
      return false;
    }
    e.key = p->key;
    e.plan = std::move(p);
    last_ = at;
    return true;
  }
  /// Runs the plan of `k`'s shape if there is one that applies (FlatPlan's facts hold for
  /// this call): *rc is then the call's result and the return value true. False: the call
  /// must take the general path (nothing was done).
  bool run(const CallKey& k, const char* name, int* rc) {
    Entry* e = e_ + last_;  // the shape of the thread's previous call, first
    if (!e->plan || !e->key.same_shape(k)) {
      if (!(e = entry(k))) return false;
      last_ = int(e - e_);
    }
    if (!applies(*e->plan, k)) return false;
    *rc = execute(*e, k, name);
    return true;
  }

 private:
  struct Entry {
    CallKey key;  ///< plan->key, kept here: the lookup reads no plan
    std::unique_ptr<FlatPlan> plan;
    char* arena = nullptr;
    std::vector<MPI_Request> requests;
  };
  /// The entry of `k`'s shape, or null.
  Entry* entry(const CallKey& k) {
    for (int i = 0; i < used_; ++i)
      if (e_[i].plan && e_[i].key.same_shape(k)) return &e_[i];
    return nullptr;
  }
  /// The facts a plan was made under still hold, and this call's buffers do not alias.
  static bool applies(const FlatPlan& p, const CallKey& k);
  static int execute(Entry& e, const CallKey& k, const char* name);
  /// A failed step: cancels the requests still in flight, describes the error; returns rc.
  BINE_COLD static int failed(MpiTransport& t, MPI_Request* rq, uint32_t posted, const char* name, int rc) {
    for (uint32_t i = 0; i < posted; ++i) t.cancel(rq + i);  // what the failed round left in flight
    describe_mpi_error(name, rc);
    return rc;
  }
  Entry e_[kEntries];
  int used_ = 0;
  int last_ = 0;  ///< the entry run or kept last
  uint64_t next_ = 0;
};

/// Records what a call does, as FlatSteps, for a FlatPlan (BasicContext::record_flat()).
/// Addresses are classified by the memory they lie in: internal memory the call acquired
/// (memory(), in the plan's arena at the same offsets), or one of the user's buffer
/// arguments, within the bytes the call checked of it (checked()). Anything else (an
/// address it cannot place, an operation it cannot replay flat: Waitsome, Testall, packing)
/// marks the recording failed (ok false), and no plan is made.
struct FlatRecorder {
  static constexpr uint64_t kMaxArena = uint64_t(1) << 22;  ///< 4 MiB: larger calls are not made flat
  const CallKey* key = nullptr;
  bool ok = true;
  std::vector<FlatStep> steps;
  std::vector<FlatAlias> aliases;
  uint64_t arena_top = 0;
  uint32_t posts = 0, max_posts = 0;
  int64_t span[CallKey::kPtrs] = {0, 0};  ///< bytes from each buffer argument's address the call may touch

  struct Block {
    const char* at;
    uint64_t bytes, off;
  };
  std::vector<Block> blocks;  ///< internal memory, latest last (a pool buffer may come back)

  void fail() { ok = false; }
  /// Appends without throwing out of the call being recorded: out of memory ends the recording.
  template <class V, class T>
  void keep(V& v, const T& x) {
    if (!ok) return;
    try {
      v.push_back(x);
    } catch (const std::bad_alloc&) {
      ok = false;
    }
  }
  /// Internal memory of `bytes` at `p` (working buffer, scratch): a place in the arena.
  void memory(const void* p, uint64_t bytes) {
    if (!p) return;
    const uint64_t off = (arena_top + 63) / 64 * 64;
    keep(blocks, Block{static_cast<const char*>(p), bytes, off});
    arena_top = off + bytes;
    if (arena_top > kMaxArena) ok = false;
  }
  /// The call checked `count` elements at `p` (true bytes [lo, hi) relative to p): if p is a
  /// buffer argument, the replay may touch those bytes of it.
  void checked(const void* p, int64_t hi) {
    for (uint32_t i = 0; i < key->nptrs; ++i)
      if (key->addressed(i) && key->ptr[i] == p && hi > span[i]) span[i] = hi;
  }
  /// An aliasing check between two buffer arguments (check_alias()).
  void alias(const void* a, int64_t alo, int64_t ahi, const void* b, int64_t blo, int64_t bhi, bool ranges) {
    FlatAlias x;
    int ia = -1, ib = -1;
    for (uint32_t i = 0; i < key->nptrs; ++i) {
      if (!key->addressed(i)) continue;
      if (key->ptr[i] == a && ia < 0) ia = int(i);
      else if (key->ptr[i] == b && ib < 0) ib = int(i);
    }
    if (ia < 0 || ib < 0) return fail();
    x.i = uint8_t(ia), x.j = uint8_t(ib), x.ranges = ranges;
    x.lo_i = alo, x.hi_i = ahi, x.lo_j = blo, x.hi_j = bhi;
    keep(aliases, x);
  }
  /// The buffer and offset of `bytes` at `p`.
  bool where(const void* p, uint64_t bytes, uint8_t& reg, uint64_t& off) {
    if (!ok) return false;
    if (!p) {
      if (bytes > 0) return ok = false;
      reg = FlatStep::kNone, off = 0;
      return true;
    }
    const char* c = static_cast<const char*>(p);
    for (size_t i = blocks.size(); i-- > 0;) {
      const Block& b = blocks[i];
      if (c >= b.at && c + bytes <= b.at + b.bytes) {
        reg = FlatStep::kArena, off = b.off + uint64_t(c - b.at);
        return true;
      }
    }
    for (uint32_t i = 0; i < key->nptrs; ++i) {
      if (!key->addressed(i)) continue;
      const char* base = static_cast<const char*>(key->ptr[i]);
      if (c >= base && c + bytes <= base + span[i]) {
        reg = uint8_t(i), off = uint64_t(c - base);
        return true;
      }
    }
    return ok = false;
  }
  void post(FlatStep::Kind kind, const void* p, int n, int peer, uint64_t unit) {
    FlatStep s;
    s.kind = kind;
    s.n = n;
    s.peer = peer;
    if (!where(p, uint64_t(n) * unit, s.ra, s.a)) return;
    keep(steps, s);
    if (kind == FlatStep::isend || kind == FlatStep::irecv) {
      if (++posts > max_posts) max_posts = posts;
    }
  }
  void waitall() {
    FlatStep s;
    s.kind = FlatStep::waitall;
    s.n = int32_t(posts);
    posts = 0;
    keep(steps, s);
  }
  void sendrecv(const void* sp, int sn, int speer, const void* rp, int rn, int rpeer, uint64_t unit) {
    FlatStep s;
    s.kind = FlatStep::sendrecv;
    s.n = sn, s.peer = speer, s.n2 = rn, s.peer2 = rpeer;
    if (!where(sp, uint64_t(sn) * unit, s.ra, s.a) || !where(rp, uint64_t(rn) * unit, s.rb, s.b)) return;
    keep(steps, s);
  }
  void reduce(const void* in, void* inout, int n, uint64_t unit) {
    FlatStep s;
    s.kind = FlatStep::reduce;
    s.n = n;
    if (!where(in, uint64_t(n) * unit, s.ra, s.a) || !where(inout, uint64_t(n) * unit, s.rb, s.b)) return;
    keep(steps, s);
  }
  void copy(void* to, const void* from, uint64_t bytes, bool overlap) {
    if (bytes == 0) return;
    FlatStep s;
    s.kind = overlap ? FlatStep::move : FlatStep::copy;
    s.bytes = bytes;
    if (!where(from, bytes, s.ra, s.a) || !where(to, bytes, s.rb, s.b)) return;
    keep(steps, s);
  }
};

inline bool FlatCache::applies(const FlatPlan& p, const CallKey& k) {
  if (p.epoch != flat_epoch().load(std::memory_order_relaxed)) return false;
  if (working_buffer_hook() || input_buffer_hook()) return false;
  if (segment_env_cache().load(std::memory_order_relaxed) != p.segment) return false;
  if (nb_any_live()) return false;  // the general path advances them while it waits
  for (const FlatAlias& a : p.aliases) {
    const char* x = static_cast<const char*>(k.ptr[a.i]);
    const char* y = static_cast<const char*>(k.ptr[a.j]);
    if (x == y) return false;
    if (a.ranges && uintptr_t(x) + a.lo_i < uintptr_t(y) + a.hi_j && uintptr_t(y) + a.lo_j < uintptr_t(x) + a.hi_i)
      return false;  // the general path reports the aliasing
  }
  return true;
}

inline int FlatCache::execute(Entry& e, const CallKey& k, const char* name) {
  const FlatPlan& p = *e.plan;
  MpiTransport t = p.transport;
  char* const base[4] = {const_cast<char*>(static_cast<const char*>(k.ptr[0])),
                         const_cast<char*>(static_cast<const char*>(k.ptr[1])), e.arena, nullptr};
  MPI_Request* const rq = e.requests.data();
  uint32_t posted = 0;
  int rc = MPI_SUCCESS;
  for (const FlatStep& s : p.steps) {
    char* a = base[s.ra] + s.a;
    char* b = base[s.rb] + s.b;
    switch (s.kind) {
      case FlatStep::isend:
        rc = t.post_send(a, s.n, s.peer, rq + posted++);
        break;
      case FlatStep::irecv:
        rc = t.post_recv(a, s.n, s.peer, rq + posted++);
        break;
      case FlatStep::waitall:
        rc = t.wait_all(rq, int(posted));
        posted = 0;
        break;
      case FlatStep::send:
        rc = t.send(a, s.n, s.peer);
        break;
      case FlatStep::recv:
        rc = t.recv(a, s.n, s.peer);
        break;
      case FlatStep::sendrecv:
        rc = t.sendrecv(a, s.n, s.peer, b, s.n2, s.peer2);
        break;
      case FlatStep::reduce:
        rc = t.reduce_local(a, b, s.n);
        break;
      case FlatStep::copy:
        local_copy(b, a, s.bytes);
        break;
      case FlatStep::move:
        local_move(b, a, s.bytes);
        break;
    }
    if (rc != MPI_SUCCESS) break;
  }
  if (rc == MPI_SUCCESS) {
    ++flat_calls();
    error_text()[0] = '\0';
    return rc;
  }
  return failed(t, rq, posted, name, rc);
}


}  // namespace bine::mpi
