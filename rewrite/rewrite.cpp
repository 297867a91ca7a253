// bine-cc-rewrite: rewrites chosen MPI collective call sites in C/C++ sources to generated
// functions (`bcc_<schedule>`, same arguments, size_t counts; docs/architecture.md "Emitter
// and runtime contract"), adds the generated header's #include, and reports every site it
// leaves alone. Run as `bine-cc rewrite ...` (docs/rewrite.md).
//
// Only the callee's name token is replaced (clang::Rewriter on the DeclRefExpr's location),
// so the arguments, formatting and comments stay byte for byte. Conservative: a call whose
// name comes from a macro expansion, a use of the function other than a direct call (its
// address taken: calls through that pointer cannot be followed), a call through a function
// pointer of a collective's type, and a call whose datatype or operator argument is not a
// predefined MPI handle are reported (file:line:col: why) and not touched.
#include <clang/AST/ASTConsumer.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Rewrite/Core/Rewriter.h>
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CommonOptionsParser.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace clang;
namespace cl = llvm::cl;

cl::OptionCategory category("bine-cc rewrite options");

/// One MPI collective the tool can rewrite: its C name, the option that picks the generated
/// function, and the argument positions (0-based) of its datatype and operator handles.
struct Collective {
  const char* mpi;
  const char* option;
  std::vector<unsigned> datatypes;
  int op;  // -1: none
  const char* key;  // the selection table's key: the dispatcher is <prefix><key> (--dispatch)
};

const std::vector<Collective>& collectives() {
  static const std::vector<Collective> c = {
      {"MPI_Allreduce", "allreduce", {3}, 4, "allreduce"},
      {"MPI_Bcast", "bcast", {2}, -1, "bcast"},
      {"MPI_Reduce", "reduce", {3}, 4, "reduce"},
      {"MPI_Allgather", "allgather", {2, 5}, -1, "allgather"},
      {"MPI_Gather", "gather", {2, 5}, -1, "gather"},
      {"MPI_Scatter", "scatter", {2, 5}, -1, "scatter"},
      {"MPI_Reduce_scatter_block", "reduce-scatter-block", {3}, 4, "reduce_scatter_block"},
      {"MPI_Alltoall", "alltoall", {2, 5}, -1, "alltoall"},
  };
  return c;
}

cl::opt<std::string> opt_allreduce("allreduce",
                                   cl::desc("generated function for MPI_Allreduce (e.g. bcc_bine_allreduce_lat)"),
                                   cl::value_desc("function"), cl::cat(category));
cl::opt<std::string> opt_bcast("bcast", cl::desc("generated function for MPI_Bcast"), cl::value_desc("function"),
                               cl::cat(category));
cl::opt<std::string> opt_reduce("reduce", cl::desc("generated function for MPI_Reduce"), cl::value_desc("function"),
                                cl::cat(category));
cl::opt<std::string> opt_allgather("allgather", cl::desc("generated function for MPI_Allgather"),
                                   cl::value_desc("function"), cl::cat(category));
cl::opt<std::string> opt_gather("gather", cl::desc("generated function for MPI_Gather"), cl::value_desc("function"),
                                cl::cat(category));
cl::opt<std::string> opt_scatter("scatter", cl::desc("generated function for MPI_Scatter"), cl::value_desc("function"),
                                 cl::cat(category));
cl::opt<std::string> opt_rsb("reduce-scatter-block", cl::desc("generated function for MPI_Reduce_scatter_block"),
                             cl::value_desc("function"), cl::cat(category));
cl::opt<std::string> opt_alltoall("alltoall", cl::desc("generated function for MPI_Alltoall"),
                                  cl::value_desc("function"), cl::cat(category));
cl::opt<bool> opt_dispatch("dispatch",
                           cl::desc("every collective without a function of its own goes to the dispatcher "
                                    "<prefix><collective> (bine-cc compile --dispatch TABLE); calls with derived "
                                    "datatypes or user operators are rewritten too (the dispatcher decides per call)"),
                           cl::cat(category));
cl::opt<std::string> opt_prefix("prefix", cl::desc("prefix of the dispatchers' names (default bcc_)"),
                                cl::init("bcc_"), cl::cat(category));
cl::opt<std::string> opt_header("header", cl::desc("the generated header to #include (default bine_lib.h)"),
                                cl::init("bine_lib.h"), cl::cat(category));
