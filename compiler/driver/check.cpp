#include "check.h"

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

#include "instantiate.h"
#include "rotation.h"
#include "symmetry.h"

namespace bine {

ProofSummary CheckReport::proof() const {
  ProofSummary p;
  p.not_applicable = not_applicable;
  p.unmet = unmet_by_p;
  p.order_preserving = ok && order_preserving;
  if (ok)
    for (int64_t x : order_p) {
      if (!p.order_ranges.empty() && p.order_ranges.back().second + 1 == x) p.order_ranges.back().second = x;
      else p.order_ranges.push_back({x, x});
    }
  p.same_bracketing = ok && same_bracketing;
  p.keeps_blocks = ok && keeps_blocks && instances > 0;
  p.direct = ok && direct && instances > 0;
  return p;
}

int64_t symmetry_spot_root(int64_t p) {
  BINE_ASSERT(p >= 2, "symmetry_spot_root() needs p >= 2");
  uint64_t z = uint64_t(p) + 0x9e3779b97f4a7c15ull;  // splitmix64 (Steele, Lea, Flood 2014)
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return int64_t(z % uint64_t(p - 1)) + 1;
}

std::vector<int64_t> roots_for(const ScheduleDecl& s, int64_t p, const CheckOptions& opt) {
  if (!collective_is_rooted(s.collective)) return {0};
  std::vector<int64_t> roots;
  if (p <= opt.all_roots_up_to) {
    for (int64_t r = 0; r < p; ++r) roots.push_back(r);
    return roots;
  }
  for (int64_t r : {int64_t(0), int64_t(1), p / 2, p - 1})  // distinct, in 0..p-1 (p = 1, 2: fewer)
    if (r < p && std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  return roots;
}

/// Values of `commutative` an instance must be proved for. Generated code evaluates it
/// from the operator (true when the collective has none), so a reducing schedule that
/// mentions it is proved for both; the order-preserving property comes from the false case.
bool default_commutative(const ScheduleDecl& s) {
  return s.uses_commutative_requirement || commutative_values(s).front();
}

std::vector<bool> commutative_values(const ScheduleDecl& s) {
  if (!collective_reduces(s.collective)) return {true};
  if (s.mentions_commutative) return {false, true};
  return {false};
}

CheckReport check_schedule(const Program& program, const ScheduleDecl& s, const CheckOptions& opt,
                           DiagnosticSink& diags) {
  RankProgram rp;
  if (!lower(program, s, rp, diags)) {
    CheckReport rep;
    rep.ok = false;
    rep.failed_p = opt.p_lo;
    rep.failed_root = 0;
    return rep;
  }
  return check_schedule(rp, opt, diags);
}

CheckReport check_schedule(const RankProgram& rp, const CheckOptions& opt, DiagnosticSink& diags) {
  CheckReport rep;
  const ScheduleDecl& s = *rp.decl;  // instantiated for every p, root and `commutative`
  const std::vector<bool> comm_values = commutative_values(s);
  const bool rooted = collective_is_rooted(s.collective);
  // A program that treats every root alike (symmetry.h) needs only root 0's instance.
  RootSymmetry sym;
  if (rooted && opt.rotation && opt.symmetry) {
    sym = opt.assume_symmetry ? *opt.assume_symmetry : root_symmetry(rp);
    rep.symmetric = sym.proved;
    rep.symmetry_reason = sym.reason;
    rep.symmetry_line = sym.at.valid() ? sym.at.line : 0;
  }
  // An unrooted program whose ranks run rank 0's rounds shifted (symmetry.h): its
  // instances are built from rank 0's (and one spot rank's) runs, then verified.
  TranslationSymmetry tsym;
  if (!rooted && opt.symmetry) {
    tsym = translation_symmetry(rp);
    rep.translation = tsym.proved;
    rep.translation_reason = tsym.reason;
    rep.translation_line = tsym.at.valid() ? tsym.at.line : 0;
  }
  // Whether the symmetry covers the instances with this value of `commutative`: not the
  // non-commutative reducing ones (the reduction order follows the real ranks).
  auto sym_applies = [&](bool commutative) { return sym.proved && !(collective_reduces(s.collective) && !commutative); };
  for (int64_t p = opt.p_lo; p <= opt.p_hi; ++p) {
    bool order_here = true, any_applicable = false, noncomm_applicable = false;
    std::string unmet_here;  ///< the first false clause at this p
    CheckReport::ExcludedRoots roots_out{p, {}, {}};  ///< roots refused at this p
    // The verified root-0 instance per value of `commutative` (rooted collectives), that
    // later roots are compared with (rotation.h).
    Schedule base[2];
    bool have_base[2] = {false, false};
    // Per value of `commutative`, where the symmetry applies: root 0 verified (and, with
    // rank-indexed blocks, its pairings hold under every rotation), so every root is; or
    // root 0 not applicable, so no root is (its `requires` does not depend on the root).
    bool covered[2] = {false, false}, none_apply[2] = {false, false};
    const std::vector<int64_t> roots = roots_for(s, p, opt);
    for (int64_t root : roots)
      for (bool commutative : comm_values) {
        if (root != 0 && sym_applies(commutative) && (covered[commutative] || none_apply[commutative])) {
          if (covered[commutative]) {
            ++rep.rotated;
            ++rep.by_symmetry;
            ++rep.instances;
            any_applicable = true;
            if (!collective_reduces(s.collective)) noncomm_applicable = true;
          }
          continue;
        }
        Schedule sch;
        std::string unmet;
        InstanceRequest req{p, root, commutative};
        req.translation = &tsym;
        const InstStatus st = instantiate(rp, req, sch, diags, &unmet);
        rep.by_translation += st == InstStatus::ok && sch.shifted == Schedule::Shifted::yes;
        rep.translation_refuted += sch.shifted == Schedule::Shifted::refuted;
        if (st == InstStatus::not_applicable) {
          if (root == 0 && sym_applies(commutative)) none_apply[commutative] = true;
          if (unmet_here.empty()) unmet_here = unmet;
          if (rooted && commutative == comm_values.front()) {
            roots_out.roots.push_back(root);
            if (roots_out.unmet.empty()) roots_out.unmet = unmet;
          }
          if (!commutative) {  // refused for non-commutative operators
            order_here = false;
            if (rep.order_unmet.empty()) {
              rep.order_unmet_p = p;
              rep.order_unmet = unmet;
            }
          }
          continue;
        }
        if (st == InstStatus::ok) {
          // Root R whose instance is the root-0 instance rotated by R: the root-0 proof
          // covers it, except the reduction order (left operand = lower real rank), so
          // non-commutative reducing instances are always verified.
          const bool order_matters = collective_reduces(s.collective) && !commutative;
          if (opt.rotation && root != 0 && have_base[commutative] && !order_matters &&
              rotation_mismatch(base[commutative], sch).empty()) {
            ++rep.rotated;
            ++rep.instances;
            any_applicable = true;
            if (!collective_reduces(s.collective)) noncomm_applicable = true;
            continue;
          }
          const VerifyResult v = verify(sch, diags, opt.verify);
          if (v.accounted_bytes > rep.max_accounted_bytes) {
            rep.max_accounted_bytes = v.accounted_bytes;
            rep.max_instance_bytes = v.instance_bytes;
            rep.max_bytes_p = p;
            rep.max_bytes_root = root;
          }
          if (v.ok) {
            ++rep.instances;
            any_applicable = true;
            if (!commutative || !collective_reduces(s.collective)) {
              noncomm_applicable = true;
              if (!v.order_preserving && !rep.order_witness.found() && v.order_witness.found()) {
                rep.order_witness = v.order_witness;
                rep.order_witness_p = p;
                rep.order_witness_root = root;
              }
              rep.order_preserving &= v.order_preserving;
              order_here &= v.order_preserving;
            }
            if (!v.same_bracketing && !rep.bracketing_witness.found() && v.bracketing_witness.found()) {
              rep.bracketing_witness = v.bracketing_witness;
              rep.bracketing_witness_p = p;
              rep.bracketing_witness_root = root;
            }
            rep.same_bracketing &= v.same_bracketing;
            rep.keeps_blocks &= v.keeps_blocks;
            rep.direct &= v.direct;
            if (rooted && root == 0 && sym_applies(commutative) &&
                (!sym.rank_blocks || pairing_for_every_root(sch).empty())) {
              covered[commutative] = true;
              base[commutative] = std::move(sch);  // for the cross-check below
            } else if (rooted && root == 0) {
              base[commutative] = std::move(sch);
              have_base[commutative] = true;
            } else if (rooted && have_base[commutative] && !order_matters) {
              ++rep.rotation_failed;  // verified instead
            }
            continue;
          }
          rep.has_failed_instance = true;
          rep.failed_instance = std::move(sch);
          rep.counterexample = v.counterexample;
        }
        rep.ok = false;
        rep.failed_p = p;
        rep.failed_root = root;
        return rep;
      }
    // Defence in depth: where the symmetry covers the roots, one of them is built anyway. It
    // must be root 0's verified instance rotated (not applicable where root 0 is not), which
    // proves it (rotation.h); else it is verified like any instance (a failure is its
    // counterexample), the proof is wrong, and every p is checked again without it.
    if (rooted && p >= 2)
      for (bool commutative : comm_values) {
        if (!sym_applies(commutative) || !(covered[commutative] || none_apply[commutative])) continue;
        const int64_t root = symmetry_spot_root(p);
        Schedule sch;
        const InstStatus st = instantiate(rp, InstanceRequest{p, root, commutative}, sch, diags);
        ++rep.spot_checked;
        std::string contradiction;
        if (st == InstStatus::error) {
          rep.ok = false;
          rep.failed_p = p;
          rep.failed_root = root;
          return rep;
        } else if (none_apply[commutative]) {
          if (st != InstStatus::not_applicable) contradiction = "it applies where root 0 does not";
        } else if (st != InstStatus::ok) {
          contradiction = "it is not applicable where root 0 is";
        } else if (!(contradiction = rotation_mismatch(base[commutative], sch)).empty()) {
          const VerifyResult v = verify(sch, diags, opt.verify);
          if (!v.ok) {
            rep.ok = false;
            rep.failed_p = p;
            rep.failed_root = root;
            rep.has_failed_instance = true;
            rep.failed_instance = std::move(sch);
            rep.counterexample = v.counterexample;
            return rep;
          }
        }
        if (!contradiction.empty()) {
          const std::string where = "p=" + std::to_string(p) + " root=" + std::to_string(root);
          diags.warning(s.name_span, where + ": the instance is not root 0's rotated (" + contradiction +
                                         "), which the root symmetry proved: every p is checked again without it");
          CheckOptions plain = opt;
          plain.symmetry = false;
          CheckReport again = check_schedule(rp, plain, diags);
          again.symmetry_reason = "the proof does not hold at " + where;
          return again;
        }
      }
    if (rooted && p > opt.all_roots_up_to) {
      // Above the sampling bound the symmetry still covers every root: the roots not
      // sampled count as proved; p is sampled only where some instances are not covered.
      bool sampled = false;
      for (bool commutative : comm_values) {
        if (!sym_applies(commutative) || !(covered[commutative] || none_apply[commutative])) sampled = true;
        if (sym_applies(commutative) && covered[commutative]) {
          const int64_t rest = p - int64_t(roots.size());
          rep.rotated += rest;
          rep.by_symmetry += rest;
          rep.instances += rest;
        }
      }
      if (sampled) rep.sampled_p.push_back(p);
    }
    if (!any_applicable) {
      rep.not_applicable.push_back(p);
      rep.unmet_by_p.push_back(unmet_here);
      if (rep.unmet.empty()) rep.unmet = unmet_here;
    } else if (!roots_out.roots.empty()) {
      rep.excluded_roots.push_back(std::move(roots_out));
    }
    if (noncomm_applicable && order_here) rep.order_p.push_back(p);
  }
  if (rep.order_p.empty()) rep.order_preserving = false;
  return rep;
}

std::string summary_line(const ScheduleDecl& s, const CheckReport& r, const CheckOptions& opt) {
  std::string l = s.name + " (" + collective_name(s.collective) + "): ";
  if (!r.ok) {
    l += "FAILED at p=" + std::to_string(r.failed_p);
    if (collective_is_rooted(s.collective)) l += " root=" + std::to_string(r.failed_root);
    return l;
  }
  l += "verified p=" + std::to_string(opt.p_lo) + ".." + std::to_string(opt.p_hi) + ", " + std::to_string(r.instances) +
       " instance" + (r.instances == 1 ? "" : "s");
  if (r.rotated > 0) l += " (" + std::to_string(r.rotated) + " by rotation of root 0)";
  if (!r.not_applicable.empty())
    l += " (requires '" + r.unmet + "' excludes " + std::to_string(r.not_applicable.size()) + " p)";
  if (!r.excluded_roots.empty()) {
    // A root-dependent `requires`: which roots it refuses, at the first such p.
    const CheckReport::ExcludedRoots& e = r.excluded_roots.front();
    std::string roots;
    for (size_t i = 0; i < e.roots.size() && i < 8; ++i) roots += (i ? ", " : "") + std::to_string(e.roots[i]);
    if (e.roots.size() > 8) roots += ", ...";
    l += " (requires '" + e.unmet + "' excludes roots at " + std::to_string(r.excluded_roots.size()) + " p: at p=" +
         std::to_string(e.p) + " roots " + roots + "; --json lists them all)";
  }
  if (!r.sampled_p.empty()) {
    l += "; roots 0, 1, p/2, p-1 only for p=" + std::to_string(r.sampled_p.front()) + ".." + std::to_string(r.sampled_p.back()) +
         " (--all-roots-up-to " + std::to_string(opt.all_roots_up_to) + ")";
    // Why the root symmetry did not cover the other roots (symmetry.h).
    if (!r.symmetric && !r.symmetry_reason.empty())
      l += " (no root symmetry: " + r.symmetry_reason +
           (r.symmetry_line ? ", line " + std::to_string(r.symmetry_line) : std::string()) + ")";
    else if (r.symmetric && collective_reduces(s.collective))
      l += " (the root symmetry does not cover non-commutative reductions: their order follows the real ranks)";
  }
  if (r.translation_refuted)
    l += "; the translation symmetry's spot rank differed at " + std::to_string(r.translation_refuted) +
         " instances (built rank by rank instead; a bug of the symmetry analysis, please report)";
  if (collective_reduces(s.collective))
    l += std::string("; order-preserving: ") + (r.order_preserving ? "yes" : "no") +
         "; same bracketing on all ranks: " + (r.same_bracketing ? "yes" : "no");
  return l;
}

namespace {

std::string instance_words(const ScheduleDecl& s, int64_t p, int64_t root) {
  return "p=" + std::to_string(p) + (collective_is_rooted(s.collective) ? " root=" + std::to_string(root) : std::string());
}

}  // namespace

std::string witness_lines(const ScheduleDecl& s, const CheckReport& r) {
  if (!r.ok || !collective_reduces(s.collective)) return "";
  std::string l;
  if (!r.order_preserving) {
    const ReductionWitness& w = r.order_witness;
    if (w.found())
      l += "  not order-preserving: at " + instance_words(s, r.order_witness_p, r.order_witness_root) + ", rank " +
           std::to_string(w.rank) + ", block " + std::to_string(w.block) + " holds " + w.bracketing + ": " + w.reason + "\n";
    else if (!r.order_unmet.empty())
      l += "  not order-preserving: its instances for non-commutative operators do not apply (at p=" +
           std::to_string(r.order_unmet_p) + ": requires '" + r.order_unmet + "')\n";
  }
  if (!r.same_bracketing && r.bracketing_witness.found()) {
    const ReductionWitness& w = r.bracketing_witness;
    l += "  not the same bracketing: at " + instance_words(s, r.bracketing_witness_p, r.bracketing_witness_root) +
         ", block " + std::to_string(w.block) + ": rank " + std::to_string(w.rank) + " holds " + w.bracketing + ", rank " +
         std::to_string(w.other_rank) + " holds " + w.other_bracketing + (w.reason.empty() ? "" : "; " + w.reason) + "\n";
  }
  return l;
}

std::string report_json(const ScheduleDecl& s, const CheckReport& r, const CheckOptions& opt) {
  nlohmann::json j;
  j["schedule"] = s.name;
  j["collective"] = collective_name(s.collective);
  j["ok"] = r.ok;
  j["p_lo"] = opt.p_lo;
  j["p_hi"] = opt.p_hi;
  j["instances"] = r.instances;
  j["rotated_roots"] = r.rotated;
  j["rotation_failed"] = r.rotation_failed;
  if (collective_is_rooted(s.collective)) {
    nlohmann::json sj = {{"proved", r.symmetric}, {"roots", r.by_symmetry}};
    if (!r.symmetric && !r.symmetry_reason.empty()) {
      sj["reason"] = r.symmetry_reason;
      if (r.symmetry_line) sj["line"] = r.symmetry_line;
    }
    j["root_symmetry"] = sj;
  }
  if (!collective_is_rooted(s.collective) && opt.symmetry) {
    nlohmann::json tj = {{"proved", r.translation}, {"shifted_instances", r.by_translation}};
    if (r.translation_refuted) tj["refuted_instances"] = r.translation_refuted;
    if (!r.translation && !r.translation_reason.empty()) {
      tj["reason"] = r.translation_reason;
      if (r.translation_line) tj["line"] = r.translation_line;
    }
    j["translation_symmetry"] = tj;
  }
  if (!r.sampled_p.empty()) j["sampled_roots_p"] = {r.sampled_p.front(), r.sampled_p.back()};
  nlohmann::json ex = nlohmann::json::array();
  for (size_t i = 0; i < r.not_applicable.size(); ++i)
    ex.push_back({{"p", r.not_applicable[i]}, {"requires", i < r.unmet_by_p.size() ? r.unmet_by_p[i] : r.unmet}});
  j["excluded"] = ex;
  if (collective_is_rooted(s.collective)) {
    nlohmann::json er = nlohmann::json::array();
    for (const CheckReport::ExcludedRoots& e : r.excluded_roots)
      er.push_back({{"p", e.p}, {"roots", e.roots}, {"requires", e.unmet}});
    j["excluded_roots"] = er;
  }
  if (collective_reduces(s.collective)) {
    j["order_preserving"] = r.ok && r.order_preserving;
    j["same_bracketing"] = r.ok && r.same_bracketing;
    if (r.ok && !r.order_preserving && r.order_witness.found()) {
      const ReductionWitness& w = r.order_witness;
      j["order_witness"] = {{"p", r.order_witness_p}, {"root", r.order_witness_root}, {"rank", w.rank},
                            {"block", w.block}, {"bracketing", w.bracketing}, {"reason", w.reason}};
    } else if (r.ok && !r.order_preserving && !r.order_unmet.empty()) {
      j["order_witness"] = {{"p", r.order_unmet_p}, {"requires", r.order_unmet}};
    }
    if (r.ok && !r.same_bracketing && r.bracketing_witness.found()) {
      const ReductionWitness& w = r.bracketing_witness;
      j["bracketing_witness"] = {{"p", r.bracketing_witness_p}, {"root", r.bracketing_witness_root}, {"block", w.block},
                                 {"ranks", {w.rank, w.other_rank}}, {"bracketings", {w.bracketing, w.other_bracketing}},
                                 {"reason", w.reason}};
    }
  }
  if (!r.ok) j["failed"] = {{"p", r.failed_p}, {"root", r.failed_root}};
  return j.dump();
}

LandingReport landing_schedule(const Program& program, const ScheduleDecl& s, const CheckOptions& opt,
                               DiagnosticSink& diags) {
  RankProgram rp;
  if (!lower(program, s, rp, diags)) return LandingReport{};
  return landing_schedule(rp, opt);
}

LandingReport landing_schedule(const RankProgram& rp, const CheckOptions& opt) {
  LandingReport rep;
  const ScheduleDecl& s = *rp.decl;
  const int64_t hi = std::min(opt.p_hi, kLandingMaxRanks);
  if (opt.p_lo > hi) return rep;
  rep.analysed = true;
  rep.p_lo = opt.p_lo;
  rep.p_hi = hi;
  const bool rooted = collective_is_rooted(s.collective);
  const bool symmetric = rooted && root_symmetry(rp).proved;
  std::vector<InstanceRequest> todo;
  for (int64_t p = opt.p_lo; p <= hi; ++p)
    for (int64_t root : symmetric ? std::vector<int64_t>{0} : roots_for(s, p, opt))
      for (bool commutative : commutative_values(s)) todo.push_back({p, root, commutative});
  std::set<std::pair<const Origin*, const Origin*>> seen;  // (send, recv) origins already staged together
  for (bool changed = true; changed;) {
    changed = false;
    ++rep.passes;
    rep.instances = 0;
    rep.count = {};
    for (const InstanceRequest& req : todo) {
      Schedule sch;
      DiagnosticSink quiet;
      if (instantiate(rp, req, sch, quiet) != InstStatus::ok) continue;
      ++rep.instances;
      for (std::vector<LandingViolation> v = check_landing(sch, rep.layout); !v.empty(); v = check_landing(sch, rep.layout)) {
        for (LandingViolation& x : v) {
          const bool news = x.send && rep.layout.staged_sends.insert(x.send).second;
          const bool newr = x.recv && rep.layout.staged_recvs.insert(x.recv).second;
          if ((news || newr) && seen.insert({x.send, x.recv}).second) rep.staged.push_back({std::move(x), req.p, req.root});
          changed |= news || newr;
        }
      }
      const LandingCount c = count_landing(sch, rep.layout);
      rep.count.direct += c.direct;
      rep.count.transfers += c.transfers;
    }
  }
  return rep;
}

std::string landing_lines(const LandingReport& r) {
  if (!r.analysed)
    return "  landing layout: not analysed (p above " + std::to_string(kLandingMaxRanks) + ")\n";
  std::string l = "  landing layout (p=" + std::to_string(r.p_lo) + ".." + std::to_string(r.p_hi) + ", " +
                  std::to_string(r.instances) + " instance" + (r.instances == 1 ? "" : "s") + "): " +
                  std::to_string(r.count.direct) + " of " + std::to_string(r.count.transfers) +
                  " transfers land directly in the receiver's vector, proved\n";
  for (const LandingReport::Staged& st : r.staged)
    l += "    staged: " + origin_words(st.v.send) + " -> " + origin_words(st.v.recv) + ": at p=" + std::to_string(st.p) +
         (st.root ? " root=" + std::to_string(st.root) : std::string()) + ", " + st.v.message + "\n";
  return l;
}

std::string landing_json(const LandingReport& r) {
  static const char* kinds[] = {"notices", "copy", "overlap", "early"};
  nlohmann::json j = {{"analysed", r.analysed}};
  if (!r.analysed) return j.dump();
  j["p_lo"] = r.p_lo;
  j["p_hi"] = r.p_hi;
  j["instances"] = r.instances;
  j["direct"] = r.count.direct;
  j["transfers"] = r.count.transfers;
  nlohmann::json st = nlohmann::json::array();
  for (const LandingReport::Staged& s : r.staged)
    st.push_back({{"send", origin_words(s.v.send)}, {"recv", origin_words(s.v.recv)}, {"kind", kinds[s.v.kind]},
                  {"p", s.p}, {"root", s.root}, {"message", s.v.message}});
  j["staged"] = st;
  return j.dump();
}

}  // namespace bine
