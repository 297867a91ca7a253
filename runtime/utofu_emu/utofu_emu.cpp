// utofu_emu.cpp: an emulation of the uTofu subset declared in runtime/utofu_emu/include/utofu.h,
// for MPI processes on one machine (docs/utofu.md, "The emulation").
//
// Model. Every process of MPI_COMM_WORLD is a node with 6 TNIs. MPI_Init / MPI_Init_thread
// are intercepted (the MPI profiling interface) to map one shared-memory segment
// (MPI_Win_allocate_shared over MPI_COMM_WORLD); it holds, per destination rank, its table of
// registered regions (read by senders to check a remote stadd) and, per (source, source TNI,
// destination), a single-producer single-consumer byte ring: the wire. A put is a descriptor
// in the sender's transmit order queue (TOQ, kToqDepth entries: a full TOQ is UTOFU_ERR_BUSY); the
// sender's progress moves descriptors in order onto the ring towards their destination
// (chunked, so a put of any length passes a ring of any size), the receiver's progress lands
// chunks at their registered address and, after the last chunk of a put with
// REMOTE_MRQ_NOTICE, queues a UTOFU_MRQ_TYPE_RMT_PUT notice (vcq_id = sender's VCQ, edata,
// rmt_stadd = the stadd written) on the destination VCQ's MRQ. Progress runs in every
// utofu_put*, utofu_poll_tcq and utofu_poll_mrq call of a process (the NIC of a node that
// never calls uTofu does not land data: a documented limit). A put is locally complete
// (TCQ notice with its cbdata, LCL_PUT notice) once its last byte is on the ring.
//
// Order: puts from one VCQ to one destination land in posting order (one ring per source
// TNI and destination: the uTofu guarantee under STRONG_ORDER, for one VCQ pair); puts from
// different sources, or from different TNIs of one source, land in any order (the receiver
// serves its wires one after the other). The stress mode (environment
// BINE_UTOFU_EMU_STRESS=seed) makes that order adversarial: the receiver drains its rings in
// a random order, holds each ring for a random number (0..63) of progress calls after
// serving it and lands at most a random number of chunks per ring, so a put from a fast
// source (or TNI) can land long before an earlier put from a slow one; and the sender serves
// its VCQs in a random order, a few puts each, so puts posted on different VCQs (TNIs)
// towards one destination also land in an order their posting did not fix.
//
// Limits, as measured on Fugaku (bine-cc ../shared/docs/backend-apis.md): max_putget_size
// 16777215 B, max_piggyback_size 32 B, max_edata_size 1 B (edata 0..255), 6 TNIs,
// stag_address_alignment 256. Arguments outside them are the documented error codes and
// nothing is sent. A remote stadd is checked when the put is posted (the real network reports
// a bad remote stadd later, through the MRQ): the emulation is stricter, never more lenient.
#include <mpi.h>
#include <utofu.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace {

constexpr size_t kMaxPutget = 16777215;
constexpr size_t kMaxPiggyback = 32;
constexpr uint64_t kMaxEdata = 255;
constexpr int kNumTnis = 6;
constexpr int kMaxCqPerTni = 11;         // VCQs per TNI and process (Fugaku: 11 CQs per TNI)
constexpr int kMaxRegions = 256;         // registered regions per process
constexpr unsigned kStaddShift = 40;     // stadd = (region + 1) << 40 | byte offset
constexpr uint64_t kOffsetMask = (uint64_t(1) << kStaddShift) - 1;

struct RegionEntry {                     // in shared memory, read by senders
  std::atomic<uint64_t> size;            // 0: free
  std::atomic<uint64_t> flags;
};

struct ChunkHeader {                     // on the ring, followed by `length` bytes (8-aligned)
  uint64_t rmt_stadd;                    // where these bytes land
  uint64_t length;
  uint64_t edata;
  uint64_t src_vcq_id;
  uint64_t put_stadd;                    // the put's rmt_stadd (the notice's)
  uint32_t dst_tni_cq;                   // destination VCQ (tni * kMaxCqPerTni + cq)
  uint32_t last_notice;                  // bit 0: last chunk; bit 1: REMOTE_MRQ_NOTICE
};

