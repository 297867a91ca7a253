// bine-cc: the command line. Thin: every command is a library call (check.h, instantiate.h,
// emit_mpi.h) that the tests also use.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <new>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iostream>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>
#include <chrono>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "bine/builtins.hpp"
#include "resource.h"
#include "check.h"
#include "cost.h"
#include "draw.h"
#include "emit_body.h"
#include "pipeline.h"
#include "target.h"
#include "instantiate.h"
#include "machine.h"
#include "parametric.h"
#include "schedule.h"
#include "sema.h"
#include "synth_cmd.h"
#include "traffic.h"
#include "tune.h"

namespace {

using namespace bine;

struct Common {
  std::vector<std::string> files;
  std::string format = "text";
  std::vector<std::string> only;
  std::string regions;  ///< --regions SPEC: the layout of the region built-ins (docs/topology.md)
  bool log_passes = false;  ///< --log-passes (check, compile): each pipeline stage and its time on stderr
};

/// The --regions spec of ranks placed by `region` ([rank] region id, e.g. a machine's nodes).
std::string region_map_spec(const std::vector<int64_t>& region) {
  std::string s = "map:";
  for (size_t i = 0; i < region.size(); ++i) s += (i ? "," : "") + std::to_string(region[i]);
  return s;
}

void print_diags(const DiagnosticSink& d, const std::string& format) {
  if (format == "json") {
    std::cerr << render_json(d.all());
    return;
  }
  for (const Diagnostic& x : d.all()) std::cerr << render_text(x);
  if (d.error_count() > 0)
    std::cerr << d.error_count() << " error" << (d.error_count() == 1 ? "" : "s") << " generated.\n";
}

/// An error without a source location ("bine-cc: error: MSG" on stderr), in the chosen
/// diagnostics format: with json, one JSON diagnostic instead of text.
void report_error(const std::string& format, const std::string& msg) {
  if (format == "json") {
    DiagnosticSink d;
    d.error(Span{}, msg);
    print_diags(d, format);
    return;
  }
  std::cerr << "bine-cc: error: " << msg << "\n";
}

bool parse_ranks(const std::string& s, int64_t& lo, int64_t& hi) {
  try {
    const size_t dots = s.find("..");
    size_t used = 0;
    if (dots == std::string::npos) {
      lo = hi = std::stoll(s, &used);
      if (used != s.size()) return false;
    } else {
      lo = std::stoll(s.substr(0, dots), &used);
      if (used != dots) return false;
      const std::string rest = s.substr(dots + 2);
      hi = std::stoll(rest, &used);
      if (used != rest.size()) return false;
    }
  } catch (...) {
    return false;
  }
  return lo >= 1 && hi >= lo && hi <= (int64_t(1) << 20);
}

std::vector<const ScheduleDecl*> selected(const Program& prog, const std::vector<std::string>& only,
                                          DiagnosticSink& d) {
  std::vector<const ScheduleDecl*> out;
  for (const ScheduleDecl& s : prog.schedules)
    if (only.empty() || std::find(only.begin(), only.end(), s.name) != only.end()) out.push_back(&s);
  for (const std::string& n : only) {
    bool found = false;
    for (const ScheduleDecl& s : prog.schedules) found |= s.name == n;
    if (!found) d.error(Span{}, "no schedule named '" + n + "' in the input files");
  }
  return out;
}

/// An input without a schedule (empty, or only `fn`s) is an error of every verb that works
/// on schedules (check, lower, compile, tune, traffic; issue 47): `what` says what is not
/// done. Located at the start of the first file. False when the input has no schedule.
bool require_schedules(const Program& prog, DiagnosticSink& diags, const char* what) {
  if (!prog.schedules.empty()) return true;
  Span start;
  if (!prog.files.empty()) start = Span{prog.files.front().get(), 0, 0, 1, 1};
  diags.error(start, std::string("no schedule in the input files: ") + what);
  return false;
}

/// "svg" or "png": `format` when given, else from the output's extension (".png": png).
std::string draw_format(const std::string& format, const std::string& out) {
  if (!format.empty()) return format;
  return out.size() >= 4 && out.compare(out.size() - 4, 4, ".png") == 0 ? "png" : "svg";
}

/// Draws `sch` (docs/draw.md) and writes it to `out` ("-": standard output, SVG only).
/// Failures (PNG conversion, an unwritable path) are errors in `diags`; a heat map (p
/// too large for a step diagram) is a warning. Nothing is written when it fails.
bool write_drawing(const Schedule& sch, const DrawOptions& opt, const std::string& format, const std::string& out,
                   DiagnosticSink& diags) {
  if (draw_uses_heat_map(sch, opt))
    diags.warning(Span{}, "p=" + std::to_string(sch.p) + " is above " + std::to_string(opt.max_diagram_p) +
                              ": drawn as a heat map (rank x round, " + (opt.bytes > 0 ? "bytes" : "blocks") +
                              " sent); draw a smaller p for the step diagram");
  const ActivityScope activity("drawing " + sch.name + " at p=" + std::to_string(sch.p));
  std::string bytes = draw_svg(sch, opt);
  if (format == "png") {
    std::string png, err;
    if (!svg_to_png(bytes, png, err)) {
      diags.error(Span{}, "cannot convert the drawing to PNG: " + err);
      return false;
    }
    bytes = std::move(png);
  }
  if (out == "-") {
    std::cout << bytes;
    return true;
  }
  std::ofstream f(out, std::ios::binary);
  if (!(f << bytes) || !(f.flush())) {
    diags.error(Span{}, "cannot write '" + out + "'");
    return false;
  }
  return true;
}

/// The process's peak resident memory so far (getrusage), bytes.
uint64_t peak_rss_bytes() {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? uint64_t(ru.ru_maxrss) * 1024 : 0;
}

/// `check --stats` (docs/verifier.md, "Memory"): the largest verified instance's accounted
/// memory, the process's peak so far and the schedule's time, one line under the summary.
std::string stats_line(const ScheduleDecl& s, const CheckReport& r, double seconds) {
  std::string l = "  stats: ";
  if (r.max_accounted_bytes == 0) {
    l += "no instance verified";
  } else {
    l += "largest instance p=" + std::to_string(r.max_bytes_p) +
         (collective_is_rooted(s.collective) ? " root=" + std::to_string(r.max_bytes_root) : std::string()) + ": " +
         format_bytes(r.max_accounted_bytes) + " accounted (instance " + format_bytes(r.max_instance_bytes) + ", verifier " +
         format_bytes(r.max_accounted_bytes - r.max_instance_bytes) + ")";
  }
  char t[32];
  std::snprintf(t, sizeof t, "%.2f", seconds);
  return l + "; process peak " + format_bytes(peak_rss_bytes()) + "; " + t + " s\n";
}
nlohmann::json stats_json(const CheckReport& r, double seconds) {
  return {{"accounted_bytes", r.max_accounted_bytes}, {"instance_bytes", r.max_instance_bytes},
          {"verifier_bytes", r.max_accounted_bytes - r.max_instance_bytes}, {"p", r.max_bytes_p}, {"root", r.max_bytes_root},
          {"peak_rss_bytes", peak_rss_bytes()}, {"seconds", seconds}};
}

/// Loads the input files into `prog`; on bad input prints the diagnostics and returns false.
bool load(const Common& c, Program& prog, DiagnosticSink& diags) {
  if (load_program(c.files, prog, diags)) return true;
  print_diags(diags, c.format);
  return false;
}

int cmd_check(const Common& c, const std::string& ranks, int64_t all_roots_up_to, bool quiet, bool json, const std::string& draw,
              bool smt, bool no_symmetry, bool landing, bool stats) {
  const auto ends_with = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return draw.size() > n && draw.compare(draw.size() - n, n, ext) == 0;
  };
  if (!draw.empty() && draw != "-" && !ends_with(".svg") && !ends_with(".png")) {
    std::cerr << "bine-cc: error: --draw writes SVG or PNG: the file name must end in .svg or .png, got '" << draw
              << "'\n";
    return 2;
  }
  DiagnosticSink diags;
  Program prog;
  CheckOptions opt;
  if (!parse_ranks(ranks, opt.p_lo, opt.p_hi)) {
    std::cerr << "bine-cc: error: --ranks expects A..B or P with 1 <= A <= B <= 1048576, got '" << ranks << "'\n";
    return 2;
  }
  opt.all_roots_up_to = all_roots_up_to;
  opt.symmetry = !no_symmetry;
  if (smt && !have_z3()) {
    report_error(c.format, "--smt needs z3, and this bine-cc was built without it (Debian: libz3-dev; docs/verifier.md)");
    return 2;
  }
  if (!load(c, prog, diags)) return 1;
  const auto todo = selected(prog, c.only, diags);
  require_schedules(prog, diags, "nothing to verify");
  bool all_ok = !diags.has_errors();
  CheckReport failed;  ///< the first failing schedule's report (check --draw)
  std::string failed_name;
  if (json) std::cout << "[";
  for (size_t i = 0; i < todo.size(); ++i) {
    const ScheduleDecl* s = todo[i];
    DiagnosticSink one;
    const auto started = std::chrono::steady_clock::now();
    PipelineOptions po;
    po.check = opt;
    po.landing = landing;
    po.log = c.log_passes ? &std::cerr : nullptr;
    PipelineResult res = run_pipeline(prog, *s, po, one);
    CheckReport& rep = res.report;
    if (!res.program) {  // lowering failed: not ok, at the range's first p
      rep.ok = false;
      rep.failed_p = opt.p_lo;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    all_ok &= rep.ok;
    // The static landing layout of a verified schedule (landing.h): one more JSON key, or
    // lines under the summary.
    std::string land;
    if (res.analysed) land = json ? landing_json(res.landing) : landing_lines(res.landing);
    if (json) {
      std::string j = report_json(*s, rep, opt);
      if (!land.empty() || stats) {  // more keys, the object's keys still sorted
        nlohmann::json o = nlohmann::json::parse(j);
        if (!land.empty()) o["landing"] = nlohmann::json::parse(land);
        if (stats) o["stats"] = stats_json(rep, seconds);
        j = o.dump();
      }
      std::cout << (i ? ",\n " : "\n ") << j;
    } else if (!quiet || !rep.ok) {
      std::cout << summary_line(*s, rep, opt) << "\n" << witness_lines(*s, rep) << land
                << (stats ? stats_line(*s, rep, seconds) : std::string());
    }
    for (const Diagnostic& d : one.all()) diags.error(d.span, d.message).notes = d.notes;
    if (!rep.ok && failed_name.empty()) {
      failed_name = s->name;
      failed = std::move(rep);
    }
  }
  if (json) std::cout << "\n]\n";
  // The rules the Bine schedules are built from, for every p = 2^k, k = 1..30
  // (docs/verifier.md#parametric-proofs-z3): one line per property after the schedules.
  if (smt)
    for (const ParametricResult& r : prove_partner_rules()) {
      std::cout << r.line() << "\n";
      if (!r.proved) {
        all_ok = false;
        diags.error(Span{}, "parametric proof failed: " + r.line().substr(std::string("parametric proofs (z3): ").size()));
      }
    }
  if (!draw.empty()) {
    if (failed_name.empty()) {
      diags.warning(Span{}, "nothing drawn to '" + draw + "': no instance failed");
    } else if (!failed.has_failed_instance) {
      diags.warning(Span{}, "nothing drawn to '" + draw + "': the failing instance of '" + failed_name + "' could not be built");
    } else {
      DrawOptions dopt;
      dopt.counterexample = &failed.counterexample;
      write_drawing(failed.failed_instance, dopt, draw_format("", draw), draw, diags);
    }
  }
  print_diags(diags, c.format);
  return all_ok ? 0 : 1;
}

int cmd_compile(const Common& c, const std::string& target_name, const std::string& out, const std::string& ranks,
                EmitOptions eopt, const std::string& dispatch_file) {
  DiagnosticSink diags;
  Program prog;
  const Target* target = find_target(target_name);
  if (!target) {
    std::cerr << "bine-cc: error: unknown target '" << target_name << "' (this version emits: " << target_names() << ")\n";
    return 2;
  }
  if (!valid_prefix(eopt.prefix)) {
    std::cerr << "bine-cc: error: --prefix must be empty or a C identifier ([A-Za-z_][A-Za-z0-9_]*), got '"
              << eopt.prefix << "'\n";
    return 2;
  }
  CheckOptions opt;
  if (!parse_ranks(ranks, opt.p_lo, opt.p_hi)) {
    std::cerr << "bine-cc: error: --verify-ranks expects A..B or P with 1 <= A <= B <= 1048576, got '" << ranks << "'\n";
    return 2;
  }
  SelectionTable table;  // --dispatch
  if (!dispatch_file.empty()) {
    if (!target->features().dispatch) {
      std::string with;
      for (const Target* t : targets())
        if (t->features().dispatch) with += (with.empty() ? "" : " and ") + std::string(t->name());
      report_error(c.format, std::string("--dispatch: target ") + target->name() + " has no dispatchers (the " + with +
                                 " targets do)");
      return 2;
    }
    std::ifstream in(dispatch_file, std::ios::binary);
    std::stringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
      report_error(c.format, "--dispatch: cannot read the selection table '" + dispatch_file + "'");
      return 2;
    }
    std::string error;
    if (!parse_selection_table(text.str(), dispatch_file, table, &error)) {
      report_error(c.format, "--dispatch: " + error);
      return 2;
    }
    eopt.dispatch = &table;
  }
  if (!load(c, prog, diags)) return 1;
  if (!require_schedules(prog, diags, "no header written")) {
    print_diags(diags, c.format);
    return 1;
  }
  std::vector<std::unique_ptr<RankProgram>> lowered;  // what the target reads
  std::vector<const RankProgram*> emit;
  std::vector<ProofSummary> proofs;
  const std::vector<const ScheduleDecl*> chosen = selected(prog, c.only, diags);
  // Every C name the target's files define (Target::defined_names): two equal names would
  // not link, an error at the (later) schedule.
  std::map<std::string, std::string> defined;  // name -> what defines it
  std::set<const ScheduleDecl*> clashing;
  for (const DefinedName& d : target->defined_names(chosen, eopt)) {
    const auto [it, fresh] = defined.emplace(d.name, d.what);
    if (fresh || !d.schedule) continue;
    diags.error(d.schedule->name_span, "the generated name '" + d.name + "' of schedule '" + d.schedule->name +
                                           "' is also defined by " + it->second + "; rename the schedule");
    clashing.insert(d.schedule);
  }
  PipelineOptions po;
  po.check = opt;
  po.target = target;
  po.emit = &eopt;
  po.log = c.log_passes ? &std::cerr : nullptr;
  for (const ScheduleDecl* s : chosen) {
    if (clashing.count(s)) continue;
    PipelineResult res = run_pipeline(prog, *s, po, diags);
    if (!res.program) continue;  // lowering's diagnostics are in diags
    if (!res.unsupported.empty()) {
      const std::string msg = std::string("target ") + target->name() + " does not support " + res.unsupported;
      if (!c.only.empty()) diags.error(s->name_span, msg);
      else diags.warning(s->name_span, "skipping " + s->name + ": " + msg);
      continue;
    }
    if (res.reserved_name) {
      diags.error(s->name_span, "the generated name '" + emitted_function_name(*s, eopt.prefix) +
                                    "' is a C/C++ keyword or an MPI name; choose another --prefix");
      continue;
    }
    if (!res.report.ok) {
      diags.error(s->name_span, "schedule '" + s->name + "' fails verification; not emitting it");
      continue;
    }
    emit.push_back(res.program.get());
    lowered.push_back(std::move(res.program));
    proofs.push_back(res.proof);
  }
  if (diags.has_errors()) {
    print_diags(diags, c.format);
    return 1;
  }
  if (eopt.dispatch) {
    const std::string why = check_dispatch_table(*eopt.dispatch, emit, eopt.prefix);
    if (!why.empty()) {
      print_diags(diags, c.format);
      report_error(c.format, "--dispatch: " + why);
      return 2;
    }
  }
  const ActivityScope activity("emitting the header");
  for (const EmittedFile& file : target->emit(emit, proofs, eopt)) {
    if (out.empty() || out == "-") {
      std::cout << file.text;
      continue;
    }
    std::ofstream f(out + file.suffix, std::ios::binary);
    if (!(f << file.text)) {
      report_error(c.format, "cannot write '" + out + file.suffix + "'");
      return 1;
    }
  }
  print_diags(diags, c.format);
  return 0;
}

