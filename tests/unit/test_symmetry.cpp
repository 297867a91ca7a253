// root_symmetry() (compiler/ir/symmetry.h): a static proof that a rooted program treats every
// root alike. Oracle: the instances themselves. For every program it proves (the library,
// every rooted schedule under tests/ and examples/, and random programs), every root's
// instance at small p is built and compared with root 0's by rotation_mismatch() (the
// instance-by-instance check, rotation.h), and the instantiation status (built, not
// applicable, error) must be the same for every root. Programs that treat roots differently
// (the mutation mut_rot_bcast_roots, random ones) must not be proved.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "check.h"
#include "library.h"
#include "lower.h"
#include "rotation.h"
#include "symmetry.h"

namespace bine::test {

namespace {

RootSymmetry symmetry_of(const Program& prog, const ScheduleDecl& s) {
  RankProgram rp;
  DiagnosticSink d;
  REQUIRE(lower(prog, s, rp, d));
  return root_symmetry(rp);
}

/// Checks the claim of a proved program at p = 1..max_p, every root and every value of
/// `commutative` check uses. Returns the number of (p, root) instances compared.
int check_claim(const Program& prog, const ScheduleDecl& s, const RootSymmetry& sym, int64_t max_p) {
  int compared = 0;
  for (bool commutative : commutative_values(s))
    for (int64_t p = 1; p <= max_p; ++p) {
      Schedule base;
      DiagnosticSink d0;
      const InstStatus st0 = instantiate(prog, s, {p, 0, commutative}, base, d0);
      // Rank-indexed blocks: the claim covers a p only where the pairings hold for every
      // rotation (check tests this on the verified root-0 instance).
      const bool pairing = st0 != InstStatus::ok || !sym.rank_blocks || pairing_for_every_root(base).empty();
      for (int64_t R = 1; R < p; ++R) {
        Schedule inst;
        DiagnosticSink d;
        const InstStatus st = instantiate(prog, s, {p, R, commutative}, inst, d);
        INFO(s.name << " p=" << p << " root=" << R << " commutative=" << commutative);
        CHECK(int(st) == int(st0));
        if (st == InstStatus::ok && st0 == InstStatus::ok && pairing) CHECK(rotation_mismatch(base, inst) == "");
        ++compared;
      }
    }
  return compared;
}

/// Every .bine file under `dir` (recursively), relative to the repository root.
std::vector<std::string> bine_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::recursive_directory_iterator(BINE_SOURCE_DIR "/" + dir))
    if (f.path().extension() == ".bine")
      out.push_back(std::filesystem::relative(f.path(), BINE_SOURCE_DIR).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("root symmetry: every library program it proves is a rotation at every root") {
  const Program& lib = library();
  int proved = 0, rooted = 0, compared = 0;
  for (const ScheduleDecl& s : lib.schedules) {
    if (!collective_is_rooted(s.collective)) continue;
    ++rooted;
    const RootSymmetry sym = symmetry_of(lib, s);
    INFO(s.name << ": " << sym.reason);
    if (!sym.proved) continue;
    ++proved;
    compared += check_claim(lib, s, sym, 17);
  }
  MESSAGE(proved << " of " << rooted << " rooted library schedules proved; " << compared << " instances compared");
  // The trees written relative to the root and every folded schedule (not the four
  // hierarchical ones, whose phases run on regions of real ranks).
  CHECK(proved >= 14);
  CHECK(sched("hier_binomial_bcast").collective == Collective::bcast);
  CHECK_FALSE(symmetry_of(lib, sched("hier_binomial_bcast")).proved);
}

TEST_CASE("root symmetry: rooted schedules under tests/ and examples/") {
  int proved = 0, files = 0;
  std::vector<std::string> all = bine_files("tests");
  for (const std::string& f : bine_files("examples")) all.push_back(f);
  for (const std::string& f : all) {
    // Load alone, else with the library (composition); files made to fail to load are skipped.
    Program alone;
    DiagnosticSink d;
    const Program* prog = &alone;
    if (!load_program({std::string(BINE_SOURCE_DIR "/") + f}, alone, d)) continue;
    ++files;
    for (const ScheduleDecl& s : prog->schedules) {
      if (!collective_is_rooted(s.collective)) continue;
      const RootSymmetry sym = symmetry_of(*prog, s);
      INFO(f << ": " << s.name << ": " << sym.reason);
      if (s.name == "mut_rot_bcast_roots") CHECK_FALSE(sym.proved);  // roots 2..p/2-1 differ
      if (!sym.proved) continue;
      ++proved;
      check_claim(*prog, s, sym, 9);
    }
  }
  MESSAGE(proved << " rooted schedules proved in " << files << " files");
  CHECK(proved >= 5);
}

namespace {

// Random rooted programs: trees whose relative rank, conditions, peers and block sets mix
// r, root, p and the loop's values through every operator the analysis knows.
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int pick(int n) { return int(rng() % uint64_t(n)); }
  std::string atom(const std::vector<std::string>& vars) {
    if (pick(4) == 0) return std::to_string(pick(5));
    return vars[size_t(pick(int(vars.size())))];
  }
  std::string expr(const std::vector<std::string>& vars, int depth) {
    if (depth == 0 || pick(4) == 0) return atom(vars);
    auto sub = [&] { return expr(vars, depth - 1); };
    static const char* ops[] = {"+", "-", "*", "/", "%", "&", "^", "<<"};
    switch (pick(6)) {
      case 0:
      case 1: return "(" + sub() + " " + ops[pick(8)] + " " + sub() + ")";
      case 2: {
        static const char* m[] = {"p", "p", "2 * p", "p + 1", "d"};
        return "mod(" + sub() + ", " + (pick(4) ? m[pick(5)] : sub()) + ")";
      }
      case 3: return std::string(pick(2) ? "min(" : "max(") + sub() + ", " + sub() + ")";
      case 4: return "(" + cond(vars, depth - 1) + " ? " + sub() + " : " + sub() + ")";
      default: return std::string(pick(2) ? "nb(" : "log2(") + sub() + ")";
    }
  }
  std::string cond(const std::vector<std::string>& vars, int depth) {
    static const char* cmp[] = {"==", "!=", "<", ">="};
    if (std::find(vars.begin(), vars.end(), "d") != vars.end() && pick(3) == 0) {
      // Ranks compared: equal in both runs only where both sides are in [0, p).
      static const char* sh[] = {"r", "root", "r + d", "root + d", "mod(r + d, p)", "mod(root + v, p)", "v"};
      return "(" + std::string(sh[pick(7)]) + (pick(2) ? " == " : " != ") + sh[pick(7)] + ")";
    }
    if (depth > 0 && pick(4) == 0) return "(" + cond(vars, depth - 1) + (pick(2) ? " && " : " || ") + cond(vars, depth - 1) + ")";
    return "(" + expr(vars, depth) + " " + cmp[pick(4)] + " " + expr(vars, depth) + ")";
  }
  std::string program(bool gather) {
    const std::vector<std::string> top = {"r", "root", "p", "r - root", "mod(r - root, p)"};
    const std::vector<std::string> in = {"v", "d", "s", "p", "r", "root", "v + d", "v - d", "r - root"};
    // The relative rank: right, or wrong in ways that only some roots or ranks show.
    static const char* vs[] = {"mod(r - root, p)",     "mod(r - root, p)", "mod(r - root, p)", "mod(r - root, 2 * p)",
                               "mod(r - root + 1, p)", "(r - root) % p",   "mod(root - r, p)", "mod(r + root, p)"};
    const int vk = pick(9);
    const std::string v = vk < 8 ? vs[vk] : expr(top, 2);
    auto peer = [&](const char* sign) {
      switch (pick(4)) {
        case 0: return expr(in, 2);
        case 1: return "mod(" + expr(in, 1) + ", p) + root";
        default: return std::string("r ") + sign + " d";
      }
    };
    auto blocks = [&](bool recv) {
      if (!gather) return std::string(pick(4) ? "all" : "block(" + expr(in, 1) + ")");
      switch (pick(5)) {
        case 0: return "block(" + expr(in, 1) + ")";
        case 4: {
          // A filter on the block index itself: rotates only where i is compared as a rank.
          static const char* c[] = {"i < v", "i == r", "i != root", "mod(i - root, p) < d", "i >= d"};
          return "{ i in all if " + std::string(c[pick(5)]) + " }";
        }
        case 1: return "{ i in all if mod(i - root, p) " + std::string(recv ? ">=" : "<") + " " + expr(in, 1) + " }";
        case 2: {
          // Ends shifted by exactly the root, or only modulo p (r), or not at all.
          static const char* lo[] = {"v + root", "r", "v + d + root", "mod(v + root, p)", "root"};
          static const char* hi[] = {"v + d + root", "r + d", "min(v + 2 * d, p) + root", "mod(v + d + root, p)", "d + root"};
          const int k = pick(5);
          return "wrap [" + std::string(lo[k]) + ", " + (pick(3) ? hi[k] : hi[pick(5)]) + ")";
        }
        default:
          return "wrap [v + " + std::string(recv ? "d + " : "") + "root, min(v + " + (recv ? "2 * d" : "d") + ", p) + root)";
      }
    };
    std::string s = std::string("schedule s implements ") + (gather ? "gather" : "bcast") + " {\n  blocks " +
                    (gather ? "p" : std::to_string(1 + pick(3))) + "\n  let v = " + v + "\n";
    if (pick(3) == 0) s += "  var w = " + expr(top, 1) + "\n";
    s += "  for s in 0 .. ceil_log2(p) {\n    let d = 1 << s\n";
    if (s.find("var w") != std::string::npos) s += "    w = " + expr({"w", "v", "d", "r", "root"}, 1) + "\n";
    s += "    if " + (pick(3) ? "v % (2 * d) == d" : cond(in, 1)) + " {\n      send " + blocks(false) + " to " + peer("-") +
         "\n    } else if " + (pick(3) ? "v % (2 * d) == 0 && v + d < p" : cond(in, 1)) + " {\n      recv " + blocks(true) +
         " from " + peer("+") + "\n    }\n  }\n}\n";
    return s;
  }
};

}  // namespace

TEST_CASE("root symmetry: random rooted programs, proved ones are rotations at every root") {
  int proved = 0, refused = 0, compared = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    Gen g(seed);
    const std::string text = g.program(seed % 2 == 0);
    Program prog;
    DiagnosticSink d;
    if (!load_program_text("random.bine", text, prog, d)) continue;  // e.g. a set where an int belongs
    INFO("seed " << seed << ":\n" << text);
    const RootSymmetry sym = symmetry_of(prog, prog.schedules[0]);
    if (!sym.proved) {
      ++refused;
      continue;
    }
    ++proved;
    compared += check_claim(prog, prog.schedules[0], sym, 9);
  }
  MESSAGE(proved << " random programs proved, " << refused << " refused, " << compared << " instances compared");
  // Both kinds must occur, or the test proves little.
  CHECK(proved > 80);
  CHECK(refused > 80);
}

}  // namespace bine::test
