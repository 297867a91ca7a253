// emu_test.cpp: the uTofu emulation (runtime/utofu_emu) against the behaviour the uTofu
// interface specifies (fujitsu/tofu include/utofu.h; ../shared/docs/backend-apis.md):
// limits and their error codes with nothing written, puts of any length landing at the
// sender-computed address, RMT_PUT notices (edata, source VCQ, stadd), per-source order,
// BUSY when the transmit queue is full, TCQ completions with their cbdata, deregistration.
// The oracle is each rank's own knowledge of what every other rank sent (a byte pattern of
// (source, destination, index)). Run under mpirun with p >= 2; exit status 0 when all hold.
// Environment: BINE_UTOFU_EMU_TOQ_DEPTH (the BUSY check expects it as argv[1] when given),
// BINE_UTOFU_EMU_STRESS (argv[2] "stress": expects cross-source reordering),
// BINE_UTOFU_EMU_RING_BYTES (argv[2] "small-ring": no claim on cross-source order).
#include <mpi.h>
#include <utofu.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_fail = 0;
int g_tcq_read = 0;  // TCQ notices read while retrying a BUSY put

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "rank %d: %s:%d: CHECK(%s)\n", g_rank, __FILE__, __LINE__, #cond); \
      ++g_fail;                                                                      \
    }                                                                                \
  } while (0)

unsigned char pattern(int src, int dst, size_t i) { return (unsigned char)(src * 31 + dst * 7 + i * 13 + (i >> 8)); }

struct Peer {
  utofu_vcq_id_t vcq;
  utofu_stadd_t stadd;
};

