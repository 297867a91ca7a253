#include "pmpi_trace.h"

#include <mpi.h>

#ifdef BINE_TRACE_UTOFU
#include <utofu.h>
// The uTofu emulation's put hook (runtime/utofu_emu/utofu_emu.cpp): the utofu target moves
// data with puts, not MPI point-to-point calls, so its trace records the data puts (those
// with a remote notice; credits have none) as ("put", destination, edata, bytes).
extern "C" void (*bine_utofu_emu_put_hook)(int dst_rank, uint64_t edata, size_t length, unsigned long flags);
#endif

namespace trace {
namespace {
bool on = false;
const char* base = nullptr;
int64_t elem = 1, nelems = 0;
std::vector<Round> rounds;
Round posting;

const char* input = nullptr;  ///< the user's input a replay with a deferred copy-in sends from
int64_t input_elems = 0;

int64_t offset_of(const void* p) {
  const char* c = static_cast<const char*>(p);
  // Element e of the input stands for element e of the working buffer (DeferredInput).
  if (input && c >= input && c < input + elem * input_elems) return (c - input) / elem;
  if (!base || c < base || c > base + elem * nelems) return -1;
  return (c - base) / elem;
}
// A message posted as one element of a datatype over several ranges (the runtime's typed
// transfers, XferPlan::typed: MPI_Type_create_hindexed of the element type) is recorded as
// one (kind, peer, offset, count) per range, in message order; anything else as one call.
void record(const char* kind, int peer, const void* buf, int count, MPI_Datatype dt) {
  int ni = 0, na = 0, nt = 0, combiner = 0;
  if (count == 1 && MPI_Type_get_envelope(dt, &ni, &na, &nt, &combiner) == MPI_SUCCESS &&
      combiner == MPI_COMBINER_HINDEXED && nt == 1) {
    std::vector<int> ints(static_cast<size_t>(ni));
    std::vector<MPI_Aint> addrs(static_cast<size_t>(na));
    MPI_Datatype old = MPI_DATATYPE_NULL;
    MPI_Type_get_contents(dt, ni, na, nt, ints.data(), addrs.data(), &old);
    for (int k = 0; k < ints[0]; ++k)
      posting.push_back({kind, peer, offset_of(static_cast<const char*>(buf) + addrs[size_t(k)]), ints[size_t(k) + 1]});
    return;
  }
  posting.push_back({kind, peer, offset_of(buf), count});
}
}  // namespace

void begin(const void* buffer, int64_t elem_bytes, int64_t elems) {
  on = true;
  base = static_cast<const char*>(buffer);
  elem = elem_bytes;
  nelems = elems;
  input = nullptr;
  input_elems = 0;
  rounds.clear();
  posting.clear();
#ifdef BINE_TRACE_UTOFU
  bine_utofu_emu_put_hook = [](int dst, uint64_t edata, size_t length, unsigned long flags) {
    if (on && (flags & UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE))
      posting.push_back({"put", dst, int64_t(edata), int64_t(length)});
  };
#endif
}

void rebase(const void* buffer, int64_t elem_bytes, int64_t elems) {
  base = static_cast<const char*>(buffer);
  elem = elem_bytes;
  nelems = elems;
}

void input_buffer(const void* buffer, int64_t elems) {
  input = static_cast<const char*>(buffer);
  input_elems = elems;
}

int64_t elems() { return nelems; }
int64_t elem_bytes() { return elem; }

std::vector<Round> end() {
  on = false;
  if (!posting.empty()) rounds.push_back(posting);
  posting.clear();
  return rounds;
}

}  // namespace trace

extern "C" {

int MPI_Isend(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  if (trace::on) trace::record("send", dest, buf, count, dt);
  return PMPI_Isend(buf, count, dt, dest, tag, comm, req);
}

int MPI_Irecv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request* req) {
  if (trace::on) trace::record("recv", source, buf, count, dt);
  return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
}

// Blocking forms: the runtime completes a round of one transfer, or of one send and one
// receive, in one call; they are that round.
int MPI_Send(const void* buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
  if (trace::on) {
    trace::posting.push_back({"send", dest, trace::offset_of(buf), count});
    trace::rounds.push_back(trace::posting);
    trace::posting.clear();
  }
  return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Recv(void* buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status* st) {
  if (trace::on) {
    trace::posting.push_back({"recv", source, trace::offset_of(buf), count});
    trace::rounds.push_back(trace::posting);
    trace::posting.clear();
  }
  return PMPI_Recv(buf, count, dt, source, tag, comm, st);
}

int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype sdt, int dest, int stag, void* rbuf, int rcount,
                 MPI_Datatype rdt, int source, int rtag, MPI_Comm comm, MPI_Status* st) {
  if (trace::on) {
    trace::posting.push_back({"send", dest, trace::offset_of(sbuf), scount});
    trace::posting.push_back({"recv", source, trace::offset_of(rbuf), rcount});
    trace::rounds.push_back(trace::posting);
    trace::posting.clear();
  }
  return PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st);
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  if (trace::on && !trace::posting.empty()) {
    trace::rounds.push_back(trace::posting);
    trace::posting.clear();
  }
  return PMPI_Waitall(count, reqs, statuses);
}

int MPI_Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (trace::on && !trace::posting.empty()) {
    trace::rounds.push_back(trace::posting);
    trace::posting.clear();
  }
  return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
}

int MPI_Reduce_local(const void* in, void* inout, int count, MPI_Datatype dt, MPI_Op op) {
  if (trace::on) {
    int64_t off = trace::offset_of(inout);
    if (off < 0) off = trace::offset_of(in);
    // Reductions run after the round's wait: they belong to the last completed round.
    if (trace::rounds.empty()) trace::rounds.emplace_back();
    trace::rounds.back().push_back({"reduce", -1, off, count});
  }
  return PMPI_Reduce_local(in, inout, count, dt, op);
}

}  // extern "C"
