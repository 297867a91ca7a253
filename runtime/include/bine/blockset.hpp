// bine/blockset.hpp: sets of block indices, the unit a schedule sends and receives.
//
// A vector of n elements is split into B blocks, balanced as MPI libraries do: block i
// holds n/B elements plus one when i < n mod B (block_begin() gives the element offset).
// A BlockSet is a normalized list of disjoint, sorted, non-adjacent half-open ranges
// [lo, hi) of block indices within [0, B). Shared by the compiler and generated code.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "bine/builtins.hpp"

namespace bine {

/// Element offset of block i (0 <= i <= B) when n elements are split into B blocks.
inline uint64_t block_begin(uint64_t n, uint64_t B, uint64_t i) {
  if (B == 0) return 0;
  const uint64_t q = n / B, m = n % B;
  return i * q + (i < m ? i : m);
}

/// Element offset of block i of the buffers' joint index space (`scratch` buffers): block
/// i is block i mod B of buffer i / B, each buffer n elements long and laid out one after
/// the other; equals block_begin() for 0 <= i <= B.
inline uint64_t buffer_block_begin(uint64_t n, uint64_t B, uint64_t i) {
  if (B == 0) return 0;
  return (i / B) * n + block_begin(n, B, i % B);
}

/// The ranges of a BlockSet, in order: up to kInline of them stored in the object itself,
/// so the sets schedules name most (one range, or two for a wrapping range) cost no heap
/// allocation; longer lists live on the heap. A minimal vector: iteration, indexing,
/// front/back, push_back, equality.
class RangeList {
 public:
  using value_type = std::pair<int64_t, int64_t>;
  static constexpr size_t kInline = 2;

  RangeList() = default;
  RangeList(const RangeList&) = default;
  RangeList& operator=(const RangeList&) = default;
  /// A moved-from list is empty.
  RangeList(RangeList&& o) noexcept : heap_(std::move(o.heap_)), n_(o.n_) {
    std::copy(o.inline_, o.inline_ + kInline, inline_);
    o.heap_.clear();
    o.n_ = 0;
  }
  RangeList& operator=(RangeList&& o) noexcept {
    if (this != &o) {
      heap_ = std::move(o.heap_);
      n_ = o.n_;
      std::copy(o.inline_, o.inline_ + kInline, inline_);
      o.heap_.clear();
      o.n_ = 0;
    }
    return *this;
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const value_type* begin() const { return data(); }
  const value_type* end() const { return data() + n_; }
  value_type* begin() { return data(); }
  value_type* end() { return data() + n_; }
  const value_type& operator[](size_t i) const { return data()[i]; }
  value_type& operator[](size_t i) { return data()[i]; }
  const value_type& front() const { return data()[0]; }
  const value_type& back() const { return data()[n_ - 1]; }
  value_type& back() { return data()[n_ - 1]; }
  void push_back(const value_type& r) {
    if (heap_.empty() && n_ < kInline) {
      inline_[n_++] = r;
      return;
    }
    if (heap_.empty()) {  // spill the inline ranges
      heap_.reserve(2 * kInline);
      heap_.assign(inline_, inline_ + n_);
    }
    heap_.push_back(r);
    ++n_;
  }
  friend bool operator==(const RangeList& x, const RangeList& y) {
    return x.n_ == y.n_ && std::equal(x.begin(), x.end(), y.begin());
  }

 private:
  const value_type* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  value_type* data() { return heap_.empty() ? inline_ : heap_.data(); }
  value_type inline_[kInline];
  std::vector<value_type> heap_;  ///< all the ranges once there are more than kInline
  size_t n_ = 0;
};

class BlockSet {
 public:
  using Range = std::pair<int64_t, int64_t>;  ///< [lo, hi) of block indices

