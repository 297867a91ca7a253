#include "library.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "check.h"

namespace bine::test {

const Program& library() {
  static Program prog;
  static bool loaded = false;
  if (!loaded) {
    std::vector<std::string> files;
    for (const auto& f : std::filesystem::directory_iterator(BINE_SOURCE_DIR "/dsl/lib"))
      if (f.path().extension() == ".bine") files.push_back(f.path().string());
    std::sort(files.begin(), files.end());
    DiagnosticSink d;
    REQUIRE(load_program(files, prog, d));
    loaded = true;
  }
  return prog;
}

const ScheduleDecl& sched(const std::string& name) {
  for (const ScheduleDecl& s : library().schedules)
    if (s.name == name) return s;
  FAIL("no schedule " << name);
  std::abort();
}

Schedule inst(const std::string& name, int64_t p, int64_t root) {
  const ScheduleDecl& s = sched(name);
  Schedule out;
  DiagnosticSink d;
  REQUIRE(instantiate(library(), s, {p, root, default_commutative(s)}, out, d) == InstStatus::ok);
  return out;
}

}  // namespace bine::test
