// bine/mpi_regions.hpp: the region layout of generated code (docs/topology.md, "Regions in
// schedules"). A schedule that calls a region built-in (regions(), region(q), local_rank(q),
// region_size(g), region_rank(g, i); bine/builtins.hpp) binds the layout of its
// communicator first, on every rank, before its `requires`:
//   - BINE_REGIONS=SPEC in the environment (the same on all ranks): the spec of
//     bine-cc --regions (K ranks per region, rr:N, map:L0,L1,..., one), for testing a
//     layout on any allocation; BINE_REGIONS=node (or unset): the next case;
//   - otherwise the node of every rank: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), each
//     rank labelled by the lowest rank of its node, labels exchanged with MPI_Allgather.
//     Ranks of one node need not be consecutive.
// The node labels are computed once per communicator (a split and two small collectives at
// its first call; kept as an attribute) and bound before the plan lookup, on every call:
// plans are keyed by the layout's fingerprint, so two communicators of one size whose ranks
// sit on nodes differently never share a plan.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "bine/builtins.hpp"

namespace bine::mpi {

/// A layout's fingerprint for plan keys (FNV-1a over the labels; 0 is reserved for "no
/// layout read").
inline uint64_t region_fingerprint(const std::vector<int64_t>& labels) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t x : labels)
    for (int k = 0; k < 8; ++k) h = (h ^ uint64_t((x >> (8 * k)) & 0xff)) * 1099511628211ull;
  return h ? h : 1;
}

/// The node labels of `comm`, computed once per communicator (an attribute, freed with it:
/// a communicator's processes do not move) with MPI_Comm_split_type and MPI_Allgather.
inline int node_labels(MPI_Comm comm, int p, int me, std::vector<int64_t>& labels) {
  static int keyval = MPI_KEYVAL_INVALID;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Comm_copy_attr_function* copy = MPI_COMM_NULL_COPY_FN;
    MPI_Comm_delete_attr_function* del = [](MPI_Comm, int, void* attr, void*) -> int {
      delete static_cast<std::vector<int64_t>*>(attr);
      return MPI_SUCCESS;
    };
    if (MPI_Comm_create_keyval(copy, del, &keyval, nullptr) != MPI_SUCCESS) keyval = MPI_KEYVAL_INVALID;
  });
  void* attr = nullptr;
  int flag = 0;
  if (keyval != MPI_KEYVAL_INVALID && MPI_Comm_get_attr(comm, keyval, &attr, &flag) == MPI_SUCCESS && flag) {
    labels = *static_cast<std::vector<int64_t>*>(attr);
    return MPI_SUCCESS;
  }
  MPI_Comm node = MPI_COMM_NULL;
  int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (rc != MPI_SUCCESS) return rc;
  int leader = me;  // key 0 keeps comm's order: node rank 0 is the node's lowest rank
  rc = BINE_MPI_CALL(Bcast)(&leader, 1, MPI_INT, 0, node);
  const int rc_free = MPI_Comm_free(&node);
  if (rc == MPI_SUCCESS) rc = rc_free;
  std::vector<int> all(size_t(p), 0);
  if (rc == MPI_SUCCESS) rc = BINE_MPI_CALL(Allgather)(&leader, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  if (rc != MPI_SUCCESS) return rc;
  labels.assign(all.begin(), all.end());
  if (keyval != MPI_KEYVAL_INVALID) {
    auto* kept = new (std::nothrow) std::vector<int64_t>(labels);
    if (kept && MPI_Comm_set_attr(comm, keyval, kept) != MPI_SUCCESS) delete kept;
  }
  return MPI_SUCCESS;
}

/// Binds the region layout of cx's communicator on this thread and tells cx its
/// fingerprint (a plan key field: a plan built under one layout is never replayed under
/// another); MPI_ERR_OTHER (with the reason in cx's error text) for a bad BINE_REGIONS,
/// else an MPI call's error. Call before cx.plan().
template <class Cx>
int bind_regions(Cx& cx) {
  MPI_Comm comm = cx.comm();
  int p = 0, me = 0;
  int rc = MPI_Comm_size(comm, &p);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(comm, &me);
  if (rc != MPI_SUCCESS) return rc;
  std::vector<int64_t> labels;
  const char* env = std::getenv("BINE_REGIONS");
  if (env && *env && std::string(env) != "node") {
    std::string err;
    if (!region_labels(env, p, labels, err)) return cx.fail(MPI_ERR_OTHER, "BINE_REGIONS: %s", err.c_str());
  } else if ((rc = node_labels(comm, p, me, labels)) != MPI_SUCCESS) {
    return rc;
  }
  set_region_labels(labels);
  cx.set_region_key(region_fingerprint(labels));
  return MPI_SUCCESS;
}

}  // namespace bine::mpi
