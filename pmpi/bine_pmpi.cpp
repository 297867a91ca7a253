// libbine_pmpi.so: a PMPI drop-in library (issue 17, first deliverable; docs/pmpi.md).
//
// LD_PRELOAD it into an unmodified MPI program: it defines the C bindings MPI_Allreduce,
// MPI_Bcast, MPI_Reduce, MPI_Allgather, MPI_Gather, MPI_Scatter, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter, MPI_Allgatherv, MPI_Alltoall, MPI_Scan, MPI_Exscan and MPI_Barrier, picks a generated schedule of build/generated/bine_lib.h per call from a
// selection table (JSON, BINE_PMPI_TABLE, or the default compiled in below) or a forced name
// (BINE_PMPI_<COLLECTIVE>), and calls the PMPI_ function (the fallback) for every call the
// generated schedules cannot serve. Every fallback is decided before any communication, from
// arguments that agree on all ranks, so all ranks of a call take the same path.
// Fortran (`mpif.h`, `use mpi`) reaches the same entry points through pmpi/fortran.cpp.
// MPI_Init / MPI_Init_thread load the configuration; MPI_Finalize prints the report
// (BINE_PMPI_REPORT=1) from rank 0 and then calls PMPI_Finalize.
//
// Threads (MPI_THREAD_MULTIPLE): concurrent calls on different communicators are safe. The
// configuration is loaded once (std::call_once) and only read afterwards; the report's
// counters are relaxed atomics; the private communicators are cached as attributes of the
// application's communicators, which MPI itself keeps thread-safe, and are created with no
// lock of ours held (PMPI_Comm_dup blocks on the other ranks of that communicator only);
// the decisions are kept per thread (DecisionCache); the runtime keeps its buffer pools,
// plan caches and workspaces per thread.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>


// The runtime's own completion and collective calls (MPI_Testall, MPI_Ibcast, ...) go to
// PMPI_ directly: this library's interceptors must not see them (they would re-enter it).
#define BINE_MPI_CALL(f) PMPI_##f
#define BINE_IMPLEMENTATION
#include "bine/mpi_signatures.hpp"
#include "bine_lib.h"
#include "bine/dispatch.hpp"
#include "bine/selection_table.hpp"

