// bine-smpi-bench: the generated library under SimGrid's SMPI (docs/smpi.md). Compiled with
// smpicxx by sim/smpi.py, never by the project's CMake build.
//
//   smpirun -np P -platform PLATFORM [--cfg=...] bine-smpi-bench BYTES[,BYTES...] GLOBAL [--mpi-only] [COLLECTIVE ...]
//
// BYTES: message sizes as the PMPI library counts a call (the whole vector for allreduce,
// reduce, bcast, scan, exscan; one rank's block for the rank-indexed collectives), in bytes
// of MPI_INT elements (multiples of 4). GLOBAL: which links are global, for the link-load
// figures: `dragonfly` (SimGrid's inter-group "blue" links), `fattree` (the links up from a
// pod's top switches to the core: the 3rd hop of a route that leaves the pod), `torus`
// (every link between two nodes of the TORUS cluster: byte-hops), `none` (no link figures). With COLLECTIVE keys (allreduce, bcast, ..., barrier) only those;
// with --mpi-only only the MPI library's own collective (to time SMPI's other algorithms).
//
// Per (collective, size): the MPI library's own collective ("mpi": SMPI's algorithm chosen
// by --cfg=smpi/<collective>:<algorithm>, default otherwise) runs first and its result is
// the oracle; then every generated schedule with `_applicable(P) == 1`. Each candidate gets
// one warm-up call (plans; its result is compared element by element with the oracle's on
// every rank that has a defined output) and one timed call between two waits on a SimGrid
// barrier (an actor synchronisation that sends nothing, so every rank starts at the same
// simulated instant and the link loads hold the call's messages only): the simulated time
// of the slowest rank. With the link_load plugin (--cfg=plugin:link_load, and
// BINE_SMPI_LINK_LOAD=1 in the environment to say so) rank 0 resets every global link
// before the timed call, has the plugin update them on every advance of the clock (see
// update_on_every_advance) and sums their loads after it.
// Rank 0 prints one JSON object per line:
//   {"collective": "allreduce", "schedule": "bine_allreduce_lat", "p": 64, "bytes": 1024,
//    "us": 12.5, "ok": true, "global_load": 81920, "global_bytes": 40960, "global_messages": 40}
// global_bytes and global_messages: the timed call's messages counted on their SimGrid
// routes (a message crossing k global links counts k times; payload bytes); -1 for "mpi"
// (SMPI's own collectives do not pass through the counted calls) and with GLOBAL `none`.
// global_load: the link_load plugin's cumulated load of the global links (payload plus
// SimGrid's per-message overhead, see sim/smpi.py); -1 without the plugin.
// Exit 1 when a call fails or a result differs (the first difference on standard error).
#include <mpi.h>
#include <simgrid/barrier.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/plugins/load.h>
#include <simgrid/s4u/Engine.hpp>
#include <xbt/dynar.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

// Every message the generated code sends (its transport's MPI_Isend, MPI_Send and
// MPI_Sendrecv) is counted on the links of its SimGrid route: the bytes that cross a
// global link, independently of bine-cc's model and of the link_load plugin. Internal
// linkage on purpose: smpirun loads one copy of this program per rank, and a symbol with
// external linkage resolved to rank 0's copy from the other ranks' code (seen: every rank's
// sends counted against rank 0's flag).
namespace {
namespace route_count {
struct Shared {
  std::vector<sg_host_t> host;         ///< world rank -> host
  std::set<sg_link_t> global;          ///< the global links
};
Shared* shared = nullptr;  ///< rank 0's, the same object on every rank (one address space)
bool on = false;           ///< counting the timed call
uint64_t bytes = 0, messages = 0;  ///< this rank's global bytes and messages (payload only)

void count(int n, MPI_Datatype t, int peer, MPI_Comm comm) {
  if (!on || !shared || peer == MPI_PROC_NULL) return;
  int size = 0, world = 0;
  MPI_Type_size(t, &size);
  MPI_Group g, w;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_translate_ranks(g, 1, &peer, w, &world);
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), nullptr);
  sg_host_get_route(sg_host_self(), shared->host[size_t(world)], route);
  uint64_t crossings = 0;
  for (unsigned long i = 0; i < xbt_dynar_length(route); ++i)
    crossings += shared->global.count(xbt_dynar_get_as(route, i, sg_link_t));
  xbt_dynar_free(&route);
  bytes += crossings * uint64_t(n) * uint64_t(size);
  messages += crossings;
}
int isend(const void* b, int n, MPI_Datatype t, int peer, int tag, MPI_Comm c, MPI_Request* r) {
  count(n, t, peer, c);
  return MPI_Isend(b, n, t, peer, tag, c, r);
}
int send(const void* b, int n, MPI_Datatype t, int peer, int tag, MPI_Comm c) {
  count(n, t, peer, c);
  return MPI_Send(b, n, t, peer, tag, c);
}
int sendrecv(const void* sb, int sn, MPI_Datatype st, int speer, int stag, void* rb, int rn, MPI_Datatype rt, int rpeer,
             int rtag, MPI_Comm c, MPI_Status* status) {
  count(sn, st, speer, c);
  return MPI_Sendrecv(sb, sn, st, speer, stag, rb, rn, rt, rpeer, rtag, c, status);
}
}  // namespace route_count
}  // namespace

