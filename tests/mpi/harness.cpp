// End-to-end test of generated code under a real MPI (docs/testing.md).
//
//   harness check          every generated allreduce / bcast against MPI_Allreduce / MPI_Bcast
//                          on the same data: counts {0, 1, 7, 1000, 3p+1}, MPI_INT and
//                          MPI_DOUBLE, MPI_SUM and MPI_MAX, in place and not, several roots,
//                          a 3-int contiguous type; the send buffer must be left untouched;
//                          a non-commutative 2x2 matrix product must match the sequential
//                          product M_0 M_1 ... M_{p-1} when the verifier marked the schedule
//                          order-preserving, and be refused with MPI_ERR_OP otherwise.
//   harness check-twice    the check matrix twice, with other data the second time (the
//                          second pass replays the persistent plans the first built)
//   harness check-thrice   the check matrix three times, other data each time: the third
//                          pass runs the flat plans the second recorded (some must)
//   harness flat           the flat replay's own cases (run_flat())
//   harness check-persistent  the check matrix through the persistent forms (<name>_init,
//                          bcc_plan_start twice, once for in-place cases, then bcc_plan_free)
//   harness check-nonblocking  the check matrix through the nonblocking forms (<name>_i,
//                          bcc_wait), then every allreduce, allgather, scan and bcast schedule
//                          and a barrier in flight at once, waited for in rank-dependent
//                          orders, and a blocking call made while a barrier is in flight
//   harness trace DIR      records, through the PMPI shim, every call each schedule makes for
//                          a few (root, count) pairs, each twice (building, then replaying
//                          the persistent plan), and writes DIR/trace.<rank>.json for
//                          tests/mpi/validate_traces.py to compare with `bine-cc schedule`.
//   harness registrations  (uTofu build) send-buffer registrations per call and per
//                          persistent start, counted by the emulation (run_registrations())
// Exit status 0 when every rank saw only matches.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <ctime>
#include <type_traits>
#include <fstream>
#include <string>
#include <vector>

#define BINE_IMPLEMENTATION
#include "bine_lib.h"
#include "pmpi_trace.h"

namespace {

using AllreduceFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
using BcastFn = int (*)(void*, size_t, MPI_Datatype, int, MPI_Comm);
using ReduceFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);
using AllgatherFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
using RootedBlocksFn = int (*)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm);
using ReduceScatterFn = int (*)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
using BarrierFn = int (*)(MPI_Comm);
using AllgathervFn = int (*)(const void*, size_t, MPI_Datatype, void*, const size_t*, const size_t*, MPI_Datatype, MPI_Comm);
using GathervFn = int (*)(const void*, size_t, MPI_Datatype, void*, const size_t*, const size_t*, MPI_Datatype, int,
                          MPI_Comm);
using AlltoallvFn = int (*)(const void*, const size_t*, const size_t*, MPI_Datatype, void*, const size_t*, const size_t*,
                            MPI_Datatype, MPI_Comm);
using ScattervFn = int (*)(const void*, const size_t*, const size_t*, MPI_Datatype, void*, size_t, MPI_Datatype, int,
                           MPI_Comm);
/// check-persistent: every call goes through the function's persistent form (_init, then
/// bcc_plan_start twice, once for an in-place case, whose second start would reduce or
/// shift again, then bcc_plan_free).
bool persistent = false;
/// check-nonblocking: every call goes through the function's nonblocking form (_i, then
/// bcc_wait).
bool nonblocking = false;
/// Set by a case that calls in place on some rank (the same value on every rank, so that
/// every rank starts its plan as often); read and cleared by Entry::call.
bool in_place_case = false;

template <class F>
struct Entry;
template <class... A>
struct Entry<int (*)(A...)> {
  const char* name;
  int (*fn)(A...);
  int (*init)(A..., bcc_plan*);  ///< the persistent form
  int (*nb)(A..., bcc_request*);  ///< the nonblocking form
  bool order_preserving;
  int (*applicable)(int);  ///< from the verifier: 0 when `requires` excludes p
  const char* (*why)(int);  ///< from the verifier: the false `requires` clause at p

  int call(A... a) const {
    if (nonblocking) {
      in_place_case = false;
      bcc_request rq = nullptr;
      const int rc = nb(a..., &rq);
      if (rc != MPI_SUCCESS) return rq == nullptr ? rc : MPI_ERR_OTHER;  // a refused start leaves no request
      return bcc_wait(&rq);
    }
    if (!persistent) {
      in_place_case = false;
      return fn(a...);
    }
    bcc_plan plan = nullptr;
    int rc = init(a..., &plan);
    if (rc != MPI_SUCCESS) return rc;
    const int starts = in_place_case ? 1 : 2;
    in_place_case = false;
    for (int k = 0; k < starts && rc == MPI_SUCCESS; ++k) rc = bcc_plan_start(plan);
    const int frc = bcc_plan_free(&plan);
    return rc != MPI_SUCCESS ? rc : plan != nullptr ? MPI_ERR_OTHER : frc;
  }
};

