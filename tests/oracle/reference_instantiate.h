// The reference instantiation (tests/oracle/reference_instantiate.cpp): the oracle the
// round pipeline is compared with.
#pragma once
#include <string>

#include "instantiate.h"

namespace bine::reference {

/// Same contract as bine::instantiate (compiler/ir/instantiate.h).
InstStatus reference_instantiate(const Program& program, const ScheduleDecl& decl, const InstanceRequest& req,
                                 Schedule& out, DiagnosticSink& diags, std::string* unmet = nullptr);

}  // namespace bine::reference
