// bine/mpi_transport.hpp: the MPI transport under the round pipeline of bine/mpi_runtime.hpp.
//
// A transport is what the runtime needs from a network, and nothing more (docs/targets.md,
// "Transports"). The round pipeline (bine::mpi::BasicContext<Transport>) decides which
// blocks go where in which round, packs, segments, buffers and orders reductions; the
// transport only moves and combines contiguous element ranges:
//
//   using Request = ...;                    a handle of one posted transfer
//   static Request null_request();          a completed / never-posted handle
//   void bind(MPI_Comm, MPI_Datatype, MPI_Op)   the call's communicator, element type, operator
//   int post_send(const void* data, int count, int peer, Request* r)
//   int post_recv(void* data, int count, int peer, Request* r)
//                                           count: elements of the bound type (1..kMaxChunk);
//                                           peer: a rank of the bound communicator
//   int wait_all(Request* r, int n)         every request completes
//   int test_all(Request* r, int n, int* flag)
//                                           *flag = 1 and every request retired when all have
//                                           completed, else *flag = 0 and none is retired
//   void set_tag(int tag)                   the tag of this call's messages (nonblocking calls
//                                           use one tag per call in flight, nb_tag()); a
//                                           transport without tags serializes instead
//   static constexpr bool kConcurrent       whether calls in flight at once on one
//                                           communicator are kept apart (by tag)
//   static constexpr bool kSendsAnywhere    whether a send may read memory outside the
//                                           working buffer (the user's input, whose copy-in
//                                           the runtime then defers: DeferredInput); false
//                                           where sends need registered memory (uTofu)
//   static constexpr bool kReceiverPlaces   whether the receiver alone decides where a message
//                                           lands in its memory (two-sided); false where a
//                                           sender may put into the receiver's working buffer at
//                                           the schedule's offsets (uTofu's direct landing), so
//                                           a plan must keep the schedule's block layout (no
//                                           block renaming, BasicContext::rename_blocks())
//   void begin_step(uint32_t step)          the round whose transfers are posted next: the
//                                           rank's count of rounds before it in the call
//                                           (the instance round the verifier matched them
//                                           in), UINT32_MAX for a two-one fold epilogue
//                                           (the last round); MPI ignores it, uTofu tags
//                                           puts with it (edata)
//   void working_buffer(const void* base, uint64_t bytes, std::shared_ptr<void>* keep)
//                                           the call's working buffer (bytes from base; once
//                                           the call has it, again when it changes); `keep`,
//                                           when not null, lives as long as the buffer stays
//                                           at this address (a persistent plan's user buffer):
//                                           a transport may keep state for the buffer there
//                                           (uTofu: its registrations). MPI ignores it
//   void landing(bool direct)               after bind(), outside dry runs: whether the call
//                                           may put transfers straight into the receivers'
//                                           working buffers (the schedule's static landing
//                                           layout is all direct at this p; one-sided
//                                           transports; docs/utofu.md). MPI ignores it
//   int send(const void* data, int count, int peer)
//   int recv(void* data, int count, int peer)
//   int sendrecv(const void* sdata, int scount, int speer, void* rdata, int rcount, int rpeer)
//                                           a round of one transfer, or of one send and one
//                                           receive, completed in one call (the same
//                                           transfers as posting them and waiting for both)
//   int wait_some(Request* r, int n, int* done, int* indices)
//                                           at least one completes; *done = -1 when none is
//                                           left to wait for
//   int reduce_local(const void* in, void* inout, int count)
//                                           inout = in op inout, element by element (MPI_Reduce_local)
//   void cancel(Request* r)                 abandons a posted request (error paths)
//
// Every int result is MPI_SUCCESS or an MPI error code: a transport over another API maps
// its errors to MPI error classes (the generated functions' contract). Messages of one
// (peer, round) must match in posting order (MPI's non-overtaking rule on one tag).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>