namespace {

// ---------------------------------------------------------------------------------------
// Registry: the header's schedules per collective (BCC_<COLLECTIVE>_SCHEDULES).

enum Coll { kAllreduce, kBcast, kReduce, kAllgather, kGather, kScatter, kReduceScatter, kAlltoall, kScan, kExscan, kBarrier, kNumColl };

/// The language's collective of each (bine/collective.hpp's table).
constexpr bine::Collective kCollOf[kNumColl] = {
    bine::Collective::allreduce, bine::Collective::bcast,   bine::Collective::reduce,         bine::Collective::allgather,
    bine::Collective::gather,    bine::Collective::scatter, bine::Collective::reduce_scatter, bine::Collective::alltoall,
    bine::Collective::scan,      bine::Collective::exscan,  bine::Collective::barrier};
/// Table key and report name of each collective (the table's key: the MPI function without
/// MPI_, lower case).
const char* const kCollName[kNumColl] = {
    bine::collective_key(kCollOf[0]), bine::collective_key(kCollOf[1]), bine::collective_key(kCollOf[2]),
    bine::collective_key(kCollOf[3]), bine::collective_key(kCollOf[4]), bine::collective_key(kCollOf[5]),
    bine::collective_key(kCollOf[6]), bine::collective_key(kCollOf[7]), bine::collective_key(kCollOf[8]),
    bine::collective_key(kCollOf[9]), bine::collective_key(kCollOf[10])};
/// Environment variable forcing a schedule per collective.
const char* const kCollEnv[kNumColl] = {"BINE_PMPI_ALLREDUCE", "BINE_PMPI_BCAST",   "BINE_PMPI_REDUCE",
                                        "BINE_PMPI_ALLGATHER", "BINE_PMPI_GATHER",  "BINE_PMPI_SCATTER",
                                        "BINE_PMPI_REDUCE_SCATTER_BLOCK", "BINE_PMPI_ALLTOALL",
                                        "BINE_PMPI_SCAN",      "BINE_PMPI_EXSCAN",  "BINE_PMPI_BARRIER"};

/// One generated schedule: its C name, applicability test and what the verifier proved of it:
/// order-preserving (needed for a non-commutative operator) and the same bracketing on all
/// ranks (needed for an operator whose bits depend on it: floating point, user operators).
/// The table walk is the one the generated dispatchers use (bine/dispatch.hpp).
using Info = bine::mpi::ScheduleInfo;

using bine::mpi::BarrierFn;
using bine::mpi::BcastFn;
using bine::mpi::BlocksFn;
using bine::mpi::ReduceAllFn;
using bine::mpi::ReduceFn;
using bine::mpi::RootedBlocksFn;

#define BINE_PMPI_INFO(f, op, sb) {#f, f##_applicable, (op) != 0, (sb) != 0},
#define BINE_PMPI_FN(f, op, sb) f,
const Info kInfoAllreduce[] = {BCC_ALLREDUCE_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoBcast[] = {BCC_BCAST_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoReduce[] = {BCC_REDUCE_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoAllgather[] = {BCC_ALLGATHER_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoGather[] = {BCC_GATHER_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoScatter[] = {BCC_SCATTER_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoReduceScatter[] = {BCC_REDUCE_SCATTER_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoAlltoall[] = {BCC_ALLTOALL_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoScan[] = {BCC_SCAN_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoExscan[] = {BCC_EXSCAN_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const Info kInfoBarrier[] = {BCC_BARRIER_SCHEDULES(BINE_PMPI_INFO){nullptr, nullptr, false, false}};
const ReduceAllFn kFnAllreduce[] = {BCC_ALLREDUCE_SCHEDULES(BINE_PMPI_FN) nullptr};
const BcastFn kFnBcast[] = {BCC_BCAST_SCHEDULES(BINE_PMPI_FN) nullptr};
const ReduceFn kFnReduce[] = {BCC_REDUCE_SCHEDULES(BINE_PMPI_FN) nullptr};
const BlocksFn kFnAllgather[] = {BCC_ALLGATHER_SCHEDULES(BINE_PMPI_FN) nullptr};
const RootedBlocksFn kFnGather[] = {BCC_GATHER_SCHEDULES(BINE_PMPI_FN) nullptr};
const RootedBlocksFn kFnScatter[] = {BCC_SCATTER_SCHEDULES(BINE_PMPI_FN) nullptr};
const ReduceAllFn kFnReduceScatter[] = {BCC_REDUCE_SCATTER_SCHEDULES(BINE_PMPI_FN) nullptr};
const BlocksFn kFnAlltoall[] = {BCC_ALLTOALL_SCHEDULES(BINE_PMPI_FN) nullptr};
const ReduceAllFn kFnScan[] = {BCC_SCAN_SCHEDULES(BINE_PMPI_FN) nullptr};
const ReduceAllFn kFnExscan[] = {BCC_EXSCAN_SCHEDULES(BINE_PMPI_FN) nullptr};
const BarrierFn kFnBarrier[] = {BCC_BARRIER_SCHEDULES(BINE_PMPI_FN) nullptr};
/// reduce_scatter's irregular forms (`<schedule>_v`, MPI_Reduce_scatter with unequal counts).
/// allgather's irregular forms (`<schedule>_v`, MPI_Allgatherv).
const bine::mpi::AllgathervFn kFnAllgatherVList[] = {BCC_ALLGATHERV_SCHEDULES(BINE_PMPI_FN) nullptr};
#define BINE_PMPI_NAME(f, op, sb) #f,
const char* const kNameReduceScatterV[] = {BCC_REDUCE_SCATTERV_SCHEDULES(BINE_PMPI_NAME) nullptr};
const char* const kNameAllgatherV[] = {BCC_ALLGATHERV_SCHEDULES(BINE_PMPI_NAME) nullptr};
const char* const kNameGatherV[] = {BCC_GATHERV_SCHEDULES(BINE_PMPI_NAME) nullptr};
const char* const kNameScatterV[] = {BCC_SCATTERV_SCHEDULES(BINE_PMPI_NAME) nullptr};
const char* const kNameAlltoallV[] = {BCC_ALLTOALLV_SCHEDULES(BINE_PMPI_NAME) nullptr};
#undef BINE_PMPI_NAME
const bine::mpi::ReduceScatterVFn kFnReduceScatterVList[] = {BCC_REDUCE_SCATTERV_SCHEDULES(BINE_PMPI_FN) nullptr};
/// gather's and scatter's irregular forms (MPI_Gatherv, MPI_Scatterv).
const bine::mpi::GathervFn kFnGatherVList[] = {BCC_GATHERV_SCHEDULES(BINE_PMPI_FN) nullptr};
const bine::mpi::ScattervFn kFnScatterVList[] = {BCC_SCATTERV_SCHEDULES(BINE_PMPI_FN) nullptr};
/// alltoall's irregular forms (MPI_Alltoallv): the schedules proved direct.
const bine::mpi::AlltoallvFn kFnAlltoallVList[] = {BCC_ALLTOALLV_SCHEDULES(BINE_PMPI_FN) nullptr};
/// The irregular forms' nonblocking functions (`<schedule>_v_i`), in registry order.
#define BINE_PMPI_VNB(f, op, sb) f##_i,
const bine::mpi::VNb<bcc_request>::ReduceScatter kNbReduceScatterVList[] = {BCC_REDUCE_SCATTERV_SCHEDULES(BINE_PMPI_VNB) nullptr};
const bine::mpi::VNb<bcc_request>::Allgather kNbAllgatherVList[] = {BCC_ALLGATHERV_SCHEDULES(BINE_PMPI_VNB) nullptr};
const bine::mpi::VNb<bcc_request>::Gather kNbGatherVList[] = {BCC_GATHERV_SCHEDULES(BINE_PMPI_VNB) nullptr};
const bine::mpi::VNb<bcc_request>::Scatter kNbScatterVList[] = {BCC_SCATTERV_SCHEDULES(BINE_PMPI_VNB) nullptr};
const bine::mpi::VNb<bcc_request>::Alltoall kNbAlltoallVList[] = {BCC_ALLTOALLV_SCHEDULES(BINE_PMPI_VNB) nullptr};
#undef BINE_PMPI_VNB
#undef BINE_PMPI_INFO
#undef BINE_PMPI_FN

const Info* const kInfo[kNumColl] = {kInfoAllreduce, kInfoBcast,   kInfoReduce,        kInfoAllgather,
                                     kInfoGather,    kInfoScatter, kInfoReduceScatter, kInfoAlltoall,
                                     kInfoScan,      kInfoExscan,  kInfoBarrier};

/// The irregular forms of one collective's schedules, in kInfo order: schedule i's
/// `<name>_v` function or null, and whether it has one (the `usable` filter of
/// bine::mpi::dispatch_choose()), matched by name in the header's V registry.
template <class Fn>
struct VForms {
  std::vector<Fn> fn;
  std::unique_ptr<bool[]> usable;
  VForms(const Info* info, const char* const* vnames, const Fn* vfns) {
    size_t n = 0;
    while (info[n].name) ++n;
    fn.assign(n, nullptr);
    usable.reset(new bool[n + 1]());
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; vnames[k]; ++k)
        if (std::string(vnames[k]) == std::string(info[i].name) + "_v") fn[i] = vfns[k], usable[i] = true;
  }
};
const VForms<bine::mpi::ReduceScatterVFn>& reduce_scatter_v() {
  static const VForms<bine::mpi::ReduceScatterVFn> v(kInfoReduceScatter, kNameReduceScatterV, kFnReduceScatterVList);
  return v;
}
const VForms<bine::mpi::AllgathervFn>& allgather_v() {
  static const VForms<bine::mpi::AllgathervFn> v(kInfoAllgather, kNameAllgatherV, kFnAllgatherVList);
  return v;
}
const VForms<bine::mpi::GathervFn>& gather_v() {
  static const VForms<bine::mpi::GathervFn> v(kInfoGather, kNameGatherV, kFnGatherVList);
  return v;
}
const VForms<bine::mpi::AlltoallvFn>& alltoall_v() {
  static const VForms<bine::mpi::AlltoallvFn> v(kInfoAlltoall, kNameAlltoallV, kFnAlltoallVList);
  return v;
}
const VForms<bine::mpi::ScattervFn>& scatter_v() {
  static const VForms<bine::mpi::ScattervFn> v(kInfoScatter, kNameScatterV, kFnScatterVList);
  return v;
}

/// An int array of MPI's v collectives as size_t, in a per-thread buffer reused across calls
/// (`slot` 0 or 1: two arrays at once).
const size_t* as_size_t(const int* a, int n, int slot) {
  thread_local std::vector<size_t> buf[2];
  buf[slot].assign(a, a + n);
  return buf[slot].data();
}

int num_schedules(Coll c) {
  int n = 0;
  while (kInfo[c][n].name) ++n;
  return n;
}

/// Index of a schedule of collective c by name, with or without the `bcc_` prefix; -1 if none.
int find_schedule(Coll c, const std::string& name) {
  for (int i = 0; kInfo[c][i].name; ++i) {
    const std::string full = kInfo[c][i].name;
    if (name == full || "bcc_" + name == full) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------
// Configuration: selection table, forced schedules, report switch.

/// The selection table compiled in (pmpi/default_table.json, docs/pmpi.md; CMake writes it
/// into bine_default_table.inc as a raw string literal): latency-optimal Bine schedules for small
/// messages and bandwidth-optimal ones for large, each followed by a schedule for any p, and
/// every reducing collective ends with a schedule proved order-preserving and same-bracketing
/// for every p (the walk reaches it for non-commutative and floating-point calls).
const char* const kDefaultTable =
#include "bine_default_table.inc"
    ;

/// One rule of the selection table; schedule -1 (kRuleMpi) means "mpi" (the PMPI_ function).
using Rule = bine::mpi::DispatchRule;

/// Why a call went to the PMPI_ function (the report's columns).
enum Reason {
  kInvalidArgs,     // MPI reports the error (null communicator, bad root, count < 0, ...)
  kIntercomm,       // intercommunicator
  kEmpty,           // zero bytes
  kForcedNotApplicable,  // forced schedule does not apply at this p
  kForcedNotOrdered,     // forced schedule not order-preserving, operator not commutative
  kForcedNotBracketed,   // forced schedule not same-bracketing, operator needs it
  kNoRule,          // no table rule matches with a schedule that applies at p
  kNotOrdered,      // matching rules' schedules not order-preserving, operator not commutative
  kNotBracketed,    // matching rules' schedules not same-bracketing, operator needs it
  kRuleMpi,         // the matching rule names "mpi"
  kDupFailed,       // the private communicator could not be created
  kNotIrregular,    // the v call's decision would need the bytes, which only the root knows
  kNumReasons
};
const char* const kReasonText[kNumReasons] = {
    "invalid arguments (left to MPI)", "intercommunicator", "zero bytes",
    "forced schedule does not apply at this p",
    "forced schedule not proved order-preserving, operator not commutative",
    "forced schedule not proved same-bracketing, operator needs it",
    "no table rule applies",
    "operator not commutative: no matching schedule proved order-preserving",
    "floating-point or user operator: no matching schedule proved same-bracketing on all ranks",
    "table rule says mpi", "communicator dup failed",
    "size-dependent rules, and the bytes are known to the root only or differ per rank (v form)"};

/// A report counter: incremented by concurrent calls from several threads, so atomic;
/// relaxed, as only the totals matter (read by MPI_Finalize after the threads are done).
using Counter = std::atomic<uint64_t>;
inline void bump(Counter& c, uint64_t by = 1) { c.fetch_add(by, std::memory_order_relaxed); }
inline uint64_t value(const Counter& c) { return c.load(std::memory_order_relaxed); }

/// Per-collective counters for the report (this rank's view; every rank decides alike).
struct Stats {
  Counter calls{0}, bytes{0}, bine_calls{0}, bine_bytes{0};
  std::vector<Counter> per_schedule;  // sized once, in read_config
  Counter reasons[kNumReasons] = {};
};

/// The configuration, written only inside load_config (once, under `once`) and read-only
/// afterwards; the counters; the attribute key of the private communicators.
struct Config {
  std::once_flag once;
  bool report = false;
  std::atomic<bool> finalizing{false};
  std::string table_source = "default (compiled in)";
  std::vector<Rule> rules[kNumColl];
  int forced[kNumColl];
  /// A forced schedule's first refusal was reported (stderr, once per collective).
  std::atomic<bool> forced_warned[kNumColl] = {};
  /// BINE_PMPI_SAME_BRACKETING (default 1): bracketing-sensitive operators only on schedules
  /// proved same-bracketing; 0 lifts it (ranks may then end with other bits).
  bool same_bracketing = true;
  Stats stats[kNumColl];
  std::once_flag keyval_once;
  int keyval = MPI_KEYVAL_INVALID;
};

Config g;

/// A configuration error: message on stderr from rank 0 of MPI_COMM_WORLD, then MPI_Abort.
[[noreturn]] void config_error(const std::string& msg) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::fprintf(stderr, "bine_pmpi: error: %s\n", msg.c_str());
    std::fflush(stderr);
  } else {
    sleep(2);  // let rank 0 print before the job is torn down
  }
  PMPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// Parses a selection table (docs/pmpi.md; bine/selection_table.hpp) into g.rules, each
/// schedule name resolved against this library's; any error aborts with its text.
void parse_table(const std::string& text, const std::string& source) {
  bine::SelectionTable table;
  std::string error;
  if (!bine::parse_selection_table(text, source, table, &error)) config_error(error);
  for (const auto& [key, rules] : table.collectives) {
    int c = -1;
    for (int i = 0; i < kNumColl; ++i)
      if (key == kCollName[i]) c = i;
    g.rules[c].clear();
    for (size_t k = 0; k < rules.size(); ++k) {
      const bine::SelectionRule& r = rules[k];
      Rule rule;
      rule.p_min = r.p_min;
      rule.p_max = r.p_max;
      rule.bytes_min = r.bytes_min;
      rule.bytes_max = r.bytes_max;
      rule.any_bracketing = r.any_bracketing;
      if (r.schedule != "mpi") {
        rule.schedule = find_schedule(Coll(c), r.schedule);
        if (rule.schedule < 0)
          config_error("selection table " + source + ": " + key + " rule " + std::to_string(k) + ": schedule \"" +
                       r.schedule + "\" is not a " + kCollName[c] + " schedule of this library");
      }
      g.rules[c].push_back(rule);
    }
  }
}

/// Reads the configuration: BINE_PMPI_TABLE (or the default), BINE_PMPI_<COLLECTIVE>,
/// BINE_PMPI_REPORT. Runs once, through load_config().
void read_config() {
  for (int c = 0; c < kNumColl; ++c) {
    g.forced[c] = -1;
    g.stats[c].per_schedule = std::vector<Counter>(size_t(num_schedules(Coll(c))));  // zeroed
  }
  const char* rep = std::getenv("BINE_PMPI_REPORT");
  g.report = rep && *rep && std::strcmp(rep, "0") != 0;
  const char* sb = std::getenv("BINE_PMPI_SAME_BRACKETING");
  if (sb && *sb) {
    if (std::strcmp(sb, "0") != 0 && std::strcmp(sb, "1") != 0)
      config_error(std::string("BINE_PMPI_SAME_BRACKETING=") + sb + ": must be 0 or 1");
    g.same_bracketing = std::strcmp(sb, "1") == 0;
  }
  const char* path = std::getenv("BINE_PMPI_TABLE");
  if (path && *path) {
    std::ifstream in(path);
    if (!in) config_error(std::string("BINE_PMPI_TABLE: cannot read the selection table ") + path);
    std::stringstream ss;
    ss << in.rdbuf();
    g.table_source = path;
    parse_table(ss.str(), path);
  } else {
    parse_table(kDefaultTable, "default");
  }
  for (int c = 0; c < kNumColl; ++c) {
    const char* v = std::getenv(kCollEnv[c]);
    if (!v || !*v) continue;
    const int i = find_schedule(Coll(c), v);
    if (i < 0) {
      std::string known;
      for (int k = 0; kInfo[c][k].name; ++k) known += std::string(k ? ", " : "") + kInfo[c][k].name;
      config_error(std::string(kCollEnv[c]) + "=" + v + ": no " + kCollName[c] +
                   " schedule of that name in this library (known: " + known + ")");
    }
    g.forced[c] = i;
  }
}

/// Loads the configuration once. Called from MPI_Init/MPI_Init_thread and at every
/// intercepted call (the first one loads it if MPI was initialized otherwise); threads that
/// call it while another thread loads wait for that load to finish, and every later call
/// sees the configuration complete (std::call_once synchronizes).
void load_config() { std::call_once(g.once, read_config); }

// ---------------------------------------------------------------------------------------
// Decision.

/// The size of a datatype's signature in bytes (MPI_Type_size), the only property of a type
/// the decision reads: ranks may pass different type maps of one signature (a strided type
/// at the root, a contiguous one elsewhere), and the generated code packs a non-contiguous
/// one itself (bine/mpi_runtime.hpp, "Datatypes"), so every rank decides alike. False for an
/// invalid handle or a size MPI cannot express (left to MPI, which reports it).
bool type_bytes(MPI_Datatype t, int* size) {
  if (t == MPI_DATATYPE_NULL) return false;
  return PMPI_Type_size(t, size) == MPI_SUCCESS && *size >= 0;
}

/// Says once per collective and process, on stderr from rank 0 of the call's communicator,
/// that the forced schedule does not serve a call and why (the report counts every one).
void warn_forced(Coll c, MPI_Comm comm, int p, Reason why) {
  if (g.forced_warned[c].exchange(true)) return;
  int rank = 0;
  if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || rank != 0) return;
  std::fprintf(stderr, "bine_pmpi: %s=%s does not serve an MPI %s call at p = %d (%s): MPI's own collective runs it (reported once)\n",
               kCollEnv[c], kInfo[c][g.forced[c]].name, kCollName[c], p, kReasonText[why]);
  std::fflush(stderr);
}

/// The schedule for one call, or -1 with the reason in *why. `p` ranks, `bytes` the
/// message size (docs/pmpi.md), `needs` what the operator asks of the proofs (nothing
/// without an operator). `usable` (parallel to kInfo[c]; null: all) restricts the choice,
/// as bine::mpi::dispatch_choose() does.
int choose(Coll c, MPI_Comm comm, int p, uint64_t bytes, bine::mpi::CallNeeds needs, Reason* why, const bool* usable) {
  if (!g.same_bracketing) needs.same_bracketing = false;
  if (g.forced[c] >= 0) {
    const unsigned m = usable && !usable[g.forced[c]] ? bine::mpi::kPassedNotApplicable
                                                      : bine::mpi::schedule_misfit(kInfo[c], g.forced[c], p, needs);
    if (m == 0) return g.forced[c];
    *why = m == bine::mpi::kPassedOrder ? kForcedNotOrdered
           : m == bine::mpi::kPassedBracketing ? kForcedNotBracketed : kForcedNotApplicable;
    warn_forced(c, comm, p, *why);
    return -1;
  }
  unsigned passed = 0;
  const int i = bine::mpi::dispatch_choose(g.rules[c].data(), g.rules[c].size(), kInfo[c], p, bytes, needs, usable,
                                           &passed);
  if (i >= 0) return i;
  // The most telling reason: a proof that a matching rule lacked, else no schedule applied.
  *why = i == bine::mpi::kChooseRuleMpi ? kRuleMpi
         : passed & bine::mpi::kPassedOrder ? kNotOrdered
         : passed & bine::mpi::kPassedBracketing ? kNotBracketed : kNoRule;
  return -1;
}

/// The communicator checks shared by all collectives: p, or -1 with the reason.
int comm_size(MPI_Comm comm, Reason* why) {
  if (comm == MPI_COMM_NULL) return *why = kInvalidArgs, -1;
  int inter = 0, p = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return *why = kInvalidArgs, -1;
  if (inter) return *why = kIntercomm, -1;
  if (PMPI_Comm_size(comm, &p) != MPI_SUCCESS) return *why = kInvalidArgs, -1;
  return p;
}

int delete_dup(MPI_Comm, int, void* attr, void*) {
  auto* dup = static_cast<MPI_Comm*>(attr);
  if (!g.finalizing.load()) PMPI_Comm_free(dup);
  delete dup;
  return MPI_SUCCESS;
}

/// The private duplicate of `comm` the generated schedules run on (cached as an attribute,
/// freed with `comm`), so their point-to-point messages never match the application's.
/// Collective on first use; every rank gets here at the same call. MPI_COMM_NULL on failure.
/// Threads: the key is created once (a local call, no communication). The attribute is the
/// cache, one entry per application communicator, and the MPI attribute calls are
/// thread-safe under MPI_THREAD_MULTIPLE; MPI forbids concurrent collectives on one
/// communicator, so no two threads of this process look up or create the same entry at
/// once, and the PMPI_Comm_dup runs with no lock held: two threads dup'ing two
/// communicators (whose other ranks may reach the dups in another order) cannot deadlock
/// on a lock of ours.
MPI_Comm private_comm(MPI_Comm comm) {
  std::call_once(g.keyval_once, [] {
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_dup, &g.keyval, nullptr) != MPI_SUCCESS)
      g.keyval = MPI_KEYVAL_INVALID;
  });
  if (g.keyval == MPI_KEYVAL_INVALID) return MPI_COMM_NULL;
  void* attr = nullptr;
  int flag = 0;
  if (PMPI_Comm_get_attr(comm, g.keyval, &attr, &flag) != MPI_SUCCESS) return MPI_COMM_NULL;
  if (flag) return *static_cast<MPI_Comm*>(attr);
  auto* dup = new MPI_Comm(MPI_COMM_NULL);
  if (PMPI_Comm_dup(comm, dup) != MPI_SUCCESS) {
    delete dup;
    return MPI_COMM_NULL;
  }
  PMPI_Comm_set_errhandler(*dup, MPI_ERRORS_RETURN);
  PMPI_Comm_set_attr(comm, g.keyval, dup);
  return *dup;
}

/// One call's decision: the schedule index (-1: the PMPI_ function, for `why`), the private
/// communicator it runs on, and the message bytes the report counts.
struct Decision {
  int i = -1;
  Reason why = kInvalidArgs;
  MPI_Comm pc = MPI_COMM_NULL;
  uint64_t bytes = 0;
  int rank = -1;  ///< the caller's rank, where the decision needed it (rooted_impl), else -1
};

/// Counts one decided call in the report (g.stats).
void count(Coll c, const Decision& d) {
  Stats& s = g.stats[c];
  bump(s.calls);
  bump(s.bytes, d.bytes);
  if (d.i < 0) {
    bump(s.reasons[d.why]);
    return;
  }
  bump(s.bine_calls);
  bump(s.bine_bytes, d.bytes);
  bump(s.per_schedule[size_t(d.i)]);
}

/// Decides one call without counting it: `p` ranks (-1: invalid, `why` says so), `bytes`.
Decision decide_uncounted(Coll c, MPI_Comm comm, int p, uint64_t bytes, bine::mpi::CallNeeds needs, Reason why,
                          const bool* usable = nullptr) {
  load_config();
  Decision d;
  d.bytes = bytes;
  // A barrier moves no bytes; every other collective with zero bytes is left to MPI.
  if (p > 0) d.i = bytes == 0 && c != kBarrier ? (why = kEmpty, -1) : choose(c, comm, p, bytes, needs, &why, usable);
  if (d.i >= 0 && (d.pc = private_comm(comm)) == MPI_COMM_NULL) d.i = -1, why = kDupFailed;
  d.why = why;
  return d;
}

/// Decides one call (decide_uncounted) and counts it. Returns the schedule index and sets
/// *pcomm, or -1 (fallback).
int decide(Coll c, MPI_Comm comm, int p, uint64_t bytes, bine::mpi::CallNeeds needs, Reason why, MPI_Comm* pcomm,
           const bool* usable = nullptr) {
  const Decision d = decide_uncounted(c, comm, p, bytes, needs, why, usable);
  count(c, d);
  *pcomm = d.pc;
  return d.i;
}

// ---------------------------------------------------------------------------------------
// Decision cache (issue 48: the interposer's own work per call). A call's decision is a
// function of its arguments other than the buffer addresses (the communicator's size and
// kind, the datatypes' sizes, the operator's commutativity, the counts, the root, which
// buffers are MPI_IN_PLACE) and of the configuration (fixed after load_config()). The
// regular collectives keep it per thread, by the arguments' exact values (a CallKey of
// bine/flat_replay.hpp), so a repeated call makes no MPI query and walks no table: one
// hash, one key comparison, the report's counters. Kept only when every handle it read is
// one whose meaning cannot change while the entry lives: predefined datatypes and
// operators (which cannot be freed), and a communicator watched by bine::mpi::flat_watch(),
// whose MPI_Comm_free advances bine::mpi::flat_epoch() and so invalidates every entry made
// before (a freed handle may be reused for another communicator). Calls with invalid
// arguments are never kept (MPI reports them each time), nor are the irregular (v) forms.

/// Whether a decision that read datatypes `t0`, `t1` and operator `op` (MPI_DATATYPE_NULL /
/// MPI_OP_NULL: none) may be kept: all predefined.
bool stable_handles(MPI_Datatype t0, MPI_Datatype t1, MPI_Op op) {
  return (t0 == MPI_DATATYPE_NULL || bine::mpi::named_type(t0)) && (t1 == MPI_DATATYPE_NULL || bine::mpi::named_type(t1)) &&
         (op == MPI_OP_NULL || bine::mpi::builtin_op(op));
}

/// The decisions of one thread: direct-mapped, kSlots entries by a hash of the key (a new
/// key replaces the one in its slot).
class DecisionCache {
 public:
  static constexpr unsigned kSlots = 64;
  /// The kept decision of `k`'s arguments, or null.
  const Decision* find(const bine::mpi::CallKey& k) const {
    const Slot& s = slot_[slot(k)];
    if (!s.used || s.epoch != bine::mpi::flat_epoch().load(std::memory_order_relaxed) || !s.key.same_shape(k))
      return nullptr;
    return &s.d;
  }
  /// Keeps `d` for `k`, made at flat_epoch() value `epoch`.
  void keep(const bine::mpi::CallKey& k, const Decision& d, uint64_t epoch) {
    Slot& s = slot_[slot(k)];
    s.key = k;
    s.d = d;
    s.epoch = epoch;
    s.used = true;
  }
  static DecisionCache& local() {
    static thread_local DecisionCache c;
    return c;
  }

 private:
  struct Slot {
    bine::mpi::CallKey key;
    Decision d;
    uint64_t epoch = 0;
    bool used = false;
  };
  static unsigned slot(const bine::mpi::CallKey& k) {
    uint64_t h = k.ptr_class;
    for (uint32_t i = 0; i < k.nwords; ++i) h = (h ^ k.word[i]) * 0x9e3779b97f4a7c15ull;
    return unsigned(h >> 58) % kSlots;
  }
  Slot slot_[kSlots];
};

/// The decision of a call of collective c with arguments `key` (counted): the kept one, or
/// `compute()`'s, which is kept when compute() says its handles are stable (sets *stable)
/// and `comm` can be watched.
template <class Compute>
Decision decision(Coll c, const bine::mpi::CallKey& key, MPI_Comm comm, Compute&& compute) {
  DecisionCache& dc = DecisionCache::local();
  if (const Decision* d = dc.find(key)) {
    count(c, *d);
    return *d;
  }
  const uint64_t epoch = bine::mpi::flat_epoch().load(std::memory_order_relaxed);
  bool stable = false;
  const Decision d = compute(&stable);
  count(c, d);
  if (stable && key.fits && (d.i >= 0 || (d.why != kInvalidArgs && d.why != kDupFailed)) && bine::mpi::flat_watch(comm))
    dc.keep(key, d, epoch);
  return d;
}

/// A generated function's error goes to the application's communicator's error handler, as
/// MPI's would.
int finish(MPI_Comm comm, int rc) {
  if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

/// Operator checks: what `op` on `type` needs of a schedule's proofs into *needs (not
/// commutative: order-preserving; bracketing_sensitive(): same-bracketing); false when MPI
/// should report the error.
bool op_ok(MPI_Op op, MPI_Datatype type, bine::mpi::CallNeeds* needs) {
  if (op == MPI_OP_NULL || op == MPI_REPLACE || op == MPI_NO_OP) return false;
  int cm = 1;
  if (PMPI_Op_commutative(op, &cm) != MPI_SUCCESS) return false;
  needs->order_preserving = cm == 0;
  needs->same_bracketing = g.same_bracketing && bine::mpi::bracketing_sensitive(type, op);
  return true;
}

/// Common checks of the reductions (allreduce, reduce, reduce_scatter_block): p, or -1.
int reduction_checks(MPI_Comm comm, int count, MPI_Datatype type, MPI_Op op, uint64_t* bytes,
                     bine::mpi::CallNeeds* needs, Reason* why) {
  const int p = comm_size(comm, why);
  if (p < 0) return -1;
  int size = 0;
  if (count < 0 || !type_bytes(type, &size) || !op_ok(op, type, needs)) return *why = kInvalidArgs, -1;
  *bytes = uint64_t(count) * uint64_t(size);
  return p;
}

/// Checks of the rank-indexed collectives: both types valid, counts non-negative, equal
/// block bytes (the signatures' sizes; the type maps may differ).
int block_checks(MPI_Comm comm, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype, uint64_t* bytes,
                 Reason* why, bool send_side) {
  const int p = comm_size(comm, why);
  if (p < 0) return -1;
  if (scount < 0 || rcount < 0) return *why = kInvalidArgs, -1;
  int ss = 0, rs = 0;
  if (!type_bytes(stype, &ss) || !type_bytes(rtype, &rs)) return *why = kInvalidArgs, -1;
  *bytes = send_side ? uint64_t(scount) * uint64_t(ss) : uint64_t(rcount) * uint64_t(rs);
  if (uint64_t(scount) * uint64_t(ss) != uint64_t(rcount) * uint64_t(rs)) return *why = kInvalidArgs, -1;
  return p;
}

// ---------------------------------------------------------------------------------------
// Nonblocking collectives (MPI_Iallreduce, ...; issue 21): the generated `_i` forms behind
// MPI generalized requests. MPI has no progress hook for a generalized request, so this
// library also intercepts MPI_Wait / MPI_Test and their -all / -any / -some forms: while
// calls of ours are in flight they poll, advancing every call in flight (bcc_test) and
// completing (MPI_Grequest_complete) the requests whose call has finished, between
// PMPI_Test* calls on the application's requests. A wait on any request, ours or not,
// therefore advances ours, as MPI's own progress engine would.

// Handles of calls in flight. MPI says that an operation in flight completes normally after
// MPI_Op_free / MPI_Type_free of its arguments (MPI 4.0 Sec. 6.9.5 and 5.1.9: "marks ... for
// deallocation"; pending operations that use it complete normally). The generated code uses
// the operator (MPI_Reduce_local) and the datatypes (MPI_Pack / MPI_Unpack) until the call
// completes, so a nonblocking call of ours holds its user-defined operator and derived
// datatypes, and this library's MPI_Op_free / MPI_Type_free of a held handle only marks it:
// the user's handle becomes MPI_OP_NULL / MPI_DATATYPE_NULL at once, as MPI says, and the
// PMPI_ free runs when the last call holding it completes. Predefined handles cannot be
// freed and are never held.

/// The held handles: references per handle, and the frees deferred until they drop to 0.
struct HeldHandles {
  std::mutex lock;
  std::map<MPI_Op, std::pair<int, int>> ops;          // refs, frees deferred
  std::map<MPI_Datatype, std::pair<int, int>> types;  // refs, frees deferred
  std::atomic<size_t> count{0};                       // entries of both maps
};
HeldHandles& held() {
  static HeldHandles h;
  return h;
}
/// True for a derived (freeable) datatype.
bool derived_type(MPI_Datatype t) {
  int ni = 0, na = 0, nt = 0, combiner = MPI_COMBINER_NAMED;
  return t != MPI_DATATYPE_NULL && PMPI_Type_get_envelope(t, &ni, &na, &nt, &combiner) == MPI_SUCCESS &&
         combiner != MPI_COMBINER_NAMED;
}

/// One nonblocking call of ours: the generated request, its result, the size_t copies of
/// the count and displacement arrays that must live until it completes, and the handles it
/// holds (hold_handles()).
struct NbState {
  bcc_request rq = nullptr;
  int rc = MPI_SUCCESS;
  std::vector<size_t> counts, displs;
  MPI_Op op = MPI_OP_NULL;
  MPI_Datatype types[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
};

/// Holds `op` (when user-defined) and `t0`, `t1` (when derived) for the call `st` until
/// release_handles(st). Returns st.
NbState* hold_handles(NbState* st, MPI_Op op, MPI_Datatype t0 = MPI_DATATYPE_NULL, MPI_Datatype t1 = MPI_DATATYPE_NULL) {
  const bool hold_op = op != MPI_OP_NULL && !bine::mpi::builtin_op(op);
  const bool h0 = derived_type(t0), h1 = t1 != t0 && derived_type(t1);
  if (!hold_op && !h0 && !h1) return st;
  HeldHandles& h = held();
  std::lock_guard<std::mutex> hold(h.lock);
  if (hold_op) ++h.ops[st->op = op].first;
  if (h0) ++h.types[st->types[0] = t0].first;
  if (h1) ++h.types[st->types[1] = t1].first;
  h.count.store(h.ops.size() + h.types.size(), std::memory_order_relaxed);
  return st;
}
/// Drops the call's holds; runs the frees deferred on handles no call holds any more.
void release_handles(NbState* st) {
  if (st->op == MPI_OP_NULL && st->types[0] == MPI_DATATYPE_NULL && st->types[1] == MPI_DATATYPE_NULL) return;
  std::vector<MPI_Op> free_ops;
  std::vector<MPI_Datatype> free_types;
  {
    HeldHandles& h = held();
    std::lock_guard<std::mutex> hold(h.lock);
    if (st->op != MPI_OP_NULL) {
      auto it = h.ops.find(st->op);
      if (it != h.ops.end() && --it->second.first == 0) {
        free_ops.insert(free_ops.end(), size_t(it->second.second), it->first);
        h.ops.erase(it);
      }
    }
    for (MPI_Datatype t : st->types) {
      if (t == MPI_DATATYPE_NULL) continue;
      auto it = h.types.find(t);
      if (it != h.types.end() && --it->second.first == 0) {
        free_types.insert(free_types.end(), size_t(it->second.second), it->first);
        h.types.erase(it);
      }
    }
    h.count.store(h.ops.size() + h.types.size(), std::memory_order_relaxed);
  }
  st->op = MPI_OP_NULL;
  st->types[0] = st->types[1] = MPI_DATATYPE_NULL;
  for (MPI_Op o : free_ops) PMPI_Op_free(&o);
  for (MPI_Datatype t : free_types) PMPI_Type_free(&t);
}
/// MPI_Op_free / MPI_Type_free of a handle: deferred (1) when a call of ours holds it, else
/// 0 and the caller frees it now.
template <class Handle>
bool defer_free(std::map<Handle, std::pair<int, int>> HeldHandles::*map, Handle handle) {
  HeldHandles& h = held();
  if (h.count.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> hold(h.lock);
  auto it = (h.*map).find(handle);
  if (it == (h.*map).end()) return false;
  ++it->second.second;
  return true;
}

/// The generalized requests of ours not yet completed, by handle.
struct NbTable {
  std::mutex lock;
  std::map<MPI_Request, NbState*> live;
  std::atomic<size_t> count{0};
};
NbTable& nb_table() {
  static NbTable t;
  return t;
}

int nb_query(void* extra, MPI_Status* status) {
  if (status != MPI_STATUS_IGNORE) {
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = static_cast<NbState*>(extra)->rc;
  }
  return static_cast<NbState*>(extra)->rc;
}
int nb_free(void* extra) {
  delete static_cast<NbState*>(extra);
  return MPI_SUCCESS;
}
int nb_cancel(void*, int) { return MPI_SUCCESS; }  // a collective cannot be cancelled

/// Advances our calls in flight and completes the generalized requests of those finished.
void nb_drive() {
  NbTable& t = nb_table();
  if (t.count.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> hold(t.lock);
  for (auto it = t.live.begin(); it != t.live.end();) {
    int flag = 0;
    const int rc = bcc_test(&it->second->rq, &flag);
    if (!flag) {
      ++it;
      continue;
    }
    it->second->rc = rc;
    release_handles(it->second);
    PMPI_Grequest_complete(it->first);
    it = t.live.erase(it);
  }
  t.count.store(t.live.size(), std::memory_order_relaxed);
}

/// True when a wait must poll: calls of ours (or of the generated header) are in flight.
bool nb_polling() { return nb_table().count.load(std::memory_order_relaxed) > 0 || bine::mpi::nb_any_live(); }

/// Starts a nonblocking call of ours: `start(&state->rq)` runs the generated `_i` form;
/// on success *request becomes a generalized request that completes with the call. An
/// error of the start goes to the communicator's error handler; *request is then
/// MPI_REQUEST_NULL and `st` freed. The handles `st` holds are released when the call
/// completes (nb_drive()) or fails to start.
template <class Start>
int nb_launch(MPI_Comm comm, MPI_Request* request, NbState* st, Start&& start) {
  *request = MPI_REQUEST_NULL;
  int rc = start(&st->rq);
  if (rc == MPI_SUCCESS) rc = PMPI_Grequest_start(nb_query, nb_free, nb_cancel, st, request);
  else {
    release_handles(st);
    delete st;
    return finish(comm, rc);
  }
  if (rc != MPI_SUCCESS) {
    bcc_wait(&st->rq);
    release_handles(st);
    delete st;
    return finish(comm, rc);
  }
  NbTable& t = nb_table();
  std::lock_guard<std::mutex> hold(t.lock);
  t.live[*request] = st;
  t.count.store(t.live.size(), std::memory_order_relaxed);
  return MPI_SUCCESS;
}

/// The size_t copy of an int array of n entries into `out` (held by a nonblocking call).
const size_t* keep_size_t(std::vector<size_t>& out, const int* a, int n) {
  if (!a) return nullptr;
  out.assign(a, a + n);
  return out.data();
}

/// The generated functions of a collective, blocking and nonblocking, and the PMPI_
/// fallbacks of both.
using ReduceAllNbFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm, bcc_request*);
using BcastNbFn = int (*)(void*, size_t, MPI_Datatype, int, MPI_Comm, bcc_request*);
using ReduceNbFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm, bcc_request*);
using BlocksNbFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm, bcc_request*);
using RootedBlocksNbFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm,
                                 bcc_request*);
using BarrierNbFn = int (*)(MPI_Comm, bcc_request*);
#define BINE_PMPI_NB(f, op, sb) f##_i,
const ReduceAllNbFn kNbAllreduce[] = {BCC_ALLREDUCE_SCHEDULES(BINE_PMPI_NB) nullptr};
const BcastNbFn kNbBcast[] = {BCC_BCAST_SCHEDULES(BINE_PMPI_NB) nullptr};
const ReduceNbFn kNbReduce[] = {BCC_REDUCE_SCHEDULES(BINE_PMPI_NB) nullptr};
const BlocksNbFn kNbAllgather[] = {BCC_ALLGATHER_SCHEDULES(BINE_PMPI_NB) nullptr};
const RootedBlocksNbFn kNbGather[] = {BCC_GATHER_SCHEDULES(BINE_PMPI_NB) nullptr};
const RootedBlocksNbFn kNbScatter[] = {BCC_SCATTER_SCHEDULES(BINE_PMPI_NB) nullptr};
const ReduceAllNbFn kNbReduceScatter[] = {BCC_REDUCE_SCATTER_SCHEDULES(BINE_PMPI_NB) nullptr};
const BlocksNbFn kNbAlltoall[] = {BCC_ALLTOALL_SCHEDULES(BINE_PMPI_NB) nullptr};
const ReduceAllNbFn kNbScan[] = {BCC_SCAN_SCHEDULES(BINE_PMPI_NB) nullptr};
const ReduceAllNbFn kNbExscan[] = {BCC_EXSCAN_SCHEDULES(BINE_PMPI_NB) nullptr};
const BarrierNbFn kNbBarrier[] = {BCC_BARRIER_SCHEDULES(BINE_PMPI_NB) nullptr};
#undef BINE_PMPI_NB

/// The irregular forms' nonblocking functions (`<schedule>_v_i`), parallel to VForms::fn.
template <class NbFn>
std::vector<NbFn> v_nb(const Info* info, const char* const* vnames, const NbFn* vfns) {
  size_t n = 0;
  while (info[n].name) ++n;
  std::vector<NbFn> out(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; vnames[k]; ++k)
      if (std::string(vnames[k]) == std::string(info[i].name) + "_v") out[i] = vfns[k];
  return out;
}

/// MPI_Allreduce, MPI_Scan, MPI_Exscan and MPI_Reduce_scatter_block (the same arguments;
/// `count` elements per vector, per block for the last), blocking (`request` null) or
/// nonblocking: the schedule of collective c from `fns` / `nbs`, or the PMPI_ function
/// (`fallback` / `nb_fallback`).
int vector_reduction(Coll c, const ReduceAllFn* fns, int (*fallback)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm),
                     const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                     const ReduceAllNbFn* nbs = nullptr,
                     int (*nb_fallback)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request*) = nullptr,
                     MPI_Request* request = nullptr) {
  const bool bad_request = nb_fallback && !request;
  const Decision d = decision(c, bine::mpi::CallKey(int(c) | int(bad_request) << 8, comm, count, datatype, op), comm,
                              [&](bool* stable) {
                                Reason why = kInvalidArgs;
                                uint64_t bytes = 0;
                                bine::mpi::CallNeeds needs;
                                int p = reduction_checks(comm, count, datatype, op, &bytes, &needs, &why);
                                if (bad_request) p = -1, why = kInvalidArgs;
                                *stable = stable_handles(datatype, MPI_DATATYPE_NULL, op);
                                return decide_uncounted(c, comm, p, bytes, needs, why);
                              });
  const int i = d.i;
  const MPI_Comm pc = d.pc;
  if (nb_fallback) {
    if (i < 0) return nb_fallback(sendbuf, recvbuf, count, datatype, op, comm, request);
    return nb_launch(comm, request, hold_handles(new NbState, op, datatype), [&](bcc_request* q) {
      return nbs[i](sendbuf, recvbuf, size_t(count), datatype, op, pc, q);
    });
  }
  if (i < 0) return fallback(sendbuf, recvbuf, count, datatype, op, comm);
  return finish(comm, fns[i](sendbuf, recvbuf, size_t(count), datatype, op, pc));
}

/// Whether the table's choice for collective c can depend on the message size (a rule with
/// a byte range; a forced schedule does not).
bool depends_on_bytes(Coll c) {
  if (g.forced[c] >= 0) return false;
  for (const Rule& r : g.rules[c])
    if (r.bytes_min > 0 || r.bytes_max != std::numeric_limits<uint64_t>::max()) return true;
  return false;
}

/// The decision of MPI_Gatherv / MPI_Scatterv (and their I forms), where only the root
/// knows the block sizes. When the table's choice cannot depend on the bytes, every rank
/// decides from p alone and the generated `_v` form checks the arguments (the root's
/// reach every rank through its own broadcast of the sizes), so no root-only condition
/// (zero bytes, a non-contiguous type) sends a call to MPI. Otherwise the blocking forms
/// first broadcast, from the root, whether it accepts its arguments and the mean block
/// (one PMPI_Bcast of 2 integers on `comm`), and every rank decides from that; the
/// nonblocking forms, which must not wait, leave such calls to MPI.
int decide_rooted_v(Coll c, MPI_Comm comm, int p, int root, bool nonblocking, Reason root_why, uint64_t root_bytes,
                    const bool* usable, MPI_Comm* pc) {
  load_config();
  Reason why = kInvalidArgs;
  uint64_t bytes = 1;
  if (p > 0 && depends_on_bytes(c)) {
    if (nonblocking) {
      p = -1, why = kNotIrregular;
    } else {
      int rank = -1;
      uint64_t v[2] = {root_why == kNumReasons ? 0 : uint64_t(root_why) + 1, root_bytes};
      if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Bcast(v, 2, MPI_UINT64_T, root, comm) != MPI_SUCCESS)
        p = -1;
      else if (v[0] != 0)
        p = -1, why = Reason(v[0] - 1);
      else
        bytes = std::max<uint64_t>(1, v[1] / uint64_t(p));
    }
  }
  return decide(c, comm, p, bytes, {}, why, pc, usable);
}

/// The root's side of a rooted irregular call for decide_rooted_v(): kNumReasons when it
/// accepts its arguments (else why not), the mean block in *bytes.
Reason rooted_v_root(const int* counts, const int* displs, MPI_Datatype type, int p, uint64_t* bytes) {
  if (!counts || !displs) return kInvalidArgs;
  int size = 0;
  if (!type_bytes(type, &size)) return kInvalidArgs;
  uint64_t total = 0;
  for (int i = 0; i < p; ++i) {
    if (counts[i] < 0 || displs[i] < 0) return kInvalidArgs;
    total += uint64_t(counts[i]);
  }
  if (total == 0) return kEmpty;
  *bytes = total * uint64_t(size) / uint64_t(p);
  return kNumReasons;
}

void print_report() {
  int rank = 0, p = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &p);
  if (rank != 0) return;
  std::fprintf(stderr, "bine_pmpi report (rank 0, MPI_COMM_WORLD p = %d, table: %s)\n", p, g.table_source.c_str());
  for (int c = 0; c < kNumColl; ++c) {
    const Stats& s = g.stats[c];
    std::fprintf(stderr, "  %s: %llu calls, %llu bytes; bine %llu calls, %llu bytes", kCollName[c],
                 (unsigned long long)value(s.calls), (unsigned long long)value(s.bytes),
                 (unsigned long long)value(s.bine_calls), (unsigned long long)value(s.bine_bytes));
    if (g.forced[c] >= 0) std::fprintf(stderr, " [forced %s]", kInfo[c][g.forced[c]].name);
    for (size_t i = 0; i < s.per_schedule.size(); ++i)
      if (value(s.per_schedule[i]))
        std::fprintf(stderr, "; %s %llu", kInfo[c][i].name, (unsigned long long)value(s.per_schedule[i]));
    uint64_t fb = 0;
    for (int r = 0; r < kNumReasons; ++r) fb += value(s.reasons[r]);
    std::fprintf(stderr, "; fallback %llu", (unsigned long long)fb);
    for (int r = 0; r < kNumReasons; ++r)
      if (value(s.reasons[r]))
        std::fprintf(stderr, " (%s: %llu)", kReasonText[r], (unsigned long long)value(s.reasons[r]));
    std::fprintf(stderr, "\n");
  }
  std::fflush(stderr);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The intercepted C bindings (Open MPI 4.1 prototypes).

extern "C" {

/// MPI_Init through PMPI_Init, then the configuration is loaded (errors abort here).
int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) load_config();
  return rc;
}

/// MPI_Init_thread through PMPI_Init_thread, then the configuration is loaded.
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) load_config();
  return rc;
}

/// Prints the report (BINE_PMPI_REPORT=1) from rank 0, then PMPI_Finalize. MPI requires the
/// application's other threads to have finished their MPI calls by now, so the counters
/// are final.
int MPI_Finalize(void) {
  load_config();
  if (g.report) print_report();
  g.finalizing.store(true);
  return PMPI_Finalize();
}

/// MPI_Allreduce through the selected schedule, or PMPI_Allreduce.
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return vector_reduction(kAllreduce, kFnAllreduce, PMPI_Allreduce, sendbuf, recvbuf, count, datatype, op, comm);
}
/// MPI_Iallreduce through the selected schedule's `_i` form, or PMPI_Iallreduce.
int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  return vector_reduction(kAllreduce, kFnAllreduce, PMPI_Allreduce, sendbuf, recvbuf, count, datatype, op, comm,
                          kNbAllreduce, PMPI_Iallreduce, request);
}