/// Loads the files and instantiates the one selected schedule for (p, root), with
/// `commutative` as the checker sets it. Returns 0 with `sch` set, or the exit status
/// after printing the diagnostics (1: bad input, not applicable or failed instance).
int load_instance(const Common& c, int64_t p, int64_t root, Program& prog, DiagnosticSink& diags, Schedule& sch,
                  const ScheduleDecl** decl, bool force_commutative = false) {
  if (!load(c, prog, diags)) return 1;
  const auto todo = selected(prog, c.only, diags);
  if (todo.size() != 1) {
    if (!diags.has_errors())
      diags.error(Span{}, "the input holds " + std::to_string(todo.size()) + " schedules; choose one with --schedule NAME");
    print_diags(diags, c.format);
    return 1;
  }
  const ScheduleDecl& s = *todo.front();
  *decl = &s;
  std::string unmet;
  const InstStatus st = instantiate(prog, s, {p, root, force_commutative || default_commutative(s)}, sch, diags, &unmet);
  if (st == InstStatus::not_applicable) {
    report_error(c.format, "schedule '" + s.name + "' does not apply to p=" + std::to_string(p) + ": requires " + unmet);
    return 1;
  }
  if (st != InstStatus::ok) {
    print_diags(diags, c.format);
    return 1;
  }
  return 0;
}

