// The registry of targets: the one place that names every target (docs/targets.md).
#include "target.h"

#include <algorithm>

namespace bine {

const Target& mpi_target();    // emit/mpi/target.cpp
const Target& utofu_target();  // emit/utofu/target.cpp
const Target& cuda_target();   // emit/cuda/target.cpp

const std::vector<const Target*>& targets() {
  // Explicit list (static registration objects in a static library are dropped by the linker).
  static const std::vector<const Target*> all = {&mpi_target(), &utofu_target(), &cuda_target()};
  return all;
}

const Target* find_target(const std::string& name) {
  for (const Target* t : targets())
    if (name == t->name()) return t;
  return nullptr;
}

std::string target_names() {
  std::string s;
  for (const Target* t : targets()) s += (s.empty() ? "" : ", ") + std::string(t->name());
  return s;
}

}  // namespace bine