/// MPI_Scan through the selected schedule, or PMPI_Scan.
int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return vector_reduction(kScan, kFnScan, PMPI_Scan, sendbuf, recvbuf, count, datatype, op, comm);
}
/// MPI_Iscan through the selected schedule's `_i` form, or PMPI_Iscan.
int MPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request* request) {
  return vector_reduction(kScan, kFnScan, PMPI_Scan, sendbuf, recvbuf, count, datatype, op, comm, kNbScan, PMPI_Iscan,
                          request);
}

/// MPI_Exscan through the selected schedule, or PMPI_Exscan.
int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return vector_reduction(kExscan, kFnExscan, PMPI_Exscan, sendbuf, recvbuf, count, datatype, op, comm);
}
/// MPI_Iexscan through the selected schedule's `_i` form, or PMPI_Iexscan.
int MPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  return vector_reduction(kExscan, kFnExscan, PMPI_Exscan, sendbuf, recvbuf, count, datatype, op, comm, kNbExscan,
                          PMPI_Iexscan, request);
}

/// MPI_Barrier through the selected schedule (zero-byte messages on the private
/// communicator), or PMPI_Barrier.
int MPI_Barrier(MPI_Comm comm) {
  const Decision d = decision(kBarrier, bine::mpi::CallKey(int(kBarrier), comm), comm, [&](bool* stable) {
    Reason why = kInvalidArgs;
    const int p = comm_size(comm, &why);
    *stable = true;
    return decide_uncounted(kBarrier, comm, p, 0, {}, why);
  });
  if (d.i < 0) return PMPI_Barrier(comm);
  return finish(comm, kFnBarrier[d.i](d.pc));
}
/// MPI_Ibarrier through the selected schedule's `_i` form, or PMPI_Ibarrier.
int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  Reason why = kInvalidArgs;
  MPI_Comm pc = MPI_COMM_NULL;
  int p = comm_size(comm, &why);
  if (!request) p = -1, why = kInvalidArgs;
  const int i = decide(kBarrier, comm, p, 0, {}, why, &pc);
  if (i < 0) return PMPI_Ibarrier(comm, request);
  return nb_launch(comm, request, new NbState, [&](bcc_request* q) { return kNbBarrier[i](pc, q); });
}