struct RingCtl {                         // one per (source, source TNI, destination), in shared memory
  alignas(64) std::atomic<uint64_t> head;  // consumer position (bytes)
  alignas(64) std::atomic<uint64_t> tail;  // producer position (bytes)
};

struct Descriptor {
  int dst_rank;
  uint32_t dst_tni_cq;
  uint64_t rmt_stadd;
  const unsigned char* src;              // local bytes (or inline[] for piggyback)
  unsigned char inline_data[kMaxPiggyback];
  bool piggyback;
  size_t length, sent;
  uint64_t edata, flags, lcl_stadd;
  void* cbdata;
};

struct Vcq {
  int tni, cq;
  bool live = false;
  std::deque<Descriptor> toq;            // posted, not yet fully on the wire (in order)
  size_t in_flight = 0;                  // TOQ slots held: toq.size() + unread TCQ entries
  std::deque<void*> tcq;                 // local completions (TCQ_NOTICE)
  std::deque<utofu_mrq_notice> mrq;      // arrivals and local notices
};

struct Emu {
  bool ready = false;
  int rank = 0, size = 1;
  MPI_Win win = MPI_WIN_NULL;
  size_t ring_bytes = 24 << 10;  // per (source, TNI, destination): 144 KiB per pair in all
  size_t toq_depth = 64;
  std::vector<unsigned char*> seg;       // every rank's segment base in this process
  std::vector<void*> region_addr;        // this process's regions (local addresses)
  std::vector<std::unique_ptr<Vcq>> vcqs;  // index tni * kMaxCqPerTni + cq
  bool stress = false;
  std::mt19937_64 rng;
  uint64_t puts_per_tni[kNumTnis] = {};  // puts posted by this process, per TNI (bine_utofu_emu_puts_per_tni)
  uint64_t registrations = 0;            // successful utofu_reg_mem calls (bine_utofu_emu_registrations)
  uint64_t live_registrations = 0;       // of them, not yet deregistered
  utofu_onesided_caps caps{};
};

