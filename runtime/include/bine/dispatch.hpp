// bine/dispatch.hpp: choosing a generated schedule per call from a selection table
// (docs/pmpi.md, "Selection table"). Shared by the PMPI drop-in library (pmpi/bine_pmpi.cpp)
// and by the dispatchers `bine-cc compile --dispatch TABLE` generates (`<prefix><collective>`,
// docs/cli.md "compile", docs/rewrite.md), so both read a table the same way.
//
// A table is, per collective, an ordered list of rules; a rule matches a call when p and the
// call's message bytes lie in its closed ranges. The first matching rule decides: a rule
// naming "mpi" sends the call to the MPI library's own collective; a rule naming a schedule
// serves it when the schedule applies at p (its `requires`, its verified range) and, for a
// non-commutative operator, when the verifier proved it order-preserving; otherwise the walk
// goes on to the next rule. No rule left: the MPI library's collective.
//
// The proofs decide what a rule may serve (docs/pmpi.md, "What the proofs allow"): a call
// whose operator is not commutative needs a schedule proved order-preserving at p; a call
// whose result depends on how the reduction is bracketed (any user operator, and the
// predefined operators on any type but the exact integer, logical and byte types:
// floating-point SUM and PROD round differently per bracketing, MIN and MAX differ on NaN
// and signed zeros) needs a schedule proved to give the same bracketing on all ranks, so
// that every rank ends with the same bits (MPI 4.0 Sec. 6.9.1 "advice to implementors").
// A rule with "any_bracketing": true, or BINE_PMPI_SAME_BRACKETING=0 in the PMPI library,
// lifts the second condition.
#pragma once
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "bine/mpi_runtime.hpp"

