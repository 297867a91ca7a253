// Dispatchers of the MPI target (`bine-cc compile --dispatch TABLE`, docs/cli.md "compile"):
// per collective of a selection table, `<prefix><key>` with the MPI collective's signature
// (size_t counts) that picks one of the emitted schedules per call by the table's rules, or
// calls the MPI library's collective. The choice itself is bine::mpi::dispatch_choose()
// (runtime/include/bine/dispatch.hpp), shared with the PMPI drop-in library.
#include <algorithm>
#include <limits>
#include <ostream>

#include "emit_mpi.h"

namespace bine {

namespace {

/// What the emitter needs of one collective key: the collective, the dispatcher's
/// parameters, the CallShape expression, the MPI library's call, and the counts that call
/// takes as int (checked against INT_MAX on the fallback path; the condition under which
/// MPI reads them).
struct DispatchForm {
  Collective collective;  ///< its key, parameters and the generated schedule's arguments: bine/collective.hpp's table
  const char* shape;     ///< fills `s` (bine::mpi::CallShape); false: leave the call to MPI
  const char* fallback;  ///< the MPI library's call
  const char* too_big;   ///< condition: a count MPI reads exceeds INT_MAX; "" when none
  const char* big;       ///< the count named in the error
};

const DispatchForm kForms[] = {
    {Collective::allreduce, "bine::mpi::call_shape(comm, count, datatype, op, &s)",
     "MPI_Allreduce(sendbuf, recvbuf, int(count), datatype, op, comm)",
     "count > size_t(INT_MAX)", "count"},
    {Collective::bcast, "bine::mpi::call_shape(comm, count, datatype, MPI_OP_NULL, &s)",
     "MPI_Bcast(buffer, int(count), datatype, root, comm)",
     "count > size_t(INT_MAX)", "count"},
    {Collective::reduce, "bine::mpi::call_shape(comm, count, datatype, op, &s)",
     "MPI_Reduce(sendbuf, recvbuf, int(count), datatype, op, root, comm)",
     "count > size_t(INT_MAX)", "count"},
    {Collective::allgather, "bine::mpi::call_shape(comm, sendbuf == MPI_IN_PLACE ? recvcount : sendcount, sendbuf == MPI_IN_PLACE ? recvtype : sendtype, MPI_OP_NULL, &s)",
     "MPI_Allgather(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, comm)",
     "recvcount > size_t(INT_MAX) || (sendbuf != MPI_IN_PLACE && sendcount > size_t(INT_MAX))", "sendbuf != MPI_IN_PLACE && sendcount > recvcount ? sendcount : recvcount"},
    {Collective::gather, "bine::mpi::rooted_shape(comm, true, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, &s)",
     "MPI_Gather(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, root, comm)",
     "sendcount > size_t(INT_MAX) || recvcount > size_t(INT_MAX)", "sendcount > recvcount ? sendcount : recvcount"},
    {Collective::scatter, "bine::mpi::rooted_shape(comm, false, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, &s)",
     "MPI_Scatter(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, root, comm)",
     "sendcount > size_t(INT_MAX) || recvcount > size_t(INT_MAX)", "sendcount > recvcount ? sendcount : recvcount"},
    {Collective::reduce_scatter, "bine::mpi::call_shape(comm, recvcount, datatype, op, &s)",
     "MPI_Reduce_scatter_block(sendbuf, recvbuf, int(recvcount), datatype, op, comm)",
     "recvcount > size_t(INT_MAX)", "recvcount"},
    {Collective::alltoall, "bine::mpi::call_shape(comm, sendbuf == MPI_IN_PLACE ? recvcount : sendcount, sendbuf == MPI_IN_PLACE ? recvtype : sendtype, MPI_OP_NULL, &s)",
     "MPI_Alltoall(sendbuf, int(sendcount), sendtype, recvbuf, int(recvcount), recvtype, comm)",
     "recvcount > size_t(INT_MAX) || (sendbuf != MPI_IN_PLACE && sendcount > size_t(INT_MAX))", "sendbuf != MPI_IN_PLACE && sendcount > recvcount ? sendcount : recvcount"},
    {Collective::scan, "bine::mpi::call_shape(comm, count, datatype, op, &s)",
     "MPI_Scan(sendbuf, recvbuf, int(count), datatype, op, comm)",
     "count > size_t(INT_MAX)", "count"},
    {Collective::exscan, "bine::mpi::call_shape(comm, count, datatype, op, &s)",
     "MPI_Exscan(sendbuf, recvbuf, int(count), datatype, op, comm)",
     "count > size_t(INT_MAX)", "count"},
    {Collective::barrier, "bine::mpi::call_shape(comm, 0, MPI_BYTE, MPI_OP_NULL, &s)",
     "MPI_Barrier(comm)",
     "", ""},
};

const DispatchForm* find_form(const std::string& key) {
  for (const DispatchForm& f : kForms)
    if (key == collective_key(f.collective)) return &f;
  return nullptr;
}

/// The schedules of `programs` a rule may name for collective c, as emitted_function_name().
const RankProgram* find_program(const std::vector<const RankProgram*>& programs, Collective c, const std::string& name,
                                const std::string& prefix) {
  for (const RankProgram* rp : programs)
    if (rp->decl->collective == c && (rp->decl->name == name || prefix + rp->decl->name == name)) return rp;
  return nullptr;
}

/// The schedules a collective's rules name, in order of first use (the dispatcher's
/// ScheduleInfo array), as indices into `programs`.
std::vector<size_t> used_schedules(const DispatchForm& f, const std::vector<SelectionRule>& rules,
                                   const std::vector<const RankProgram*>& programs, const std::string& prefix) {
  std::vector<size_t> used;
  for (const SelectionRule& r : rules) {
    if (r.schedule == "mpi") continue;
    const RankProgram* rp = find_program(programs, f.collective, r.schedule, prefix);
    if (!rp) continue;  // check_dispatch_table() refused the table before
    const size_t i = size_t(std::find(programs.begin(), programs.end(), rp) - programs.begin());
    if (std::find(used.begin(), used.end(), i) == used.end()) used.push_back(i);
  }
  return used;
}

std::string bound(int64_t v) { return v == std::numeric_limits<int64_t>::max() ? "INT64_MAX" : std::to_string(v) + "LL"; }
std::string bound(uint64_t v) {
  return v == std::numeric_limits<uint64_t>::max() ? "UINT64_MAX" : std::to_string(v) + "ULL";
}

}  // namespace

std::vector<std::string> dispatch_names(const SelectionTable& table, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& [key, rules] : table.collectives) {
    names.push_back(prefix + key);
    names.push_back(prefix + key + "_choice");
  }
  return names;
}