#undef MPI_Isend
#undef MPI_Send
#undef MPI_Sendrecv
#define MPI_Isend route_count::isend
#define MPI_Send route_count::send
#define MPI_Sendrecv route_count::sendrecv
#include "bine_lib.h"
#undef MPI_Isend
#undef MPI_Send
#undef MPI_Sendrecv
#include "bench_registry.hpp"

namespace {

using bine::bench::Coll;
using bine::bench::Entry;

/// The global links of the platform (see the header comment), or none.
std::vector<sg_link_t> global_links(const std::string& kind) {
  std::vector<sg_link_t> out;
  const size_t nl = sg_link_count();
  sg_link_t* all = sg_link_list();
  if (kind == "dragonfly") {
    for (size_t i = 0; i < nl; ++i)
      if (std::strncmp(sg_link_get_name(all[i]), "blue_link", 9) == 0) out.push_back(all[i]);
  } else if (kind == "fattree") {
    // A route that leaves its pod is node-leaf-top-core-top-leaf-node: 6 links, of which
    // the 3rd goes up from the pod to a core switch (SimGrid's FAT_TREE has separate UP
    // and DOWN links), so a message between pods crosses exactly one of these, as bine-cc
    // counts it. Routes from one node per leaf switch (node-0, node-8, ...) to every node
    // use all of them: the up ports are picked by the destination (d-mod-k), and the
    // leaf's sources reach every pod-top switch. Measured: 1,024 links, the count of
    // pod-top-to-core links (128 switches x 8 up ports).
    const size_t nh = sg_host_count();
    sg_host_t* hosts = sg_host_list();
    std::set<sg_link_t> found;
    for (size_t leaf = 0; leaf < nh; leaf += 8) {
      const sg_host_t from = sg_host_by_name(("node-" + std::to_string(leaf)).c_str());
      for (size_t h = 0; from && h < nh; ++h) {
        xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), nullptr);
        sg_host_get_route(from, hosts[h], route);
        if (xbt_dynar_length(route) == 6) found.insert(xbt_dynar_get_as(route, 2, sg_link_t));
        xbt_dynar_free(&route);
      }
    }
    xbt_free(hosts);
    out.assign(found.begin(), found.end());
  } else if (kind == "torus") {
    // Every link between two nodes of SimGrid's TORUS cluster (named <id>_link_from_A_to_B_UP
    // or _DOWN; the loopbacks are not): a message crosses as many as it takes hops, so the
    // figures are byte-hops, which bine-cc traffic counts as torus_hops.
    for (size_t i = 0; i < nl; ++i)
      if (std::strstr(sg_link_get_name(all[i]), "_link_from_") != nullptr) out.push_back(all[i]);
  }
  xbt_free(all);
  return out;
}

/// The link_load plugin integrates a link's current usage over the time since that link's
/// last update, and updates a link only when a communication through it starts or ends.
/// A flow's rate also changes when a flow elsewhere starts or ends (max-min sharing), so
/// the plugin alone got the global loads wrong by up to 60% (measured: scatter, p = 16,
/// dragonfly). SimGrid signals every advance of the clock after the models have moved to
/// the new date and before the rates are solved again: an update of every tracked link
/// there integrates each interval at the rates that held during it, which makes the
/// plugin's sum exact. Registered once, by rank 0; `tracked` is null outside the bench.
const std::vector<sg_link_t>* tracked = nullptr;
void update_on_every_advance(const std::vector<sg_link_t>* links) {
  tracked = links;
  simgrid::s4u::Engine::on_time_advance_cb([](double) {
    if (tracked)
      for (sg_link_t l : *tracked) sg_link_get_cum_load(l);  // the plugin's update(), then the value
  });
}

