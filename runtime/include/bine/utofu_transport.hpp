// bine/utofu_transport.hpp: a transport (docs/targets.md, "Transports") that moves the
// round pipeline's element ranges with uTofu one-sided puts (docs/utofu.md).
//
// MPI is used for bootstrap only (the exchange of VCQ ids and stadds when a communicator is
// first used) and for MPI_Reduce_local. Every byte moves with utofu_put (or
// utofu_put_piggyback for pieces of at most 32 B) with TCQ_NOTICE | REMOTE_MRQ_NOTICE |
// STRONG_ORDER; local completion is read from the TCQ, arrival from RMT_PUT notices on the
// MRQ, and UTOFU_ERR_BUSY is retried after polling the TCQ.
//
// Landing layout. Each rank registers, per communicator, a staging area of kStagingBytes
// per source rank (docs/utofu.md, "Landing layout"). The stream of bytes from source s to
// destination d is cut into pieces of at most kPieceBytes (the message, in posting order);
// piece k lands in d's staging area of s at the stream position modulo kStagingBytes (a piece
// that would cross the end starts again at 0; both sides apply the same rule, so the sender
// computes the address alone). The receiver reads RMT_PUT notices per source (edata = the
// step tag of the piece's round, checked against the round of the receive it fills: a
// piece of another round is an error), copies each arrived piece into the posted receive
// buffer, and returns a credit (the stream position it has consumed) with an 8-byte
// piggyback put into the sender's credit slot. A sender writes a piece only when it lies
// within kStagingBytes of that credit: no two puts in flight overlap, and nothing is
// overwritten before the receiver has consumed it, within a call and across calls (the
// fast-sender hazard).
//
// Direct landing (docs/utofu.md, "Direct landing in the transport"): a call told by
// landing(true) that its schedule's static landing layout is proved all direct puts each
// one-range transfer straight into the receiver's working buffer (registered writable on
// port 0) at the sender's offset, once the receiver's ready put for this call has arrived;
// the others use the staging ring above.
//
// Ports (docs/utofu.md, "Multi-port"). A communicator has one VCQ on each of up to
// kMaxPorts TNIs. In each round the sender gives its peers ports in the order of its first
// send to each (the i-th peer: port i mod ports), so a round's messages to different peers
// leave on different TNIs, as in the Fugaku Bine implementation's one TNI per slice. uTofu
// orders puts only per VCQ pair (STRONG_ORDER), and the stream from s to d relies on order,
// so the stream changes port only when it is drained (every byte sent to d consumed, by
// d's credit, and nothing queued); otherwise a message keeps its stream's port. Credits go
// over port 0 (a credit landing after a newer one would stall the sender).
//
// An empty message (a barrier's) carries one token byte, so that its receive completes
// only when the sender has posted it; the byte is discarded.
//
// Resources: one VCQ per port and communicator, cached as an MPI attribute and freed (VCQs,
// registrations) when the communicator is freed; the staging area (aligned to kAlignBytes)
// is registered on every port's VCQ, the credit slots on port 0's. Send buffers
// (docs/utofu.md, "Registration"): the call's working buffer is registered once per port it
// sends on, at its first put of more than 32 B from it, and deregistered when the call ends;
// a persistent plan's user buffer once per plan (kept in the plan, working_buffer()'s
// `keep`), deregistered when the plan or the communicator is freed, whichever comes first;
// any other send buffer (packed sends, in runtime scratch memory) for the time of its puts.
#pragma once
#include <mpi.h>
#include <utofu.h>

#include <cstdint>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace bine::utofu {

#ifdef BINE_UTOFU_STAGING_BYTES
inline constexpr uint64_t kStagingBytes = BINE_UTOFU_STAGING_BYTES;
#else
inline constexpr uint64_t kStagingBytes = uint64_t(1) << 18;  ///< per (communicator, source)
#endif
inline constexpr uint64_t kPieceBytes = kStagingBytes / 4 > 0 ? kStagingBytes / 4 : 1;
inline constexpr uint64_t kPiggybackBytes = 32;
/// Alignment of the memory the transport allocates and registers (staging, credits): the
/// Tofu-D cache line and stag address alignment, 256 B (backend-apis.md, limits measured on
/// Fugaku), so pieces at aligned offsets start on a cache line.
inline constexpr size_t kAlignBytes = 256;
#ifdef BINE_UTOFU_PORTS
inline constexpr int kMaxPorts = BINE_UTOFU_PORTS;  ///< TNIs a communicator uses (at most the node's)
#else
inline constexpr int kMaxPorts = 6;  ///< Fugaku: 6 TNIs per node, the Bine implementation's 6 ports
#endif
static_assert(kMaxPorts >= 1 && kMaxPorts <= 6, "uTofu nodes have at most 6 TNIs");
/// edata of a two-one fold's epilogue round (the instance's last, which a rank eliminated by
/// the fold reaches without counting the body's rounds); any other round r is r mod 255.
inline constexpr uint64_t kLastStepTag = 255;
/// The step tag (edata, 0..255) of round `step` (begin_step()).
inline constexpr uint64_t step_tag(uint32_t step) { return step == UINT32_MAX ? kLastStepTag : step % 255; }
inline constexpr unsigned long kPutFlags =
    UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_STRONG_ORDER;
