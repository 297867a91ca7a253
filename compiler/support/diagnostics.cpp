#include "diagnostics.h"

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace bine {

void internal_error(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "bine-cc: internal error: %s (%s:%d); please report it with the input\n", what.c_str(), file, line);
  std::abort();
}

SourceFile::SourceFile(std::string n, std::string t) : name(std::move(n)), text(std::move(t)) {
  line_starts.push_back(0);
  for (uint32_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_starts.push_back(i + 1);
}

std::string SourceFile::line_text(uint32_t line) const {
  if (line == 0 || line > line_starts.size()) return {};
  const uint32_t b = line_starts[line - 1];
  uint32_t e = b;
  while (e < text.size() && text[e] != '\n' && text[e] != '\r') ++e;
  return text.substr(b, e - b);
}

std::string Span::text() const {
  if (!valid()) return "?";
  return file->text.substr(begin, end - begin);
}

std::string Span::where() const {
  if (!file) return "<unknown>";
  return file->name + ":" + std::to_string(line) + ":" + std::to_string(col);
}

Diagnostic& DiagnosticSink::error(Span at, std::string message) {
  ++errors_;
  diags_.push_back({Severity::error, at, std::move(message), {}});
  return diags_.back();
}

Diagnostic& DiagnosticSink::warning(Span at, std::string message) {
  diags_.push_back({Severity::warning, at, std::move(message), {}});
  return diags_.back();
}

void add_note(Diagnostic& d, Span at, std::string message) {
  d.notes.push_back({Severity::note, at, std::move(message), {}});
}

static const char* severity_name(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::note: return "note";
  }
  return "error";
}

static void render_one(const Diagnostic& d, std::string& out) {
  out += d.span.valid() ? d.span.where() : std::string("bine-cc");
  out += ": ";
  out += severity_name(d.severity);
  out += ": " + d.message + "\n";
  if (!d.span.valid()) return;
  const std::string src = d.span.file->line_text(d.span.line);
  out += src + "\n";
  std::string caret;
  for (uint32_t i = 1; i < d.span.col && i - 1 < src.size(); ++i)
    caret += src[i - 1] == '\t' ? '\t' : ' ';
  caret += '^';
  const uint32_t line_end = d.span.file->line_starts[d.span.line - 1] + uint32_t(src.size());
  const uint32_t end = d.span.end < line_end ? d.span.end : line_end;
  for (uint32_t i = d.span.begin + 1; i < end; ++i) caret += '~';
  out += caret + "\n";
}

std::string render_text(const Diagnostic& d) {
  std::string out;
  render_one(d, out);
  for (const Diagnostic& n : d.notes) render_one(n, out);
  return out;
}

static nlohmann::json to_json(const Diagnostic& d) {
  nlohmann::json j;
  j["severity"] = severity_name(d.severity);
  j["message"] = d.message;
  if (d.span.valid()) {
    j["file"] = d.span.file->name;
    j["line"] = d.span.line;
    j["column"] = d.span.col;
    j["end_column"] = d.span.col + (d.span.end > d.span.begin ? d.span.end - d.span.begin : 1);
  }
  if (!d.notes.empty()) {
    j["notes"] = nlohmann::json::array();
    for (const Diagnostic& n : d.notes) j["notes"].push_back(to_json(n));
  }
  return j;
}

std::string render_json(const std::vector<Diagnostic>& diags) {
  nlohmann::json arr = nlohmann::json::array();
  for (const Diagnostic& d : diags) arr.push_back(to_json(d));
  return arr.dump(2) + "\n";
}

}  // namespace bine
