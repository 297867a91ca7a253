// bine/device_kernels.hpp: the element arithmetic of the CUDA target's kernels
// (docs/cuda.md). Every function here is BINE_HD: `__host__ __device__` under nvcc, plain
// C++ elsewhere, so the CPU unit tests (tests/unit/test_device.cpp) run the very bodies the
// GPU kernels run: the datatypes (int32, int64, uint8, float, double, half, bfloat16),
// the operators (sum, prod, min, max), half/bfloat16 rounding, and the loop over one tile of
// a batched copy or reduction.
//
// half and bfloat16 are stored as their 16-bit patterns (IEEE 754 binary16; bfloat16 = the
// upper half of a binary32) and computed in float: a op b is rounded once, to nearest even,
// from the float result (what __hadd / __hmul do for two operands). No CUDA header needed.
#pragma once
#include <cstdint>
#include <cstring>

#include "bine/cuda_api.h"

#if defined(__CUDACC__)
#define BINE_HD __host__ __device__ __forceinline__
#else
#define BINE_HD inline
#endif

namespace bine::dev {

/// Bytes of one element of `t`; 0 for a value outside the enum.
BINE_HD uint32_t dtype_bytes(int t) {
  switch (t) {
    case BINE_CUDA_INT32: case BINE_CUDA_FLOAT32: return 4;
    case BINE_CUDA_INT64: case BINE_CUDA_FLOAT64: return 8;
    case BINE_CUDA_UINT8: return 1;
    case BINE_CUDA_FLOAT16: case BINE_CUDA_BFLOAT16: return 2;
    default: return 0;
  }
}
/// True for the floating-point types (their sums depend on bracketing: docs/cuda.md).
BINE_HD bool dtype_is_float(int t) {
  return t == BINE_CUDA_FLOAT32 || t == BINE_CUDA_FLOAT64 || t == BINE_CUDA_FLOAT16 || t == BINE_CUDA_BFLOAT16;
}

BINE_HD float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
BINE_HD uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/// binary16 -> float (exact; subnormals, infinities and NaN kept).
BINE_HD float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return bits_to_float(sign);
    // subnormal: normalize
    int e = -1;
    do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
    man &= 0x3ffu;
    return bits_to_float(sign | (uint32_t(127 - 15 - e) << 23) | (man << 13));
  }
  if (exp == 31) return bits_to_float(sign | 0x7f800000u | (man << 13));
  return bits_to_float(sign | ((exp + 127 - 15) << 23) | (man << 13));
}
/// float -> binary16, rounded to nearest even; overflow to infinity, NaN stays NaN.
BINE_HD uint16_t float_to_half(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t exp = (u >> 23) & 0xffu;
  uint32_t man = u & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (man ? 0x200u : 0u));
  const int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return sign;
    man |= 0x800000u;
    const uint32_t shift = uint32_t(14 - e);
    uint32_t h = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return uint16_t(sign | h);
}
BINE_HD float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }
/// float -> bfloat16, rounded to nearest even; NaN stays NaN.
BINE_HD uint16_t float_to_bf16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return uint16_t((u >> 16) | 0x40u);
  const uint32_t r = u + 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(r >> 16);
}

/// The operator on two values of a computation type C.
template <int Op, class C>
BINE_HD C combine(C a, C b) {
  if (Op == BINE_CUDA_SUM) return C(a + b);
  if (Op == BINE_CUDA_PROD) return C(a * b);
  if (Op == BINE_CUDA_MIN) return b < a ? b : a;
  return a < b ? b : a;  // BINE_CUDA_MAX
}

/// One element: *dst = a op b, `a` the left operand (the lower rank's contribution: the
/// round model's operand order, bine::received_is_left_operand).
template <int T, int Op>
struct Elem;
#define BINE_ELEM_PLAIN(T, Ctype)                                                         \
  template <int Op>                                                                       \
  struct Elem<T, Op> {                                                                    \
    using Store = Ctype;                                                                  \
    static BINE_HD Store apply(Store a, Store b) { return combine<Op, Ctype>(a, b); }   \
  };
BINE_ELEM_PLAIN(BINE_CUDA_INT32, int32_t)
BINE_ELEM_PLAIN(BINE_CUDA_INT64, int64_t)
BINE_ELEM_PLAIN(BINE_CUDA_UINT8, uint8_t)
BINE_ELEM_PLAIN(BINE_CUDA_FLOAT32, float)
BINE_ELEM_PLAIN(BINE_CUDA_FLOAT64, double)
#undef BINE_ELEM_PLAIN
template <int Op>
struct Elem<BINE_CUDA_FLOAT16, Op> {
  using Store = uint16_t;
  static BINE_HD Store apply(Store a, Store b) {
    return float_to_half(combine<Op, float>(half_to_float(a), half_to_float(b)));
  }
};
template <int Op>
struct Elem<BINE_CUDA_BFLOAT16, Op> {
  using Store = uint16_t;
  static BINE_HD Store apply(Store a, Store b) {
    return float_to_bf16(combine<Op, float>(bf16_to_float(a), bf16_to_float(b)));
  }
};