Emu g;

}  // namespace
// Not uTofu: a test hook (translation validation, tests/mpi/pmpi_trace.cpp): when set, called
// for every put this process posts successfully, with the destination rank, edata, length
// in bytes and flags.
extern "C" void (*bine_utofu_emu_put_hook)(int dst_rank, uint64_t edata, size_t length, unsigned long flags);
void (*bine_utofu_emu_put_hook)(int, uint64_t, size_t, unsigned long) = nullptr;
namespace {

size_t segment_bytes(size_t nranks, size_t ring) {
  return sizeof(RegionEntry) * kMaxRegions + nranks * kNumTnis * (sizeof(RingCtl) + ring);
}
RegionEntry* regions_of(int rank) { return reinterpret_cast<RegionEntry*>(g.seg[rank]); }
// The ring carrying bytes from TNI `tni` of `src` to `dst` lives in dst's segment (one wire
// per TNI: puts on different TNIs are not ordered, as on the network).
RingCtl* ring_ctl(int src, int tni, int dst) {
  unsigned char* base = g.seg[dst] + sizeof(RegionEntry) * kMaxRegions;
  return reinterpret_cast<RingCtl*>(base + size_t(src * kNumTnis + tni) * (sizeof(RingCtl) + g.ring_bytes));
}
unsigned char* ring_data(int src, int tni, int dst) { return reinterpret_cast<unsigned char*>(ring_ctl(src, tni, dst) + 1); }

void ring_write(unsigned char* data, uint64_t pos, const void* from, size_t n) {
  const size_t cap = g.ring_bytes, at = size_t(pos % cap), first = std::min(n, cap - at);
  std::memcpy(data + at, from, first);
  std::memcpy(data, static_cast<const unsigned char*>(from) + first, n - first);
}
void ring_read(const unsigned char* data, uint64_t pos, void* to, size_t n) {
  const size_t cap = g.ring_bytes, at = size_t(pos % cap), first = std::min(n, cap - at);
  std::memcpy(to, data + at, first);
  std::memcpy(static_cast<unsigned char*>(to) + first, data, n - first);
}
size_t padded(size_t n) { return (n + 7) & ~size_t(7); }

utofu_vcq_id_t make_vcq_id(int rank, int tni, int cq) {
  return (uint64_t(uint32_t(rank)) << 16) | (uint64_t(tni) << 8) | uint64_t(cq);
}
bool decode_vcq_id(utofu_vcq_id_t id, int* rank, int* tni, int* cq) {
  *rank = int(id >> 16);
  *tni = int((id >> 8) & 0xff);
  *cq = int(id & 0xff);
  return *rank >= 0 && *rank < g.size && *tni < kNumTnis && *cq < kMaxCqPerTni;
}
Vcq* vcq_of(utofu_vcq_hdl_t h) {
  if (!g.ready || h == 0 || h > g.vcqs.size()) return nullptr;
  Vcq* v = g.vcqs[h - 1].get();
  return v->live ? v : nullptr;
}

// Checks that [stadd, stadd + length) lies in a region registered by `rank` (writable if `write`).
bool stadd_ok(int rank, utofu_stadd_t stadd, size_t length, bool write) {
  const uint64_t r = stadd >> kStaddShift;
  if (r == 0 || r > kMaxRegions) return false;
  RegionEntry& e = regions_of(rank)[r - 1];
  const uint64_t size = e.size.load(std::memory_order_acquire), off = stadd & kOffsetMask;
  if (size == 0 || off > size || length > size - off) return false;
  return !(write && (e.flags.load(std::memory_order_relaxed) & UTOFU_REG_MEM_FLAG_READ_ONLY));
}

// Moves the TOQ onto the wire, in order per destination; at most `budget` puts finish.
void push_toq(Vcq& v, size_t budget = size_t(-1)) {
  static std::vector<char> blocked;
  blocked.assign(size_t(g.size), 0);
  for (auto it = v.toq.begin(); it != v.toq.end() && budget > 0;) {
    Descriptor& d = *it;
    if (blocked[size_t(d.dst_rank)]) {
      ++it;
      continue;
    }
    RingCtl* ctl = ring_ctl(g.rank, v.tni, d.dst_rank);
    unsigned char* data = ring_data(g.rank, v.tni, d.dst_rank);
    uint64_t tail = ctl->tail.load(std::memory_order_relaxed);
    const uint64_t head = ctl->head.load(std::memory_order_acquire);
    bool done = false;
    while (!done) {
      const size_t free_bytes = g.ring_bytes - size_t(tail - head);
      const size_t left = d.length - d.sent;
      if (free_bytes < sizeof(ChunkHeader) + (left ? 8 : 0)) break;
      const size_t n = std::min(left, (free_bytes - sizeof(ChunkHeader)) & ~size_t(7));
      done = d.sent + n == d.length;
      ChunkHeader h{d.rmt_stadd + d.sent, n, d.edata, make_vcq_id(g.rank, v.tni, v.cq), d.rmt_stadd,
                    d.dst_tni_cq, 0};
      h.last_notice = (done ? 1u : 0u) | ((d.flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE) ? 2u : 0u);
      ring_write(data, tail, &h, sizeof h);
      ring_write(data, tail + sizeof h, (d.piggyback ? d.inline_data : d.src) + d.sent, n);
      tail += sizeof h + padded(n);
      d.sent += n;
      ctl->tail.store(tail, std::memory_order_release);
    }
    if (!done) {
      blocked[size_t(d.dst_rank)] = 1;
      ++it;
      continue;
    }
    // Locally complete: the source buffer may be reused.
    if (d.flags & UTOFU_ONESIDED_FLAG_TCQ_NOTICE)
      v.tcq.push_back(d.cbdata);
    else
      --v.in_flight;
    if (d.flags & UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE) {
      utofu_mrq_notice n{};
      n.notice_type = UTOFU_MRQ_TYPE_LCL_PUT;
      n.vcq_id = make_vcq_id(d.dst_rank, int(d.dst_tni_cq) / kMaxCqPerTni, int(d.dst_tni_cq) % kMaxCqPerTni);
      n.edata = d.edata;
      n.lcl_stadd = d.lcl_stadd;
      n.rmt_stadd = d.rmt_stadd;
      v.mrq.push_back(n);
    }
    it = v.toq.erase(it);
    --budget;
  }
}

// Lands what arrived on this process's inbound rings.
void drain_rings() {
  static std::vector<int> order;  // src * kNumTnis + tni
  static std::vector<uint32_t> hold;  // stress: progress calls a wire still waits
  order.resize(size_t(g.size * kNumTnis));
  hold.resize(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  if (g.stress) std::shuffle(order.begin(), order.end(), g.rng);
  for (int wire : order) {
    if (g.stress) {  // this wire is slow: it lands nothing for the next 0..63 calls
      if (hold[size_t(wire)] > 0) {
        --hold[size_t(wire)];
        continue;
      }
      hold[size_t(wire)] = uint32_t(g.rng() % 64);
    }
    size_t budget = g.stress ? size_t(1 + g.rng() % 3) : size_t(-1);
    RingCtl* ctl = ring_ctl(wire / kNumTnis, wire % kNumTnis, g.rank);
    const unsigned char* data = ring_data(wire / kNumTnis, wire % kNumTnis, g.rank);
    uint64_t head = ctl->head.load(std::memory_order_relaxed);
    const uint64_t tail = ctl->tail.load(std::memory_order_acquire);
    while (head < tail && budget-- > 0) {
      ChunkHeader h;
      ring_read(data, head, &h, sizeof h);
      const size_t region = size_t(h.rmt_stadd >> kStaddShift) - 1;
      const uint64_t off = h.rmt_stadd & kOffsetMask;
      // A region deregistered while a put to it was on the wire: the bytes are dropped.
      if (region < g.region_addr.size() && g.region_addr[region] &&
          stadd_ok(g.rank, h.rmt_stadd, size_t(h.length), true))
        ring_read(data, head + sizeof h, static_cast<unsigned char*>(g.region_addr[region]) + off, size_t(h.length));
      head += sizeof h + padded(size_t(h.length));
      if ((h.last_notice & 3u) == 3u) {
        Vcq* v = g.vcqs[h.dst_tni_cq].get();
        if (v && v->live) {
          utofu_mrq_notice n{};
          n.notice_type = UTOFU_MRQ_TYPE_RMT_PUT;
          n.vcq_id = h.src_vcq_id;
          n.edata = h.edata;
          n.rmt_stadd = h.put_stadd;
          v->mrq.push_back(n);
        }
      }
    }
    ctl->head.store(head, std::memory_order_release);
  }
}

// The stress mode also interleaves the VCQs of one process adversarially: they are served
// in a random order and each finishes at most 1-2 puts per call, so puts posted on
// different VCQs (TNIs) to one destination land in an order their posting did not fix
// (STRONG_ORDER holds per VCQ pair only). Without it, VCQs are served in index order.
void progress() {
  if (!g.stress) {
    for (auto& v : g.vcqs)
      if (v && v->live) push_toq(*v);
  } else {
    static std::vector<size_t> order;
    order.resize(g.vcqs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), g.rng);
    for (size_t i : order)
      if (g.vcqs[i] && g.vcqs[i]->live) push_toq(*g.vcqs[i], size_t(1 + g.rng() % 2));
  }
  drain_rings();
}

int post(utofu_vcq_hdl_t h, utofu_vcq_id_t rmt, const void* src, bool piggyback, utofu_stadd_t lcl_stadd,
         utofu_stadd_t rmt_stadd, size_t length, uint64_t edata, unsigned long flags, void* cbdata) {
  Vcq* v = vcq_of(h);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  int rank, tni, cq;
  if (!decode_vcq_id(rmt, &rank, &tni, &cq)) return UTOFU_ERR_INVALID_VCQ_ID;
  if (edata > kMaxEdata) return UTOFU_ERR_INVALID_EDATA;
  if (length > (piggyback ? kMaxPiggyback : kMaxPutget)) return UTOFU_ERR_INVALID_SIZE;
  if (piggyback && length > 0 && !src) return UTOFU_ERR_INVALID_POINTER;
  if (!piggyback && !stadd_ok(g.rank, lcl_stadd, length, false)) return UTOFU_ERR_INVALID_STADD;
  if (!stadd_ok(rank, rmt_stadd, length, true)) return UTOFU_ERR_INVALID_STADD;
  progress();
  if (v->in_flight >= g.toq_depth) return UTOFU_ERR_BUSY;
  Descriptor d{};
  d.dst_rank = rank;
  d.dst_tni_cq = uint32_t(tni * kMaxCqPerTni + cq);
  d.rmt_stadd = rmt_stadd;
  d.piggyback = piggyback;
  if (piggyback) {
    if (length) std::memcpy(d.inline_data, src, length);
  } else {
    const size_t region = size_t(lcl_stadd >> kStaddShift) - 1;
    d.src = static_cast<const unsigned char*>(g.region_addr[region]) + (lcl_stadd & kOffsetMask);
  }
  d.length = length;
  d.edata = edata;
  d.flags = flags;
  d.lcl_stadd = lcl_stadd;
  d.cbdata = cbdata;
  v->toq.push_back(d);
  ++v->in_flight;
  ++g.puts_per_tni[size_t(v->tni)];
  if (bine_utofu_emu_put_hook) bine_utofu_emu_put_hook(rank, edata, length, flags);
  if (!g.stress) push_toq(*v);  // stress: the next progress() serves the VCQs in a random order
  return UTOFU_SUCCESS;
}

size_t env_size(const char* name, size_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  return (end && *end == 0 && v > 0) ? size_t(v) : fallback;
}

void setup() {
  MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g.size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  if (node_size != g.size) return;  // not one machine: every call is UTOFU_ERR_NOT_AVAILABLE
  g.ring_bytes = std::max<size_t>(padded(env_size("BINE_UTOFU_EMU_RING_BYTES", g.ring_bytes)),
                                  sizeof(ChunkHeader) + 64);
  g.toq_depth = env_size("BINE_UTOFU_EMU_TOQ_DEPTH", g.toq_depth);
  if (const char* s = std::getenv("BINE_UTOFU_EMU_STRESS"); s && *s) {
    g.stress = true;
    g.rng.seed(std::strtoull(s, nullptr, 10) * 1000003u + uint64_t(g.rank));
  }
  const size_t bytes = segment_bytes(size_t(g.size), g.ring_bytes);
  unsigned char* mine = nullptr;
  if (MPI_Win_allocate_shared(MPI_Aint(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &g.win) != MPI_SUCCESS)
    return;
  std::memset(mine, 0, bytes);
  g.seg.resize(size_t(g.size));
  for (int r = 0; r < g.size; ++r) {
    MPI_Aint sz;
    int disp;
    void* base;
    MPI_Win_shared_query(g.win, r, &sz, &disp, &base);
    g.seg[size_t(r)] = static_cast<unsigned char*>(base);
  }
  g.region_addr.assign(kMaxRegions, nullptr);
  g.vcqs.resize(size_t(kNumTnis * kMaxCqPerTni));
  for (int t = 0; t < kNumTnis; ++t)
    for (int c = 0; c < kMaxCqPerTni; ++c) {
      auto v = std::make_unique<Vcq>();
      v->tni = t;
      v->cq = c;
      g.vcqs[size_t(t * kMaxCqPerTni + c)] = std::move(v);
    }
  g.caps.flags = 0;
  g.caps.armw_ops = 0;
  g.caps.num_cmp_ids = 8;
  g.caps.num_reserved_stags = 256;
  g.caps.cache_line_size = 256;
  g.caps.stag_address_alignment = 256;
  g.caps.max_toq_desc_size = 64;
  g.caps.max_putget_size = kMaxPutget;
  g.caps.max_piggyback_size = kMaxPiggyback;
  g.caps.max_edata_size = 1;
  g.caps.max_mtu = 1920;
  g.caps.max_gap = 255;
  MPI_Barrier(MPI_COMM_WORLD);  // every segment zeroed before anyone writes
  g.ready = true;
}

void teardown() {
  if (g.win != MPI_WIN_NULL) MPI_Win_free(&g.win);
  g.ready = false;
  g.seg.clear();
  g.vcqs.clear();
}

}  // namespace

extern "C" {

// The MPI profiling interface: the emulation maps its shared segment when MPI starts and
// frees it when MPI ends (both collective over MPI_COMM_WORLD).
int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) setup();
  return rc;
}
int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) setup();
  return rc;
}
int MPI_Finalize(void) {
  teardown();
  return PMPI_Finalize();
}

