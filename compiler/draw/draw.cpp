#include "draw.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace bine {
namespace {

// ---- text and number formatting (integers only: the output is byte-for-byte stable) ----

constexpr int kChar = 7;       ///< px per character at font-size 11 (monospace estimate)
constexpr int kMaxBins = 256;  ///< heat map: at most this many rank bins and round bins
const char* const kFont = "DejaVu Sans Mono,Menlo,Consolas,monospace";

// Colours. Arrows: one colour without --ppn, else by link class; red marks a counterexample.
const char* const kFlat = "#2b5c8a";
const char* const kIntra = "#1b9e77";
const char* const kInter = "#d95f02";
const char* const kRed = "#d62728";
const char* const kWait = "#6a1b9a";  ///< a deadlock's wait-for chain
const char* const kFoldBg = "#e6eef7";
const char* const kMirrorBg = "#f1eafb";
const char* const kRootBg = "#fff0b3";
const char* const kHelperBg = "#ececec";

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  return o;
}

/// At most `n` characters of s (n >= 1), "..." marking a cut.
std::string clip(const std::string& s, int n) {
  if (int(s.size()) <= n) return s;
  if (n <= 3) return s.substr(0, size_t(std::max(n, 0)));
  return s.substr(0, size_t(n - 3)) + "...";
}

/// "512 B", "1.5 KiB", "2.0 MiB" (rounded down to a tenth).
std::string fmt_bytes(unsigned __int128 v) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  unsigned __int128 scale = 1;
  while (u < 5 && v >= scale * 1024) {
    scale *= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(uint64_t(v)) + " B";
  const uint64_t tenths = uint64_t(v * 10 / scale);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " " + units[u];
}

/// floor(k * n / B): the bytes of k blocks of a vector of n bytes split into B blocks.
unsigned __int128 bytes_of(int64_t k, const Schedule& s, uint64_t n) {
  return (unsigned __int128)uint64_t(k) * n / uint64_t(std::max<int64_t>(s.blocks, 1));
}

std::string transfer_label(const BlockSet& b, const Schedule& s, uint64_t n) {
  const int64_t k = b.size();
  std::string l = format_blocks(b) + " " + std::to_string(k) + " blk";
  if (n > 0) l += ", " + fmt_bytes(bytes_of(k, s, n));
  return l;
}

std::string origin_text(const Origin& o) {
  std::string t = o.span.valid() ? o.span.file->name + ":" + std::to_string(o.span.line) : std::string("?");
  return o.via.empty() ? t : t + ", " + o.via;
}

