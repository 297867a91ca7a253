// translation_symmetry() (compiler/ir/symmetry.h): a static proof that every rank of an
// unrooted program runs rank 0's rounds shifted (issue 47, item 3). Oracle: the instances
// themselves, compared rank by rank and block by block here (not through rotation.h): for
// every program it proves (the library, the unrooted schedules under tests/ and examples/,
// random programs), every instance at p = 1..max_p built, and each rank x's rounds must be
// rank 0's with peers + x mod p and, where the proof says the blocks rotate, block j as
// block (j + x) mod p. Programs that treat ranks differently must not be proved: the
// library's Bine and Swing schedules (parity partners: symmetric under even shifts only),
// planted rank-dependent rules, and rank-dependent arithmetic that may wrap around 2^64.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <set>

#include "check.h"
#include "library.h"
#include "instantiate.h"
#include "lower.h"
#include "symmetry.h"

namespace bine::test {

namespace {

TranslationSymmetry translation_of(const Program& prog, const ScheduleDecl& s) {
  RankProgram rp;
  DiagnosticSink d;
  if (!lower(prog, s, rp, d)) return TranslationSymmetry{false, false, "not lowered", Span{}};
  return translation_symmetry(rp);
}

/// Whether b is a shifted by x: the same members (!rotate), or j in a iff (j + x) mod n in
/// b (rotate, n = B = p). Member by member, over every block index.
bool shifted_blocks(const BlockSet& a, const BlockSet& b, int64_t x, int64_t n, int64_t all, bool rotate) {
  for (int64_t j = 0; j < all; ++j) {
    const int64_t k = rotate ? (j + x) % n : j;
    if (a.contains(j) != b.contains(k)) return false;
  }
  return a.size() == b.size();
}

/// "" when every rank of `s` runs rank 0's rounds shifted, else the first difference.
std::string translation_mismatch(const Schedule& s, bool rotate) {
  const int64_t p = s.p, all = s.blocks * (s.scratch + 1);
  if (rotate && s.blocks != p) return "rotated blocks, but B = " + std::to_string(s.blocks) + " is not p";
  for (int64_t x = 1; x < p; ++x)
    for (int64_t t = 0; t < s.num_rounds; ++t) {
      const Round& a = s.ranks[0][size_t(t)];
      const Round& b = s.ranks[size_t(x)][size_t(t)];
      const std::string at = "rank " + std::to_string(x) + ", round " + std::to_string(t) + ": ";
      if (a.size() != b.size()) return at + std::to_string(b.size()) + " ops, rank 0 has " + std::to_string(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].index() != b[i].index()) return at + "op " + std::to_string(i) + " of another kind";
        if (const auto* sa = std::get_if<SendOp>(&a[i])) {
          const auto& sb = std::get<SendOp>(b[i]);
          if (sb.peer != (sa->peer + x) % p) return at + "send to " + std::to_string(sb.peer);
          if (!shifted_blocks(sa->blocks, sb.blocks, x, p, all, rotate)) return at + "send of other blocks";
        } else if (const auto* ra = std::get_if<RecvOp>(&a[i])) {
          const auto& rb = std::get<RecvOp>(b[i]);
          if (rb.peer != (ra->peer + x) % p) return at + "receive from " + std::to_string(rb.peer);
          if (rb.reduce != ra->reduce) return at + "another receive kind";
          if (!shifted_blocks(ra->blocks, rb.blocks, x, p, all, rotate)) return at + "receive of other blocks";
        } else if (const auto* la = std::get_if<LocalOp>(&a[i])) {
          const auto& lb = std::get<LocalOp>(b[i]);
          if (lb.reduce != la->reduce || !shifted_blocks(la->src, lb.src, x, p, all, rotate) ||
              !shifted_blocks(la->blocks, lb.blocks, x, p, all, rotate))
            return at + "another local statement";
        } else {
          const auto& pa = std::get<PermuteOp>(a[i]);
          const auto& pb = std::get<PermuteOp>(b[i]);
          if (pa.to->size() != pb.to->size()) return at + "another permutation";
          for (size_t j = 0; j < pa.to->size(); ++j) {
            const int64_t from = rotate ? (int64_t(j) + x) % p : int64_t(j);
            const int64_t to = rotate ? (pa.to[j] + x) % p : pa.to[j];
            if (pb.to[size_t(from)] != to) return at + "another permutation";
          }
        }
      }
    }
  return "";
}

