// Recursive-descent parser for the schedule language. Grammar: docs/language.md.
#pragma once
#include "ast.h"

namespace bine {

/// Parses one source file, appending its schedules and fns to `program`. Syntax errors go
/// to `diags` (all of them, with recovery at statement boundaries); never throws.
void parse_file(const SourceFile& file, Program& program, DiagnosticSink& diags);

}  // namespace bine