static_assert(kPieceBytes <= 16777215, "a piece is one put: at most max_putget_size");

/// Where a piece of `bytes` starting at stream position `pos` lands (offset in the staging
/// area of its source); `pos` advances past any skipped tail and the piece.
inline uint64_t place_piece(uint64_t& pos, uint64_t bytes) {
  uint64_t at = pos % kStagingBytes;
  if (at + bytes > kStagingBytes) {
    pos += kStagingBytes - at;
    at = 0;
  }
  pos += bytes;
  return at;
}

/// Whether a piece may be put whose end lies at stream position `end` when the receiver has
/// credited (consumed) the stream up to `credit`: the piece and everything unconsumed before
/// it fit in the staging area, so it overwrites only consumed bytes.
inline bool within_credit(uint64_t end, uint64_t credit) { return end - credit <= kStagingBytes; }

/// Direct puts (into a receiver's working buffer, docs/utofu.md "Static landing layout")
/// this process has posted; for tests.
inline std::atomic<uint64_t>& direct_puts() {
  static std::atomic<uint64_t> n{0};
  return n;
}

/// Memory aligned to kAlignBytes, zeroed (staging and credit areas).
class AlignedBytes {
 public:
  bool allocate(size_t bytes) {
    const size_t n = (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
    data_.reset(static_cast<unsigned char*>(n ? std::aligned_alloc(kAlignBytes, n) : nullptr));
    if (n && !data_) return false;
    if (n) std::memset(data_.get(), 0, n);
    size_ = bytes;
    return true;
  }
  unsigned char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data_;
  size_t size_ = 0;
};

struct Channel;
/// Registrations of send buffers, one per (buffer, port), made at the first put from the
/// buffer on the port and freed together: a call's working buffer (held by the transport,
/// freed when the call ends) or a persistent plan's user buffer (held by the plan, freed
/// with it). A channel freed first (the communicator freed before the plan) frees the
/// registrations of every set still bound to it and unbinds it.
struct Registrations {
  struct Entry {
    const unsigned char* base;
    uint64_t bytes;
    int port;
    utofu_stadd_t stadd;
    bool writable;  ///< registered for remote writes too (a direct landing target)
  };
  Channel* ch = nullptr;  ///< the channel whose VCQs hold the entries (null: none)
  bool plan = false;      ///< held by a plan: listed in its channel's `kept` while bound
  std::vector<Entry> entries;
  explicit Registrations(bool held_by_plan = false) : plan(held_by_plan) {}
  Registrations(const Registrations&) = delete;
  Registrations& operator=(const Registrations&) = delete;
  ~Registrations() { release(); }
  /// The stadd of `base` (bytes long) registered on `port` of `c`, read-only or (writable)
  /// for remote puts too: an entry's (a writable one serves reads), or a new registration.
  /// UTOFU_SUCCESS or uTofu's error (nothing registered).
  int get(Channel& c, int port, const unsigned char* base, uint64_t bytes, utofu_stadd_t* out, bool writable = false);
  /// Deregisters every entry and unbinds the set from its channel.
  void release();
};

/// The uTofu state of one communicator (created collectively at its first use).
struct Channel {
  int rank = 0, size = 1;
  int ports = 1;                                    ///< VCQs (TNIs) in use: min(kMaxPorts, the node's)
  utofu_vcq_hdl_t vcq[kMaxPorts] = {};              ///< port i's VCQ (on one-sided TNI i)
  std::vector<utofu_vcq_id_t> peer_vcq;             ///< [rank * ports + port]
  std::unordered_map<utofu_vcq_id_t, int> rank_of;  ///< a notice's source VCQ (any port) -> rank
  AlignedBytes staging;                             ///< size * kStagingBytes
  AlignedBytes credit_area;                         ///< credit(d), uint64_t per rank
  uint64_t* credit = nullptr;                       ///< credit[d]: d consumed this much of my stream
  std::mutex kept_lock;                             ///< guards `kept` (a plan may be freed on any thread)
  std::vector<Registrations*> kept;                 ///< plans' registration sets bound to this channel
  utofu_stadd_t staging_stadd[kMaxPorts] = {}, credit_stadd = 0;
  /// Direct landing (docs/utofu.md, "Static landing layout"): ready[3 d .. 3 d + 2] = the
  /// stadd (port 0) and size of rank d's working buffer and the direct call it has entered,
  /// put there by d when it first receives from this rank in that call.
  AlignedBytes ready_area;
  uint64_t* ready = nullptr;
  utofu_stadd_t ready_stadd = 0;
  std::vector<utofu_stadd_t> peer_ready;
  uint64_t direct_seq = 0;  ///< direct calls entered on this communicator (the same count on every rank)
  std::vector<utofu_stadd_t> peer_staging;          ///< [rank * ports + port]
  std::vector<utofu_stadd_t> peer_credit;
  std::vector<uint64_t> sent, consumed;     ///< stream positions, per peer (out / in)
  std::vector<uint8_t> port;                ///< the port of the stream to each peer (its last message's)
  std::vector<std::deque<uint8_t>> arrived; ///< per source: step tags of the pieces arrived, not yet consumed
  uint64_t credit_value[1] = {0};
  /// Frees the VCQs and registrations, after waiting (at most 10 s, and only while uTofu
  /// answers) until every piece this rank put was consumed: a receiver returns a credit
  /// after its last piece, and a credit put into a deregistered slot fails at the receiver
  /// (found by tests/utofu/transport_test.cpp, a rank freeing the communicator at once).
  ~Channel() {
    {  // plans outliving the communicator: their registrations go with its VCQs
      std::lock_guard<std::mutex> hold(kept_lock);
      for (Registrations* r : kept) {
        for (const Registrations::Entry& e : r->entries) utofu_dereg_mem(vcq[e.port], e.stadd, 0);
        r->entries.clear();
        r->ch = nullptr;
      }
      kept.clear();
    }
    if (vcq[0]) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      bool live = true;
      for (size_t d = 0; live && d < sent.size(); ++d)
        while (live && __atomic_load_n(&credit[d], __ATOMIC_ACQUIRE) != sent[d] && std::chrono::steady_clock::now() < until) {
          void* cb = nullptr;
          utofu_mrq_notice n;
          for (int i = 0; live && i < ports; ++i) {
            int rc;
            while ((rc = utofu_poll_tcq(vcq[i], 0, &cb)) == UTOFU_SUCCESS) {}
            live = rc == UTOFU_ERR_NOT_FOUND;
            while (live && (rc = utofu_poll_mrq(vcq[i], 0, &n)) == UTOFU_SUCCESS) {}
            live = live && rc == UTOFU_ERR_NOT_FOUND;
          }
        }
    }
    for (int i = 0; i < ports; ++i) {
      if (!vcq[i]) continue;
      if (staging_stadd[i]) utofu_dereg_mem(vcq[i], staging_stadd[i], 0);
      if (i == 0 && credit_stadd) utofu_dereg_mem(vcq[0], credit_stadd, 0);
      if (i == 0 && ready_stadd) utofu_dereg_mem(vcq[0], ready_stadd, 0);
      utofu_free_vcq(vcq[i]);
    }
  }
};