/// One device operation of a plan (bine/device_plan.hpp): `copy` dst <- a, or `reduce`
/// dst <- a op b, element-wise over n elements. Each operand is (buffer id, element offset);
/// the buffer ids index the call's base pointers (Bases).
struct DevOp {
  uint32_t reduce;  ///< 0: copy, 1: reduce
  uint32_t dst_buf, a_buf, b_buf;
  uint64_t dst, a, b, n;  ///< element offsets and count
};
/// A tile: elements [begin, begin + n) of op `op`; a batch is a list of tiles that one
/// kernel launch runs in parallel (its ops touch disjoint memory or only read shared memory).
struct Tile {
  uint32_t op;
  uint32_t n;
  uint64_t begin;
};
/// Elements per tile (a tile's offset within its op is a multiple of it, so a 16-byte
/// aligned op stays aligned tile by tile).
inline constexpr uint64_t kTileElems = 8192;

/// The tile loop, as a thread of a block runs it: thread `t` of `nt` handles elements
/// t, t + nt, ...; with `vec` the elements go in 16-byte groups (all three operands must be
/// 16-byte aligned: the caller checks). Host code calls it with t = 0, nt = 1.
template <int T, int Op>
BINE_HD void run_tile_reduce(char* dst, const char* a, const char* b, uint64_t n, uint32_t t, uint32_t nt, bool vec) {
  using S = typename Elem<T, Op>::Store;
  constexpr uint32_t kPer = 16 / sizeof(S);
  S* d = reinterpret_cast<S*>(dst);
  const S* x = reinterpret_cast<const S*>(a);
  const S* y = reinterpret_cast<const S*>(b);
  uint64_t done = 0;
  if (vec) {
    const uint64_t groups = n / kPer;
    for (uint64_t g = t; g < groups; g += nt) {
      S xa[kPer], yb[kPer], out[kPer];
      memcpy(xa, x + g * kPer, 16);
      memcpy(yb, y + g * kPer, 16);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (uint32_t k = 0; k < kPer; ++k) out[k] = Elem<T, Op>::apply(xa[k], yb[k]);
      memcpy(d + g * kPer, out, 16);
    }
    done = groups * kPer;
  }
  for (uint64_t i = done + t; i < n; i += nt) d[i] = Elem<T, Op>::apply(x[i], y[i]);
}
/// Copy of `bytes` bytes, as run_tile_reduce (16-byte groups with `vec`). Source and
/// destination of one op never overlap (plans copy through staging).
BINE_HD void run_tile_copy(char* dst, const char* src, uint64_t bytes, uint32_t t, uint32_t nt, bool vec) {
  uint64_t done = 0;
  if (vec) {
    const uint64_t groups = bytes / 16;
    for (uint64_t g = t; g < groups; g += nt) {
      uint64_t v[2];
      memcpy(v, src + g * 16, 16);
      memcpy(dst + g * 16, v, 16);
    }
    done = groups * 16;
  }
  for (uint64_t i = done + t; i < bytes; i += nt) dst[i] = src[i];
}

/// Runs tile `tl` of `ops` with base pointers `base` (thread t of nt): the kernels' and the
/// host executor's common body.
template <int T, int Op>
BINE_HD void run_tile(const DevOp* ops, const Tile& tl, char* const* base, uint32_t esize, uint32_t t, uint32_t nt) {
  const DevOp& o = ops[tl.op];
  char* d = base[o.dst_buf] + (o.dst + tl.begin) * esize;
  const char* a = base[o.a_buf] + (o.a + tl.begin) * esize;
  if (!o.reduce) {
    const bool vec = ((uintptr_t(d) | uintptr_t(a)) & 15u) == 0;
    run_tile_copy(d, a, uint64_t(tl.n) * esize, t, nt, vec);
    return;
  }
  const char* b = base[o.b_buf] + (o.b + tl.begin) * esize;
  const bool vec = ((uintptr_t(d) | uintptr_t(a) | uintptr_t(b)) & 15u) == 0;
  run_tile_reduce<T, Op>(d, a, b, tl.n, t, nt, vec);
}

/// Calls f.template operator()<T, Op>() for the runtime pair (dtype, op); false when either
/// is outside the enums.
template <class F>
bool dispatch(int dtype, int op, F&& f) {
#define BINE_DISPATCH_OP(T)                                          \
  switch (op) {                                                      \
    case BINE_CUDA_SUM: f.template operator()<T, BINE_CUDA_SUM>(); return true;   \
    case BINE_CUDA_PROD: f.template operator()<T, BINE_CUDA_PROD>(); return true; \
    case BINE_CUDA_MIN: f.template operator()<T, BINE_CUDA_MIN>(); return true;   \
    case BINE_CUDA_MAX: f.template operator()<T, BINE_CUDA_MAX>(); return true;   \
    default: return false;                                           \
  }
  switch (dtype) {
    case BINE_CUDA_INT32: BINE_DISPATCH_OP(BINE_CUDA_INT32)
    case BINE_CUDA_INT64: BINE_DISPATCH_OP(BINE_CUDA_INT64)
    case BINE_CUDA_UINT8: BINE_DISPATCH_OP(BINE_CUDA_UINT8)
    case BINE_CUDA_FLOAT32: BINE_DISPATCH_OP(BINE_CUDA_FLOAT32)
    case BINE_CUDA_FLOAT64: BINE_DISPATCH_OP(BINE_CUDA_FLOAT64)
    case BINE_CUDA_FLOAT16: BINE_DISPATCH_OP(BINE_CUDA_FLOAT16)
    case BINE_CUDA_BFLOAT16: BINE_DISPATCH_OP(BINE_CUDA_BFLOAT16)
    default: return false;
  }
#undef BINE_DISPATCH_OP
}

}  // namespace bine::dev
