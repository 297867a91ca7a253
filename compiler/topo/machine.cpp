// Machine specs and rank maps (docs/topology.md, "Machine specs").
#include "machine.h"

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

namespace bine {
namespace {

constexpr int64_t kMaxRanks = int64_t(1) << 24;

/// A spec split at its first ':' and then at commas: positional values and key=value.
struct SpecParts {
  std::string kind;
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> keyed;
};

SpecParts split_spec(const std::string& spec) {
  SpecParts s;
  const size_t colon = spec.find(':');
  std::string rest;
  if (colon == std::string::npos) {
    rest = spec;  // `ppn=K` alone
  } else {
    s.kind = spec.substr(0, colon);
    rest = spec.substr(colon + 1);
  }
  if (rest.empty()) return s;
  std::stringstream ss(rest);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) s.positional.push_back(item);
    else s.keyed.push_back({item.substr(0, eq), item.substr(eq + 1)});
  }
  if (rest.back() == ',') s.positional.push_back("");
  return s;
}

/// A positive decimal integer no larger than kMaxRanks, or -1.
int64_t parse_positive(const std::string& t) {
  if (t.empty() || t.size() > 9) return -1;
  for (char c : t)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  const int64_t v = std::stoll(t);
  return v >= 1 && v <= kMaxRanks ? v : -1;
}

bool read_file(const std::string& path, std::string& text, std::string& err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    err = "cannot read '" + path + "'";
    return false;
  }
  std::ostringstream o;
  o << f.rdbuf();
  text = o.str();
  return true;
}

/// Lines of `text` with their 1-based numbers, comments ('#' to the end) and surrounding
/// blanks removed, empty lines skipped.
std::vector<std::pair<int64_t, std::string>> content_lines(const std::string& text) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::stringstream ss(text);
  std::string line;
  int64_t n = 0;
  while (std::getline(ss, line)) {
    ++n;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    const size_t e = line.find_last_not_of(" \t\r");
    out.push_back({n, line.substr(b, e - b + 1)});
  }
  return out;
}