inline int Registrations::get(Channel& c, int port, const unsigned char* base, uint64_t bytes, utofu_stadd_t* out,
                               bool writable) {
  if (ch != &c) release();  // another communicator's: its VCQs cannot be used here
  for (const Entry& e : entries)
    if (e.port == port && e.base == base && e.bytes == bytes && (e.writable || !writable)) {
      *out = e.stadd;
      return UTOFU_SUCCESS;
    }
  // A plan's buffer that moved (which MPI forbids for persistent plans): the previous
  // start's registration on this port is dropped (its puts are complete), so a plan holds
  // at most one per port. A call's set keeps all: a call has at most two working buffers
  // (the user's, then its scratch-extended copy), and earlier puts may be in flight.
  for (size_t i = 0; plan && i < entries.size();)
    if (entries[i].port == port) {
      utofu_dereg_mem(c.vcq[port], entries[i].stadd, 0);
      entries.erase(entries.begin() + long(i));
    } else {
      ++i;
    }
  const int rc = utofu_reg_mem(c.vcq[port], const_cast<unsigned char*>(base), size_t(bytes),
                               writable ? 0 : UTOFU_REG_MEM_FLAG_READ_ONLY, out);
  if (rc != UTOFU_SUCCESS) return rc;
  entries.push_back({base, bytes, port, *out, writable});
  if (!ch && plan) {
    std::lock_guard<std::mutex> hold(c.kept_lock);
    c.kept.push_back(this);
  }
  ch = &c;
  return UTOFU_SUCCESS;
}

inline void Registrations::release() {
  if (!ch) return;
  std::lock_guard<std::mutex> hold(ch->kept_lock);
  for (const Entry& e : entries) utofu_dereg_mem(ch->vcq[e.port], e.stadd, 0);
  entries.clear();
  if (plan) {
    auto it = std::find(ch->kept.begin(), ch->kept.end(), this);
    if (it != ch->kept.end()) ch->kept.erase(it);
  }
  ch = nullptr;
}

/// Transport over uTofu puts; requests are indices in the transport's operation table.
class UtofuTransport {
 public:
  using Request = int;
  /// One stream of pieces per (source, destination): two calls in flight at once would
  /// interleave in it, so nonblocking forms complete at their start (mpi_runtime.hpp).
  static constexpr bool kConcurrent = false;
  /// Puts read registered memory only (the working buffer, staging): no deferred copy-in.
  static constexpr bool kSendsAnywhere = false;
  static constexpr bool kReceiverPlaces = false;  ///< direct puts land at the receiver's schedule offsets
  static Request null_request() { return -1; }
  void set_tag(int) {}
  /// The round whose transfers follow: the rank's round count in the call, or UINT32_MAX
  /// for a two-one fold epilogue (mpi_runtime.hpp). Its tag is the edata of their pieces.
  void begin_step(uint32_t step) {
    tag_ = uint8_t(step_tag(step));
    ++step_seq_;
    next_port_ = 0;
  }

  /// The call's working buffer (docs/utofu.md, "Registration"): a send from it is put from
  /// one registration of the whole buffer per port, kept in *keep (a persistent plan's
  /// user buffer: registered at the first start, freed with the plan) or else in the
  /// transport (freed when the call ends).
  void working_buffer(const void* base, uint64_t bytes, std::shared_ptr<void>* keep) {
    if (!base || bytes == 0) return;
    Registrations* set = &call_regs_;
    if (keep) {
      if (!*keep) *keep = std::shared_ptr<Registrations>(new (std::nothrow) Registrations(/*held_by_plan=*/true));
      if (*keep) set = static_cast<Registrations*>(keep->get());  // else this call's (no memory for the plan's)
    }
    regions_.push_back({static_cast<const unsigned char*>(base), bytes, set});
  }