  BlockSet() = default;
  /// Every block of [0, B).
  static BlockSet all(int64_t B) { return range_unchecked(0, B); }
  /// The single block i mod B (block indices wrap like ranks do). Empty when B == 0.
  static BlockSet block(int64_t i, int64_t B) {
    if (B <= 0) return {};
    const int64_t j = mod(i, B);
    return range_unchecked(j, j + 1);
  }
  /// [a, b): requires 0 <= a <= b <= B, else a domain error and the empty set.
  static BlockSet range(int64_t a, int64_t b, int64_t B) {
    if (a < 0 || b > B || a > b) {
      domain_error("block range outside [0, B)");
      return {};
    }
    return range_unchecked(a, b);
  }
  /// wrap [a, b): blocks a, a+1, ..., b-1 taken modulo B; requires 0 <= b - a <= B.
  static BlockSet wrap(int64_t a, int64_t b, int64_t B) {
    if (b < a || b - a > B) {
      domain_error("wrapping block range longer than B or reversed");
      return {};
    }
    if (b == a || B <= 0) return {};
    const int64_t lo = mod(a, B), len = b - a;
    if (lo + len <= B) return range_unchecked(lo, lo + len);
    return range_unchecked(0, lo + len - B) | range_unchecked(lo, B);
  }
  /// stride(a, step, count): blocks a + j*step (mod B) for j in [0, count).
  static BlockSet stride(int64_t a, int64_t step, int64_t count, int64_t B) {
    if (count < 0 || count > B) {
      domain_error("stride count outside 0..B");
      return {};
    }
    std::vector<Range> rs;
    rs.reserve(size_t(count));
    for (int64_t j = 0; j < count && B > 0; ++j) {
      const int64_t i = mod(a + j * step, B);
      rs.push_back({i, i + 1});
    }
    return union_of(rs);
  }
  /// The union of ranges `rs` (each lo <= hi, in any order; `rs` is sorted in place):
  /// O(k log k) for k ranges, where folding them in with | one at a time is O(k^2).
  static BlockSet union_of(std::vector<Range>& rs) {
    std::sort(rs.begin(), rs.end());
    BlockSet s;
    for (const Range& r : rs)
      if (r.first < r.second) s.append_sorted(r);
    return s;
  }
  /// The union over the ranges [lo, hi) of `s` of wrap(f(lo), f(hi), B): a set mapped
  /// range by range (a rotation, the fold's virtual-to-real blocks), united once.
  /// `scratch` holds the ranges meanwhile (a caller's buffer: no allocation per call).
  template <class F>
  static BlockSet wrap_mapped(const BlockSet& s, F&& f, int64_t B, std::vector<Range>& scratch) {
    if (s.ranges_.size() == 1) return wrap(f(s.ranges_[0].first), f(s.ranges_[0].second), B);
    scratch.clear();
    for (const Range& r : s.ranges_) {
      const BlockSet w = wrap(f(r.first), f(r.second), B);
      scratch.insert(scratch.end(), w.ranges_.begin(), w.ranges_.end());
    }
    return union_of(scratch);
  }

  /// Union: a merge of the two sorted range lists (no temporary list).
  friend BlockSet operator|(const BlockSet& x, const BlockSet& y) {
    BlockSet s;
    size_t i = 0, j = 0;
    while (i < x.ranges_.size() || j < y.ranges_.size()) {
      const bool from_x = j == y.ranges_.size() || (i < x.ranges_.size() && x.ranges_[i] < y.ranges_[j]);
      s.append_sorted(from_x ? x.ranges_[i++] : y.ranges_[j++]);
    }
    return s;
  }
  /// Intersection.
  friend BlockSet operator&(const BlockSet& x, const BlockSet& y) {
    BlockSet s;
    size_t i = 0, j = 0;
    while (i < x.ranges_.size() && j < y.ranges_.size()) {
      const int64_t lo = std::max(x.ranges_[i].first, y.ranges_[j].first);
      const int64_t hi = std::min(x.ranges_[i].second, y.ranges_[j].second);
      if (lo < hi) s.ranges_.push_back({lo, hi});
      (x.ranges_[i].second < y.ranges_[j].second) ? ++i : ++j;
    }
    return s;
  }
  /// Difference x \ y.
  friend BlockSet operator-(const BlockSet& x, const BlockSet& y) {
    BlockSet s;
    for (Range r : x.ranges_) {
      int64_t lo = r.first;
      for (const Range& c : y.ranges_) {
        if (c.second <= lo || c.first >= r.second) continue;
        if (c.first > lo) s.ranges_.push_back({lo, c.first});
        lo = std::max(lo, c.second);
      }
      if (lo < r.second) s.ranges_.push_back({lo, r.second});
    }
    return s;
  }
  friend bool operator==(const BlockSet& x, const BlockSet& y) { return x.ranges_ == y.ranges_; }
  friend bool operator!=(const BlockSet& x, const BlockSet& y) { return !(x == y); }

