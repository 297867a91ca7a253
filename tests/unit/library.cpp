#include "library.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "check.h"

namespace bine::test {

namespace {

std::vector<std::string> library_files() {
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(BINE_SOURCE_DIR "/dsl/lib"))
    if (f.path().extension() == ".bine") files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

const Program& library() {
  static Program prog;
  static bool loaded = false;
  if (!loaded) {
    DiagnosticSink d;
    REQUIRE(load_program(library_files(), prog, d));
    loaded = true;
  }
  return prog;
}

const Program& library_with(const std::string& extra) {
  static std::map<std::string, Program> progs;  // nodes stay put: loaded in place, never moved
  auto it = progs.find(extra);
  if (it == progs.end()) {
    std::vector<std::string> files = library_files();
    files.push_back(std::string(BINE_SOURCE_DIR "/") + extra);
    it = progs.emplace(std::piecewise_construct, std::forward_as_tuple(extra), std::forward_as_tuple()).first;
    DiagnosticSink d;
    REQUIRE(load_program(files, it->second, d));
  }
  return it->second;
}

const ScheduleDecl& sched(const Program& program, const std::string& name) {
  for (const ScheduleDecl& s : program.schedules)
    if (s.name == name) return s;  // names are unique (sema: "redefinition of schedule")
  FAIL("no schedule " << name);
  std::abort();
}

const ScheduleDecl& sched(const std::string& name) { return sched(library(), name); }

Schedule inst(const Program& program, const std::string& name, int64_t p, int64_t root) {
  const ScheduleDecl& s = sched(program, name);
  Schedule out;
  DiagnosticSink d;
  REQUIRE(instantiate(program, s, {p, root, default_commutative(s)}, out, d) == InstStatus::ok);
  return out;
}

Schedule inst(const std::string& name, int64_t p, int64_t root) { return inst(library(), name, p, root); }

RankMap rank_map(const std::string& spec, int64_t p) {
  RankMap m;
  std::string err;
  INFO(spec << " p=" << p << ": " << err);
  REQUIRE(build_rank_map(spec, p, m, err));
  return m;
}

}  // namespace bine::test