int cmd_schedule(const Common& c, int64_t p, int64_t root, bool json, bool verify_too, bool commutative) {
  DiagnosticSink diags;
  Program prog;
  Schedule sch;
  const ScheduleDecl* s = nullptr;
  if (const int rc = load_instance(c, p, root, prog, diags, sch, &s, commutative)) return rc;
  if (verify_too) verify(sch, diags);
  set_activity("printing " + s->name + " at p=" + std::to_string(p));
  if (json) write_schedule_json(sch, std::cout);
  else write_schedule_text(sch, std::cout);
  print_diags(diags, c.format);
  return diags.has_errors() ? 1 : 0;
}

/// `bine-cc schedule --instance NAME:ROOT ...`: one JSON line per instance, in the order
/// given, from one load of the files (docs/cli.md#schedule): the instance's JSON
/// (write_schedule_json_line), or {"schedule", "p", "root", "not_applicable": "requires ..."}
/// for a false `requires`, or {"schedule", "p", "root", "error"} for an instance that failed
/// (its diagnostics on stderr). Exit 0 when every instance was printed (not applicable ones
/// included), 1 when the input is bad, a name is unknown or an instance failed, 2 for a
/// malformed NAME:ROOT.
int cmd_schedule_instances(const Common& c, int64_t p, const std::vector<std::string>& specs, bool verify_too,
                           bool commutative) {
  std::vector<std::pair<std::string, int64_t>> todo;
  for (const std::string& spec : specs) {
    const size_t colon = spec.rfind(':');
    int64_t root = 0;
    const std::string digits = colon == std::string::npos ? "" : spec.substr(colon + 1);
    const bool ok = colon != std::string::npos && colon > 0 && !digits.empty() && digits.size() <= 18 &&
                    std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!ok) {
      std::cerr << "bine-cc: error: --instance takes NAME:ROOT (e.g. bine_bcast_lat:3), got '" << spec << "'\n";
      return 2;
    }
    root = std::stoll(digits);
    todo.emplace_back(spec.substr(0, colon), root);
  }
  DiagnosticSink diags;
  Program prog;
  if (!load(c, prog, diags)) return 1;
  std::vector<std::string> names;
  for (const auto& [name, root] : todo) names.push_back(name);
  (void)selected(prog, names, diags);  // an unknown name is an error at the start
  if (diags.has_errors()) {
    print_diags(diags, c.format);
    return 1;
  }
  print_diags(diags, c.format);
  bool failed = false;
  for (const auto& [name, root] : todo) {
    const ScheduleDecl* s = nullptr;
    for (const ScheduleDecl& d : prog.schedules)
      if (d.name == name) s = &d;
    DiagnosticSink one;
    Schedule sch;
    std::string unmet;
    set_activity("building " + name + " at p=" + std::to_string(p) + " root=" + std::to_string(root));
    const InstStatus st = instantiate(prog, *s, {p, root, commutative || default_commutative(*s)}, sch, one, &unmet);
    nlohmann::ordered_json j;
    j["schedule"] = name;
    j["p"] = p;
    j["root"] = root;
    if (st == InstStatus::not_applicable) {
      j["not_applicable"] = "requires " + unmet;
    } else if (st != InstStatus::ok || (verify_too && (verify(sch, one), one.has_errors()))) {
      j["error"] = "the instance failed; its diagnostics are on standard error";
    } else {
      write_schedule_json_line(sch, std::cout);
      print_diags(one, c.format);
      continue;
    }
    std::cout << j.dump() << "\n";
    print_diags(one, c.format);
    failed |= j.contains("error");
  }
  return failed ? 1 : 0;
}

/// `bine-cc lower`: the lowered RankProgram of each selected schedule, as text.
int cmd_lower(const Common& c) {
  DiagnosticSink diags;
  Program prog;
  if (!load(c, prog, diags)) return 1;
  require_schedules(prog, diags, "nothing to lower");
  for (const ScheduleDecl* s : selected(prog, c.only, diags)) {
    RankProgram rp;
    if (!lower(prog, *s, rp, diags)) continue;
    print_rank_program(rp, std::cout);
  }
  print_diags(diags, c.format);
  return diags.has_errors() ? 1 : 0;
}

struct TuneCli {
  std::string ranks = "2..32", out = "-";
  TuneOptions opt;
  bool model = false;    ///< --alpha, --beta and --gamma given
  bool measure = false;  ///< --measure
  std::string mpirun = "mpirun", bench, measurements;
  int iters = 0;
};

