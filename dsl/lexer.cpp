// Lexer: identifiers, keywords, integers (decimal, 0x, 0b, '_' separators), punctuation,
// `//` and `/* */` comments.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unordered_map>

#include "token.h"

namespace bine {

const char* op_spelling(Tok t) {
  switch (t) {
    case Tok::plus: return "+";
    case Tok::minus: return "-";
    case Tok::star: return "*";
    case Tok::slash: return "/";
    case Tok::percent: return "%";
    case Tok::shl: return "<<";
    case Tok::shr: return ">>";
    case Tok::amp: return "&";
    case Tok::pipe: return "|";
    case Tok::caret: return "^";
    case Tok::eq: return "==";
    case Tok::ne: return "!=";
    case Tok::lt: return "<";
    case Tok::le: return "<=";
    case Tok::gt: return ">";
    case Tok::ge: return ">=";
    case Tok::ampamp: return "&&";
    case Tok::pipepipe: return "||";
    case Tok::bang: return "!";
    case Tok::tilde: return "~";
    default: return "?";
  }
}

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::eof: return "end of file";
    case Tok::ident: return "identifier";
    case Tok::integer: return "integer";
    case Tok::kw_schedule: return "'schedule'";
    case Tok::kw_implements: return "'implements'";
    case Tok::kw_requires: return "'requires'";
    case Tok::kw_blocks: return "'blocks'";
    case Tok::kw_params: return "'params'";
    case Tok::kw_fold: return "'fold'";
    case Tok::kw_segment: return "'segment'";
    case Tok::kw_let: return "'let'";
    case Tok::kw_var: return "'var'";
    case Tok::kw_fn: return "'fn'";
    case Tok::kw_for: return "'for'";
    case Tok::kw_in: return "'in'";
    case Tok::kw_if: return "'if'";
    case Tok::kw_else: return "'else'";
    case Tok::kw_send: return "'send'";
    case Tok::kw_recv: return "'recv'";
    case Tok::kw_exchange: return "'exchange'";
    case Tok::kw_to: return "'to'";
    case Tok::kw_from: return "'from'";
    case Tok::kw_with: return "'with'";
    case Tok::kw_reduce: return "'reduce'";
    case Tok::kw_copy: return "'copy'";
    case Tok::kw_phase: return "'phase'";
    case Tok::kw_mirror: return "'mirror'";
    case Tok::kw_all: return "'all'";
    case Tok::kw_none: return "'none'";
    case Tok::kw_block: return "'block'";
    case Tok::kw_wrap: return "'wrap'";
    case Tok::kw_stride: return "'stride'";
    case Tok::kw_true: return "'true'";
    case Tok::kw_false: return "'false'";
    case Tok::kw_permute: return "'permute'";
    case Tok::kw_scratch: return "'scratch'";
    case Tok::kw_into: return "'into'";
    case Tok::kw_frames: return "'frames'";
    case Tok::kw_round: return "'round'";
    case Tok::kw_return: return "'return'";
    case Tok::lbrace: return "'{'";
    case Tok::rbrace: return "'}'";
    case Tok::lparen: return "'('";
    case Tok::rparen: return "')'";
    case Tok::lbracket: return "'['";
    case Tok::rbracket: return "']'";
    case Tok::comma: return "','";
    case Tok::semi: return "';'";
    case Tok::colon: return "':'";
    case Tok::question: return "'?'";
    case Tok::dotdot: return "'..'";
    case Tok::assign: return "'='";
    case Tok::eq: return "'=='";
    case Tok::ne: return "'!='";
    case Tok::lt: return "'<'";
    case Tok::le: return "'<='";
    case Tok::gt: return "'>'";
    case Tok::ge: return "'>='";
    case Tok::plus: return "'+'";
    case Tok::minus: return "'-'";
    case Tok::star: return "'*'";
    case Tok::slash: return "'/'";
    case Tok::percent: return "'%'";
    case Tok::amp: return "'&'";
    case Tok::pipe: return "'|'";
    case Tok::caret: return "'^'";
    case Tok::tilde: return "'~'";
    case Tok::bang: return "'!'";
    case Tok::arrow: return "'->'";
    case Tok::ampamp: return "'&&'";
    case Tok::pipepipe: return "'||'";
    case Tok::shl: return "'<<'";
    case Tok::shr: return "'>>'";
  }
  return "token";
}

