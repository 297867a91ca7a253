// Batched block-set filters (instantiate.cpp, batch_filter(); docs/architecture.md,
// "Batched filters") against the reference: the block-by-block loop, which every instance
// was built with before. Both must give the same instance, the same status and the same
// diagnostics, for the library and for random filter conditions full of domain errors,
// short-circuits and fn calls.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "library.h"

namespace bine::test {
namespace {

/// Status, schedule JSON (when ok) and rendered diagnostics of one instantiation.
struct Outcome {
  InstStatus status = InstStatus::error;
  std::string json, diags, unmet;
  bool operator==(const Outcome& o) const {
    return status == o.status && json == o.json && diags == o.diags && unmet == o.unmet;
  }
};

Outcome run_once(const Program& prog, const ScheduleDecl& decl, int64_t p, int64_t root, bool batched) {
  set_batch_filters(batched);
  Outcome o;
  Schedule s;
  DiagnosticSink d;
  InstanceRequest req;
  req.p = p, req.root = root, req.commutative = default_commutative(decl);
  o.status = instantiate(prog, decl, req, s, d, &o.unmet);
  if (o.status == InstStatus::ok) o.json = schedule_json(s);
  for (const Diagnostic& x : d.all()) o.diags += render_text(x);
  set_batch_filters(true);
  return o;
}

/// Instantiates `decl` both ways; CHECKs they agree and returns the batched outcome.
Outcome both_ways(const Program& prog, const ScheduleDecl& decl, int64_t p, int64_t root) {
  const Outcome scalar = run_once(prog, decl, p, root, false);
  const Outcome batched = run_once(prog, decl, p, root, true);
  INFO(decl.name << " p=" << p << " root=" << root);
  CHECK(batched.status == scalar.status);
  CHECK(batched.unmet == scalar.unmet);
  CHECK(batched.diags == scalar.diags);
  CHECK(batched.json == scalar.json);
  return batched;
}

// ---- random filter conditions ----
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int pick(int n) { return int(rng() % uint64_t(n)); }
  /// An int expression over `vars`, at most `depth` deep; calls of fns f1 (2 args) and
  /// f2 (1 arg) when `fns`.
  std::string expr(const std::vector<std::string>& vars, int depth, bool fns) {
    if (depth == 0 || pick(5) == 0) {
      if (pick(3) == 0) return std::to_string(pick(9) - 2);
      return vars[size_t(pick(int(vars.size())))];
    }
    auto sub = [&] { return expr(vars, depth - 1, fns); };
    static const char* ops[] = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"};
    switch (pick(fns ? 8 : 6)) {
      case 0:
      case 1: return "(" + sub() + " " + ops[pick(10)] + " " + sub() + ")";
      case 2: return "(" + cond(vars, depth - 1, fns) + " ? " + sub() + " : " + sub() + ")";
      case 3: {
        static const char* f1[] = {"log2", "ceil_log2", "popcount", "nb", "from_nb", "rho", "lowmask"};
        return std::string(f1[pick(7)]) + "(" + sub() + ")";
      }
      case 4: {
        static const char* f2[] = {"min", "max", "mod", "nu", "bitrev"};
        return std::string(f2[pick(5)]) + "(" + sub() + ", " + sub() + ")";
      }
      case 5: return "-" + sub();
      case 6: return "f1(" + sub() + ", " + sub() + ")";
      default: return "f2(" + sub() + ")";
    }
  }
  /// A bool expression (comparisons, && || !, even, is_pow2, ?:) over the same.
  std::string cond(const std::vector<std::string>& vars, int depth, bool fns) {
    auto num = [&] { return expr(vars, depth > 0 ? depth - 1 : 0, fns); };
    auto sub = [&] { return cond(vars, depth > 0 ? depth - 1 : 0, fns); };
    static const char* cmp[] = {"==", "!=", "<", "<=", ">", ">="};
    switch (depth == 0 ? pick(2) : pick(7)) {
      case 0: return "(" + num() + " " + cmp[pick(6)] + " " + num() + ")";
      case 1: return std::string(pick(2) ? "even(" : "is_pow2(") + num() + ")";
      case 2:
      case 3: return "(" + sub() + (pick(2) ? " && " : " || ") + sub() + ")";
      case 4: return "!" + sub();
      case 5: return "(" + sub() + " ? " + sub() + " : " + sub() + ")";
      default: return "(" + num() + " " + cmp[pick(6)] + " " + num() + ")";
    }
  }
  /// A whole file: two fns (one with a block body with ifs), a schedule whose rounds
  /// send and receive filtered block sets, and a third fn with a loop (not batched).
  std::string program() {
    const std::vector<std::string> fv = {"x", "y", "p", "r"};
    const std::vector<std::string> bv = {"a", "b", "y"};
    std::string s = "fn f1(x, y) {\n  let a = " + expr(fv, 2, false) + "\n  var b = " + expr({"x", "y", "a", "p"}, 2, false) +
                    "\n  b = " + expr(bv, 2, false) + "\n  if " + cond(bv, 2, false) + " {\n    b = " + expr(bv, 2, false) +
                    "\n  } else {\n    let e = " + expr(bv, 1, false) + "\n    if " + cond({"e", "b"}, 1, false) +
                    " { b = " + expr({"e", "b", "x"}, 2, false) + " }\n  }\n  return " + expr({"a", "b", "x"}, 2, false) + "\n}\n";
    s += "fn f2(x) = " + expr({"x", "p", "r"}, 2, false) + "\n";
    s += "fn f3(x) {\n  var c = 0\n  for j in 0 .. mod(x, 4) { c = c + j }\n  return c\n}\n";
    const std::vector<std::string> sv = {"i", "r", "p", "t", "c", "i", "i"};
    std::string cond1 = cond(sv, 4, true), cond2 = cond(sv, 4, true);
    if (pick(4) == 0) cond2 = "f3(i) < 2 && " + cond2;
    s += "schedule s implements allgather {\n  blocks " + std::to_string(1 + pick(40)) + "\n" +
         "  for t in 0 .. 3 {\n    let c = " + expr({"r", "p", "t"}, 2, false) + "\n" +
         "    send { i in all if " + cond1 + " } to r + 1\n" +
         "    recv { i in [0, " + std::to_string(1 + pick(3)) + ") | { j in all if j % 3 == 1 } if " + cond2 + " } from r - 1\n" +
         "  }\n}\n";
    return s;
  }
};

}  // namespace

