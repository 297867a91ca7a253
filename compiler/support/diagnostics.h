// Diagnostics: source files, spans, and the sink every pass reports into.
// Rendering follows clang: `file:line:col: error: message`, the source line and a caret
// under the span; notes attach to the diagnostic they explain. JSON output is one
// object per diagnostic (see render_json).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bine {

/// One loaded source text. Lines are 1-based, columns 1-based in bytes.
struct SourceFile {
  std::string name;
  std::string text;
  std::vector<uint32_t> line_starts;  ///< byte offset of each line
  SourceFile(std::string name, std::string text);
  std::string line_text(uint32_t line) const;
};

/// A byte range in one source file.
struct Span {
  const SourceFile* file = nullptr;
  uint32_t begin = 0, end = 0;
  uint32_t line = 0, col = 0;  ///< of begin
  bool valid() const { return file != nullptr; }
  std::string where() const;  ///< "file:line:col" or "<unknown>"
  std::string text() const;   ///< the source text the span covers, "?" without a file
};

enum class Severity { error, warning, note };

struct Diagnostic {
  Severity severity = Severity::error;
  Span span;
  std::string message;
  std::vector<Diagnostic> notes;
};

/// Collects diagnostics; passes never throw on user errors.
class DiagnosticSink {
 public:
  Diagnostic& error(Span at, std::string message);
  Diagnostic& warning(Span at, std::string message);
  bool has_errors() const { return errors_ > 0; }
  size_t error_count() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  void clear() { diags_.clear(); errors_ = 0; }
  /// Appends `other`'s diagnostics after this sink's, in their order.
  void append(const DiagnosticSink& other) {
    diags_.insert(diags_.end(), other.diags_.begin(), other.diags_.end());
    errors_ += other.errors_;
  }

 private:
  std::vector<Diagnostic> diags_;
  size_t errors_ = 0;
};

/// A compiler bug (a state the earlier passes rule out, not bad input): prints
/// "bine-cc: internal error: WHAT (FILE:LINE)" to stderr and aborts. User errors are
/// diagnostics; this is for what no input may cause. Use BINE_ASSERT.
[[noreturn]] void internal_error(const char* file, int line, const std::string& what);
#define BINE_ASSERT(cond, what) \
  do {                                \
    if (!(cond)) ::bine::internal_error(__FILE__, __LINE__, (what)); \
  } while (0)

/// Attaches a note to a diagnostic.
void add_note(Diagnostic& d, Span at, std::string message);
/// clang-style text: location, severity, message, source line, caret and tildes.
std::string render_text(const Diagnostic& d);
/// JSON array of {file, line, column, end_column, severity, message, notes}.
std::string render_json(const std::vector<Diagnostic>& diags);

}  // namespace bine