/// bine-cc's own directory (/proc/self/exe), where bine-tune-bench and bine-cc-rewrite live.
std::string self_dir() {
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return ".";
  self.resize(size_t(n));
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

/// `tune --measure`: bine-tune-bench under mpirun at every p of the range (docs/pmpi.md,
/// "Tables from measurement"); its lines appended to `out`. Returns 0, or 2 with a message.
int measure(const TuneCli& t, const std::vector<const ScheduleDecl*>& schedules, std::vector<Measurement>& out) {
  const std::string bench = t.bench.empty() ? self_dir() + "/bine-tune-bench" : t.bench;
  if (access(bench.c_str(), X_OK) != 0) {
    std::cerr << "bine-cc: error: tune --measure needs " << bench << " (" << std::strerror(errno)
              << "); it is built next to bine-cc (--bench PATH to name another)\n";
    return 2;
  }
  std::string names;
  for (const ScheduleDecl* s : schedules) names += " " + shell_quote(s->name);
  for (int64_t p = t.opt.p_lo; p <= t.opt.p_hi; ++p) {
    const std::string cmd = t.mpirun + " -np " + std::to_string(p) + " " + shell_quote(bench) + " " +
                            std::to_string(t.opt.bytes_min) + " " + std::to_string(t.opt.bytes_max) + " " +
                            std::to_string(t.opt.elem_size) + " " + std::to_string(t.iters) + names;
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) {
      std::cerr << "bine-cc: error: cannot run '" << cmd << "'\n";
      return 2;
    }
    std::string line;
    for (int ch; (ch = std::fgetc(f)) != EOF;) {
      if (ch != '\n') {
        line += char(ch);
        continue;
      }
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      line.clear();
      if (j.is_discarded() || !j.is_object() || !j.contains("us")) continue;  // mpirun's own chatter
      out.push_back({j.value("collective", ""), j.value("schedule", ""), j.value("p", int64_t(0)),
                     j.value("bytes", uint64_t(0)), j.value("us", 0.0)});
    }
    const int status = pclose(f);
    if (status != 0) {
      std::cerr << "bine-cc: error: '" << cmd.substr(0, cmd.size() - names.size())
                << " <schedules>' failed (status " << status << "; its messages are above)\n";
      return 2;
    }
  }
  return 0;
}

/// `bine-cc tune`: a PMPI selection table from the cost model (docs/pmpi.md, "bine-cc tune").
int cmd_tune(const Common& c, TuneCli t) {
  if (!parse_ranks(t.ranks, t.opt.p_lo, t.opt.p_hi)) {
    std::cerr << "bine-cc: error: --ranks expects A..B or P with 1 <= A <= B <= 1048576, got '" << t.ranks << "'\n";
    return 2;
  }
  if (t.opt.elem_size == 0 || t.opt.bytes_min > t.opt.bytes_max || t.opt.margin < 0) {
    std::cerr << "bine-cc: error: tune needs --elem-size >= 1, --bytes-min <= --bytes-max and --margin >= 0\n";
    return 2;
  }
  if (t.measure == t.model) {
    std::cerr << "bine-cc: error: tune needs either --alpha, --beta and --gamma (the cost model) or --measure\n";
    return 2;
  }
  DiagnosticSink diags;
  Program prog;
  if (!load(c, prog, diags)) return 1;
  if (!require_schedules(prog, diags, "no table written")) {
    print_diags(diags, c.format);
    return 1;
  }
  const std::vector<const ScheduleDecl*> chosen = selected(prog, c.only, diags);
  TuneResult res;
  if (t.measure) {
    std::vector<Measurement> m;
    if (const int rc = measure(t, chosen, m); rc != 0) return rc;
    if (!t.measurements.empty()) {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const Measurement& x : m)
        all.push_back({{"collective", x.collective}, {"schedule", x.schedule}, {"p", x.p}, {"bytes", x.bytes}, {"us", x.us}});
      std::ofstream f(t.measurements, std::ios::binary);
      if (!(f << all.dump(1) << "\n")) {
        report_error(c.format, "cannot write '" + t.measurements + "'");
        return 1;
      }
    }
    res = tune_measured(prog, chosen, t.opt, m);
  } else {
    res = tune(prog, chosen, t.opt);
  }
  if (diags.has_errors()) {
    print_diags(diags, c.format);
    return 1;
  }
  const std::string text = res.table.dump(2) + "\n";
  if (t.out == "-") {
    std::cout << text;
  } else {
    std::ofstream f(t.out, std::ios::binary);
    if (!(f << text)) {
      report_error(c.format, "cannot write '" + t.out + "'");
      return 1;
    }
  }
  return 0;
}

struct DrawCli {
  int64_t p = 0, root = 0;
  bool commutative = false, verify = false;
  std::string out = "-", format;
  DrawOptions opt;
};

int cmd_draw(const Common& c, const DrawCli& d) {
  const std::string format = draw_format(d.format, d.out);
  if (format == "png" && d.out == "-") {
    std::cerr << "bine-cc: error: --format png needs an output file (-o FILE)\n";
    return 2;
  }
  DiagnosticSink diags;
  Program prog;
  Schedule sch;
  const ScheduleDecl* s = nullptr;
  if (const int rc = load_instance(c, d.p, d.root, prog, diags, sch, &s, d.commutative)) return rc;
  DrawOptions opt = d.opt;
  VerifyResult v;
  if (d.verify) {
    v = verify(sch, diags);
    if (!v.ok) opt.counterexample = &v.counterexample;
  }
  write_drawing(sch, opt, format, d.out, diags);
  print_diags(diags, c.format);
  return diags.has_errors() ? 1 : 0;
}

struct CostOptions {
  int64_t p = 0, root = 0;
  uint64_t bytes = 0, elem_size = 4;
  int64_t segment_bytes = -1;  ///< >= 0: overrides every round's `segment` size
  CostParams params;
  bool json = false;
  bool commutative = false;  ///< instantiate with commutative = true
  std::string machine;       ///< --machine SPEC: regions from its rank map
  std::string local_level = "node";  ///< node, switch or group: the region of --machine
  std::string counts;        ///< --counts C0,C1,...: elements per block (irregular forms)
  bool alpha_group_set = false, beta_group_set = false;  ///< --alpha-group / --beta-group given
};

/// Parses --counts "C0,C1,..." (non-negative integers) into `out`; false on bad text.
bool parse_counts(const std::string& text, std::vector<uint64_t>& out) {
  out.clear();
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 18) return false;
    out.push_back(std::stoull(item));
    at = comma + 1;
  }
  return !out.empty();
}

