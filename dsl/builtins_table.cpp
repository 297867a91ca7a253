#include "builtins_table.h"

#include <cstring>

namespace bine {

const std::vector<BuiltinFn>& builtin_fns() {
  using T = Type;
  static const std::vector<BuiltinFn> t = {
      {"log2", {T::integer}, T::integer, "bine::log2", "floor(log2 x), x >= 1"},
      {"ceil_log2", {T::integer}, T::integer, "bine::ceil_log2", "ceil(log2 x), x >= 1"},
      {"is_pow2", {T::integer}, T::boolean, "bine::is_pow2", "x is a power of two (x >= 1)"},
      {"pow2", {T::integer}, T::integer, "bine::pow2", "2^k, 0 <= k <= 62"},
      {"lowmask", {T::integer}, T::integer, "bine::lowmask", "the low k bits set"},
      {"popcount", {T::integer}, T::integer, "bine::popcount", "number of set bits"},
      {"ctz", {T::integer}, T::integer, "bine::ctz", "trailing zero bits (64 for 0)"},
      {"clz", {T::integer}, T::integer, "bine::clz", "leading zero bits of the 64-bit value"},
      {"bitrev", {T::integer, T::integer}, T::integer, "bine::bitrev", "the low `bits` bits of x reversed"},
      {"even", {T::integer}, T::boolean, "bine::even", "x is even"},
      {"odd", {T::integer}, T::boolean, "bine::odd", "x is odd"},
      {"min", {T::integer, T::integer}, T::integer, "bine::min", "minimum"},
      {"max", {T::integer, T::integer}, T::integer, "bine::max", "maximum"},
      {"mod", {T::integer, T::integer}, T::integer, "bine::mod", "mathematical modulo, result in [0, |b|)"},
      {"nb", {T::integer}, T::integer, "bine::nb", "negabinary digits of x (32-bit, Bine paper Sec. 3.1)"},
      {"from_nb", {T::integer}, T::integer, "bine::from_nb", "the integer with negabinary digits b"},
      {"rho", {T::integer}, T::integer, "bine::rho", "rho(s) = sum_{i<=s} (-2)^i (Bine paper Eq. 1)"},
      {"nu", {T::integer, T::integer}, T::integer, "bine::nu", "Bine remap of rank r for p = 2^k (Bine paper Sec. 3.2)"},
      {"nu_inv", {T::integer, T::integer}, T::integer, "bine::nu_inv", "the rank r with nu(r, p) = v (inverse of nu, p = 2^k)"},
      {"size", {T::set}, T::integer, "bine::set_size", "number of blocks in a set"},
      {"contains", {T::set, T::integer}, T::boolean, "bine::set_contains", "block i is in the set"},
      {"buf", {T::integer, T::set}, T::set, "cx.buf", "blocks S of buffer j (0: the vector, 1..K: `scratch K` buffers)"},
      {"bufs", {T::integer, T::integer, T::set}, T::set, "cx.bufs", "blocks S of buffers a .. b-1 (0 <= a <= b <= K + 1)"},
      {"regions", {}, T::integer, "bine::regions", "number of regions of locality (docs/topology.md)"},
      {"region", {T::integer}, T::integer, "bine::region", "region of rank q (regions numbered by their lowest rank)"},
      {"local_rank", {T::integer}, T::integer, "bine::local_rank", "index of rank q within its region, in rank order"},
      {"region_size", {T::integer}, T::integer, "bine::region_size", "number of ranks of region g (g modulo regions())"},
      {"region_rank", {T::integer, T::integer}, T::integer, "bine::region_rank", "the rank with local index i in region g"},
      {"equal_regions", {}, T::boolean, "bine::equal_regions", "every region has as many ranks as region 0"},
  };
  return t;
}

int find_builtin(const std::string& name) {
  const auto& t = builtin_fns();
  for (size_t i = 0; i < t.size(); ++i)
    if (name == t[i].name) return int(i);
  return -1;
}

}  // namespace bine