/// Checks the claim at p = 1..max_p for every value of `commutative` check uses; returns
/// the number of instances compared.
int check_claim(const Program& prog, const ScheduleDecl& s, const TranslationSymmetry& sym, int64_t max_p) {
  int compared = 0;
  for (bool commutative : commutative_values(s))
    for (int64_t p = 1; p <= max_p; ++p) {
      Schedule inst;
      DiagnosticSink d;
      if (instantiate(prog, s, {p, 0, commutative}, inst, d) != InstStatus::ok) continue;
      INFO(s.name << " p=" << p << " commutative=" << commutative);
      CHECK(translation_mismatch(inst, sym.rotate_blocks) == "");
      // instantiate()'s own shifting (InstanceRequest::translation) builds the same instance.
      RankProgram rp;
      REQUIRE(lower(prog, s, rp, d));
      InstanceRequest req{p, 0, commutative};
      req.translation = &sym;
      Schedule shifted;
      CHECK(instantiate(rp, req, shifted, d) == InstStatus::ok);
      CHECK(shifted.shifted != Schedule::Shifted::refuted);
      CHECK(schedule_json(shifted) == schedule_json(inst));
      ++compared;
    }
  return compared;
}

/// Whether some instance at p = 2..max_p is not rank 0's shifted, in either block mode.
bool asymmetric(const Program& prog, const ScheduleDecl& s, int64_t max_p) {
  for (bool commutative : commutative_values(s))
    for (int64_t p = 2; p <= max_p; ++p) {
      Schedule inst;
      DiagnosticSink d;
      if (instantiate(prog, s, {p, 0, commutative}, inst, d) != InstStatus::ok) continue;
      if (translation_mismatch(inst, false) != "" && (inst.blocks != p || translation_mismatch(inst, true) != ""))
        return true;
    }
  return false;
}

Program from_text(const std::string& text) {
  Program prog;
  DiagnosticSink d;
  REQUIRE(load_program_text("t.bine", text, prog, d));
  return prog;
}

}  // namespace

TEST_CASE("translation symmetry: every library program it proves is rank 0's rounds shifted") {
  const Program& lib = library();
  std::set<std::string> proved;
  int unrooted = 0, compared = 0;
  for (const ScheduleDecl& s : lib.schedules) {
    const TranslationSymmetry sym = translation_of(lib, s);
    INFO(s.name << ": " << sym.reason);
    if (collective_is_rooted(s.collective)) {
      CHECK_FALSE(sym.proved);
      continue;
    }
    ++unrooted;
    if (!sym.proved) {
      CHECK(sym.reason != "");
      continue;
    }
    proved.insert(s.name);
    compared += check_claim(lib, s, sym, 12);
  }
  std::string names;
  for (const std::string& n : proved) names += " " + n;
  MESSAGE(proved.size() << " of " << unrooted << " unrooted library schedules proved (" << names << " ), " << compared
                        << " instances compared");
  // The p^2-transfer families item 3 is about: ring, pairwise, dissemination.
  for (const char* name : {"ring_allreduce", "ring_allgather", "ring_reduce_scatter", "pairwise_reduce_scatter", "rotated_alltoall",
                           "dissemination_barrier"}) {
    INFO(std::string(name));
    CHECK(proved.count(name) == 1);
  }
  // Parity partners (even(r) ? r + rho : r - rho) are symmetric under even shifts only.
  for (const char* name : {"bine_allreduce_lat", "swing_allreduce_bdw"}) {
    INFO(std::string(name));
    CHECK(proved.count(name) == 0);
    const ScheduleDecl* s = nullptr;
    for (const ScheduleDecl& d : lib.schedules) s = d.name == name ? &d : s;
    REQUIRE(s);
    CHECK(asymmetric(lib, *s, 8));
  }
}