  /// Whether this call lands transfers straight in the receivers' working buffers (the
  /// schedule's static landing layout is all direct at this p: docs/utofu.md, "Static
  /// landing layout"). Then a transfer whose data is one range of the working buffer in
  /// force on both sides (the round pipeline packs or buffers the same transfers on both
  /// sides: several ranges, reductions) is put at the sender's offset into the receiver's
  /// buffer, registered writable on port 0, once the receiver has said it entered the
  /// call (a ready put carrying the buffer's stadd and size, at its first receive from the
  /// sender); the others go through the staging ring. Every rank enters the same direct
  /// calls, so the call count is the ready put's sequence number.
  void landing(bool direct) {
    if (bind_rc_ != MPI_SUCCESS || !direct) return;
    direct_ = true;
    seq_ = ++ch_->direct_seq;
  }

  void bind(MPI_Comm comm, MPI_Datatype type, MPI_Op op) {
    type_ = type;
    op_ = op;
    int bytes = 0;
    MPI_Type_size(type, &bytes);
    elem_ = uint64_t(bytes);
    ch_ = nullptr;
    bind_rc_ = channel(comm, &ch_);
  }
  int post_send(const void* data, int count, int peer, Request* r) { return post(true, const_cast<void*>(data), count, peer, r); }
  int post_recv(void* data, int count, int peer, Request* r) { return post(false, data, count, peer, r); }
  int wait_all(Request* r, int n) {
    for (;;) {
      bool all = true;
      for (int i = 0; i < n; ++i) all &= r[i] < 0 || ops_[size_t(r[i])].done;
      if (all) break;
      if (const int rc = progress(); rc != MPI_SUCCESS) return rc;
    }
    for (int i = 0; i < n; ++i) retire(&r[i]);
    return MPI_SUCCESS;
  }
  int test_all(Request* r, int n, int* flag) {
    if (const int rc = progress(); rc != MPI_SUCCESS) return rc;
    *flag = 1;
    for (int i = 0; i < n; ++i) *flag &= r[i] < 0 || ops_[size_t(r[i])].done;
    if (*flag)
      for (int i = 0; i < n; ++i) retire(&r[i]);
    return MPI_SUCCESS;
  }
  int wait_some(Request* r, int n, int* done, int* indices) {
    for (;;) {
      bool any_live = false;
      *done = 0;
      for (int i = 0; i < n; ++i) {
        if (r[i] < 0) continue;
        any_live = true;
        if (ops_[size_t(r[i])].done) {
          indices[(*done)++] = i;
          retire(&r[i]);
        }
      }
      if (!any_live) {
        *done = -1;
        return MPI_SUCCESS;
      }
      if (*done > 0) return MPI_SUCCESS;
      if (const int rc = progress(); rc != MPI_SUCCESS) return rc;
    }
  }
  int send(const void* data, int count, int peer) {
    Request r = null_request();
    const int rc = post_send(data, count, peer, &r);
    return rc != MPI_SUCCESS ? rc : wait_all(&r, 1);
  }
  int recv(void* data, int count, int peer) {
    Request r = null_request();
    const int rc = post_recv(data, count, peer, &r);
    return rc != MPI_SUCCESS ? rc : wait_all(&r, 1);
  }
  int sendrecv(const void* sdata, int scount, int speer, void* rdata, int rcount, int rpeer) {
    Request r[2] = {null_request(), null_request()};
    int rc = post_recv(rdata, rcount, rpeer, &r[0]);
    if (rc == MPI_SUCCESS) rc = post_send(sdata, scount, speer, &r[1]);
    if (rc != MPI_SUCCESS) {
      cancel(&r[0]);
      return rc;
    }
    return wait_all(r, 2);
  }
  int reduce_local(const void* in, void* inout, int count) { return MPI_Reduce_local(in, inout, count, type_, op_); }
  void cancel(Request* r) {
    if (*r < 0) return;
    Op& o = ops_[size_t(*r)];
    if (!o.done && o.sent == 0 && o.outstanding == 0) {  // not started: take it off its queue
      auto& q = o.direct ? (o.is_send ? dsendq_ : drecvq_)[size_t(o.peer)] : (o.is_send ? sendq_ : recvq_)[size_t(o.peer)];
      for (auto it = q.begin(); it != q.end(); ++it)
        if (*it == *r) {
          q.erase(it);
          break;
        }
      o.done = true;
    }
    retire(r);
  }

 private:
  struct Op {
    bool is_send = false, done = false;
    uint8_t tag = 0;                ///< the step tag of its round
    uint8_t port = 0;               ///< a send's port (VCQ) for all its pieces
    int peer = 0;
    unsigned char* data = nullptr;
    uint64_t bytes = 0, sent = 0;  ///< sent: bytes put (send) or copied out (recv)
    int64_t outstanding = 0;       ///< puts not yet locally complete
    utofu_stadd_t stadd = 0;       ///< where a send's data is registered (0: not registered)
    bool own_stadd = false;        ///< stadd is the message's own registration (deregistered at retire)
    bool retired = false;
    bool direct = false;           ///< lands in the receiver's working buffer (landing())
    uint64_t off = 0;              ///< direct: its offset in the working buffer (the same on both sides)
  };