#define BINE_ENTRY(f, order, same) {#f, f, f##_init, f##_i, order != 0, f##_applicable, f##_requires},
using AllreduceEntry = Entry<AllreduceFn>;
using BcastEntry = Entry<BcastFn>;
const std::vector<AllreduceEntry> kAllreduce = {BCC_ALLREDUCE_SCHEDULES(BINE_ENTRY)};
const std::vector<BcastEntry> kBcast = {BCC_BCAST_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<ReduceFn>> kReduce = {BCC_REDUCE_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<AllgatherFn>> kAllgather = {BCC_ALLGATHER_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<RootedBlocksFn>> kGather = {BCC_GATHER_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<RootedBlocksFn>> kScatter = {BCC_SCATTER_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<ReduceScatterFn>> kReduceScatter = {BCC_REDUCE_SCATTER_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<AllgatherFn>> kAlltoall = {BCC_ALLTOALL_SCHEDULES(BINE_ENTRY)};
const std::vector<AllreduceEntry> kScan = {BCC_SCAN_SCHEDULES(BINE_ENTRY)};
const std::vector<AllreduceEntry> kExscan = {BCC_EXSCAN_SCHEDULES(BINE_ENTRY)};
const std::vector<Entry<BarrierFn>> kBarrier = {BCC_BARRIER_SCHEDULES(BINE_ENTRY)};
// The irregular forms (registry X(<schedule>_v, order, same)): <schedule>_v, its
// persistent form <schedule>_v_init and its nonblocking form <schedule>_v_i; applicability
// is the schedule's own (the regular entries test it).
#define BINE_VENTRY(f, order, same) {#f, f, f##_init, f##_i, order != 0, nullptr, nullptr},
using VEntry = Entry<AllgathervFn>;
const std::vector<VEntry> kAllgatherv = {BCC_ALLGATHERV_SCHEDULES(BINE_VENTRY)};
template <class F>
using RootedVEntry = Entry<F>;
const std::vector<RootedVEntry<GathervFn>> kGatherv = {BCC_GATHERV_SCHEDULES(BINE_VENTRY)};
const std::vector<RootedVEntry<ScattervFn>> kScatterv = {BCC_SCATTERV_SCHEDULES(BINE_VENTRY)};
const std::vector<Entry<AlltoallvFn>> kAlltoallv = {BCC_ALLTOALLV_SCHEDULES(BINE_VENTRY)};

int rank = 0, size = 1;
long failures = 0, cases = 0;
bool fatal_handler = false;

void fail(const std::string& what) {
  ++failures;
  if (failures < 20) std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
}

/// The region sizes of BINE_REGIONS, in region order, computed here from the spec (docs/
/// topology.md: K consecutive ranks per region, rr:N round-robin, map:L0,L1,...), apart from
/// the runtime's reading of it; one region when unset or `node` (mpirun on one host: one
/// node); empty for a spec this does not read (a bad one: regions-refused mode).
std::vector<int64_t> layout_sizes() {
  const char* env = std::getenv("BINE_REGIONS");
  const std::string spec = env ? env : "";
  if (spec.empty() || spec == "node" || spec == "one") return {int64_t(size)};
  std::vector<int64_t> label(size_t(size), 0);
  if (spec.rfind("rr:", 0) == 0) {
    const int64_t n = std::atoll(spec.c_str() + 3);
    if (n < 1) return {};
    for (int x = 0; x < size; ++x) label[size_t(x)] = x % n;
  } else if (spec.rfind("map:", 0) == 0) {
    size_t at = 4, x = 0;
    for (; x < label.size() && at <= spec.size(); ++x) {
      const size_t comma = spec.find(',', at);
      label[x] = std::atoll(spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at).c_str());
      at = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    }
    if (x != label.size() || at <= spec.size()) return {};
  } else {
    const int64_t k = std::atoll(spec.c_str());
    if (k < 1) return {};
    for (int x = 0; x < size; ++x) label[size_t(x)] = x / k;
  }
  std::vector<int64_t> seen, count;  // labels in order of their lowest rank
  for (int64_t l : label) {
    const auto it = std::find(seen.begin(), seen.end(), l);
    if (it == seen.end()) seen.push_back(l), count.push_back(1);
    else ++count[size_t(it - seen.begin())];
  }
  return count;
}

/// A refusal naming one of the library's region clauses (dsl/lib/hierarchical.bine): under
/// BINE_REGIONS the layout is not the compiler's (one region), so the header's
/// _applicable(p) cannot predict it. Expected exactly when the clause, evaluated here on
/// layout_sizes(), is false; a refusal for a clause that holds is a failure.
bool region_refusal(const char* name, int rc) {
  if (rc != MPI_ERR_OTHER) return false;
  const std::string text = bcc_last_error();
  const std::string head = std::string(name) + ": does not apply at p = " + std::to_string(size) + ": requires ";
  if (text.rfind(head, 0) != 0) return false;
  const std::string clause = text.substr(head.size());
  const std::vector<int64_t> sz = layout_sizes();
  if (sz.empty()) return false;
  auto pow2 = [](int64_t x) { return x >= 1 && (x & (x - 1)) == 0; };
  bool equal = true;
  for (int64_t x : sz) equal = equal && x == sz[0];
  bool holds = false;
  if (clause == "equal_regions()") holds = equal;
  else if (clause == "is_pow2(regions()) && is_pow2(region_size(0))") holds = pow2(int64_t(sz.size())) && pow2(sz[0]);
  else return false;
  if (holds) fail(std::string(name) + ": refused for '" + clause + "', which this layout satisfies");
  return true;
}

/// True when `rc` is the refusal the verifier predicts: MPI_ERR_OTHER where `requires`
/// excludes p (or a region clause excludes the layout: region_refusal()). The runtime's
/// error text must then give the same reason as the header's _requires (both come from the
/// clause's source text, by different paths), and name the function and p.
template <class E>
bool refused(const E& e, int rc) {
  if (region_refusal(e.name, rc)) return true;
  if (rc != MPI_ERR_OTHER || e.applicable(size) != 0) return false;
  const std::string want = std::string(e.name) + ": does not apply at p = " + std::to_string(size) + ": requires " +
                           e.why(size);
  if (want != bcc_last_error()) fail(std::string(e.name) + ": error text '" + bcc_last_error() + "', expected '" + want + "'");
  return true;
}

/// A successful call leaves no error text; a refused one names the reason (`needle`).
void check_error_text(const char* name, int rc, const char* needle) {
  const std::string text = bcc_last_error();
  if (rc == MPI_SUCCESS ? !text.empty() : text.rfind(std::string(name) + ": ", 0) != 0 || text.find(needle) == std::string::npos)
    fail(std::string(name) + ": rc " + std::to_string(rc) + " with error text '" + text + "' (expected " +
         (rc == MPI_SUCCESS ? std::string("none") : "'" + std::string(needle) + "'") + ")");
}

/// Element counts for the vector collectives: issue 2's {0, 1, 7, 1000, not divisible by p}
/// and issue 3's {13, 4096 + 3}.
std::vector<size_t> counts() {
  return {0, 1, 7, 13, 1000, 4096 + 3, size_t(3 * size + 1)};
}

int data_salt = 0;  ///< changes every value (check-twice: the second pass's data differ)

template <class T>
T value(int r, size_t i) {
  return T(int((r * 131 + int(i) * 7 + data_salt * 389) % 1000) - 500);
}

/// The MPI library's collectives with the signature of MPI_Allreduce (the oracles).
using VectorOracle = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);

/// One call of a vector reduction (allreduce, scan, exscan) against the MPI library's
/// `oracle` on the same data; the result is compared where `significant` (exscan's rank 0 is
/// undefined); the send buffer must be left untouched.
template <class T>
void vector_case(const AllreduceEntry& e, VectorOracle oracle, const char* oracle_name, bool significant, MPI_Datatype dt,
                 MPI_Op op, size_t n, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  std::vector<T> send(n), expect(n, T(-7777)), got(n), send_copy;
  for (size_t i = 0; i < n; ++i) send[i] = value<T>(rank, i);
  send_copy = send;
  oracle(send.data(), expect.data(), int(n), dt, op, MPI_COMM_WORLD);
  int rc;
  if (in_place) {
    got = send;
    rc = e.call(MPI_IN_PLACE, got.data(), n, dt, op, MPI_COMM_WORLD);
  } else {
    for (auto& g : got) g = T(-7777);
    rc = e.call(send.data(), got.data(), n, dt, op, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " n=" + std::to_string(n) +
                          (in_place ? " in-place" : "") + (dt == MPI_INT ? " int" : " double") + (op == MPI_SUM ? " sum" : " max");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  check_error_text(e.name, rc, "");  // success clears the text
  if (significant && n > 0 && std::memcmp(got.data(), expect.data(), n * sizeof(T)) != 0)
    fail(tag + ": result differs from " + oracle_name);
  if (!in_place && send != send_copy) fail(tag + ": send buffer modified");
}

template <class T>
void allreduce_case(const AllreduceEntry& e, MPI_Datatype dt, MPI_Op op, size_t n, bool in_place) {
  vector_case<T>(e, MPI_Allreduce, "MPI_Allreduce", true, dt, op, n, in_place);
}

// 2x2 matrices of uint32 (mod 2^32): a non-commutative, associative operator.
void matmul(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint32_t* a = static_cast<const uint32_t*>(in);
  uint32_t* b = static_cast<uint32_t*>(inout);
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    const uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                           a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, c, sizeof c);
  }
}

/// Sequential reference M_0 M_1 ... M_last of 2x2 matrices (last = p - 1 by default),
/// entry(r, j) giving entry j of rank r's matrix.
template <class Entry4>
void sequential_product(const Entry4& entry, uint32_t* out, int last = -1) {
  if (last < 0) last = size - 1;
  uint32_t acc[4] = {entry(0, 0), entry(0, 1), entry(0, 2), entry(0, 3)};
  for (int r = 1; r <= last; ++r) {
    uint32_t b[4] = {entry(r, 0), entry(r, 1), entry(r, 2), entry(r, 3)};
    int one = 1;
    matmul(acc, b, &one, nullptr);  // b = acc b
    std::memcpy(acc, b, sizeof acc);
  }
  std::memcpy(out, acc, sizeof acc);
}

/// A non-commutative operator (2x2 matrix product) through a vector reduction: this rank
/// must hold the sequential product M_0 ... M_last (allreduce: last = p - 1; scan: the
/// rank; exscan: the rank - 1, nothing compared on rank 0).
void noncommutative_case(const AllreduceEntry& e, MPI_Datatype mat, MPI_Op op, size_t n, int last) {
  auto m = [](int r, size_t i, int j) { return uint32_t((r + 1) * 2654435761u + i * 40503u + uint32_t(j) * 977u) % 7u; };
  std::vector<uint32_t> send(4 * n), got(4 * n, 0), expect(4 * n);
  for (size_t i = 0; i < n; ++i)
    for (int j = 0; j < 4; ++j) send[4 * i + size_t(j)] = m(rank, i, j);
  for (size_t i = 0; i < n && last >= 0; ++i)
    sequential_product([&](int r, int j) { return m(r, i, j); }, &expect[4 * i], last);
  const int rc = e.call(send.data(), got.data(), n, mat, op, MPI_COMM_WORLD);
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " n=" + std::to_string(n) + " matrix product";
  // Proved order-preserving for every p: must be accepted. Otherwise MPI_ERR_OP is allowed
  // (the p at hand may be one where order was not proved), but an accepted call must be right.
  if (rc == MPI_ERR_OP && !e.order_preserving) return check_error_text(e.name, rc, "not commutative");
  // Outside the p where `requires` holds the call must fail: MPI_ERR_OTHER (the requirement)
  // or MPI_ERR_OP (order was proved only where the schedule applies).
  if (refused(e, rc) || (rc == MPI_ERR_OP && e.applicable(size) == 0)) return;
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (last >= 0 && got != expect) fail(tag + ": differs from the sequential product");
}

/// Scan (exclusive = false) or exscan against MPI_Scan / MPI_Exscan on the same data;
/// exscan's rank 0 result is undefined and not compared.
template <class T>
void scan_case(const AllreduceEntry& e, bool exclusive, MPI_Datatype dt, MPI_Op op, size_t n, bool in_place) {
  vector_case<T>(e, exclusive ? MPI_Exscan : MPI_Scan, exclusive ? "MPI_Exscan" : "MPI_Scan", !(exclusive && rank == 0), dt, op,
                 n, in_place);
}


/// Allgatherv against MPI_Allgatherv on the same layout: `layout` 0 = counts drawn from a
/// seeded generator (0..9), 1 = zero counts on every other rank, 2 = one rank holding 99%
/// of the data, 3 = all zero; displacements in rank order without gaps (`shuffled` false,
/// the in-recvbuf path) or in reverse rank order with gaps of 3 elements; datatypes MPI_INT
/// and a resized int (extent 2 ints: every other int, non-contiguous); in place or not. The
/// gaps of recvbuf must keep their sentinel.
/// The block layout of an irregular case (see allgatherv_case): counts and displacements
/// per rank; returns the elements recvbuf / sendbuf spans (displacements and gaps included).
/// `heavy`: the rank holding 99% under layout 2; `salt`: varies the seeded counts.
int v_layout(int layout, bool shuffled, int heavy, int salt, std::vector<int>& counts, std::vector<int>& displs) {
  const int p = size;
  counts.assign(size_t(p), 0);
  uint32_t seed = uint32_t(layout * 7919 + p * 31 + data_salt + salt * 104729);
  for (int b = 0; b < p; ++b) {
    seed = seed * 1103515245u + 12345u;
    switch (layout) {
      case 0: counts[size_t(b)] = int((seed >> 16) % 10); break;
      case 1: counts[size_t(b)] = b % 2 ? 0 : 1 + b; break;
      case 2: counts[size_t(b)] = b == heavy ? 990 : (b % 3 == 0 ? 1 : 0); break;
      default: counts[size_t(b)] = 0; break;
    }
  }
  displs.assign(size_t(p), 0);
  int at = 0;
  for (int k = 0; k < p; ++k) {
    const int b = shuffled ? p - 1 - k : k;
    displs[size_t(b)] = at;
    at += counts[size_t(b)] + (shuffled ? 3 : 0);
  }
  return at;
}

void allgatherv_case(const VEntry& e, int layout, bool shuffled, bool strided, bool in_place) {
  const int p = size;
  std::vector<int> counts, displs;
  const int at = v_layout(layout, shuffled, p / 2, 0, counts, displs);
  MPI_Datatype type = MPI_INT;
  if (strided) {
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &type);
    MPI_Type_commit(&type);
  }
  const int k = strided ? 2 : 1;  // ints per element of the type
  const size_t total = size_t(at + 1) * size_t(k);
  const int mine = counts[size_t(rank)];
  std::vector<int> send(size_t(mine) * size_t(k)), want(total, -5), got(total, -5);
  for (size_t i = 0; i < send.size(); ++i) send[i] = (i % size_t(k)) ? -9 : value<int>(rank, i);
  MPI_Allgatherv(send.data(), mine, type, want.data(), counts.data(), displs.data(), type, MPI_COMM_WORLD);
  std::vector<size_t> c(counts.begin(), counts.end()), d(displs.begin(), displs.end());
  int rc;
  if (in_place) {
    for (size_t i = 0; i < send.size(); i += size_t(k))  // the type map's ints only: the gaps keep -5
      got[size_t(displs[size_t(rank)]) * size_t(k) + i] = send[i];
    rc = e.call(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), c.data(), d.data(), type, MPI_COMM_WORLD);
  } else {
    rc = e.call(send.data(), size_t(mine), type, got.data(), c.data(), d.data(), type, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(p) + " layout " + std::to_string(layout) +
                          (shuffled ? " shuffled" : "") + (strided ? " strided" : "") + (in_place ? " in-place" : "");
  if (rc != MPI_SUCCESS) fail(tag + ": returned " + std::to_string(rc) + " " + bcc_last_error());
  else if (got != want) fail(tag + ": differs from MPI_Allgatherv");
  if (strided) MPI_Type_free(&type);
}

/// Gatherv against MPI_Gatherv on the same layout (v_layout(): seeded random counts, zero
/// counts on every other rank, 99% of the data on one rank, all zero; displacements in
/// rank order, the root's in-recvbuf path, or reversed with gaps), MPI_INT or the resized
/// int (non-contiguous), the root's send buffer MPI_IN_PLACE or not. Ranks other than the
/// root pass NULL counts, displacements and receive buffer and MPI_DATATYPE_NULL as
/// recvtype (significant at the root only). The root's gaps must keep their sentinel.
void gatherv_case(const RootedVEntry<GathervFn>& e, int layout, bool shuffled, bool strided, bool in_place, int root) {
  const int p = size;
  std::vector<int> counts, displs;
  const int at = v_layout(layout, shuffled, (root + p / 2) % p, root, counts, displs);
  MPI_Datatype type = MPI_INT;
  if (strided) {
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &type);
    MPI_Type_commit(&type);
  }
  const int k = strided ? 2 : 1;  // ints per element of the type
  const size_t total = size_t(at + 1) * size_t(k);
  const int mine = counts[size_t(rank)];
  std::vector<int> send(size_t(mine) * size_t(k)), want(total, -5), got(total, -5);
  for (size_t i = 0; i < send.size(); ++i) send[i] = (i % size_t(k)) ? -9 : value<int>(rank + 7 * root, i);
  MPI_Gatherv(send.data(), mine, type, want.data(), counts.data(), displs.data(), type, root, MPI_COMM_WORLD);
  std::vector<size_t> c(counts.begin(), counts.end()), d(displs.begin(), displs.end());
  const bool at_root = rank == root;
  int rc;
  if (in_place && at_root) {
    for (size_t i = 0; i < send.size(); i += size_t(k))  // the type map's ints only: the gaps keep -5
      got[size_t(displs[size_t(rank)]) * size_t(k) + i] = send[i];
    rc = e.call(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), c.data(), d.data(), type, root, MPI_COMM_WORLD);
  } else if (at_root) {
    rc = e.call(send.data(), size_t(mine), type, got.data(), c.data(), d.data(), type, root, MPI_COMM_WORLD);
  } else {
    rc = e.call(send.data(), size_t(mine), type, nullptr, nullptr, nullptr, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(p) + " root=" + std::to_string(root) +
                          " layout " + std::to_string(layout) + (shuffled ? " shuffled" : "") +
                          (strided ? " strided" : "") + (in_place ? " in-place" : "");
  if (rc != MPI_SUCCESS) fail(tag + ": returned " + std::to_string(rc) + " " + bcc_last_error());
  else if (at_root && got != want) fail(tag + ": differs from MPI_Gatherv");
  if (strided) MPI_Type_free(&type);
}

/// Scatterv against MPI_Scatterv on the layouts of gatherv_case; MPI_IN_PLACE as the root's
/// receive buffer or not. Ranks other than the root pass a NULL send buffer, NULL counts and
/// displacements and MPI_DATATYPE_NULL as sendtype. The root's send buffer must be left
/// untouched, the receive buffers' gaps (resized int) keep their sentinel.
void scatterv_case(const RootedVEntry<ScattervFn>& e, int layout, bool shuffled, bool strided, bool in_place, int root) {
  const int p = size;
  std::vector<int> counts, displs;
  const int at = v_layout(layout, shuffled, (root + p / 2) % p, root + 1, counts, displs);
  MPI_Datatype type = MPI_INT;
  if (strided) {
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &type);
    MPI_Type_commit(&type);
  }
  const int k = strided ? 2 : 1;  // ints per element of the type
  const bool at_root = rank == root;
  std::vector<int> send(at_root ? size_t(at + 1) * size_t(k) : 0);
  for (size_t i = 0; i < send.size(); ++i) send[i] = value<int>(root + 11, i);
  const std::vector<int> copy = send;
  const int mine = counts[size_t(rank)];
  std::vector<int> want(size_t(mine) * size_t(k), -5), got(want.size(), -5);
  MPI_Scatterv(send.data(), counts.data(), displs.data(), type, want.data(), mine, type, root, MPI_COMM_WORLD);
  std::vector<size_t> c(counts.begin(), counts.end()), d(displs.begin(), displs.end());
  int rc;
  if (in_place && at_root) {
    rc = e.call(send.data(), c.data(), d.data(), type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    got = want;  // nothing moves at the root
  } else if (at_root) {
    rc = e.call(send.data(), c.data(), d.data(), type, got.data(), size_t(mine), type, root, MPI_COMM_WORLD);
  } else {
    rc = e.call(nullptr, nullptr, nullptr, MPI_DATATYPE_NULL, got.data(), size_t(mine), type, root, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(p) + " root=" + std::to_string(root) +
                          " layout " + std::to_string(layout) + (shuffled ? " shuffled" : "") +
                          (strided ? " strided" : "") + (in_place ? " in-place" : "");
  if (rc != MPI_SUCCESS) fail(tag + ": returned " + std::to_string(rc) + " " + bcc_last_error());
  else if (got != want) fail(tag + ": differs from MPI_Scatterv");
  if (send != copy) fail(tag + ": root's send buffer modified");
  if (strided) MPI_Type_free(&type);
}

/// Whether the schedule of an irregular form (its name without "_v") applies at this p.
template <class Plain>
bool v_applies(const char* vname, const Plain& plain) {
  const std::string base = std::string(vname).substr(0, std::strlen(vname) - 2);
  for (const auto& e : plain)
    if (base == e.name) return e.applicable(size) == 1;
  return false;
}

/// Alltoallv against MPI_Alltoallv on the same layout. The item from rank i to rank j has
/// c(i, j) elements, the same function on every rank: `layout` 0 = seeded random (0..9),
/// 1 = zero for every other pair, 2 = rank p / 2 sends 990 elements to everyone and the
/// others 1 or 0 (99% of the data on one rank), 3 = all zero. Displacements in peer order
/// without gaps or reversed with gaps of 3 elements (on both sides); MPI_INT or the resized
/// int (non-contiguous); in place (the input in recvbuf, laid out by the receive side) or
/// not. The send buffer must come back unchanged, the gaps of recvbuf keep their sentinel.
void alltoallv_case(const Entry<AlltoallvFn>& e, int layout, bool shuffled, bool strided, bool in_place) {
  const int p = size;
  auto c = [&](int i, int j) -> int {
    uint32_t s = uint32_t(layout * 7919 + p * 31 + data_salt) ^ uint32_t(i * 2654435761u) ^ uint32_t(j * 40503u);
    s = s * 1103515245u + 12345u;
    switch (layout) {
      case 0: return int((s >> 16) % 10);
      case 1: return (i + j) % 2 ? 0 : 1 + (i + 2 * j) % 4;
      case 2: return i == p / 2 ? 990 : int((i + j) % 2);
      default: return 0;
    }
  };
  const size_t np = static_cast<size_t>(p);
  std::vector<int> sc(np), sd(np), rc(np), rd(np);
  int sat = 0, rat = 0;
  for (int k = 0; k < p; ++k) {
    const int j = shuffled ? p - 1 - k : k;
    sc[size_t(j)] = c(rank, j), sd[size_t(j)] = sat, sat += sc[size_t(j)] + (shuffled ? 3 : 0);
    rc[size_t(j)] = c(j, rank), rd[size_t(j)] = rat, rat += rc[size_t(j)] + (shuffled ? 3 : 0);
  }
  MPI_Datatype type = MPI_INT;
  if (strided) {
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &type);
    MPI_Type_commit(&type);
  }
  const int k = strided ? 2 : 1;  // ints per element of the type
  std::vector<int> send(size_t(sat + 1) * size_t(k)), want(size_t(rat + 1) * size_t(k), -5), got(want.size(), -5);
  for (size_t i = 0; i < send.size(); ++i) send[i] = value<int>(rank * 3 + 1, i);
  const std::vector<int> copy = send;
  MPI_Alltoallv(send.data(), sc.data(), sd.data(), type, want.data(), rc.data(), rd.data(), type, MPI_COMM_WORLD);
  std::vector<size_t> scs(sc.begin(), sc.end()), sds(sd.begin(), sd.end()), rcs(rc.begin(), rc.end()),
      rds(rd.begin(), rd.end());
  int ret;
  if (in_place) {
    // The input in recvbuf, laid out by the receive side: the item for j (MPI requires
    // c(rank, j) == c(j, rank) there, so the layout is made symmetric).
    for (size_t j = 0; j < np; ++j) rcs[j] = scs[j] = size_t(std::min(sc[j], rc[j]));
    std::vector<int> a(want.size(), -5), b(want.size(), -5);
    for (size_t j = 0; j < np; ++j)
      for (size_t x = 0; x < rcs[j] * size_t(k); x += size_t(k))
        a[rds[j] * size_t(k) + x] = value<int>(rank * 3 + 2, j * 1000 + x);
    std::vector<int> ic(rcs.begin(), rcs.end());
    MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, a.data(), ic.data(), rd.data(), type, MPI_COMM_WORLD);
    want = a;
    for (size_t j = 0; j < np; ++j)
      for (size_t x = 0; x < rcs[j] * size_t(k); x += size_t(k))
        b[rds[j] * size_t(k) + x] = value<int>(rank * 3 + 2, j * 1000 + x);
    got = b;
    in_place_case = true;  // a persistent plan's second start would exchange again
    ret = e.call(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, got.data(), rcs.data(), rds.data(), type,
                 MPI_COMM_WORLD);
  } else {
    ret = e.call(send.data(), scs.data(), sds.data(), type, got.data(), rcs.data(), rds.data(), type, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(p) + " layout " + std::to_string(layout) +
                          (shuffled ? " shuffled" : "") + (strided ? " strided" : "") + (in_place ? " in-place" : "");
  if (ret != MPI_SUCCESS) fail(tag + ": returned " + std::to_string(ret) + " " + bcc_last_error());
  else if (got != want) fail(tag + ": differs from MPI_Alltoallv");
  if (send != copy) fail(tag + ": send buffer modified");
  if (strided) MPI_Type_free(&type);
}

/// A root that refuses its arguments (gatherv: NULL recvcounts; scatterv: MPI_IN_PLACE as
/// its send buffer) fails with its own error, and the other ranks, told so by the counts
/// broadcast, fail with MPI_ERR_OTHER naming the root instead of waiting for its messages.
/// The next call must then work again (nothing left in flight).
void rooted_v_refusal_cases() {
  const int root = size - 1;
  const bool at_root = rank == root;
  int one = 1;
  std::vector<size_t> c(size_t(size), 1), d(size_t(size), 0);
  for (int b = 0; b < size; ++b) d[size_t(b)] = size_t(b);
  std::vector<int> buf(size_t(size), 0);
  auto expect = [&](const char* name, int rc, int root_class, const char* root_needle) {
    ++cases;
    int cls = rc;
    MPI_Error_class(rc, &cls);
    const std::string text = bcc_last_error();
    const std::string tag = std::string(name) + " p=" + std::to_string(size) + " refused at the root";
    if (at_root ? cls != root_class || text.find(root_needle) == std::string::npos
                : size > 1 && (rc != MPI_ERR_OTHER || text.find("the root (rank " + std::to_string(root) + ") refused") ==
                                                          std::string::npos))
      fail(tag + ": rc " + std::to_string(rc) + " '" + text + "'");
  };
  for (const auto& e : kGatherv) {
    const int rc = at_root ? e.call(&one, 1, MPI_INT, buf.data(), nullptr, d.data(), MPI_INT, root, MPI_COMM_WORLD)
                           : e.call(&one, 1, MPI_INT, nullptr, nullptr, nullptr, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    expect(e.name, rc, MPI_ERR_ARG, "the recvcounts array is NULL");
  }
  for (const auto& e : kScatterv) {
    const int rc = at_root ? e.call(MPI_IN_PLACE, c.data(), d.data(), MPI_INT, buf.data(), 1, MPI_INT, root, MPI_COMM_WORLD)
                           : e.call(nullptr, nullptr, nullptr, MPI_DATATYPE_NULL, &one, 1, MPI_INT, root, MPI_COMM_WORLD);
    expect(e.name, rc, MPI_ERR_ARG, "MPI_IN_PLACE given as the root's send buffer");
  }
}

/// A barrier against its definition: no rank leaves before every rank has entered. Every
/// rank increments a counter in memory shared by the node's ranks (MPI_Win_allocate_shared;
/// the test runs on one node) just before it enters; in round k rank k mod p first sleeps
/// 20 ms. After the barrier the counter must be at least p (k + 1) on every rank.
void barrier_case(const Entry<BarrierFn>& e) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  if (node_size != size) {  // ranks on several nodes: no shared counter
    MPI_Comm_free(&node);
    return;
  }
  MPI_Win win;
  long long* counter = nullptr;
  MPI_Win_allocate_shared(rank == 0 ? MPI_Aint(sizeof(long long)) : 0, sizeof(long long), MPI_INFO_NULL, node, &counter, &win);
  MPI_Aint bytes;
  int disp;
  MPI_Win_shared_query(win, 0, &bytes, &disp, &counter);
  if (rank == 0) __atomic_store_n(counter, 0LL, __ATOMIC_SEQ_CST);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < size; ++k) {
    if (rank == k) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, nullptr);
    }
    __atomic_fetch_add(counter, 1LL, __ATOMIC_SEQ_CST);
    const int rc = e.call(MPI_COMM_WORLD);
    const long long seen = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
    ++cases;
    const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " round " + std::to_string(k);
    if (refused(e, rc)) break;
    if (rc != MPI_SUCCESS) {
      fail(tag + ": returned " + std::to_string(rc));
      break;
    }
    check_error_text(e.name, rc, "");
    if (seen < (long long)size * (k + 1))
      fail(tag + ": left the barrier after " + std::to_string(seen - (long long)size * k) + " of " + std::to_string(size) +
           " ranks entered");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
}

template <class T>
void bcast_case(const BcastEntry& e, MPI_Datatype dt, int width, size_t n, int root) {
  std::vector<T> expect(n * size_t(width)), got(n * size_t(width));
  for (size_t i = 0; i < expect.size(); ++i) expect[i] = rank == root ? value<T>(root, i) : T(-1);
  got = expect;
  MPI_Bcast(expect.data(), int(n), dt, root, MPI_COMM_WORLD);
  const int rc = e.call(got.data(), n, dt, root, MPI_COMM_WORLD);
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " root=" + std::to_string(root) + " n=" + std::to_string(n);
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from MPI_Bcast");
}

template <class T>
MPI_Datatype mpi_type() { return std::is_same<T, int>::value ? MPI_INT : MPI_DOUBLE; }

std::string tag_of(const char* name, const char* what, size_t n, int root = -1) {
  return std::string(name) + " " + what + " p=" + std::to_string(size) + " n=" + std::to_string(n) +
         (root >= 0 ? " root=" + std::to_string(root) : "");
}

template <class T>
void reduce_case(const Entry<ReduceFn>& e, MPI_Op op, size_t n, int root, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  std::vector<T> send(n), expect(n), got(n, T(-7)), copy;
  for (size_t i = 0; i < n; ++i) send[i] = value<T>(rank, i);
  copy = send;
  MPI_Reduce(send.data(), expect.data(), int(n), mpi_type<T>(), op, root, MPI_COMM_WORLD);
  int rc;
  if (in_place && rank == root) {
    got = send;
    rc = e.call(MPI_IN_PLACE, got.data(), n, mpi_type<T>(), op, root, MPI_COMM_WORLD);
  } else {
    rc = e.call(send.data(), rank == root ? got.data() : nullptr, n, mpi_type<T>(), op, root, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = tag_of(e.name, "reduce", n, root) + (in_place ? " in-place" : "");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (rank == root && got != expect) fail(tag + ": differs from MPI_Reduce");
  if (send != copy) fail(tag + ": send buffer modified");
}

template <class T>
void allgather_case(const Entry<AllgatherFn>& e, size_t n, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  const size_t p = size_t(size);
  std::vector<T> send(n), expect(n * p), got(n * p, T(-7));
  for (size_t i = 0; i < n; ++i) send[i] = value<T>(rank, i);
  const std::vector<T> copy = send;
  MPI_Allgather(send.data(), int(n), mpi_type<T>(), expect.data(), int(n), mpi_type<T>(), MPI_COMM_WORLD);
  int rc;
  if (in_place) {
    std::copy(send.begin(), send.end(), got.begin() + long(size_t(rank) * n));
    rc = e.call(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), n, mpi_type<T>(), MPI_COMM_WORLD);
  } else {
    rc = e.call(send.data(), n, mpi_type<T>(), got.data(), n, mpi_type<T>(), MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = tag_of(e.name, "allgather", n) + (in_place ? " in-place" : "");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from MPI_Allgather");
  if (send != copy) fail(tag + ": send buffer modified");
}

template <class T>
void gather_case(const Entry<RootedBlocksFn>& e, size_t n, int root, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  const size_t p = size_t(size);
  std::vector<T> send(n), expect(n * p), got(n * p, T(-7));
  for (size_t i = 0; i < n; ++i) send[i] = value<T>(rank, i);
  MPI_Gather(send.data(), int(n), mpi_type<T>(), expect.data(), int(n), mpi_type<T>(), root, MPI_COMM_WORLD);
  int rc;
  if (in_place && rank == root) {
    std::copy(send.begin(), send.end(), got.begin() + long(size_t(rank) * n));
    rc = e.call(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), n, mpi_type<T>(), root, MPI_COMM_WORLD);
  } else {
    rc = e.call(send.data(), n, mpi_type<T>(), got.data(), n, mpi_type<T>(), root, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = tag_of(e.name, "gather", n, root) + (in_place ? " in-place" : "");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (rank == root && got != expect) fail(tag + ": differs from MPI_Gather");
}

template <class T>
void scatter_case(const Entry<RootedBlocksFn>& e, size_t n, int root, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  const size_t p = size_t(size);
  std::vector<T> send(n * p), expect(n), got(n, T(-7));
  for (size_t i = 0; i < send.size(); ++i) send[i] = value<T>(root, i);
  const std::vector<T> copy = send;
  MPI_Scatter(send.data(), int(n), mpi_type<T>(), expect.data(), int(n), mpi_type<T>(), root, MPI_COMM_WORLD);
  int rc;
  if (in_place && rank == root) {
    rc = e.call(send.data(), n, mpi_type<T>(), MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    got = expect;  // nothing moves at the root
  } else {
    rc = e.call(send.data(), n, mpi_type<T>(), got.data(), n, mpi_type<T>(), root, MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = tag_of(e.name, "scatter", n, root) + (in_place ? " in-place" : "");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from MPI_Scatter");
  if (rank == root && send != copy) fail(tag + ": root's send buffer modified");
}

template <class T>
void reduce_scatter_case(const Entry<ReduceScatterFn>& e, MPI_Op op, size_t n, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  const size_t p = size_t(size);
  std::vector<T> send(n * p), expect(n), got(n, T(-7));
  for (size_t i = 0; i < send.size(); ++i) send[i] = value<T>(rank, i);
  const std::vector<T> copy = send;
  MPI_Reduce_scatter_block(send.data(), expect.data(), int(n), mpi_type<T>(), op, MPI_COMM_WORLD);
  int rc;
  std::vector<T> inplace = send;
  if (in_place) rc = e.call(MPI_IN_PLACE, inplace.data(), n, mpi_type<T>(), op, MPI_COMM_WORLD);
  else rc = e.call(send.data(), got.data(), n, mpi_type<T>(), op, MPI_COMM_WORLD);
  if (in_place) got.assign(inplace.begin(), inplace.begin() + long(n));
  ++cases;
  const std::string tag = tag_of(e.name, "reduce_scatter", n) + (in_place ? " in-place" : "");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from MPI_Reduce_scatter_block");
  if (send != copy) fail(tag + ": send buffer modified");
}

template <class T>
void alltoall_case(const Entry<AllgatherFn>& e, size_t n, bool in_place) {
  in_place_case = in_place;  // the same on every rank: as many starts everywhere
  const size_t p = size_t(size);
  std::vector<T> send(n * p), expect(n * p), got(n * p, T(-7));
  for (size_t i = 0; i < send.size(); ++i) send[i] = value<T>(rank, i);
  const std::vector<T> copy = send;
  MPI_Alltoall(send.data(), int(n), mpi_type<T>(), expect.data(), int(n), mpi_type<T>(), MPI_COMM_WORLD);
  int rc;
  if (in_place) {
    got = send;
    rc = e.call(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), n, mpi_type<T>(), MPI_COMM_WORLD);
  } else {
    rc = e.call(send.data(), n, mpi_type<T>(), got.data(), n, mpi_type<T>(), MPI_COMM_WORLD);
  }
  ++cases;
  const std::string tag = tag_of(e.name, "alltoall", n) + (in_place ? " in-place" : "");
  if (refused(e, rc)) return;  // refused as the verifier predicts, for the same reason
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from MPI_Alltoall");
  if (send != copy) fail(tag + ": send buffer modified");
}

// Reduce-scatter with the non-commutative 2x2 matrix product: rank i's block must be
// M_0(i) M_1(i) ... M_{p-1}(i) (sequential reference), or MPI_ERR_OP where not proved.
void noncommutative_reduce_scatter_case(const Entry<ReduceScatterFn>& e, MPI_Datatype mat, MPI_Op op, size_t n) {
  auto m = [](int r, size_t i, int j) { return uint32_t((r + 3) * 2246822519u + i * 3266489917u + uint32_t(j) * 668265263u) % 5u; };
  const size_t p = size_t(size);
  std::vector<uint32_t> send(4 * n * p), got(4 * n, 0), expect(4 * n);
  for (size_t i = 0; i < n * p; ++i)
    for (int j = 0; j < 4; ++j) send[4 * i + size_t(j)] = m(rank, i, j);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = size_t(rank) * n + k;  // element of this rank's block
    sequential_product([&](int r, int j) { return m(r, i, j); }, &expect[4 * k]);
  }
  const int rc = e.call(send.data(), got.data(), n, mat, op, MPI_COMM_WORLD);
  ++cases;
  const std::string tag = std::string(e.name) + " p=" + std::to_string(size) + " n=" + std::to_string(n) + " matrix product";
  if (rc == MPI_ERR_OP && !e.order_preserving) return;
  if (refused(e, rc) || (rc == MPI_ERR_OP && e.applicable(size) == 0)) return;  // as for allreduce
  if (rc != MPI_SUCCESS) return fail(tag + ": returned " + std::to_string(rc));
  if (got != expect) fail(tag + ": differs from the sequential product");
}

std::vector<int> roots() {
  std::vector<int> r = {0};
  for (int x : {size - 1, size / 2, 1 % size})
    if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
  return r;
}

/// Several nonblocking calls in flight on MPI_COMM_WORLD at once, every schedule of four
/// collectives started in one order and waited for in a rank-dependent order (reversed on
/// odd ranks, rotated by the rank elsewhere), with a barrier started among them; every
/// result against the MPI library's collective on the same data, computed before.
int run_overlap() {
  failures = 0;  // the results of run_check() are already in the exit status
  cases = 0;
  const size_t n = size_t(3 * size + 1);
  struct Pending {
    std::string what;
    bcc_request rq = nullptr;
    std::vector<int> got, want;
  };
  std::vector<Pending> calls;
  calls.reserve(kAllreduce.size() + kAllgather.size() + kScan.size() + kBarrier.size() + kBcast.size() + kAllgatherv.size() +
               kGatherv.size() + kScatterv.size());
  std::vector<int> send(n);
  for (size_t i = 0; i < n; ++i) send[i] = value<int>(rank, i);
  for (const AllreduceEntry& e : kAllreduce) {
    if (e.applicable(size) != 1) continue;
    Pending c{e.name, nullptr, std::vector<int>(n, -1), std::vector<int>(n)};
    MPI_Allreduce(send.data(), c.want.data(), int(n), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    calls.push_back(std::move(c));
  }
  for (const auto& e : kAllgather) {
    if (e.applicable(size) != 1) continue;
    Pending c{e.name, nullptr, std::vector<int>(n * size_t(size), -1), std::vector<int>(n * size_t(size))};
    MPI_Allgather(send.data(), int(n), MPI_INT, c.want.data(), int(n), MPI_INT, MPI_COMM_WORLD);
    calls.push_back(std::move(c));
  }
  for (const AllreduceEntry& e : kScan) {
    if (e.applicable(size) != 1) continue;
    Pending c{e.name, nullptr, std::vector<int>(n, -1), std::vector<int>(n)};
    MPI_Scan(send.data(), c.want.data(), int(n), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    calls.push_back(std::move(c));
  }
  const int root = size - 1;
  for (const BcastEntry& e : kBcast) {
    if (e.applicable(size) != 1) continue;
    Pending c{e.name, nullptr, std::vector<int>(n, -1), std::vector<int>(n)};
    for (size_t i = 0; i < n; ++i) c.want[i] = value<int>(root, i);
    if (rank == root) c.got = c.want;
    calls.push_back(std::move(c));
  }
  // Irregular forms in flight too (counts b % 3 + 1 for rank b): allgatherv, and gatherv
  // and scatterv to and from `root`, whose first phase (the root's sizes) is itself in flight.
  const size_t np = static_cast<size_t>(size);
  std::vector<size_t> vcounts(np), vdispls(np);
  std::vector<int> icounts(np), idispls(np);
  size_t vtotal = 0;
  for (int b = 0; b < size; ++b) {
    vcounts[size_t(b)] = size_t(b % 3 + 1);
    vdispls[size_t(b)] = vtotal;
    icounts[size_t(b)] = b % 3 + 1;
    idispls[size_t(b)] = int(vtotal);
    vtotal += vcounts[size_t(b)];
  }
  const size_t vmine = vcounts[size_t(rank)];
  std::vector<int> vsend(vtotal);
  for (size_t i = 0; i < vtotal; ++i) vsend[i] = value<int>(rank + 3, i);
  for (const VEntry& e : kAllgatherv) {
    if (!v_applies(e.name, kAllgather)) continue;
    Pending c{e.name, nullptr, std::vector<int>(vtotal, -1), std::vector<int>(vtotal)};
    MPI_Allgatherv(vsend.data(), int(vmine), MPI_INT, c.want.data(), icounts.data(), idispls.data(), MPI_INT, MPI_COMM_WORLD);
    calls.push_back(std::move(c));
  }
  for (const auto& e : kGatherv) {
    if (!v_applies(e.name, kGather)) continue;
    const size_t len = rank == root ? vtotal : 0;
    Pending c{e.name, nullptr, std::vector<int>(len, -1), std::vector<int>(len)};
    MPI_Gatherv(vsend.data(), int(vmine), MPI_INT, c.want.data(), icounts.data(), idispls.data(), MPI_INT, root,
                MPI_COMM_WORLD);
    calls.push_back(std::move(c));
  }
  for (const auto& e : kScatterv) {
    if (!v_applies(e.name, kScatter)) continue;
    Pending c{e.name, nullptr, std::vector<int>(vmine, -1), std::vector<int>(vmine)};
    MPI_Scatterv(vsend.data(), icounts.data(), idispls.data(), MPI_INT, c.want.data(), int(vmine), MPI_INT, root,
                 MPI_COMM_WORLD);
    calls.push_back(std::move(c));
  }
  // Start them all, in the same order on every rank (MPI's rule), a barrier in the middle.
  size_t k = 0;
  bcc_request barrier_rq = nullptr;
  const size_t barrier_at = calls.size() / 2;
  // Starts calls[k] with launch(calls[k]) where the schedule applies (the order of `calls`).
  auto start = [&](bool applies, auto&& launch) {
    if (!applies) return;
    if (k == barrier_at && !kBarrier.empty() && kBarrier.front().nb(MPI_COMM_WORLD, &barrier_rq) != MPI_SUCCESS)
      fail("barrier start");
    if (launch(calls[k]) != MPI_SUCCESS) fail(calls[k].what + " start");
    ++k;
  };
  for (const AllreduceEntry& e : kAllreduce)
    start(e.applicable(size) == 1,
          [&](Pending& c) { return e.nb(send.data(), c.got.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &c.rq); });
  for (const auto& e : kAllgather)
    start(e.applicable(size) == 1,
          [&](Pending& c) { return e.nb(send.data(), n, MPI_INT, c.got.data(), n, MPI_INT, MPI_COMM_WORLD, &c.rq); });
  for (const AllreduceEntry& e : kScan)
    start(e.applicable(size) == 1,
          [&](Pending& c) { return e.nb(send.data(), c.got.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &c.rq); });
  for (const BcastEntry& e : kBcast)
    start(e.applicable(size) == 1, [&](Pending& c) { return e.nb(c.got.data(), n, MPI_INT, root, MPI_COMM_WORLD, &c.rq); });
  for (const VEntry& e : kAllgatherv)
    start(v_applies(e.name, kAllgather), [&](Pending& c) {
      return e.nb(vsend.data(), vmine, MPI_INT, c.got.data(), vcounts.data(), vdispls.data(), MPI_INT, MPI_COMM_WORLD,
                  &c.rq);
    });
  for (const auto& e : kGatherv)
    start(v_applies(e.name, kGather), [&](Pending& c) {
      return e.nb(vsend.data(), vmine, MPI_INT, c.got.data(), vcounts.data(), vdispls.data(), MPI_INT, root,
                  MPI_COMM_WORLD, &c.rq);
    });
  for (const auto& e : kScatterv)
    start(v_applies(e.name, kScatter), [&](Pending& c) {
      return e.nb(vsend.data(), vcounts.data(), vdispls.data(), MPI_INT, c.got.data(), vmine, MPI_INT, root,
                  MPI_COMM_WORLD, &c.rq);
    });
  // Wait in a rank-dependent order: reversed on odd ranks, rotated by the rank on even ones;
  // the barrier last on rank 0, first elsewhere.
  if (rank != 0 && bcc_wait(&barrier_rq) != MPI_SUCCESS) fail("barrier wait");
  const size_t m = calls.size();
  for (size_t j = 0; j < m; ++j) {
    Pending& c = calls[rank % 2 ? m - 1 - j : (j + size_t(rank)) % m];
    if (bcc_wait(&c.rq) != MPI_SUCCESS) fail(c.what + " wait: " + bcc_last_error());
    if (c.rq != nullptr) fail(c.what + ": request not NULL after the wait");
  }
  if (rank == 0 && bcc_wait(&barrier_rq) != MPI_SUCCESS) fail("barrier wait");
  for (const Pending& c : calls) {
    ++cases;
    if (c.got != c.want) fail(c.what + " p=" + std::to_string(size) + ": nonblocking, overlapped: result differs from MPI's");
  }
  // A blocking call while nonblocking ones are in flight, waited for in opposite orders:
  // rank 0 runs a blocking allreduce before waiting, the others wait first.
  if (!kBarrier.empty() && !kAllreduce.empty() && kAllreduce.front().applicable(size) == 1) {
    bcc_request rq = nullptr;
    if (kBarrier.front().nb(MPI_COMM_WORLD, &rq) != MPI_SUCCESS) fail("barrier start (blocking mix)");
    std::vector<int> got(n, -1), want(n);
    MPI_Allreduce(send.data(), want.data(), int(n), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && kAllreduce.front().fn(send.data(), got.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
      fail("blocking allreduce with a barrier in flight");
    if (bcc_wait(&rq) != MPI_SUCCESS) fail("barrier wait (blocking mix)");
    if (rank != 0 && kAllreduce.front().fn(send.data(), got.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
      fail("blocking allreduce after the barrier");
    ++cases;
    if (got != want) fail("blocking allreduce with a nonblocking barrier in flight: result differs");
  }
  long total_fail = 0, total_cases = 0;
  MPI_Allreduce(&failures, &total_fail, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&cases, &total_cases, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("p=%d: %zu nonblocking calls in flight at once, %ld rank-cases, %ld failures\n", size, m + 1, total_cases, total_fail);
  return total_fail == 0 ? 0 : 1;
}

int run_check() {
  MPI_Op matop;
  MPI_Op_create(matmul, /*commute=*/0, &matop);
  MPI_Datatype mat, int3, strided;
  MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  MPI_Type_commit(&mat);
  MPI_Type_contiguous(3, MPI_INT, &int3);
  MPI_Type_commit(&int3);
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  for (const AllreduceEntry& e : kAllreduce) {
    for (size_t n : counts())
      for (bool in_place : {false, true}) {
        allreduce_case<int>(e, MPI_INT, MPI_SUM, n, in_place);
        allreduce_case<int>(e, MPI_INT, MPI_MAX, n, in_place);
        allreduce_case<double>(e, MPI_DOUBLE, MPI_SUM, n, in_place);
        allreduce_case<double>(e, MPI_DOUBLE, MPI_MAX, n, in_place);
      }
    if (fatal_handler) continue;  // the cases below expect error codes
    for (size_t n : {size_t(1), size_t(5), size_t(3 * size + 1)}) noncommutative_case(e, mat, matop, n, size - 1);
    // A non-contiguous datatype (2 ints at stride 2, extent 3 ints) with MPI_SUM: the ints
    // of its type map are summed element-wise (as MPI_Allreduce of those ints computes
    // them); the gaps of recvbuf are left as they were.
    std::vector<int> a(8), b(8, -7);
    for (int i = 0; i < 8; ++i) a[size_t(i)] = (rank + 1) * (i + 1) + data_salt;
    ++cases;
    const int type_rc = e.call(a.data(), b.data(), 2, strided, MPI_SUM, MPI_COMM_WORLD);
    if (type_rc != MPI_SUCCESS && !refused(e, type_rc) && !(type_rc == MPI_ERR_OP && e.applicable(size) == 0)) {
      fail(std::string(e.name) + ": non-contiguous datatype: rc " + std::to_string(type_rc) + " " + bcc_last_error());
    } else if (type_rc == MPI_SUCCESS) {
      int mapped[4] = {a[0], a[2], a[3], a[5]}, sum[4];
      MPI_Allreduce(mapped, sum, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      const int want[8] = {sum[0], -7, sum[1], sum[2], -7, sum[3], -7, -7};
      if (std::memcmp(b.data(), want, sizeof want) != 0)
        fail(std::string(e.name) + ": non-contiguous datatype: result differs from MPI_Allreduce of its ints");
    }
  }
  for (const BcastEntry& e : kBcast)
    for (int root : roots())
      for (size_t n : counts()) {
        bcast_case<int>(e, MPI_INT, 1, n, root);
        bcast_case<double>(e, MPI_DOUBLE, 1, n, root);
        bcast_case<int>(e, int3, 3, n, root);
      }
  const std::vector<size_t> bcounts = {0, 1, 13, 4096 + 3};
  for (const auto& e : kReduce)
    for (int root : roots())
      for (size_t n : counts())
        for (bool ip : {false, true}) {
          reduce_case<int>(e, MPI_SUM, n, root, ip);
          reduce_case<double>(e, MPI_MAX, n, root, ip);
        }
  for (const auto& e : kAllgather)
    for (size_t n : bcounts)
      for (bool ip : {false, true}) {
        allgather_case<int>(e, n, ip);
        allgather_case<double>(e, n, ip);
      }
  for (const auto& e : kGather)
    for (int root : roots())
      for (size_t n : bcounts)
        for (bool ip : {false, true}) gather_case<int>(e, n, root, ip);
  for (const auto& e : kScatter)
    for (int root : roots())
      for (size_t n : bcounts)
        for (bool ip : {false, true}) scatter_case<double>(e, n, root, ip);
  for (const auto& e : kReduceScatter) {
    for (size_t n : bcounts)
      for (bool ip : {false, true}) {
        reduce_scatter_case<int>(e, MPI_SUM, n, ip);
        reduce_scatter_case<double>(e, MPI_MAX, n, ip);
      }
    if (!fatal_handler)
      for (size_t n : {size_t(1), size_t(5)}) noncommutative_reduce_scatter_case(e, mat, matop, n);
  }
  for (const auto& e : kAlltoall)
    for (size_t n : bcounts)
      for (bool ip : {false, true}) {
        alltoall_case<int>(e, n, ip);
        alltoall_case<double>(e, n, ip);
      }
  for (const bool exclusive : {false, true})
    for (const AllreduceEntry& e : exclusive ? kExscan : kScan) {
      for (size_t n : counts())
        for (bool in_place : {false, true}) {
          scan_case<int>(e, exclusive, MPI_INT, MPI_SUM, n, in_place);
          scan_case<double>(e, exclusive, MPI_DOUBLE, MPI_MAX, n, in_place);
        }
      if (!fatal_handler)
        for (size_t n : {size_t(1), size_t(5), size_t(3 * size + 1)}) noncommutative_case(e, mat, matop, n, exclusive ? rank - 1 : rank);
    }
  for (const auto& e : kBarrier) barrier_case(e);
  // The irregular forms: plain, persistent (_v_init) or nonblocking (_v_i) as the mode says.
  for (const VEntry& e : kAllgatherv)
      for (int layout = 0; layout < 4; ++layout)
        for (bool shuffled : {false, true})
          for (bool strided : {false, true})
            for (bool ip : {false, true}) allgatherv_case(e, layout, shuffled, strided, ip);
  for (const auto& e : kAlltoallv)
    for (int layout = 0; layout < 4 && v_applies(e.name, kAlltoall); ++layout)
      for (bool shuffled : {false, true})
        for (bool strided : {false, true})
          for (bool ip : {false, true}) alltoallv_case(e, layout, shuffled, strided, ip);
  // Every root, every layout, both orders, both types, in place or not (the persistent and
  // nonblocking forms: roots 0, p / 2 and p - 1).
  for (int root = 0; root < size; ++root)
    if (!(persistent || nonblocking) || root == 0 || root == size / 2 || root == size - 1)
      for (int layout = 0; layout < 4; ++layout)
        for (bool shuffled : {false, true})
          for (bool strided : {false, true})
            for (bool ip : {false, true}) {
              for (const auto& e : kGatherv) gatherv_case(e, layout, shuffled, strided, ip, root);
              for (const auto& e : kScatterv) scatterv_case(e, layout, shuffled, strided, ip, root);
            }
  if (!persistent && !fatal_handler) rooted_v_refusal_cases();
  MPI_Type_free(&mat);
  MPI_Type_free(&int3);
  MPI_Type_free(&strided);
  MPI_Op_free(&matop);
  long total_fail = 0, total_cases = 0;
  MPI_Allreduce(&failures, &total_fail, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&cases, &total_cases, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("p=%d: %zu schedules, %ld rank-cases, %ld failures\n", size,
                kAllreduce.size() + kBcast.size() + kReduce.size() + kAllgather.size() + kGather.size() +
                    kScatter.size() + kReduceScatter.size() + kAlltoall.size() + kScan.size() + kExscan.size() +
                    kBarrier.size(),
                total_cases, total_fail);
  return total_fail == 0 ? 0 : 1;
}

void write_rounds(std::ofstream& f, const std::vector<trace::Round>& rounds) {
  f << "[";
  for (size_t i = 0; i < rounds.size(); ++i) {
    f << (i ? "," : "") << "[";
    for (size_t j = 0; j < rounds[i].size(); ++j) {
      const trace::Call& c = rounds[i][j];
      f << (j ? "," : "") << "[\"" << c.kind << "\"," << c.peer << "," << c.offset << "," << c.count << "]";
    }
    f << "]";
  }
  f << "]";
}

#ifdef BINE_TRACE_UTOFU
}  // namespace
// The uTofu emulation's registration counters (runtime/utofu_emu/utofu_emu.cpp).
extern "C" void bine_utofu_emu_registrations(uint64_t* made, uint64_t* live);
namespace {

/// registrations (uTofu build only; docs/utofu.md, "Registration"): every allreduce and
/// bcast schedule on 4,096 doubles (every send more than 32 B, so put from registered
/// memory), counted with the emulation's registration counters:
/// - a plain call leaves nothing registered that was not before (its working buffer's
///   registrations are freed when it ends);
/// - a persistent plan's starts after the first register only what is not in the user's
///   buffer (packed sends in scratch memory); bcc_recursive_doubling_allreduce sends only
///   from the user's buffer, so its later starts register nothing, while its plain calls
///   do; summed over the schedules, later starts register less than plain calls;
/// - bcc_plan_free leaves nothing registered that was not before the plan, and so does a
///   communicator freed before its plan (its channel frees the plan's registrations);
/// - every result equals MPI_Allreduce's / MPI_Bcast's.
/// Prints registrations per plain call and per later start (rank 0's), per schedule.
int run_registrations() {
  const size_t n = 4096;
  std::vector<double> in(n), out(n), ref(n);
  for (size_t i = 0; i < n; ++i) in[i] = double((rank + 1) * 1000 + int(i % 97));
  MPI_Allreduce(in.data(), ref.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int bad = 0;
  auto fail = [&](const char* name, const char* what) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, name, what);
    bad = 1;
  };
  auto counts = [] {
    uint64_t made = 0, live = 0;
    bine_utofu_emu_registrations(&made, &live);
    return std::pair<uint64_t, uint64_t>(made, live);
  };
  // The first collective on a communicator creates its channel (staging and credit
  // registrations, kept until the communicator is freed): made before counting.
  if (kAllreduce.empty() || kAllreduce[0].fn(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
    fail("the first allreduce", "failed");
  const int starts = 5;
  uint64_t sum_plain = 0, sum_start = 0;
  bool saw_rd = false;
  if (rank == 0) std::printf("registrations per call, rank 0, p = %d, %zu doubles (plain call / later persistent start):\n", size, n);
  auto report = [&](const char* name, uint64_t plain, uint64_t start) {
    if (rank == 0) std::printf("  %-52s %3llu / %3llu\n", name, (unsigned long long)plain, (unsigned long long)(start / starts));
    sum_plain += plain;
    sum_start += start / starts;
  };
  // One schedule: `reset` clears the result (the input stays), `plain` calls it, `init`
  // makes its plan, `good` compares the result with MPI's; *plain_regs and *start_regs get
  // the registrations of the plain call and of the later starts (all of them).
  auto measure = [&](const char* name, auto&& reset, auto&& plain, auto&& init, auto&& good, uint64_t* plain_regs,
                     uint64_t* start_regs) {
    const auto [m0, l0] = counts();  // after the first call on MPI_COMM_WORLD: its channel exists
    reset();
    if (plain() != MPI_SUCCESS || !good()) fail(name, "plain call");
    const auto [m1, l1] = counts();
    if (l1 != l0) fail(name, "a plain call left registrations behind");
    bcc_plan plan = nullptr;
    if (init(&plan) != MPI_SUCCESS) return fail(name, "init");
    reset();
    if (bcc_plan_start(plan) != MPI_SUCCESS || !good()) fail(name, "first start");
    const auto [m2, l2] = counts();
    for (int k = 0; k < starts; ++k) {
      reset();
      if (bcc_plan_start(plan) != MPI_SUCCESS || !good()) fail(name, "later start");
    }
    const auto [m3, l3] = counts();
    if (l3 != l2) fail(name, "later starts left registrations behind");
    bcc_plan_free(&plan);
    if (counts().second != l0) fail(name, "bcc_plan_free left registrations behind");
    *plain_regs = m1 - m0;
    *start_regs = m3 - m2;
    report(name, m1 - m0, m3 - m2);
  };
  for (const AllreduceEntry& e : kAllreduce) {
    if (e.applicable(size) != 1) continue;
    uint64_t plain_regs = 0, start_regs = 0;
    measure(
        e.name, [&] { std::fill(out.begin(), out.end(), 0.0); },
        [&] { return e.fn(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); },
        [&](bcc_plan* plan) { return e.init(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, plan); },
        [&] { return out == ref; }, &plain_regs, &start_regs);
    if (size > 1 && std::strcmp(e.name, "bcc_recursive_doubling_allreduce") == 0) {
      saw_rd = true;
      if (plain_regs == 0) fail(e.name, "a plain call registered nothing (is every send piggybacked?)");
      if (start_regs != 0) fail(e.name, "a later start registered memory of the user's buffer again");
    }
  }
  std::vector<double> buf(n), bref(n);
  for (size_t i = 0; i < n; ++i) bref[i] = double(int(i % 89) - 40);
  for (const BcastEntry& e : kBcast) {
    if (e.applicable(size) != 1) continue;
    uint64_t plain_regs = 0, start_regs = 0;
    buf = bref;  // the root's data; the others' is cleared before each call
    measure(
        e.name, [&] { if (rank != 0) std::fill(buf.begin(), buf.end(), 0.0); },
        [&] { return e.fn(buf.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD); },
        [&](bcc_plan* plan) { return e.init(buf.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD, plan); },
        [&] { return buf == bref; }, &plain_regs, &start_regs);
  }
  if (size > 1 && !saw_rd) fail("bcc_recursive_doubling_allreduce", "not in the library");
  if (size > 1 && sum_start >= sum_plain) fail("all schedules", "later starts register as much as plain calls");
  // A communicator freed before its plan: its channel frees the plan's registrations, and
  // freeing the plan afterwards deregisters nothing twice.
  {
    const uint64_t l0 = counts().second;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    bcc_plan plan = nullptr;
    std::fill(out.begin(), out.end(), 0.0);
    if (bcc_recursive_doubling_allreduce_init(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, dup, &plan) != MPI_SUCCESS ||
        bcc_plan_start(plan) != MPI_SUCCESS || out != ref)
      fail("bcc_recursive_doubling_allreduce", "on a duplicated communicator");
    MPI_Comm_free(&dup);
    if (counts().second != l0) fail("bcc_recursive_doubling_allreduce", "MPI_Comm_free left registrations behind");
    bcc_plan_free(&plan);
    if (counts().second != l0) fail("bcc_recursive_doubling_allreduce", "bcc_plan_free after MPI_Comm_free");
  }
  if (rank == 0) std::printf("sum: %llu per plain call, %llu per later start\n", (unsigned long long)sum_plain, (unsigned long long)sum_start);
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("registrations: %s p = %d\n", any ? "FAIL" : "PASS", size);
  return any;
}
#endif

/// harness flat: the flat replay (bine/flat_replay.hpp) against MPI's own collectives.
/// Every applicable allreduce, bcast, allgather and alltoall schedule is called three times
/// with the same shape and fresh buffers at other addresses (the third call runs the flat
/// plan the second recorded, checked with flat_calls()); then, on
/// bcc_recursive_doubling_allreduce once its shape runs flat: aliased buffers are still
/// refused (MPI_ERR_BUFFER), MPI_IN_PLACE is another shape, a freed communicator's plan is
/// not run on a new communicator (MPI_Comm_split: another size), and a changed
/// BINE_SEGMENT_BYTES (reread_environment()) makes the next call take the general path.
int run_flat() {
  int bad = 0;
  auto fail_flat = [&](const char* what, const char* why) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, why);
    bad = 1;
  };
  const size_t n = 37;
  size_t flat_fns = 0, fns = 0;
  // Fresh buffers each call, shifted by `k` elements inside a larger allocation.
  auto value = [&](int r, size_t i, int call) { return double(int((r * 131 + int(i) * 7 + call * 389) % 1000) - 500); };
  // Three calls of `e` (call(k, &ok) makes call k and checks it), the third one flat?
  auto thrice = [&](const char* name, auto call) {
    ++fns;
    bool ran_flat = false;
    for (int k = 0; k < 3; ++k) {
      const uint64_t before = bine::mpi::flat_calls();
      bool ok = false;
      if (call(k, &ok) != MPI_SUCCESS || !ok) fail_flat(name, "wrong result");
      if (k == 2 && bine::mpi::flat_calls() > before) ran_flat = true;
    }
    flat_fns += ran_flat;
  };
  for (const AllreduceEntry& e : kAllreduce) {
    if (e.applicable(size) != 1) continue;
    thrice(e.name, [&](int call, bool* ok) {
      std::vector<double> in(n + 8), out(n + 8, 0.0), ref(n);
      double* pin = in.data() + call;
      double* pout = out.data() + 2 * call;
      for (size_t i = 0; i < n; ++i) pin[i] = value(rank, i, call);
      MPI_Allreduce(pin, ref.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const int rc = e.fn(pin, pout, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      *ok = std::equal(ref.begin(), ref.end(), pout);
      return rc;
    });
  }
  for (const BcastEntry& e : kBcast) {
    if (e.applicable(size) != 1) continue;
    thrice(e.name, [&](int call, bool* ok) {
      const int root = size - 1;
      std::vector<double> buf(n + 8, 0.0), ref(n);
      double* pb = buf.data() + call;
      for (size_t i = 0; i < n; ++i) ref[i] = value(root, i, call);
      if (rank == root) std::copy(ref.begin(), ref.end(), pb);
      const int rc = e.fn(pb, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
      *ok = std::equal(ref.begin(), ref.end(), pb);
      return rc;
    });
  }
  for (const auto* table : {&kAllgather, &kAlltoall}) {
    const bool a2a = table == &kAlltoall;
    for (const auto& e : *table) {
      if (e.applicable(size) != 1) continue;
      thrice(e.name, [&](int call, bool* ok) {
        const size_t blk = 5, all = blk * size_t(size);
        std::vector<int> in(all + 8), out(all + 8, 0), ref(all);
        int* pin = in.data() + call;
        int* pout = out.data() + 3 * call;
        for (size_t i = 0; i < (a2a ? all : blk); ++i) pin[i] = int(value(rank, i, call));
        if (a2a)
          MPI_Alltoall(pin, int(blk), MPI_INT, ref.data(), int(blk), MPI_INT, MPI_COMM_WORLD);
        else
          MPI_Allgather(pin, int(blk), MPI_INT, ref.data(), int(blk), MPI_INT, MPI_COMM_WORLD);
        const int rc = e.fn(pin, blk, MPI_INT, pout, blk, MPI_INT, MPI_COMM_WORLD);
        *ok = std::equal(ref.begin(), ref.end(), pout);
        return rc;
      });
    }
  }
  // The edge cases, on recursive doubling (any p), where the header has it (not the
  // segmented harness's).
  const AllreduceEntry* rde = nullptr;
  for (const AllreduceEntry& e : kAllreduce)
    if (std::strcmp(e.name, "bcc_recursive_doubling_allreduce") == 0) rde = &e;
  if (!rde) {
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
  }
  std::vector<double> in(n), out(2 * n), ref(n);
  for (size_t i = 0; i < n; ++i) in[i] = value(rank, i, 7);
  MPI_Allreduce(in.data(), ref.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  auto rd = [&](const void* a, void* b, MPI_Comm c) {
    return rde->fn(a, b, n, MPI_DOUBLE, MPI_SUM, c);
  };
  for (int k = 0; k < 3; ++k) rd(in.data(), out.data(), MPI_COMM_WORLD);
  uint64_t before = bine::mpi::flat_calls();
  if (rd(in.data(), out.data() + n, MPI_COMM_WORLD) != MPI_SUCCESS || !std::equal(ref.begin(), ref.end(), out.data() + n))
    fail_flat("bcc_recursive_doubling_allreduce", "wrong result at another address");
  const bool flat_now = bine::mpi::flat_calls() > before;
  if (size > 1 && !flat_now) fail_flat("bcc_recursive_doubling_allreduce", "a fourth call of one shape did not run flat");
  // Aliased: recvbuf overlapping sendbuf (the same shape otherwise).
  std::vector<double> ov(2 * n);
  std::copy(in.begin(), in.end(), ov.begin());
  before = bine::mpi::flat_calls();
  if (rd(ov.data(), ov.data() + n / 2, MPI_COMM_WORLD) == MPI_SUCCESS)
    fail_flat("bcc_recursive_doubling_allreduce", "aliased buffers accepted on a flat shape");
  if (bine::mpi::flat_calls() != before) fail_flat("bcc_recursive_doubling_allreduce", "an aliased call ran flat");
  // MPI_IN_PLACE: another shape, correct.
  for (int k = 0; k < 3; ++k) {
    std::vector<double> ip(in);
    if (rd(MPI_IN_PLACE, ip.data(), MPI_COMM_WORLD) != MPI_SUCCESS || ip != ref)
      fail_flat("bcc_recursive_doubling_allreduce", "MPI_IN_PLACE after flat calls");
  }
  // A communicator freed after its shape ran flat, then a new one of another size (MPI may
  // give it the freed handle).
  {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    for (int k = 0; k < 3; ++k)
      if (rd(in.data(), out.data(), dup) != MPI_SUCCESS || !std::equal(ref.begin(), ref.end(), out.data()))
        fail_flat("bcc_recursive_doubling_allreduce", "on a duplicated communicator");
    const uint64_t epoch = bine::mpi::flat_epoch().load();
    MPI_Comm_free(&dup);
    if (size > 1 && bine::mpi::flat_epoch().load() == epoch)
      fail_flat("bcc_recursive_doubling_allreduce", "MPI_Comm_free did not invalidate the flat plans");
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    std::vector<double> href(n);
    MPI_Allreduce(in.data(), href.data(), int(n), MPI_DOUBLE, MPI_SUM, half);
    for (int k = 0; k < 3; ++k)
      if (rd(in.data(), out.data(), half) != MPI_SUCCESS || !std::equal(href.begin(), href.end(), out.data()))
        fail_flat("bcc_recursive_doubling_allreduce", "on a new communicator after MPI_Comm_free");
    MPI_Comm_free(&half);
  }
  // BINE_SEGMENT_BYTES changed: the next call plans again (and is right).
  for (int k = 0; k < 3; ++k) rd(in.data(), out.data(), MPI_COMM_WORLD);
  setenv("BINE_SEGMENT_BYTES", "16", 1);
  bine::mpi::reread_environment();
  before = bine::mpi::flat_calls();
  if (rd(in.data(), out.data(), MPI_COMM_WORLD) != MPI_SUCCESS || !std::equal(ref.begin(), ref.end(), out.data()))
    fail_flat("bcc_recursive_doubling_allreduce", "with BINE_SEGMENT_BYTES=16");
  if (bine::mpi::flat_calls() != before) fail_flat("bcc_recursive_doubling_allreduce", "a changed environment ran flat");
  unsetenv("BINE_SEGMENT_BYTES");
  bine::mpi::reread_environment();
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("flat: %s p = %d, %zu of %zu schedules ran their third call flat\n", any ? "FAIL" : "PASS", size,
                flat_fns, fns);
  if (size > 1 && flat_fns == 0) any = 1;
  return any;
}

int run_trace(const std::string& dir) {
  std::ofstream f(dir + "/trace." + std::to_string(rank) + ".json");
  f << "[\n";
  bool first = true;
  bine::mpi::working_buffer_hook() = [](const void* base, uint64_t elem, uint64_t elems) {
    trace::rebase(base, int64_t(elem), int64_t(elems));
  };
  bine::mpi::input_buffer_hook() = [](const void* base, uint64_t, uint64_t elems) {
    trace::input_buffer(base, int64_t(elems));
  };
  auto record = [&](const std::string& name, int root, size_t n, const std::vector<trace::Round>& rounds) {
    f << (first ? "" : ",\n") << "{\"function\":\"" << name << "\",\"root\":" << root << ",\"count\":" << n
      << ",\"elems\":" << trace::elems() << ",\"elem_bytes\":" << trace::elem_bytes() << ",\"rounds\":";
    write_rounds(f, rounds);
    f << "}";
    first = false;
  };
  // Every case twice: the first call of a shape builds the function's persistent plan,
  // the second replays it; both must make exactly the calls of the verified Schedule.
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<size_t> ns = {size_t(1), size_t(1000), size_t(3 * size + 1)};
    for (const AllreduceEntry& e : kAllreduce)
      for (size_t n : ns) {
        std::vector<int> s(n, 1), out(n, 0);
        trace::begin(out.data(), sizeof(int), int64_t(n));
        const int rc = e.call(s.data(), out.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, 0, n, rounds); }
        if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
      }
    for (const BcastEntry& e : kBcast)
      for (int root : roots())
        for (size_t n : ns) {
          std::vector<int> buf(n, rank);
          trace::begin(buf.data(), sizeof(int), int64_t(n));
          const int rc = e.call(buf.data(), n, MPI_INT, root, MPI_COMM_WORLD);
          { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, root, n, rounds); }
          if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
        }
    const size_t p = size_t(size);
    for (const auto& e : kReduce)
      for (int root : roots())
        for (size_t n : ns) {
          std::vector<int> s(n, 1), out(n, 0);
          trace::begin(nullptr, 1, 0);
          const int rc = e.call(s.data(), out.data(), n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
          { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, root, n, rounds); }
          if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
        }
    for (const auto& e : kAllgather)
      for (size_t n : ns) {
        std::vector<int> s(n, 1), out(n * p, 0);
        trace::begin(nullptr, 1, 0);
        const int rc = e.call(s.data(), n, MPI_INT, out.data(), n, MPI_INT, MPI_COMM_WORLD);
        { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, 0, n, rounds); }
        if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
      }
    for (const auto* list : {&kGather, &kScatter})
      for (const auto& e : *list)
        for (int root : roots())
          for (size_t n : ns) {
            std::vector<int> s(n * p, 1), out(n * p, 0);
            trace::begin(nullptr, 1, 0);
            const int rc = e.call(s.data(), n, MPI_INT, out.data(), n, MPI_INT, root, MPI_COMM_WORLD);
            { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, root, n, rounds); }
            if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
          }
    for (const auto& e : kReduceScatter)
      for (size_t n : ns) {
        std::vector<int> s(n * p, 1), out(n, 0);
        trace::begin(nullptr, 1, 0);
        const int rc = e.call(s.data(), out.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, 0, n, rounds); }
        if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
      }
    for (const auto& e : kAlltoall)
      for (size_t n : ns) {
        std::vector<int> s(n * p, 1), out(n * p, 0);
        trace::begin(nullptr, 1, 0);
        const int rc = e.call(s.data(), n, MPI_INT, out.data(), n, MPI_INT, MPI_COMM_WORLD);
        const auto rounds = trace::end();
        if (rc == MPI_SUCCESS) record(e.name, 0, n, rounds);
      }
    for (const auto* list : {&kScan, &kExscan})
      for (const AllreduceEntry& e : *list)
        for (size_t n : ns) {
          std::vector<int> s(n, 1), out(n, 0);
          trace::begin(nullptr, 1, 0);
          const int rc = e.call(s.data(), out.data(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
          { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, 0, n, rounds); }
          if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
        }
    for (const auto& e : kBarrier) {
      trace::begin(nullptr, 1, 0);
      const int rc = e.call(MPI_COMM_WORLD);
      { const auto rounds = trace::end(); if (rc == MPI_SUCCESS) record(e.name, 0, 0, rounds); }
      if (rc != MPI_SUCCESS && e.applicable(size) != 0 && !region_refusal(e.name, rc)) fail(std::string(e.name) + " trace run returned an error");
    }
  }
  f << "\n]\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace

/// regions-refused TEXT: under a region layout the locality-aware Bruck allgather cannot
/// run (a bad BINE_REGIONS), it must fail on every rank with MPI_ERR_OTHER and an error
/// text that contains TEXT (docs/topology.md).
int run_regions_refused(const std::string& text) {
  const auto e = std::find_if(kAllgather.begin(), kAllgather.end(), [](const Entry<AllgatherFn>& x) {
    return std::string(x.name) == "bcc_locality_aware_bruck_allgather";
  });
  if (e == kAllgather.end()) {
    fail("regions-refused: this header has no bcc_locality_aware_bruck_allgather");
    return 1;
  }
  std::vector<int> in(1, rank), out(size_t(size), -1);
  const int rc = e->fn(in.data(), 1, MPI_INT, out.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const std::string err = bcc_last_error();
  if (rc != MPI_ERR_OTHER) fail("regions-refused: returned " + std::to_string(rc) + ", expected MPI_ERR_OTHER");
  if (err.find(text) == std::string::npos) fail("regions-refused: error text '" + err + "' lacks '" + text + "'");
  if (rank == 0 && failures == 0) std::printf("p=%d: refused as expected: %s\n", size, err.c_str());
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string mode = argc > 1 ? argv[1] : "check";
  // check-fatal: the same matrix under the default MPI_ERRORS_ARE_FATAL handler, so an MPI
  // call the runtime makes with invalid arguments aborts the run instead of being masked.
  // (The error-path cases, which expect MPI_ERR_OP / MPI_ERR_TYPE, are skipped there.)
  if (mode != "check-fatal") MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  fatal_handler = mode == "check-fatal";
  if (mode == "regions-refused" && argc > 2) {  // regions-refused TEXT (docs/topology.md)
    const int refused_rc = run_regions_refused(argv[2]);
    MPI_Finalize();
    return refused_rc;
  }
  int rc = 2;
  if (mode == "check" || mode == "check-fatal") rc = run_check();
  else if (mode == "check-twice") {
    // The matrix twice, other data the second time: every call of the second pass has the
    // shape of one of the first, so it replays that call's persistent plan.
    rc = run_check();
    data_salt = 1;
    rc |= run_check();
  }
  else if (mode == "flat") rc = run_flat();
  else if (mode == "check-thrice") {
    // The matrix three times, other data each time: the second pass replays the persistent
    // plans the first built and records their flat plans, the third runs those
    // (bine/flat_replay.hpp) at other addresses; some calls must have run flat.
    rc = run_check();
    data_salt = 1;
    rc |= run_check();
    data_salt = 2;
    const uint64_t before = bine::mpi::flat_calls();
    rc |= run_check();
    unsigned long long mine = bine::mpi::flat_calls() - before, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("p=%d: %llu calls of the third pass ran flat\n", size, all);
    if (all == 0 && size > 1) {  // p = 1: every call is finished at its start (a copy), none is replayed
      if (rank == 0) std::fprintf(stderr, "check-thrice: no call ran flat\n");
      rc = 1;
    }
  }
  else if (mode == "check-persistent") {
    // The matrix through the persistent forms: _init, start (twice: the first replays the
    // plan's own rounds and records them, the second runs them flat over MPI), free.
    persistent = true;
    const uint64_t flat_before = bine::mpi::flat_calls();
    rc = run_check();
    unsigned long long flat_mine = bine::mpi::flat_calls() - flat_before, flat_all = 0;
    MPI_Allreduce(&flat_mine, &flat_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("p=%d: %llu starts ran flat\n", size, flat_all);
#ifndef BINE_TRACE_UTOFU
    if (size > 1 && flat_all == 0) {
      if (rank == 0) std::printf("FAIL: no second start ran flat\n");
      rc = 1;
    }
#endif
#ifdef BINE_TRACE_UTOFU
    // uTofu: the persistent forms of the schedules whose static landing layout is all
    // direct put straight into the receivers' buffers (docs/utofu.md): some must have.
    unsigned long long mine = bine::utofu::direct_puts().load(), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("p=%d: %llu direct puts (into the receivers' buffers)\n", size, all);
    if (size > 1 && all == 0) {
      if (rank == 0) std::printf("FAIL: no persistent call landed a transfer directly\n");
      rc = 1;
    }
#endif
  }
  else if (mode == "check-nonblocking") {
    // The matrix through the nonblocking forms (_i, then bcc_wait), then calls overlapped.
    nonblocking = true;
    rc = run_check();
    nonblocking = false;
    rc |= run_overlap();
  }
  else if (mode == "trace" && argc > 2) rc = run_trace(argv[2]);
#ifdef BINE_TRACE_UTOFU
  else if (mode == "registrations") rc = run_registrations();
#endif
  else if (rank == 0) std::fprintf(stderr, "usage: harness check | check-fatal | check-twice | check-thrice | flat | check-persistent | check-nonblocking | trace DIR\n");
  MPI_Finalize();
  return rc;
}