/// The number `s` names when it is `prefix` followed by 1-15 decimal digits only
/// ("lrdn0042" with prefix "lrdn" -> 42), else -1 ("viz07", "nid000002", "lrdn42a").
int64_t prefixed_number(const std::string& s, const std::string& prefix) {
  if (prefix.empty() || s.size() <= prefix.size() || s.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = s.substr(prefix.size());
  if (digits.size() > 15) return -1;
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  return std::stoll(digits);
}

/// Renumbers ids densely in order of first appearance and counts them.
int64_t densify(std::vector<Location>& loc, int64_t Location::*field) {
  std::map<int64_t, int64_t> ids;
  for (Location& l : loc) {
    const auto it = ids.emplace(l.*field, int64_t(ids.size())).first;
    l.*field = it->second;
  }
  return int64_t(ids.size());
}

void finish(RankMap& m) {
  m.nodes = densify(m.loc, &Location::node);
  m.switches = densify(m.loc, &Location::sw);
  m.groups = densify(m.loc, &Location::group);
}

struct MapNode {
  std::string name, sw, group;
  int64_t line = 0;
  std::array<int64_t, 3> coord{{-1, -1, -1}};  ///< X, Y, Z keys (torus coordinates), -1: absent
};

bool parse_map(const std::string& map_name, const std::string& text, std::vector<MapNode>& nodes, std::string& err) {
  std::unordered_map<std::string, int64_t> seen;
  for (const auto& [n, line] : content_lines(text)) {
    const std::string at = map_name + ":" + std::to_string(n) + ": ";
    std::stringstream ss(line);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    if (tok.size() % 2 != 0) {
      err = at + "expected KEY VALUE pairs (NODE <name> CELL <group> [SWITCH <switch>] ...), got an odd number of fields";
      return false;
    }
    MapNode node;
    node.line = n;
    for (size_t i = 0; i < tok.size(); i += 2) {
      if (tok[i] == "NODE") node.name = tok[i + 1];
      else if (tok[i] == "CELL" || tok[i] == "GROUP") node.group = tok[i + 1];
      else if (tok[i] == "SWITCH") node.sw = tok[i + 1];
      else if (tok[i] == "X" || tok[i] == "Y" || tok[i] == "Z") {
        const int64_t v = tok[i + 1] == "0" ? 0 : parse_positive(tok[i + 1]);
        if (v < 0) {
          err = at + tok[i] + " expects a non-negative integer (a torus coordinate), got '" + tok[i + 1] + "'";
          return false;
        }
        node.coord[size_t(tok[i][0] - 'X')] = v;
      }
    }
    if (node.name.empty() || node.group.empty()) {
      err = at + "a map line needs NODE <name> and CELL <group> (or GROUP <group>)";
      return false;
    }
    if (node.sw.empty()) node.sw = "node:" + node.name;
    const auto [it, fresh] = seen.emplace(node.name, n);
    if (!fresh) {
      err = at + "node '" + node.name + "' is listed twice (first on line " + std::to_string(it->second) + ")";
      return false;
    }
    nodes.push_back(node);
  }
  if (nodes.empty()) {
    err = map_name + ": the node map lists no node";
    return false;
  }
  return true;
}

bool regular(const SpecParts& s, const std::string& spec, int64_t p, RankMap& out, std::string& err) {
  const std::string bad = "machine spec '" + spec + "': ";
  int64_t ppn = 1;
  for (const auto& [k, v] : s.keyed) {
    if (k != "ppn") {
      err = bad + "unknown option '" + k + "' (" + s.kind + " takes ppn=K)";
      return false;
    }
    ppn = parse_positive(v);
    if (ppn < 0) {
      err = bad + "ppn expects a positive integer, got '" + v + "'";
      return false;
    }
  }
  std::vector<int64_t> a;
  for (const std::string& t : s.positional) {
    const int64_t v = parse_positive(t);
    if (v < 0) {
      err = bad + "expected a positive integer, got '" + t + "'";
      return false;
    }
    a.push_back(v);
  }
  const size_t want = s.kind == "dragonfly" ? 3 : s.kind == "fattree" ? 1 : 3;
  const char* usage = s.kind == "dragonfly" ? "dragonfly:G,R,N[,ppn=K] (groups, routers per group, nodes per router)"
                      : s.kind == "fattree" ? "fattree:K[,ppn=K] (K-ary fat tree, K even)"
                                            : "torus:X,Y,Z[,ppn=K]";
  if (a.size() != want) {
    err = bad + "expected " + usage;
    return false;
  }
  if (s.kind == "fattree" && a[0] % 2 != 0) {
    err = bad + "a K-ary fat tree needs an even K, got " + std::to_string(a[0]);
    return false;
  }
  // nodes per switch, switches per group, groups
  int64_t per_sw = 0, sw_per_group = 0, groups = 0;
  if (s.kind == "dragonfly") per_sw = a[2], sw_per_group = a[1], groups = a[0];
  else if (s.kind == "fattree") per_sw = a[0] / 2, sw_per_group = a[0] / 2, groups = a[0];
  else per_sw = 1, sw_per_group = a[0] * a[1], groups = a[2];  // torus: a z-plane is a group
  const double cap = double(per_sw) * double(sw_per_group) * double(groups) * double(ppn);
  if (double(p) > cap) {
    err = bad + "p=" + std::to_string(p) + " ranks do not fit: the machine holds " +
          std::to_string(int64_t(cap < 9e18 ? cap : 9e18)) + " ranks";
    return false;
  }
  out.loc.resize(size_t(p));
  for (int64_t r = 0; r < p; ++r) {
    const int64_t node = r / ppn, sw = node / per_sw;
    out.loc[size_t(r)] = Location{node, sw, sw / sw_per_group};
    if (s.kind == "torus") out.loc[size_t(r)].coord = {node % a[0], node / a[0] % a[1], node / (a[0] * a[1])};
  }
  if (s.kind == "torus") out.torus = {a[0], a[1], a[2]};
  return true;
}

}  // namespace

const char* link_class_name(LinkClass c) {
  switch (c) {
    case LinkClass::intra_node: return "intra_node";
    case LinkClass::intra_group: return "intra_group";
    case LinkClass::global: return "global";
  }
  return "?";
}

std::string RankMap::describe() const {
  return spec + ": " + std::to_string(p()) + " ranks on " + std::to_string(nodes) + (nodes == 1 ? " node, " : " nodes, ") +
         std::to_string(switches) + (switches == 1 ? " switch, " : " switches, ") + std::to_string(groups) +
         (groups == 1 ? " group" : " groups");
}

