// Semantic checks: name resolution, types, collective rules and the round structure.
// Turns the parsed tree into the Program IR (dsl/ast.h) in place.
#pragma once
#include "ast.h"

namespace bine {

/// Checks every fn and schedule of `program`; reports all errors to `diags`.
/// Returns true when no error was found.
bool check_program(Program& program, DiagnosticSink& diags);

/// Parses and checks a set of files; convenience for the driver and tests.
/// Files that cannot be read produce a diagnostic without location.
bool load_program(const std::vector<std::string>& paths, Program& program, DiagnosticSink& diags);
/// Same, from in-memory text (name used in diagnostics).
bool load_program_text(const std::string& name, const std::string& text, Program& program,
                       DiagnosticSink& diags);

}  // namespace bine
