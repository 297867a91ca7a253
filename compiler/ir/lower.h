// Lowering: the Program IR of one schedule -> its RankProgram, the rank-parametric program
// that the interpreter (instantiate.cpp) and every emitter (emit/) read
// (docs/architecture.md, "The lowered program").
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "ast.h"

namespace bine {

/// A parameter bound once per call: `slot = value`, evaluated in order before anything
/// else of its scope (a value may read earlier bindings of its scope, p, r, root,
/// commutative and fns).
struct Binding {
  std::string name;
  Span span;        ///< the param's declaration
  int slot = -1;    ///< in the RankProgram's one frame
  ExprPtr value;    ///< the default (the param's own scope) or the caller's override (the caller's scope)
  bool overridden = false;  ///< the value is the caller's `SCHEDULE(name = ...)`
};

/// One `phase NAME = SCHEDULE(...)`, inlined. Its params are bound and its `requires`,
/// block count, scratch count and segment size are checked up front, after the top
/// schedule's (hoisted: a false requirement fails on every rank before the fold's
/// prologue, helpers included), uses in pre-order, each after its parent.
struct InlinedUse {
  const ScheduleDecl* schedule = nullptr;  ///< the used schedule (names and spans only)
  const Stmt* site = nullptr;  ///< the lowered `use` statement; its body holds the inlined statements
  int parent = -1;             ///< the enclosing use (index in RankProgram::uses), -1: the top schedule
  /// `on region|across`: the sub-group it runs on (its p, r and blocks are the group's size,
  /// index and its own block count; its params, requires and checks are evaluated there);
  /// none: the caller's ranks and blocks. Sub-groups do not nest.
  GroupKind group = GroupKind::none;
  std::string path;            ///< phase names from the top, e.g. "reduce_scatter" or "whole.rs"
  int slot_base = 0;           ///< the used schedule's slot 0 in the one frame
  int phase_base = 0;          ///< the used schedule's phase 0 among the program's phase ids
  int fn_base = 0, fn_count = 0;  ///< its local fns: RankProgram::fns[fn_base, fn_base + fn_count)
  std::vector<Binding> params;
  std::vector<ExprPtr> requires_;  ///< each must hold (else an error: the caller is wrong, not inapplicable)
  ExprPtr blocks;    ///< must divide the caller's block count (fewer are rescaled: GroupKind::whole; on a sub-group: divide the window); null: not declared
  ExprPtr scratch;   ///< at most the caller's scratch count; null: not declared
  ExprPtr segment;   ///< in force inside (bytes, >= 0); null: the caller's
};

/// The lowered, rank-parametric program of one schedule: composition inlined (one frame
/// of slots, one numbering of phases, one fn table), params bound, composed requirements
/// hoisted, the fold kind explicit and the final statement marked (`Stmt::at_end`: a
/// `mirror` there is the final mirror that `fold 3-2` fuses with its epilogue).
///
/// Expressions and statements are copies of the Program IR with rebased slots, phase ids
/// and fn indices (`Expr::fn >= 0` indexes `fns`; `<= -2` the Program's top-level fns,
/// which read no slots); spans are the source's, so diagnostics point at the source text.
/// A lowered `use` statement keeps its kind, name and callee; `Stmt::use` indexes `uses`
/// and its `body` is the used schedule's body.
struct RankProgram {
  const Program* program = nullptr;   ///< top-level fns, file names
  const ScheduleDecl* decl = nullptr; ///< the top schedule (name, spans)
  std::string name;
  Collective collective = Collective::allreduce;
  FoldKind fold = FoldKind::none;
  int64_t fold_ring = 0;  ///< R of `fold ring R`, else 0
  Span fold_span;
  int num_slots = 0;                   ///< the one frame
  std::vector<std::string> slot_names; ///< [slot] the source name, qualified by its use's path
  int num_phases = 0;
  std::vector<FnDecl> fns;             ///< the top schedule's local fns, then each use's
  int top_fn_count = 0;                ///< fns[0, top_fn_count) are the top schedule's
  std::vector<Binding> params;         ///< the top schedule's
  std::vector<ExprPtr> requires_;      ///< the top schedule's: false -> not applicable
  ExprPtr blocks;                      ///< null: `blocks p`
  ExprPtr scratch;                     ///< null: 0
  ExprPtr segment;                     ///< null: unsegmented
  std::vector<InlinedUse> uses;        ///< pre-order
  bool has_mirror = false;             ///< some `mirror` statement (the pipeline must log body rounds)
  Block body;
};

/// The most `phase NAME = SCHEDULE` expansions one schedule may inline (a schedule that
/// uses another twice, nested, doubles the count at every level).
constexpr size_t kMaxInlinedUses = 4096;

/// Lowers `decl` (checked by sema, without errors). Returns false after reporting a
/// diagnostic when the composition expands to more than kMaxInlinedUses uses.
bool lower(const Program& program, const ScheduleDecl& decl, RankProgram& out, DiagnosticSink& diags);

/// The program as text (`bine-cc lower`): header, frame, bindings, hoisted checks, body,
/// one statement per line; deterministic.
void print_rank_program(const RankProgram& rp, std::ostream& os);

}  // namespace bine
