// The syntax tree of the schedule language. After sema (dsl/sema.h) the tree is the
// Program IR: every name is resolved to a slot or a built-in, every expression is typed,
// and the round structure is fixed (docs/architecture.md, "Program IR"). Nodes keep the
// source span that later diagnostics and schedule ops point at.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bine/collective.hpp"
#include "token.h"

namespace bine {

enum class Type { error, integer, boolean, set };
const char* type_name(Type t);

enum class ExprKind {
  integer, boolean, name, unary, binary, ternary, call,
  set_all, set_none, set_block, set_range, set_wrap, set_stride, set_filter,
};

/// What a name refers to after sema.
enum class NameKind { unresolved, p, r, root, commutative, slot, fn_param };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  Span span;
  Type type = Type::error;
  int64_t value = 0;   ///< integer / boolean literal
  std::string name;    ///< name, callee, or filter variable
  Tok op = Tok::eof;   ///< unary / binary operator
  std::vector<ExprPtr> kids;
  // resolution (sema)
  NameKind ref = NameKind::unresolved;
  int slot = -1;       ///< slot (name, set_filter variable) or fn parameter index
  int builtin = -1;    ///< call: index in builtin table, or -1 for a user fn
  int fn = -1;         ///< call: index of the user fn in Program::fns
};

enum class StmtKind { let, var, assign, for_, if_, send, recv, exchange, phase, mirror, use, permute, round_block, local, frames };

/// How a `frames` schedule chooses the packet a frame's arc u>v carries in a step, among
/// the packets u holds and v lacks at the start of the step (docs/language.md, "frames").
enum class PacketRule {
  lowest,    ///< the lowest packet id: every node receives packets 0, 1, 2, ... in order
  potential,  ///< BBS Algorithm 1 (forward potential): the packet that the most neighbours of
              ///< v lack; ties: the lowest id (Lu et al., "A New Broadcast Model ...", Sec. 2.3)
  stream      ///< `packet stream K` (ours, docs/bbs.md "Streams"): arc u>v:J carries the lowest
              ///< packet q with q mod K = J; the arcs of stream J are meant to form a spanning
              ///< arborescence, so each stream's packets flow down it in order
};
const char* packet_rule_name(PacketRule r);

/// The data of a `frames` statement: a topology, the root node the frames were built for,
/// and the frame cycle (BBS, Lu et al. Sec. 2.3; docs/language.md, "frames"). Node ids are
/// 0-based; rank x plays node (x - root + frames.root) mod nodes, so every root is served.
struct FramesData {
  int64_t nodes = 0;   ///< P: the topology's node count (the schedule applies at p = P only)
  int64_t root = 0;    ///< the node the frames' root sits on
  PacketRule rule = PacketRule::lowest;
  int64_t streams = 0;  ///< K of `packet stream K` (0 under the other rules)
  Span nodes_span, root_span, rule_span, links_span;
  std::vector<std::pair<int64_t, int64_t>> links;  ///< undirected links (u, v), as written
  std::vector<Span> link_spans;
  /// [frame] the arcs (sender, receiver) active in step t when t mod F is the frame's index
  std::vector<std::vector<std::pair<int64_t, int64_t>>> frames;
  std::vector<std::vector<Span>> arc_spans;
  /// [frame][arc] the stream J of `U>V:J`, -1 where the arc names none
  std::vector<std::vector<int64_t>> arc_streams;
  std::vector<Span> frame_spans;  ///< [frame] the `frame` line
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind;
  Span span;
  std::string name;  ///< let/var/assign target, loop variable, phase name
  std::string other; ///< mirror: the mirrored phase
  Span name_span;
  ExprPtr a, b, c;   ///< let/var/assign: a; for: a..b; if: a; send/recv: a=set, b=peer;
                     ///< exchange: a=out set, b=in set, c=peer; local: a=source, b=destination;
                     ///< use: c=the schedule's name, a=the `window` set (null: all blocks)
  /// use: `phase NAME = SCHEDULE on region|across [window S]`, the sub-group the used
  /// schedule runs on (docs/language.md, "Composition on sub-groups"); none: the caller's ranks.
  GroupKind group = GroupKind::none;
  Span group_span;   ///< use: the `on region|across` words
  bool reduce = false;  ///< recv/exchange/local: combine (else copy)
  Span reduce_span;  ///< recv/exchange: the 'reduce' keyword, when present
  Block body, else_body;
  // sema
  int slot = -1;             ///< declared or assigned slot
  bool communicates = false; ///< contains send/recv/exchange
  bool round = false;        ///< a round statement: one round per execution
  bool round_loop = false;   ///< a for at round level: one round per iteration
  bool round_level_if = false; ///< an if at round level whose branches hold round loops
  int phase_id = -1;         ///< phase / mirror: id; mirror: phase_id of the mirrored phase in `mirror_of`
  int mirror_of = -1;
  int target = -1;           ///< use: index of the composed schedule in Program::schedules
  /// use: `phase NAME = SCHEDULE(param = EXPR, ...)`, the used schedule's params set by the
  /// caller (evaluated in the caller's scope; `param` indexes the used schedule's params).
  struct Override {
    std::string name;
    Span span;
    ExprPtr value;
    int param = -1;
  };
  std::vector<Override> overrides;
  bool in_fn = false;        ///< a statement of a fn body: `slot` indexes the fn's frame
  /// frames: the topology and frame cycle (shared by the RankProgram's copy); `body` holds
  /// one empty `round_block` per frame, spanning its `frame` line (the origin of its ops).
  std::shared_ptr<const FramesData> frames;
  // lowered (compiler/ir/lower.h), in RankProgram copies only
  int use = -1;              ///< use: index in RankProgram::uses
  bool at_end = false;       ///< the statement ends the top-level body (through inlined uses)
};