TEST_CASE("translation symmetry: unrooted schedules under tests/ and examples/") {
  int proved = 0, files = 0;
  std::vector<std::string> all;
  for (const char* dir : {"tests", "examples"})
    for (const auto& f : std::filesystem::recursive_directory_iterator(std::string(BINE_SOURCE_DIR "/") + dir))
      if (f.path().extension() == ".bine") all.push_back(f.path().string());
  std::sort(all.begin(), all.end());
  for (const std::string& f : all) {
    Program prog;
    DiagnosticSink d;
    if (!load_program({f}, prog, d)) continue;
    ++files;
    for (const ScheduleDecl& s : prog.schedules) {
      if (collective_is_rooted(s.collective)) continue;
      const TranslationSymmetry sym = translation_of(prog, s);
      if (!sym.proved) continue;
      ++proved;
      INFO(f << ": " << s.name);
      check_claim(prog, s, sym, 9);
    }
  }
  MESSAGE(proved << " unrooted schedules proved in " << files << " files");
  CHECK(proved >= 5);
}

TEST_CASE("translation symmetry: planted rank-dependent rules are not proved, and are asymmetric") {
  const struct {
    const char* text;
    const char* reason;
  } cases[] = {
      // Rank 0 alone sends one more message.
      {"schedule a implements allgather {\n  blocks p\n  for s in 1 .. p {\n    send block(r) to r + s\n"
       "    recv block(r - s) from r - s\n  }\n  if r == 0 { send block(0) to 1 }\n}\n",
       "a branch condition depends on the rank"},
      // Partners by parity (Bine's rule).
      {"schedule b implements allreduce {\n  requires is_pow2(p)\n  blocks 1\n  for s in 0 .. log2(p) {\n"
       "    exchange all / all with (even(r) ? r + (1 << s) : r - (1 << s)) reduce\n  }\n}\n",
       "a condition depends on the rank"},
      // A peer twice the rank away.
      {"schedule c implements allgather {\n  blocks p\n  for s in 1 .. p {\n    send block(r) to 2 * r + s\n"
       "    recv block(r) from r - s\n  }\n}\n",
       "a peer that is not rank 0's peer shifted by the rank"},
      // Rank-dependent arithmetic that wraps: mod(r + 2^63 - 1, p) is not r + 2^63 - 1 mod p.
      {"schedule w implements allgather {\n  blocks p\n  for s in 1 .. p {\n"
       "    if mod(r + 9223372036854775807, p) == mod(9223372036854775807, p) { send all to r + s }"
       " else { recv all from r - s }\n  }\n}\n",
       "may wrap around 2^64"},
  };
  for (const auto& c : cases) {
    const Program prog = from_text(c.text);
    const TranslationSymmetry sym = translation_of(prog, prog.schedules[0]);
    INFO(c.text << "\n" << sym.reason);
    CHECK_FALSE(sym.proved);
    CHECK(sym.reason.find(c.reason) != std::string::npos);
    CHECK(asymmetric(prog, prog.schedules[0], 9));
  }
}

TEST_CASE("translation symmetry: rotated blocks of a vector collective (ring allreduce), and equal ones") {
  // Equal blocks: recursive doubling on one block; rotated: the ring on B = p.
  const Program prog = from_text(
      "schedule eq implements allreduce {\n  blocks 1\n  for s in 1 .. p {\n    send all to r + 1\n"
      "    recv all from r - 1 reduce\n  }\n}\n"
      "schedule rot implements allreduce {\n  blocks p\n  for s in 0 .. p - 1 {\n    send block(r - s) to r + 1\n"
      "    recv block(r - s - 1) from r - 1 reduce\n  }\n  for s in 0 .. p - 1 {\n    send block(r + 1 - s) to r + 1\n"
      "    recv block(r - s) from r - 1\n  }\n}\n"
      "schedule fixed implements allreduce {\n  blocks p\n  for s in 0 .. p - 1 {\n    send block(s) to r + 1\n"
      "    recv block(s) from r - 1 reduce\n  }\n}\n"
      // A local copy and a permutation that commute with the rotation.
      "schedule moved implements allgather {\n  blocks p\n  for s in 1 .. p {\n    send block(r + s - 1) to r + 1\n"
      "    recv block(r + s) from r - 1\n  }\n  copy block(r + 1) into block(r + 2)\n"
      "  permute j -> mod(j + 1, p)\n}\n");
  const TranslationSymmetry eq = translation_of(prog, prog.schedules[0]);
  const TranslationSymmetry rot = translation_of(prog, prog.schedules[1]);
  const TranslationSymmetry fixed = translation_of(prog, prog.schedules[2]);
  CHECK(eq.proved);
  CHECK_FALSE(eq.rotate_blocks);
  CHECK(rot.proved);
  CHECK(rot.rotate_blocks);
  CHECK(fixed.proved);  // blocks p, but the same block on every rank: equal, not rotated
  CHECK_FALSE(fixed.rotate_blocks);
  const TranslationSymmetry moved = translation_of(prog, prog.schedules[3]);
  INFO(moved.reason);
  CHECK(moved.proved);
  CHECK(moved.rotate_blocks);
  for (size_t i = 0; i < 4; ++i) CHECK(check_claim(prog, prog.schedules[i], translation_of(prog, prog.schedules[i]), 9) > 0);
}