  static int attr_key() {
    static int key = MPI_KEYVAL_INVALID;
    if (key == MPI_KEYVAL_INVALID)
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_channel, &key, nullptr);
    return key;
  }
  static int delete_channel(MPI_Comm, int, void* value, void*) {
    delete static_cast<Channel*>(value);
    return MPI_SUCCESS;
  }

  /// The communicator's channel: created at first use (collective over comm: every rank of
  /// a collective call binds), then cached.
  static int channel(MPI_Comm comm, Channel** out) {
    void* value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm, attr_key(), &value, &found);
    if (found) {
      *out = static_cast<Channel*>(value);
      return MPI_SUCCESS;
    }
    auto* c = new Channel;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    const size_t p = size_t(c->size);
    int rc = UTOFU_SUCCESS;
    utofu_tni_id_t* tnis = nullptr;
    size_t ntni = 0;
    rc = utofu_get_onesided_tnis(&tnis, &ntni);
    if (rc == UTOFU_SUCCESS && ntni == 0) rc = UTOFU_ERR_NOT_AVAILABLE;
    // Every rank uses the same number of ports (the least of kMaxPorts and the node's TNIs:
    // the same on every node of one machine).
    c->ports = rc == UTOFU_SUCCESS ? int(std::min<size_t>(size_t(kMaxPorts), ntni)) : 1;
    const size_t P = size_t(c->ports);
    for (size_t i = 0; rc == UTOFU_SUCCESS && i < P; ++i) rc = utofu_create_vcq(tnis[i], 0, &c->vcq[i]);
    std::free(tnis);
    if (rc == UTOFU_SUCCESS && !(c->staging.allocate(p * kStagingBytes) && c->credit_area.allocate(p * sizeof(uint64_t)) &&
                                 c->ready_area.allocate(3 * p * sizeof(uint64_t))))
      rc = UTOFU_ERR_OUT_OF_MEMORY;  // still takes part in the allgather below, which reports it
    c->credit = reinterpret_cast<uint64_t*>(c->credit_area.data());
    c->ready = reinterpret_cast<uint64_t*>(c->ready_area.data());
    // Bootstrap: every rank learns every rank's VCQ id and staging stadd per port, its
    // credit stadd, and whether all succeeded.
    const size_t W = 2 * P + 3;
    std::vector<uint64_t> mine(W, 0), all(W * p);
    for (size_t i = 0; rc == UTOFU_SUCCESS && i < P; ++i) {
      utofu_vcq_id_t id = 0;
      rc = utofu_query_vcq_id(c->vcq[i], &id);
      if (rc == UTOFU_SUCCESS) rc = utofu_reg_mem(c->vcq[i], c->staging.data(), c->staging.size(), 0, &c->staging_stadd[i]);
      mine[2 * i] = id;
      mine[2 * i + 1] = c->staging_stadd[i];
    }
    if (rc == UTOFU_SUCCESS)
      rc = utofu_reg_mem(c->vcq[0], c->credit_area.data(), c->credit_area.size(), 0, &c->credit_stadd);
    if (rc == UTOFU_SUCCESS) rc = utofu_reg_mem(c->vcq[0], c->ready_area.data(), c->ready_area.size(), 0, &c->ready_stadd);
    mine[2 * P] = c->credit_stadd;
    mine[2 * P + 1] = c->ready_stadd;
    mine[2 * P + 2] = uint64_t(rc == UTOFU_SUCCESS ? 0 : 1);
    int mrc = MPI_Allgather(mine.data(), int(W), MPI_UINT64_T, all.data(), int(W), MPI_UINT64_T, comm);
    bool ok = mrc == MPI_SUCCESS;
    for (size_t i = 0; ok && i < p; ++i) ok = all[W * i + W - 1] == 0;
    if (!ok) {
      delete c;
      return mrc != MPI_SUCCESS ? mrc : MPI_ERR_OTHER;
    }
    c->peer_vcq.resize(p * P);
    c->peer_staging.resize(p * P);
    c->peer_credit.resize(p);
    c->peer_ready.resize(p);
    for (size_t i = 0; i < p; ++i) {
      for (size_t k = 0; k < P; ++k) {
        c->peer_vcq[i * P + k] = all[W * i + 2 * k];
        utofu_set_vcq_id_path(&c->peer_vcq[i * P + k], nullptr);
        c->rank_of[all[W * i + 2 * k]] = int(i);
        c->peer_staging[i * P + k] = all[W * i + 2 * k + 1];
      }
      c->peer_credit[i] = all[W * i + 2 * P];
      c->peer_ready[i] = all[W * i + 2 * P + 1];
    }
    c->sent.assign(p, 0);
    c->consumed.assign(p, 0);
    c->port.assign(p, 0);
    c->arrived.assign(p, {});
    MPI_Comm_set_attr(comm, attr_key(), c);
    *out = c;
    return MPI_SUCCESS;
  }

  int post(bool is_send, void* data, int count, int peer, Request* r) {
    if (bind_rc_ != MPI_SUCCESS) return bind_rc_;
    Channel& c = *ch_;
    if (sendq_.size() != size_t(c.size)) {
      sendq_.assign(size_t(c.size), {});
      recvq_.assign(size_t(c.size), {});
      dsendq_.assign(size_t(c.size), {});
      drecvq_.assign(size_t(c.size), {});
      dnotes_.assign(size_t(c.size), {});
      ready_to_.assign(size_t(c.size), 0);
      peer_step_.assign(size_t(c.size), 0);
      peer_port_.assign(size_t(c.size), 0);
    }
    Op o;
    o.is_send = is_send;
    o.tag = tag_;
    o.peer = peer;
    if (is_send) {
      // This round's port for the peer: peers in the order of their first send this round.
      if (peer_step_[size_t(peer)] != step_seq_) {
        peer_step_[size_t(peer)] = step_seq_;
        peer_port_[size_t(peer)] = uint8_t(next_port_++ % c.ports);
      }
      // The stream to the peer moves to it only when drained (nothing queued, everything
      // sent consumed): puts on two VCQs are not ordered.
      if (sendq_[size_t(peer)].empty() && __atomic_load_n(&c.credit[size_t(peer)], __ATOMIC_ACQUIRE) == c.sent[size_t(peer)])
        c.port[size_t(peer)] = peer_port_[size_t(peer)];
      o.port = c.port[size_t(peer)];
    }
    o.data = static_cast<unsigned char*>(data);
    o.bytes = uint64_t(count) * elem_;
    if (o.bytes == 0) {  // an empty message (a barrier's) must still notify: one token byte
      o.bytes = 1;
      o.data = is_send ? &token_out_ : &token_in_;
    }
    if (direct_ && !regions_.empty()) {
      // Direct: one range of the working buffer in force (the same rule on both sides).
      const Region& g = regions_.back();
      if (g.holds(o.data, o.bytes)) {
        if (dbase_ != g.base) {  // the landing target: registered writable once per buffer
          if (g.set->get(c, 0, g.base, g.bytes, &dstadd_, /*writable=*/true) != UTOFU_SUCCESS) return MPI_ERR_BUFFER;
          dbase_ = g.base;
          dbytes_ = g.bytes;
        }
        o.direct = true;
        o.off = uint64_t(o.data - g.base);
        if (is_send) {
          o.port = 0;
          o.stadd = dstadd_ + o.off;
        }
      }
    }
    if (is_send && o.bytes > kPiggybackBytes && !o.direct) {
      // From a working buffer: its registration on this port (made once); from anywhere
      // else (a packed send in scratch memory): the message's own, for its puts.
      int urc = UTOFU_SUCCESS;
      if (const Region* g = region_of(o.data, o.bytes)) {
        utofu_stadd_t base = 0;
        urc = g->set->get(c, o.port, g->base, g->bytes, &base);
        o.stadd = base + uint64_t(o.data - g->base);
      } else {
        urc = utofu_reg_mem(c.vcq[o.port], data, size_t(o.bytes), UTOFU_REG_MEM_FLAG_READ_ONLY, &o.stadd);
        o.own_stadd = urc == UTOFU_SUCCESS;
      }
      if (urc != UTOFU_SUCCESS) return MPI_ERR_BUFFER;  // a buffer that cannot be registered: nothing was sent
    }
    *r = int(ops_.size());
    ops_.push_back(o);
    if (o.direct) {
      (is_send ? dsendq_ : drecvq_)[size_t(peer)].push_back(*r);
      if (!is_send && ready_to_[size_t(peer)] != seq_) {  // tell the sender this rank is in the call
        ready_to_[size_t(peer)] = seq_;
        if (const int rc = send_ready(peer); rc != MPI_SUCCESS) return rc;
      }
    } else {
      (is_send ? sendq_ : recvq_)[size_t(peer)].push_back(*r);
    }
    return progress();
  }

  /// The ready put to `peer`: this rank's landing buffer (stadd, size), then the call's
  /// sequence number, in that order on one VCQ pair (STRONG_ORDER), so a sender that sees
  /// the number sees the buffer.
  int send_ready(int peer) {
    Channel& c = *ch_;
    ready_out_[0] = dstadd_;
    ready_out_[1] = dbytes_;
    ready_out_[2] = seq_;
    const utofu_vcq_id_t to = c.peer_vcq[size_t(peer) * size_t(c.ports)];
    const utofu_stadd_t slot = c.peer_ready[size_t(peer)] + uint64_t(c.rank) * 3 * sizeof(uint64_t);
    for (int part = 0; part < 2; ++part) {
      void* data = part == 0 ? static_cast<void*>(&ready_out_[0]) : static_cast<void*>(&ready_out_[2]);
      const utofu_stadd_t at = slot + (part == 0 ? 0 : 2 * sizeof(uint64_t));
      const size_t len = part == 0 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
      int rc = utofu_put_piggyback(c.vcq[0], to, data, at, len, 0, UTOFU_ONESIDED_FLAG_STRONG_ORDER, nullptr);
      while (rc == UTOFU_ERR_BUSY) {
        drain_one();
        rc = utofu_put_piggyback(c.vcq[0], to, data, at, len, 0, UTOFU_ONESIDED_FLAG_STRONG_ORDER, nullptr);
      }
      if (rc != UTOFU_SUCCESS) return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
  }

  void retire(Request* r) {
    Op& o = ops_[size_t(*r)];
    if (o.own_stadd) utofu_dereg_mem(ch_->vcq[o.port], o.stadd, 0);
    o.stadd = 0;
    o.own_stadd = false;
    o.retired = true;
    *r = null_request();
    bool all = true;
    for (const Op& x : ops_) all &= x.retired;
    if (all) ops_.clear();
  }

  /// A put's local completion read from a TCQ (its cbdata names the operation; credits and
  /// ready puts have none).
  void completed(void* cb) {
    const uintptr_t id = reinterpret_cast<uintptr_t>(cb);
    if (id > 0 && id <= ops_.size()) {
      Op& o = ops_[id - 1];
      if (--o.outstanding == 0 && o.sent == o.bytes) o.done = true;
    }
  }
  /// A full transmit queue on port 0 (UTOFU_ERR_BUSY): reads one completion, keeping it.
  void drain_one() {
    void* cb = nullptr;
    if (utofu_poll_tcq(ch_->vcq[0], 0, &cb) == UTOFU_SUCCESS) completed(cb);
  }

  /// One pass: retire local completions, count arrivals, copy out and return credits, put
  /// what the credits allow.
  int progress() {
    Channel& c = *ch_;
    void* cb = nullptr;
    int rc = UTOFU_SUCCESS;
    for (int port = 0; port < c.ports; ++port) {
      while ((rc = utofu_poll_tcq(c.vcq[port], 0, &cb)) == UTOFU_SUCCESS) completed(cb);
      if (rc != UTOFU_ERR_NOT_FOUND) return MPI_ERR_OTHER;
      utofu_mrq_notice n;
      while ((rc = utofu_poll_mrq(c.vcq[port], 0, &n)) == UTOFU_SUCCESS) {
        if (n.notice_type != UTOFU_MRQ_TYPE_RMT_PUT) continue;
        auto it = c.rank_of.find(n.vcq_id);
        if (it == c.rank_of.end()) continue;  // a put on another communicator's VCQ? not ours
        // A direct put (into the landing buffer, on port 0) or a piece of the staging ring.
        if (dbase_ && port == 0 && n.rmt_stadd >= dstadd_ && n.rmt_stadd <= dstadd_ + dbytes_)
          dnotes_[size_t(it->second)].push_back(uint8_t(n.edata));
        else
          c.arrived[size_t(it->second)].push_back(uint8_t(n.edata));
      }
      if (rc != UTOFU_ERR_NOT_FOUND) return MPI_ERR_OTHER;
    }
    // Direct receives: the puts of one source land in posting order (one VCQ pair, STRONG_
    // ORDER), cut into pieces as the sender cut them; the data is already in place.
    for (size_t s = 0; s < drecvq_.size(); ++s)
      while (!dnotes_[s].empty() && !drecvq_[s].empty()) {
        Op& o = ops_[size_t(drecvq_[s].front())];
        if (dnotes_[s].front() != o.tag) return MPI_ERR_INTERN;
        dnotes_[s].pop_front();
        o.sent += std::min(kPieceBytes, o.bytes - o.sent);
        if (o.sent == o.bytes) {
          o.done = true;
          drecvq_[s].pop_front();
        }
      }
    for (size_t d = 0; d < dsendq_.size(); ++d) {
      // A direct put waits for the receiver's ready put of this call.
      if (dsendq_[d].empty() || __atomic_load_n(&c.ready[3 * d + 2], __ATOMIC_ACQUIRE) < seq_) continue;
      const utofu_stadd_t rbase = c.ready[3 * d];
      const uint64_t rbytes = c.ready[3 * d + 1];
      while (!dsendq_[d].empty()) {
        const int id = dsendq_[d].front();
        Op& o = ops_[size_t(id)];
        if (o.off > rbytes || o.bytes > rbytes - o.off) return MPI_ERR_INTERN;  // the buffers' layouts differ
        const uint64_t piece = std::min(kPieceBytes, o.bytes - o.sent);
        const utofu_vcq_id_t to = c.peer_vcq[d * size_t(c.ports)];
        const utofu_stadd_t dst = rbase + o.off + o.sent;
        void* cbdata = reinterpret_cast<void*>(uintptr_t(id) + 1);
        rc = piece <= kPiggybackBytes ? utofu_put_piggyback(c.vcq[0], to, o.data + o.sent, dst, size_t(piece), o.tag, kPutFlags, cbdata)
                                      : utofu_put(c.vcq[0], to, o.stadd + o.sent, dst, size_t(piece), o.tag, kPutFlags, cbdata);
        if (rc == UTOFU_ERR_BUSY) break;
        if (rc != UTOFU_SUCCESS) return MPI_ERR_OTHER;
        ++o.outstanding;
        direct_puts().fetch_add(1, std::memory_order_relaxed);
        o.sent += piece;
        if (o.sent == o.bytes) dsendq_[d].pop_front();
      }
    }
    for (size_t s = 0; s < recvq_.size(); ++s) {
      bool moved = false;
      while (!c.arrived[s].empty() && !recvq_[s].empty()) {
        Op& o = ops_[size_t(recvq_[s].front())];
        // The piece's round (its step tag) must be the receive's: sender and receiver
        // disagree on the round of this transfer otherwise.
        if (c.arrived[s].front() != o.tag) return MPI_ERR_INTERN;
        c.arrived[s].pop_front();
        const uint64_t piece = std::min(kPieceBytes, o.bytes - o.sent);
        const uint64_t at = place_piece(c.consumed[s], piece);
        std::memcpy(o.data + o.sent, c.staging.data() + s * kStagingBytes + at, size_t(piece));
        o.sent += piece;
        moved = true;
        if (o.sent == o.bytes) {
          o.done = true;
          recvq_[s].pop_front();
        }
      }
      if (moved) {
        c.credit_value[0] = c.consumed[s];
        // Credits always over port 0: one VCQ pair keeps them in order.
        const utofu_vcq_id_t to = c.peer_vcq[s * size_t(c.ports)];
        const utofu_stadd_t slot = c.peer_credit[s] + uint64_t(c.rank) * sizeof(uint64_t);
        rc = utofu_put_piggyback(c.vcq[0], to, c.credit_value, slot, sizeof(uint64_t), 0, UTOFU_ONESIDED_FLAG_STRONG_ORDER,
                                 nullptr);
        while (rc == UTOFU_ERR_BUSY) {
          drain_one();  // a data put's completion read here is kept (found with direct landing)
          rc = utofu_put_piggyback(c.vcq[0], to, c.credit_value, slot, sizeof(uint64_t), 0,
                                   UTOFU_ONESIDED_FLAG_STRONG_ORDER, nullptr);
        }
        if (rc != UTOFU_SUCCESS) return MPI_ERR_OTHER;
      }
    }
    for (size_t d = 0; d < sendq_.size(); ++d) {
      while (!sendq_[d].empty()) {
        const int id = sendq_[d].front();
        Op& o = ops_[size_t(id)];
        const uint64_t piece = std::min(kPieceBytes, o.bytes - o.sent);
        uint64_t pos = c.sent[d];
        const uint64_t at = place_piece(pos, piece);
        if (!within_credit(pos, __atomic_load_n(&c.credit[d], __ATOMIC_ACQUIRE))) break;  // wait for credit
        const size_t k = d * size_t(c.ports) + o.port;
        const utofu_stadd_t dst = c.peer_staging[k] + uint64_t(c.rank) * kStagingBytes + at;
        void* cbdata = reinterpret_cast<void*>(uintptr_t(id) + 1);
        rc = piece <= kPiggybackBytes
                 ? utofu_put_piggyback(c.vcq[o.port], c.peer_vcq[k], o.data + o.sent, dst, size_t(piece), o.tag, kPutFlags, cbdata)
                 : utofu_put(c.vcq[o.port], c.peer_vcq[k], o.stadd + o.sent, dst, size_t(piece), o.tag, kPutFlags, cbdata);
        if (rc == UTOFU_ERR_BUSY) break;  // the TOQ is full: retried after the next TCQ poll
        if (rc != UTOFU_SUCCESS) return MPI_ERR_OTHER;
        c.sent[d] = pos;
        ++o.outstanding;
        o.sent += piece;
        if (o.sent == o.bytes) sendq_[d].pop_front();
      }
    }
    return MPI_SUCCESS;
  }

  /// A working buffer of the call (working_buffer()) and the set its registrations go to.
  struct Region {
    const unsigned char* base;
    uint64_t bytes;
    Registrations* set;
    bool holds(const unsigned char* data, uint64_t n) const {  ///< [data, data + n) lies inside
      return data >= base && uint64_t(data - base) <= bytes && n <= bytes - uint64_t(data - base);
    }
  };
  /// The working buffer holding [data, data + bytes), or null.
  const Region* region_of(const unsigned char* data, uint64_t bytes) const {
    for (const Region& g : regions_)
      if (g.holds(data, bytes)) return &g;
    return nullptr;
  }

  Registrations call_regs_;      ///< registrations of this call's working buffers (freed with the transport)
  std::vector<Region> regions_;  ///< this call's working buffers
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  uint64_t elem_ = 1;
  Channel* ch_ = nullptr;
  int bind_rc_ = MPI_SUCCESS;
  std::vector<Op> ops_;
  std::vector<std::deque<int>> sendq_, recvq_;
  uint8_t tag_ = 0;                 ///< the current round's step tag (begin_step())
  uint64_t step_seq_ = 1;           ///< begin_step() calls (+1): stamps peer_step_
  int next_port_ = 0;               ///< the port the round's next new peer gets
  std::vector<uint64_t> peer_step_; ///< the step_seq_ in which a peer last got a port
  std::vector<uint8_t> peer_port_;  ///< that port
  unsigned char token_out_ = 0, token_in_ = 0;  ///< the byte an empty message carries (post())
  // Direct landing (landing()).
  bool direct_ = false;
  uint64_t seq_ = 0;                              ///< this call's number among the communicator's direct calls
  const unsigned char* dbase_ = nullptr;          ///< the landing buffer (registered writable on port 0)
  uint64_t dbytes_ = 0;
  utofu_stadd_t dstadd_ = 0;
  std::vector<std::deque<int>> dsendq_, drecvq_;  ///< direct transfers per peer, in posting order
  std::vector<std::deque<uint8_t>> dnotes_;       ///< per source: step tags of direct puts arrived, not yet matched
  std::vector<uint64_t> ready_to_;                ///< per source: the call whose ready put it got
  uint64_t ready_out_[3] = {0, 0, 0};
};

}  // namespace bine::utofu