int cmd_cost(const Common& c, CostOptions o, bool alpha_local_set, bool beta_local_set, bool bytes_set) {
  std::vector<uint64_t> counts;
  if (!o.counts.empty()) {
    if (!parse_counts(o.counts, counts)) {
      std::cerr << "bine-cc: error: --counts expects non-negative element counts separated by commas, got '" << o.counts
                << "'\n";
      return 2;
    }
    uint64_t sum = 0;
    for (uint64_t x : counts) sum += x;
    if (bytes_set && o.bytes != sum * o.elem_size) {
      std::cerr << "bine-cc: error: --bytes " << o.bytes << " disagrees with --counts (" << sum << " elements of "
                << o.elem_size << " bytes); give one of them\n";
      return 2;
    }
    o.bytes = sum * o.elem_size;
  } else if (!bytes_set) {
    std::cerr << "bine-cc: error: cost needs --bytes N (the vector) or --counts C0,C1,... (elements per block)\n";
    return 2;
  }
  if ((alpha_local_set || beta_local_set) && o.params.ppn == 0 && o.machine.empty()) {
    std::cerr << "bine-cc: error: --alpha-local and --beta-local need --ppn K or --machine SPEC\n";
    return 2;
  }
  if (!o.machine.empty()) {
    if (o.params.ppn > 0) {
      std::cerr << "bine-cc: error: --ppn and --machine both say where ranks run; give one (ppn=K is a machine spec)\n";
      return 2;
    }
    RankMap m;
    std::string err;
    if (!build_rank_map(o.machine, o.p, m, err)) {
      report_error(c.format, err);
      return 2;
    }
    for (const Location& l : m.loc)
      o.params.region.push_back(o.local_level == "node" ? l.node : o.local_level == "switch" ? l.sw : l.group);
    if (o.alpha_group_set || o.beta_group_set) {  // three classes: local, within a group, between groups
      if (o.local_level == "group") {
        std::cerr << "bine-cc: error: --alpha-group and --beta-group price messages between regions of one group, so "
                     "--local-level must be node or switch, not group\n";
        return 2;
      }
      for (const Location& l : m.loc) o.params.group.push_back(l.group);
      if (!o.alpha_group_set) o.params.alpha_group = o.params.alpha;
      if (!o.beta_group_set) o.params.beta_group = o.params.beta;
    }
  } else if (o.alpha_group_set || o.beta_group_set) {
    std::cerr << "bine-cc: error: --alpha-group and --beta-group need --machine SPEC (its groups)\n";
    return 2;
  }
  if (o.elem_size == 0 || o.bytes % o.elem_size != 0) {
    std::cerr << "bine-cc: error: --bytes (" << o.bytes << ") must be a multiple of --elem-size (" << o.elem_size << ")\n";
    return 2;
  }
  // The region built-ins see the regions the cost model prices, unless --regions says otherwise.
  if (c.regions.empty() && o.params.ppn > 0) region_spec() = std::to_string(o.params.ppn);
  if (c.regions.empty() && !o.params.region.empty()) region_spec() = region_map_spec(o.params.region);
  if (!alpha_local_set) o.params.alpha_local = o.params.alpha;
  if (!beta_local_set) o.params.beta_local = o.params.beta;
  DiagnosticSink diags;
  Program prog;
  Schedule sch;
  const ScheduleDecl* decl = nullptr;
  if (const int rc = load_instance(c, o.p, o.root, prog, diags, sch, &decl, o.commutative)) return rc;
  const ScheduleDecl& s = *decl;
  if (o.segment_bytes >= 0) sch.round_segments.assign(size_t(sch.num_rounds), o.segment_bytes);
  const CostVector vec{o.bytes / o.elem_size, o.elem_size, counts};
  const ActivityScope activity("costing " + s.name + " at p=" + std::to_string(o.p));
  const CostResult res = simulate_cost(sch, vec, o.params);
  if (!res.ok) {
    std::cerr << "bine-cc: error: cannot cost '" << s.name << "' at p=" << o.p << ": " << res.error << "\n";
    return 1;
  }
  std::cout << (o.json ? cost_json(sch, vec, o.params, res) : cost_text(sch, vec, o.params, res));
  print_diags(diags, c.format);
  return 0;
}

struct TrafficCli {
  int64_t p = 0, root = 0;
  uint64_t bytes = uint64_t(1) << 20, elem_size = 4;
  std::vector<std::string> machines;
  bool json = false, commutative = false;
};

/// bine-cc traffic: every selected schedule at (p, root) on every --machine, bytes and
/// messages per link class (docs/topology.md). Exit 2 on a bad machine spec or map, 1 on
/// bad input files or a failing instance; schedules that do not apply to p are listed.
int cmd_traffic(const Common& c, const TrafficCli& o) {
  if (o.elem_size == 0 || o.bytes % o.elem_size != 0) {
    std::cerr << "bine-cc: error: --bytes (" << o.bytes << ") must be a multiple of --elem-size (" << o.elem_size << ")\n";
    return 2;
  }
  std::vector<RankMap> maps(o.machines.size());
  for (size_t i = 0; i < maps.size(); ++i) {
    std::string err;
    if (!build_rank_map(o.machines[i], o.p, maps[i], err)) {
      report_error(c.format, err);
      return 2;
    }
  }
  // Without --regions the region built-ins see the nodes of the first machine.
  if (c.regions.empty() && !maps.empty()) {
    std::vector<int64_t> node;
    for (const Location& l : maps[0].loc) node.push_back(l.node);
    region_spec() = region_map_spec(node);
  }
  DiagnosticSink diags;
  Program prog;
  if (!load(c, prog, diags)) return 1;
  require_schedules(prog, diags, "no traffic to count");
  const auto todo = selected(prog, c.only, diags);
  if (diags.has_errors()) {
    print_diags(diags, c.format);
    return 1;
  }
  struct Inst {
    const ScheduleDecl* decl;
    bool ok;
    std::string unmet;
    Schedule sch;
  };
  std::vector<Inst> insts;
  for (const ScheduleDecl* s : todo) {
    Inst in{s, false, "", {}};
    const InstStatus st = instantiate(prog, *s, {o.p, o.root, o.commutative || default_commutative(*s)}, in.sch, diags, &in.unmet);
    if (st == InstStatus::error) continue;
    in.ok = st == InstStatus::ok;
    insts.push_back(std::move(in));
  }
  const CostVector vec{o.bytes / o.elem_size, o.elem_size};
  const ActivityScope activity("counting the traffic at p=" + std::to_string(o.p));
  if (o.json) std::cout << "[";
  bool first = true;
  for (const RankMap& m : maps)
    for (const Inst& in : insts) {
      if (o.json) {
        std::cout << (first ? "\n " : ",\n ");
        first = false;
        if (in.ok) {
          std::cout << traffic_json(in.sch, m, vec, count_traffic(in.sch, m, vec));
        } else {
          nlohmann::ordered_json j;
          j["schedule"] = in.decl->name;
          j["p"] = o.p;
          j["machine"] = m.spec;
          j["applicable"] = false;
          j["requires"] = in.unmet;
          std::cout << j.dump();
        }
        continue;
      }
      if (in.ok) std::cout << traffic_text(in.sch, m, vec, count_traffic(in.sch, m, vec));
      else std::cout << in.decl->name << ": does not apply to p=" << o.p << ": requires " << in.unmet << "\n";
    }
  if (o.json) std::cout << "\n]\n";
  print_diags(diags, c.format);
  return diags.has_errors() ? 1 : 0;
}

// ---- resource limits (docs/cli.md, "Exit status") ----
const char* g_p_option = "-p";     ///< the verb's option that makes instances smaller
std::string g_diag_format = "text";  ///< --diagnostics-format of the verb
/// The size of the last allocation that failed (operator new below), 0: none known.
std::atomic<size_t> g_failed_alloc{0};
/// Tests (docs/testing.md): allocations above this many bytes fail as if memory were out
/// (environment variable BINE_FAIL_ALLOCATIONS_ABOVE, read at the start of main).
std::atomic<size_t> g_fail_above{SIZE_MAX};

/// "resource limit: WHAT; LEVER lowers it" on stderr (a JSON diagnostic with
/// --diagnostics-format json), after what standard output holds so far; exit status 2.
int resource_limit_exit(const std::string& what, ResourceLimit::Lever lever) {
  std::cout.flush();
  std::string how;
  switch (lever) {
    case ResourceLimit::Lever::p: how = std::string("a smaller ") + g_p_option + " lowers it"; break;
    case ResourceLimit::Lever::blocks: how = "fewer blocks (the schedule's 'blocks') lower it"; break;
    case ResourceLimit::Lever::ops:
      how = "fewer operations per round and rank (the schedule's loop bounds) or a smaller " + std::string(g_p_option) +
            " lower it";
      break;
  }
  report_error(g_diag_format, "resource limit: " + what + "; " + how);
  return 2;
}
std::string activity_text() {
  const std::string a = activity();
  return a.empty() ? std::string() : " while " + a;
}
/// An allocation failed that no account refused before (docs/verifier.md, "Memory").
std::string out_of_memory_text() {
  std::string source;
  memory_available(&source);
  const size_t n = g_failed_alloc.load();
  return "out of memory" + activity_text() + (n ? ": an allocation of " + format_bytes(n) + " failed" : std::string(": an allocation failed")) +
         " (the process may use " + source + ")";
}
std::string too_large_text(const char* what) {
  return "a container larger than the address space" + activity_text() + " (" + what + ")";
}