// Every rank's VCQ id and the stadd of its registered buffer (the bootstrap exchange).
std::vector<Peer> exchange(utofu_vcq_id_t vcq, utofu_stadd_t stadd, int p) {
  std::vector<uint64_t> mine{vcq, stadd}, all(size_t(2 * p));
  MPI_Allgather(mine.data(), 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
  std::vector<Peer> peers(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    peers[size_t(r)] = {all[size_t(2 * r)], all[size_t(2 * r + 1)]};
    CHECK(utofu_set_vcq_id_path(&peers[size_t(r)].vcq, nullptr) == UTOFU_SUCCESS);
  }
  return peers;
}

void put_retry(utofu_vcq_hdl_t h, utofu_vcq_id_t rmt, utofu_stadd_t l, utofu_stadd_t r, size_t n, uint64_t edata,
               unsigned long flags, void* cb) {
  int rc;
  while ((rc = utofu_put(h, rmt, l, r, n, edata, flags, cb)) == UTOFU_ERR_BUSY) {
    void* done;
    if (utofu_poll_tcq(h, 0, &done) == UTOFU_SUCCESS) ++g_tcq_read;
  }
  CHECK(rc == UTOFU_SUCCESS);
}

// Reads the TCQ notices of `expected` puts, less those read while retrying.
void drain_tcq(utofu_vcq_hdl_t h, int expected) {
  expected -= g_tcq_read;
  g_tcq_read = 0;
  while (expected > 0) {
    void* cb = nullptr;
    const int rc = utofu_poll_tcq(h, 0, &cb);
    if (rc == UTOFU_SUCCESS) --expected;
    else CHECK(rc == UTOFU_ERR_NOT_FOUND);
  }
}

utofu_mrq_notice next_notice(utofu_vcq_hdl_t h) {
  utofu_mrq_notice n{};
  int rc;
  while ((rc = utofu_poll_mrq(h, 0, &n)) == UTOFU_ERR_NOT_FOUND) {
  }
  CHECK(rc == UTOFU_SUCCESS);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const long toq_depth = argc > 1 ? std::atol(argv[1]) : 0;
  const std::string mode = argc > 2 ? argv[2] : "";
  const bool stress = mode == "stress";
  const bool small_ring = mode == "small-ring";  // puts may still wait in the TOQ at a barrier
  const unsigned long kFlags = UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE |
                               UTOFU_ONESIDED_FLAG_STRONG_ORDER;

  // Capabilities: the Fugaku figures.
  utofu_tni_id_t* tnis = nullptr;
  size_t ntni = 0;
  CHECK(utofu_get_onesided_tnis(&tnis, &ntni) == UTOFU_SUCCESS && ntni == 6);
  utofu_onesided_caps* caps = nullptr;
  CHECK(utofu_query_onesided_caps(tnis[0], &caps) == UTOFU_SUCCESS);
  CHECK(caps->max_putget_size == 16777215 && caps->max_piggyback_size == 32 && caps->max_edata_size == 1);
  CHECK(utofu_query_onesided_caps(6, &caps) == UTOFU_ERR_INVALID_TNI_ID);

  utofu_vcq_hdl_t h;
  CHECK(utofu_create_vcq(tnis[0], 0, &h) == UTOFU_SUCCESS);
  utofu_vcq_id_t me;
  CHECK(utofu_query_vcq_id(h, &me) == UTOFU_SUCCESS);
  std::free(tnis);

  // Each rank receives from every source a block of `len(src)` bytes at offset src * kSlot;
  // sizes straddle the emulation's ring (128 KiB) and the 32 B piggyback limit.
  const size_t kSlot = 1 << 20;
  auto len = [](int src) { return src % 3 == 0 ? size_t(1 << 20) : src % 3 == 1 ? size_t(1000 + src) : size_t(24); };
  std::vector<unsigned char> recv(kSlot * size_t(p), 0xEE), send(kSlot * size_t(p));
  CHECK(utofu_reg_mem(h, nullptr, 8, 0, nullptr) == UTOFU_ERR_INVALID_POINTER);
  {
    utofu_stadd_t none;
    CHECK(utofu_reg_mem(h, recv.data(), 0, 0, &none) == UTOFU_ERR_INVALID_SIZE);
  }
  utofu_stadd_t rs, ss, ro;
  CHECK(utofu_reg_mem(h, recv.data(), recv.size(), 0, &rs) == UTOFU_SUCCESS);
  CHECK(utofu_reg_mem(h, send.data(), send.size(), UTOFU_REG_MEM_FLAG_READ_ONLY, &ss) == UTOFU_SUCCESS);
  std::vector<unsigned char> rdonly(64, 0xAB);
  CHECK(utofu_reg_mem(h, rdonly.data(), rdonly.size(), UTOFU_REG_MEM_FLAG_READ_ONLY, &ro) == UTOFU_SUCCESS);
  for (int d = 0; d < p; ++d)
    for (size_t i = 0; i < kSlot; ++i) send[size_t(d) * kSlot + i] = pattern(g_rank, d, i);
  std::vector<Peer> peers = exchange(me, rs, p);
  std::vector<uint64_t> ros(static_cast<size_t>(p));
  MPI_Allgather(&ro, 1, MPI_UINT64_T, ros.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);

  // Bad input: an error code, nothing posted (checked below: the receiver's bytes stay 0xEE
  // outside what the valid puts wrote, and no notice beyond the expected ones arrives).
  const int right = (g_rank + 1) % p;
  const utofu_stadd_t dst0 = peers[size_t(right)].stadd + size_t(g_rank) * kSlot;
  CHECK(utofu_put(h, peers[size_t(right)].vcq, ss, dst0, 8, 256, kFlags, nullptr) == UTOFU_ERR_INVALID_EDATA);
  CHECK(utofu_put(h, peers[size_t(right)].vcq, ss, dst0, 16777216, 0, kFlags, nullptr) == UTOFU_ERR_INVALID_SIZE);
  unsigned char small[33] = {0};
  CHECK(utofu_put_piggyback(h, peers[size_t(right)].vcq, small, dst0, 33, 0, kFlags, nullptr) ==
        UTOFU_ERR_INVALID_SIZE);
  CHECK(utofu_put(h, peers[size_t(right)].vcq, ss, peers[size_t(right)].stadd + recv.size() - 4, 8, 0, kFlags,
                  nullptr) == UTOFU_ERR_INVALID_STADD);
  CHECK(utofu_put(h, peers[size_t(right)].vcq, ss, (uint64_t(200) << 40), 8, 0, kFlags, nullptr) ==
        UTOFU_ERR_INVALID_STADD);
  CHECK(utofu_put(h, peers[size_t(right)].vcq, ss, ros[size_t(right)], 8, 0, kFlags, nullptr) ==
        UTOFU_ERR_INVALID_STADD);  // read-only region
  CHECK(utofu_put(h, utofu_vcq_id_t(p) << 16, ss, dst0, 8, 0, kFlags, nullptr) == UTOFU_ERR_INVALID_VCQ_ID);

  // BUSY: a TOQ of depth D holds D puts whose TCQ notice is unread.
  if (toq_depth > 0) {
    int ok = 0, rc = UTOFU_SUCCESS;
    std::vector<unsigned char> tiny(8);
    utofu_stadd_t ts;
    CHECK(utofu_reg_mem(h, tiny.data(), tiny.size(), 0, &ts) == UTOFU_SUCCESS);
    utofu_vcq_id_t self = me;
    while ((rc = utofu_put(h, self, ss, ts, 8, 0, UTOFU_ONESIDED_FLAG_TCQ_NOTICE,
                           reinterpret_cast<void*>(uintptr_t(ok + 1)))) == UTOFU_SUCCESS && ok <= toq_depth)
      ++ok;
    CHECK(rc == UTOFU_ERR_BUSY && ok == toq_depth);
    for (int i = 0; i < ok; ++i) {  // completions in posting order, with their cbdata
      void* cb = nullptr;
      while ((rc = utofu_poll_tcq(h, 0, &cb)) == UTOFU_ERR_NOT_FOUND) {
      }
      CHECK(rc == UTOFU_SUCCESS && cb == reinterpret_cast<void*>(uintptr_t(i + 1)));
    }
    void* cb = nullptr;
    CHECK(utofu_poll_tcq(h, 0, &cb) == UTOFU_ERR_NOT_FOUND);
    CHECK(utofu_dereg_mem(h, ts, 0) == UTOFU_SUCCESS);
    CHECK(utofu_dereg_mem(h, ts, 0) == UTOFU_ERR_INVALID_STADD);
  }

  // All-to-all puts, each to the sender's slot at the receiver, edata = source rank.
  MPI_Barrier(MPI_COMM_WORLD);
  int posted = 0;
  for (int k = 1; k <= p; ++k) {
    const int d = (g_rank + k) % p;
    const utofu_stadd_t at = peers[size_t(d)].stadd + size_t(g_rank) * kSlot;
    if (len(g_rank) <= 32) {
      int rc;
      while ((rc = utofu_put_piggyback(h, peers[size_t(d)].vcq, &send[size_t(d) * kSlot], at, len(g_rank),
                                       uint64_t(g_rank), kFlags, nullptr)) == UTOFU_ERR_BUSY) {
        void* cb;
        if (utofu_poll_tcq(h, 0, &cb) == UTOFU_SUCCESS) ++g_tcq_read;
      }
      CHECK(rc == UTOFU_SUCCESS);
    } else {
      put_retry(h, peers[size_t(d)].vcq, ss + size_t(d) * kSlot, at, len(g_rank), uint64_t(g_rank), kFlags, nullptr);
    }
    ++posted;
  }
  std::set<int> seen;
  for (int k = 0; k < p; ++k) {
    const utofu_mrq_notice n = next_notice(h);
    const int src = int(n.edata);
    CHECK(n.notice_type == UTOFU_MRQ_TYPE_RMT_PUT && src >= 0 && src < p && !seen.count(src));
    CHECK(n.vcq_id == peers[size_t(src)].vcq && n.rmt_stadd == rs + size_t(src) * kSlot);
    seen.insert(src);
    size_t bad = 0;
    for (size_t i = 0; i < len(src); ++i) bad += recv[size_t(src) * kSlot + i] != pattern(src, g_rank, i);
    CHECK(bad == 0);  // the whole put has landed when its notice is read
  }
  drain_tcq(h, posted);
  MPI_Barrier(MPI_COMM_WORLD);
  {
    utofu_mrq_notice extra;
    CHECK(utofu_poll_mrq(h, 0, &extra) == UTOFU_ERR_NOT_FOUND);  // the rejected puts sent nothing
  }
  size_t untouched = 0;
  for (int src = 0; src < p; ++src)
    for (size_t i = len(src); i < kSlot; ++i) untouched += recv[size_t(src) * kSlot + i] == 0xEE;
  size_t expect_untouched = 0;
  for (int src = 0; src < p; ++src) expect_untouched += kSlot - len(src);
  CHECK(untouched == expect_untouched);
  MPI_Barrier(MPI_COMM_WORLD);  // no rank puts again before every rank has looked

  // Order: 64 puts from each rank to rank 0 arrive, per source, in posting order (edata = i).
  // Across sources the order is free; the stress mode must show it.
  const int kSeq = 64;
  int unsorted_trials = 0;
  for (int trial = 0; trial < 8; ++trial) {
    if (g_rank != 0)
      for (int i = 0; i < kSeq; ++i)
        put_retry(h, peers[0].vcq, ss + size_t(i), peers[0].stadd + size_t(g_rank) * kSlot + size_t(i), 1,
                  uint64_t(i), kFlags, nullptr);
    MPI_Barrier(MPI_COMM_WORLD);  // every put posted (and, short of stress, on the wire)
    if (g_rank == 0) {
      std::vector<int> next(size_t(p), 0), arrival;
      for (int k = 0; k < (p - 1) * kSeq; ++k) {
        const utofu_mrq_notice n = next_notice(h);
        int src = -1;
        for (int r = 1; r < p; ++r)
          if (peers[size_t(r)].vcq == n.vcq_id) src = r;
        CHECK(src > 0 && int(n.edata) == next[size_t(src)]);
        if (src > 0) ++next[size_t(src)];
        arrival.push_back(src);
      }
      for (size_t i = 1; i < arrival.size(); ++i)
        if (arrival[i] < arrival[i - 1]) {
          ++unsorted_trials;
          break;
        }
    } else {
      drain_tcq(h, kSeq);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (g_rank == 0 && p > 2) {
    if (stress) CHECK(unsorted_trials > 0);
    else if (!small_ring) CHECK(unsorted_trials == 0);  // no stress: the wire is drained source by source
  }

  CHECK(utofu_dereg_mem(h, rs, 0) == UTOFU_SUCCESS);
  CHECK(utofu_dereg_mem(h, ss, 0) == UTOFU_SUCCESS);
  CHECK(utofu_dereg_mem(h, ro, 0) == UTOFU_SUCCESS);
  CHECK(utofu_free_vcq(h) == UTOFU_SUCCESS);
  CHECK(utofu_free_vcq(h) == UTOFU_ERR_INVALID_VCQ_HDL);

  int total = 0;
  MPI_Allreduce(&g_fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("utofu_emu p=%d toq_depth=%ld stress=%d: %s (%d failed checks)\n", p, toq_depth,
                               stress ? 1 : 0, total ? "FAIL" : "ok", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
