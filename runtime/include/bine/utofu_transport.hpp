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
// computes the address alone). The receiver counts RMT_PUT notices per source (edata = the
// piece number modulo 256, checked: a lost or reordered piece is an error), copies each
// arrived piece into the posted receive buffer, and returns a credit (the stream position it
// has consumed) with an 8-byte piggyback put into the sender's credit slot. A sender writes
// a piece only when it lies within kStagingBytes of that credit: no two puts in flight
// overlap, and nothing is overwritten before the receiver has consumed it, within a call and
// across calls (the fast-sender hazard).
//
// An empty message (a barrier's) carries one token byte, so that its receive completes
// only when the sender has posted it; the byte is discarded.
//
// Resources: one VCQ per communicator (TNI 0), cached as an MPI attribute and freed (VCQ,
// registrations) when the communicator is freed; send buffers of more than 32 B are
// registered for the time of their puts.
#pragma once
#include <mpi.h>
#include <utofu.h>

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
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

/// The uTofu state of one communicator (created collectively at its first use).
struct Channel {
  int rank = 0, size = 1;
  utofu_vcq_hdl_t vcq = 0;
  std::vector<utofu_vcq_id_t> peer_vcq;
  std::unordered_map<utofu_vcq_id_t, int> rank_of;  ///< a notice's source VCQ -> rank
  std::vector<unsigned char> staging;               ///< size * kStagingBytes
  std::vector<uint64_t> credit;                     ///< credit[d]: d consumed this much of my stream
  utofu_stadd_t staging_stadd = 0, credit_stadd = 0;
  std::vector<utofu_stadd_t> peer_staging, peer_credit;
  std::vector<uint64_t> sent, consumed;     ///< stream positions, per peer (out / in)
  std::vector<uint64_t> credit_out;         ///< the consumed position last returned
  std::vector<uint32_t> send_seq, recv_seq; ///< pieces posted / arrived, per peer
  std::vector<int64_t> arrived;             ///< pieces arrived and not yet consumed
  uint64_t credit_value[1] = {0};
  ~Channel() {
    if (!vcq) return;
    if (staging_stadd) utofu_dereg_mem(vcq, staging_stadd, 0);
    if (credit_stadd) utofu_dereg_mem(vcq, credit_stadd, 0);
    utofu_free_vcq(vcq);
  }
};