namespace {

// Random unrooted programs: peers, guards and block sets mixing r, p, the loop's values
// and constants (some near 2^63) through the operators the analysis knows.
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int pick(int n) { return int(rng() % uint64_t(n)); }
  std::string atom(const std::vector<std::string>& vars) {
    static const char* k[] = {"0", "1", "2", "3", "9223372036854775807", "0x4000_0000_0000_0001", "1000003"};
    if (pick(4) == 0) return k[pick(7)];
    return vars[size_t(pick(int(vars.size())))];
  }
  std::string expr(const std::vector<std::string>& vars, int depth) {
    if (depth == 0 || pick(4) == 0) return atom(vars);
    auto sub = [&] { return expr(vars, depth - 1); };
    static const char* ops[] = {"+", "-", "*", "/", "%", "&", "^", "<<"};
    switch (pick(5)) {
      case 0:
      case 1: return "(" + sub() + " " + ops[pick(8)] + " " + sub() + ")";
      case 2: return "mod(" + sub() + ", " + (pick(3) ? std::string("p") : sub()) + ")";
      case 3: return std::string(pick(2) ? "min(" : "max(") + sub() + ", " + sub() + ")";
      default: return "(" + cond(vars, depth - 1) + " ? " + sub() + " : " + sub() + ")";
    }
  }
  std::string cond(const std::vector<std::string>& vars, int depth) {
    static const char* cmp[] = {"==", "!=", "<", ">="};
    if (pick(3) == 0) {
      static const char* sh[] = {"r", "mod(r + d, p)", "mod(r - d, p)", "d", "mod(r + 9223372036854775807, p)"};
      return "(" + std::string(sh[pick(5)]) + (pick(2) ? " == " : " != ") + sh[pick(5)] + ")";
    }
    return "(" + expr(vars, depth) + " " + cmp[pick(4)] + " " + expr(vars, depth) + ")";
  }
  std::string program(bool gather) {
    const std::vector<std::string> in = {"d", "s", "p", "r", "r + d", "r - d"};
    auto peer = [&](const char* sign) {
      switch (pick(4)) {
        case 0: return expr(in, 2);
        case 1: return "mod(" + expr(in, 1) + ", p) + r";
        default: return std::string("r ") + sign + " d";
      }
    };
    auto blocks = [&]() -> std::string {
      switch (pick(gather ? 5 : 3)) {
        case 0: return "all";
        case 1: return "block(" + expr(in, 1) + ")";
        case 2: return "{ i in all if " + cond({"i", "r", "d", "p"}, 1) + " }";
        case 3: return "wrap [r, r + d)";
        default: return "wrap [r - d, r)";
      }
    };
    std::string s = std::string("schedule s implements ") + (gather ? "allgather" : "allreduce") + " {\n  blocks " +
                    (gather || pick(2) ? "p" : std::to_string(1 + pick(3))) + "\n";
    s += "  for s in 0 .. ceil_log2(p) {\n    let d = 1 << s\n";
    const bool pairwise = pick(2);
    if (pairwise) {
      s += "    send " + blocks() + " to " + peer("+") + "\n    recv " + blocks() + " from " + peer("-") +
           (gather ? "" : " reduce") + "\n";
    } else {
      s += "    if " + cond(in, 1) + " {\n      send " + blocks() + " to " + peer("+") + "\n    } else {\n      recv " +
           blocks() + " from " + peer("-") + "\n    }\n";
    }
    s += "  }\n}\n";
    return s;
  }
};

}  // namespace

