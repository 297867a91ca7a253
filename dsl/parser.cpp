// Recursive-descent parser. Each function is preceded by the grammar rule it parses.
#include "parser.h"

namespace bine {
namespace {

constexpr size_t kMaxErrors = 100;
constexpr int kMaxDepth = 200;          ///< nesting of statements, and of expressions
constexpr int kMaxOperators = 1000;     ///< binary operators in one expression (sema and the
                                        ///< interpreter recurse over the operand chain)

class Parser {
 public:
  Parser(const SourceFile& f, Program& prog, DiagnosticSink& d)
      : toks_(lex(f, d)), prog_(prog), diags_(d) {}

  // file := { schedule_decl | fn_decl }
  void parse_file() {
    while (!at(Tok::eof) && !too_many()) {
      const size_t before = pos_;
      if (at(Tok::kw_schedule)) {
        schedule_decl();
      } else if (at(Tok::kw_fn)) {
        FnDecl f;
        if (fn_decl(f)) prog_.fns.push_back(std::move(f));
      } else {
        error_here("expected 'schedule' or 'fn' at top level, found " + describe(cur()));
        while (!at(Tok::eof) && !at(Tok::kw_schedule) && !at(Tok::kw_fn)) ++pos_;
      }
      if (pos_ == before) ++pos_;
    }
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  bool accept(Tok k) {
    if (!at(k)) return false;
    ++pos_;
    return true;
  }
  bool too_many() const { return diags_.error_count() >= kMaxErrors; }
  static std::string describe(const Token& t) {
    if (t.kind == Tok::ident) return "identifier '" + t.text + "'";
    if (t.kind == Tok::integer) return "integer '" + t.text + "'";
    return tok_name(t.kind);
  }
  /// Reports an error at the current token. A second error at the same token is a
  /// consequence of the first (an unclosed block inside an unclosed schedule body, a
  /// statement that failed where recovery stopped) and is dropped; returns null then.
  Diagnostic* error_here(const std::string& msg) {
    if (too_many() || pos_ == last_error_tok_) return nullptr;
    last_error_tok_ = pos_;
    Diagnostic& d = diags_.error(cur().span, msg);
    if (diags_.error_count() == kMaxErrors) add_note(d, Span{}, "too many errors, stopping");
    return &d;
  }
  bool expect(Tok k, const char* context) {
    if (accept(k)) return true;
    error_here(std::string("expected ") + tok_name(k) + (*context ? " " : "") + context + ", found " + describe(cur()));
    return false;
  }
  /// Expects the '}' that closes the block opened at `open`; notes where that was.
  bool expect_close(const Span& open, const char* context) {
    if (accept(Tok::rbrace)) return true;
    if (Diagnostic* d = error_here(std::string("expected '}' ") + context + ", found " + describe(cur())))
      add_note(*d, open, "to match this '{'");
    return false;
  }
  /// After a nesting limit: skips to the end of the file without further errors (the
  /// constructs left open there are a consequence of stopping).
  void give_up() {
    pos_ = toks_.size() - 1;
    last_error_tok_ = pos_;
  }
  /// The current token is the first of its line (statements are not terminated, so a
  /// new line is where the next one most likely starts).
  bool at_line_start() const {
    return pos_ == 0 || toks_[pos_ - 1].span.line != cur().span.line;
  }
  /// Keywords that only start a schedule item ('requires', 'blocks', ...), not a statement.
  bool at_item_keyword() const {
    return at(Tok::kw_requires) || at(Tok::kw_blocks) || at(Tok::kw_fold) || at(Tok::kw_params) || at(Tok::kw_fn) ||
           at(Tok::kw_segment) || at(Tok::kw_scratch);
  }
  Span span_from(const Span& b) const {
    Span s = b;
    const Token& last = toks_[pos_ > 0 ? pos_ - 1 : 0];
    if (last.span.file == b.file && last.span.end > s.end) s.end = last.span.end;
    return s;
  }
  /// After an error inside a bracketed construct whose opening bracket is consumed (a
  /// 'params' list, a set comprehension): skips past its `close`, but stops at a new
  /// line, so that a forgotten closer does not swallow the statements after it.
  void skip_past(Tok close) {
    int depth = 0;
    while (!at(Tok::eof)) {
      if (at(close) && depth == 0) { ++pos_; return; }
      if (at(Tok::lbrace) || at(Tok::lparen) || at(Tok::lbracket)) ++depth;
      if ((at(Tok::rbrace) || at(Tok::rparen) || at(Tok::rbracket)) && depth > 0) --depth;
      ++pos_;
      if (at_line_start()) return;
    }
  }
  /// Skips to a likely statement start after a syntax error.
  void synchronize() {
    int depth = 0;
    while (!at(Tok::eof)) {
      switch (cur().kind) {
        case Tok::semi: if (depth == 0) { ++pos_; return; } break;
        case Tok::lbrace: ++depth; break;
        case Tok::rbrace: if (depth == 0) return; --depth; break;
        case Tok::kw_let: case Tok::kw_var: case Tok::kw_for: case Tok::kw_if: case Tok::kw_send:
        case Tok::kw_recv: case Tok::kw_exchange: case Tok::kw_phase: case Tok::kw_schedule:
        case Tok::kw_requires: case Tok::kw_blocks: case Tok::kw_fn: case Tok::kw_fold: case Tok::kw_params:
        case Tok::kw_segment: case Tok::kw_scratch: case Tok::kw_frames:
          if (depth == 0) return;
          break;
        case Tok::ident: case Tok::integer: case Tok::lparen: case Tok::kw_else: case Tok::kw_true:
        case Tok::kw_false:
          // In a schedule body, a new line that does not continue an expression (no
          // operator, '{', 'to', 'reduce', ...) most likely starts the next statement.
          if (depth == 0 && in_schedule_ && at_line_start()) return;
          break;
        default: break;
      }
      ++pos_;
    }
  }

  // fn_decl := 'fn' IDENT '(' [IDENT {',' IDENT}] ')' ('=' expr | '{' { stmt } 'return' expr '}')
  bool fn_decl(FnDecl& f) {
    f.span = cur().span;
    expect(Tok::kw_fn, "");
    if (!at(Tok::ident)) { error_here("expected function name after 'fn', found " + describe(cur())); synchronize(); return false; }
    f.name = cur().text;
    f.name_span = cur().span;
    ++pos_;
    if (!expect(Tok::lparen, "after function name")) { synchronize(); return false; }
    if (!at(Tok::rparen)) {
      do {
        if (!at(Tok::ident)) { error_here("expected parameter name, found " + describe(cur())); synchronize(); return false; }
        f.params.push_back(cur().text);
        f.param_spans.push_back(cur().span);
        ++pos_;
      } while (accept(Tok::comma));
    }
    if (!expect(Tok::rparen, "after parameters")) { synchronize(); return false; }
    // fn_block := '{' { stmt } 'return' expr '}'
    if (accept(Tok::lbrace)) {
      while (!at(Tok::kw_return) && !at(Tok::rbrace) && !at(Tok::eof) && !too_many()) {
        const size_t before = pos_;
        if (StmtPtr st = stmt(false)) f.stmts.push_back(std::move(st));
        if (pos_ == before) { ++pos_; synchronize(); }
      }
      if (!expect(Tok::kw_return, "at the end of a fn body")) { synchronize(); return false; }
      f.body = expr();
      accept(Tok::semi);
      if (!f.body || !expect(Tok::rbrace, "to close the fn body")) { synchronize(); return false; }
      f.span = span_from(f.span);
      return true;
    }
    if (!expect(Tok::assign, "before function body ('= EXPR' or '{ ... return EXPR }')")) { synchronize(); return false; }
    f.body = expr();
    if (!f.body) { synchronize(); return false; }
    f.span = span_from(f.span);
    accept(Tok::semi);
    return true;
  }

  // schedule_decl := 'schedule' IDENT 'implements' IDENT '{' { item } '}'
  void schedule_decl() {
    ScheduleDecl s;
    s.span = cur().span;
    ++pos_;
    if (!at(Tok::ident)) { error_here("expected schedule name, found " + describe(cur())); skip_schedule(); return; }
    s.name = cur().text;
    s.name_span = cur().span;
    ++pos_;
    if (!expect(Tok::kw_implements, "after schedule name")) { skip_schedule(); return; }
    // `reduce` is also a keyword (recv ... reduce); accept it as the collective's name.
    if (!at(Tok::ident) && !at(Tok::kw_reduce)) { error_here("expected a collective name after 'implements', found " + describe(cur())); skip_schedule(); return; }
    s.collective_name = at(Tok::kw_reduce) ? std::string("reduce") : cur().text;
    s.collective_span = cur().span;
    ++pos_;
    const Span open = cur().span;
    if (!expect(Tok::lbrace, "to open the schedule body")) { skip_schedule(); return; }
    in_schedule_ = true;
    // A 'schedule' keyword cannot occur in a body: the body was not closed.
    while (!at(Tok::rbrace) && !at(Tok::eof) && !at(Tok::kw_schedule) && !too_many()) {
      const size_t before = pos_;
      item(s);
      if (pos_ == before) { error_here("unexpected " + describe(cur())); ++pos_; synchronize(); }
    }
    expect_close(open, "to close the schedule body");
    in_schedule_ = false;
    prog_.schedules.push_back(std::move(s));
  }
  void skip_schedule() {
    while (!at(Tok::eof) && !at(Tok::kw_schedule)) ++pos_;
  }

  /// `KEYWORD expr` declared at most once (blocks, segment, scratch); the keyword is current.
  void single_expr_item(ExprPtr& slot, const char* keyword) {
    const Span b = cur().span;
    ++pos_;
    if (slot) diags_.error(b, std::string("duplicate '") + keyword + "' declaration");
    if (ExprPtr e = expr()) slot = std::move(e); else synchronize();
    accept(Tok::semi);
  }
  // item := 'requires' expr | 'blocks' expr | 'segment' expr | 'scratch' expr | 'fold' [INT '-' INT | 'ring' INT]
  //       | 'params' '{' {IDENT '=' expr [',']} '}' | fn_decl | stmt
  void item(ScheduleDecl& s) {
    if (accept(Tok::kw_requires)) {
      if (ExprPtr e = expr()) s.requires_.push_back(std::move(e)); else synchronize();
      accept(Tok::semi);
    } else if (at(Tok::kw_blocks)) {
      single_expr_item(s.blocks, "blocks");
    } else if (at(Tok::kw_segment)) {
      single_expr_item(s.segment, "segment");
    } else if (at(Tok::kw_scratch)) {
      single_expr_item(s.scratch, "scratch");
    } else if (at(Tok::kw_fold)) {
      if (s.fold != FoldKind::none) diags_.error(cur().span, "duplicate 'fold' declaration");
      s.fold = FoldKind::two_one;
      s.fold_span = cur().span;
      ++pos_;
      // 'fold' [INT '-' INT | 'ring' INT]: the elimination step, 2-1 (the default) or 3-2,
      // or the small ring of RT Sec. 3.4.
      if (at(Tok::ident) && cur().text == "ring" && peek().kind == Tok::integer) {
        const Token& n = peek();
        if (n.value < 3 || n.value > 64) diags_.error(n.span, "ring size " + n.text + " outside 3..64 ('fold ring R')");
        else s.fold = FoldKind::ring, s.fold_ring = n.value;
        s.fold_span.end = n.span.end;
        pos_ += 2;
      } else if (at(Tok::integer)) {
        Span step = cur().span;
        const int64_t a = cur().value;
        ++pos_;
        int64_t b = -1;
        if (at(Tok::minus) && pos_ + 1 < toks_.size() && toks_[pos_ + 1].kind == Tok::integer) {
          b = toks_[pos_ + 1].value;
          step.end = toks_[pos_ + 1].span.end;
          pos_ += 2;
        }
        if (a == 3 && b == 2) s.fold = FoldKind::three_two;
        else if (!(a == 2 && b == 1))
          diags_.error(step, "unknown elimination step '" + step.file->text.substr(step.begin, step.end - step.begin) +
                                 "' (expected 'fold', 'fold 2-1' or 'fold 3-2')");
        s.fold_span.end = step.end;
      }
      accept(Tok::semi);
    } else if (accept(Tok::kw_params)) {
      const Span open = cur().span;
      if (!expect(Tok::lbrace, "after 'params'")) { synchronize(); return; }
      while (at(Tok::ident)) {
        Param pr;
        pr.name = cur().text;
        pr.span = cur().span;
        ++pos_;
        if (!expect(Tok::assign, "after parameter name")) { skip_past(Tok::rbrace); return; }
        pr.init = expr();
        if (!pr.init) { skip_past(Tok::rbrace); return; }
        s.params.push_back(std::move(pr));
        if (!accept(Tok::comma)) accept(Tok::semi);
      }
      if (!expect_close(open, "to close 'params'")) skip_past(Tok::rbrace);
    } else if (at(Tok::kw_fn)) {
      FnDecl f;
      if (fn_decl(f)) s.fns.push_back(std::move(f));
    } else {
      if (StmtPtr st = stmt(/*top=*/true)) s.body.push_back(std::move(st));
    }
  }

  // block := '{' { stmt } '}'
  bool block(Block& out, const char* what) {
    const Span open = cur().span;
    if (!expect(Tok::lbrace, what)) return false;
    while (!at(Tok::rbrace) && !at(Tok::eof) && !at(Tok::kw_schedule) && !too_many()) {
      const size_t before = pos_;
      if (at_item_keyword()) {
        // 'requires', 'blocks', 'fold', 'params' and 'fn' describe the whole schedule:
        // report, then parse the item into a throw-away schedule to skip exactly it.
        error_here(std::string(tok_name(cur().kind)) + " is only allowed at the top level of a schedule");
        ScheduleDecl ignored;
        item(ignored);
      } else if (StmtPtr st = stmt(false)) {
        out.push_back(std::move(st));
      }
      if (pos_ == before) { ++pos_; synchronize(); }
    }
    return expect_close(open, "to close the block");
  }

  // stmt := 'let' IDENT '=' expr | 'var' IDENT '=' expr | IDENT '=' expr
  //       | 'for' IDENT 'in' expr '..' expr block
  //       | 'if' expr block ['else' (if_stmt | block)]
  //       | 'send' set 'to' expr | 'recv' set 'from' expr ['reduce' | 'copy']
  //       | 'exchange' set '/' set 'with' expr ['reduce' | 'copy']
  //       | 'permute' IDENT '->' expr | 'round' block
  //       | ('reduce' | 'copy') set 'into' set
  //       | 'phase' IDENT (block | '=' 'mirror' '(' IDENT ')' | '=' IDENT ['(' [IDENT '=' expr {',' IDENT '=' expr}] ')'])   (top level only)
  StmtPtr stmt(bool top) {
    if (++stmt_depth_ > kMaxDepth) {
      error_here("statements nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
      --stmt_depth_;
      give_up();
      return nullptr;
    }
    StmtPtr s = stmt_inner(top);
    --stmt_depth_;
    accept(Tok::semi);
    return s;
  }
  StmtPtr make_stmt(StmtKind k) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->span = cur().span;
    return s;
  }
  StmtPtr fail() {
    synchronize();
    return nullptr;
  }
  StmtPtr stmt_inner(bool top) {
    switch (cur().kind) {
      case Tok::kw_let:
      case Tok::kw_var: {
        StmtPtr s = make_stmt(at(Tok::kw_let) ? StmtKind::let : StmtKind::var);
        ++pos_;
        if (!at(Tok::ident)) { error_here("expected a name after " + std::string(s->kind == StmtKind::let ? "'let'" : "'var'") + ", found " + describe(cur())); return fail(); }
        s->name = cur().text;
        s->name_span = cur().span;
        ++pos_;
        if (!expect(Tok::assign, "after the name")) return fail();
        if (!(s->a = expr())) return fail();
        s->span = span_from(s->span);
        return s;
      }
      case Tok::ident: {
        if (peek().kind != Tok::assign) {
          error_here("expected a statement, found " + describe(cur()) +
                     (peek().kind == Tok::lparen ? " (a call is not a statement)" : ""));
          return fail();
        }
        StmtPtr s = make_stmt(StmtKind::assign);
        s->name = cur().text;
        s->name_span = cur().span;
        pos_ += 2;
        if (!(s->a = expr())) return fail();
        s->span = span_from(s->span);
        return s;
      }
      case Tok::kw_for: {
        StmtPtr s = make_stmt(StmtKind::for_);
        ++pos_;
        if (!at(Tok::ident)) { error_here("expected loop variable after 'for', found " + describe(cur())); return fail(); }
        s->name = cur().text;
        s->name_span = cur().span;
        ++pos_;
        if (!expect(Tok::kw_in, "after the loop variable")) return fail();
        if (!(s->a = expr())) return fail();
        if (!expect(Tok::dotdot, "between the loop bounds")) return fail();
        if (!(s->b = expr())) return fail();
        if (!block(s->body, "to open the loop body")) return fail();
        return s;
      }
      case Tok::kw_if: return if_stmt();
      case Tok::kw_send:
      case Tok::kw_recv: {
        const bool is_send = at(Tok::kw_send);
        StmtPtr s = make_stmt(is_send ? StmtKind::send : StmtKind::recv);
        ++pos_;
        if (!(s->a = expr())) return fail();
        if (!expect(is_send ? Tok::kw_to : Tok::kw_from, is_send ? "after the blocks to send" : "after the blocks to receive")) return fail();
        if (!(s->b = expr())) return fail();
        if (!is_send) reduce_or_copy(*s);
        s->span = span_from(s->span);
        return s;
      }
      // 'round' block: every transfer inside, loops included, belongs to one round
      case Tok::kw_round: {
        StmtPtr s = make_stmt(StmtKind::round_block);
        ++pos_;
        if (!block(s->body, "after 'round'")) return fail();
        return s;
      }
      // ('reduce' | 'copy') set 'into' set: a local reduction (dst = src op dst) or copy
      // between the rank's own buffers, applied after the round's receives
      case Tok::kw_reduce:
      case Tok::kw_copy: {
        // A trailing 'reduce'/'copy' (`send all to q reduce`) is a misplaced keyword, not
        // a local statement: those start a line.
        if (!at_line_start()) {
          error_here("expected a statement, found " + describe(cur()));
          return fail();
        }
        StmtPtr s = make_stmt(StmtKind::local);
        s->reduce = at(Tok::kw_reduce);
        if (s->reduce) s->reduce_span = cur().span;
        ++pos_;
        if (!(s->a = expr())) return fail();
        if (!expect(Tok::kw_into, s->reduce ? "after the blocks to reduce" : "after the blocks to copy")) return fail();
        if (!(s->b = expr())) return fail();
        s->span = span_from(s->span);
        return s;
      }
      // permute IDENT '->' expr: block j of this rank moves to block expr (a bijection)
      case Tok::kw_permute: {
        StmtPtr s = make_stmt(StmtKind::permute);
        ++pos_;
        if (!at(Tok::ident)) { error_here("expected a block variable after 'permute', found " + describe(cur())); return fail(); }
        s->name = cur().text;
        s->name_span = cur().span;
        ++pos_;
        if (!expect(Tok::arrow, "after the block variable of 'permute'")) return fail();
        if (!(s->a = expr())) return fail();
        s->span = span_from(s->span);
        return s;
      }
      case Tok::kw_exchange: {
        StmtPtr s = make_stmt(StmtKind::exchange);
        ++pos_;
        no_slash_ = true;
        s->a = expr();
        no_slash_ = false;
        if (!s->a) return fail();
        if (!expect(Tok::slash, "between the sent and the received blocks")) return fail();
        if (!(s->b = expr())) return fail();
        if (!expect(Tok::kw_with, "before the exchange partner")) return fail();
        if (!(s->c = expr())) return fail();
        reduce_or_copy(*s);
        s->span = span_from(s->span);
        return s;
      }
      case Tok::kw_phase: {
        StmtPtr s = make_stmt(StmtKind::phase);
        if (!top) { error_here("'phase' is only allowed at the top level of a schedule"); }
        ++pos_;
        if (!at(Tok::ident)) { error_here("expected phase name, found " + describe(cur())); return fail(); }
        s->name = cur().text;
        s->name_span = cur().span;
        ++pos_;
        if (accept(Tok::assign)) {
          if (at(Tok::ident)) {
            // phase NAME = SCHEDULE: the body of another schedule, inlined (composition)
            s->kind = StmtKind::use;
            s->other = cur().text;
            s->c = std::make_unique<Expr>();
            s->c->kind = ExprKind::name;
            s->c->span = cur().span;
            ++pos_;
            // phase NAME = SCHEDULE(param = EXPR, ...): the used schedule's params set here
            if (accept(Tok::lparen)) {
              if (!at(Tok::rparen)) {
                do {
                  if (!at(Tok::ident)) {
                    error_here("expected the name of a parameter of schedule '" + s->other + "', found " + describe(cur()));
                    return fail();
                  }
                  Stmt::Override ov;
                  ov.name = cur().text;
                  ov.span = cur().span;
                  ++pos_;
                  if (!expect(Tok::assign, "after the parameter name (write NAME = VALUE)")) return fail();
                  if (!(ov.value = expr())) return fail();
                  s->overrides.push_back(std::move(ov));
                } while (accept(Tok::comma));
              }
              if (!expect(Tok::rparen, "after the parameter values")) return fail();
            }
            // ... on region|across [window SET]: the used schedule on a sub-group (contextual
            // words: `on` followed by another name cannot start a statement)
            if (at(Tok::ident) && cur().text == "on" && peek().kind == Tok::ident) {
              const Span on_span = cur().span;
              ++pos_;
              if (cur().text == "region") s->group = GroupKind::region;
              else if (cur().text == "across") s->group = GroupKind::across;
              else {
                error_here("expected 'region' or 'across' after 'on' (the sub-group the schedule runs on), found " + describe(cur()));
                return fail();
              }
              ++pos_;
              s->group_span = span_from(on_span);
              if (at(Tok::ident) && cur().text == "window" && peek().kind != Tok::assign) {
                ++pos_;
                if (!(s->a = expr())) return fail();
              }
            }
            s->span = span_from(s->span);
            return s;
          }
          s->kind = StmtKind::mirror;
          if (!expect(Tok::kw_mirror, "after '=' in a phase declaration (a schedule name or mirror(PHASE))")) return fail();
          if (!expect(Tok::lparen, "after 'mirror'")) return fail();
          if (!at(Tok::ident)) { error_here("expected the name of the mirrored phase, found " + describe(cur())); return fail(); }
          s->other = cur().text;
          s->c = std::make_unique<Expr>();
          s->c->kind = ExprKind::name;
          s->c->span = cur().span;
          ++pos_;
          if (!expect(Tok::rparen, "after the mirrored phase")) return fail();
          s->span = span_from(s->span);
          return s;
        }
        if (!block(s->body, "to open the phase body")) return fail();
        return top ? std::move(s) : nullptr;
      }
      case Tok::kw_frames: {
        StmtPtr s = frames_stmt();
        if (s && !top) { diags_.error(s->span, "'frames' is only allowed at the top level of a schedule"); return nullptr; }
        return s;
      }
      default:
        error_here("expected a statement, found " + describe(cur()));
        return fail();
    }
  }
  // frames_stmt := 'frames' '{' { frames_item } '}'
  // frames_item := 'nodes' INT | 'root' INT | 'packet' IDENT [INT]
  //              | 'links' { INT '-' INT } | 'frame' { INT '>' INT [':' INT] }
  // (nodes, root, packet, links and frame are words of the frames block, not keywords)
  StmtPtr frames_stmt() {
    StmtPtr s = make_stmt(StmtKind::frames);
    auto fd = std::make_shared<FramesData>();
    ++pos_;
    const Span open = cur().span;
    if (!expect(Tok::lbrace, "after 'frames'")) return fail();
    // INT: a node id or count, as written (sema checks the ranges).
    auto integer = [&](int64_t& v, Span& where, const char* what) {
      if (!at(Tok::integer)) {
        error_here(std::string("expected ") + what + ", found " + describe(cur()));
        return false;
      }
      v = cur().value;
      where = cur().span;
      ++pos_;
      return true;
    };
    bool seen_nodes = false, seen_root = false, seen_rule = false, seen_links = false;
    auto once = [&](bool& seen, const char* word) {
      if (seen) error_here(std::string("duplicate '") + word + "' in 'frames'");
      seen = true;
    };
    while (!at(Tok::rbrace) && !at(Tok::eof) && !too_many()) {
      if (!at(Tok::ident)) {
        error_here("expected 'nodes', 'root', 'packet', 'links' or 'frame' in 'frames', found " + describe(cur()));
        return skip_frames(open);
      }
      const std::string word = cur().text;
      const Span word_span = cur().span;
      if (word == "nodes") {
        once(seen_nodes, "nodes");
        ++pos_;
        if (!integer(fd->nodes, fd->nodes_span, "the node count after 'nodes'")) return skip_frames(open);
      } else if (word == "root") {
        once(seen_root, "root");
        ++pos_;
        if (!integer(fd->root, fd->root_span, "the root node after 'root'")) return skip_frames(open);
      } else if (word == "packet") {
        once(seen_rule, "packet");
        ++pos_;
        if (!at(Tok::ident) || (cur().text != "lowest" && cur().text != "potential" && cur().text != "stream")) {
          error_here("expected a packet rule after 'packet' ('lowest', 'potential' or 'stream K'), found " + describe(cur()));
          return skip_frames(open);
        }
        fd->rule = cur().text == "lowest" ? PacketRule::lowest : cur().text == "potential" ? PacketRule::potential : PacketRule::stream;
        fd->rule_span = cur().span;
        ++pos_;
        if (fd->rule == PacketRule::stream) {
          Span k;
          if (!integer(fd->streams, k, "the stream count K after 'packet stream'")) return skip_frames(open);
          fd->rule_span.end = k.end;
        }
      } else if (word == "links" || word == "frame") {
        const bool links = word == "links";
        if (links) once(seen_links, "links");
        ++pos_;
        std::vector<std::pair<int64_t, int64_t>> pairs;
        std::vector<Span> spans;
        std::vector<int64_t> tags;
        while (at(Tok::integer)) {
          std::pair<int64_t, int64_t> e;
          Span a, b;
          integer(e.first, a, "");
          if (!expect(links ? Tok::minus : Tok::gt, links ? "between the two nodes of a link (write U-V)"
                                                           : "between the sender and the receiver of an arc (write U>V)"))
            return skip_frames(open);
          if (!integer(e.second, b, links ? "the second node of the link" : "the receiving node of the arc"))
            return skip_frames(open);
          int64_t tag = -1;
          if (!links && accept(Tok::colon) && !integer(tag, b, "the arc's stream after ':' (write U>V:J)"))
            return skip_frames(open);
          pairs.push_back(e);
          tags.push_back(tag);
          Span sp = a;
          sp.end = b.end;
          spans.push_back(sp);
        }
        if (links) {
          fd->links = std::move(pairs);
          fd->link_spans = std::move(spans);
          fd->links_span = span_from(word_span);
        } else {
          fd->frames.push_back(std::move(pairs));
          fd->arc_spans.push_back(std::move(spans));
          fd->arc_streams.push_back(std::move(tags));
          fd->frame_spans.push_back(span_from(word_span));
          auto site = std::make_unique<Stmt>();
          site->kind = StmtKind::round_block;
          site->span = fd->frame_spans.back();
          s->body.push_back(std::move(site));
        }
      } else {
        error_here("expected 'nodes', 'root', 'packet', 'links' or 'frame' in 'frames', found " + describe(cur()));
        return skip_frames(open);
      }
      accept(Tok::semi);
    }
    if (!expect_close(open, "to close 'frames'")) return fail();
    if (!seen_nodes) diags_.error(s->span, "'frames' needs 'nodes N' (the topology's node count)");
    if (!seen_links) diags_.error(s->span, "'frames' needs 'links U-V ...' (the topology's links)");
    if (fd->frames.empty()) diags_.error(s->span, "'frames' needs at least one 'frame U>V ...'");
    s->span = span_from(s->span);
    s->frames = std::move(fd);
    return s;
  }
  /// After an error inside 'frames': skips to its closing brace.
  StmtPtr skip_frames(const Span& open) {
    (void)open;
    while (!at(Tok::rbrace) && !at(Tok::eof)) ++pos_;
    accept(Tok::rbrace);
    return nullptr;
  }
  void reduce_or_copy(Stmt& s) {
    if (at(Tok::kw_reduce)) {
      s.reduce = true;
      s.reduce_span = cur().span;
      ++pos_;
    } else {
      accept(Tok::kw_copy);
    }
  }
  StmtPtr if_stmt() {
    StmtPtr s = make_stmt(StmtKind::if_);
    ++pos_;
    if (!(s->a = expr())) return fail();
    if (!block(s->body, "to open the 'if' body")) return fail();
    if (accept(Tok::kw_else)) {
      if (at(Tok::kw_if)) {
        // Through stmt(): an 'else if' chain nests like blocks do and is bounded the same way.
        if (StmtPtr e = stmt(false)) s->else_body.push_back(std::move(e));
      } else if (!block(s->else_body, "after 'else'")) {
        return fail();
      }
    }
    return s;
  }

  // ---- expressions ----
  // expr := or_expr ['?' expr ':' expr]
  ExprPtr expr() {
    if (++depth_ > kMaxDepth) {
      error_here("expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
      --depth_;
      give_up();
      return nullptr;
    }
    if (depth_ == 1) operators_ = 0;
    ExprPtr e = ternary();
    --depth_;
    return e;
  }
  ExprPtr ternary() {
    ExprPtr c = binary(0);
    if (!c || !at(Tok::question)) return c;
    ++pos_;
    auto t = std::make_unique<Expr>();
    t->kind = ExprKind::ternary;
    t->span = c->span;
    ExprPtr a = expr();
    if (!a || !expect(Tok::colon, "in a conditional expression")) return nullptr;
    ExprPtr b = expr();
    if (!b) return nullptr;
    t->kids.push_back(std::move(c));
    t->kids.push_back(std::move(a));
    t->kids.push_back(std::move(b));
    t->span = span_from(t->span);
    return t;
  }
  /// Binary precedence, lowest first: || ; && ; == != ; < <= > >= ; | ; ^ ; & ; << >> ;
  /// + - ; * / %. Bitwise operators bind tighter than comparisons (unlike C).
  static int prec(Tok t) {
    switch (t) {
      case Tok::pipepipe: return 1;
      case Tok::ampamp: return 2;
      case Tok::eq: case Tok::ne: return 3;
      case Tok::lt: case Tok::le: case Tok::gt: case Tok::ge: return 4;
      case Tok::pipe: return 5;
      case Tok::caret: return 6;
      case Tok::amp: return 7;
      case Tok::shl: case Tok::shr: return 8;
      case Tok::plus: case Tok::minus: return 9;
      case Tok::star: case Tok::slash: case Tok::percent: return 10;
      default: return 0;
    }
  }
  ExprPtr binary(int min_prec) {
    ExprPtr lhs = unary();
    while (lhs) {
      const Tok op = cur().kind;
      const int pr = prec(op);
      if (pr == 0 || pr <= min_prec) break;
      if (op == Tok::slash && no_slash_) break;
      if (++operators_ > kMaxOperators) {
        error_here("expression has more than " + std::to_string(kMaxOperators) + " binary operators");
        give_up();
        return nullptr;
      }
      ++pos_;
      ExprPtr rhs = binary(pr);
      if (!rhs) return nullptr;
      auto b = std::make_unique<Expr>();
      b->kind = ExprKind::binary;
      b->op = op;
      b->span = lhs->span;
      b->kids.push_back(std::move(lhs));
      b->kids.push_back(std::move(rhs));
      b->span = span_from(b->span);
      lhs = std::move(b);
    }
    return lhs;
  }
  // unary := ('-' | '!' | '~') unary | primary
  ExprPtr unary() {
    if (at(Tok::minus) || at(Tok::bang) || at(Tok::tilde)) {
      auto u = std::make_unique<Expr>();
      u->kind = ExprKind::unary;
      u->op = cur().kind;
      u->span = cur().span;
      ++pos_;
      if (++depth_ > kMaxDepth) {
        error_here("expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
        --depth_;
        give_up();
        return nullptr;
      }
      ExprPtr k = unary();
      --depth_;
      if (!k) return nullptr;
      u->kids.push_back(std::move(k));
      u->span = span_from(u->span);
      return u;
    }
    return primary();
  }
  ExprPtr node(ExprKind k, const Span& s) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->span = s;
    return e;
  }
  /// Parses '(' expr {',' expr} ')' into e->kids, with `/` allowed inside.
  bool args(Expr& e, const char* what) {
    if (!expect(Tok::lparen, what)) return false;
    const bool saved = no_slash_;
    no_slash_ = false;
    if (!at(Tok::rparen)) {
      do {
        ExprPtr a = expr();
        if (!a) { no_slash_ = saved; return false; }
        e.kids.push_back(std::move(a));
      } while (accept(Tok::comma));
    }
    no_slash_ = saved;
    return expect(Tok::rparen, "to close the argument list");
  }
  // primary := INT | 'true' | 'false' | IDENT ['(' args ')'] | '(' expr ')' | 'all' | 'none'
  //          | 'block' '(' expr ')' | '[' expr ',' expr ')' | 'wrap' '[' expr ',' expr ')'
  //          | 'stride' '(' expr ',' expr ',' expr ')' | '{' IDENT 'in' expr 'if' expr '}'
  ExprPtr primary() {
    const Token t = cur();
    switch (t.kind) {
      case Tok::integer: { ++pos_; auto e = node(ExprKind::integer, t.span); e->value = t.value; return e; }
      case Tok::kw_true: case Tok::kw_false: {
        ++pos_;
        auto e = node(ExprKind::boolean, t.span);
        e->value = t.kind == Tok::kw_true;
        return e;
      }
      case Tok::ident: {
        ++pos_;
        if (at(Tok::lparen)) {
          auto e = node(ExprKind::call, t.span);
          e->name = t.text;
          if (!args(*e, "")) return nullptr;
          e->span = span_from(e->span);
          return e;
        }
        auto e = node(ExprKind::name, t.span);
        e->name = t.text;
        return e;
      }
      case Tok::lparen: {
        ++pos_;
        const bool saved = no_slash_;
        no_slash_ = false;
        ExprPtr e = expr();
        no_slash_ = saved;
        if (!e || !expect(Tok::rparen, "to close the parenthesis")) return nullptr;
        return e;
      }
      case Tok::kw_all: ++pos_; return node(ExprKind::set_all, t.span);
      case Tok::kw_none: ++pos_; return node(ExprKind::set_none, t.span);
      case Tok::kw_block: {
        ++pos_;
        auto e = node(ExprKind::set_block, t.span);
        if (!args(*e, "after 'block'")) return nullptr;
        if (e->kids.size() != 1) { diags_.error(e->span, "'block' takes one argument (a block index)"); return nullptr; }
        e->span = span_from(e->span);
        return e;
      }
      case Tok::kw_stride: {
        ++pos_;
        auto e = node(ExprKind::set_stride, t.span);
        if (!args(*e, "after 'stride'")) return nullptr;
        e->span = span_from(e->span);
        if (e->kids.size() != 3) { diags_.error(e->span, "'stride' takes three arguments (first, step, count)"); return nullptr; }
        return e;
      }
      case Tok::kw_wrap: {
        ++pos_;
        if (!at(Tok::lbracket)) { error_here("expected '[' after 'wrap', found " + describe(cur())); return nullptr; }
        ExprPtr e = range(t.span);
        if (e) e->kind = ExprKind::set_wrap;
        return e;
      }
      case Tok::lbracket: return range(t.span);
      case Tok::lbrace: {
        ++pos_;
        auto e = node(ExprKind::set_filter, t.span);
        // On an error, skip the rest of the comprehension: statement recovery would take
        // its 'if' for a statement and its '}' for the end of the enclosing block.
        if (!at(Tok::ident)) {
          error_here("expected a block variable in a set comprehension, found " + describe(cur()));
          skip_past(Tok::rbrace);
          return nullptr;
        }
        e->name = cur().text;
        ++pos_;
        if (!expect(Tok::kw_in, "in a set comprehension")) { skip_past(Tok::rbrace); return nullptr; }
        const bool saved = no_slash_;
        no_slash_ = false;
        ExprPtr s = expr();
        if (!s || !expect(Tok::kw_if, "in a set comprehension")) { no_slash_ = saved; skip_past(Tok::rbrace); return nullptr; }
        ExprPtr c = expr();
        no_slash_ = saved;
        if (!c) { skip_past(Tok::rbrace); return nullptr; }
        if (!expect(Tok::rbrace, "to close the set comprehension")) { skip_past(Tok::rbrace); return nullptr; }
        e->kids.push_back(std::move(s));
        e->kids.push_back(std::move(c));
        e->span = span_from(e->span);
        return e;
      }
      default:
        error_here("expected an expression, found " + describe(t));
        return nullptr;
    }
  }
  // range := '[' expr ',' expr ')'
  ExprPtr range(const Span& start) {
    auto e = node(ExprKind::set_range, start);
    expect(Tok::lbracket, "");
    const bool saved = no_slash_;
    no_slash_ = false;
    ExprPtr a = expr();
    if (!a || !expect(Tok::comma, "in a block range '[a, b)'")) { no_slash_ = saved; return nullptr; }
    ExprPtr b = expr();
    no_slash_ = saved;
    if (!b) return nullptr;
    if (!at(Tok::rparen)) {
      error_here(std::string("expected ')' to close the half-open block range '[a, b)', found ") + describe(cur()));
      return nullptr;
    }
    ++pos_;
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    e->span = span_from(e->span);
    return e;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  Program& prog_;
  DiagnosticSink& diags_;
  bool no_slash_ = false;
  bool in_schedule_ = false;
  int depth_ = 0;       ///< expression nesting
  int stmt_depth_ = 0;  ///< statement nesting
  int operators_ = 0;   ///< binary operators in the current top-level expression
  size_t last_error_tok_ = size_t(-1);
};

}  // namespace

void parse_file(const SourceFile& file, Program& program, DiagnosticSink& diags) {
  Parser(file, program, diags).parse_file();
}

}  // namespace bine