struct FnDecl {
  std::string name;
  Span span, name_span;
  std::vector<std::string> params;
  std::vector<Span> param_spans;
  ExprPtr body;             ///< the result: `= EXPR`, or the `return EXPR` of a block body
  Block stmts;  ///< block body before `return` (let, var, =, for, if)
  int frame_size = 0;       ///< parameters plus locals (sema)
  Type result = Type::error;
};

struct Param {
  std::string name;
  Span span;
  ExprPtr init;
  int slot = -1;
};

// collective_name(), collective_from_name(), collective_is_rooted(),
// collective_has_rank_blocks(): bine/collective.hpp's table.



struct ScheduleDecl {
  std::string name;
  Span span, name_span;
  std::string collective_name;
  Span collective_span;
  Collective collective = Collective::allreduce;
  std::vector<ExprPtr> requires_;
  ExprPtr blocks;          ///< null: `blocks p`
  /// `segment E`: messages of the schedule's rounds are sent in pieces of at most E bytes
  /// (whole elements, at least one), each reduced as it arrives; 0 or null: unsegmented.
  ExprPtr segment;
  /// `scratch K`: K scratch buffers per rank besides the vector, each of the same B blocks;
  /// `buf(j, S)` names blocks S of buffer j (0: the vector). Null: none.
  ExprPtr scratch;
  Span fold_span;
  /// The elimination around the body: `fold` / `fold 2-1` (two_one), `fold 3-2`
  /// (three_two: Rabenseifner-Traeff, one 3-2 step and pairs of 2-1 steps fused with the
  /// body's first round; allreduce only), `fold ring R` (ring: RT Sec. 3.4, a ring of R
  /// consecutive ranks around the body, which runs on p / R virtual ranks and on part
  /// r mod R of the vector; docs/language.md, "fold ring").
  FoldKind fold = FoldKind::none;
  int64_t fold_ring = 0;   ///< R of `fold ring R`, else 0
  std::vector<Param> params;
  std::vector<FnDecl> fns; ///< fns local to the schedule
  Block body;
  // sema
  int num_slots = 0;
  std::vector<std::string> slot_names;
  int num_phases = 0;
  bool uses_commutative_requirement = false;  ///< a `requires` mentions `commutative`
  bool mentions_commutative = false;          ///< `commutative` appears anywhere in the schedule
};

struct Program {
  std::vector<std::unique_ptr<SourceFile>> files;
  std::vector<FnDecl> fns;  ///< top-level fns
  std::vector<ScheduleDecl> schedules;
};

}  // namespace bine