/// MPI_Bcast / MPI_Ibcast (request non-null) through the selected schedule, or PMPI_.
int bcast_impl(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request,
               bool nonblocking) {
  const bool bad_request = nonblocking && !request;
  const Decision d = decision(kBcast, bine::mpi::CallKey(int(kBcast) | int(bad_request) << 8, comm, count, datatype, root),
                              comm, [&](bool* stable) {
                                Reason why = kInvalidArgs;
                                uint64_t bytes = 0;
                                int p = comm_size(comm, &why), size = 0;
                                if (p > 0 && (count < 0 || root < 0 || root >= p || bad_request)) p = -1, why = kInvalidArgs;
                                if (p > 0 && !type_bytes(datatype, &size)) p = -1, why = kInvalidArgs;
                                if (p > 0) bytes = uint64_t(count) * uint64_t(size);
                                *stable = stable_handles(datatype, MPI_DATATYPE_NULL, MPI_OP_NULL);
                                return decide_uncounted(kBcast, comm, p, bytes, {}, why);
                              });
  const int i = d.i;
  const MPI_Comm pc = d.pc;
  if (nonblocking) {
    if (i < 0) return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
    return nb_launch(comm, request, hold_handles(new NbState, MPI_OP_NULL, datatype),
                     [&](bcc_request* q) { return kNbBcast[i](buffer, size_t(count), datatype, root, pc, q); });
  }
  if (i < 0) return PMPI_Bcast(buffer, count, datatype, root, comm);
  return finish(comm, kFnBcast[i](buffer, size_t(count), datatype, root, pc));
}
/// MPI_Bcast through the selected schedule, or PMPI_Bcast.
int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast_impl(buffer, count, datatype, root, comm, nullptr, false);
}
/// MPI_Ibcast through the selected schedule's `_i` form, or PMPI_Ibcast.
int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  return bcast_impl(buffer, count, datatype, root, comm, request, true);
}