int utofu_get_onesided_tnis(utofu_tni_id_t** tni_ids, size_t* num_tnis) {
  if (!tni_ids || !num_tnis) return UTOFU_ERR_INVALID_POINTER;
  if (!g.ready) return UTOFU_ERR_NOT_AVAILABLE;
  auto* ids = static_cast<utofu_tni_id_t*>(std::malloc(sizeof(utofu_tni_id_t) * kNumTnis));
  if (!ids) return UTOFU_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < kNumTnis; ++i) ids[i] = utofu_tni_id_t(i);
  *tni_ids = ids;
  *num_tnis = kNumTnis;
  return UTOFU_SUCCESS;
}

int utofu_query_onesided_caps(utofu_tni_id_t tni_id, struct utofu_onesided_caps** tni_caps) {
  if (!tni_caps) return UTOFU_ERR_INVALID_POINTER;
  if (!g.ready) return UTOFU_ERR_NOT_AVAILABLE;
  if (tni_id >= kNumTnis) return UTOFU_ERR_INVALID_TNI_ID;
  *tni_caps = &g.caps;
  return UTOFU_SUCCESS;
}

int utofu_query_my_coords(uint8_t coords[]) {
  if (!coords) return UTOFU_ERR_INVALID_POINTER;
  if (!g.ready) return UTOFU_ERR_NOT_AVAILABLE;
  // One node per process along x (the emulation has no torus).
  coords[0] = uint8_t(g.rank & 0xff);
  coords[1] = uint8_t((g.rank >> 8) & 0xff);
  for (int i = 2; i < 6; ++i) coords[i] = 0;
  return UTOFU_SUCCESS;
}

