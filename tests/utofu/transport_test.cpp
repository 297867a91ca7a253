// transport_test.cpp: bine::utofu::UtofuTransport (runtime/include/bine/utofu_transport.hpp)
// over the uTofu emulation, below the round pipeline: ports (one VCQ per TNI), step tags
// (edata) and the per-pair stream order across ports (docs/utofu.md, "Multi-port").
// Run by run_transport.sh under mpirun; compiled with a 512-byte staging area, so that
// messages are cut into 128-byte pieces and wait for credits.
//
// Checks, each against what the test computes itself:
// 1. One round in which every rank sends to every other rank (p - 1 peers, p = 7: six)
//    on a fresh communicator: every byte arrives, and the i-th peer's message leaves on
//    TNI i mod 6, so each of the six TNIs carries puts (the emulation's put counters).
// 2. 400 rounds of messages of random sizes (0 .. 1000 B, the piggyback sizes included)
//    to peers in an order that changes every round, so that a peer's port changes from
//    round to round: every byte arrives in order. In the last 200 rounds the receives are
//    posted late, so a sender's next message to a peer is often posted while its last is
//    unconsumed (the emulation lands puts of different TNIs in any order).
// 3. (argument "refuse") A piece whose round is not the receive's (sender in round 1,
//    receiver in round 2) is MPI_ERR_INTERN, and nothing is copied.
// 4. step_tag(): rounds r -> r mod 255, the two-one epilogue -> 255.
#include <mpi.h>

#include "bine/utofu_transport.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int bine_utofu_emu_puts_per_tni(uint64_t counts[]);

namespace {

int failures = 0;
int rank_ = 0, size_ = 1;

void expect(bool ok, const char* what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank_, what);
}

// The byte k of the message from s to d in round t (the test's own content rule).
unsigned char byte_of(int t, int s, int d, size_t k) { return (unsigned char)(t * 131 + s * 31 + d * 7 + k * 13 + 1); }

// The size of that message: 0 .. 1000 bytes (0 .. 100 with `small`), drawn from (t, s, d).
size_t size_of(int t, int s, int d, bool small) {
  uint64_t x = uint64_t(t) * 0x9e3779b97f4a7c15ull ^ uint64_t(s) * 0xbf58476d1ce4e5b9ull ^ uint64_t(d) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 29;
  const uint64_t r = x % 10;
  return r == 0 ? 0 : r < 3 ? size_t(x % 33) : size_t(x % (small ? 101 : 1001));  // empty, piggyback-sized, any
}