/// MPI_Reduce / MPI_Ireduce through the selected schedule, or PMPI_.
int reduce_impl(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request, bool nonblocking) {
  const bool bad_request = nonblocking && !request;
  const Decision d = decision(
      kReduce, bine::mpi::CallKey(int(kReduce) | int(bad_request) << 8, comm, count, datatype, op, root), comm,
      [&](bool* stable) {
        Reason why = kInvalidArgs;
        uint64_t bytes = 0;
        bine::mpi::CallNeeds needs;
        int p = reduction_checks(comm, count, datatype, op, &bytes, &needs, &why);
        if (p > 0 && (root < 0 || root >= p || bad_request)) p = -1, why = kInvalidArgs;
        *stable = stable_handles(datatype, MPI_DATATYPE_NULL, op);
        return decide_uncounted(kReduce, comm, p, bytes, needs, why);
      });
  const int i = d.i;
  const MPI_Comm pc = d.pc;
  if (nonblocking) {
    if (i < 0) return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
    return nb_launch(comm, request, hold_handles(new NbState, op, datatype), [&](bcc_request* q) {
      return kNbReduce[i](sendbuf, recvbuf, size_t(count), datatype, op, root, pc, q);
    });
  }
  if (i < 0) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  return finish(comm, kFnReduce[i](sendbuf, recvbuf, size_t(count), datatype, op, root, pc));
}
/// MPI_Reduce through the selected schedule, or PMPI_Reduce.
int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  return reduce_impl(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr, false);
}
/// MPI_Ireduce through the selected schedule's `_i` form, or PMPI_Ireduce.
int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
  return reduce_impl(sendbuf, recvbuf, count, datatype, op, root, comm, request, true);
}