std::string check_dispatch_table(const SelectionTable& table, const std::vector<const RankProgram*>& programs,
                                 const std::string& prefix) {
  for (const auto& [key, rules] : table.collectives) {
    const DispatchForm& f = *find_form(key);
    for (size_t k = 0; k < rules.size(); ++k) {
      const SelectionRule& r = rules[k];
      if (r.schedule == "mpi" || find_program(programs, f.collective, r.schedule, prefix)) continue;
      std::string have;
      for (const RankProgram* rp : programs)
        if (rp->decl->collective == f.collective) have += std::string(have.empty() ? "" : ", ") + rp->decl->name;
      return "selection table " + table.source + ": " + key + " rule " + std::to_string(k) + ": schedule \"" +
             r.schedule + "\" is not a verified " + collective_name(f.collective) +
             " schedule of this compilation (emitted: " + (have.empty() ? "none" : have) + "; or \"mpi\")";
    }
  }
  return "";
}

void emit_dispatch_prototypes(std::ostream& o, const SelectionTable& table, const std::string& prefix) {
  for (const auto& [key, rules] : table.collectives) {
    const DispatchForm& f = *find_form(key);
    const std::string mpi = std::string(f.fallback).substr(0, std::string(f.fallback).find('('));
    o << "/// Dispatcher (selection table " << table.source << ", " << rules.size() << " rules; docs/pmpi.md):\n"
      << "/// runs the schedule that the first matching rule names for this call's p and message\n"
      << "/// bytes (for a non-commutative operator: an order-preserving one; for an operator whose\n"
      << "/// bits depend on the bracketing, such as floating-point sums and any user operator: one\n"
      << "/// proved to bracket alike on all ranks, unless the rule says \"any_bracketing\"), or " << mpi << "\n"
      << "/// when that rule says \"mpi\" or no rule's schedule applies, or on an intercommunicator\n"
      << "/// or an argument MPI rejects" << (f.too_big[0] ? " (a count above INT_MAX there: MPI_ERR_COUNT)" : "")
      << ". Returns what the chosen function returns.\n";
    o << "int " << prefix << key << "(" << collective_info(f.collective).params << ");\n";
    o << "/// The dispatcher's choice for p ranks, `bytes` message bytes (as the table counts them), an\n"
      << "/// operator of that commutativity (1 without one) and `same_bracketing` 1 when the operator\n"
      << "/// needs the same bracketing on all ranks (bine::mpi::bracketing_sensitive(); 0 without one):\n"
      << "/// the schedule's function name, or \"mpi\". Static storage; no MPI calls.\n";
    o << "const char* " << prefix << key << "_choice(int p, size_t bytes, int commutative, int same_bracketing);\n";
  }
}