int utofu_create_vcq(utofu_tni_id_t tni_id, unsigned long int flags, utofu_vcq_hdl_t* vcq_hdl) {
  if (!vcq_hdl) return UTOFU_ERR_INVALID_POINTER;
  if (!g.ready) return UTOFU_ERR_NOT_AVAILABLE;
  if (tni_id >= kNumTnis) return UTOFU_ERR_INVALID_TNI_ID;
  if (flags & ~(UTOFU_VCQ_FLAG_THREAD_SAFE | UTOFU_VCQ_FLAG_EXCLUSIVE | UTOFU_VCQ_FLAG_SESSION_MODE))
    return UTOFU_ERR_INVALID_FLAGS;
  for (int c = 0; c < kMaxCqPerTni; ++c) {
    Vcq& v = *g.vcqs[size_t(tni_id * kMaxCqPerTni + c)];
    if (v.live) continue;
    v.live = true;
    v.toq.clear();
    v.tcq.clear();
    v.mrq.clear();
    v.in_flight = 0;
    *vcq_hdl = utofu_vcq_hdl_t(tni_id * kMaxCqPerTni + c + 1);
    return UTOFU_SUCCESS;
  }
  return UTOFU_ERR_FULL;
}

int utofu_free_vcq(utofu_vcq_hdl_t vcq_hdl) {
  Vcq* v = vcq_of(vcq_hdl);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  // Unfinished puts are still sent (the wire does not lose bytes another rank waits for).
  while (!v->toq.empty()) progress();
  v->live = false;
  return UTOFU_SUCCESS;
}