/// MPI_Reduce_scatter_block through the selected schedule, or PMPI_Reduce_scatter_block.
int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  return vector_reduction(kReduceScatter, kFnReduceScatter, PMPI_Reduce_scatter_block, sendbuf, recvbuf, recvcount, datatype,
                          op, comm);
}
/// MPI_Ireduce_scatter_block through the selected schedule's `_i` form, or its PMPI_.
int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request* request) {
  return vector_reduction(kReduceScatter, kFnReduceScatter, PMPI_Reduce_scatter_block, sendbuf, recvbuf, recvcount,
                          datatype, op, comm, kNbReduceScatter, PMPI_Ireduce_scatter_block, request);
}

/// MPI_Reduce_scatter / MPI_Ireduce_scatter (issue 21): with every recvcounts[i] equal it
/// is MPI_Reduce_scatter_block (same buffers, same MPI_IN_PLACE meaning: the input in
/// recvbuf, the rank's block left at its start), served by the reduce_scatter_block rules;
/// with unequal counts the same rules choose among the schedules that have an irregular
/// form (`<schedule>_v`, `<schedule>_v_i`), with bytes = the mean block (the sum of the
/// counts x the type size / p). Both are counted under reduce_scatter_block. A fallback
/// goes to PMPI_Reduce_scatter / PMPI_Ireduce_scatter.
int reduce_scatter_impl(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Request* request, bool nonblocking) {
  Reason why = kInvalidArgs;
  int p = comm_size(comm, &why);
  if (p > 0 && (!recvcounts || (nonblocking && !request))) p = -1, why = kInvalidArgs;
  bool equal = true;
  uint64_t total = 0;
  for (int i = 0; i < p; ++i) {
    if (recvcounts[i] < 0) {
      p = -1, why = kInvalidArgs;
      break;
    }
    equal &= recvcounts[i] == recvcounts[0];
    total += uint64_t(recvcounts[i]);
  }
  if (p > 0 && equal)
    return nonblocking ? vector_reduction(kReduceScatter, kFnReduceScatter, PMPI_Reduce_scatter_block, sendbuf, recvbuf,
                                          recvcounts[0], datatype, op, comm, kNbReduceScatter,
                                          PMPI_Ireduce_scatter_block, request)
                       : vector_reduction(kReduceScatter, kFnReduceScatter, PMPI_Reduce_scatter_block, sendbuf, recvbuf,
                                          recvcounts[0], datatype, op, comm);
  bine::mpi::CallNeeds needs;
  int size = 0;
  if (p > 0 && (!type_bytes(datatype, &size) || !op_ok(op, datatype, &needs))) p = -1, why = kInvalidArgs;
  const uint64_t bytes = p > 0 ? total * uint64_t(size) / uint64_t(p) : 0;
  MPI_Comm pc = MPI_COMM_NULL;
  const auto& v = reduce_scatter_v();
  // Zero bytes in all: MPI's (as the other collectives); a mean below one byte still runs.
  if (p > 0 && total == 0) p = -1, why = kEmpty;
  const int i = decide(kReduceScatter, comm, p, bytes == 0 ? 1 : bytes, needs, why, &pc, v.usable.get());
  if (nonblocking) {
    if (i < 0) return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
    static const auto nbs = v_nb(kInfoReduceScatter, kNameReduceScatterV, kNbReduceScatterVList);
    auto* st = hold_handles(new NbState, op, datatype);
    return nb_launch(comm, request, st, [&](bcc_request* q) {
      return nbs[size_t(i)](sendbuf, recvbuf, keep_size_t(st->counts, recvcounts, p), datatype, op, pc, q);
    });
  }
  if (i < 0) return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  return finish(comm, v.fn[size_t(i)](sendbuf, recvbuf, as_size_t(recvcounts, p, 0), datatype, op, pc));
}
/// MPI_Reduce_scatter (see reduce_scatter_impl).
int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  return reduce_scatter_impl(sendbuf, recvbuf, recvcounts, datatype, op, comm, nullptr, false);
}
/// MPI_Ireduce_scatter (see reduce_scatter_impl).
int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Request* request) {
  return reduce_scatter_impl(sendbuf, recvbuf, recvcounts, datatype, op, comm, request, true);
}