// One round t on `comm`: every rank sends to every other rank (in the order `order`
// gives the offsets 1 .. p-1) and receives from every other; returns the transport's code.
// `lazy`: the receives are posted only once the sends completed locally, so a sender runs
// ahead into the next round while its last message is unconsumed (messages of at most
// 100 B: two rounds' pieces fit in the staging area, so no one waits for a credit).
int round_all(bine::utofu::UtofuTransport& tr, int t, const std::vector<int>& order, bool check, bool lazy = false) {
  const int p = size_;
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(p)), in(static_cast<size_t>(p));
  std::vector<bine::utofu::UtofuTransport::Request> req;
  tr.begin_step(uint32_t(t));
  const auto post_recvs = [&]() {
    for (int off : order) {
      const int s = (rank_ - off + p) % p;
      in[size_t(s)].assign(size_of(t, s, rank_, lazy), 0);
      req.push_back(tr.null_request());
      if (const int rc = tr.post_recv(in[size_t(s)].data(), int(in[size_t(s)].size()), s, &req.back()); rc != MPI_SUCCESS)
        return rc;
    }
    return int(MPI_SUCCESS);
  };
  if (!lazy)
    if (const int rc = post_recvs(); rc != MPI_SUCCESS) return rc;
  for (int off : order) {
    const int d = (rank_ + off) % p;
    std::vector<unsigned char>& m = out[size_t(d)];
    m.resize(size_of(t, rank_, d, lazy));
    for (size_t k = 0; k < m.size(); ++k) m[k] = byte_of(t, rank_, d, k);
    req.push_back(tr.null_request());
    if (const int rc = tr.post_send(m.data(), int(m.size()), d, &req.back()); rc != MPI_SUCCESS) return rc;
  }
  if (lazy) {
    if (const int rc = tr.wait_all(req.data(), int(req.size())); rc != MPI_SUCCESS) return rc;
    req.clear();
    if (const int rc = post_recvs(); rc != MPI_SUCCESS) return rc;
  }
  if (const int rc = tr.wait_all(req.data(), int(req.size())); rc != MPI_SUCCESS) return rc;
  if (check)
    for (int s = 0; s < p; ++s) {
      if (s == rank_) continue;
      bool same = true;
      for (size_t k = 0; k < in[size_t(s)].size(); ++k) same &= in[size_t(s)][k] == byte_of(t, s, rank_, k);
      if (!same) {
        std::fprintf(stderr, "rank %d: round %d: the message from %d differs\n", rank_, t, s);
        ++failures;
      }
    }
  return MPI_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  using bine::utofu::step_tag;
  expect(step_tag(0) == 0 && step_tag(254) == 254 && step_tag(255) == 0 && step_tag(UINT32_MAX) == 255,
         "step_tag: r mod 255, 255 for the two-one epilogue");

  // 1. The ports of one round, on a fresh communicator.
  {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    bine::utofu::UtofuTransport tr;
    tr.bind(comm, MPI_BYTE, MPI_OP_NULL);
    uint64_t before[6], after[6];
    bine_utofu_emu_puts_per_tni(before);
    std::vector<int> order;
    for (int off = 1; off < size_; ++off) order.push_back(off);
    // The i-th peer's message gets port i mod ports: with at least 6 peers, all 6 TNIs
    // carry puts; every message is at least 1 byte (an empty one carries a token byte).
    const int rc = round_all(tr, 0, order, true);
    if (rc != MPI_SUCCESS) std::fprintf(stderr, "rank %d: code %d\n", rank_, rc);
    expect(rc == MPI_SUCCESS, "one round to every peer");
    bine_utofu_emu_puts_per_tni(after);
    const int peers = size_ - 1;
    for (int i = 0; i < 6; ++i) {
      const bool used = after[i] > before[i];
      if (i < peers && !used) {
        std::fprintf(stderr, "rank %d: TNI %d carried no put (%d peers)\n", rank_, i, peers);
        ++failures;
      }
      if (i >= peers && i > 0 && used) {  // TNI 0 also carries credits
        std::fprintf(stderr, "rank %d: TNI %d carried puts with only %d peers\n", rank_, i, peers);
        ++failures;
      }
    }
    MPI_Comm_free(&comm);
  }

  // 2. Ports changing from round to round: the stream to a peer keeps its order.
  {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    bine::utofu::UtofuTransport tr;
    tr.bind(comm, MPI_BYTE, MPI_OP_NULL);
    std::vector<int> order;
    for (int off = 1; off < size_; ++off) order.push_back(off);
    // Rounds 200..399 send forward only (offsets 1 .. (p-1)/2, at most 3: no rank waits
    // for the ranks it sends to) and post receives late, so a sender runs a round or two
    // ahead of its peers and the stream to a peer is often unconsumed when its port changes.
    std::vector<int> forward;
    for (int off = 1; off <= std::min(3, (size_ - 1) / 2); ++off) forward.push_back(off);
    for (int t = 0; t < 400 && failures == 0; ++t) {
      if (t == 200 && !forward.empty()) order = forward;
      // Rotate the peers' order: a peer's port (its position) changes every round.
      if (!order.empty()) std::rotate(order.begin(), order.begin() + 1, order.end());
      const int rc = round_all(tr, t, order, true, t >= 200);
      if (rc != MPI_SUCCESS) {
        std::fprintf(stderr, "rank %d: round %d: code %d\n", rank_, t, rc);
        ++failures;
      }
    }
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
  }

  // 3. Sender and receiver in different rounds: the receiver refuses the piece (argument
  // "refuse": the sender's communicator free then waits 10 s for the credit it never gets).
  if (size_ >= 2 && argc > 1 && std::string(argv[1]) == "refuse") {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    bine::utofu::UtofuTransport tr;
    tr.bind(comm, MPI_BYTE, MPI_OP_NULL);
    std::vector<unsigned char> m(100, 7), got(100, 0);
    if (rank_ == 0) {
      tr.begin_step(1);
      expect(tr.send(m.data(), 100, 1) == MPI_SUCCESS, "the round-1 send completes locally");
    } else if (rank_ == 1) {
      tr.begin_step(2);
      expect(tr.recv(got.data(), 100, 0) == MPI_ERR_INTERN, "a round-1 piece into a round-2 receive is MPI_ERR_INTERN");
      bool untouched = true;
      for (unsigned char b : got) untouched &= b == 0;
      expect(untouched, "nothing of the refused piece is copied into the receive buffer");
    }
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
  }

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) std::printf("utofu transport p=%d: %s (%d failures)\n", size_, all ? "FAILED" : "ok", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