namespace {

constexpr size_t kMaxErrors = 100;

const std::unordered_map<std::string, Tok>& keywords() {
  static const std::unordered_map<std::string, Tok> k = {
      {"schedule", Tok::kw_schedule}, {"implements", Tok::kw_implements},
      {"requires", Tok::kw_requires}, {"blocks", Tok::kw_blocks},
      {"params", Tok::kw_params},     {"fold", Tok::kw_fold}, {"segment", Tok::kw_segment},
      {"let", Tok::kw_let},           {"var", Tok::kw_var},
      {"fn", Tok::kw_fn},             {"for", Tok::kw_for},
      {"in", Tok::kw_in},             {"if", Tok::kw_if},
      {"else", Tok::kw_else},         {"send", Tok::kw_send},
      {"recv", Tok::kw_recv},         {"exchange", Tok::kw_exchange},
      {"to", Tok::kw_to},             {"from", Tok::kw_from},
      {"with", Tok::kw_with},         {"reduce", Tok::kw_reduce},
      {"copy", Tok::kw_copy},         {"phase", Tok::kw_phase},
      {"mirror", Tok::kw_mirror},     {"all", Tok::kw_all},
      {"none", Tok::kw_none},         {"block", Tok::kw_block},
      {"wrap", Tok::kw_wrap},         {"stride", Tok::kw_stride},
      {"true", Tok::kw_true}, {"permute", Tok::kw_permute}, {"round", Tok::kw_round}, {"return", Tok::kw_return}, {"scratch", Tok::kw_scratch}, {"into", Tok::kw_into}, {"frames", Tok::kw_frames},         {"false", Tok::kw_false},
  };
  return k;
}

class Lexer {
 public:
  Lexer(const SourceFile& f, DiagnosticSink& d) : file_(f), src_(f.text), diags_(d) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space_and_comments();
      if (pos_ >= src_.size()) break;
      const uint32_t start = pos_;
      const char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        Token t = make(Tok::ident, start);
        t.text = src_.substr(start, pos_ - start);
        auto it = keywords().find(t.text);
        if (it != keywords().end()) t.kind = it->second;
        out.push_back(t);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        out.push_back(number(start));
      } else if (Tok k; punct(k)) {
        out.push_back(make(k, start));
      } else {
        bad_character(start);
      }
    }
    Token e = make(Tok::eof, uint32_t(src_.size()));
    out.push_back(e);
    return out;
  }

 private:
  /// Reports the character at `start` and skips it: ASCII as itself, a well-formed UTF-8
  /// sequence as its code point (messages stay ASCII, so JSON output never holds a
  /// malformed string), any other byte in hex.
  void bad_character(uint32_t start) {
    const unsigned char c = static_cast<unsigned char>(src_[pos_++]);
    if (c < 0x80) {
      const std::string shown = std::isprint(c) ? std::string(1, char(c)) : "\\x" + hex(char(c));
      report(span(start), "unexpected character '" + shown + "'");
      return;
    }
    // Lead byte: sequence length and the smallest code point it may encode (no overlongs).
    const int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    uint32_t cp = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    bool ok = len > 0 && start + uint32_t(len) <= src_.size();
    for (int i = 1; ok && i < len; ++i) {
      const unsigned char k = static_cast<unsigned char>(src_[start + uint32_t(i)]);
      if ((k & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (k & 0x3F);
    }
    if (ok) ok = (len != 3 || cp >= 0x800) && (len != 4 || (cp >= 0x10000 && cp <= 0x10FFFF)) &&
                 !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      while (pos_ < src_.size() && (static_cast<unsigned char>(src_[pos_]) & 0xC0) == 0x80) ++pos_;
      report(span(start), "invalid UTF-8 byte '\\x" + hex(char(c)) + "'");
      return;
    }
    pos_ = start + uint32_t(len);
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", unsigned(cp));
    report(span(start), std::string("unexpected character ") + buf +
                            " (non-ASCII characters are only allowed in comments)");
  }
  /// Lexical errors stop being reported after kMaxErrors (the parser stops there too).
  void report(const Span& at, std::string msg) {
    if (diags_.error_count() < kMaxErrors) diags_.error(at, std::move(msg));
  }
  static std::string hex(char c) {
    const char* d = "0123456789abcdef";
    const unsigned u = static_cast<unsigned char>(c);
    return {d[u >> 4], d[u & 15]};
  }
  Span span(uint32_t b) const {
    Span s;
    s.file = &file_;
    s.begin = b;
    s.end = pos_ > b ? pos_ : b + 1;
    auto it = std::upper_bound(file_.line_starts.begin(), file_.line_starts.end(), b);
    s.line = uint32_t(it - file_.line_starts.begin());
    s.col = b - file_.line_starts[s.line - 1] + 1;
    return s;
  }
  Token make(Tok k, uint32_t start) const {
    Token t;
    t.kind = k;
    t.span = span(start);
    return t;
  }
  void skip_space_and_comments() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '*') {
        const uint32_t start = pos_;
        pos_ += 2;
        while (pos_ + 1 < src_.size() && !(src_[pos_] == '*' && src_[pos_ + 1] == '/')) ++pos_;
        if (pos_ + 1 >= src_.size()) {
          pos_ = uint32_t(src_.size());
          const uint32_t save = pos_;
          pos_ = start + 2;
          report(span(start), "unterminated block comment");
          pos_ = save;
          return;
        }
        pos_ += 2;
      } else {
        return;
      }
    }
  }
  Token number(uint32_t start) {
    int base = 10;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && (src_[pos_ + 1] == 'x' || src_[pos_ + 1] == 'X')) {
      base = 16;
      pos_ += 2;
    } else if (src_[pos_] == '0' && pos_ + 1 < src_.size() && (src_[pos_ + 1] == 'b' || src_[pos_ + 1] == 'B')) {
      base = 2;
      pos_ += 2;
    }
    uint64_t v = 0;
    bool overflow = false, any = false;
    char bad = 0;  // the first character that is not a digit of `base`
    while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
      const char c = src_[pos_++];
      if (c == '_') continue;
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0 || d >= base) { if (!bad) bad = c; continue; }
      any = true;
      if (v > (uint64_t(INT64_MAX) - uint64_t(d)) / uint64_t(base)) overflow = true;
      else v = v * uint64_t(base) + uint64_t(d);
    }
    Token t = make(Tok::integer, start);
    t.text = src_.substr(start, pos_ - start);
    const char* base_name = base == 16 ? "hexadecimal" : base == 2 ? "binary" : "decimal";
    if (bad) report(t.span, std::string("invalid digit '") + bad + "' in " + base_name + " integer literal '" + t.text + "'");
    else if (!any) report(t.span, "integer literal '" + t.text + "' has no digits");
    else if (overflow) report(t.span, "integer literal '" + t.text + "' does not fit in a signed 64-bit integer (at most 9223372036854775807)");
    t.value = int64_t(v);
    return t;
  }
  bool punct(Tok& k) {
    const char c = src_[pos_];
    const char n = pos_ + 1 < src_.size() ? src_[pos_ + 1] : '\0';
    auto two = [&](Tok t) { pos_ += 2; k = t; return true; };
    auto one = [&](Tok t) { pos_ += 1; k = t; return true; };
    switch (c) {
      case '{': return one(Tok::lbrace);
      case '}': return one(Tok::rbrace);
      case '(': return one(Tok::lparen);
      case ')': return one(Tok::rparen);
      case '[': return one(Tok::lbracket);
      case ']': return one(Tok::rbracket);
      case ',': return one(Tok::comma);
      case ';': return one(Tok::semi);
      case ':': return one(Tok::colon);
      case '?': return one(Tok::question);
      case '.': if (n == '.') return two(Tok::dotdot); return false;
      case '=': return n == '=' ? two(Tok::eq) : one(Tok::assign);
      case '!': return n == '=' ? two(Tok::ne) : one(Tok::bang);
      case '<': return n == '=' ? two(Tok::le) : n == '<' ? two(Tok::shl) : one(Tok::lt);
      case '>': return n == '=' ? two(Tok::ge) : n == '>' ? two(Tok::shr) : one(Tok::gt);
      case '+': return one(Tok::plus);
      case '-': return n == '>' ? two(Tok::arrow) : one(Tok::minus);
      case '*': return one(Tok::star);
      case '/': return one(Tok::slash);
      case '%': return one(Tok::percent);
      case '&': return n == '&' ? two(Tok::ampamp) : one(Tok::amp);
      case '|': return n == '|' ? two(Tok::pipepipe) : one(Tok::pipe);
      case '^': return one(Tok::caret);
      case '~': return one(Tok::tilde);
      default: return false;
    }
  }

  const SourceFile& file_;
  const std::string& src_;
  DiagnosticSink& diags_;
  uint32_t pos_ = 0;
};

}  // namespace

bool is_keyword(const std::string& word) { return keywords().count(word) != 0; }

std::vector<Token> lex(const SourceFile& file, DiagnosticSink& diags) {
  return Lexer(file, diags).run();
}

}  // namespace bine
