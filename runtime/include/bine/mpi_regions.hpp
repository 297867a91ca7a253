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
// This costs a split and two small collectives on the calls that plan their rounds (the
// first of a shape; a replayed plan keeps its partners).
#pragma once
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bine/builtins.hpp"

namespace bine::mpi {

/// Binds the region layout of cx's communicator on this thread; MPI_ERR_OTHER (with the
/// reason in cx's error text) for a bad BINE_REGIONS, else an MPI call's error.
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
  } else {
    MPI_Comm node = MPI_COMM_NULL;
    rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS) return rc;
    int leader = me;  // key 0 keeps comm's order: node rank 0 is the node's lowest rank
    rc = MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    const int rc_free = MPI_Comm_free(&node);
    if (rc == MPI_SUCCESS) rc = rc_free;
    std::vector<int> all(size_t(p), 0);
    if (rc == MPI_SUCCESS) rc = MPI_Allgather(&leader, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
    if (rc != MPI_SUCCESS) return rc;
    labels.assign(all.begin(), all.end());
  }
  set_region_labels(labels);
  return MPI_SUCCESS;
}

}  // namespace bine::mpi