/// Elements of the output that a rank checks: the defined part of its result.
size_t checked_elems(const std::string& k, size_t n, int p, int me) {
  if (k == "barrier") return 0;
  if (k == "reduce" || k == "gather") return me == 0 ? (k == "gather" ? n * size_t(p) : n) : 0;
  if (k == "exscan") return me == 0 ? 0 : n;
  if (k == "allgather" || k == "alltoall") return n * size_t(p);
  return n;
}

}  // namespace

/// Whether schedule `name` is timed: BINE_SMPI_SCHEDULES (comma-separated schedule names,
/// sim/smpi.py --schedule) unset or empty means every applicable one.
bool wanted(const char* name) {
  const char* env = std::getenv("BINE_SMPI_SCHEDULES");
  if (!env || !*env) return true;
  const std::string list = std::string(",") + env + ",";
  return list.find("," + std::string(name) + ",") != std::string::npos;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (argc < 3) {
    if (me == 0) std::fprintf(stderr, "usage: bine-smpi-bench BYTES[,BYTES...] dragonfly|fattree|torus|none [COLLECTIVE ...]\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<uint64_t> sizes;
  for (const char* s = argv[1]; *s;) {
    char* end = nullptr;
    sizes.push_back(std::strtoull(s, &end, 10));
    s = *end == ',' ? end + 1 : end;
    if (end == s && *s) break;
  }
  const std::string kind = argv[2];
  std::vector<std::string> only(argv + 3, argv + argc);
  const bool mpi_only = std::find(only.begin(), only.end(), "--mpi-only") != only.end();
  only.erase(std::remove(only.begin(), only.end(), "--mpi-only"), only.end());
  bool bad = kind != "dragonfly" && kind != "fattree" && kind != "torus" && kind != "none";
  for (uint64_t b : sizes) bad = bad || b % 4 != 0;
  if (bad || sizes.empty()) {
    if (me == 0) std::fprintf(stderr, "bine-smpi-bench: sizes must be multiples of 4 bytes; GLOBAL dragonfly, fattree, torus or none\n");
    MPI_Finalize();
    return 2;
  }
  // Tracking a link without the link_load plugin aborts the simulation, so the figures are
  // taken only when the caller says the plugin is on (sim/smpi.py sets both together).
  const char* plugin = std::getenv("BINE_SMPI_LINK_LOAD");
  std::vector<sg_link_t> global;
  const bool loads = plugin && std::string(plugin) == "1" && kind != "none";
  route_count::Shared shared;
  if (kind != "none" && me == 0) {
    global = global_links(kind);
    shared.global.insert(global.begin(), global.end());
    shared.host.resize(size_t(p));
    if (loads) {
      for (sg_link_t l : global) sg_link_load_track(l);
      update_on_every_advance(&global);
    }
  }
  sg_host_t self = sg_host_self();
  route_count::Shared* sp = &shared;
  MPI_Bcast(&sp, int(sizeof sp), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (kind != "none") {
    // Every rank writes its own host into rank 0's table (one address space), then all wait.
    sp->host[size_t(me)] = self;
    MPI_Barrier(MPI_COMM_WORLD);
    route_count::shared = sp;
  }
  // One SimGrid barrier for all ranks: every rank is an actor of the one simulation process,
  // so rank 0's pointer is valid on every rank.
  sg_bar_t sync = me == 0 ? sg_barrier_init(unsigned(p)) : nullptr;
  MPI_Bcast(&sync, int(sizeof sync), MPI_BYTE, 0, MPI_COMM_WORLD);
  std::vector<int32_t> s, r, ref;
  int status = 0;
  for (const Coll& c : bine::bench::kColls) {
    const std::string k = c.key;
    if (!only.empty() && std::find(only.begin(), only.end(), k) == only.end()) continue;
    const bool barrier = k == "barrier";
    for (size_t si = 0; si < (barrier ? 1 : sizes.size()); ++si) {
      const uint64_t bytes = barrier ? 0 : sizes[si];
      const size_t n = size_t(bytes / 4);
      const size_t check = checked_elems(k, n, p, me);
      // Buffers of p blocks for the rank-indexed collectives, of the vector otherwise (and
      // no larger: at p = 128 and 64 KiB, p-block buffers for every collective took 3 GiB
      // and most of the run's time to fill).
      const bool indexed = k == "allgather" || k == "gather" || k == "scatter" || k == "reduce_scatter_block" ||
                           k == "alltoall";
      const size_t cap = (indexed ? n * size_t(p) : n) + 16;
      s.assign(cap, 0);
      r.assign(cap, 0);
      ref.assign(cap, 0);
      // "mpi" (the oracle) is last in the table; run it first.
      std::vector<const Entry*> order{&c.entries[c.n - 1]};
      for (size_t i = 0; i + 1 < c.n && !mpi_only; ++i)
        if (c.entries[i].applicable(p) == 1 && wanted(c.entries[i].name)) order.push_back(&c.entries[i]);
      for (const Entry* e : order) {
        auto fill = [&] {
          for (size_t i = 0; i < cap; ++i) s[i] = int32_t((uint64_t(me) * 7919u + i * 104729u) % 1000u);
          // bcast works in r: the root's data, zeros elsewhere.
          for (size_t i = 0; i < cap; ++i) r[i] = k == "bcast" && me == 0 ? s[i] : 0;
        };
        fill();
        int rc = bine::bench::call(c.key, *e, reinterpret_cast<char*>(s.data()), reinterpret_cast<char*>(r.data()), n,
                                   MPI_INT, MPI_COMM_WORLD);
        int ok = rc == MPI_SUCCESS;
        if (!e->fn) {
          std::copy(r.begin(), r.end(), ref.begin());
        } else if (ok) {
          for (size_t i = 0; i < check; ++i)
            if (r[i] != ref[i]) {
              std::fprintf(stderr, "bine-smpi-bench: %s %s p=%d %llu B: rank %d element %zu is %d, MPI gives %d\n", c.key,
                           e->name, p, (unsigned long long)bytes, me, i, r[i], ref[i]);
              ok = 0;
              break;
            }
        } else {
          std::fprintf(stderr, "bine-smpi-bench: %s %s p=%d %llu B: rank %d: %s\n", c.key, e->name, p,
                       (unsigned long long)bytes, me, bcc_last_error());
        }
        fill();
        // Once every rank has left the barrier, every message of it has arrived (the last
        // ones may still fly when rank 0 leaves); then the reset, then the timed call.
        MPI_Barrier(MPI_COMM_WORLD);
        sg_barrier_wait(sync);
        if (loads && me == 0)
          for (sg_link_t l : global) sg_link_load_reset(l);
        sg_barrier_wait(sync);
        route_count::bytes = route_count::messages = 0;
        route_count::on = true;
        const double t0 = MPI_Wtime();
        const int rc2 = bine::bench::call(c.key, *e, reinterpret_cast<char*>(s.data()), reinterpret_cast<char*>(r.data()),
                                          n, MPI_INT, MPI_COMM_WORLD);
        double mine = (MPI_Wtime() - t0) * 1e6, slowest = 0;
        route_count::on = false;
        ok = ok && rc2 == MPI_SUCCESS;
        sg_barrier_wait(sync);
        double load = -1;
        if (loads && me == 0) {
          load = 0;
          for (sg_link_t l : global) load += sg_link_get_cum_load(l);
        }
        int all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        uint64_t mine_route[2] = {route_count::bytes, route_count::messages}, route[2] = {0, 0};
        MPI_Reduce(mine_route, route, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        if (!all_ok) status = 1;
        if (me == 0)
          std::printf("{\"collective\": \"%s\", \"schedule\": \"%s\", \"p\": %d, \"bytes\": %llu, \"us\": %.3f, \"ok\": %s, "
                      "\"global_load\": %.0f, \"global_bytes\": %lld, \"global_messages\": %lld}\n",
                      c.key, e->name, p, (unsigned long long)bytes, slowest, all_ok ? "true" : "false", load,
                      e->fn && kind != "none" ? (long long)route[0] : -1LL, e->fn && kind != "none" ? (long long)route[1] : -1LL);
      }
    }
  }
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  route_count::shared = nullptr;
  if (me == 0) {
    tracked = nullptr;
    sg_barrier_destroy(sync);
  }
  MPI_Finalize();
  return status;
}
