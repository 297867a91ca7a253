#include "schedule.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace bine {

std::string format_blocks(const BlockSet& s) {
  std::string out = "{";
  bool first = true;
  for (const auto& [lo, hi] : s.ranges()) {
    if (!first) out += ", ";
    first = false;
    out += std::to_string(lo);
    if (hi - lo > 1) out += "-" + std::to_string(hi - 1);
  }
  return out + "}";
}

static std::string line_of(const Origin& o) {
  return o.span.valid() ? o.span.file->name + ":" + std::to_string(o.span.line) : std::string("?");
}

namespace {

/// ", fold two_one" etc. for the text listing's header line; empty without a fold.
std::string fold_text(const Schedule& s) {
  switch (s.fold) {
    case FoldKind::none: return "";
    case FoldKind::two_one: return ", fold two_one";
    case FoldKind::three_two: return ", fold three_two";
    case FoldKind::ring: return ", fold ring " + std::to_string(s.fold_ring);
  }
  return "";
}

}  // namespace

std::string schedule_text(const Schedule& s) {
  std::ostringstream out;
  out << "schedule " << s.name << " implements " << collective_name(s.collective) << "\n";
  out << "p = " << s.p << ", root = " << s.root << ", blocks = " << s.blocks
      << (s.scratch > 0 ? ", scratch = " + std::to_string(s.scratch) : std::string()) << ", rounds = " << s.num_rounds
      << fold_text(s) << "\n";
  for (int64_t t = 0; t < s.num_rounds; ++t) {
    out << "\nround " << t << ": " << s.round_labels[size_t(t)];
    const int64_t seg = size_t(t) < s.round_segments.size() ? s.round_segments[size_t(t)] : 0;
    if (seg > 0) out << " [segments of " << seg << " bytes]";
    out << "\n";
    for (int64_t r = 0; r < s.p; ++r)
      for (const Op& op : s.ranks[size_t(r)][size_t(t)]) {
        out << "  rank " << r;
        if (const auto* snd = std::get_if<SendOp>(&op)) {
          out << " send " << format_blocks(snd->blocks) << " to " << snd->peer;
        } else if (const auto* lo = std::get_if<LocalOp>(&op)) {
          out << (lo->reduce ? " reduce " : " copy ") << format_blocks(lo->src) << " into " << format_blocks(lo->blocks);
        } else if (const auto* pm = std::get_if<PermuteOp>(&op)) {
          out << " permute";
          for (size_t j = 0; j < pm->to.size(); ++j) out << (j ? " " : " ") << j << "->" << pm->to[j];
        } else {
          const auto& rcv = std::get<RecvOp>(op);
          out << " recv " << format_blocks(rcv.blocks) << " from " << rcv.peer << (rcv.reduce ? " reduce" : " copy");
        }
        out << "   [" << line_of(origin_of(op)) << (origin_of(op).via.empty() ? "" : ", " + origin_of(op).via) << "]\n";
      }
  }
  return out.str();
}

std::string schedule_json(const Schedule& s) {
  nlohmann::ordered_json j;
  j["schedule"] = s.name;
  j["collective"] = collective_name(s.collective);
  j["p"] = s.p;
  j["root"] = s.root;
  j["blocks"] = s.blocks;
  if (s.scratch > 0) j["scratch"] = s.scratch;
  j["fold"] = s.fold != FoldKind::none;
  if (s.fold == FoldKind::three_two) j["fold_step"] = "3-2";
  if (s.fold == FoldKind::ring) j["fold_ring"] = s.fold_ring;
  j["num_rounds"] = s.num_rounds;
  j["round_labels"] = s.round_labels;
  j["round_segments"] = s.round_segments;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (int64_t r = 0; r < s.p; ++r) {
    nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
    for (const Round& rd : s.ranks[size_t(r)]) {
      nlohmann::ordered_json ops = nlohmann::ordered_json::array();
      for (const Op& op : rd) {
        nlohmann::ordered_json o;
        if (const auto* pm = std::get_if<PermuteOp>(&op)) {
          o["op"] = "permute";
          o["to"] = pm->to;
          if (pm->origin.span.valid()) o["line"] = pm->origin.span.line;
          ops.push_back(o);
          continue;
        }
        auto ranges_of = [](const BlockSet& b) {
          nlohmann::ordered_json v = nlohmann::ordered_json::array();
          for (const auto& [lo, hi] : b.ranges()) v.push_back({lo, hi});
          return v;
        };
        if (const auto* lo = std::get_if<LocalOp>(&op)) {
          o["op"] = lo->reduce ? "local_reduce" : "local_copy";
          o["src"] = ranges_of(lo->src);
          o["blocks"] = ranges_of(lo->blocks);
          if (lo->origin.span.valid()) {
            o["line"] = lo->origin.span.line;
            o["column"] = lo->origin.span.col;
          }
          ops.push_back(o);
          continue;
        }
        const bool is_send = std::holds_alternative<SendOp>(op);
        o["op"] = is_send ? "send" : (std::get<RecvOp>(op).reduce ? "recv_reduce" : "recv_copy");
        o["peer"] = peer_of(op);
        o["blocks"] = ranges_of(blocks_of(op));
        const Origin& org = origin_of(op);
        if (org.span.valid()) {
          o["line"] = org.span.line;
          o["column"] = org.span.col;
        }
        if (!org.via.empty()) o["via"] = org.via;
        ops.push_back(o);
      }
      rounds.push_back(ops);
    }
    ranks.push_back(rounds);
  }
  j["ranks"] = ranks;
  return j.dump(1) + "\n";
}

}  // namespace bine