TEST_CASE("[batch] every library schedule: batched filters give the scalar loop's instances") {
  const Program& lib = library();
  RegionsScope regions("4");  // the locality schedules' regions (others ignore them)
  int compared = 0;
  for (const ScheduleDecl& d : lib.schedules)
    for (int64_t p : {1, 2, 3, 5, 8, 12, 13, 16, 24, 32, 36}) {
      std::vector<int64_t> roots = {0};
      if (collective_is_rooted(d.collective) && p > 2) roots = {0, 1, p - 1};
      for (int64_t root : roots) {
        both_ways(lib, d, p, root);
        ++compared;
      }
    }
  MESSAGE(compared << " instances compared");
}

TEST_CASE("[batch] random filter conditions: same sets, statuses and diagnostics as the scalar loop") {
  int ok = 0, errors = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    Gen g(seed);
    const std::string text = g.program();
    Program prog;
    DiagnosticSink d;
    if (!load_program_text("random.bine", text, prog, d)) {
      FAIL("seed " << seed << ": does not load:\n" << text);
      continue;
    }
    INFO("seed " << seed << ":\n" << text);
    for (int64_t p : {1, 2, 5, 8}) {
      const Outcome o = both_ways(prog, prog.schedules[0], p, 0);
      (o.status == InstStatus::ok ? ok : errors) += 1;
    }
  }
  // Both kinds must occur, or the comparison proves little.
  MESSAGE(ok << " instances built, " << errors << " stopped by an error");
  CHECK(ok > 200);
  CHECK(errors > 200);
}

TEST_CASE("[batch] the step limit inside a filter stops where the scalar loop stops") {
  // 2^22 blocks, 13 fn calls per block: 4M + 54M steps, past the limit (50M) in the
  // filter; the diagnostic must be the same (here the limit falls on a block's count).
  const std::string text =
      "fn g0(x) = x + 1\n"
      "fn g1(x) = g0(g0(x))\nfn g2(x) = g1(g1(x))\nfn g3(x) = g2(g2(x))\n"
      "schedule s implements allgather {\n  blocks 4194304\n"
      "  send { i in all if g3(i) + g3(i) + g0(i) > 0 } to r + 1\n"
      "  recv all from r - 1\n}\n";
  Program prog;
  DiagnosticSink d;
  REQUIRE(load_program_text("steps.bine", text, prog, d));
  const Outcome o = both_ways(prog, prog.schedules[0], 2, 0);
  CHECK(o.status == InstStatus::error);
  CHECK(o.diags.find("more than 50000000 loop iterations") != std::string::npos);
}

}  // namespace bine::test