namespace bine::mpi {

/// One generated schedule as a table sees it: its C name, its applicability test
/// (`<name>_applicable(p)`: 1 applies, 0 `requires` false, -1 outside the verified range),
/// whether the verifier proved it order-preserving (safe for non-commutative operators) and
/// whether it proved that every rank combines the contributions with the same bracketing
/// (same bits on all ranks for any operator); both true for collectives without operator.
/// The registry's X(function, order_preserving, same_bracketing) gives both.
struct ScheduleInfo {
  const char* name;
  int (*applicable)(int);
  bool order_preserving;
  bool same_bracketing;
};

/// What a call asks of a schedule's proofs, beyond applying at p.
struct CallNeeds {
  bool order_preserving = false;  ///< the operator is not commutative
  bool same_bracketing = false;   ///< the operator's result depends on the bracketing
};

/// Why dispatch_choose() passed over matching rules (bits of its `*passed`).
constexpr unsigned kPassedNotApplicable = 1;  ///< the schedule does not apply at p (or is not usable)
constexpr unsigned kPassedOrder = 2;          ///< not proved order-preserving, operator not commutative
constexpr unsigned kPassedBracketing = 4;     ///< not proved same-bracketing, operator needs it

/// One rule of a selection table: closed ranges of p and of message bytes (the PMPI
/// library's definition, docs/pmpi.md: the whole vector for allreduce, reduce, bcast, scan,
/// exscan; one rank's block for the rank-indexed collectives; 0 for barrier) and the
/// schedule, an index into the collective's ScheduleInfo array, or kRuleMpi.
struct DispatchRule {
  static constexpr int kRuleMpi = -1;
  int64_t p_min = 1, p_max = std::numeric_limits<int64_t>::max();
  uint64_t bytes_min = 0, bytes_max = std::numeric_limits<uint64_t>::max();
  int schedule = kRuleMpi;
  /// The table's "any_bracketing": the schedule also serves operators that need the same
  /// bracketing on all ranks where it is not proved to give it (ranks may differ in bits).
  bool any_bracketing = false;
};

/// dispatch_choose()'s answers other than a schedule index.
constexpr int kChooseRuleMpi = -1;  ///< the first matching rule names "mpi"
constexpr int kChooseNoRule = -2;   ///< no rule matches with a schedule that fits the call

/// 0 when schedule `i` of `info` can serve a call on p ranks with these needs, else the
/// kPassed* bit that says why not.
inline unsigned schedule_misfit(const ScheduleInfo* info, int i, int p, CallNeeds needs) {
  if (info[i].applicable(p) != 1) return kPassedNotApplicable;
  if (needs.order_preserving && !info[i].order_preserving) return kPassedOrder;
  if (needs.same_bracketing && !info[i].same_bracketing) return kPassedBracketing;
  return 0;
}
inline bool schedule_fits(const ScheduleInfo* info, int i, int p, CallNeeds needs) {
  return schedule_misfit(info, i, p, needs) == 0;
}

/// The table walk (see the file comment): the index of the schedule serving the call, or
/// kChooseRuleMpi / kChooseNoRule. `rules` holds n rules in table order. `usable`, when not
/// null, is parallel to `info`: schedules marked false are passed over like ones that do not
/// apply (the PMPI library: MPI_Reduce_scatter with unequal counts needs an irregular form).
/// `passed`, when not null, receives the kPassed* bits of the matching rules passed over (the
/// PMPI library's report says why a call fell back). No MPI calls.
inline int dispatch_choose(const DispatchRule* rules, size_t n, const ScheduleInfo* info, int p, uint64_t bytes,
                           CallNeeds needs, const bool* usable = nullptr, unsigned* passed = nullptr) {
  unsigned why = 0;
  for (size_t k = 0; k < n; ++k) {
    const DispatchRule& r = rules[k];
    if (p < r.p_min || p > r.p_max || bytes < r.bytes_min || bytes > r.bytes_max) continue;
    if (r.schedule == DispatchRule::kRuleMpi) {
      if (passed) *passed = why;
      return kChooseRuleMpi;
    }
    CallNeeds nd = needs;
    if (r.any_bracketing) nd.same_bracketing = false;
    const unsigned m = usable && !usable[r.schedule] ? kPassedNotApplicable : schedule_misfit(info, r.schedule, p, nd);
    if (m == 0) return r.schedule;
    why |= m;
  }
  if (passed) *passed = why;
  return kChooseNoRule;
}

/// True for the predefined datatypes on which every predefined operator is exact (integer,
/// logical, byte and character types, and the integer pair types of MINLOC / MAXLOC): the
/// result has the same bits however the reduction is bracketed or ordered.
inline bool exact_type(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return false;
  for (MPI_Datatype e : {MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT,
                         MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT,
                         MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
                         MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL, MPI_AINT, MPI_OFFSET, MPI_COUNT,
                         MPI_2INT, MPI_SHORT_INT, MPI_LONG_INT, MPI_INTEGER, MPI_LOGICAL, MPI_CHARACTER,
                         MPI_2INTEGER})
    if (t == e) return true;
  return false;
}

/// True when a reduction with `op` on `type` may give other bits for another bracketing of
/// the same operands: a user operator (MPI cannot tell), or a predefined one on a type that
/// is not exact_type() (floating point: SUM and PROD round, MIN and MAX pick between NaNs and
/// signed zeros by operand order), or on a derived type of such elements (decoded with
/// base_type(): one MPI_Type_get_envelope for a predefined type). False for MPI_OP_NULL.
inline bool bracketing_sensitive(MPI_Datatype type, MPI_Op op) {
  if (op == MPI_OP_NULL) return false;
  if (!builtin_op(op)) return true;
  return !exact_type(base_type(type));
}

/// What a generated dispatcher reads of a call before choosing.
struct CallShape {
  int p = 0;               ///< processes of the communicator
  uint64_t bytes = 0;      ///< message bytes as the table counts them
  bool commutative = true; ///< the operator's commutativity (true without one)
  bool same_bracketing = false;  ///< the operator needs the same bracketing on all ranks (bracketing_sensitive())
  /// The proofs this call needs of a schedule.
  CallNeeds needs() const { return CallNeeds{!commutative, same_bracketing}; }
};

/// p, bytes = count * size of `type` and the commutativity of `op` (MPI_OP_NULL: a
/// collective without an operator). False when the MPI library should take the call and
/// report its error, or cannot be served by a schedule: a null or inter-communicator, a
/// datatype or operator that MPI rejects (MPI_OP_NULL is allowed only as "no operator").
inline bool call_shape(MPI_Comm comm, uint64_t count, MPI_Datatype type, MPI_Op op, CallShape* s) {
  int inter = 0, size = 0, commute = 1;
  if (comm == MPI_COMM_NULL || type == MPI_DATATYPE_NULL) return false;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return false;
  if (MPI_Comm_size(comm, &s->p) != MPI_SUCCESS || MPI_Type_size(type, &size) != MPI_SUCCESS) return false;
  if (op != MPI_OP_NULL && MPI_Op_commutative(op, &commute) != MPI_SUCCESS) return false;
  s->bytes = count * uint64_t(size);
  s->commutative = commute != 0;
  s->same_bracketing = bracketing_sensitive(type, op);
  return true;
}

/// call_shape() of a rooted block collective (MPI_Gather when `gather`, else MPI_Scatter):
/// the block is read from the side MPI makes significant on this rank, as the PMPI library
/// does, so every rank computes the same bytes. False also for a root outside 0..p-1.
inline bool rooted_shape(MPI_Comm comm, bool gather, const void* sendbuf, uint64_t sendcount, MPI_Datatype sendtype,
                         const void* recvbuf, uint64_t recvcount, MPI_Datatype recvtype, int root, CallShape* s) {
  int rank = 0, p = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_size(comm, &p) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
    return false;
  if (root < 0 || root >= p) return false;
  // gather: the send side, except at the root with MPI_IN_PLACE; scatter: the receive side,
  // except at the root with MPI_IN_PLACE.
  const bool use_send = gather ? !(rank == root && sendbuf == MPI_IN_PLACE) : (rank == root && recvbuf == MPI_IN_PLACE);
  return use_send ? call_shape(comm, sendcount, sendtype, MPI_OP_NULL, s)
                  : call_shape(comm, recvcount, recvtype, MPI_OP_NULL, s);
}

/// The return value of a dispatcher that must send a call with a count above INT_MAX to
/// the MPI library's int-count collective: MPI_ERR_COUNT, described in the thread's
/// `<prefix>last_error()` text (bine::mpi::error_text()). `fn` is the dispatcher's name.
inline int count_exceeds_int(const char* fn, uint64_t count) {
  Context cx(fn);
  return cx.result(cx.fail(MPI_ERR_COUNT,
                           "no schedule of the selection table serves this call, and its count %llu exceeds "
                           "the int count of the MPI library's collective",
                           (unsigned long long)count));
}

}  // namespace bine::mpi