/// Transport over uTofu puts; requests are indices in the transport's operation table.
class UtofuTransport {
 public:
  using Request = int;
  /// One stream of pieces per (source, destination): two calls in flight at once would
  /// interleave in it, so nonblocking forms complete at their start (mpi_runtime.hpp).
  static constexpr bool kConcurrent = false;
  static Request null_request() { return -1; }
  void set_tag(int) {}

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
      auto& q = o.is_send ? sendq_[size_t(o.peer)] : recvq_[size_t(o.peer)];
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
    int peer = 0;
    unsigned char* data = nullptr;
    uint64_t bytes = 0, sent = 0;  ///< sent: bytes put (send) or copied out (recv)
    int64_t outstanding = 0;       ///< puts not yet locally complete
    utofu_stadd_t stadd = 0;       ///< registration of a send buffer (0: none)
    bool retired = false;
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
    if (rc == UTOFU_SUCCESS) rc = utofu_create_vcq(tnis[0], 0, &c->vcq);
    std::free(tnis);
    utofu_vcq_id_t me = 0;
    c->staging.assign(p * kStagingBytes, 0);
    c->credit.assign(p, 0);
    if (rc == UTOFU_SUCCESS) rc = utofu_query_vcq_id(c->vcq, &me);
    if (rc == UTOFU_SUCCESS) rc = utofu_reg_mem(c->vcq, c->staging.data(), c->staging.size(), 0, &c->staging_stadd);
    if (rc == UTOFU_SUCCESS)
      rc = utofu_reg_mem(c->vcq, c->credit.data(), c->credit.size() * sizeof(uint64_t), 0, &c->credit_stadd);
    // Bootstrap: every rank learns every rank's VCQ id and stadds, and whether all succeeded.
    uint64_t mine[4] = {me, c->staging_stadd, c->credit_stadd, uint64_t(rc == UTOFU_SUCCESS ? 0 : 1)};
    std::vector<uint64_t> all(4 * p);
    int mrc = MPI_Allgather(mine, 4, MPI_UINT64_T, all.data(), 4, MPI_UINT64_T, comm);
    bool ok = mrc == MPI_SUCCESS;
    for (size_t i = 0; ok && i < p; ++i) ok = all[4 * i + 3] == 0;
    if (!ok) {
      delete c;
      return mrc != MPI_SUCCESS ? mrc : MPI_ERR_OTHER;
    }
    c->peer_vcq.resize(p);
    c->peer_staging.resize(p);
    c->peer_credit.resize(p);
    for (size_t i = 0; i < p; ++i) {
      c->peer_vcq[i] = all[4 * i];
      utofu_set_vcq_id_path(&c->peer_vcq[i], nullptr);
      c->rank_of[all[4 * i]] = int(i);
      c->peer_staging[i] = all[4 * i + 1];
      c->peer_credit[i] = all[4 * i + 2];
    }
    c->sent.assign(p, 0);
    c->consumed.assign(p, 0);
    c->credit_out.assign(p, 0);
    c->send_seq.assign(p, 0);
    c->recv_seq.assign(p, 0);
    c->arrived.assign(p, 0);
    MPI_Comm_set_attr(comm, attr_key(), c);
    *out = c;
    return MPI_SUCCESS;
  }

  int post(bool is_send, void* data, int count, int peer, Request* r) {
    if (bind_rc_ != MPI_SUCCESS) return bind_rc_;
    if (sendq_.size() != size_t(ch_->size)) {
      sendq_.assign(size_t(ch_->size), {});
      recvq_.assign(size_t(ch_->size), {});
    }
    Op o;
    o.is_send = is_send;
    o.peer = peer;
    o.data = static_cast<unsigned char*>(data);
    o.bytes = uint64_t(count) * elem_;
    if (o.bytes == 0) {  // an empty message (a barrier's) must still notify: one token byte
      o.bytes = 1;
      o.data = is_send ? &token_out_ : &token_in_;
    }
    if (is_send && o.bytes > kPiggybackBytes &&
        utofu_reg_mem(ch_->vcq, data, size_t(o.bytes), UTOFU_REG_MEM_FLAG_READ_ONLY, &o.stadd) != UTOFU_SUCCESS)
      return MPI_ERR_BUFFER;  // a buffer that cannot be registered: nothing was sent
    *r = int(ops_.size());
    ops_.push_back(o);
    (is_send ? sendq_ : recvq_)[size_t(peer)].push_back(*r);
    return progress();
  }

  void retire(Request* r) {
    Op& o = ops_[size_t(*r)];
    if (o.stadd) utofu_dereg_mem(ch_->vcq, o.stadd, 0);
    o.stadd = 0;
    o.retired = true;
    *r = null_request();
    bool all = true;
    for (const Op& x : ops_) all &= x.retired;
    if (all) ops_.clear();
  }

  /// One pass: retire local completions, count arrivals, copy out and return credits, put
  /// what the credits allow.
  int progress() {
    Channel& c = *ch_;
    void* cb = nullptr;
    int rc;
    while ((rc = utofu_poll_tcq(c.vcq, 0, &cb)) == UTOFU_SUCCESS) {
      const uintptr_t id = reinterpret_cast<uintptr_t>(cb);
      if (id > 0 && id <= ops_.size()) {
        Op& o = ops_[id - 1];
        if (--o.outstanding == 0 && o.sent == o.bytes) o.done = true;
      }
    }
    if (rc != UTOFU_ERR_NOT_FOUND) return MPI_ERR_OTHER;
    utofu_mrq_notice n;
    while ((rc = utofu_poll_mrq(c.vcq, 0, &n)) == UTOFU_SUCCESS) {
      if (n.notice_type != UTOFU_MRQ_TYPE_RMT_PUT) continue;
      auto it = c.rank_of.find(n.vcq_id);
      if (it == c.rank_of.end()) continue;  // a put on another communicator's VCQ? not ours
      const size_t s = size_t(it->second);
      if (n.edata != (c.recv_seq[s] & 0xffu)) return MPI_ERR_INTERN;  // a piece lost or reordered
      ++c.recv_seq[s];
      ++c.arrived[s];
    }
    if (rc != UTOFU_ERR_NOT_FOUND) return MPI_ERR_OTHER;
    for (size_t s = 0; s < recvq_.size(); ++s) {
      bool moved = false;
      while (c.arrived[s] > 0 && !recvq_[s].empty()) {
        Op& o = ops_[size_t(recvq_[s].front())];
        const uint64_t piece = std::min(kPieceBytes, o.bytes - o.sent);
        const uint64_t at = place_piece(c.consumed[s], piece);
        std::memcpy(o.data + o.sent, &c.staging[s * kStagingBytes + at], size_t(piece));
        o.sent += piece;
        --c.arrived[s];
        moved = true;
        if (o.sent == o.bytes) {
          o.done = true;
          recvq_[s].pop_front();
        }
      }
      if (moved) {
        c.credit_value[0] = c.consumed[s];
        rc = utofu_put_piggyback(c.vcq, c.peer_vcq[s], c.credit_value, c.peer_credit[s] + c.rank * sizeof(uint64_t),
                                 sizeof(uint64_t), 0, UTOFU_ONESIDED_FLAG_STRONG_ORDER, nullptr);
        while (rc == UTOFU_ERR_BUSY) {
          utofu_poll_tcq(c.vcq, 0, &cb);
          rc = utofu_put_piggyback(c.vcq, c.peer_vcq[s], c.credit_value, c.peer_credit[s] + c.rank * sizeof(uint64_t),
                                   sizeof(uint64_t), 0, UTOFU_ONESIDED_FLAG_STRONG_ORDER, nullptr);
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
        if (pos - __atomic_load_n(&c.credit[d], __ATOMIC_ACQUIRE) > kStagingBytes) break;  // wait for credit
        const utofu_stadd_t dst = c.peer_staging[d] + uint64_t(c.rank) * kStagingBytes + at;
        void* cbdata = reinterpret_cast<void*>(uintptr_t(id) + 1);
        const uint64_t edata = c.send_seq[d] & 0xffu;
        rc = piece <= kPiggybackBytes
                 ? utofu_put_piggyback(c.vcq, c.peer_vcq[d], o.data + o.sent, dst, size_t(piece), edata, kPutFlags, cbdata)
                 : utofu_put(c.vcq, c.peer_vcq[d], o.stadd + o.sent, dst, size_t(piece), edata, kPutFlags, cbdata);
        if (rc == UTOFU_ERR_BUSY) break;  // the TOQ is full: retried after the next TCQ poll
        if (rc != UTOFU_SUCCESS) return MPI_ERR_OTHER;
        c.sent[d] = pos;
        ++c.send_seq[d];
        ++o.outstanding;
        o.sent += piece;
        if (o.sent == o.bytes) sendq_[d].pop_front();
      }
    }
    return MPI_SUCCESS;
  }

  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  uint64_t elem_ = 1;
  Channel* ch_ = nullptr;
  int bind_rc_ = MPI_SUCCESS;
  std::vector<Op> ops_;
  std::vector<std::deque<int>> sendq_, recvq_;
  unsigned char token_out_ = 0, token_in_ = 0;  ///< the byte an empty message carries (post())
};

}  // namespace bine::utofu