/// `bine-cc rewrite ARGS`: execs bine-cc-rewrite (the Clang libTooling rewriter, built only
/// when Clang 14's development files are found, docs/rewrite.md) from bine-cc's own
/// directory, so that bine-cc does not link libclang. Returns only on failure.
int exec_rewrite(int argc, char** argv) {
  const std::string tool = self_dir() + "/bine-cc-rewrite";
  std::vector<char*> args;
  args.push_back(const_cast<char*>(tool.c_str()));
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(tool.c_str(), args.data());
  std::cerr << "bine-cc: error: rewrite needs " << tool << " (" << std::strerror(errno)
            << "); it is built when Clang 14's development files are installed (Debian: libclang-14-dev "
               "libclang-cpp14-dev; docs/rewrite.md)\n";
  return 2;
}

/// std::terminate's last word: an allocation failure that escaped every handler (one
/// thrown where no exception may pass, e.g. a noexcept function) is still a resource limit
/// (exit 2); anything else is an internal error.
[[noreturn]] void on_terminate() {
  int rc = 134;
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const ResourceLimit& x) {
      rc = resource_limit_exit(x.what(), x.lever());
    } catch (const std::bad_alloc&) {
      rc = resource_limit_exit(out_of_memory_text(), ResourceLimit::Lever::p);
    } catch (const std::length_error& x) {
      rc = resource_limit_exit(too_large_text(x.what()), ResourceLimit::Lever::p);
    } catch (const std::exception& x) {
      std::cerr << "bine-cc: internal error: uncaught exception: " << x.what() << "\n";
    } catch (...) {
      std::cerr << "bine-cc: internal error: uncaught exception\n";
    }
  }
  std::cerr.flush();
  if (rc == 2) std::_Exit(2);
  std::abort();
}

}  // namespace