void emit_dispatch_definitions(std::ostream& o, const SelectionTable& table,
                               const std::vector<const RankProgram*>& programs,
                               const std::vector<ProofSummary>& proofs, const std::string& prefix) {
  if (table.collectives.empty()) return;
  o << "// Dispatchers (selection table " << table.source << ")\n#include <climits>\n#include \"bine/dispatch.hpp\"\n\n";
  for (const auto& [key, rules] : table.collectives) {
    const DispatchForm& f = *find_form(key);
    const std::string fn = prefix + key;
    const std::string tab = "bine_dispatch_" + fn;
    const std::vector<size_t> used = used_schedules(f, rules, programs, prefix);
    o << "static const bine::mpi::ScheduleInfo " << tab << "_info[] = {";
    for (size_t i : used) {
      const std::string name = emitted_function_name(*programs[i]->decl, prefix);
      o << "\n    {\"" << name << "\", " << name << "_applicable, " << (proofs[i].order_preserving ? "true" : "false")
        << ", " << (proofs[i].same_bracketing ? "true" : "false") << "},";
    }
    o << "\n    {nullptr, nullptr, false, false}};\n";
    o << "static const bine::mpi::DispatchRule " << tab << "_rules[] = {";
    for (const SelectionRule& r : rules) {
      int index = -1;  // DispatchRule::kRuleMpi
      if (r.schedule != "mpi") {
        const RankProgram* rp = find_program(programs, f.collective, r.schedule, prefix);
        const size_t i = size_t(std::find(programs.begin(), programs.end(), rp) - programs.begin());
        index = int(std::find(used.begin(), used.end(), i) - used.begin());
      }
      o << "\n    {" << bound(r.p_min) << ", " << bound(r.p_max) << ", " << bound(r.bytes_min) << ", "
        << bound(r.bytes_max) << ", " << index << ", " << (r.any_bracketing ? "true" : "false") << "},  // "
        << r.schedule;
    }
    o << "\n    {0, -1, 0, 0, -1, false}};  // never matches (keeps the array non-empty)\n";
    o << "extern \"C\" const char* " << fn << "_choice(int p, size_t bytes, int commutative, int same_bracketing) {\n"
      << "  const int i = bine::mpi::dispatch_choose(" << tab << "_rules, " << rules.size() << ", " << tab
      << "_info, p, uint64_t(bytes), bine::mpi::CallNeeds{commutative == 0, same_bracketing != 0});\n"
      << "  return i >= 0 ? " << tab << "_info[i].name : \"mpi\";\n}\n";
    o << "extern \"C\" int " << fn << "(" << collective_info(f.collective).params << ") {\n"
      << "  bine::mpi::CallShape s;\n"
      << "  if (" << f.shape << ") {\n"
      << "    switch (bine::mpi::dispatch_choose(" << tab << "_rules, " << rules.size() << ", " << tab
      << "_info, s.p, s.bytes, s.needs())) {\n";
    for (size_t k = 0; k < used.size(); ++k)
      o << "      case " << k << ":\n        return " << emitted_function_name(*programs[used[k]]->decl, prefix) << "("
        << collective_info(f.collective).args << ");\n";
    o << "      default:\n        break;\n    }\n  }\n";
    if (f.too_big[0])
      o << "  if (" << f.too_big << ") return bine::mpi::count_exceeds_int(\"" << fn << "\", uint64_t(" << f.big
        << "));\n";
    o << "  return " << f.fallback << ";\n}\n\n";
  }
}

}  // namespace bine
