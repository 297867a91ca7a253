// Tokens of the schedule language (docs/language.md, "Lexical structure").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "diagnostics.h"

namespace bine {

enum class Tok {
  eof, ident, integer,
  // keywords
  kw_schedule, kw_implements, kw_requires, kw_blocks, kw_params, kw_fold, kw_segment, kw_let, kw_var,
  kw_fn, kw_for, kw_in, kw_if, kw_else, kw_send, kw_recv, kw_exchange, kw_to, kw_from,
  kw_with, kw_reduce, kw_copy, kw_phase, kw_mirror, kw_all, kw_none, kw_block, kw_wrap,
  kw_stride, kw_true, kw_false, kw_permute, kw_round, kw_return, kw_scratch, kw_into, kw_frames,
  // punctuation
  lbrace, rbrace, lparen, rparen, lbracket, rbracket, comma, semi, colon, question, dotdot,
  assign, eq, ne, lt, le, gt, ge, plus, minus, star, slash, percent, amp, pipe, caret,
  tilde, bang, arrow, ampamp, pipepipe, shl, shr,
};

/// Spelling of a token kind for messages ("'{'", "identifier", ...).
const char* tok_name(Tok t);
/// The source spelling of an operator token, unquoted ("+", "<<", "&&", "!"); "?" for a
/// token that is not a unary or binary operator. The same in the language and in C/C++.
const char* op_spelling(Tok t);

struct Token {
  Tok kind = Tok::eof;
  Span span;
  std::string text;  ///< identifier spelling or integer digits
  int64_t value = 0; ///< integer value
};

/// Splits a source file into tokens; lexical errors go to `diags` and the offending
/// characters are skipped, so lexing always terminates with an eof token.
std::vector<Token> lex(const SourceFile& file, DiagnosticSink& diags);

/// True when `word` is a keyword of the language (docs/language.md, "Lexical structure"):
/// it cannot name a schedule, a variable or a function.
bool is_keyword(const std::string& word);

}  // namespace bine
