// landing_model.cpp: the uTofu transport's landing protocol (docs/utofu.md, "Landing
// layout") checked exhaustively on a model, with the transport's own rules: place_piece()
// (where a piece lands) and within_credit() (when it may be put), compiled from
// bine/utofu_transport.hpp with an 8-byte staging area (pieces of at most 2 bytes).
//
// One (source, destination) stream: the source puts the pieces of a sequence of messages
// (each cut into pieces of at most kPieceBytes) when within_credit() allows, at the offset
// place_piece() gives; puts travel in order (one VCQ pair, STRONG_ORDER) and land at any
// later time; the receiver consumes landed pieces in order (at any later time: its receive
// may be posted late), computing each piece's offset with place_piece() on its own, and
// returns a credit (its consumed position) that reaches the sender in order (port 0) at
// any later time. Every interleaving of these four moves is explored (a search over
// states), for every sequence of four messages of 0..5 bytes (an empty message carries
// one token byte, as in the transport). Checked in every reachable state:
//   1. no two puts in flight (put, not yet consumed) write overlapping bytes, and every
//      put lies inside the source's staging area;
//   2. nothing is overwritten before it is consumed: a landing put finds only consumed
//      bytes, and the receiver reads back exactly the piece it expects, at the offset the
//      sender chose;
//   3. the receiver consumes every piece, once, in order (no state where nothing can move
//      before the end: no deadlock).
// Mutations of the rules, each of which the search must catch: no credit check; a piece
// wrapped across the end of the area instead of restarting at 0; one piece more in flight
// than the credit allows; credits delivered out of order (two VCQ pairs).
#include "bine/utofu_transport.hpp"

#include <cstdint>
#include <cstdio>
#include <deque>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

using bine::utofu::kPieceBytes;
using bine::utofu::kStagingBytes;
static_assert(kStagingBytes == 8 && kPieceBytes == 2, "compiled with BINE_UTOFU_STAGING_BYTES=8");

enum class Mutation { none, no_credit_check, wrap_across_end, credit_off_by_piece, credits_unordered };

struct Rules {
  Mutation m = Mutation::none;
  uint64_t place(uint64_t& pos, uint64_t bytes) const {
    if (m == Mutation::wrap_across_end) {  // no restart at 0: the piece runs past the end
      const uint64_t at = pos % kStagingBytes;
      pos += bytes;
      return at;
    }
    return bine::utofu::place_piece(pos, bytes);
  }
  bool may_put(uint64_t end, uint64_t credit) const {
    if (m == Mutation::no_credit_check) return true;
    if (m == Mutation::credit_off_by_piece) return end - credit <= kStagingBytes + kPieceBytes;  // one piece too many
    return bine::utofu::within_credit(end, credit);
  }
};

struct Put {
  uint64_t at, len;
  int id;
  friend bool operator<(const Put& a, const Put& b) { return std::tie(a.at, a.len, a.id) < std::tie(b.at, b.len, b.id); }
  friend bool operator==(const Put& a, const Put& b) { return a.at == b.at && a.len == b.len && a.id == b.id; }
};

struct State {
  int next = 0;                    // the sender's next piece
  uint64_t pos = 0, credit = 0;    // sender: stream position, last credit seen
  std::vector<Put> wire;           // put, not landed (in order)
  std::vector<Put> landed;         // landed, not consumed (in order: the notices)
  std::vector<int> staging = std::vector<int>(kStagingBytes, -1);  // the piece each byte holds
  int consumed = 0;                // pieces the receiver consumed
  uint64_t rpos = 0;               // receiver: stream position
  std::vector<uint64_t> credits;   // credit puts in flight
  bool operator<(const State& o) const {
    return std::tie(next, pos, credit, wire, landed, staging, consumed, rpos, credits) <
           std::tie(o.next, o.pos, o.credit, o.wire, o.landed, o.staging, o.consumed, o.rpos, o.credits);
  }
};

struct Search {
  Rules rules;
  std::vector<uint64_t> pieces;  // sizes, in stream order
  std::string violation;
  std::set<State> seen;
  size_t states = 0;

