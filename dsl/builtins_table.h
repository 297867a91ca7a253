// The built-in functions of the schedule language: name, argument types, result type.
// Their semantics live in runtime/include/bine/builtins.hpp, shared with generated code.
#pragma once
#include <vector>

#include "ast.h"

namespace bine {

struct BuiltinFn {
  const char* name;
  std::vector<Type> args;
  Type result;
  const char* cpp;  ///< C++ spelling in generated code
  const char* doc;  ///< one line for docs/language.md
};

/// Built-ins by index in builtin_fns() (the order of the table; Expr::builtin holds it).
enum class BuiltinId {
  log2, ceil_log2, is_pow2, pow2, lowmask, popcount, ctz, clz, bitrev, even, odd, min, max, mod,
  nb, from_nb, rho, nu, nu_inv, size, contains, buf, bufs,
  regions, region, local_rank, region_size, region_rank, equal_regions,
};

/// True for the built-ins that read the region layout (regions() .. equal_regions()):
/// generated code binds it from the communicator before the schedule runs.
inline bool builtin_reads_regions(int id) { return id >= int(BuiltinId::regions) && id <= int(BuiltinId::equal_regions); }

/// The table, in a fixed order (indices are stored in Expr::builtin).
const std::vector<BuiltinFn>& builtin_fns();
/// Index of a built-in by name, or -1.
int find_builtin(const std::string& name);

}  // namespace bine