cl::opt<bool> opt_dry_run("dry-run", cl::desc("print a unified diff of the rewrite instead of writing files"),
                          cl::cat(category));
cl::opt<std::string> opt_outdir("o", cl::desc("write the rewritten files into this directory (default: in place)"),
                                cl::value_desc("dir"), cl::cat(category));

std::string target_of(const std::string& option) {
  static const std::map<std::string, cl::opt<std::string>*> by = {
      {"allreduce", &opt_allreduce},      {"bcast", &opt_bcast},      {"reduce", &opt_reduce},
      {"allgather", &opt_allgather},      {"gather", &opt_gather},    {"scatter", &opt_scatter},
      {"reduce-scatter-block", &opt_rsb}, {"alltoall", &opt_alltoall}};
  return by.at(option)->getValue();
}

/// The function replacing collective c: its own option's, else with --dispatch its dispatcher.
std::string function_for(const Collective& c) {
  const std::string fn = target_of(c.option);
  return fn.empty() && opt_dispatch ? opt_prefix + c.key : fn;
}

/// True when `fn` is a dispatcher (chosen by --dispatch, not by the collective's option).
bool is_dispatcher(const Collective& c) { return target_of(c.option).empty() && opt_dispatch; }

const Collective* collective_named(llvm::StringRef name) {
  for (const Collective& c : collectives())
    if (name == c.mpi) return &c;
  return nullptr;
}

/// A path as shown in notes and diffs: relative to the working directory when under it (the
/// tool sees absolute paths), so that the output does not depend on where the checkout lives.
/// (The working directory at start: ClangTool enters each compile command's directory.)
std::string start_dir;
std::string shown(const std::string& path) {
  if (start_dir.empty()) return path;
  const std::string prefix = start_dir + "/";
  return llvm::StringRef(path).startswith(prefix) ? path.substr(prefix.size()) : path;
}

/// One rewritten main file: its text before and after.
struct Result {
  std::string before, after;
  int rewritten = 0;
};
std::map<std::string, Result> results;  // by file name as given, ordered: deterministic output
std::vector<std::string> notes;         // "file:line:col: note: ..." in source order per file
std::set<std::string> noted;
int total_skipped = 0;

class Visitor : public RecursiveASTVisitor<Visitor> {
 public:
  Visitor(ASTContext& ctx, Rewriter& rw) : ctx_(ctx), sm_(ctx.getSourceManager()), rw_(rw) {}

  bool VisitFunctionDecl(FunctionDecl* fd) {
    if (fd->getIdentifier() && collective_named(fd->getName()) && fd->isExternC()) {
      mpi_types_[ctx_.getCanonicalType(fd->getType()).getAsOpaquePtr()] = fd->getName().str();
      // The MPI implementation's own headers (e.g. Open MPI's C++ bindings call the C
      // functions) are neither rewritten nor reported.
      if (mpi_dir_.empty()) {
        const std::string f = sm_.getFilename(sm_.getExpansionLoc(fd->getLocation())).str();
        mpi_dir_ = llvm::sys::path::parent_path(f).str();
      }
    }
    return true;
  }

  bool VisitCallExpr(CallExpr* call) {
    Expr* callee = call->getCallee()->IgnoreParenImpCasts();
    if (auto* dre = dyn_cast<DeclRefExpr>(callee))
      if (auto* fd = dyn_cast<FunctionDecl>(dre->getDecl())) {
        if (fd->getIdentifier() && collective_named(fd->getName())) {
          callees_.insert(dre);
          rewrite_site(call, dre->getLocation(), *collective_named(fd->getName()));
        }
        return true;
      }
    // In a template, a call with type-dependent arguments names the function through an
    // UnresolvedLookupExpr; it is rewritten when the name finds only the MPI function.
    if (auto* ule = dyn_cast<UnresolvedLookupExpr>(callee)) {
      const Collective* c = collective_named(ule->getName().getAsString());
      bool only_mpi = c != nullptr && ule->getNumDecls() > 0;
      for (NamedDecl* d : ule->decls()) {
        auto* fd = dyn_cast<FunctionDecl>(d->getUnderlyingDecl());
        only_mpi &= fd != nullptr && fd->isExternC();
      }
      if (only_mpi) rewrite_site(call, ule->getNameLoc(), *c);
      return true;
    }
    // A call through a function pointer: report it when the pointee type is a collective's.
    QualType t = callee->getType();
    if (const auto* pt = t->getAs<PointerType>()) t = pt->getPointeeType();
    auto it = mpi_types_.find(ctx_.getCanonicalType(t).getAsOpaquePtr());
    if (it != mpi_types_.end())
      note(call->getBeginLoc(),
           "not rewritten: a call through a function pointer of " + it->second + "'s type (the callee is not known)");
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr* dre) {
    auto* fd = dyn_cast<FunctionDecl>(dre->getDecl());
    if (!fd || !fd->getIdentifier() || !collective_named(fd->getName()) || callees_.count(dre)) return true;
    note(dre->getLocation(),
         "not rewritten: " + fd->getName().str() + " used as a function pointer (calls through it are not rewritten)");
    return true;
  }