/// operator new as the standard library's (malloc, the new-handler loop, std::bad_alloc),
/// remembering the size of a request that fails: the resource-limit error says how much
/// was asked for.
void* operator new(size_t n) {
  if (n == 0) n = 1;
  for (;;) {
    if (n > g_fail_above.load(std::memory_order_relaxed)) break;
    if (void* p = std::malloc(n)) return p;
    if (std::new_handler h = std::get_new_handler()) {
      h();
      continue;
    }
    break;
  }
  g_failed_alloc.store(n, std::memory_order_relaxed);
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return ::operator new(n); }
// (The library's operator delete frees with std::free, which matches.)

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  if (const char* e = std::getenv("BINE_FAIL_ALLOCATIONS_ABOVE"); e && *e) g_fail_above = std::strtoull(e, nullptr, 10);
#ifdef __GLIBC__
  // Blocks of 1 MiB and more straight from the kernel and back to it when freed: glibc's
  // default threshold rises after the first large free, and freed heap memory stays in the
  // process, so instantiation's round chunks, freed as each round is concatenated
  // (instantiate.cpp, RoundArenas), would double the peak at p = 2^20.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  if (argc > 1 && std::string(argv[1]) == "rewrite") return exec_rewrite(argc, argv);
  CLI::App app{
      "bine-cc: write collective-communication schedules once, prove them, and generate MPI code.\n\n"
      "Typical use:\n"
      "  bine-cc check dsl/lib/*.bine --ranks 1..64     prove every schedule for p = 1..64, every root\n"
      "  bine-cc schedule dsl/lib/bine_allreduce.bine --schedule bine_allreduce_lat -p 8\n"
      "  bine-cc compile dsl/lib/*.bine --target mpi -o bine_collectives.h\n"
      "  bine-cc draw dsl/lib/bine_bcast.bine -p 8 -o bcast.svg    step diagram of one instance (docs/draw.md)\n"
      "  bine-cc rewrite -p build --allreduce bcc_bine_allreduce_lat app.c   calls to generated ones (rewrite.md)\n",
      "bine-cc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("bine-cc ") + BINE_CC_VERSION);
  Common common;
  auto add_common = [&](CLI::App* sc) {
    sc->add_option("files", common.files, ".bine source files ('-': standard input)")
        ->required()
        ->check(CLI::Validator([](std::string& f) { return f == "-" ? std::string() : CLI::ExistingFile(f); }, "FILE|-"));
    sc->add_option("--schedule", common.only, "only these schedules (repeatable)");
    if (sc->get_name() == "check" || sc->get_name() == "compile")
      sc->add_flag("--log-passes", common.log_passes,
                   "print each pipeline stage (lower, target, verify, analyse) per schedule and its time on stderr "
                   "(docs/architecture.md, \"The pipeline\")");
    sc->add_option("--diagnostics-format", common.format, "text (clang style) or json")
        ->check(CLI::IsMember({"text", "json"}));
    sc->add_option("--regions", common.regions,
                   "region layout of the region built-ins (docs/topology.md): K (ranks per region), rr:N, "
                   "map:L0,L1,..., one (default; cost and traffic: the nodes of --ppn/--machine)");
  };

  std::string ranks = "1..64";
  int64_t all_roots_up_to = 64;
  bool quiet = false, check_json = false;
  std::string check_draw;
  CLI::App* check = app.add_subcommand("check", "verify schedules for a range of process counts and every root; exit 0 when all hold");
  add_common(check);
  check->add_option("--ranks", ranks, "process counts, A..B or P (default 1..64)");
  check->add_option("--all-roots-up-to", all_roots_up_to,
                    "verify every root up to this p; above it roots 0, 1, p/2, p-1 (default 64)");
  check->add_flag("--quiet", quiet, "print only failing schedules");
  bool no_symmetry = false;
  check->add_flag("--no-symmetry", no_symmetry,
                  "rooted collectives: build and compare each checked root's instance even where the program is "
                  "proved to treat every root alike (docs/verifier.md, \"Root symmetry\")");
  bool landing_flag = false;
  check->add_flag("--landing", landing_flag,
                  "also derive and prove the static landing layout for one-sided targets: which transfers may put straight "
                  "into the receiver's vector (p <= 2048; docs/utofu.md, \"Static landing layout\")");
  check->add_flag("--json", check_json,
                  "one JSON report per schedule (excluded p with the false 'requires', order, failure) instead of text");
  check->add_option("--draw", check_draw,
                    "draw the first failing instance with its counterexample highlighted (SVG; PNG when FILE ends in .png)");
  bool check_smt = false, check_stats = false;
  check->add_flag("--stats", check_stats,
                  "also print, per schedule, its largest instance's accounted memory (round store and verifier), the "
                  "process's peak memory and the time (docs/verifier.md, \"Memory\")");
  int check_threads = 0;
  check->add_option("--threads", check_threads,
                    "threads that build and check one instance of p >= 256 ranks (default: the machine's, at most 8; 1: "
                    "one thread); the results and diagnostics do not depend on it (docs/verifier.md, \"Scale\")")
      ->check(CLI::Range(1, 64));
  check->add_flag("--smt", check_smt,
                  "also prove the Bine partner rules for every p = 2^k, k = 1..30, with z3 (butterfly involution and "
                  "reach, distance-halving tree; docs/verifier.md); text output only")
      ->excludes("--json");

  std::string target = "mpi", out, verify_ranks = "1..32";
  EmitOptions eopt;
  CLI::App* compile = app.add_subcommand("compile", "verify, then emit a header with one function per schedule");
  add_common(compile);
  std::string target_help = "code generator (default mpi):";
  for (const Target* t : targets()) target_help += std::string("\n  ") + t->name() + ": " + t->summary();
  compile->add_option("--target", target, target_help);
  compile->add_option("--prefix", eopt.prefix,
                      "prefix of the generated C names (default bcc_: bcc_<schedule>, BCC_<COLLECTIVE>_SCHEDULES)");
  compile->add_option("-o,--output", out, "output header (default: stdout)");
  compile->add_option("--verify-ranks", verify_ranks, "process counts verified before emitting (default 1..32)");
  std::string dispatch_file;
  compile->add_option("--dispatch", dispatch_file,
                      "selection table (JSON, docs/pmpi.md; e.g. from bine-cc tune): also emit a dispatcher "
                      "<prefix><collective> per collective of it that picks a schedule per call (mpi, utofu targets)");

  int64_t p = 0, root = 0;
  bool json = false, also_verify = false;
  CLI::App* sched = app.add_subcommand("schedule", "print one instance: per-round operations of every rank");
  add_common(sched);
  sched->add_option("-p", p, "process count (required; a range of them is --ranks A..B, in check)")->check(CLI::Range(int64_t(1), int64_t(1) << 16));
  CLI::Option* sched_root = sched->add_option("--root", root, "root rank (rooted collectives)");
  sched->add_flag("--json", json, "JSON instead of text");
  sched->add_flag("--verify", also_verify, "also verify the instance");
  std::vector<std::string> sched_instances;
  sched->add_option("--instance", sched_instances,
                    "NAME:ROOT, repeatable: print these instances as JSON lines, one per line, from one load of the files")
      ->excludes(sched_root);
  bool sched_commutative = false;
  sched->add_flag("--commutative", sched_commutative,
                  "instantiate with commutative = true (the checker proves reducing schedules that read it for both values)");

  CLI::App* lwr = app.add_subcommand(
      "lower", "print the lowered program of each schedule: composition inlined, params bound, checks hoisted (docs/architecture.md)");
  add_common(lwr);

  DrawCli dcli;
  // Unsigned options: CLI11 would wrap "-1" to 2^64 - 1.
  const CLI::Validator non_negative(
      [](std::string& v) { return v.empty() || v[0] != '-' ? std::string() : "must be 0 or more, got " + v; }, "N >= 0");
  // Counts that must be 1 or more (--elem-size, --ppn): 0 would divide by zero or print nonsense.
  const CLI::Validator at_least_one(
      [](std::string& v) {
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        return !v.empty() && *end == '\0' && x >= 1 ? std::string() : "must be an integer of 1 or more, got " + v;
      },
      "N >= 1");
  // Model parameters (alpha, beta, gamma): finite and not negative (nan, inf and -1 price nothing).
  const CLI::Validator finite_non_negative(
      [](std::string& v) {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        return !v.empty() && *end == '\0' && std::isfinite(x) && x >= 0 ? std::string()
                                                                       : "must be a finite number of 0 or more, got " + v;
      },
      "X >= 0");
  CLI::App* drw = app.add_subcommand("draw", "draw one instance as an SVG (or PNG) step diagram: ranks x rounds, one arrow per transfer (docs/draw.md)");
  add_common(drw);
  drw->add_option("-p", dcli.p, "process count (required)")->check(CLI::Range(int64_t(1), int64_t(1) << 16));
  drw->add_option("--root", dcli.root, "root rank (rooted collectives)");
  drw->add_flag("--commutative", dcli.commutative, "instantiate with commutative = true");
  drw->add_option("-o,--output", dcli.out, "output file (default: stdout, SVG only)");
  drw->add_option("--format", dcli.format, "svg or png (default: png when the output ends in .png, else svg)")
      ->check(CLI::IsMember({"svg", "png"}));
  drw->add_option("--ppn", dcli.opt.ppn, "ranks per node (consecutive ranks): colour arrows intra-node / inter-node")
      ->check(at_least_one);
  drw->add_option("--bytes", dcli.opt.bytes, "vector size n in bytes: label transfers with k*n/B bytes")->check(non_negative);
  drw->add_flag("--verify", dcli.verify, "also verify the instance and highlight its counterexample");

  CostOptions copt;
  CLI::App* cost = app.add_subcommand("cost", "alpha-beta-gamma cost of one instance: makespan, critical path, per-rank totals (docs/cost.md)");
  add_common(cost);
  cost->add_option("-p", copt.p, "process count (required)")->check(CLI::Range(int64_t(1), int64_t(1) << 16));
  cost->add_option("--root", copt.root, "root rank (rooted collectives)");
  CLI::Option* bytes_opt = cost->add_option("--bytes", copt.bytes, "vector size n in bytes (or --counts)")->check(non_negative);
  cost->add_option("--counts", copt.counts,
                   "irregular blocks (the _v forms): elements per block, C0,C1,... (one per block of the instance, "
                   "p for allgather, gather, scatter, reduce_scatter); the vector is their sum");
  cost->add_option("--elem-size", copt.elem_size, "bytes per element (default 4)")->check(at_least_one);
  cost->add_option("--alpha", copt.params.alpha, "latency per message")->required()->check(finite_non_negative);
  cost->add_option("--beta", copt.params.beta, "time per byte")->required()->check(finite_non_negative);
  cost->add_option("--gamma", copt.params.gamma, "time per element reduced")->required()->check(finite_non_negative);
  cost->add_option("--f-alpha", copt.params.f_alpha, "alpha_uni / alpha for one-way pairs (default 1)");
  cost->add_option("--f-beta", copt.params.f_beta, "beta_uni / beta for one-way pairs (default 1)");
  cost->add_option("--ports", copt.params.ports,
                   "sends and receives a rank progresses at once, each way (default 1: the papers' 1-ported model; "
                   "e.g. 6 for Fugaku's six NICs)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  CLI::Option* ppn_opt = cost->add_option("--ppn", copt.params.ppn, "ranks per node (default: flat network)");
  CLI::Option* al_opt = cost->add_option("--alpha-local", copt.params.alpha_local, "latency within a node / region (default --alpha)");
  CLI::Option* bl_opt =
      cost->add_option("--beta-local", copt.params.beta_local, "time per byte within a node / region (default --beta)");
  cost->add_option("--machine", copt.machine,
                   "machine spec (docs/topology.md): messages within one region (--local-level) cost alpha-local, beta-local")
      ->excludes(ppn_opt);
  cost->add_option("--local-level", copt.local_level, "the region of --machine: node (default), switch or group")
      ->check(CLI::IsMember({"node", "switch", "group"}));
  CLI::Option* ag_opt = cost->add_option("--alpha-group", copt.params.alpha_group,
                                         "latency between regions of one group of --machine (default --alpha; alpha, beta then "
                                         "price messages between groups)");
  CLI::Option* bg_opt =
      cost->add_option("--beta-group", copt.params.beta_group, "time per byte between regions of one group (default --beta)");
  cost->add_option("--segment-bytes", copt.segment_bytes,
                   "segment size in bytes for every round, overriding the schedule's 'segment' (0: none)")
      ->check(CLI::NonNegativeNumber);
  cost->add_flag("--json", copt.json, "JSON instead of text");
  cost->add_flag("--commutative", copt.commutative, "instantiate with commutative = true");

  TuneCli tune_cli;
  CLI::App* tun = app.add_subcommand(
      "tune", "a selection table for the PMPI library (libbine_pmpi.so): the cheapest schedule per (collective, p, bytes) by the cost model (docs/pmpi.md)");
  add_common(tun);
  tun->add_option("--ranks", tune_cli.ranks, "process counts of the table, A..B (default 2..32)");
  tun->add_option("--bytes-min", tune_cli.opt.bytes_min, "smallest size of the grid in bytes (default 8)");
  tun->add_option("--bytes-max", tune_cli.opt.bytes_max, "largest size of the grid in bytes (default 16 MiB); sizes are powers of two");
  tun->add_option("--elem-size", tune_cli.opt.elem_size, "bytes per element (default 4)")->check(at_least_one);
  CLI::Option* t_alpha = tun->add_option("--alpha", tune_cli.opt.params.alpha, "latency per message (us; the cost model)")
                             ->check(finite_non_negative);
  CLI::Option* t_beta = tun->add_option("--beta", tune_cli.opt.params.beta, "time per byte (us; the cost model)")
                            ->check(finite_non_negative);
  CLI::Option* t_gamma = tun->add_option("--gamma", tune_cli.opt.params.gamma, "time per element reduced (us; the cost model)")
                             ->check(finite_non_negative);
  t_alpha->needs(t_beta)->needs(t_gamma);
  t_beta->needs(t_alpha);
  t_gamma->needs(t_alpha);
  tun->add_flag("--measure", tune_cli.measure,
                "measure instead of modelling: bine-tune-bench under mpirun at every p, the fastest per cell (MPI's own included)");
  tun->add_option("--mpirun", tune_cli.mpirun, "launcher command for --measure (default mpirun; e.g. \"mpirun --oversubscribe\")");
  tun->add_option("--bench", tune_cli.bench, "the measuring program (default: bine-tune-bench next to bine-cc)");
  tun->add_option("--iters", tune_cli.iters, "calls timed per cell with --measure (default 0: max(3, min(50, 2^20 / bytes)))")
      ->check(CLI::NonNegativeNumber);
  tun->add_option("--measurements", tune_cli.measurements, "with --measure, also write the measured times (JSON) here");
  tun->add_option("--margin", tune_cli.opt.margin,
                  "keep the previous size's choice while within this fraction of the cheapest (default 0.05)");
  tun->add_option("-o,--output", tune_cli.out, "table file (default: stdout)");

  TrafficCli tcli;
  CLI::App* trf = app.add_subcommand(
      "traffic", "bytes and messages per link class (intra-node, intra-group, global) of one instance per schedule on a machine (docs/topology.md)");
  add_common(trf);
  trf->add_option("-p", tcli.p, "process count (required)")->check(CLI::Range(int64_t(1), int64_t(1) << 16));
  trf->add_option("--root", tcli.root, "root rank (rooted collectives)");
  trf->add_option("--machine", tcli.machines,
                  "machine spec (repeatable): ppn=K, dragonfly:G,R,N[,ppn=K], fattree:K[,ppn=K], torus:X,Y,Z[,ppn=K], "
                  "hosts:FILE,map=FILE[,ppn=K], leonardo:FILE[,map=FILE][,ppn=K]")
      ->required();
  trf->add_option("--bytes", tcli.bytes, "vector size n in bytes (default 1048576)")->check(non_negative);
  trf->add_option("--elem-size", tcli.elem_size, "bytes per element (default 4)")->check(at_least_one);
  trf->add_flag("--json", tcli.json, "one JSON array, an object per (machine, schedule), instead of text");
  trf->add_flag("--commutative", tcli.commutative, "instantiate with commutative = true");

  SynthCli scli;
  CLI::App* synth_bbs = add_synth_command(app, scli);

  // One spelling: a single process count is -p N, a range --ranks A..B (check). The old
  // `--ranks N` of schedule/cost gets a clear error instead of CLI11's guess.
  std::string stale_ranks;
  for (CLI::App* sc : {sched, cost, drw, trf}) sc->add_option("--ranks", stale_ranks)->group("");

  // An unknown command is named (CLI11 would only say that a subcommand is required).
  std::string names;
  bool known = false;
  for (const CLI::App* sc : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sc->get_name();
    known |= argc > 1 && sc->get_name() == argv[1];
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::cerr << "bine-cc: error: unknown command '" << argv[1] << "' (commands: " << names << ", rewrite)\n";
    return 2;
  }
  if (argc > 2 && std::string(argv[1]) == "synth" && argv[2][0] != '-' && std::string(argv[2]) != "bbs") {
    std::cerr << "bine-cc: error: unknown synth method '" << argv[2] << "' (methods: bbs)\n";
    return 2;
  }
  if (argc == 2 && std::string(argv[1]) == "synth") {
    std::cerr << "bine-cc: error: synth needs a method: bine-cc synth bbs --topology SPEC ... (docs/bbs.md)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or --help / --version); its own codes (100+) are usage
    // errors here: exit 2, as docs/cli.md says, and 0 for --help and --version.
    return app.exit(e) == 0 ? 0 : 2;
  }
  const char* verb = sched->parsed() ? "schedule" : cost->parsed() ? "cost" : trf->parsed() ? "traffic" : "draw";
  if ((sched->parsed() || cost->parsed() || drw->parsed() || trf->parsed()) && !stale_ranks.empty()) {
    std::cerr << "bine-cc: error: " << verb
              << " takes one process count as -p N; --ranks A..B is the range of check\n";
    return 2;
  }
  if ((sched->parsed() && p == 0) || (cost->parsed() && copt.p == 0) || (drw->parsed() && dcli.p == 0) ||
      (trf->parsed() && tcli.p == 0)) {
    std::cerr << "bine-cc: error: " << verb << " needs a process count: -p N\n";
    return 2;
  }
  if (check->parsed() && all_roots_up_to < 0) {
    std::cerr << "bine-cc: error: --all-roots-up-to must be 0 or more (0: roots 0, 1, p/2, p-1 at every p), got "
              << all_roots_up_to << "\n";
    return 2;
  }
  if (!common.regions.empty()) {
    const std::string& spec = common.regions;
    std::vector<int64_t> labels;
    std::string err;
    const int64_t n = spec.rfind("map:", 0) == 0 ? int64_t(std::count(spec.begin(), spec.end(), ',')) + 1 : 1;
    if (!region_labels(spec, n, labels, err)) {
      std::cerr << "bine-cc: error: --regions: " << err << "\n";
      return 2;
    }
    region_spec() = spec;
  }
  if (check->parsed() && check_threads > 0) set_instance_threads(check_threads);
  // The option that makes an instance smaller, for a resource-limit error.
  const std::string p_option = check->parsed() || tun->parsed() ? "--ranks"
                               : compile->parsed()               ? "--verify-ranks"
                               : synth_bbs->parsed()             ? "--packets or a smaller --topology"
                                                                 : "-p";
  g_p_option = p_option.c_str();
  g_diag_format = common.format;
  // Every verb: an instance that does not fit in memory is an error of its own, exit 2
  // (docs/cli.md), whether an account refused it before allocating (ResourceLimit) or an
  // allocation failed (std::bad_alloc, std::length_error of a container too large).
  try {
    if (synth_bbs->parsed()) return cmd_synth_bbs(scli);
    if (check->parsed())
      return cmd_check(common, ranks, all_roots_up_to, quiet, check_json, check_draw, check_smt, no_symmetry, landing_flag,
                       check_stats);
    if (lwr->parsed()) return cmd_lower(common);
    if (tun->parsed()) {
      tune_cli.model = t_alpha->count() > 0;
      return cmd_tune(common, tune_cli);
    }
    if (drw->parsed()) return cmd_draw(common, dcli);
    if (compile->parsed()) return cmd_compile(common, target, out, verify_ranks, eopt, dispatch_file);
    if (sched->parsed() && !sched_instances.empty())
      return cmd_schedule_instances(common, p, sched_instances, also_verify, sched_commutative);
    if (sched->parsed()) return cmd_schedule(common, p, root, json, also_verify, sched_commutative);
    if (trf->parsed()) return cmd_traffic(common, tcli);
    if (cost->parsed()) {
      copt.alpha_group_set = ag_opt->count() > 0;
      copt.beta_group_set = bg_opt->count() > 0;
      return cmd_cost(common, copt, al_opt->count() > 0, bl_opt->count() > 0, bytes_opt->count() > 0);
    }
  } catch (const ResourceLimit& e) {
    return resource_limit_exit(e.what(), e.lever());
  } catch (const std::bad_alloc&) {
    return resource_limit_exit(out_of_memory_text(), ResourceLimit::Lever::p);
  } catch (const std::length_error& e) {
    return resource_limit_exit(too_large_text(e.what()), ResourceLimit::Lever::p);
  }
  return 2;
}