/// MPI_Allgatherv / MPI_Iallgatherv (issue 21) through the allgather rules, choosing among
/// the schedules that have an irregular form (`<schedule>_v`, `<schedule>_v_i`), bytes =
/// the mean block (the sum of the counts x the receive type's size / p; every rank passes
/// the same counts); counted under allgather. Non-contiguous types, all counts zero, or no
/// usable schedule: PMPI_. With MPI_IN_PLACE the rank's block is already at displs[rank].
int allgatherv_impl(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, bool nonblocking) {
  Reason why = kInvalidArgs;
  int p = comm_size(comm, &why), rsize = 0, ssize = 0;
  if (p > 0 && (!recvcounts || !displs || (nonblocking && !request))) p = -1, why = kInvalidArgs;
  uint64_t total = 0;
  for (int i = 0; i < p; ++i) {
    if (recvcounts[i] < 0 || displs[i] < 0) {
      p = -1, why = kInvalidArgs;
      break;
    }
    total += uint64_t(recvcounts[i]);
  }
  if (p > 0 && sendbuf != MPI_IN_PLACE && sendcount < 0) p = -1, why = kInvalidArgs;
  if (p > 0 && (!type_bytes(recvtype, &rsize) || (sendbuf != MPI_IN_PLACE && !type_bytes(sendtype, &ssize))))
    p = -1, why = kInvalidArgs;
  if (p > 0 && total == 0) p = -1, why = kEmpty;
  const uint64_t bytes = p > 0 ? std::max<uint64_t>(1, total * uint64_t(rsize) / uint64_t(p)) : 0;
  MPI_Comm pc = MPI_COMM_NULL;
  const auto& v = allgather_v();
  const int i = decide(kAllgather, comm, p, bytes, {}, why, &pc, v.usable.get());
  const size_t sc = size_t(sendbuf == MPI_IN_PLACE ? 0 : sendcount);
  if (nonblocking) {
    if (i < 0) return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
    static const auto nbs = v_nb(kInfoAllgather, kNameAllgatherV, kNbAllgatherVList);
    auto* st = hold_handles(new NbState, MPI_OP_NULL, sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype, recvtype);
    return nb_launch(comm, request, st, [&](bcc_request* q) {
      return nbs[size_t(i)](sendbuf, sc, sendtype, recvbuf, keep_size_t(st->counts, recvcounts, p),
                            keep_size_t(st->displs, displs, p), recvtype, pc, q);
    });
  }
  if (i < 0) return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  return finish(comm, v.fn[size_t(i)](sendbuf, sc, sendtype, recvbuf, as_size_t(recvcounts, p, 0),
                                      as_size_t(displs, p, 1), recvtype, pc));
}
/// MPI_Allgatherv (see allgatherv_impl).
int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return allgatherv_impl(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, nullptr, false);
}
/// MPI_Iallgatherv (see allgatherv_impl).
int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return allgatherv_impl(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request, true);
}

/// MPI_Allgather / MPI_Alltoall and their I forms (collective c) through the selected
/// schedule, or PMPI_. With MPI_IN_PLACE the (ignored) send count and type are taken from
/// the receive side.
int blocks_impl(Coll c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, bool nonblocking) {
  const int sc = sendbuf == MPI_IN_PLACE ? recvcount : sendcount;
  const MPI_Datatype st = sendbuf == MPI_IN_PLACE ? recvtype : sendtype;
  const bool bad_request = nonblocking && !request;
  const Decision d = decision(c, bine::mpi::CallKey(int(c) | int(bad_request) << 8, comm, sc, st, recvcount, recvtype),
                              comm, [&](bool* stable) {
                                Reason why = kInvalidArgs;
                                uint64_t bytes = 0;
                                int p = block_checks(comm, sc, st, recvcount, recvtype, &bytes, &why, true);
                                if (p > 0 && bad_request) p = -1, why = kInvalidArgs;
                                *stable = stable_handles(st, recvtype, MPI_OP_NULL);
                                return decide_uncounted(c, comm, p, bytes, {}, why);
                              });
  const int i = d.i;
  const MPI_Comm pc = d.pc;
  const bool a2a = c == kAlltoall;
  if (nonblocking) {
    if (i < 0)
      return a2a ? PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request)
                 : PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    return nb_launch(comm, request, hold_handles(new NbState, MPI_OP_NULL, st, recvtype), [&](bcc_request* q) {
      return (a2a ? kNbAlltoall : kNbAllgather)[i](sendbuf, size_t(sc), st, recvbuf, size_t(recvcount), recvtype, pc, q);
    });
  }
  if (i < 0)
    return a2a ? PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
               : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return finish(comm, (a2a ? kFnAlltoall : kFnAllgather)[i](sendbuf, size_t(sc), st, recvbuf, size_t(recvcount),
                                                            recvtype, pc));
}
/// MPI_Allgather through the selected schedule, or PMPI_Allgather.
int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return blocks_impl(kAllgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, nullptr, false);
}
/// MPI_Iallgather through the selected schedule's `_i` form, or PMPI_Iallgather.
int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return blocks_impl(kAllgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, true);
}
/// MPI_Alltoall through the selected schedule, or PMPI_Alltoall.
int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return blocks_impl(kAlltoall, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, nullptr, false);
}
/// MPI_Ialltoall through the selected schedule's `_i` form, or PMPI_Ialltoall.
int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return blocks_impl(kAlltoall, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, true);
}

/// MPI_Gather / MPI_Scatter and their I forms (collective c) through the selected
/// schedule, or PMPI_. The arguments MPI ignores (gather: the receive side off the root,
/// the send side with MPI_IN_PLACE at the root; scatter: the send side off the root, the
/// receive side with MPI_IN_PLACE at the root) are replaced by the significant side, so
/// every rank decides from the same block size.
int rooted_impl(Coll c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request, bool nonblocking) {
  const bool gather = c == kGather;
  const bool bad_request = nonblocking && !request;
  // The significant side replaces the ignored one, by this rank's role (rank -1: unknown).
  // It reads only the arguments, so applying it twice changes nothing.
  int sc = sendcount, rc = recvcount;
  MPI_Datatype st = sendtype, rt = recvtype;
  auto significant = [&](int rank) {
    if (rank < 0) return;
    if (gather) {
      if (rank == root && sendbuf == MPI_IN_PLACE) sc = recvcount, st = recvtype;
      if (rank != root) rc = sendcount, rt = sendtype;
    } else {
      if (rank == root && recvbuf == MPI_IN_PLACE) rc = sendcount, rt = sendtype;
      if (rank != root) sc = recvcount, st = recvtype;
    }
  };
  const Decision d = decision(
      c,
      bine::mpi::CallKey(int(c) | int(bad_request) << 8, comm, sendcount, sendtype, recvcount, recvtype, root, sendbuf,
                         recvbuf),
      comm, [&](bool* stable) {
        Reason why = kInvalidArgs;
        uint64_t bytes = 0;
        int rank = -1;
        int p = comm_size(comm, &why);
        if (p > 0 && (root < 0 || root >= p || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || bad_request))
          p = -1, why = kInvalidArgs, rank = -1;
        significant(rank);
        if (p > 0) p = block_checks(comm, sc, st, rc, rt, &bytes, &why, gather);
        *stable = stable_handles(st, rt, MPI_OP_NULL);
        Decision out = decide_uncounted(c, comm, p, bytes, {}, why);
        out.rank = rank;
        return out;
      });
  const int i = d.i;
  const MPI_Comm pc = d.pc;
  significant(d.rank);  // a kept decision's call did not run compute()
  if (nonblocking) {
    if (i < 0)
      return gather ? PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request)
                    : PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
    return nb_launch(comm, request, hold_handles(new NbState, MPI_OP_NULL, st, rt), [&](bcc_request* q) {
      return (gather ? kNbGather : kNbScatter)[i](sendbuf, size_t(sc), st, recvbuf, size_t(rc), rt, root, pc, q);
    });
  }
  if (i < 0)
    return gather ? PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm)
                  : PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  return finish(comm, (gather ? kFnGather : kFnScatter)[i](sendbuf, size_t(sc), st, recvbuf, size_t(rc), rt, root, pc));
}
/// MPI_Gather through the selected schedule, or PMPI_Gather.
int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return rooted_impl(kGather, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, nullptr, false);
}
/// MPI_Igather through the selected schedule's `_i` form, or PMPI_Igather.
int MPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return rooted_impl(kGather, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request, true);
}
/// MPI_Scatter through the selected schedule, or PMPI_Scatter.
int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return rooted_impl(kScatter, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, nullptr, false);
}
/// MPI_Iscatter through the selected schedule's `_i` form, or PMPI_Iscatter.
int MPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return rooted_impl(kScatter, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request, true);
}

