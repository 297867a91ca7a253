// The Target interface's shared parts (emit/target.h): prefix check, the round pipeline's
// features, and the feature check every target's schedules go through.
#include "target.h"

#include <algorithm>

namespace bine {

bool valid_prefix(const std::string& prefix) {
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = prefix[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

namespace {

/// The first statement kind of `b` (nested blocks and inlined uses included) the features
/// lack, or empty; inside an inlined use, named with " (in composed schedule NAME)".
std::string unsupported_stmt(const RankProgram& rp, const Block& b, const TargetFeatures& f) {
  for (const StmtPtr& st : b) {
    if (st->kind == StmtKind::permute && !f.permute) return "'permute'";
    if (st->kind == StmtKind::frames && !f.frames) return "'frames'";
    if (st->kind == StmtKind::local && !f.scratch) return "local 'reduce'/'copy'";
    if (st->kind == StmtKind::use && !f.composition) return "composition ('phase " + st->name + " = ...')";
    std::string inner;
    if (st->kind == StmtKind::use && st->use >= 0) {
      const InlinedUse& u = rp.uses[size_t(st->use)];
      if (u.scratch && !f.scratch) inner = "'scratch'";
      else if (u.segment && !f.segment) inner = "'segment'";
      else inner = unsupported_stmt(rp, st->body, f);
      if (!inner.empty()) return inner + " (in composed schedule " + u.schedule->name + ")";
      continue;
    }
    inner = unsupported_stmt(rp, st->body, f);
    if (inner.empty()) inner = unsupported_stmt(rp, st->else_body, f);
    if (!inner.empty()) return inner;
  }
  return "";
}

}  // namespace

const TargetFeatures& round_pipeline_features() {
  static const TargetFeatures f = [] {
    TargetFeatures x;
    x.collectives = {Collective::allreduce, Collective::bcast,   Collective::reduce,         Collective::allgather,
                     Collective::gather,    Collective::scatter, Collective::reduce_scatter, Collective::alltoall,
                     Collective::scan,      Collective::exscan,  Collective::barrier};
    x.fold_two_one = x.fold_three_two = x.fold_ring = true;
    x.scratch = x.segment = x.permute = x.composition = x.frames = true;
    return x;
  }();
  return f;
}

std::string unsupported(const Target& target, const RankProgram& rp) {
  const TargetFeatures& f = target.features();
  if (std::find(f.collectives.begin(), f.collectives.end(), rp.collective) == f.collectives.end())
    return std::string(collective_name(rp.collective)) + " schedules";
  // A composed schedule's fold is not applied (the caller's governs): the lowered program
  // has one fold.
  if (rp.fold == FoldKind::ring && !f.fold_ring) return "'fold ring " + std::to_string(rp.fold_ring) + "'";
  if (rp.fold == FoldKind::three_two && !f.fold_three_two) return "'fold 3-2'";
  if (rp.fold == FoldKind::two_one && !f.fold_two_one) return "'fold'";
  if (rp.scratch && !f.scratch) return "'scratch'";
  if (rp.segment && !f.segment) return "'segment'";
  return unsupported_stmt(rp, rp.body, f);
}

}  // namespace bine
