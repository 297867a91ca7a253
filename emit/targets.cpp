#include "target.h"

#include <algorithm>

namespace bine {

const Target& mpi_target();  // emit/mpi/target.cpp

const std::vector<const Target*>& targets() {
  // Explicit list (static registration objects in a static library are dropped by the linker).
  static const std::vector<const Target*> all = {&mpi_target()};
  return all;
}

const Target* find_target(const std::string& name) {
  for (const Target* t : targets())
    if (name == t->name()) return t;
  return nullptr;
}

std::string target_names() {
  std::string s;
  for (const Target* t : targets()) s += (s.empty() ? "" : ", ") + std::string(t->name());
  return s;
}

bool valid_prefix(const std::string& prefix) {
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = prefix[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

namespace {

/// The first statement kind of `b` (nested blocks included) the features lack, or empty.
std::string unsupported_stmt(const Block& b, const TargetFeatures& f) {
  for (const StmtPtr& st : b) {
    if (st->kind == StmtKind::permute && !f.permute) return "'permute'";
    if (st->kind == StmtKind::local && !f.scratch) return "local 'reduce'/'copy'";
    if (st->kind == StmtKind::use && !f.composition) return "composition ('phase " + st->name + " = ...')";
    std::string inner = unsupported_stmt(st->body, f);
    if (inner.empty()) inner = unsupported_stmt(st->else_body, f);
    if (!inner.empty()) return inner;
  }
  return "";
}

std::string unsupported_decl(const Program& program, const ScheduleDecl& s, const TargetFeatures& f, bool top,
                             int depth) {
  if (top && std::find(f.collectives.begin(), f.collectives.end(), s.collective) == f.collectives.end())
    return std::string(collective_name(s.collective)) + " schedules";
  if (top) {  // a composed schedule's fold is not applied (the caller's governs)
    if (s.fold == FoldKind::ring && !f.fold_ring) return "'fold ring " + std::to_string(s.fold_ring) + "'";
    if (s.fold == FoldKind::three_two && !f.fold_three_two) return "'fold 3-2'";
    if (s.fold == FoldKind::two_one && !f.fold_two_one) return "'fold'";
  }
  if (s.scratch && !f.scratch) return "'scratch'";
  if (s.segment && !f.segment) return "'segment'";
  std::string why = unsupported_stmt(s.body, f);
  if (!why.empty()) return why;
  if (depth > 64) return "";  // sema rejects recursive composition; this only bounds the walk
  std::vector<const Block*> work{&s.body};
  while (!work.empty()) {
    const Block* b = work.back();
    work.pop_back();
    for (const StmtPtr& st : *b) {
      work.push_back(&st->body);
      work.push_back(&st->else_body);
      if (st->kind != StmtKind::use || st->target < 0) continue;
      const ScheduleDecl& t = program.schedules[size_t(st->target)];
      why = unsupported_decl(program, t, f, false, depth + 1);
      if (!why.empty()) return why + " (in composed schedule " + t.name + ")";
    }
  }
  return "";
}

}  // namespace

std::string unsupported(const Target& target, const Program& program, const ScheduleDecl& s) {
  return unsupported_decl(program, s, target.features(), true, 0);
}

}  // namespace bine
