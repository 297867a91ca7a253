// PMPI shim for translation validation: records the point-to-point calls and local
// reductions the generated code makes, as MPI sees them (peer, element offset in the
// user's buffer or -1 for scratch memory, element count), grouped into rounds at each
// MPI_Waitall or at the first MPI_Waitsome of a round (segmented rounds reduce pieces
// between MPI_Waitsome calls; those reductions belong to that round). Only active between trace_begin() and trace_end().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trace {

struct Call {
  std::string kind;  ///< "send", "recv", "reduce"
  int64_t peer;      ///< -1 for reduce
  int64_t offset;    ///< elements from the buffer start, -1 outside the buffer
  int64_t count;     ///< elements
};
using Round = std::vector<Call>;

void begin(const void* buffer, int64_t elem_bytes, int64_t elems);
/// Re-targets offsets to another buffer (the runtime's working buffer) while tracing.
void rebase(const void* buffer, int64_t elem_bytes, int64_t elems);
/// The user's input, whose element e stands for element e of the current buffer (a replay
/// with the copy-in deferred sends from it: bine::mpi::input_buffer_hook()).
void input_buffer(const void* buffer, int64_t elems);
/// Elements of the current buffer.
int64_t elems();
/// Bytes per element of the current buffer.
int64_t elem_bytes();
std::vector<Round> end();

}  // namespace trace