/// Splits `s` into lines of at most `width` characters at spaces (a longer word stays whole).
std::vector<std::string> wrap(const std::string& s, size_t width) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(s);
  std::string w;
  while (in >> w) {
    if (!line.empty() && line.size() + 1 + w.size() > width) {
      out.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

// ---- round and rank roles ----

bool is_mirror_round(const std::string& label) { return label.find("mirror of") != std::string::npos; }
bool is_fold_round(const std::string& label) {
  return label.rfind("fold ", 0) == 0 || label.find("+ fold ") != std::string::npos;
}
bool is_helper(const Schedule& s, int64_t r) { return size_t(r) < s.fold_helper.size() && s.fold_helper[size_t(r)]; }
bool shows_root(const Schedule& s) { return collective_is_rooted(s.collective); }

const char* link_class(const DrawOptions& o, int64_t a, int64_t b) {
  if (o.ppn <= 0) return "flat";
  return a / o.ppn == b / o.ppn ? "intra" : "inter";
}
const char* link_colour(const std::string& cls) {
  if (cls == "intra") return kIntra;
  if (cls == "inter") return kInter;
  if (cls == "cex") return kRed;
  if (cls == "wait") return kWait;
  return kFlat;
}

std::string header(int w, int h, const std::string& title) {
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(w) + "\" height=\"" + std::to_string(h) +
       "\" viewBox=\"0 0 " + std::to_string(w) + " " + std::to_string(h) + "\" font-family=\"" + kFont +
       "\" font-size=\"11\">\n";
  o += "<title>" + esc(title) + "</title>\n";
  o += "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" + std::to_string(w) + "\" height=\"" + std::to_string(h) +
       "\" fill=\"#ffffff\"/>\n";
  return o;
}

std::string text(int x, int y, const std::string& s, const std::string& attrs = "") {
  return "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\"" + (attrs.empty() ? "" : " " + attrs) +
         ">" + esc(s) + "</text>\n";
}

std::string rect(int x, int y, int w, int h, const std::string& attrs) {
  return "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(w) +
         "\" height=\"" + std::to_string(h) + "\" " + attrs + "/>\n";
}

std::string instance_line(const Schedule& s, const DrawOptions& o) {
  std::string l = "p = " + std::to_string(s.p) +
                  (shows_root(s) ? ", root = " + std::to_string(s.root) : std::string()) +
                  ", blocks = " + std::to_string(s.blocks) + ", rounds = " + std::to_string(s.num_rounds);
  if (s.fold == FoldKind::ring)
    l += ", fold ring " + std::to_string(s.fold_ring);
  else if (s.fold == FoldKind::three_two)
    l += ", fold 3-2";
  else if (s.fold == FoldKind::two_one)
    l += ", fold (two-one)";
  if (o.bytes > 0) l += ", n = " + std::to_string(o.bytes) + " bytes";
  if (o.ppn > 0) l += ", " + std::to_string(o.ppn) + " ranks per node";
  return l;
}

/// Arrowhead markers: a triangle (copy) and a circled plus (reduce), per colour class.
std::string markers() {
  std::string o = "<defs>\n";
  for (const char* cls : {"flat", "intra", "inter", "cex", "wait"}) {
    const std::string c = link_colour(cls);
    o += "<marker id=\"copy-" + std::string(cls) +
         "\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" "
         "markerHeight=\"9\" "
         "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"" +
         c + "\"/></marker>\n";
    o += "<marker id=\"reduce-" + std::string(cls) +
         "\" viewBox=\"0 0 12 12\" refX=\"12\" refY=\"6\" markerUnits=\"userSpaceOnUse\" markerWidth=\"11\" "
         "markerHeight=\"11\" "
         "orient=\"auto\"><circle cx=\"6\" cy=\"6\" r=\"5\" fill=\"#ffffff\" stroke=\"" +
         c + "\" stroke-width=\"1.5\"/><path d=\"M6,3 V9 M3,6 H9\" stroke=\"" + c +
         "\" stroke-width=\"1.5\"/></marker>\n";
  }
  o += "</defs>\n";
  return o;
}

// ---- step diagram ----

/// One arrow: a send and, when there is one, the receive it matches (the k-th send of x to y
/// in a round matches the k-th receive of y from x, docs/architecture.md "The round model").
struct Arrow {
  int64_t from, to, round;
  const SendOp* send;
  const RecvOp* recv;  ///< null: no matching receive in this round
  int dup;             ///< how many earlier sends of this round go from `from` to `to`
};

/// Receives of one round without a matching send.
struct Stub {
  int64_t rank, peer, round;
  const RecvOp* recv;
};

uint64_t pair_key(int64_t x, int64_t y) { return uint64_t(x) << 32 | uint64_t(uint32_t(y)); }

/// Pairs the sends and receives of round t; linear in the round's ops (hash maps).
void match_round(const Schedule& s, int64_t t, std::vector<Arrow>& arrows, std::vector<Stub>& stubs) {
  std::unordered_map<uint64_t, std::vector<const RecvOp*>> recvs;  // (sender, receiver) -> receives in posting order
  for (int64_t y = 0; y < s.p; ++y)
    for (const Op& op : s.ranks[size_t(y)][size_t(t)])
      if (const auto* rv = std::get_if<RecvOp>(&op)) recvs[pair_key(rv->peer, y)].push_back(rv);
  std::unordered_map<uint64_t, size_t> used;
  for (int64_t x = 0; x < s.p; ++x)
    for (const Op& op : s.ranks[size_t(x)][size_t(t)])
      if (const auto* sd = std::get_if<SendOp>(&op)) {
        const uint64_t key = pair_key(x, sd->peer);
        size_t& k = used[key];
        const auto it = recvs.find(key);
        const RecvOp* rv = it != recvs.end() && k < it->second.size() ? it->second[k] : nullptr;
        arrows.push_back({x, sd->peer, t, sd, rv, int(k)});
        ++k;
      }
  std::unordered_map<uint64_t, size_t> seen;
  for (int64_t y = 0; y < s.p; ++y)
    for (const Op& op : s.ranks[size_t(y)][size_t(t)])
      if (const auto* rv = std::get_if<RecvOp>(&op)) {
        const uint64_t key = pair_key(rv->peer, y);
        const auto u = used.find(key);
        if (seen[key]++ >= (u == used.end() ? 0 : u->second)) stubs.push_back({y, rv->peer, t, rv});
      }
}

class Diagram {
 public:
  Diagram(const Schedule& s, const DrawOptions& o) : s_(s), o_(o), cex_(active_cex(o)) {}

  std::string render() {
    layout();
    std::string body;
    body += columns();
    body += rows();
    body += transfers();
    body += locals();
    body += counterexample();
    int y = grid_bottom_ + 28;
    body += caption(y);
    body += legend(y);
    body += round_list(y);
    height_ = y + 12;
    std::string out =
        header(width_, height_,
               "schedule " + s_.name + " implements " + collective_name(s_.collective) + ", " + instance_line(s_, o_));
    out += markers();
    out += text(12, 22, "schedule " + s_.name + " implements " + collective_name(s_.collective),
                "class=\"title\" font-size=\"14\" font-weight=\"bold\"");
    out += text(12, 40, instance_line(s_, o_), "class=\"subtitle\"");
    out += body;
    out += "</svg>\n";
    return out;
  }

 private:
  static const Counterexample* active_cex(const DrawOptions& o) {
    return o.counterexample && o.counterexample->kind != Counterexample::Kind::none ? o.counterexample : nullptr;
  }
  int row_y(int64_t r) const { return top_ + int(r) * row_h_ + row_h_ / 2; }
  std::string rank_label(int64_t r) const {
    std::string l = "rank " + std::to_string(r);
    if (shows_root(s_) && r == s_.root) l += " (root)";
    if (is_helper(s_, r)) l += " (fold helper)";
    return l;
  }
  std::string contribution_tag(int64_t r) const {
    if (!cex_) return "";
    const auto has = [r](const std::vector<int64_t>& v) { return std::find(v.begin(), v.end(), r) != v.end(); };
    if (has(cex_->missing_ranks)) return "missing";
    if (has(cex_->doubled_ranks)) return "twice";
    return "";
  }

  void layout() {
    const int64_t T = s_.num_rounds;
    row_h_ = s_.p <= 16 ? 40 : 26;
    for (int64_t t = 0; t < T; ++t) match_round(s_, t, arrows_, stubs_);
    // Column widths from the longest transfer label of the round.
    std::vector<size_t> longest(size_t(T), 0);
    for (const Arrow& a : arrows_)
      longest[size_t(a.round)] =
          std::max(longest[size_t(a.round)], transfer_label(a.send->blocks, s_, o_.bytes).size());
    size_t rank_chars = 0;
    for (int64_t r = 0; r < s_.p; ++r) rank_chars = std::max(rank_chars, rank_label(r).size());
    bool tags = false;
    for (int64_t r = 0; r < s_.p; ++r) tags |= !contribution_tag(r).empty();
    x_node_ = 10;
    x_rank_ = x_node_ + (o_.ppn > 0 ? 8 * kChar : 0);
    x_tag_ = x_rank_ + int(rank_chars) * kChar + 8;
    left_ = x_tag_ + (tags ? 8 * kChar : 0) + 6;
    top_ = 92;
    int x = left_;
    for (int64_t t = 0; t < T; ++t) {
      const int w = std::min(360, std::max(136, int(longest[size_t(t)]) * kChar + 48));
      col_x_.push_back(x);
      col_w_.push_back(w);
      x += w;
    }
    grid_right_ = x;
    grid_bottom_ = top_ + int(s_.p) * row_h_;
    width_ = std::max(640, grid_right_ + 16);
    // Text below the grid is wrapped or clipped to this width.
    text_chars_ = size_t(std::max(60, (width_ - 24) / kChar));
  }

  std::string columns() {
    std::string o = "<g class=\"rounds\">\n";
    for (int64_t t = 0; t < s_.num_rounds; ++t) {
      const std::string& label = s_.round_labels[size_t(t)];
      const bool mirror = is_mirror_round(label), fold = is_fold_round(label);
      const std::string cls = std::string("round") + (fold ? " fold" : "") + (mirror ? " mirror" : "");
      const char* fill = mirror ? kMirrorBg : fold ? kFoldBg : (t % 2 ? "#f8f8f8" : "#ffffff");
      const int x = col_x_[size_t(t)], w = col_w_[size_t(t)];
      o += "<g class=\"" + cls + "\" data-round=\"" + std::to_string(t) + "\"><title>round " + std::to_string(t) +
           ": " + esc(label) + "</title>\n";
      o += rect(x, top_ - 36, w, grid_bottom_ - top_ + 36, "fill=\"" + std::string(fill) + "\" stroke=\"#d0d0d0\"");
      std::string head = "round " + std::to_string(t);
      if (fold && mirror)
        head += " fold+mirror";
      else if (fold)
        head += " fold";
      else if (mirror)
        head += " mirror";
      o += text(x + 6, top_ - 20, head, "font-weight=\"bold\"");
      o += text(x + 6, top_ - 6, clip(label, (w - 10) / kChar), "font-size=\"10\" fill=\"#555555\"");
      o += "</g>\n";
    }
    return o + "</g>\n";
  }

  std::string rows() {
    std::string o = "<g class=\"ranks\">\n";
    for (int64_t r = 0; r < s_.p; ++r) {
      const bool root = shows_root(s_) && r == s_.root, helper = is_helper(s_, r);
      const int y = row_y(r);
      std::string cls = "rank";
      if (root) cls += " root";
      if (helper) cls += " helper";
      o += "<g class=\"" + cls + "\" data-rank=\"" + std::to_string(r) + "\">\n";
      if (root || helper)
        o += rect(x_rank_ - 4, y - row_h_ / 2 + 1, grid_right_ - x_rank_ + 4, row_h_ - 2,
                  "fill=\"" + std::string(root ? kRootBg : kHelperBg) + "\" fill-opacity=\"0.8\"");
      o += "<line x1=\"" + std::to_string(left_) + "\" y1=\"" + std::to_string(y) + "\" x2=\"" +
           std::to_string(grid_right_) + "\" y2=\"" + std::to_string(y) + "\" stroke=\"#b0b0b0\" stroke-width=\"1\"" +
           (helper ? " stroke-dasharray=\"2 3\"" : "") + "/>\n";
      std::string attrs;
      if (root)
        attrs = "font-weight=\"bold\"";
      else if (helper)
        attrs = "fill=\"#777777\" font-style=\"italic\"";
      o += text(x_rank_, y + 4, rank_label(r), attrs);
      const std::string tag = contribution_tag(r);
      if (!tag.empty())
        o += text(x_tag_, y + 4, tag,
                  "class=\"cex-contribution " + tag + "\" fill=\"" + std::string(tag == "missing" ? kRed : kInter) +
                      "\" font-weight=\"bold\"");
      o += "</g>\n";
      if (o_.ppn > 0 && r % o_.ppn == 0) {
        o += text(x_node_, y + 4, "node " + std::to_string(r / o_.ppn), "class=\"node\" fill=\"#555555\"");
        if (r > 0)
          o += "<line class=\"node-boundary\" x1=\"" + std::to_string(x_node_) + "\" y1=\"" +
               std::to_string(y - row_h_ / 2) + "\" x2=\"" + std::to_string(grid_right_) + "\" y2=\"" +
               std::to_string(y - row_h_ / 2) + "\" stroke=\"#555555\" stroke-width=\"1.5\"/>\n";
      }
    }
    return o + "</g>\n";
  }

  /// True when the counterexample names this transfer (the offending op, a race's two
  /// receives, or the receive that last wrote the failing block).
  bool highlighted(const Arrow& a) const {
    if (!cex_) return false;
    const Counterexample& c = *cex_;
    if (a.round == c.round && c.peer >= 0) {
      if (!c.peer_is_sender && a.from == c.rank && a.to == c.peer) return true;
      if (c.peer_is_sender && a.from == c.peer && a.to == c.rank) return true;
    }
    if (c.kind == Counterexample::Kind::race && a.round == c.round && a.to == c.rank &&
        (a.from == c.race_peers[0] || a.from == c.race_peers[1]) && a.recv && !(a.recv->blocks & c.blocks).empty())
      return true;
    if (c.write_round >= 0 && a.round == c.write_round && a.to == c.rank && a.recv && c.block >= 0 &&
        a.recv->blocks.contains(c.block))
      return true;
    return false;
  }

  std::string transfers() {
    std::string o = "<g class=\"transfers\">\n";
    // Labels stack per (rank, round, side) so that two sends of one rank do not overprint.
    std::unordered_map<uint64_t, int> stacked;
    for (const Arrow& a : arrows_) {
      const int x0 = col_x_[size_t(a.round)] + 10, x1 = col_x_[size_t(a.round)] + col_w_[size_t(a.round)] - 10;
      const int y0 = row_y(a.from) + 3 * a.dup, y1 = row_y(a.to) + 3 * a.dup;
      const bool reduce = a.recv && a.recv->reduce;
      const bool hl = highlighted(a);
      const std::string link = link_class(o_, a.from, a.to);
      const std::string colour_cls = hl || !a.recv ? "cex" : link;
      std::string cls = std::string("transfer ") + (reduce ? "reduce" : "copy") + " " + link;
      if (!a.recv) cls += " unmatched";
      if (hl) cls += " cex";
      const std::string label = transfer_label(a.send->blocks, s_, o_.bytes);
      o += "<g class=\"" + cls + "\" data-round=\"" + std::to_string(a.round) + "\" data-from=\"" +
           std::to_string(a.from) + "\" data-to=\"" + std::to_string(a.to) + "\" data-blocks=\"" +
           esc(format_blocks(a.send->blocks)) + "\">";
      o += "<title>round " + std::to_string(a.round) + ": rank " + std::to_string(a.from) + " sends " + esc(label) +
           " to rank " + std::to_string(a.to) +
           (a.recv ? (reduce ? ", which reduces" : ", which copies") : ", which posts no matching receive") + " [" +
           esc(origin_text(a.send->origin)) + "]</title>";
      o += "<line x1=\"" + std::to_string(x0) + "\" y1=\"" + std::to_string(y0) + "\" x2=\"" + std::to_string(x1) +
           "\" y2=\"" + std::to_string(y1) + "\" stroke=\"" + link_colour(colour_cls) + "\" stroke-width=\"" +
           (hl ? "2.5" : "1.5") + "\"" +
           (reduce    ? " stroke-dasharray=\"6 3\""
            : !a.recv ? " stroke-dasharray=\"2 3\""
                      : "") +
           " marker-end=\"url(#" + (reduce ? "reduce-" : "copy-") + colour_cls + ")\"/>";
      o += "<circle cx=\"" + std::to_string(x0) + "\" cy=\"" + std::to_string(y0) + "\" r=\"2.5\" fill=\"" +
           link_colour(colour_cls) + "\"/>";
      // The label sits beside the tail, on the side away from the arrow (above the row when
      // rows are too narrow for labels on both sides).
      const bool up = a.to < a.from && s_.p <= 16;
      int& n = stacked[uint64_t(a.from) << 33 | uint64_t(a.round) << 1 | (up ? 1 : 0)];
      const int off = 11 * n++;
      if (off <= row_h_ - 20) {
        const int ly = up ? y0 + 13 + off : y0 - 5 - off;
        o += text(x0 + 2, ly, clip(label, (col_w_[size_t(a.round)] - 24) / kChar),
                  "class=\"label\" font-size=\"10\" fill=\"" + std::string(hl ? kRed : "#222222") +
                      "\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"");
      } else {
        o += "\n";
      }
      if (o.back() != '\n') o += "\n";
      o += "</g>\n";
    }
    for (const Stub& st : stubs_) {
      const int x1 = col_x_[size_t(st.round)] + col_w_[size_t(st.round)] - 10, y1 = row_y(st.rank);
      const int y0 = y1 + (st.peer < st.rank ? -row_h_ / 2 : row_h_ / 2);
      o += "<g class=\"unmatched-recv\" data-round=\"" + std::to_string(st.round) + "\" data-from=\"" +
           std::to_string(st.peer) + "\" data-to=\"" + std::to_string(st.rank) + "\"><title>round " +
           std::to_string(st.round) + ": rank " + std::to_string(st.rank) + " receives " +
           esc(format_blocks(st.recv->blocks)) + " from rank " + std::to_string(st.peer) +
           ", which sends nothing to it in this round [" + esc(origin_text(st.recv->origin)) + "]</title>";
      o += "<line x1=\"" + std::to_string(x1 - 36) + "\" y1=\"" + std::to_string(y0) + "\" x2=\"" + std::to_string(x1) +
           "\" y2=\"" + std::to_string(y1) + "\" stroke=\"" + kRed +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\" marker-end=\"url(#" +
           (st.recv->reduce ? "reduce" : "copy") + "-cex)\"/>";
      o += text(x1 - 36 - 4, y0 + 4, "? " + std::to_string(st.peer),
                "font-size=\"10\" text-anchor=\"end\" fill=\"" + std::string(kRed) + "\"");
      o += "</g>\n";
    }
    return o + "</g>\n";
  }

  std::string locals() {
    std::string o = "<g class=\"locals\">\n";
    for (int64_t t = 0; t < s_.num_rounds; ++t)
      for (int64_t r = 0; r < s_.p; ++r) {
        int k = 0;
        for (const Op& op : s_.ranks[size_t(r)][size_t(t)]) {
          std::string glyph, what;
          if (const auto* lo = std::get_if<LocalOp>(&op)) {
            glyph = lo->reduce ? "+" : "=";
            what = std::string(lo->reduce ? "reduce " : "copy ") + format_blocks(lo->src) + " into " +
                   format_blocks(lo->blocks);
          } else if (const auto* pm = std::get_if<PermuteOp>(&op)) {
            glyph = "P";
            what = "permute";
            for (size_t j = 0; j < pm->to.size() && j < 16; ++j)
              what += " " + std::to_string(j) + "->" + std::to_string(pm->to[j]);
            if (pm->to.size() > 16) what += " ...";
          } else {
            continue;
          }
          const int cx = col_x_[size_t(t)] + col_w_[size_t(t)] / 2 + 16 * k++, cy = row_y(r);
          o += "<g class=\"local\" data-round=\"" + std::to_string(t) + "\" data-rank=\"" + std::to_string(r) +
               "\"><title>round " + std::to_string(t) + ": rank " + std::to_string(r) + " " + esc(what) + " [" +
               esc(origin_text(origin_of(op))) + "]</title>";
          o += rect(cx - 7, cy - 7, 14, 14, "rx=\"3\" fill=\"#ffffff\" stroke=\"#555555\"");
          o += text(cx, cy + 4, glyph, "text-anchor=\"middle\" font-size=\"11\" font-weight=\"bold\" fill=\"#333333\"");
          o += "</g>\n";
        }
      }
    return o + "</g>\n";
  }

  std::string cell(const std::string& cls, int64_t rank, int64_t round, const std::string& stroke,
                   const std::string& extra) const {
    if (rank < 0 || rank >= s_.p || round < 0 || round >= s_.num_rounds) return "";
    return "<rect class=\"" + cls + "\" data-rank=\"" + std::to_string(rank) + "\" data-round=\"" +
           std::to_string(round) + "\"" + extra + " x=\"" + std::to_string(col_x_[size_t(round)] + 2) + "\" y=\"" +
           std::to_string(row_y(rank) - row_h_ / 2 + 2) + "\" width=\"" + std::to_string(col_w_[size_t(round)] - 4) +
           "\" height=\"" + std::to_string(row_h_ - 4) + "\" fill=\"none\" stroke=\"" + stroke +
           "\" stroke-width=\"2.5\"/>\n";
  }

  std::string counterexample() {
    if (!cex_) return "";
    const Counterexample& c = *cex_;
    std::string o = "<g class=\"counterexample\" data-kind=\"" + std::string(counterexample_kind_name(c.kind)) +
                    "\" data-rank=\"" + std::to_string(c.rank) + "\" data-round=\"" + std::to_string(c.round) +
                    "\" data-block=\"" + std::to_string(c.block) + "\">\n";
    o += cell("cex-cell", c.rank, c.round, kRed, " data-block=\"" + std::to_string(c.block) + "\"");
    if (c.kind == Counterexample::Kind::deadlock && c.match_round >= 0)
      o += cell("cex-match", c.peer, c.match_round, kInter, "");
    if (c.write_round >= 0 && c.write_round != c.round) o += cell("cex-write", c.rank, c.write_round, kInter, "");
    // Deadlock: the wait-for chain, one curved arrow per edge in the round the waiter is stuck in.
    for (size_t i = 0; i + 1 < c.wait_for.size() && i < c.wait_rounds.size(); ++i) {
      const int64_t a = c.wait_for[i], b = c.wait_for[i + 1], t = c.wait_rounds[i];
      if (t < 0 || t >= s_.num_rounds) continue;
      const int xa = col_x_[size_t(t)] + col_w_[size_t(t)] / 3, xc = col_x_[size_t(t)] + col_w_[size_t(t)] - 14;
      const int ya = row_y(a), yb = row_y(b);
      o += "<g class=\"cex-wait\" data-from=\"" + std::to_string(a) + "\" data-to=\"" + std::to_string(b) +
           "\" data-round=\"" + std::to_string(t) + "\"><title>rank " + std::to_string(a) + " waits in round " +
           std::to_string(t) + " for rank " + std::to_string(b) + "</title><path d=\"M" + std::to_string(xa) + "," +
           std::to_string(ya) + " Q" + std::to_string(xc) + "," + std::to_string((ya + yb) / 2) + " " +
           std::to_string(xa) + "," + std::to_string(yb) + "\" fill=\"none\" stroke=\"" + kWait +
           "\" stroke-width=\"2.5\" stroke-dasharray=\"5 3\" marker-end=\"url(#copy-wait)\"/></g>\n";
    }
    return o + "</g>\n";
  }

  /// The counterexample's message below the grid.
  std::string caption(int& y) {
    if (!cex_) return "";
    std::string o = "<g class=\"cex-caption\">\n";
    const std::string head = std::string("counterexample (") + counterexample_kind_name(cex_->kind) + "):";
    o += text(12, y, head, "font-weight=\"bold\" fill=\"" + std::string(kRed) + "\"");
    y += 15;
    std::string msg = cex_->message;
    if (cex_->kind == Counterexample::Kind::deadlock && !cex_->wait_for.empty()) {
      msg += ". Wait-for chain:";
      for (size_t i = 0; i < cex_->wait_for.size(); ++i) msg += (i ? " -> " : " ") + std::to_string(cex_->wait_for[i]);
      if (cex_->cycle) msg += " (cycle)";
    }
    for (const std::string& line : wrap(msg, text_chars_)) {
      o += text(12, y, line, "fill=\"" + std::string(kRed) + "\"");
      y += 15;
    }
    y += 10;
    return o + "</g>\n";
  }

  std::string legend(int& y) {
    std::string o = "<g class=\"legend\">\n";
    o += text(12, y, "legend", "font-weight=\"bold\"");
    y += 8;
    struct Item {
      std::string kind, what;
    };
    std::vector<Item> items;
    // Arrow kinds actually drawn, in a fixed order.
    bool used[2][3] = {{false, false, false}, {false, false, false}};  // [reduce][flat, intra, inter]
    for (const Arrow& a : arrows_) {
      if (!a.recv) continue;  // unmatched: red and dotted, an entry of its own below
      const std::string link = link_class(o_, a.from, a.to);
      used[a.recv->reduce ? 1 : 0][link == "flat" ? 0 : link == "intra" ? 1 : 2] = true;
    }
    const std::string node = o_.ppn > 0 ? " (" + std::to_string(o_.ppn) + " consecutive ranks per node)" : "";
    const char* const what[2][3] = {
        {"transfer received by copy: block set, size", "copy within a node", "copy between nodes"},
        {"transfer received with reduce", "reduce within a node", "reduce between nodes"}};
    const char* const link_names[3] = {"flat", "intra", "inter"};
    bool first_link = true;
    for (int red = 0; red < 2; ++red)
      for (int l = 0; l < 3; ++l)
        if (used[red][l]) {
          items.push_back({std::string(red ? "reduce-" : "copy-") + link_names[l],
                           std::string(what[red][l]) + (l > 0 && first_link ? node : "")});
          if (l > 0) first_link = false;
        }
    bool any_local = false, any_helper = false, any_fold = false, any_mirror = false;
    for (int64_t r = 0; r < s_.p; ++r) {
      any_helper |= is_helper(s_, r);
      for (const Round& rd : s_.ranks[size_t(r)])
        for (const Op& op : rd) any_local |= !is_transfer(op);
    }
    for (const std::string& l : s_.round_labels) {
      any_fold |= is_fold_round(l);
      any_mirror |= is_mirror_round(l);
    }
    if (any_local) items.push_back({"local", "local reduce (+), local copy (=), permute (P)"});
    if (shows_root(s_)) items.push_back({"root", "the root"});
    if (any_helper) items.push_back({"helper", "fold helper: sits the body out"});
    if (any_fold) items.push_back({"fold", "fold round (elimination prologue / epilogue)"});
    if (any_mirror) items.push_back({"mirror", "mirrored round (replays a phase backwards)"});
    bool any_unmatched = false, any_highlighted = false;
    for (const Arrow& a : arrows_) {
      any_unmatched |= !a.recv;
      any_highlighted |= a.recv && highlighted(a);
    }
    if (any_unmatched) items.push_back({"unmatched", "unmatched send: no receive matches it in its round (red, dotted)"});
    if (!stubs_.empty()) items.push_back({"stub", "receive with no matching send in its round (red, dotted, ? sender)"});
    if (cex_) {
      items.push_back({"cex", "counterexample: the failing rank and round (red frame)"});
      if (any_highlighted) items.push_back({"cex-arrow", "the counterexample's transfers (red)"});
      if (cex_->kind == Counterexample::Kind::deadlock && cex_->match_round >= 0)
        items.push_back({"match", "where the peer posts the matching operation (orange frame)"});
      if (cex_->write_round >= 0 && cex_->write_round != cex_->round)
        items.push_back({"write", "where the block was last written (orange frame)"});
      if (!cex_->missing_ranks.empty() || !cex_->doubled_ranks.empty())
        items.push_back({"tags", "missing / twice: contributions missing from or counted twice in the block"});
      if (cex_->kind == Counterexample::Kind::deadlock)
        items.push_back({"wait", "deadlock: waits for (wait-for chain)"});
    }
    for (const Item& it : items) {
      y += 18;
      const int x = 16, my = y - 4;
      if (it.kind.rfind("copy-", 0) == 0 || it.kind.rfind("reduce-", 0) == 0) {
        const bool red = it.kind[0] == 'r';
        const std::string cls = it.kind.substr(it.kind.find('-') + 1);
        o += "<line x1=\"" + std::to_string(x) + "\" y1=\"" + std::to_string(my) + "\" x2=\"" + std::to_string(x + 44) +
             "\" y2=\"" + std::to_string(my) + "\" stroke=\"" + link_colour(cls) + "\" stroke-width=\"1.5\"" +
             (red ? " stroke-dasharray=\"6 3\"" : "") + " marker-end=\"url(#" + it.kind + ")\"/>\n";
      } else if (it.kind == "local") {
        o += rect(x + 15, my - 7, 14, 14, "rx=\"3\" fill=\"#ffffff\" stroke=\"#555555\"");
        o += text(x + 22, my + 4, "+", "text-anchor=\"middle\" font-weight=\"bold\"");
      } else if (it.kind == "wait") {
        o += "<line x1=\"" + std::to_string(x) + "\" y1=\"" + std::to_string(my) + "\" x2=\"" + std::to_string(x + 44) +
             "\" y2=\"" + std::to_string(my) + "\" stroke=\"" + kWait +
             "\" stroke-width=\"2.5\" stroke-dasharray=\"5 3\" marker-end=\"url(#copy-wait)\"/>\n";
      } else if (it.kind == "tags") {
        o += text(x, y, "missing", "fill=\"" + std::string(kRed) + "\" font-weight=\"bold\" font-size=\"9\"");
      } else if (it.kind == "stub") {
        o += "<line x1=\"" + std::to_string(x + 8) + "\" y1=\"" + std::to_string(my) + "\" x2=\"" + std::to_string(x + 44) +
             "\" y2=\"" + std::to_string(my) + "\" stroke=\"" + kRed +
             "\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\" marker-end=\"url(#copy-cex)\"/>\n";
        o += text(x + 6, my + 4, "?", "font-size=\"10\" text-anchor=\"end\" fill=\"" + std::string(kRed) + "\"");
      } else if (it.kind == "unmatched" || it.kind == "cex-arrow") {
        o += "<line x1=\"" + std::to_string(x) + "\" y1=\"" + std::to_string(my) + "\" x2=\"" + std::to_string(x + 44) +
             "\" y2=\"" + std::to_string(my) + "\" stroke=\"" + kRed + "\" stroke-width=\"" +
             (it.kind == "unmatched" ? "1.5\" stroke-dasharray=\"2 3\"" : "2.5\"") + " marker-end=\"url(#copy-cex)\"/>\n";
      } else {
        const char* fill = it.kind == "root"     ? kRootBg
                           : it.kind == "helper" ? kHelperBg
                           : it.kind == "fold"   ? kFoldBg
                           : it.kind == "mirror" ? kMirrorBg
                                                 : "none";
        const bool frame = it.kind == "cex" || it.kind == "match" || it.kind == "write";
        const char* stroke = it.kind == "cex" ? kRed : frame ? kInter : "#b0b0b0";
        o += rect(x, my - 7, 44, 14,
                  "fill=\"" + std::string(fill) + "\" stroke=\"" + stroke + "\"" + (frame ? " stroke-width=\"2.5\"" : ""));
      }
      o += text(x + 56, y, it.what);
    }
    y += 26;
    return o + "</g>\n";
  }

  std::string round_list(int& y) {
    std::string o = "<g class=\"round-labels\">\n";
    o += text(12, y, "rounds", "font-weight=\"bold\"");
    for (int64_t t = 0; t < s_.num_rounds; ++t) {
      y += 15;
      o += text(12, y, clip("round " + std::to_string(t) + ": " + s_.round_labels[size_t(t)], int(text_chars_)),
                "font-size=\"10\"");
    }
    if (s_.num_rounds == 0) {
      y += 15;
      o += text(12, y, "(no rounds)", "font-size=\"10\"");
    }
    y += 6;
    return o + "</g>\n";
  }

  const Schedule& s_;
  const DrawOptions& o_;
  const Counterexample* cex_;
  std::vector<Arrow> arrows_;
  std::vector<Stub> stubs_;
  std::vector<int> col_x_, col_w_;
  int row_h_ = 32, top_ = 92, left_ = 0, x_node_ = 0, x_rank_ = 0, x_tag_ = 0;
  int grid_right_ = 0, grid_bottom_ = 0, width_ = 0, height_ = 0;
  size_t text_chars_ = 80;
};

// ---- heat map ----

/// Colour of a value scaled to [1, 1000] on a yellow-orange-red ramp (ColorBrewer YlOrRd).
std::string heat_colour(int64_t permille) {
  static const int stops[5][3] = {{255, 237, 160}, {254, 178, 76}, {253, 141, 60}, {227, 26, 28}, {128, 0, 38}};
  const int64_t pos = std::min<int64_t>(std::max<int64_t>(permille, 0), 1000) * 4;  // [0, 4000]
  const int i = int(std::min<int64_t>(pos / 1000, 3));
  const int64_t f = pos - int64_t(i) * 1000;  // [0, 1000]
  char buf[8];
  int c[3];
  for (int k = 0; k < 3; ++k) c[k] = int(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f / 1000);
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

std::string heat_map(const Schedule& s, const DrawOptions& o) {
  const int64_t T = s.num_rounds;
  const int64_t rbin = std::max<int64_t>(1, (s.p + kMaxBins - 1) / kMaxBins);
  const int64_t cbin = std::max<int64_t>(1, (T + kMaxBins - 1) / kMaxBins);
  const int64_t R = (s.p + rbin - 1) / rbin, C = std::max<int64_t>(1, (T + cbin - 1) / cbin);
  const int cw = int(std::min<int64_t>(24, std::max<int64_t>(2, 960 / C)));
  const int ch = int(std::min<int64_t>(12, std::max<int64_t>(2, 720 / R)));
  // What each rank sends per round: blocks, or bytes with --bytes.
  std::vector<unsigned __int128> v(size_t(R * C), 0);
  unsigned __int128 vmax = 0;
  for (int64_t r = 0; r < s.p; ++r)
    for (int64_t t = 0; t < T; ++t)
      for (const Op& op : s.ranks[size_t(r)][size_t(t)])
        if (const auto* sd = std::get_if<SendOp>(&op)) {
          const int64_t k = sd->blocks.size();
          unsigned __int128& x = v[size_t((r / rbin) * C + t / cbin)];
          x += o.bytes > 0 ? bytes_of(k, s, o.bytes) : (unsigned __int128)uint64_t(k);
          vmax = std::max(vmax, x);
        }
  const int left = 96, top = 112;
  const int gw = int(C) * cw, gh = int(R) * ch;
  const int width = std::max(720, left + gw + 40);
  const Counterexample* cex =
      o.counterexample && o.counterexample->kind != Counterexample::Kind::none ? o.counterexample : nullptr;
  const std::string unit = o.bytes > 0 ? "bytes" : "blocks";
  std::string note = "p = " + std::to_string(s.p) + " is above " + std::to_string(o.max_diagram_p) +
                     ": heat map of the " + unit + " each rank sends per round";
  if (rbin > 1 || cbin > 1)
    note += " (one cell: " + std::to_string(rbin) + " rank" + (rbin > 1 ? "s" : "") + " x " + std::to_string(cbin) +
            " round" + (cbin > 1 ? "s" : "") + ", summed)";
  std::string b;
  b += markers();
  b += text(12, 22, "schedule " + s.name + " implements " + collective_name(s.collective),
            "class=\"title\" font-size=\"14\" font-weight=\"bold\"");
  b += text(12, 40, instance_line(s, o), "class=\"subtitle\"");
  b += text(12, 58, note, "class=\"note\" fill=\"#555555\"");
  b += "<g class=\"heatmap\" data-rank-bin=\"" + std::to_string(rbin) + "\" data-round-bin=\"" + std::to_string(cbin) +
       "\">\n";
  b += rect(left, top, gw, gh, "fill=\"#f4f4f4\" stroke=\"#b0b0b0\"");
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) {
      const unsigned __int128 x = v[size_t(i * C + j)];
      if (x == 0) continue;
      const int64_t pm = int64_t(std::max<unsigned __int128>(1, x * 1000 / vmax));
      b += rect(left + int(j) * cw, top + int(i) * ch, cw, ch, "fill=\"" + heat_colour(pm) + "\"");
    }
  b += "</g>\n";
  // Round kinds above the grid, fold helpers and the root left of it.
  b += "<g class=\"heatmap-marks\">\n";
  for (int64_t j = 0; j < C; ++j) {
    bool fold = false, mirror = false;
    for (int64_t t = j * cbin; t < std::min(T, (j + 1) * cbin); ++t) {
      fold |= is_fold_round(s.round_labels[size_t(t)]);
      mirror |= is_mirror_round(s.round_labels[size_t(t)]);
    }
    if (fold || mirror)
      b += rect(left + int(j) * cw, top - 10, cw, 6,
                "class=\"round-mark\" fill=\"" + std::string(mirror ? "#9467bd" : "#6b8fb8") + "\"");
  }
  for (int64_t i = 0; i < R; ++i) {
    bool helper = false;
    for (int64_t r = i * rbin; r < std::min(s.p, (i + 1) * rbin); ++r) helper |= is_helper(s, r);
    if (helper) b += rect(left - 10, top + int(i) * ch, 6, ch, "class=\"helper-mark\" fill=\"#999999\"");
  }
  if (shows_root(s)) b += rect(left - 18, top + int(s.root / rbin) * ch, 6, ch, "class=\"root-mark\" fill=\"#e6a800\"");
  b += "</g>\n";
  // Axes: rank ticks at least 14 px apart, round ticks at least 56 px apart.
  const int64_t rstep = std::max<int64_t>(1, (14 + ch - 1) / ch), cstep = std::max<int64_t>(1, (56 + cw - 1) / cw);
  for (int64_t i = 0; i < R; i += rstep)
    b += text(left - 22, top + int(i) * ch + ch / 2 + 4, "rank " + std::to_string(i * rbin),
              "text-anchor=\"end\" font-size=\"10\"");
  for (int64_t j = 0; j < C; j += cstep)
    b += text(left + int(j) * cw, top - 16, std::to_string(j * cbin), "font-size=\"10\"");
  b += text(left, top - 30, "round", "font-size=\"10\" font-weight=\"bold\"");
  int y = top + gh + 30;
  if (cex && cex->rank >= 0 && cex->round >= 0) {
    b += "<g class=\"counterexample\" data-kind=\"" + std::string(counterexample_kind_name(cex->kind)) +
         "\" data-rank=\"" + std::to_string(cex->rank) + "\" data-round=\"" + std::to_string(cex->round) +
         "\" data-block=\"" + std::to_string(cex->block) + "\">\n";
    b += "<rect class=\"cex-cell\" data-rank=\"" + std::to_string(cex->rank) + "\" data-round=\"" +
         std::to_string(cex->round) + "\" x=\"" + std::to_string(left + int(cex->round / cbin) * cw - 2) + "\" y=\"" +
         std::to_string(top + int(cex->rank / rbin) * ch - 2) + "\" width=\"" + std::to_string(cw + 4) +
         "\" height=\"" + std::to_string(ch + 4) + "\" fill=\"none\" stroke=\"" + kRed +
         "\" stroke-width=\"2\"/>\n</g>\n";
  }
  if (cex) {
    b += text(12, y, std::string("counterexample (") + counterexample_kind_name(cex->kind) + "):",
              "class=\"cex-caption\" font-weight=\"bold\" fill=\"" + std::string(kRed) + "\"");
    for (const std::string& line : wrap(cex->message, size_t((width - 24) / kChar))) {
      y += 15;
      b += text(12, y, line, "fill=\"" + std::string(kRed) + "\"");
    }
    y += 25;
  }
  // Colour scale.
  b += "<g class=\"legend\">\n";
  b += text(12, y, unit + " sent per cell", "font-weight=\"bold\"");
  y += 10;
  const std::string vmax_text = o.bytes > 0 ? fmt_bytes(vmax) : std::to_string(uint64_t(vmax));
  b += rect(16, y, 24, 12, "fill=\"#f4f4f4\" stroke=\"#b0b0b0\"");
  for (int k = 1; k <= 10; ++k) b += rect(16 + 24 * k, y, 24, 12, "fill=\"" + heat_colour(k * 100) + "\"");
  b += text(16, y + 26, "0", "font-size=\"10\"");
  b += text(16 + 24 * 11, y + 26, vmax_text, "font-size=\"10\" text-anchor=\"end\"");
  y += 46;
  if (shows_root(s)) {
    b += rect(16, y - 9, 6, 12, "fill=\"#e6a800\"");
    b += text(30, y, "the root's row", "font-size=\"10\"");
  }
  b += rect(176, y - 9, 6, 12, "fill=\"#999999\"");
  b += text(190, y, "fold helpers", "font-size=\"10\"");
  b += rect(296, y - 6, 12, 6, "fill=\"#6b8fb8\"");
  b += text(314, y, "fold rounds", "font-size=\"10\"");
  b += rect(416, y - 6, 12, 6, "fill=\"#9467bd\"");
  b += text(434, y, "mirrored rounds", "font-size=\"10\"");
  if (cex && cex->rank >= 0 && cex->round >= 0) {
    y += 18;
    b += rect(16, y - 10, 12, 12, "fill=\"none\" stroke=\"" + std::string(kRed) + "\" stroke-width=\"2\"");
    b += text(36, y, "counterexample: the failing rank and round (red frame)", "font-size=\"10\"");
  }
  b += "</g>\n";
  y += 16;
  std::string out = header(
      width, y, "schedule " + s.name + " implements " + collective_name(s.collective) + ", " + instance_line(s, o));
  return out + b + "</svg>\n";
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

}  // namespace

bool draw_uses_heat_map(const Schedule& s, const DrawOptions& opt) { return s.p > opt.max_diagram_p; }

std::string draw_svg(const Schedule& s, const DrawOptions& opt) {
  if (draw_uses_heat_map(s, opt)) return heat_map(s, opt);
  return Diagram(s, opt).render();
}

bool svg_to_png(const std::string& svg, std::string& png, std::string& error) {
  char dir[] = "/tmp/bine-draw-XXXXXX";
  if (!mkdtemp(dir)) {
    error = "cannot create a temporary directory for rsvg-convert";
    return false;
  }
  const std::string in = std::string(dir) + "/in.svg", out = std::string(dir) + "/out.png",
                    log = std::string(dir) + "/err.txt";
  auto cleanup = [&] {
    unlink(in.c_str());
    unlink(out.c_str());
    unlink(log.c_str());
    rmdir(dir);
  };
  {
    std::ofstream f(in, std::ios::binary);
    if (!(f << svg)) {
      error = "cannot write a temporary file for rsvg-convert";
      cleanup();
      return false;
    }
  }
  const pid_t pid = fork();
  if (pid < 0) {
    error = "cannot start rsvg-convert";
    cleanup();
    return false;
  }
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    execlp("rsvg-convert", "rsvg-convert", "-f", "png", "-o", out.c_str(), in.c_str(), static_cast<char*>(nullptr));
    _exit(errno == ENOENT ? 127 : 126);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 127) {
    error = "rsvg-convert not found (install the Debian package librsvg2-bin)";
    cleanup();
    return false;
  }
  if (code != 0 || !read_file(out, png)) {
    std::string msg;
    read_file(log, msg);
    msg = msg.substr(0, msg.find('\n'));
    error = "rsvg-convert failed (" + (code < 0 ? std::string("killed") : "exit " + std::to_string(code)) + ")" +
            (msg.empty() ? "" : ": " + msg);
    cleanup();
    return false;
  }
  cleanup();
  return true;
}

}  // namespace bine