  bool fail(const std::string& what) {
    if (violation.empty()) violation = what;
    return false;
  }
  // Checks a put against the pieces in flight (property 1).
  bool check_put(const State& s, const Put& p) {
    if (p.at + p.len > kStagingBytes) return fail("1: a put runs past the staging area");
    auto overlap = [&](const Put& q) { return p.at < q.at + q.len && q.at < p.at + p.len; };
    for (const Put& q : s.wire)
      if (overlap(q)) return fail("1: two puts in flight overlap");
    for (const Put& q : s.landed)
      if (overlap(q)) return fail("1: two puts in flight overlap");
    return true;
  }
  bool explore(const State& s) {
    if (!violation.empty()) return false;
    if (!seen.insert(s).second) return true;
    ++states;
    bool moved = false;
    // The sender puts its next piece.
    if (s.next < int(pieces.size())) {
      State t = s;
      const uint64_t len = pieces[size_t(s.next)];
      uint64_t end = t.pos;
      const uint64_t at = rules.place(end, len);
      if (rules.may_put(end, t.credit)) {
        const Put p{at, len, t.next};
        if (!check_put(t, p)) return false;
        t.pos = end;
        t.wire.push_back(p);
        ++t.next;
        moved = true;
        if (!explore(t)) return false;
      }
    }
    // The oldest put in flight lands.
    if (!s.wire.empty()) {
      State t = s;
      const Put p = t.wire.front();
      t.wire.erase(t.wire.begin());
      for (uint64_t b = p.at; b < p.at + p.len; ++b) {
        const int held = t.staging[size_t(b)];
        if (held >= t.consumed && held != p.id) return fail("2: a put overwrote an unconsumed piece");
        t.staging[size_t(b)] = p.id;
      }
      t.landed.push_back(p);
      moved = true;
      if (!explore(t)) return false;
    }
    // The receiver consumes the oldest landed piece and returns a credit.
    if (!s.landed.empty()) {
      State t = s;
      const Put p = t.landed.front();
      t.landed.erase(t.landed.begin());
      if (p.id != t.consumed) return fail("3: a piece consumed out of order");
      const uint64_t at = rules.place(t.rpos, pieces[size_t(p.id)]);
      if (at != p.at) return fail("2: the receiver reads another offset than the sender wrote");
      for (uint64_t b = at; b < at + p.len; ++b)
        if (t.staging[size_t(b)] != p.id) return fail("2: the receiver read bytes of another piece");
      ++t.consumed;
      t.credits.push_back(t.rpos);
      moved = true;
      if (!explore(t)) return false;
    }
    // A credit reaches the sender: the oldest (port 0), or any (mutation).
    for (size_t i = 0; i < s.credits.size(); ++i) {
      if (i > 0 && rules.m != Mutation::credits_unordered) break;
      State t = s;
      t.credit = t.credits[i];
      t.credits.erase(t.credits.begin() + long(i));
      moved = true;
      if (!explore(t)) return false;
    }
    if (!moved && s.consumed < int(pieces.size())) return fail("3: no move is possible before the end (deadlock)");
    return true;
  }
};

// The pieces of a message sequence, as the transport cuts them (an empty message: 1 byte).
std::vector<uint64_t> cut(const std::vector<uint64_t>& messages) {
  std::vector<uint64_t> out;
  for (uint64_t m : messages) {
    const uint64_t bytes = m == 0 ? 1 : m;
    for (uint64_t done = 0; done < bytes; done += kPieceBytes) out.push_back(std::min(kPieceBytes, bytes - done));
  }
  return out;
}

// Every sequence of four messages of 0..5 bytes under `rules`: the first violation, or "".
std::string check_all(Rules rules, size_t* sequences, size_t* states) {
  *sequences = *states = 0;
  for (uint64_t code = 0; code < 6 * 6 * 6 * 6; ++code) {
    const std::vector<uint64_t> messages = {code % 6, code / 6 % 6, code / 36 % 6, code / 216};
    Search s;
    s.rules = rules;
    s.pieces = cut(messages);
    s.explore(State{});
    ++*sequences;
    *states += s.states;
    if (!s.violation.empty()) {
      std::string m;
      for (uint64_t x : messages) m += (m.empty() ? "" : ", ") + std::to_string(x);
      return s.violation + " (messages of " + m + " bytes)";
    }
  }
  return "";
}

}  // namespace

int main() {
  int failures = 0;
  size_t sequences = 0, states = 0;
  const std::string real = check_all(Rules{Mutation::none}, &sequences, &states);
  std::printf("landing protocol: %zu message sequences, %zu states: %s\n", sequences, states,
              real.empty() ? "properties 1-3 hold" : real.c_str());
  failures += !real.empty();
  const std::pair<Mutation, const char*> mutations[] = {
      {Mutation::no_credit_check, "no credit check"},
      {Mutation::wrap_across_end, "a piece wrapped across the end"},
      {Mutation::credit_off_by_piece, "one piece more than the credit allows"},
      {Mutation::credits_unordered, "credits out of order"},
  };
  for (const auto& [m, name] : mutations) {
    const std::string v = check_all(Rules{m}, &sequences, &states);
    std::printf("mutation '%s': %s\n", name, v.empty() ? "NOT CAUGHT" : ("caught: " + v).c_str());
    failures += v.empty();
  }
  return failures ? 1 : 0;
}
