// Selection tables (docs/pmpi.md, "Selection table"): the JSON file that says, per
// collective, which schedule serves a call of p ranks and b message bytes. One parser for
// every reader: `bine-cc compile --dispatch` (emit/mpi/dispatch.cpp) and the PMPI library
// (pmpi/bine_pmpi.cpp: BINE_PMPI_TABLE and the default table).
//
// Not part of the generated code's runtime: it needs nlohmann/json (the compiler and the
// PMPI library link it), and the generated headers never include it.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bine/collective.hpp"

namespace bine {

/// One rule of a selection table: closed ranges of p and of message bytes, and the
/// schedule's name (as written in the .bine source, or with the prefix) or "mpi" (the MPI
/// library's own collective).
struct SelectionRule {
  int64_t p_min = 1, p_max = std::numeric_limits<int64_t>::max();
  uint64_t bytes_min = 0, bytes_max = std::numeric_limits<uint64_t>::max();
  std::string schedule;
  bool any_bracketing = false;  ///< "any_bracketing": serves operators that need the same bracketing anyway
};

/// A parsed selection table: per collective key (collective_key(): "allreduce", ...,
/// "reduce_scatter_block", ...; in the file's order) its rules, in order.
struct SelectionTable {
  std::string source;  ///< the file it was read from (for messages)
  std::vector<std::pair<std::string, std::vector<SelectionRule>>> collectives;
};

/// The collective whose selection key is `key`, or false.
inline bool collective_of_key(const std::string& key, Collective* out) {
  for (int i = 0; i < kCollectiveCount; ++i)
    if (key == kCollectives[i].key) {
      *out = Collective(i);
      return true;
    }
  return false;
}

/// Parses a selection table: a JSON object of collective keys, each a list of rules with
/// optional p_min, p_max, bytes_min, bytes_max (non-negative integers; a p bound above
/// INT64_MAX is INT64_MAX), optional any_bracketing (true or false) and a required
/// "schedule" string; no other fields. False with `*error` set to one sentence
/// naming `source`, the collective and the rule index on malformed input; `table` is then
/// empty but for its source. Schedule names are not resolved here (each reader knows its
/// schedules).
inline bool parse_selection_table(const std::string& text, const std::string& source, SelectionTable& table,
                                  std::string* error) {
  table = SelectionTable{};
  table.source = source;
  auto fail = [&](const std::string& why) {
    table.collectives.clear();
    *error = "selection table " + source + why;
    return false;
  };
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return fail(std::string(" is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) return fail(": the top level must be an object");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    Collective c;
    if (!collective_of_key(it.key(), &c)) {
      std::string known;
      for (const CollectiveInfo& i : kCollectives) known += std::string(known.empty() ? "" : ", ") + i.key;
      return fail(": unknown collective \"" + it.key() + "\" (known: " + known + ")");
    }
    if (!it.value().is_array()) return fail(": \"" + it.key() + "\" must be a list of rules");
    std::vector<SelectionRule> rules;
    for (const auto& r : it.value()) {
      const std::string where = ": " + it.key() + " rule " + std::to_string(rules.size());
      if (!r.is_object()) return fail(where + ": a rule must be an object");
      SelectionRule rule;
      bool named = false;
      for (auto f = r.begin(); f != r.end(); ++f) {
        const std::string& k = f.key();
        if (k == "schedule") {
          if (!f.value().is_string()) return fail(where + ": \"schedule\" must be a string");
          rule.schedule = f.value().get<std::string>();
          named = true;
          continue;
        }
        if (k == "any_bracketing") {
          if (!f.value().is_boolean()) return fail(where + ": \"any_bracketing\" must be true or false");
          rule.any_bracketing = f.value().get<bool>();
          continue;
        }
        if (k != "p_min" && k != "p_max" && k != "bytes_min" && k != "bytes_max")
          return fail(where + ": unknown field \"" + k + "\"");
        if (!f.value().is_number_unsigned()) return fail(where + ": \"" + k + "\" must be a non-negative integer");
        const uint64_t v = f.value().get<uint64_t>();
        const uint64_t pmax = uint64_t(std::numeric_limits<int64_t>::max());
        if (k == "p_min" || k == "p_max") (k == "p_min" ? rule.p_min : rule.p_max) = int64_t(v > pmax ? pmax : v);
        else (k == "bytes_min" ? rule.bytes_min : rule.bytes_max) = v;
      }
      if (!named || rule.schedule.empty())
        return fail(where + ": \"schedule\" (a schedule name or \"mpi\") is required");
      rules.push_back(rule);
    }
    table.collectives.emplace_back(it.key(), std::move(rules));
  }
  return true;
}

}  // namespace bine