int utofu_query_vcq_id(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t* vcq_id) {
  Vcq* v = vcq_of(vcq_hdl);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (!vcq_id) return UTOFU_ERR_INVALID_POINTER;
  *vcq_id = make_vcq_id(g.rank, v->tni, v->cq);
  return UTOFU_SUCCESS;
}

int utofu_query_vcq_info(utofu_vcq_id_t vcq_id, uint8_t coords[], utofu_tni_id_t* tni_id, utofu_cq_id_t* cq_id,
                         uint16_t* extra_val) {
  if (!g.ready) return UTOFU_ERR_NOT_AVAILABLE;
  int rank, tni, cq;
  if (!decode_vcq_id(vcq_id, &rank, &tni, &cq)) return UTOFU_ERR_INVALID_VCQ_ID;
  if (!coords || !tni_id || !cq_id || !extra_val) return UTOFU_ERR_INVALID_POINTER;
  coords[0] = uint8_t(rank & 0xff);
  coords[1] = uint8_t((rank >> 8) & 0xff);
  for (int i = 2; i < 6; ++i) coords[i] = 0;
  *tni_id = utofu_tni_id_t(tni);
  *cq_id = utofu_cq_id_t(cq);
  *extra_val = 0;
  return UTOFU_SUCCESS;
}