 private:
  bool ours(SourceLocation loc) {
    const SourceLocation e = sm_.getExpansionLoc(loc);
    if (e.isInvalid() || sm_.isInSystemHeader(e)) return false;
    const std::string f = sm_.getFilename(e).str();
    return mpi_dir_.empty() || !llvm::StringRef(f).startswith(mpi_dir_ + "/");
  }

  void note(SourceLocation loc, const std::string& why) {
    if (!ours(loc)) return;
    const PresumedLoc p = sm_.getPresumedLoc(sm_.getFileLoc(loc));
    // The name as the compile command gives it may be relative to the command's directory.
    llvm::SmallString<256> file(p.getFilename());
    sm_.getFileManager().getVirtualFileSystem().makeAbsolute(file);
    llvm::sys::path::remove_dots(file, /*remove_dot_dot=*/true);
    std::string n = shown(std::string(file)) + ":" + std::to_string(p.getLine()) + ":" + std::to_string(p.getColumn()) +
                    ": note: " + why;
    // A header parsed with several sources reports its sites once.
    if (!noted.insert(n).second) return;
    notes.push_back(n);
    ++total_skipped;
  }

  /// The source text of an argument, when it is written in the file (possibly as one macro
  /// name such as MPI_INT, which expands to the implementation's handle).
  std::string spelled(const Expr* e) {
    const CharSourceRange r =
        Lexer::makeFileCharRange(CharSourceRange::getTokenRange(e->getSourceRange()), sm_, ctx_.getLangOpts());
    if (r.isInvalid()) return "";
    return Lexer::getSourceText(r, sm_, ctx_.getLangOpts()).str();
  }

  /// A call of collective c by name, the name's token at `name`.
  void rewrite_site(CallExpr* call, SourceLocation name, const Collective& c) {
    if (!ours(call->getBeginLoc())) return;
    if (name.isMacroID()) {
      note(name,
           std::string("not rewritten: ") + c.mpi +
               (sm_.isMacroArgExpansion(name) ? " is called inside a macro argument" : " is called from a macro body"));
      return;
    }
    if (!sm_.isInMainFile(name)) {
      note(name, std::string("not rewritten: ") + c.mpi + " is called in an included file (rewrite its sources)");
      return;
    }
    const std::string fn = function_for(c);
    if (fn.empty()) {
      note(name, std::string("not rewritten: no generated function chosen for ") + c.mpi + " (--" + c.option + ")");
      return;
    }
    // A dispatcher takes any datatype and checks the operator's commutativity per call (it
    // runs only order-preserving schedules for a non-commutative one), so no handle check.
    static const std::regex handle("MPI_[A-Z][A-Z0-9_]*");
    for (unsigned i : is_dispatcher(c) ? std::vector<unsigned>{} : c.datatypes) {
      const std::string s = i < call->getNumArgs() ? spelled(call->getArg(i)) : "";
      if (!std::regex_match(s, handle) || s == "MPI_DATATYPE_NULL") {
        note(name, std::string("not rewritten: datatype argument '") + s +
                       "' is not a predefined MPI datatype (the generated functions take contiguous types only)");
        return;
      }
    }
    if (c.op >= 0 && !is_dispatcher(c)) {
      const std::string s = unsigned(c.op) < call->getNumArgs() ? spelled(call->getArg(unsigned(c.op))) : "";
      if (!std::regex_match(s, handle) || s == "MPI_OP_NULL") {
        note(name, std::string("not rewritten: operator argument '") + s +
                       "' is not a predefined MPI operator (it may be non-commutative; the schedule would "
                       "have to be order-preserving)");
        return;
      }
    }
    rw_.ReplaceText(name, unsigned(std::string(c.mpi).size()), fn);
    ++rewritten_;
  }

