// Traffic per link class: one pass over every rank's sends, in (rank, round, op) order.
#include "traffic.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace bine {

TrafficResult count_traffic(const Schedule& s, const RankMap& m, const CostVector& v) {
  if (m.p() != s.p)
    throw std::invalid_argument("count_traffic: the rank map has " + std::to_string(m.p()) + " ranks, the schedule " +
                                std::to_string(s.p));
  TrafficResult t;
  const std::vector<uint64_t> offsets = count_offsets(v);
  t.rounds.assign(size_t(s.num_rounds), ClassTraffic{});
  t.torus = m.torus[0] > 0;
  for (int64_t k = 0; k < s.num_rounds; ++k)  // round after round: the order ops are stored in (schedule.h)
    for (int64_t r = 0; r < s.p; ++r) {
      if (size_t(k) >= s.ranks[size_t(r)].size()) continue;
      for (const Op& op : s.ranks[size_t(r)][size_t(k)]) {
        const auto* send = std::get_if<SendOp>(&op);
        if (!send) continue;
        const size_t c = size_t(m.link_class(r, send->peer));
        const uint64_t bytes = block_elements(send->blocks, v, s.blocks, offsets) * v.elem_size;
        for (ClassTraffic* x : {&t.rounds[size_t(k)], &t.total}) {
          (*x)[c].bytes += bytes;
          (*x)[c].messages += 1;
        }
        if (t.torus) {
          const int64_t h = m.hops(r, send->peer);
          t.hops.bytes += bytes * uint64_t(h);
          t.hops.messages += h;
        }
      }
    }
  return t;
}

namespace {

std::string cell(const LinkTraffic& x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%14llu %6lld", (unsigned long long)x.bytes, (long long)x.messages);
  return buf;
}

/// Adds "intra_node", "intra_group", "global": {"bytes", "messages"} to `j`.
void add_classes(nlohmann::ordered_json& j, const ClassTraffic& c) {
  for (int i = 0; i < kLinkClasses; ++i) {
    nlohmann::ordered_json x;
    x["bytes"] = c[size_t(i)].bytes;
    x["messages"] = c[size_t(i)].messages;
    j[link_class_name(LinkClass(i))] = x;
  }
}

}  // namespace

std::string traffic_text(const Schedule& s, const RankMap& m, const CostVector& v, const TrafficResult& t) {
  std::ostringstream o;
  o << "traffic of " << s.name << " (" << collective_name(s.collective) << "), p = " << s.p;
  if (collective_is_rooted(s.collective)) o << ", root = " << s.root;
  o << "\n  machine: " << m.describe() << "\n";
  o << "  vector: " << v.elements * v.elem_size << " bytes = " << v.elements << " elements of " << v.elem_size
    << " bytes, " << s.blocks << (s.blocks == 1 ? " block\n" : " blocks\n");
  o << "  round     intra_node  msgs    intra_group  msgs         global  msgs\n";
  for (size_t k = 0; k < t.rounds.size(); ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "  %5zu", k);
    o << buf;
    for (const LinkTraffic& x : t.rounds[k]) o << " " << cell(x);
    if (k < s.round_labels.size() && !s.round_labels[k].empty()) o << "  " << s.round_labels[k];
    o << "\n";
  }
  o << "  total";
  for (const LinkTraffic& x : t.total) o << " " << cell(x);
  o << "\n";
  if (t.torus)
    o << "  torus links: " << t.hops.bytes << " bytes x links crossed, " << t.hops.messages
      << " messages x links crossed (minimal routes, dimension by dimension)\n";
  return o.str();
}

std::string traffic_json(const Schedule& s, const RankMap& m, const CostVector& v, const TrafficResult& t) {
  nlohmann::ordered_json j;
  j["schedule"] = s.name;
  j["collective"] = collective_name(s.collective);
  j["p"] = s.p;
  j["root"] = s.root;
  j["machine"] = m.spec;
  j["nodes"] = m.nodes;
  j["switches"] = m.switches;
  j["groups"] = m.groups;
  j["bytes"] = v.elements * v.elem_size;
  j["elem_size"] = v.elem_size;
  j["blocks"] = s.blocks;
  nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
  for (size_t k = 0; k < t.rounds.size(); ++k) {
    nlohmann::ordered_json r;
    r["round"] = k;
    r["label"] = k < s.round_labels.size() ? s.round_labels[k] : "";
    add_classes(r, t.rounds[k]);
    rounds.push_back(r);
  }
  j["rounds"] = rounds;
  nlohmann::ordered_json total;
  add_classes(total, t.total);
  j["total"] = total;
  if (t.torus) {
    nlohmann::ordered_json h;
    h["bytes"] = t.hops.bytes;
    h["messages"] = t.hops.messages;
    j["torus_hops"] = h;
  }
  return j.dump();
}

}  // namespace bine
