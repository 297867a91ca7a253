// A non-commutative MPI user operator for tests: the product of 2x2 matrices of uint32_t
// (wrapping), four consecutive elements per matrix, `inout = in * inout` as MPI's operand
// order requires. Shared by tests/mpi/reduce_scatterv.cpp and tests/dispatch/dispatch_test.cpp.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <cstring>

namespace bine::test {

inline void matmul_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint32_t*>(in);
  auto* b = static_cast<uint32_t*>(inout);
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    const uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                           a[2] * b[1] + a[3] * b[3]};
    std::memcpy(b, c, sizeof c);
  }
}

}  // namespace bine::test