 public:
  int rewritten_ = 0;

 private:
  ASTContext& ctx_;
  SourceManager& sm_;
  Rewriter& rw_;
  std::set<const DeclRefExpr*> callees_;
  std::map<void*, std::string> mpi_types_;
  std::string mpi_dir_;
};

class Consumer : public ASTConsumer {
 public:
  explicit Consumer(Rewriter& rw) : rw_(rw) {}
  void HandleTranslationUnit(ASTContext& ctx) override {
    Visitor v(ctx, rw_);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
    rewritten = v.rewritten_;
  }
  int rewritten = 0;

 private:
  Rewriter& rw_;
};

/// After the include of mpi.h (or at the top of the file), unless it is already included.
std::string add_include(const std::string& text) {
  const std::string inc = "#include \"" + opt_header.getValue() + "\"";
  const std::regex already("^[ \t]*#[ \t]*include[ \t]*[<\"]" +
                           std::regex_replace(opt_header.getValue(), std::regex("[.^$|()\\[\\]{}*+?\\\\]"), "\\$&") +
                           "[>\"]");
  const std::regex mpi_h("^[ \t]*#[ \t]*include[ \t]*[<\"]mpi\\.h[>\"][^\n]*\n?");
  size_t pos = 0;
  std::string out;
  bool placed = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string line = text.substr(pos, end - pos);
    if (std::regex_search(line, already)) return text;
    out += line;
    if (!placed && std::regex_search(line, mpi_h)) {
      if (!line.empty() && line.back() != '\n') out += '\n';
      out += inc + "\n";
      placed = true;
    }
    pos = end;
  }
  return placed ? out : inc + "\n" + text;
}

class Action : public ASTFrontendAction {
 public:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, llvm::StringRef) override {
    rw_.setSourceMgr(ci.getSourceManager(), ci.getLangOpts());
    auto c = std::make_unique<Consumer>(rw_);
    consumer_ = c.get();
    return c;
  }
  void EndSourceFileAction() override {
    if (getCompilerInstance().getDiagnostics().hasErrorOccurred()) return;
    SourceManager& sm = rw_.getSourceMgr();
    const FileID main = sm.getMainFileID();
    // Absolute: the compile command's file may be relative to its directory.
    llvm::SmallString<256> abs(sm.getFileEntryForID(main)->getName());
    sm.getFileManager().getVirtualFileSystem().makeAbsolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    const std::string file(abs);
    Result r;
    r.before = sm.getBufferData(main).str();
    r.rewritten = consumer_ ? consumer_->rewritten : 0;
    if (const RewriteBuffer* b = rw_.getRewriteBufferFor(main))
      r.after = std::string(b->begin(), b->end());
    else
      r.after = r.before;
    if (r.rewritten > 0) r.after = add_include(r.after);
    results[file] = r;
  }

 private:
  Rewriter rw_;
  Consumer* consumer_ = nullptr;
};

/// `diff -u` of the two texts (GNU diffutils), labelled a/FILE and b/FILE.
int print_diff(const std::string& file, const Result& r) {
  llvm::SmallString<128> a, b;
  if (llvm::sys::fs::createTemporaryFile("bine-rewrite-a", "txt", a) ||
      llvm::sys::fs::createTemporaryFile("bine-rewrite-b", "txt", b))
    return -1;
  {
    std::error_code ec;
    llvm::raw_fd_ostream oa(a, ec), ob(b, ec);
    oa << r.before;
    ob << r.after;
  }
  llvm::outs().flush();
  auto diff = llvm::sys::findProgramByName("diff");
  int rc = -1;
  if (diff) {
    const std::string f = shown(file), sep = f.rfind('/', 0) == 0 ? "" : "/";
    const std::string la = "a" + sep + f, lb = "b" + sep + f;
    std::vector<llvm::StringRef> args = {*diff, "-u", "--label", la, "--label", lb, a, b};
    rc = llvm::sys::ExecuteAndWait(*diff, args);
  } else {
    llvm::errs() << "bine-cc rewrite: error: 'diff' (GNU diffutils) not found for --dry-run\n";
  }
  llvm::sys::fs::remove(a);
  llvm::sys::fs::remove(b);
  return rc;
}

}  // namespace