bool rank_map_from_allocation(const std::string& hosts_name, const std::string& hosts, const std::string& map_name,
                              const std::string& map, int64_t ppn, int64_t p, RankMap& out, std::string& err,
                              const std::array<int64_t, 3>& torus, const std::string& prefix) {
  std::vector<MapNode> nodes;
  if (!parse_map(map_name, map, nodes, err)) return false;
  std::unordered_map<std::string, size_t> by_name;
  std::unordered_map<int64_t, size_t> by_number;  // numeric NODE ids, for host names "prefixNNNN"
  for (size_t i = 0; i < nodes.size(); ++i) {
    by_name.emplace(nodes[i].name, i);
    bool digits = true;
    for (char c : nodes[i].name) digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (digits && nodes[i].name.size() <= 15) by_number.emplace(std::stoll(nodes[i].name), i);
  }
  const auto lines = content_lines(hosts);
  if (lines.empty()) {
    err = hosts_name + ": the host list is empty";
    return false;
  }
  std::unordered_map<size_t, int64_t> used;  // map node -> host line
  std::vector<Location> loc;
  std::map<std::string, int64_t> sw_ids, group_ids;
  for (const auto& [n, host] : lines) {
    const std::string at = hosts_name + ":" + std::to_string(n) + ": ";
    if (host.find_first_of(" \t") != std::string::npos) {
      err = at + "expected one host name per line, got '" + host + "'";
      return false;
    }
    const std::string name = host.substr(0, host.find('.'));  // without its domain suffix
    if (name.empty()) {
      err = at + "expected a host name, got '" + host + "'";
      return false;
    }
    auto it = by_name.find(name);
    size_t idx = 0;
    if (it != by_name.end()) {
      idx = it->second;
    } else {
      const int64_t num = prefixed_number(name, prefix);
      const auto jt = num < 0 ? by_number.end() : by_number.find(num);
      if (jt == by_number.end()) {
        err = at + "unknown host '" + host + "': " + map_name + " has no node '" + name + "'" +
              (num < 0 && !by_number.empty()
                   ? " (its numeric NODE ids match only hosts named " + prefix + "<digits>; prefix=P names another form)"
                   : "");
        return false;
      }
      idx = jt->second;
    }
    const auto [u, fresh] = used.emplace(idx, n);
    if (!fresh) {
      err = at + "host '" + host + "' is listed twice (first on line " + std::to_string(u->second) + ")";
      return false;
    }
    const int64_t sw = sw_ids.emplace(nodes[idx].sw, int64_t(sw_ids.size())).first->second;
    const int64_t g = group_ids.emplace(nodes[idx].group, int64_t(group_ids.size())).first->second;
    Location l{int64_t(used.size()) - 1, sw, g};
    if (torus[0] > 0) {  // torus=XxYxZ: the node's coordinates from its map line
      for (size_t d = 0; d < 3; ++d)
        if (nodes[idx].coord[d] < 0 || nodes[idx].coord[d] >= torus[d]) {
          err = map_name + ":" + std::to_string(nodes[idx].line) + ": node '" + nodes[idx].name +
                "' needs X, Y and Z coordinates inside the torus " + std::to_string(torus[0]) + "x" +
                std::to_string(torus[1]) + "x" + std::to_string(torus[2]);
          return false;
        }
      l.coord = nodes[idx].coord;
    }
    for (int64_t k = 0; k < ppn; ++k) loc.push_back(l);
  }
  if (int64_t(loc.size()) != p) {
    err = hosts_name + ": p=" + std::to_string(p) + " does not match the allocation: " + std::to_string(lines.size()) +
          " hosts x ppn " + std::to_string(ppn) + " = " + std::to_string(loc.size()) + " ranks";
    return false;
  }
  out.loc = std::move(loc);
  out.torus = torus;
  finish(out);
  return true;
}