/// MPI_Gatherv / MPI_Igatherv (issue 21) through the gather rules, choosing among the
/// schedules that have an irregular form; the decision is decide_rooted_v()'s (only the
/// root knows the counts). Counted under gather.
int gatherv_impl(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request,
                 bool nonblocking) {
  Reason why = kInvalidArgs;
  int rank = -1;
  int p = comm_size(comm, &why);
  if (p > 0 && (root < 0 || root >= p || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || (nonblocking && !request)))
    p = -1;
  uint64_t root_bytes = 0;
  const Reason root_why = p > 0 && rank == root ? rooted_v_root(recvcounts, displs, recvtype, p, &root_bytes) : kNumReasons;
  MPI_Comm pc = MPI_COMM_NULL;
  const auto& v = gather_v();
  const int i = decide_rooted_v(kGather, comm, p, root, nonblocking, root_why, root_bytes, v.usable.get(), &pc);
  const bool at_root = rank == root;
  const size_t sc = size_t(sendbuf == MPI_IN_PLACE || sendcount < 0 ? 0 : sendcount);
  if (nonblocking) {
    if (i < 0)
      return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request);
    static const auto nbs = v_nb(kInfoGather, kNameGatherV, kNbGatherVList);
    auto* st = hold_handles(new NbState, MPI_OP_NULL, sendbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : sendtype,
                            at_root ? recvtype : MPI_DATATYPE_NULL);
    return nb_launch(comm, request, st, [&](bcc_request* q) {
      return nbs[size_t(i)](sendbuf, sc, sendtype, recvbuf, at_root ? keep_size_t(st->counts, recvcounts, p) : nullptr,
                            at_root ? keep_size_t(st->displs, displs, p) : nullptr, recvtype, root, pc, q);
    });
  }
  if (i < 0) return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  return finish(comm, v.fn[size_t(i)](sendbuf, sc, sendtype, recvbuf,
                                      at_root && recvcounts ? as_size_t(recvcounts, p, 0) : nullptr,
                                      at_root && displs ? as_size_t(displs, p, 1) : nullptr, recvtype, root, pc));
}
/// MPI_Gatherv (see gatherv_impl).
int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gatherv_impl(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, nullptr, false);
}
/// MPI_Igatherv (see gatherv_impl).
int MPI_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return gatherv_impl(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, request, true);
}

/// MPI_Scatterv / MPI_Iscatterv (issue 21) through the scatter rules, as gatherv_impl.
int scatterv_impl(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request,
                  bool nonblocking) {
  Reason why = kInvalidArgs;
  int rank = -1;
  int p = comm_size(comm, &why);
  if (p > 0 && (root < 0 || root >= p || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || (nonblocking && !request)))
    p = -1;
  uint64_t root_bytes = 0;
  const Reason root_why = p > 0 && rank == root ? rooted_v_root(sendcounts, displs, sendtype, p, &root_bytes) : kNumReasons;
  MPI_Comm pc = MPI_COMM_NULL;
  const auto& v = scatter_v();
  const int i = decide_rooted_v(kScatter, comm, p, root, nonblocking, root_why, root_bytes, v.usable.get(), &pc);
  const bool at_root = rank == root;
  const size_t rc = size_t(recvbuf == MPI_IN_PLACE || recvcount < 0 ? 0 : recvcount);
  if (nonblocking) {
    if (i < 0)
      return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
    static const auto nbs = v_nb(kInfoScatter, kNameScatterV, kNbScatterVList);
    auto* st = hold_handles(new NbState, MPI_OP_NULL, at_root ? sendtype : MPI_DATATYPE_NULL,
                            recvbuf == MPI_IN_PLACE ? MPI_DATATYPE_NULL : recvtype);
    return nb_launch(comm, request, st, [&](bcc_request* q) {
      return nbs[size_t(i)](sendbuf, at_root ? keep_size_t(st->counts, sendcounts, p) : nullptr,
                            at_root ? keep_size_t(st->displs, displs, p) : nullptr, sendtype, recvbuf, rc, recvtype,
                            root, pc, q);
    });
  }
  if (i < 0) return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  return finish(comm, v.fn[size_t(i)](sendbuf, at_root && sendcounts ? as_size_t(sendcounts, p, 0) : nullptr,
                                      at_root && displs ? as_size_t(displs, p, 1) : nullptr, sendtype, recvbuf, rc,
                                      recvtype, root, pc));
}
/// MPI_Scatterv (see scatterv_impl).
int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatterv_impl(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, nullptr, false);
}
/// MPI_Iscatterv (see scatterv_impl).
int MPI_Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return scatterv_impl(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request, true);
}

/// MPI_Alltoallv / MPI_Ialltoallv (issue 21) through the alltoall rules, choosing among the
/// schedules that have an irregular form (proved direct: every message one item, sender to
/// receiver). Every rank holds other counts, so the decision is made from p alone: when the
/// table's alltoall choice can depend on the bytes, such calls go to MPI (no rule applies).
/// Counted under alltoall. The generated form checks the arguments (non-contiguous types
/// and MPI_IN_PLACE are served).
int alltoallv_impl(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request, bool nonblocking) {
  Reason why = kInvalidArgs;
  int p = comm_size(comm, &why);
  if (p > 0 && ((nonblocking && !request) || !recvcounts || !rdispls ||
                (sendbuf != MPI_IN_PLACE && (!sendcounts || !sdispls))))
    p = -1, why = kInvalidArgs;
  load_config();
  if (p > 0 && depends_on_bytes(kAlltoall)) p = -1, why = kNotIrregular;
  MPI_Comm pc = MPI_COMM_NULL;
  const auto& v = alltoall_v();
  const int i = decide(kAlltoall, comm, p, 1, {}, why, &pc, v.usable.get());
  const bool ip = sendbuf == MPI_IN_PLACE;
  if (nonblocking) {
    if (i < 0)
      return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                             request);
    static const auto nbs = v_nb(kInfoAlltoall, kNameAlltoallV, kNbAlltoallVList);
    auto* st = hold_handles(new NbState, MPI_OP_NULL, ip ? MPI_DATATYPE_NULL : sendtype, recvtype);
    return nb_launch(comm, request, st, [&](bcc_request* q) {
      // counts / displs hold the send side then the receive side (2p entries each).
      st->counts.assign(size_t(2 * p), 0);
      st->displs.assign(size_t(2 * p), 0);
      for (int k = 0; k < p; ++k) {
        if (!ip) st->counts[size_t(k)] = size_t(sendcounts[k]), st->displs[size_t(k)] = size_t(sdispls[k]);
        st->counts[size_t(p + k)] = size_t(recvcounts[k]), st->displs[size_t(p + k)] = size_t(rdispls[k]);
      }
      return nbs[size_t(i)](sendbuf, ip ? nullptr : st->counts.data(), ip ? nullptr : st->displs.data(), sendtype,
                            recvbuf, st->counts.data() + p, st->displs.data() + p, recvtype, pc, q);
    });
  }
  if (i < 0)
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  thread_local std::vector<size_t> sc, sd;
  if (!ip) sc.assign(sendcounts, sendcounts + p), sd.assign(sdispls, sdispls + p);
  return finish(comm, v.fn[size_t(i)](sendbuf, ip ? nullptr : sc.data(), ip ? nullptr : sd.data(), sendtype, recvbuf,
                                      as_size_t(recvcounts, p, 0), as_size_t(rdispls, p, 1), recvtype, pc));
}
/// MPI_Alltoallv (see alltoallv_impl).
int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoallv_impl(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, nullptr,
                        false);
}
/// MPI_Ialltoallv (see alltoallv_impl).
int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  return alltoallv_impl(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, request,
                        true);
}

/// MPI_Op_free: a user operator that a nonblocking call of ours still uses is only marked
/// (*op becomes MPI_OP_NULL; PMPI_Op_free runs when the call completes, see HeldHandles).
int MPI_Op_free(MPI_Op* op) {
  if (op && *op != MPI_OP_NULL && defer_free(&HeldHandles::ops, *op)) {
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
  }
  return PMPI_Op_free(op);
}
/// MPI_Type_free: a derived datatype that a nonblocking call of ours still uses is only
/// marked (*datatype becomes MPI_DATATYPE_NULL; PMPI_Type_free runs when the call completes).
int MPI_Type_free(MPI_Datatype* datatype) {
  if (datatype && *datatype != MPI_DATATYPE_NULL && defer_free(&HeldHandles::types, *datatype)) {
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
  }
  return PMPI_Type_free(datatype);
}

// Completion: while calls of ours are in flight, every wait polls (nb_drive() between
// PMPI_Test* calls), so that ours progress and complete; otherwise straight to PMPI_.

/// MPI_Wait: advances our calls in flight while it waits.
int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!nb_polling()) return PMPI_Wait(request, status);
  for (;;) {
    nb_drive();
    int flag = 0;
    const int rc = PMPI_Test(request, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}
/// MPI_Test: advances our calls in flight first.
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  nb_drive();
  return PMPI_Test(request, flag, status);
}
/// MPI_Waitall: advances our calls in flight while it waits.
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!nb_polling()) return PMPI_Waitall(count, requests, statuses);
  for (;;) {
    nb_drive();
    int flag = 0;
    const int rc = PMPI_Testall(count, requests, &flag, statuses);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}
/// MPI_Testall: advances our calls in flight first.
int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  nb_drive();
  return PMPI_Testall(count, requests, flag, statuses);
}
/// MPI_Waitany: advances our calls in flight while it waits.
int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!nb_polling()) return PMPI_Waitany(count, requests, index, status);
  for (;;) {
    nb_drive();
    int flag = 0;
    const int rc = PMPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}
/// MPI_Testany: advances our calls in flight first.
int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  nb_drive();
  return PMPI_Testany(count, requests, index, flag, status);
}
/// MPI_Waitsome: advances our calls in flight while it waits.
int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!nb_polling()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  for (;;) {
    nb_drive();
    const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;  // MPI_UNDEFINED: no active request
  }
}
/// MPI_Testsome: advances our calls in flight first.
int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  nb_drive();
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

}  // extern "C"
