// bine/builtins.hpp: integer built-ins of the schedule language.
//
// Shared by the compiler's interpreter (instantiation, verification) and by the code
// the MPI emitter generates, so a schedule means the same thing in both places.
// Every function is total: arguments outside the documented domain return 0 and
// raise the thread-local domain-error flag (see domain_error()), never undefined
// behaviour. Sources: negabinary, rho and nu from the Bine trees paper, Sec. 3
// (shared/docs/formulas.md in the design notes).
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace bine {

/// Thread-local flag set by a built-in called outside its domain; read and cleared
/// by take_domain_error(). The text names the built-in.
inline const char*& domain_error_slot() {
  thread_local const char* slot = nullptr;
  return slot;
}
inline int64_t domain_error(const char* what) {
  if (!domain_error_slot()) domain_error_slot() = what;
  return 0;
}
/// Returns the first domain error since the last call (nullptr if none) and clears it.
inline const char* take_domain_error() {
  const char* e = domain_error_slot();
  domain_error_slot() = nullptr;
  return e;
}

// ---- checked arithmetic (wrapping 64-bit two's complement, no UB) ----
inline int64_t add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
inline int64_t sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
inline int64_t mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
inline int64_t neg(int64_t a) { return int64_t(0 - uint64_t(a)); }
/// C-style truncating division; b == 0 is a domain error.
inline int64_t div(int64_t a, int64_t b) {
  if (b == 0) return domain_error("division by zero");
  if (b == -1) return neg(a);
  return a / b;
}
/// C-style remainder (sign of a); b == 0 is a domain error.
inline int64_t rem(int64_t a, int64_t b) {
  if (b == 0) return domain_error("remainder by zero");
  if (b == -1) return 0;
  return a % b;
}
/// Mathematical modulo: result in [0, |b|). b == 0 is a domain error.
inline int64_t mod(int64_t a, int64_t b) {
  int64_t m = rem(a, b);
  if (m < 0) m = add(m, b < 0 ? neg(b) : b);
  return m;
}
/// a << b for 0 <= b <= 63; other shifts are domain errors.
inline int64_t shl(int64_t a, int64_t b) {
  if (b < 0 || b > 63) return domain_error("shift amount outside 0..63");
  return int64_t(uint64_t(a) << b);
}
/// Arithmetic a >> b for 0 <= b <= 63.
inline int64_t shr(int64_t a, int64_t b) {
  if (b < 0 || b > 63) return domain_error("shift amount outside 0..63");
  return a >> b;
}

// ---- bit built-ins ----
inline bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
/// floor(log2 x) for x >= 1.
inline int64_t log2(int64_t x) {
  if (x < 1) return domain_error("log2 of a value below 1");
  int64_t k = 0;
  while ((int64_t(1) << (k + 1)) <= x && k < 62) ++k;
  return k;
}
/// ceil(log2 x) for x >= 1.
inline int64_t ceil_log2(int64_t x) {
  if (x < 1) return domain_error("ceil_log2 of a value below 1");
  int64_t k = 0;
  while ((int64_t(1) << k) < x && k < 62) ++k;
  return k;
}
/// 2^k for 0 <= k <= 62.
inline int64_t pow2(int64_t k) {
  if (k < 0 || k > 62) return domain_error("pow2 exponent outside 0..62");
  return int64_t(1) << k;
}
/// The low k bits set, 0 <= k <= 62.
inline int64_t lowmask(int64_t k) {
  if (k < 0 || k > 62) return domain_error("lowmask width outside 0..62");
  return (int64_t(1) << k) - 1;
}
inline int64_t popcount(int64_t x) { return __builtin_popcountll(uint64_t(x)); }
/// Count of trailing zero bits; ctz(0) = 64.
inline int64_t ctz(int64_t x) { return x == 0 ? 64 : __builtin_ctzll(uint64_t(x)); }
/// Count of leading zero bits of the 64-bit value; clz(0) = 64.
inline int64_t clz(int64_t x) { return x == 0 ? 64 : __builtin_clzll(uint64_t(x)); }
/// The low `bits` bits of x in reverse order (0 <= bits <= 62).
inline int64_t bitrev(int64_t x, int64_t bits) {
  if (bits < 0 || bits > 62) return domain_error("bitrev width outside 0..62");
  int64_t y = 0;
  for (int64_t i = 0; i < bits; ++i)
    if ((x >> i) & 1) y |= int64_t(1) << (bits - 1 - i);
  return y;
}
inline bool even(int64_t x) { return (x & 1) == 0; }
inline bool odd(int64_t x) { return (x & 1) != 0; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int64_t b) { return a < b ? b : a; }

// ---- negabinary (Bine trees paper, Sec. 3.1) ----
inline constexpr uint32_t kNegabinaryMask = 0xAAAAAAAAu;
/// Negabinary (base -2) digits of x as a bit pattern: nb(x) = (x + M) ^ M on 32 bits.
/// Domain: -2^31 <= x < 2^31 (only the low bits matter modulo a power of two).
inline int64_t nb(int64_t x) {
  return int64_t((uint32_t(uint64_t(x)) + kNegabinaryMask) ^ kNegabinaryMask);
}
/// Inverse of nb: the integer whose negabinary digits are the bit pattern b.
inline int64_t from_nb(int64_t b) {
  return int64_t(int32_t((uint32_t(uint64_t(b)) ^ kNegabinaryMask) - kNegabinaryMask));
}
/// rho(s) = sum_{i=0..s} (-2)^i: 1, -1, 3, -5, 11, ... (Bine paper, Eq. 1); 0 <= s <= 29.
inline int64_t rho(int64_t s) {
  if (s < 0 || s > 29) return domain_error("rho step outside 0..29");
  return from_nb((int64_t(1) << (s + 1)) - 1);
}
/// nu(r, p): the Bine remap for p = 2^k (Bine paper, Sec. 3.2). The negabinary code b of
/// r (odd r) or -r (even r), or of r - p (odd) / p - r (even) when that one fits k
/// negabinary digits (the smaller code wins when both fit); nu = bitrev_k(b ^ (b >> 1)).
/// nu(., p) is a permutation of 0..p-1. Domain: p a power of two, 0 <= r < p.
inline int64_t nu_uncached(int64_t r, int64_t p);
inline int64_t nu(int64_t r, int64_t p) {
  if (!is_pow2(p) || p > (int64_t(1) << 30)) return domain_error("nu needs a power-of-two p");
  if (r < 0 || r >= p) return domain_error("nu rank outside 0..p-1");
  // Schedules evaluate nu(i, p) for every block of a set: keep the table of the last p
  // (up to 2^16 entries, per thread).
  if (p > (int64_t(1) << 16)) return nu_uncached(r, p);
  thread_local int64_t table_p = 0;
  thread_local std::vector<int64_t> table;
  if (table_p != p) {
    table.resize(size_t(p));
    for (int64_t x = 0; x < p; ++x) table[size_t(x)] = nu_uncached(x, p);
    table_p = p;
  }
  return table[size_t(r)];
}
/// nu computed from its definition (nu() caches it).
inline int64_t nu_uncached(int64_t r, int64_t p) {
  const int64_t k = log2(p);
  const int64_t limit = int64_t(1) << k;
  const int64_t a = odd(r) ? r : -r;
  const int64_t c = odd(r) ? r - p : p - r;
  int64_t b = -1;
  for (int64_t x : {a, c}) {
    const int64_t code = nb(x);
    if (code < limit && (b < 0 || code < b)) b = code;
  }
  if (b < 0) return domain_error("nu: no k-digit negabinary code");
  return bitrev(b ^ (b >> 1), k);
}
/// nu_inv(v, p): the rank r with nu(r, p) = v, the inverse permutation of nu (the
/// permuted Bine reduce-scatter and allgather move block v back to block nu_inv(v), Bine
/// paper Sec. 4.3). O(log p): undo nu's steps, bitrev_k, the Gray code b ^ (b >> 1), and
/// take the integer x with negabinary digits b; x is r or r - p for odd r, -r or p - r for
/// even r (the parity of x is r's), so r = x mod p (odd x) or -x mod p (even x).
/// Domain: p a power of two <= 2^30, 0 <= v < p.
inline int64_t nu_inv(int64_t v, int64_t p) {
  if (!is_pow2(p) || p > (int64_t(1) << 30)) return domain_error("nu_inv needs a power-of-two p");
  if (v < 0 || v >= p) return domain_error("nu_inv value outside 0..p-1");
  int64_t g = bitrev(v, log2(p));
  int64_t b = 0;
  for (; g != 0; g >>= 1) b ^= g;  // Gray decode: b = g ^ (g >> 1) ^ (g >> 2) ^ ...
  const int64_t x = from_nb(b);
  return odd(x) ? mod(x, p) : mod(-x, p);
}

// ---- regions of locality (docs/topology.md, "Regions in schedules") ----
// A region is a group of ranks within which communication is cheap (a node, a socket:
// the locality-aware Bruck seed, locality-aware-bruck.txt, Sec. 2.1). The layout is bound
// per thread: by the compiler for each instance (bind_regions(p), from the --regions spec
// in region_spec()), by generated code from the communicator (bine/mpi_regions.hpp).
// Regions are numbered in the order of their lowest rank (region(0) = 0); the ranks of a
// region are numbered 0, 1, ... in rank order (local_rank).
struct RegionLayout {
  int64_t p = 0;                   ///< ranks covered; 0: nothing bound
  std::string spec;                ///< the spec it was built from (compiler cache key)
  std::string error;               ///< set: no layout for this p (a domain error of the built-ins)
  std::vector<int64_t> region_of;  ///< [rank] region
  std::vector<int64_t> local_of;   ///< [rank] index within its region
  std::vector<int64_t> start;      ///< members of region g: members[start[g] .. start[g + 1])
  std::vector<int64_t> members;    ///< ranks, grouped by region, in rank order
};
inline RegionLayout& region_layout() {
  thread_local RegionLayout l;
  return l;
}
/// Binds the layout of the ranks 0..labels.size()-1: equal labels, one region.
inline void set_region_labels(const std::vector<int64_t>& labels) {
  RegionLayout& l = region_layout();
  const size_t p = labels.size();
  l.p = int64_t(p);
  l.spec = "(labels)";  // not a spec: bind_regions() rebuilds from region_spec()
  l.error.clear();
  l.region_of.assign(p, -1);
  l.local_of.assign(p, 0);
  std::vector<int64_t> first;  // first rank of each region, in region order
  for (size_t x = 0; x < p; ++x) {
    if (l.region_of[x] >= 0) continue;
    const int64_t g = int64_t(first.size());
    first.push_back(int64_t(x));
    for (size_t y = x; y < p; ++y)
      if (labels[y] == labels[x]) l.region_of[y] = g;
  }
  l.start.assign(first.size() + 1, 0);
  for (size_t x = 0; x < p; ++x) ++l.start[size_t(l.region_of[x]) + 1];
  for (size_t g = 0; g < first.size(); ++g) l.start[g + 1] += l.start[g];
  l.members.assign(p, 0);
  std::vector<int64_t> fill(l.start.begin(), l.start.end() - 1);
  for (size_t x = 0; x < p; ++x) {
    const size_t g = size_t(l.region_of[x]);
    l.local_of[x] = fill[g] - l.start[g];
    l.members[size_t(fill[g]++)] = int64_t(x);
  }
}
/// The region label of every rank of p from a spec (docs/topology.md): "" or "one" (one
/// region), "K" (K consecutive ranks per region, the last one smaller when K does not
/// divide p), "rr:N" (N regions, rank r in region r mod N), "map:L0,L1,..." (the label of
/// every rank, p non-negative integers). False with `err` on a bad spec.
inline bool region_labels(const std::string& spec, int64_t p, std::vector<int64_t>& labels, std::string& err) {
  labels.assign(size_t(p < 0 ? 0 : p), 0);
  auto number = [](const std::string& s, int64_t& v) {
    if (s.empty() || s.size() > 12) return false;
    v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    return true;
  };
  const std::string what = "region spec '" + spec + "'";
  int64_t k = 0;
  if (spec.empty() || spec == "one") return true;
  if (number(spec, k)) {
    if (k < 1) return err = what + ": K ranks per region needs K >= 1", false;
    for (int64_t x = 0; x < p; ++x) labels[size_t(x)] = x / k;
    return true;
  }
  if (spec.rfind("rr:", 0) == 0) {
    if (!number(spec.substr(3), k) || k < 1) return err = what + ": expected rr:N with N >= 1 regions", false;
    for (int64_t x = 0; x < p; ++x) labels[size_t(x)] = x % k;
    return true;
  }
  if (spec.rfind("map:", 0) == 0) {
    std::vector<int64_t> out;
    const std::string list = spec.substr(4);
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = std::min(list.find(',', at), list.size());
      int64_t v = 0;
      if (!number(list.substr(at, comma - at), v))
        return err = what + ": label " + std::to_string(out.size()) + " is not a non-negative integer", false;
      out.push_back(v);
      at = comma + 1;
    }
    if (int64_t(out.size()) != p)
      return err = what + ": " + std::to_string(out.size()) + " labels for p = " + std::to_string(p) + " ranks", false;
    labels = out;
    return true;
  }
  return err = what + ": expected K (ranks per region), rr:N, map:L0,L1,... or one", false;
}
/// The compiler's layout spec (bine-cc --regions), process-wide; set before instantiating.
inline std::string& region_spec() {
  static std::string spec;
  return spec;
}
/// Binds the layout of region_spec() for p ranks on this thread (cached); a bad spec binds
/// an error that the region built-ins raise as a domain error.
inline void bind_regions(int64_t p) {
  RegionLayout& l = region_layout();
  if (l.p == p && l.spec == region_spec()) return;
  std::vector<int64_t> labels;
  std::string err;
  if (region_labels(region_spec(), p, labels, err)) {
    set_region_labels(labels);
  } else {
    l = RegionLayout{};
    l.p = p;
    l.error = err;
  }
  l.spec = region_spec();
}
/// The bound layout, or nullptr after raising a domain error.
inline const RegionLayout* bound_regions() {
  const RegionLayout& l = region_layout();
  if (!l.error.empty()) return domain_error(l.error.c_str()), nullptr;
  if (l.p < 1) return domain_error("no region layout is bound"), nullptr;
  return &l;
}
/// Whether every region has as many ranks as region 0 (the condition of a composed phase on
/// a sub-group, `phase NAME = SCHEDULE on region|across`).
inline bool equal_regions() {
  const RegionLayout* l = bound_regions();
  if (!l) return false;
  for (size_t g = 1; g + 1 < l->start.size(); ++g)
    if (l->start[g + 1] - l->start[g] != l->start[1] - l->start[0]) return false;
  return true;
}
/// Number of regions.
inline int64_t regions() {
  const RegionLayout* l = bound_regions();
  return l ? int64_t(l->start.size()) - 1 : 0;
}
/// Region of rank q (q taken modulo p, like every rank).
inline int64_t region(int64_t q) {
  const RegionLayout* l = bound_regions();
  return l ? l->region_of[size_t(mod(q, l->p))] : 0;
}
/// Index of rank q within its region (0 for its lowest rank).
inline int64_t local_rank(int64_t q) {
  const RegionLayout* l = bound_regions();
  return l ? l->local_of[size_t(mod(q, l->p))] : 0;
}
/// Number of ranks of region g (g taken modulo the number of regions).
inline int64_t region_size(int64_t g) {
  const RegionLayout* l = bound_regions();
  if (!l) return 0;
  const size_t k = size_t(mod(g, int64_t(l->start.size()) - 1));
  return l->start[k + 1] - l->start[k];
}
/// The rank with local index i in region g (g modulo the number of regions; i in
/// 0 .. region_size(g) - 1).
inline int64_t region_rank(int64_t g, int64_t i) {
  const RegionLayout* l = bound_regions();
  if (!l) return 0;
  const size_t k = size_t(mod(g, int64_t(l->start.size()) - 1));
  if (i < 0 || i >= l->start[k + 1] - l->start[k]) return domain_error("region_rank index outside the region");
  return l->members[size_t(l->start[k] + i)];
}

}  // namespace bine