int main(int argc, const char** argv) {
  llvm::SmallString<256> cwd;
  if (!llvm::sys::fs::current_path(cwd)) start_dir = std::string(cwd);
  cl::extrahelp more(
      "\nRewrites direct calls of the chosen MPI collectives to generated functions (bine-cc compile --target mpi)\n"
      "and adds #include \"<header>\"; sites it leaves alone are reported as notes. docs/rewrite.md.\n"
      "Example: bine-cc rewrite -p build --allreduce bcc_bine_allreduce_lat --dry-run src/app.c\n");
  auto parser = tooling::CommonOptionsParser::create(argc, argv, category, cl::OneOrMore);
  if (!parser) {
    llvm::errs() << parser.takeError();
    return 2;
  }
  bool any = false;
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
  if (opt_dispatch && !std::regex_match(opt_prefix.getValue(), ident) && !opt_prefix.empty()) {
    llvm::errs() << "bine-cc rewrite: error: --prefix '" << opt_prefix << "' is not a C identifier\n";
    return 2;
  }
  for (const Collective& c : collectives()) {
    const std::string fn = function_for(c);
    if (fn.empty()) continue;
    any = true;
    if (!std::regex_match(fn, ident)) {
      llvm::errs() << "bine-cc rewrite: error: --" << c.option << " '" << fn << "' is not a C identifier\n";
      return 2;
    }
  }
  if (!any) {
    llvm::errs() << "bine-cc rewrite: error: choose at least one generated function (--allreduce, --bcast, --reduce, "
                    "--allgather, --gather, --scatter, --reduce-scatter-block, --alltoall) or --dispatch\n";
    return 2;
  }
  if (opt_dry_run && !opt_outdir.empty()) {
    llvm::errs() << "bine-cc rewrite: error: --dry-run and -o exclude each other\n";
    return 2;
  }
  tooling::ClangTool tool(parser->getCompilations(), parser->getSourcePathList());
  // Warnings are not the rewriter's business: -Werror in the build's flags (and warnings
  // clang gives where the build's compiler does not) must not stop a rewrite.
  tool.appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" BINE_CLANG_RESOURCE_DIR, "-w", "-Wno-error"}, tooling::ArgumentInsertPosition::END));
  const int rc = tool.run(tooling::newFrontendActionFactory<Action>().get());
  // Notes in source order, sources in the order given.
  for (const std::string& n : notes) llvm::errs() << n << "\n";
  if (rc != 0) {
    llvm::errs() << "bine-cc rewrite: error: the sources did not parse; nothing written\n";
    return 1;
  }
  if (!opt_outdir.empty()) {
    std::map<std::string, std::string> by_name;
    for (const auto& [file, r] : results) {
      const std::string name = llvm::sys::path::filename(file).str();
      if (by_name.count(name)) {
        llvm::errs() << "bine-cc rewrite: error: -o " << opt_outdir << ": " << shown(by_name[name]) << " and "
                     << shown(file) << " have the same file name; nothing written\n";
        return 2;
      }
      by_name[name] = file;
    }
  }
  int rewritten = 0;
  for (auto& [file, r] : results) {
    rewritten += r.rewritten;
    if (opt_dry_run) {
      if (r.before != r.after && print_diff(file, r) < 0) return 1;
      continue;
    }
    std::string out = file;
    if (!opt_outdir.empty()) {
      if (std::error_code ec = llvm::sys::fs::create_directories(opt_outdir.getValue())) {
        llvm::errs() << "bine-cc rewrite: error: cannot create " << opt_outdir << ": " << ec.message() << "\n";
        return 1;
      }
      llvm::SmallString<256> p(opt_outdir.getValue());
      llvm::sys::path::append(p, llvm::sys::path::filename(file));
      out = std::string(p);
    } else if (r.before == r.after) {
      continue;
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(out, ec);
    if (ec) {
      llvm::errs() << "bine-cc rewrite: error: cannot write " << out << ": " << ec.message() << "\n";
      return 1;
    }
    os << r.after;
  }
  llvm::errs() << "bine-cc rewrite: " << rewritten << " call" << (rewritten == 1 ? "" : "s") << " rewritten, "
               << total_skipped << " site" << (total_skipped == 1 ? "" : "s") << " left alone, in " << results.size()
               << " file" << (results.size() == 1 ? "" : "s") << "\n";
  return 0;
}
