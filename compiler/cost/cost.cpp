// The event-driven simulation behind simulate_cost (docs/cost.md, "Model").
//
// Events are message ends and round entries, processed in time order. After the events
// of one instant, waiting messages are started greedily: a message is eligible once both
// endpoints are in its round, and starts when the sender's send port and the receiver's
// receive port are both free; competing messages go in order of eligibility, then sender
// rank, then the sender's posting order. Every start and round end records the event that
// bound it, so the critical path is read backwards from the last rank to finish.
#include "cost.h"
#include "bine/round_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

namespace bine {
namespace {

constexpr int64_t kNone = -1;

struct Message {
  int64_t src = 0, dst = 0, round = 0;
  int64_t send_index = 0;  ///< posting position among the sender's ops in the round
  uint64_t elements = 0, bytes = 0;
  uint64_t pieces = 1;     ///< segments it travels as (the round's `segment` size)
  bool bidirectional = false;
  int link = 2;            ///< CostParams::link(): 0 local, 1 within a group, 2 global
  double cost = 0;
  // simulation state
  int arrived = 0;
  bool started = false;
  double eligible = 0, start = 0, end = 0;
  // the event that bound the start: the round entry of `pred_rank` (pred_msg == kNone)
  // or the end of message `pred_msg` (port contention)
  int64_t pred_rank = kNone, pred_msg = kNone;
};

/// Waiting-list order: eligibility time, sender, sender's posting order.
using Key = std::tuple<double, int64_t, int64_t, int64_t>;

struct Port {
  int64_t active = 0;        ///< messages in progress on this port (at most CostParams::ports)
  bool dirty = false;        ///< listed in Simulator::dirty_
  int64_t last_msg = kNone;  ///< the message that last released the port
  double last_end = -1;
  std::set<Key> waiting;
};

struct Event {
  double time;
  int64_t seq;
  bool is_msg_end;  ///< else: a rank enters its next round
  int64_t id;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

std::string fmt(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

class Simulator {
 public:
  Simulator(const Schedule& s, const CostVector& v, const CostParams& prm)
      : s_(s), v_(v), offsets_(count_offsets(v)), prm_(prm) {}

  CostResult run() {
    CostResult res;
    res.rounds = s_.num_rounds;
    if (!check_params(res.error) || !build_messages(res.error)) return res;
    simulate();
    for (int64_t r = 0; r < p_; ++r)
      if (cur_[size_t(r)] < T_) {
        const int64_t t = cur_[size_t(r)];
        res.error = "deadlock: rank " + std::to_string(r) + " never completes round " + std::to_string(t) + " (" +
                    std::to_string(pending_[size_t(r)]) + " of its messages never start)";
        return res;
      }
    res.ok = true;
    res.ranks.assign(size_t(p_), {});
    for (const Message& m : msgs_) {
      RankCost& a = res.ranks[size_t(m.src)];
      RankCost& b = res.ranks[size_t(m.dst)];
      ++a.messages_sent;
      ++b.messages_received;
      a.bytes_sent += m.bytes;
      b.bytes_received += m.bytes;
      ++res.messages;
      res.bytes += m.bytes;
    }
    for (int64_t r = 0; r < p_; ++r) {
      RankCost& rc = res.ranks[size_t(r)];
      for (int64_t t = 0; t < T_; ++t) rc.elements_reduced += reduce_[at(r, t)];
      rc.finish = finish_[size_t(r)];
      if (rc.finish > res.makespan) {
        res.makespan = rc.finish;
        res.last_rank = r;
      }
    }
    trace_critical_path(res);
    return res;
  }

 private:
  size_t at(int64_t r, int64_t t) const { return size_t(r * T_ + t); }

  bool check_params(std::string& err) {
    auto bad = [](double x) { return !(x >= 0) || std::isinf(x); };
    if (bad(prm_.alpha) || bad(prm_.beta) || bad(prm_.gamma) || bad(prm_.alpha_local) || bad(prm_.beta_local) ||
        bad(prm_.alpha_group) || bad(prm_.beta_group)) {
      err = "alpha, beta, gamma, alpha_local, beta_local, alpha_group and beta_group must be finite and >= 0";
      return false;
    }
    if (!prm_.group.empty() && int64_t(prm_.group.size()) != s_.p) {
      err = "the group map has " + std::to_string(prm_.group.size()) + " ranks, the schedule " + std::to_string(s_.p);
      return false;
    }
    if (prm_.ports < 1) {
      err = "ports must be >= 1";
      return false;
    }
    if (!(prm_.f_alpha > 0) || !(prm_.f_beta > 0) || std::isinf(prm_.f_alpha) || std::isinf(prm_.f_beta)) {
      err = "f_alpha and f_beta must be finite and > 0";
      return false;
    }
    if (prm_.ppn < 0) {
      err = "ranks per node must be >= 0";
      return false;
    }
    if (!prm_.region.empty() && int64_t(prm_.region.size()) != s_.p) {
      err = "the region map has " + std::to_string(prm_.region.size()) + " ranks, the schedule " + std::to_string(s_.p);
      return false;
    }
    if (v_.elem_size < 1) {
      err = "element size must be >= 1";
      return false;
    }
    if (s_.blocks < 1 && v_.elements > 0) {
      err = "schedule has no blocks";
      return false;
    }
    if (!v_.counts.empty()) {
      if (int64_t(v_.counts.size()) != s_.blocks) {
        err = "the counts vector has " + std::to_string(v_.counts.size()) + " entries, the instance " +
              std::to_string(s_.blocks) + " blocks";
        return false;
      }
      uint64_t sum = 0;
      for (uint64_t c : v_.counts) sum += c;
      if (sum != v_.elements) {
        err = "the counts add up to " + std::to_string(sum) + " elements, the vector has " + std::to_string(v_.elements);
        return false;
      }
    }
    return true;
  }

  /// Elements per message piece in round t: the round's `segment` size in whole elements
  /// (at least one), at most the MPI transport's piece (unsegmented rounds: the whole
  /// message up to INT_MAX elements); the runtime's rule (bine/round_plan.hpp).
  uint64_t piece_elements(int64_t t) const {
    const int64_t seg = size_t(t) < s_.round_segments.size() ? s_.round_segments[size_t(t)] : 0;
    return message_piece(seg, v_.elem_size, kMpiMaxPieceElements);
  }
  /// Elements of receive `i` of rank y in round t (from rank x) whose reduction is not
  /// hidden behind the transfer. A segmented receive that reduces into blocks no send and
  /// no other receive of the round touches is reduced piece by piece as the pieces arrive
  /// (the runtime's rule), so while a piece's reduction (gamma per element) takes no
  /// longer than the next piece's transfer (alpha + piece bytes * beta), only the last
  /// piece is left after the round's messages; otherwise nothing is credited.
  uint64_t exposed_reduction(const Round& rd, size_t i, int64_t x, int64_t y, int64_t t) const {
    const auto& rv = std::get<RecvOp>(rd[i]);
    const uint64_t e = block_elements(rv.blocks, v_, s_.blocks, offsets_);
    const uint64_t piece = piece_elements(t);
    if (piece >= e) return e;
    for (size_t j = 0; j < rd.size(); ++j)
      if (j != i && is_transfer(rd[j]) && !(blocks_of(rd[j]) & rv.blocks).empty()) return e;
    const int link = prm_.link(x, y);
    const double a = prm_.alpha_of(link), b = prm_.beta_of(link);
    if (prm_.gamma * double(piece) > a + double(piece * v_.elem_size) * b) return e;
    return e - (e - 1) / piece * piece;  // the last piece
  }
  /// Pairs each send with the receive it meets (match_round(), schedule.h: the verifier's
  /// rule) and prices each message.
  bool build_messages(std::string& err) {
    p_ = s_.p;
    T_ = s_.num_rounds;
    reduce_.assign(size_t(p_ * T_), 0);
    for (int64_t y = 0; y < p_; ++y)
      if (s_.ranks[size_t(y)].size() != size_t(T_)) {
        err = "rank " + std::to_string(y) + " has " + std::to_string(s_.ranks[size_t(y)].size()) + " rounds, expected " +
              std::to_string(T_);
        return false;
      }
    // Per round: every rank's sends sorted by (destination, posting index), the order
    // messages are listed in.
    std::vector<std::pair<int64_t, int64_t>> sends;  // (peer, op index)
    std::vector<size_t> send_at(size_t(p_) + 1);
    RoundMatching match;
    for (int64_t t = 0; t < T_; ++t) {
      sends.clear();
      for (int64_t y = 0; y < p_; ++y) {
        send_at[size_t(y)] = sends.size();
        const Round& rd = s_.ranks[size_t(y)][size_t(t)];
        for (size_t i = 0; i < rd.size(); ++i) {
          // A local reduction costs gamma per element after the round's messages, like a
          // receive's; local copies and permutations cost nothing in this model.
          if (const auto* lo = std::get_if<LocalOp>(&rd[i])) {
            if (lo->reduce) reduce_[at(y, t)] += block_elements(lo->blocks, v_, s_.blocks, offsets_);
            continue;
          }
          if (!is_transfer(rd[i])) continue;
          const int64_t x = peer_of(rd[i]);
          if (x < 0 || x >= p_ || x == y) {
            err = "rank " + std::to_string(y) + ", round " + std::to_string(t) + ": invalid peer " + std::to_string(x);
            return false;
          }
          if (const auto* rv = std::get_if<RecvOp>(&rd[i])) {
            if (rv->reduce) reduce_[at(y, t)] += exposed_reduction(rd, i, x, y, t);
          } else {
            sends.push_back({x, int64_t(i)});
          }
        }
        std::sort(sends.begin() + long(send_at[size_t(y)]), sends.end());
      }
      send_at[size_t(p_)] = sends.size();
      if (!match_round(s_, t, match)) {
        const std::string k = std::to_string(match.k), x = std::to_string(match.src), y = std::to_string(match.dst);
        err = "round " + std::to_string(t) + ": " +
              (match.unmatched_send ? "send " + k + " from rank " + x + " to rank " + y + " has no matching receive"
                                    : "receive " + k + " of rank " + y + " from rank " + x + " has no matching send");
        return false;
      }
      // whether rank y sends to rank x in this round
      auto sends_to = [&](int64_t y, int64_t x) {
        const auto b = sends.begin() + long(send_at[size_t(y)]), e = sends.begin() + long(send_at[size_t(y) + 1]);
        const auto it = std::lower_bound(b, e, std::pair<int64_t, int64_t>{x, INT64_MIN});
        return it != e && it->first == x;
      };
      for (int64_t x = 0; x < p_; ++x)
        for (size_t i = send_at[size_t(x)]; i < send_at[size_t(x) + 1]; ++i) {
          const auto [y, j] = sends[i];
          const auto& sd = std::get<SendOp>(s_.ranks[size_t(x)][size_t(t)][size_t(j)]);
          const auto& rv = std::get<RecvOp>(s_.ranks[size_t(y)][size_t(t)][size_t(match.mate_of(x, size_t(j)))]);
          Message m;
          m.src = x;
          m.dst = y;
          m.round = t;
          m.send_index = j;
          m.elements = block_elements(sd.blocks, v_, s_.blocks, offsets_);
          // The size rule (message_sizes_agree(), schedule.h), at this element count: the
          // message's size is the sender's.
          const uint64_t got = block_elements(rv.blocks, v_, s_.blocks, offsets_);
          if (got != m.elements && !message_sizes_agree(s_, sd.blocks, rv.blocks)) {
            err = "round " + std::to_string(t) + ": rank " + std::to_string(x) + " sends " + std::to_string(m.elements) +
                  " elements to rank " + std::to_string(y) + ", which receives " + std::to_string(got);
            return false;
          }
          m.bytes = m.elements * v_.elem_size;
          m.link = prm_.link(x, y);
          m.bidirectional = sends_to(y, x);
          const uint64_t piece = piece_elements(t);
          m.pieces = m.elements <= piece ? 1 : (m.elements - 1) / piece + 1;
          const double fa = m.bidirectional ? 1.0 : prm_.f_alpha, fb = m.bidirectional ? 1.0 : prm_.f_beta;
          const double a = prm_.alpha_of(m.link), b = prm_.beta_of(m.link);
          m.cost = double(m.pieces) * fa * a + fb * double(m.bytes) * b;
          msgs_.push_back(m);
        }
    }
    // Messages of each (rank, round), compressed: ids in round_msgs_[round_at_[i], round_at_[i + 1]).
    round_at_.assign(size_t(p_ * T_) + 1, 0);
    for (const Message& m : msgs_) {
      ++round_at_[at(m.src, m.round) + 1];
      ++round_at_[at(m.dst, m.round) + 1];
    }
    for (size_t i = 1; i < round_at_.size(); ++i) round_at_[i] += round_at_[i - 1];
    round_msgs_.assign(round_at_.back(), 0);
    std::vector<size_t> fill(round_at_.begin(), round_at_.end() - 1);
    for (size_t i = 0; i < msgs_.size(); ++i) {
      round_msgs_[fill[at(msgs_[i].src, msgs_[i].round)]++] = int64_t(i);
      round_msgs_[fill[at(msgs_[i].dst, msgs_[i].round)]++] = int64_t(i);
    }
    return true;
  }

  void push(double time, bool is_msg_end, int64_t id) { events_.push(Event{time, seq_++, is_msg_end, id}); }

  void simulate() {
    cur_.assign(size_t(p_), -1);
    pending_.assign(size_t(p_), 0);
    finish_.assign(size_t(p_), 0);
    msgs_done_.assign(size_t(p_ * T_), 0);
    last_msg_.assign(size_t(p_ * T_), kNone);
    send_port_.assign(size_t(p_), {});
    recv_port_.assign(size_t(p_), {});
    for (int64_t r = 0; r < p_; ++r) push(0, false, r);
    while (!events_.empty()) {
      const double now = events_.top().time;
      while (!events_.empty() && events_.top().time == now) {
        const Event e = events_.top();
        events_.pop();
        if (e.is_msg_end) end_message(e.id, now);
        else enter_round(e.id, now);
      }
      start_ready(now);
    }
  }

  void enter_round(int64_t r, double now) {
    const int64_t t = ++cur_[size_t(r)];
    if (t == T_) {
      finish_[size_t(r)] = now;
      return;
    }
    const size_t b = round_at_[at(r, t)], e = round_at_[at(r, t) + 1];
    pending_[size_t(r)] = int64_t(e - b);
    if (b == e) {
      msgs_done_[at(r, t)] = now;
      push(now + prm_.gamma * double(reduce_[at(r, t)]), false, r);  // only local reductions, if any
      return;
    }
    for (size_t i = b; i < e; ++i) {
      Message& m = msgs_[size_t(round_msgs_[i])];
      if (++m.arrived < 2) continue;
      m.eligible = now;
      m.pred_rank = r;
      fresh_.push_back(Key{now, m.src, m.send_index, round_msgs_[i]});
    }
  }

  void end_message(int64_t id, double now) {
    const Message& m = msgs_[size_t(id)];
    for (Port* port : {&send_port_[size_t(m.src)], &recv_port_[size_t(m.dst)]}) {
      --port->active;
      port->last_msg = id;
      port->last_end = now;
    }
    mark_dirty(0, m.src);
    mark_dirty(1, m.dst);
    for (int64_t r : {m.src, m.dst}) {
      if (--pending_[size_t(r)] > 0) continue;
      msgs_done_[at(r, m.round)] = now;
      last_msg_[at(r, m.round)] = id;
      push(now + prm_.gamma * double(reduce_[at(r, m.round)]), false, r);
    }
  }

  void mark_dirty(int kind, int64_t r) {
    Port& pt = kind == 0 ? send_port_[size_t(r)] : recv_port_[size_t(r)];
    if (pt.dirty || pt.waiting.empty()) return;
    pt.dirty = true;
    dirty_.push_back({kind, r});
  }

  /// Whether every one of the port's `ports` lanes carries a message.
  bool full(const Port& pt) const { return pt.active >= prm_.ports; }

  /// Starts message k at `now` when both of its ports are free; returns whether it did.
  bool try_start(const Key& k, double now) {
    const int64_t id = std::get<3>(k);
    Message& m = msgs_[size_t(id)];
    Port& sp = send_port_[size_t(m.src)];
    Port& rp = recv_port_[size_t(m.dst)];
    if (m.started || full(sp) || full(rp)) return false;
    m.started = true;
    m.start = now;
    m.end = now + m.cost;
    if (now != m.eligible) {  // waited for a port: the message that released it binds
      m.pred_rank = kNone;
      m.pred_msg = sp.last_end == now ? sp.last_msg : rp.last_msg;
    }
    sp.waiting.erase(k);
    rp.waiting.erase(k);
    ++sp.active;
    ++rp.active;
    push(m.end, true, id);
    return true;
  }

  /// Greedy start at `now`: every eligible message that has not started competes, in key
  /// order, and starts when both its ports are free. Only messages on ports released at
  /// `now` and messages eligible since `now` can start; the others stay blocked.
  void start_ready(double now) {
    std::sort(fresh_.begin(), fresh_.end());
    for (;;) {
      std::vector<Key> cand;
      for (const auto& [kind, r] : dirty_) {
        const Port& pt = kind == 0 ? send_port_[size_t(r)] : recv_port_[size_t(r)];
        if (full(pt)) continue;
        for (const Key& k : pt.waiting) {
          const Message& m = msgs_[size_t(std::get<3>(k))];
          const Port& other = kind == 0 ? recv_port_[size_t(m.dst)] : send_port_[size_t(m.src)];
          if (!full(other)) {
            cand.push_back(k);
            break;
          }
        }
      }
      if (cand.empty()) break;
      std::sort(cand.begin(), cand.end());
      // Waiting messages became eligible before the fresh ones (or with them, earlier in
      // key order), so they go first.
      for (const Key& k : cand) try_start(k, now);
    }
    for (const auto& [kind, r] : dirty_) (kind == 0 ? send_port_[size_t(r)] : recv_port_[size_t(r)]).dirty = false;
    dirty_.clear();
    for (const Key& k : fresh_) {
      if (try_start(k, now)) continue;
      const Message& m = msgs_[size_t(std::get<3>(k))];
      send_port_[size_t(m.src)].waiting.insert(k);
      recv_port_[size_t(m.dst)].waiting.insert(k);
    }
    fresh_.clear();
  }

  void trace_critical_path(CostResult& res) const {
    CriticalPath& cp = res.critical;
    if (T_ == 0) return;
    // A node is either the end of round t of rank r (msg < 0) or the end of message msg.
    int64_t r = res.last_rank, t = T_ - 1, msg = kNone;
    std::set<int64_t> rounds;
    for (;;) {
      if (msg == kNone) {
        if (t < 0) break;
        const uint64_t red = reduce_[at(r, t)];
        if (red > 0) {
          CostStep st;
          st.kind = StepKind::reduction;
          st.rank = r;
          st.round = t;
          st.elements = red;
          st.start = msgs_done_[at(r, t)];
          st.end = st.start + prm_.gamma * double(red);
          cp.steps.push_back(st);
          cp.reduced_elements += red;
          cp.coef_gamma += double(red);
        }
        if (last_msg_[at(r, t)] != kNone) msg = last_msg_[at(r, t)];
        else --t;
        continue;
      }
      const Message& m = msgs_[size_t(msg)];
      CostStep st;
      st.kind = StepKind::message;
      st.rank = m.src;
      st.peer = m.dst;
      st.round = m.round;
      st.bytes = m.bytes;
      st.pieces = m.pieces;
      st.elements = m.elements;
      st.bidirectional = m.bidirectional;
      st.local = m.link == 0;
      st.group = m.link == 1;
      st.start = m.start;
      st.end = m.end;
      cp.steps.push_back(st);
      ++cp.messages;
      cp.bytes += m.bytes;
      rounds.insert(m.round);
      const double fa = m.bidirectional ? 1.0 : prm_.f_alpha, fb = m.bidirectional ? 1.0 : prm_.f_beta;
      (m.link == 0 ? cp.coef_alpha_local : m.link == 1 ? cp.coef_alpha_group : cp.coef_alpha) += fa * double(m.pieces);
      (m.link == 0 ? cp.coef_beta_local : m.link == 1 ? cp.coef_beta_group : cp.coef_beta) += fb * double(m.bytes);
      if (m.pred_msg != kNone) {
        msg = m.pred_msg;
      } else {
        r = m.pred_rank;
        t = m.round - 1;
        msg = kNone;
      }
    }
    std::reverse(cp.steps.begin(), cp.steps.end());
    cp.rounds = int64_t(rounds.size());
  }

  const Schedule& s_;
  const CostVector& v_;
  const std::vector<uint64_t> offsets_;  ///< count_offsets(v_): the irregular layout, or empty
  const CostParams& prm_;
  int64_t p_ = 0, T_ = 0, seq_ = 0;
  std::vector<Message> msgs_;
  std::vector<size_t> round_at_;                  ///< [rank*T + round] offsets into round_msgs_
  std::vector<int64_t> round_msgs_;               ///< message ids of each (rank, round)
  std::vector<uint64_t> reduce_;                  ///< [rank*T + round] elements reduced
  std::vector<int64_t> cur_, pending_;
  std::vector<double> finish_, msgs_done_;
  std::vector<int64_t> last_msg_;
  std::vector<Port> send_port_, recv_port_;
  std::vector<std::pair<int, int64_t>> dirty_;  ///< ports released with messages waiting: (0 send / 1 receive, rank)
  std::vector<Key> fresh_;                      ///< messages eligible since the last start phase
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
};

std::string model_line(const CostParams& prm) {
  std::string l = "alpha = " + fmt(prm.alpha) + ", beta = " + fmt(prm.beta) + " per byte, gamma = " + fmt(prm.gamma) +
                  " per element; full duplex";
  if (prm.ports != 1) l += ", " + std::to_string(prm.ports) + " ports each way";
  if (prm.f_alpha != 1 || prm.f_beta != 1)
    l += "; unidirectional pairs: f_alpha = " + fmt(prm.f_alpha) + ", f_beta = " + fmt(prm.f_beta);
  if (!prm.region.empty())
    l += "; regions from the machine, alpha_local = " + fmt(prm.alpha_local) + ", beta_local = " + fmt(prm.beta_local);
  else if (prm.ppn > 0)
    l += "; " + std::to_string(prm.ppn) + " ranks per node, alpha_local = " + fmt(prm.alpha_local) +
         ", beta_local = " + fmt(prm.beta_local);
  else
    l += "; flat network";
  if (!prm.group.empty())
    l += "; groups from the machine, alpha_group = " + fmt(prm.alpha_group) + ", beta_group = " + fmt(prm.beta_group) +
         " (alpha, beta between groups)";
  return l;
}

std::string decomposition(const CriticalPath& cp, const CostParams& prm) {
  std::string d;
  auto term = [&](double c, const char* name) {
    if (c == 0) return;
    d += (d.empty() ? "" : " + ") + fmt(c) + " " + name;
  };
  term(cp.coef_alpha, "alpha");
  term(cp.coef_beta, "beta");
  if (prm.has_locality()) {
    term(cp.coef_alpha_local, "alpha_local");
    term(cp.coef_beta_local, "beta_local");
  }
  if (!prm.group.empty()) {
    term(cp.coef_alpha_group, "alpha_group");
    term(cp.coef_beta_group, "beta_group");
  }
  term(cp.coef_gamma, "gamma");
  return d.empty() ? "0" : d;
}

}  // namespace

uint64_t block_elements(const BlockSet& b, uint64_t n, int64_t B) {
  uint64_t e = 0;
  for (const auto& [lo, hi] : b.ranges())
    e += buffer_block_begin(n, uint64_t(B), uint64_t(hi)) - buffer_block_begin(n, uint64_t(B), uint64_t(lo));
  return e;
}

std::vector<uint64_t> count_offsets(const CostVector& v) {
  std::vector<uint64_t> off;
  if (v.counts.empty()) return off;
  off.push_back(0);
  for (uint64_t c : v.counts) off.push_back(off.back() + c);
  return off;
}

uint64_t block_elements(const BlockSet& b, const CostVector& v, int64_t B, const std::vector<uint64_t>& offsets) {
  if (offsets.size() != size_t(B) + 1 || B < 1) return block_elements(b, v.elements, B);
  const uint64_t nb = uint64_t(B);
  auto begin = [&](uint64_t k) { return (k / nb) * offsets.back() + offsets[k % nb]; };
  uint64_t e = 0;
  for (const auto& [lo, hi] : b.ranges()) e += begin(uint64_t(hi)) - begin(uint64_t(lo));
  return e;
}

CostResult simulate_cost(const Schedule& s, const CostVector& v, const CostParams& params) {
  return Simulator(s, v, params).run();
}

std::string cost_text(const Schedule& s, const CostVector& v, const CostParams& prm, const CostResult& r) {
  std::ostringstream o;
  o << "cost of " << s.name << " (" << collective_name(s.collective) << "), p = " << s.p;
  if (collective_is_rooted(s.collective)) o << ", root = " << s.root;
  o << "\n  vector: " << v.elements * v.elem_size << " bytes = " << v.elements << " elements of " << v.elem_size
    << " bytes, " << s.blocks << (s.blocks == 1 ? " block" : " blocks");
  if (!v.counts.empty()) {
    o << " of irregular sizes (elements):";
    for (uint64_t x : v.counts) o << " " << x;
  }
  o << "\n";
  if (std::any_of(s.round_segments.begin(), s.round_segments.end(), [](int64_t x) { return x > 0; })) {
    o << "  segments (bytes per piece, by round):";
    for (int64_t x : s.round_segments) o << " " << (x > 0 ? std::to_string(x) : std::string("-"));
    o << "\n";
  }
  o << "  model: " << model_line(prm) << "\n";
  if (!r.ok) {
    o << "error: " << r.error << "\n";
    return o.str();
  }
  const CriticalPath& cp = r.critical;
  o << "makespan: " << fmt(r.makespan) << "  (rank " << r.last_rank << " finishes last)\n";
  o << "rounds: " << r.rounds << "\n";
  o << "messages: " << r.messages << ", " << r.bytes << " bytes in total\n";
  o << "critical path: " << cp.messages << " messages in " << cp.rounds << " rounds, " << cp.bytes << " bytes, "
    << cp.reduced_elements << " elements reduced\n";
  o << "  makespan = " << decomposition(cp, prm) << "\n";
  for (const CostStep& st : cp.steps) {
    o << "  [" << fmt(st.start) << ", " << fmt(st.end) << "] round " << st.round << ": ";
    if (st.kind == StepKind::message)
      o << "rank " << st.rank << " -> rank " << st.peer << ", " << st.bytes << " bytes"
        << (st.pieces > 1 ? " in " + std::to_string(st.pieces) + " pieces" : std::string())
        << (st.bidirectional ? "" : ", unidirectional") << (st.local ? ", local" : st.group ? ", within its group" : "")
        << "\n";
    else
      o << "rank " << st.rank << " reduces " << st.elements << " elements\n";
  }
  o << "per rank:\n";
  o << "  rank  msgs_sent  msgs_recv  bytes_sent  bytes_recv  elems_reduced  finish\n";
  for (int64_t x = 0; x < s.p; ++x) {
    const RankCost& rc = r.ranks[size_t(x)];
    char line[200];
    std::snprintf(line, sizeof line, "  %4lld  %9lld  %9lld  %10llu  %10llu  %13llu  %s\n", (long long)x,
                  (long long)rc.messages_sent, (long long)rc.messages_received, (unsigned long long)rc.bytes_sent,
                  (unsigned long long)rc.bytes_received, (unsigned long long)rc.elements_reduced, fmt(rc.finish).c_str());
    o << line;
  }
  return o.str();
}

std::string cost_json(const Schedule& s, const CostVector& v, const CostParams& prm, const CostResult& r) {
  nlohmann::ordered_json j;
  j["schedule"] = s.name;
  j["collective"] = collective_name(s.collective);
  j["p"] = s.p;
  j["root"] = s.root;
  j["bytes"] = v.elements * v.elem_size;
  j["elements"] = v.elements;
  if (!v.counts.empty()) j["counts"] = v.counts;
  j["elem_size"] = v.elem_size;
  j["blocks"] = s.blocks;
  j["round_segments"] = s.round_segments;
  nlohmann::ordered_json m;
  m["alpha"] = prm.alpha;
  m["beta"] = prm.beta;
  m["gamma"] = prm.gamma;
  m["f_alpha"] = prm.f_alpha;
  m["f_beta"] = prm.f_beta;
  m["ppn"] = prm.ppn;
  if (!prm.region.empty()) m["regions"] = std::set<int64_t>(prm.region.begin(), prm.region.end()).size();
  if (prm.has_locality()) {
    m["alpha_local"] = prm.alpha_local;
    m["beta_local"] = prm.beta_local;
  }
  if (!prm.group.empty()) {
    m["groups"] = std::set<int64_t>(prm.group.begin(), prm.group.end()).size();
    m["alpha_group"] = prm.alpha_group;
    m["beta_group"] = prm.beta_group;
  }
  j["model"] = m;
  j["ok"] = r.ok;
  if (!r.ok) {
    j["error"] = r.error;
    return j.dump(1) + "\n";
  }
  j["makespan"] = r.makespan;
  j["rounds"] = r.rounds;
  j["messages"] = r.messages;
  j["total_bytes"] = r.bytes;
  j["last_rank"] = r.last_rank;
  const CriticalPath& cp = r.critical;
  nlohmann::ordered_json c;
  c["messages"] = cp.messages;
  c["rounds"] = cp.rounds;
  c["bytes"] = cp.bytes;
  c["reduced_elements"] = cp.reduced_elements;
  nlohmann::ordered_json coef;
  coef["alpha"] = cp.coef_alpha;
  coef["beta"] = cp.coef_beta;
  coef["alpha_local"] = cp.coef_alpha_local;
  coef["beta_local"] = cp.coef_beta_local;
  if (!prm.group.empty()) {
    coef["alpha_group"] = cp.coef_alpha_group;
    coef["beta_group"] = cp.coef_beta_group;
  }
  coef["gamma"] = cp.coef_gamma;
  c["coefficients"] = coef;
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const CostStep& st : cp.steps) {
    nlohmann::ordered_json x;
    x["kind"] = st.kind == StepKind::message ? "message" : "reduction";
    x["round"] = st.round;
    if (st.kind == StepKind::message) {
      x["from"] = st.rank;
      x["to"] = st.peer;
      x["bytes"] = st.bytes;
      if (st.pieces > 1) x["pieces"] = st.pieces;
      x["bidirectional"] = st.bidirectional;
      x["local"] = st.local;
      if (!prm.group.empty()) x["group"] = st.group;
    } else {
      x["rank"] = st.rank;
      x["elements"] = st.elements;
    }
    x["start"] = st.start;
    x["end"] = st.end;
    steps.push_back(x);
  }
  c["steps"] = steps;
  j["critical_path"] = c;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (int64_t x = 0; x < s.p; ++x) {
    const RankCost& rc = r.ranks[size_t(x)];
    nlohmann::ordered_json o;
    o["rank"] = x;
    o["messages_sent"] = rc.messages_sent;
    o["messages_received"] = rc.messages_received;
    o["bytes_sent"] = rc.bytes_sent;
    o["bytes_received"] = rc.bytes_received;
    o["elements_reduced"] = rc.elements_reduced;
    o["finish"] = rc.finish;
    ranks.push_back(o);
  }
  j["ranks"] = ranks;
  return j.dump(1) + "\n";
}

}  // namespace bine