TEST_CASE("translation symmetry: random unrooted programs, proved ones are rank 0's rounds shifted") {
  int proved = 0, refused = 0, compared = 0;
  for (uint64_t seed = 1; seed <= 1500; ++seed) {
    Gen g(seed);
    const std::string text = g.program(seed % 2 == 0);
    Program prog;
    DiagnosticSink d;
    if (!load_program_text("random.bine", text, prog, d)) continue;
    INFO("seed " << seed << ":\n" << text);
    const TranslationSymmetry sym = translation_of(prog, prog.schedules[0]);
    if (!sym.proved) {
      ++refused;
      continue;
    }
    ++proved;
    compared += check_claim(prog, prog.schedules[0], sym, 9);
  }
  MESSAGE(proved << " random programs proved, " << refused << " refused, " << compared << " instances compared");
  CHECK(proved > 80);
  CHECK(refused > 80);
}

}  // namespace bine::test

namespace bine::test {

namespace {

/// The instance built with the proof `sym` (rank 0's rounds shifted) and without it (every
/// rank run): their JSON texts, and how the first was built.
struct Both {
  InstStatus with = InstStatus::error, without = InstStatus::error;
  std::string a, b;
  Schedule::Shifted how = Schedule::Shifted::no;
};
Both build_both(const Program& prog, const ScheduleDecl& s, const TranslationSymmetry& sym, int64_t p, bool comm) {
  RankProgram rp;
  DiagnosticSink d;
  REQUIRE(lower(prog, s, rp, d));
  Both out;
  Schedule x, y;
  InstanceRequest req{p, 0, comm};
  req.translation = &sym;
  out.with = instantiate(rp, req, x, d);
  out.without = instantiate(rp, InstanceRequest{p, 0, comm}, y, d);
  out.how = x.shifted;
  if (out.with == InstStatus::ok) out.a = schedule_json(x);
  if (out.without == InstStatus::ok) out.b = schedule_json(y);
  return out;
}

}  // namespace

TEST_CASE("translation symmetry: instances built from rank 0's shifted rounds equal those where every rank runs") {
  const Program& lib = library();
  int shifted = 0;
  for (const ScheduleDecl& s : lib.schedules) {
    const TranslationSymmetry sym = translation_of(lib, s);
    if (!sym.proved) continue;
    for (bool comm : commutative_values(s))
      for (int64_t p : {1, 2, 3, 5, 8, 13, 24, 37}) {
        INFO(s.name << " p=" << p << " commutative=" << comm);
        const Both b = build_both(lib, s, sym, p, comm);
        CHECK(int(b.with) == int(b.without));
        CHECK(b.a == b.b);
        CHECK(b.how != Schedule::Shifted::refuted);
        shifted += b.how == Schedule::Shifted::yes;
      }
  }
  MESSAGE(shifted << " library instances built by translation, each equal to the rank-by-rank build");
  CHECK(shifted >= 40);
}

TEST_CASE("translation symmetry: a planted unsound proof is caught by the spot rank, and the instance is still right") {
  // Rank 0 alone sends one more message: shifting rank 0 would give every rank that send.
  const Program prog = from_text(
      "schedule a implements allgather {\n  blocks p\n  for s in 1 .. p {\n    send block(r) to r + s\n"
      "    recv block(r - s) from r - s\n  }\n  round { if r == 0 { send block(0) to 1 } else if r == 1 { recv block(0) from 0 } }\n}\n");
  const TranslationSymmetry planted{true, true, "", Span{}};
  for (int64_t p : {2, 3, 4, 7}) {
    INFO("p=" << p);
    const Both b = build_both(prog, prog.schedules[0], planted, p, false);
    CHECK(b.how == Schedule::Shifted::refuted);
    CHECK(int(b.with) == int(b.without));
    CHECK(b.a == b.b);
  }
  CHECK(translation_spot_rank(2) == 1);
  for (int64_t p = 2; p <= 300; ++p) {
    const int64_t x = translation_spot_rank(p);
    CHECK(x >= 1);
    CHECK(x < p);
  }
}

}  // namespace bine::test
