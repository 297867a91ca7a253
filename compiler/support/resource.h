// Memory accounting of one instance and the resource-limit error (docs/verifier.md,
// "Memory"). Instantiation and the verifier account for their large structures (the round
// store, the per-rank state, the terms, ...) against the memory budget of the process
// before or while they allocate them; an instance that would exceed it stops with a
// ResourceLimit, which bine-cc's dispatch turns into `error: resource limit: ...` and
// exit 2, as it does with std::bad_alloc for what is not accounted.
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

namespace bine {

/// An instance (or a request) that does not fit in the memory this process may use. `what`
/// says what would not fit and how much it needs; `lever` what makes it smaller.
class ResourceLimit : public std::runtime_error {
 public:
  enum class Lever {
    p,       ///< a smaller process count (-p, --ranks, --verify-ranks: the driver names it)
    blocks,  ///< fewer blocks (the schedule's `blocks` clause)
    ops,     ///< fewer operations in one round or rank (a loop bound of the schedule)
  };
  ResourceLimit(const std::string& what, Lever lever) : std::runtime_error(what), lever_(lever) {}
  Lever lever() const { return lever_; }

 private:
  Lever lever_;
};

/// "1.5 GiB", "12.0 MiB", "640 bytes": binary units, one decimal.
inline std::string format_bytes(uint64_t n) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return std::to_string(n) + " bytes";
  double v = double(n) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace resource_detail {
inline std::atomic<uint64_t>& budget_override() {
  static std::atomic<uint64_t> v{0};
  return v;
}
}  // namespace resource_detail

/// The memory the process may use: the smallest of the address-space and data-segment
/// limits (`ulimit -v`, `ulimit -d`) and the machine's physical memory, with where it comes
/// from ("the 1.9 GiB address-space limit (ulimit -v)").
inline uint64_t memory_available(std::string* source = nullptr) {
  uint64_t best = UINT64_MAX;
  std::string why = "no limit known";
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    best = uint64_t(pages) * uint64_t(page);
    why = "physical memory";
  }
  for (auto [res, name] : {std::pair{RLIMIT_AS, "address-space limit (ulimit -v)"}, std::pair{RLIMIT_DATA, "data-segment limit (ulimit -d)"}}) {
    struct rlimit rl;
    if (getrlimit(res, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && uint64_t(rl.rlim_cur) < best) {
      best = uint64_t(rl.rlim_cur);
      why = name;
    }
  }
  if (source) *source = why == "no limit known" ? why : "the " + format_bytes(best) + " " + why;
  return best;
}

/// The bytes one instance may account for: memory_available() less 1/8 of it, at least
/// 256 MiB (what is not accounted: code, thread stacks and malloc arenas, the pipeline's
/// rounds in flight, the diagnostics), or what set_memory_budget() set. What is accounted is what is reserved (capacities), so near
/// the budget an allocation would fail anyway: the account says so first, with what and
/// how much, and without waiting for the kernel's out-of-memory killer where only the
/// physical memory bounds the process.
inline uint64_t memory_budget() {
  if (const uint64_t v = resource_detail::budget_override().load(std::memory_order_relaxed)) return v;
  static const uint64_t b = [] {
    const uint64_t m = memory_available();
    const uint64_t keep = std::max<uint64_t>(m / 8, uint64_t(256) << 20);
    return m == UINT64_MAX ? m : m > 2 * keep ? m - keep : m / 2;
  }();
  return b;
}
/// Tests: this budget instead (0: back to 7/8 of memory_available()).
inline void set_memory_budget(uint64_t bytes) { resource_detail::budget_override().store(bytes); }

/// "1.9 GiB address-space limit (ulimit -v), less 256.0 MiB": where memory_budget() comes from.
inline std::string memory_budget_source() {
  if (resource_detail::budget_override().load()) return "set by the caller";
  std::string s;
  const uint64_t m = memory_available(&s);
  return m == UINT64_MAX ? s : s + ", less " + format_bytes(m - memory_budget());
}

/// What the process is doing ("verifying ring_allreduce at p=8192"), for the message of an
/// allocation failure that no account caught (bine-cc's dispatch reads it).
inline std::string& activity_slot(std::mutex** mu) {
  static std::mutex m;
  static std::string s;
  *mu = &m;
  return s;
}
inline void set_activity(std::string what) {
  std::mutex* mu;
  std::string& s = activity_slot(&mu);
  std::lock_guard<std::mutex> lock(*mu);
  s = std::move(what);
}
inline std::string activity() {
  std::mutex* mu;
  const std::string& s = activity_slot(&mu);
  std::lock_guard<std::mutex> lock(*mu);
  return s;
}

/// Sets the activity for a scope and restores the previous one when the scope ends
/// normally (not when an exception leaves it: the dispatch that catches it reads what was
/// being done).
class ActivityScope {
 public:
  explicit ActivityScope(std::string what) : prev_(activity()), exceptions_(std::uncaught_exceptions()) {
    set_activity(std::move(what));
  }
  ~ActivityScope() {
    if (std::uncaught_exceptions() == exceptions_) set_activity(std::move(prev_));
  }
  ActivityScope(const ActivityScope&) = delete;
  ActivityScope& operator=(const ActivityScope&) = delete;

 private:
  std::string prev_;
  int exceptions_;
};

/// The accounted memory of one instance: the large structures of its round store and of
/// the verifier, each added once at its largest size (so the sum is deterministic and at
/// least what those structures hold at any moment). add() refuses, before the caller
/// allocates, a total above memory_budget(). Thread-safe.
class MemoryAccount {
 public:
  /// `instance`: "ring_allreduce at p=8192", for the messages.
  explicit MemoryAccount(std::string instance = "") : instance_(std::move(instance)) {}
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;
  void set_instance(std::string s) { instance_ = std::move(s); }
  const std::string& instance() const { return instance_; }
  /// Adds `bytes` for `what` ("the round store (T rounds x p ranks)"); throws ResourceLimit
  /// when the total would exceed the budget.
  void add(uint64_t bytes, const std::string& what, ResourceLimit::Lever lever = ResourceLimit::Lever::p) {
    const uint64_t before = total_.fetch_add(bytes, std::memory_order_relaxed);
    if (before + bytes > memory_budget() || before + bytes < before) refuse(before + bytes, bytes, what, lever);
  }
  /// Checks that `bytes` more (transient, not added) would fit; `what()` (the text of the
  /// refusal) is made only when they do not.
  template <class What>
  void check(uint64_t bytes, What&& what, ResourceLimit::Lever lever = ResourceLimit::Lever::p) const {
    const uint64_t t = total_.load(std::memory_order_relaxed);
    if (t + bytes > memory_budget() || t + bytes < t) refuse(t + bytes, bytes, what(), lever);
  }
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }

 private:
  [[noreturn]] void refuse(uint64_t total, uint64_t bytes, const std::string& what, ResourceLimit::Lever lever) const {
    throw ResourceLimit((instance_.empty() ? std::string() : instance_ + ": ") + what + " would take " + format_bytes(bytes) +
                            (total > bytes ? " (" + format_bytes(total) + " with the rest of the instance)" : std::string()) +
                            ", above the " + format_bytes(memory_budget()) + " an instance may use here (" +
                            memory_budget_source() + ")",
                        lever);
  }
  std::string instance_;
  std::atomic<uint64_t> total_{0};
};

}  // namespace bine
