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
#pragma once
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "bine/mpi_runtime.hpp"

namespace bine::mpi {

/// One generated schedule as a table sees it: its C name, its applicability test
/// (`<name>_applicable(p)`: 1 applies, 0 `requires` false, -1 outside the verified range) and
/// whether the verifier proved it order-preserving (safe for non-commutative operators).
struct ScheduleInfo {
  const char* name;
  int (*applicable)(int);
  bool order_preserving;
};

/// One rule of a selection table: closed ranges of p and of message bytes (the PMPI
/// library's definition, docs/pmpi.md: the whole vector for allreduce, reduce, bcast, scan,
/// exscan; one rank's block for the rank-indexed collectives; 0 for barrier) and the
/// schedule, an index into the collective's ScheduleInfo array, or kRuleMpi.
struct DispatchRule {
  static constexpr int kRuleMpi = -1;
  int64_t p_min = 1, p_max = std::numeric_limits<int64_t>::max();
  uint64_t bytes_min = 0, bytes_max = std::numeric_limits<uint64_t>::max();
  int schedule = kRuleMpi;
};

/// dispatch_choose()'s answers other than a schedule index.
constexpr int kChooseRuleMpi = -1;  ///< the first matching rule names "mpi"
constexpr int kChooseNoRule = -2;   ///< no rule matches with a schedule that fits the call

/// True when schedule `i` of `info` can serve a call on p ranks with an operator of that
/// commutativity (true for collectives without an operator).
inline bool schedule_fits(const ScheduleInfo* info, int i, int p, bool commutative) {
  return info[i].applicable(p) == 1 && (commutative || info[i].order_preserving);
}

/// The table walk (see the file comment): the index of the schedule serving the call, or
/// kChooseRuleMpi / kChooseNoRule. `rules` holds n rules in table order. `usable`, when not
/// null, is parallel to `info`: schedules marked false are passed over like ones that do not
/// apply (the PMPI library: MPI_Reduce_scatter with unequal counts needs an irregular form).
/// No MPI calls.
inline int dispatch_choose(const DispatchRule* rules, size_t n, const ScheduleInfo* info, int p, uint64_t bytes,
                           bool commutative, const bool* usable = nullptr) {
  for (size_t k = 0; k < n; ++k) {
    const DispatchRule& r = rules[k];
    if (p < r.p_min || p > r.p_max || bytes < r.bytes_min || bytes > r.bytes_max) continue;
    if (r.schedule == DispatchRule::kRuleMpi) return kChooseRuleMpi;
    if ((!usable || usable[r.schedule]) && schedule_fits(info, r.schedule, p, commutative)) return r.schedule;
  }
  return kChooseNoRule;
}

/// What a generated dispatcher reads of a call before choosing.
struct CallShape {
  int p = 0;               ///< processes of the communicator
  uint64_t bytes = 0;      ///< message bytes as the table counts them
  bool commutative = true; ///< the operator's commutativity (true without one)
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