int utofu_set_vcq_id_path(utofu_vcq_id_t* vcq_id, uint8_t path_coords[]) {
  if (!vcq_id) return UTOFU_ERR_INVALID_POINTER;
  if (!g.ready) return UTOFU_ERR_NOT_AVAILABLE;
  int rank, tni, cq;
  if (!decode_vcq_id(*vcq_id, &rank, &tni, &cq)) return UTOFU_ERR_INVALID_VCQ_ID;
  (void)path_coords;  // one machine: every path is the default path
  return UTOFU_SUCCESS;
}

int utofu_reg_mem(utofu_vcq_hdl_t vcq_hdl, void* addr, size_t size, unsigned long int flags, utofu_stadd_t* stadd) {
  if (!vcq_of(vcq_hdl)) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (!addr || !stadd) return UTOFU_ERR_INVALID_POINTER;
  if (size == 0 || size > kOffsetMask) return UTOFU_ERR_INVALID_SIZE;
  if (flags & ~UTOFU_REG_MEM_FLAG_READ_ONLY) return UTOFU_ERR_INVALID_FLAGS;
  RegionEntry* table = regions_of(g.rank);
  for (int r = 0; r < kMaxRegions; ++r) {
    if (g.region_addr[size_t(r)]) continue;
    g.region_addr[size_t(r)] = addr;
    table[r].flags.store(flags, std::memory_order_relaxed);
    table[r].size.store(size, std::memory_order_release);
    *stadd = (uint64_t(r) + 1) << kStaddShift;
    ++g.registrations;
    ++g.live_registrations;
    return UTOFU_SUCCESS;
  }
  return UTOFU_ERR_OUT_OF_RESOURCE;
}