bool build_rank_map(const std::string& spec, int64_t p, RankMap& out, std::string& err) {
  out = RankMap{};
  out.spec = spec;
  if (p < 1 || p > kMaxRanks) {
    err = "p must be in 1.." + std::to_string(kMaxRanks) + ", got " + std::to_string(p);
    return false;
  }
  const SpecParts s = split_spec(spec);
  const std::string bad = "machine spec '" + spec + "': ";
  const char* kinds = "expected ppn=K, dragonfly:G,R,N[,ppn=K], fattree:K[,ppn=K], torus:X,Y,Z[,ppn=K], "
                      "hosts:FILE,map=FILE[,ppn=K][,prefix=P] or leonardo:FILE[,map=FILE][,ppn=K][,prefix=P] (docs/topology.md)";
  if (s.kind.empty()) {
    if (s.positional.empty() && s.keyed.size() == 1 && s.keyed[0].first == "ppn") {
      const int64_t ppn = parse_positive(s.keyed[0].second);
      if (ppn < 0) {
        err = bad + "ppn expects a positive integer, got '" + s.keyed[0].second + "'";
        return false;
      }
      out.kind = "ppn";
      out.loc.resize(size_t(p));
      for (int64_t r = 0; r < p; ++r) out.loc[size_t(r)] = Location{r / ppn, r / ppn, r / ppn};
      finish(out);
      return true;
    }
    err = bad + kinds;
    return false;
  }
  out.kind = s.kind;
  if (s.kind == "dragonfly" || s.kind == "fattree" || s.kind == "torus") {
    if (!regular(s, spec, p, out, err)) return false;
    finish(out);
    return true;
  }
  if (s.kind != "hosts" && s.kind != "leonardo") {
    err = bad + "unknown machine kind '" + s.kind + "'; " + kinds;
    return false;
  }
  if (s.positional.size() != 1 || s.positional[0].empty()) {
    err = bad + "expected " + s.kind + ":FILE (the host list, one host per line in rank order)";
    return false;
  }
  const std::string hosts_file = s.positional[0];
  std::string map_file;
  int64_t ppn = 1;
  std::string prefix = "lrdn";  // Leonardo's host names: lrdnNNNN is NODE NNNN
  std::array<int64_t, 3> torus{{0, 0, 0}};
  for (const auto& [k, v] : s.keyed) {
    if (k == "map") {
      map_file = v;
    } else if (k == "torus") {  // torus=XxYxZ: the nodes' X, Y, Z map keys place them on a torus
      size_t at = 0;
      for (size_t d = 0; d < 3; ++d) {
        const size_t end = d < 2 ? v.find('x', at) : v.size();
        torus[d] = end == std::string::npos ? -1 : parse_positive(v.substr(at, end - at));
        if (torus[d] < 0) {
          err = bad + "torus expects XxYxZ (ring sizes), got '" + v + "'";
          return false;
        }
        at = end + 1;
      }
    } else if (k == "prefix") {  // the host-name prefix of the map's numeric NODE ids
      if (v.empty() || v.find_first_of("0123456789. \t") != std::string::npos) {
        err = bad + "prefix expects a host-name prefix without digits or dots, got '" + v + "'";
        return false;
      }
      prefix = v;
    } else if (k == "ppn") {
      ppn = parse_positive(v);
      if (ppn < 0) {
        err = bad + "ppn expects a positive integer, got '" + v + "'";
        return false;
      }
    } else {
      err = bad + "unknown option '" + k + "' (" + s.kind + " takes map=FILE, ppn=K, torus=XxYxZ and prefix=P)";
      return false;
    }
  }
  const bool implicit_map = map_file.empty();
  if (map_file.empty()) {
    if (s.kind == "hosts") {
      err = bad + "hosts: needs the node map: hosts:FILE,map=FILE";
      return false;
    }
    // leonardo:DIR/allocations/JOB.txt -> DIR/map.txt (the layout of shared/data/leonardo)
    const size_t slash = hosts_file.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : hosts_file.substr(0, slash);
    map_file = dir + "/../map.txt";
  }
  std::string hosts, map;
  if (!read_file(hosts_file, hosts, err)) return false;
  if (!read_file(map_file, map, err)) {
    if (implicit_map)  // say where the path came from and how to give another (issue 47)
      err += " (the node map that " + s.kind + ":" + hosts_file + " implies: DIR/../map.txt of the allocation file "
             "DIR/JOB.txt, as in shared/data/leonardo; give it with " + s.kind + ":" + hosts_file + ",map=FILE)";
    return false;
  }
  if (!rank_map_from_allocation(hosts_file, hosts, map_file, map, ppn, p, out, err, torus, prefix)) return false;
  out.spec = spec;
  out.kind = s.kind;
  return true;
}

}  // namespace bine