/// The MPI functions the runtime calls that a PMPI library may intercept (completion,
/// collectives) go through BINE_MPI_CALL: MPI_<f> by default. The PMPI drop-in library
/// (pmpi/) builds with BINE_MPI_CALL(f)=PMPI_##f, so that its own MPI_Wait / MPI_Test /
/// MPI_Ibcast interceptors never see the runtime's calls (they would re-enter it).
#ifndef BINE_MPI_CALL
#define BINE_MPI_CALL(f) MPI_##f
#endif

namespace bine::mpi {

/// Point-to-point tag used by generated collectives on the user's communicator.
inline constexpr int kTag = 27422;

/// Tags of the nonblocking forms: one per call in flight on a communicator, kNbTagBase +
/// (the communicator's nonblocking call count mod kNbTags) (nb_tag(), mpi_runtime.hpp).
inline constexpr int kNbTagBase = 1024, kNbTags = 16384;

/// Non-blocking MPI point-to-point on the user's communicator with tag kTag (a nonblocking
/// form's own tag, set_tag()).
class MpiTransport {
 public:
  using Request = MPI_Request;
  static constexpr bool kConcurrent = true;
  static constexpr bool kSendsAnywhere = true;  ///< MPI sends from any memory
  static constexpr bool kReceiverPlaces = true;  ///< two-sided: the receive names its buffer
  static Request null_request() { return MPI_REQUEST_NULL; }
  void set_tag(int tag) { tag_ = tag; }
  void begin_step(uint32_t) {}  ///< MPI matches by (peer, tag, posting order): no step needed
  void working_buffer(const void*, uint64_t, std::shared_ptr<void>*) {}  ///< MPI needs no registration
  void landing(bool) {}  ///< two-sided: the receiver names its buffer
  void bind(MPI_Comm comm, MPI_Datatype type, MPI_Op op) {
    comm_ = comm;
    type_ = type;
    op_ = op;
  }
  int post_send(const void* data, int count, int peer, Request* r) {
    return MPI_Isend(data, count, type_, peer, tag_, comm_, r);
  }
  int post_recv(void* data, int count, int peer, Request* r) {
    return MPI_Irecv(data, count, type_, peer, tag_, comm_, r);
  }
  /// One element of `type` (a datatype over several ranges of the bound type, built by the
  /// runtime) from or to `data`: a message of several ranges without packing. MPI only.
  int post_send_typed(const void* data, MPI_Datatype type, int peer, Request* r) {
    return MPI_Isend(data, 1, type, peer, tag_, comm_, r);
  }
  int post_recv_typed(void* data, MPI_Datatype type, int peer, Request* r) {
    return MPI_Irecv(data, 1, type, peer, tag_, comm_, r);
  }
  int wait_all(Request* r, int n) { return BINE_MPI_CALL(Waitall)(n, r, MPI_STATUSES_IGNORE); }
  int test_all(Request* r, int n, int* flag) { return BINE_MPI_CALL(Testall)(n, r, flag, MPI_STATUSES_IGNORE); }
  int send(const void* data, int count, int peer) { return MPI_Send(data, count, type_, peer, tag_, comm_); }
  int recv(void* data, int count, int peer) {
    return MPI_Recv(data, count, type_, peer, tag_, comm_, MPI_STATUS_IGNORE);
  }
  int sendrecv(const void* sdata, int scount, int speer, void* rdata, int rcount, int rpeer) {
    return MPI_Sendrecv(sdata, scount, type_, speer, tag_, rdata, rcount, type_, rpeer, tag_, comm_,
                        MPI_STATUS_IGNORE);
  }
  int wait_some(Request* r, int n, int* done, int* indices) {
    const int rc = BINE_MPI_CALL(Waitsome)(n, r, done, indices, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS && *done == MPI_UNDEFINED) *done = -1;
    return rc;
  }
  int reduce_local(const void* in, void* inout, int count) { return MPI_Reduce_local(in, inout, count, type_, op_); }
  void cancel(Request* r) {
    if (*r == MPI_REQUEST_NULL) return;
    MPI_Cancel(r);
    MPI_Request_free(r);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  int tag_ = kTag;
};

}  // namespace bine::mpi