int utofu_dereg_mem(utofu_vcq_hdl_t vcq_hdl, utofu_stadd_t stadd, unsigned long int flags) {
  if (!vcq_of(vcq_hdl)) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (flags != 0) return UTOFU_ERR_INVALID_FLAGS;
  const uint64_t r = stadd >> kStaddShift;
  if (r == 0 || r > kMaxRegions || (stadd & kOffsetMask) != 0 || !g.region_addr[r - 1]) return UTOFU_ERR_INVALID_STADD;
  regions_of(g.rank)[r - 1].size.store(0, std::memory_order_release);
  g.region_addr[r - 1] = nullptr;
  --g.live_registrations;
  return UTOFU_SUCCESS;
}

int utofu_put(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, utofu_stadd_t lcl_stadd, utofu_stadd_t rmt_stadd,
              size_t length, uint64_t edata, unsigned long int flags, void* cbdata) {
  return post(vcq_hdl, rmt_vcq_id, nullptr, false, lcl_stadd, rmt_stadd, length, edata, flags, cbdata);
}

int utofu_put_piggyback(utofu_vcq_hdl_t vcq_hdl, utofu_vcq_id_t rmt_vcq_id, void* lcl_data, utofu_stadd_t rmt_stadd,
                        size_t length, uint64_t edata, unsigned long int flags, void* cbdata) {
  return post(vcq_hdl, rmt_vcq_id, lcl_data, true, 0, rmt_stadd, length, edata, flags, cbdata);
}

int utofu_poll_tcq(utofu_vcq_hdl_t vcq_hdl, unsigned long int flags, void** cbdata) {
  Vcq* v = vcq_of(vcq_hdl);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (flags != 0) return UTOFU_ERR_INVALID_FLAGS;
  progress();
  if (v->tcq.empty()) {
    sched_yield();  // nothing yet: let the process this one waits for run (oversubscribed cores)
    return UTOFU_ERR_NOT_FOUND;
  }
  if (cbdata) *cbdata = v->tcq.front();
  v->tcq.pop_front();
  --v->in_flight;
  return UTOFU_SUCCESS;
}

int utofu_poll_mrq(utofu_vcq_hdl_t vcq_hdl, unsigned long int flags, struct utofu_mrq_notice* notice) {
  Vcq* v = vcq_of(vcq_hdl);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (flags != 0) return UTOFU_ERR_INVALID_FLAGS;
  if (!notice) return UTOFU_ERR_INVALID_POINTER;
  progress();
  if (v->mrq.empty()) {
    sched_yield();
    return UTOFU_ERR_NOT_FOUND;
  }
  *notice = v->mrq.front();
  v->mrq.pop_front();
  return UTOFU_SUCCESS;
}

int utofu_query_num_unread_tcq(utofu_vcq_hdl_t vcq_hdl, size_t* count) {
  Vcq* v = vcq_of(vcq_hdl);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (!count) return UTOFU_ERR_INVALID_POINTER;
  *count = v->tcq.size();
  return UTOFU_SUCCESS;
}

int utofu_query_num_unread_mrq(utofu_vcq_hdl_t vcq_hdl, size_t* count) {
  Vcq* v = vcq_of(vcq_hdl);
  if (!v) return UTOFU_ERR_INVALID_VCQ_HDL;
  if (!count) return UTOFU_ERR_INVALID_POINTER;
  *count = v->mrq.size();
  return UTOFU_SUCCESS;
}

// Not uTofu: a test hook of the emulation (declared by the tests that use it). Copies the
// number of puts (utofu_put and utofu_put_piggyback) this process has posted on each of
// its 6 TNIs since MPI_Init into counts[0..5]; returns the number of TNIs.
int bine_utofu_emu_puts_per_tni(uint64_t counts[]) {
  for (int i = 0; i < kNumTnis; ++i) counts[i] = g.puts_per_tni[i];
  return kNumTnis;
}

// Not uTofu: a test hook of the emulation (declared by the tests that use it). The number
// of successful utofu_reg_mem calls this process has made since MPI_Init (*made) and how
// many of those regions are still registered (*live).
void bine_utofu_emu_registrations(uint64_t* made, uint64_t* live) {
  if (made) *made = g.registrations;
  if (live) *live = g.live_registrations;
}

}  // extern "C"