  bool empty() const { return ranges_.empty(); }
  /// Number of blocks.
  int64_t size() const {
    int64_t n = 0;
    for (const Range& r : ranges_) n += r.second - r.first;
    return n;
  }
  bool contains(int64_t i) const {
    for (const Range& r : ranges_)
      if (i >= r.first && i < r.second) return true;
    return false;
  }
  /// The normalized ranges, in increasing order.
  const RangeList& ranges() const { return ranges_; }
  /// The set with every block index moved up by d (d >= 0): blocks S of buffer j are
  /// shifted(S, j * B).
  BlockSet shifted(int64_t d) const {
    BlockSet s = *this;
    for (Range& r : s.ranges_) {
      r.first += d;
      r.second += d;
    }
    return s;
  }
  /// Adds block i (used while building filtered sets in increasing order).
  void push_back_block(int64_t i) {
    if (!ranges_.empty() && ranges_.back().second == i)
      ++ranges_.back().second;
    else
      ranges_.push_back({i, i + 1});
  }

 private:
  /// Appends r, which starts at or after the last range's start, merging it into the last
  /// range when they overlap or touch.
  void append_sorted(const Range& r) {
    if (!ranges_.empty() && r.first <= ranges_.back().second)
      ranges_.back().second = std::max(ranges_.back().second, r.second);
    else
      ranges_.push_back(r);
  }
  static BlockSet range_unchecked(int64_t a, int64_t b) {
    BlockSet s;
    if (a < b) s.ranges_.push_back({a, b});
    return s;
  }
  RangeList ranges_;
};

}  // namespace bine

namespace bine {
/// Number of blocks in s (the language's size()).
inline int64_t set_size(const BlockSet& s) { return s.size(); }
/// Whether block i is in s (the language's contains()).
inline bool set_contains(const BlockSet& s, int64_t i) { return s.contains(i); }
}  // namespace bine

namespace bine {
/// buf(j, S) of a schedule body (docs/language.md, `scratch`): blocks S of working buffer j
/// (0: the vector, 1..K: the scratch buffers, each of B blocks), i.e. indices j * B + S. A
/// domain error and the empty set outside 0..K. Shared by every runtime's context.
inline BlockSet buffer_blocks(int64_t j, const BlockSet& s, int64_t K, int64_t B) {
  if (j < 0 || j > K) {
    domain_error("buf() names a buffer outside 0..K (the 'scratch' count)");
    return {};
  }
  return s.shifted(j * B);
}
/// bufs(a, b, S): blocks S of buffers a .. b-1; a domain error unless 0 <= a <= b <= K + 1.
inline BlockSet buffers_blocks(int64_t a, int64_t b, const BlockSet& s, int64_t K, int64_t B) {
  if (a < 0 || a > b || b > K + 1) {
    domain_error("bufs() names buffers outside 0..K (the 'scratch' count)");
    return {};
  }
  if (s == BlockSet::all(B)) return BlockSet::range(a * B, b * B, (K + 1) * B);
  BlockSet out;
  for (int64_t j = a; j < b; ++j) out = out | s.shifted(j * B);
  return out;
}
/// `permute`'s map f on blocks 0..B-1 as the table to[j] = f(j); false (and a domain error)
/// unless f is a bijection on [0, B).
template <class F>
bool block_permutation(F f, int64_t B, std::vector<int64_t>& to) {
  to.assign(size_t(B), 0);
  std::vector<char> hit(size_t(B), 0);
  for (int64_t j = 0; j < B; ++j) {
    const int64_t d = f(j);
    if (d < 0 || d >= B || hit[size_t(d)]) {
      domain_error("permute is not a bijection on the blocks");
      return false;
    }
    hit[size_t(d)] = 1;
    to[size_t(j)] = d;
  }
  return true;
}
}  // namespace bine
