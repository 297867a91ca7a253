#!/usr/bin/env python3
"""The command line's contract for bad or unusual invocations (docs/cli.md).

Usage: run.py BINE_CC SOURCE_DIR

Each case runs bine-cc and checks the exit status and what it prints: errors name what is
wrong, --diagnostics-format json never prints text, '-' reads standard input, --version
prints the project version of CMakeLists.txt. Exit 0 when every case passes.
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def run(bine, args, cwd, stdin=None, mem_bytes=None, env=None):
    def limit():  # an address-space limit for cases that must stay small (None: none)
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    r = subprocess.run([bine, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120,
                       preexec_fn=limit if mem_bytes else None, env=dict(os.environ, **env) if env else None)
    return r.returncode, r.stdout, r.stderr


GIB = 1 << 30


def resource_limit_cases(case, tmp):
    """Issue 47, item 2: an instance that does not fit in memory is `error: resource limit:
    WHAT ...; OPTION lowers it`, exit 2, in every verb, whether an account refuses it
    before allocating or an allocation fails (docs/cli.md, docs/verifier.md "Memory")."""
    ring = ["dsl/lib/baselines.bine", "--schedule", "ring_allreduce"]
    # 2(p - 1) = 131070 rounds x 65536 ranks x 4 bytes of round-store index: 32 GiB, refused
    # once rank 0 has run, before the index is allocated.
    index = r"ring_allreduce at p=65536: its round store's index \(131070 rounds x 65536 ranks\) would take 32\.0 GiB, above the [0-9.]+ GiB an instance may use here \(the [0-9.]+ GiB address-space limit \(ulimit -v\), less [0-9.]+ MiB\)"
    for verb, extra, option in (("check", ["--ranks", "65536"], "--ranks"), ("schedule", ["-p", "65536", "--json"], "-p"),
                                ("draw", ["-p", "65536", "-o", os.path.join(tmp, "ring.svg")], "-p"),
                                ("traffic", ["-p", "65536", "--machine", "ppn=4"], "-p"),
                                ("cost", ["-p", "65536", "--bytes", "1024", "--alpha", "1", "--beta", "1", "--gamma", "1"], "-p"),
                                ("compile", ["--verify-ranks", "65536", "-o", os.path.join(tmp, "ring.h")], "--verify-ranks")):
        case(f"{verb}: ring_allreduce at p = 65536 is a resource limit, exit 2", [verb, *ring, *extra], 2,
             err=r"^bine-cc: error: resource limit: " + index + "; a smaller " + re.escape(option) + r" lowers it\n$",
             mem_bytes=2 * GIB)
    case("resource limit with --diagnostics-format json", ["check", *ring, "--ranks", "65536", "--diagnostics-format", "json"],
         2, err=r'"message": "resource limit: ring_allreduce at p=65536', json_stderr=True, mem_bytes=2 * GIB)
    # 10^7 sends of one rank in one round: the round pipeline's operations (184 bytes each,
    # in a vector that doubles) reach the budget at about 3 million.
    zloop = os.path.join(tmp, "zloop.bine")
    with open(zloop, "w") as f:
        f.write("schedule zloop implements allreduce {\n  blocks 1\n  round { for z in 0 .. 10000000 { send all to r + 1 } }\n}\n")
    case("check: 10^7 sends in one round is a resource limit", ["check", zloop, "--ranks", "1"], 2,
         err=r"^bine-cc: error: resource limit: zloop at p=1: rank 0's operations \(\d+ so far, \d+ of them in the round opened at "
             r"line 3\) would take .*; fewer operations per round and rank \(the schedule's loop bounds\) or a smaller --ranks lower it\n$",
         mem_bytes=2 * GIB)
    # An allocation that fails where no account refused first (BINE_FAIL_ALLOCATIONS_ABOVE
    # makes every allocation above 1 MiB fail): the same error, with the size asked for.
    case("an allocation failure is a resource limit too", ["check", *ring, "--ranks", "300"], 2,
         err=r"^bine-cc: error: resource limit: out of memory while (building the instance of|verifying) ring_allreduce at p=300: "
             r"an allocation of [0-9.]+ (KiB|MiB) failed \(the process may use .*\); a smaller --ranks lowers it\n$",
         env={"BINE_FAIL_ALLOCATIONS_ABOVE": str(1 << 20)})
    # What fits: the dissemination barrier at p = 16384 (2 x p^2 / 8 bytes, 64 MiB) and an
    # allreduce on 2^24 blocks at p = 2 (block classes: the cost of one block).
    case("check: dissemination_barrier at p = 16384 in 2 GiB", ["check", "dsl/lib/barrier.bine", "--schedule",
                                                                "dissemination_barrier", "--ranks", "16384"], 0,
         out=r"verified p=16384\.\.16384, 1 instance", mem_bytes=2 * GIB)
    big = os.path.join(tmp, "big.bine")
    with open(big, "w") as f:
        f.write("schedule big implements allreduce {\n  blocks 16777216\n  exchange all / all with 1 - r reduce\n}\n")
    case("check --stats: an allreduce on 2^24 blocks at p = 2 costs kilobytes", ["check", big, "--ranks", "2", "--stats"], 0,
         out=r"big \(allreduce\): verified p=2\.\.2, 1 instance; .*\n  stats: largest instance p=2: [0-9.]+ KiB accounted "
             r"\(instance [0-9.]+ (bytes|KiB), verifier [0-9.]+ KiB\); process peak [0-9.]+ MiB; [0-9.]+ s\n$",
         mem_bytes=GIB)
    out = case("check --stats --json: the stats key", ["check", *ring, "--ranks", "1..8", "--stats", "--json"], 0)
    try:
        st = json.loads(out)[0]["stats"]
        if not (st["p"] == 8 and st["instance_bytes"] > 0 and st["accounted_bytes"] == st["instance_bytes"] + st["verifier_bytes"]
                and st["peak_rss_bytes"] > 0):
            raise ValueError(st)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        print(f"FAIL check --stats --json content: {e}")
        failures.append("stats json")


def counterexample_cases(case, tmp):
    """Issue 47, item 4: counterexamples that say enough (docs/verifier.md). Each expected
    text was derived by hand (the comments)."""
    # Ring allreduce, p = 3: round 0 gives rank 0 block 2 = x0 + x2 (rank 2 is the higher
    # sender: own + sent), round 1 has rank 1 receive it from rank 0 (lower: sent + own):
    # ((x0 + x2) + x1), which the allgather copies everywhere. p = 1, 2 are in rank order,
    # and rank 0's blocks 0 and 1 at p = 3 too (x0 + (x1 + x2) and the copy of ((x0 + x1) + x2)).
    ring = ["dsl/lib/baselines.bine", "--schedule", "ring_allreduce", "--ranks", "1..4"]
    case("order witness: ring_allreduce names p, rank, block and the bracketing", ["check", *ring], 0,
         out=r"order-preserving: no; same bracketing on all ranks: yes\n  not order-preserving: at p=3, rank 0, block 2 holds "
             r"\(\(x0 \+ x2\) \+ x1\): its reduction \(x0 \+ x2\) combines rank 0 with rank 2, leaving out rank 1 between them\n$")
    got = case("order witness in --json", ["check", *ring, "--json"], 0)
    try:
        w = json.loads(got)[0]["order_witness"]
        if w != {"p": 3, "root": 0, "rank": 0, "block": 2, "bracketing": "((x0 + x2) + x1)",
                 "reason": "its reduction (x0 + x2) combines rank 0 with rank 2, leaving out rank 1 between them"}:
            raise ValueError(w)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        print(f"FAIL order witness in --json: {e}")
        failures.append("order witness json")
    # Bine allreduce, p = 8 (the first p out of rank order, docs/verifier.md's table): with
    # q = even(r) ? r + rho(s) : r - rho(s), rho = 1, -1, 3, rank 0 meets 1, 7, 3 and rank 1
    # meets 0, 2, 6; the lower rank's data on the left.
    bine = ["dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_lat", "--ranks", "8"]
    case("bracketing witness: bine_allreduce_lat at p = 8 names both ranks' bracketings", ["check", *bine], 0,
         out=re.escape("  not order-preserving: at p=8, rank 0, block 0 holds ((x{0-1} + x{6-7}) + x{2-5}): its reduction "
                       "(x{0-1} + x{6-7}) combines ranks {0-1} with ranks {6-7}, leaving out ranks {2-5} between them\n"
                       "  not the same bracketing: at p=8, block 0: rank 0 holds (((x0 + x1) + (x6 + x7)) + ((x2 + x3) + (x4 + x5))), "
                       "rank 1 holds (((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))); the first subterms that differ: rank 0 "
                       "reduces ((x0 + x1) + (x6 + x7)) where rank 1 reduces ((x0 + x1) + (x2 + x3))\n") + "$")
    # Rank 0 sends in rounds 0, 1, 2 and rank 1 receives in rounds 1, 2, 3: rank 0's round-0
    # send is stuck. Rank 1's receives of rounds 1 and 2 are matched there (by rank 0's sends
    # of those rounds); the unmatched one is round 3's, which the note names.
    shifted = os.path.join(tmp, "shifted.bine")
    with open(shifted, "w") as f:
        f.write("schedule shifted implements allreduce {\n  requires p == 2\n  blocks 1\n  for s in 0 .. 4 {\n"
                "    if r == 0 && s < 3 { send all to 1 }\n    if r == 1 && s > 0 { recv all from 0 reduce }\n  }\n}\n")
    case("deadlock: the note names the unmatched receive, not a matched one", ["check", shifted, "--ranks", "2"], 1,
         err=r"shifted\.bine:6:26: note: rank 1 posts the matching receive in round 3 \(its receive of blocks \{0\} from rank 0, "
             r"unmatched there\)\n")
    # Block 1 is written by round 0's exchange only ({0, 1} on rank 0); the postcondition,
    # checked after round 1, is reported at round 0, the round of that statement.
    late = os.path.join(tmp, "late.bine")
    with open(late, "w") as f:
        f.write("schedule late implements allreduce {\n  requires p == 4\n  blocks 2\n  exchange all / all with r ^ 1 reduce\n"
                "  exchange block(0) / block(0) with r ^ 2 reduce\n}\n")
    case("missing contribution reported at the round of the statement it points at", ["check", late, "--ranks", "4"], 1,
         err=r"late\.bine:4:3: error: p=4: rank 0, round 0, block 1: postcondition of allreduce fails: missing the contributions "
             r"of ranks \{2-3\}\n")
    # Recursive doubling one step short at p = 256: rank 0 holds ranks 0..127.
    short = os.path.join(tmp, "short.bine")
    with open(short, "w") as f:
        f.write("schedule rd_short implements allreduce {\n  requires is_pow2(p)\n  blocks 1\n  for s in 0 .. log2(p) - 1 {\n"
                "    exchange all / all with r ^ (1 << s) reduce\n  }\n}\n")
    case("rank sets print as ranges", ["check", short, "--ranks", "256"], 1,
         err=r"p=256: rank 0, round 6, block 0: postcondition of allreduce fails: missing the contributions of ranks \{128-255\}\n")


failures = []


def main():
    bine, src = sys.argv[1], sys.argv[2]

    def case(name, args, rc, err=None, out=None, stdin=None, json_stderr=False, mem_bytes=None, env=None):
        got_rc, got_out, got_err = run(bine, args, src, stdin, mem_bytes, env)
        problems = []
        if got_rc != rc:
            problems.append(f"exit {got_rc}, expected {rc}")
        if err is not None and not re.search(err, got_err):
            problems.append(f"stderr {got_err!r} lacks /{err}/")
        if out is not None and not re.search(out, got_out):
            problems.append(f"stdout {got_out[:200]!r} lacks /{out}/")
        if json_stderr:
            try:
                diags = json.loads(got_err)
                if not isinstance(diags, list) or not diags:
                    problems.append("JSON diagnostics: not a non-empty array")
            except json.JSONDecodeError:
                problems.append(f"stderr is not JSON: {got_err!r}")
        print(("FAIL " if problems else "PASS ") + name + ("" if not problems else ": " + "; ".join(problems)))
        if problems:
            failures.append(name)
        return got_out

    version = re.search(r"project\(bine_cc VERSION ([0-9.]+)", open(os.path.join(src, "CMakeLists.txt")).read()).group(1)
    case("--version prints the project version", ["--version"], 0, out=rf"^bine-cc {re.escape(version)}\n$")
    # Issue 47, item 5: bad input refused clearly, exit 0/1/2 only.
    tmp = tempfile.mkdtemp()
    only_fn = os.path.join(tmp, "only_fn.bine")
    with open(only_fn, "w") as f:
        f.write("fn twice(x) = 2 * x\n")
    empty = os.path.join(tmp, "empty.bine")
    open(empty, "w").close()
    hdr = os.path.join(tmp, "out.h")
    for verb, extra, what in (("lower", [], "nothing to lower"), ("compile", ["-o", hdr], "no header written"),
                              ("tune", ["--alpha", "1", "--beta", "1", "--gamma", "1"], "no table written"),
                              ("traffic", ["-p", "8", "--machine", "ppn=4"], "no traffic to count")):
        for f in (only_fn, empty):
            case(f"{verb} of {os.path.basename(f)}: no schedule is an error", [verb, f, *extra], 1,
                 err=rf"{re.escape(f)}:1:1: error: no schedule in the input files: {what}")
    if os.path.exists(hdr):
        failures.append("compile of a file without schedules wrote a header")
        print("FAIL compile of a file without schedules wrote a header")
    case("synth bbs --name of a keyword", ["synth", "bbs", "--topology", "grid:2x2", "--bine", os.path.join(tmp, "k.bine"),
                                           "--name", "schedule"], 2, err=r"--name 'schedule' is a keyword")
    case("synth with an unknown method", ["synth", "foo"], 2, err=r"unknown synth method 'foo' \(methods: bbs\)")
    case("synth without a method", ["synth"], 2, err=r"synth needs a method")
    case("draw --bytes -1 does not wrap", ["draw", "dsl/lib/bine_bcast.bine", "--schedule", "bine_bcast_lat", "-p", "4",
                                           "--bytes", "-1"], 2, err=r"--bytes: must be 0 or more, got -1")
    case("draw --ppn 0", ["draw", "dsl/lib/bine_bcast.bine", "--schedule", "bine_bcast_lat", "-p", "4", "--ppn", "0"], 2,
         err=r"--ppn: must be an integer of 1 or more, got 0")
    for bad in ("nan", "inf", "-1"):
        case(f"tune --alpha {bad}", ["tune", "dsl/lib/baselines.bine", "--alpha", bad, "--beta", "1", "--gamma", "1"], 2,
             err=rf"--alpha: must be a finite number of 0 or more, got {re.escape(bad)}")
    case("check --draw x.pdf", ["check", "dsl/lib/bine_bcast.bine", "--draw", os.path.join(tmp, "x.pdf")], 2,
         err=r"--draw writes SVG or PNG: the file name must end in \.svg or \.png")
    for verb in ("cost", "traffic"):
        extra = ["--alpha", "1", "--beta", "1", "--gamma", "1", "--bytes", "64"] if verb == "cost" else ["--machine", "ppn=4"]
        case(f"{verb} --elem-size 0", [verb, "dsl/lib/baselines.bine", "--schedule", "ring_allreduce", "-p", "4",
                                       "--elem-size", "0", *extra], 2, err=r"--elem-size: must be an integer of 1 or more, got 0")
    case("compile --verify-ranks states the limit", ["compile", "dsl/lib/bine_bcast.bine", "--verify-ranks", "1..2000000"], 2,
         err=r"--verify-ranks expects A\.\.B or P with 1 <= A <= B <= 1048576, got '1\.\.2000000'")
    case("a file that does not exist: exit 2", ["check", os.path.join(tmp, "missing.bine")], 2)
    resource_limit_cases(case, tmp)
    counterexample_cases(case, tmp)
    garbage = os.path.join(tmp, "garbage.txt")
    with open(garbage, "w") as f:
        f.write("hello world\n")
    case("traffic --machine leonardo:FILE without its map says which map it looked for",
         ["traffic", "dsl/lib/baselines.bine", "--schedule", "ring_allreduce", "-p", "8", "--machine", "leonardo:" + garbage], 2,
         err=r"cannot read '.*/\.\./map\.txt' \(the node map that leonardo:.*garbage\.txt implies: .*map=FILE\)")
    case("an unknown command is named", ["frobnicate", "x"], 2, err=r"unknown command 'frobnicate' \(commands: .*check")
    case("schedule without -p", ["schedule", "dsl/lib/bine_bcast.bine"], 2, err=r"schedule needs a process count: -p N")
    case("schedule --ranks N is refused with the right spelling",
         ["schedule", "dsl/lib/bine_bcast.bine", "--ranks", "4"], 2, err=r"-p N; --ranks A\.\.B is the range of check")
    case("schedule -p abc blames -p", ["schedule", "dsl/lib/bine_bcast.bine", "-p", "abc"], 2, err=r"^-p:")
    case("--all-roots-up-to negative", ["check", "dsl/lib/bine_bcast.bine", "--all-roots-up-to", "-1"], 2,
         err=r"--all-roots-up-to must be 0 or more")
    # Roots sampled at every p: 0, 1, p/2, p-1, distinct and below p (p = 1: 1, p = 2: 2,
    # p = 3: 3 roots), so bine_bcast_lat has 1 + 2 + 3 = 6 instances and none is invalid.
    case("--all-roots-up-to 0 samples valid roots at small p",
         ["check", "dsl/lib/bine_bcast.bine", "--schedule", "bine_bcast_lat", "--ranks", "1..3", "--all-roots-up-to", "0"],
         0, out=r"verified p=1\.\.3, 6 instances")
    # check --landing (docs/utofu.md, "Static landing layout"): a binomial-tree bcast sends p - 1
    # messages, each block once into a rank that never touched it (1 + ... + 7 = 28 at p = 1..8,
    # all direct); a reduce's messages are reductions (none direct); the JSON key keeps keys sorted.
    case("check --landing: a bcast lands all of its p - 1 transfers per p directly",
         ["check", "dsl/lib/bine_bcast.bine", "--schedule", "bine_bcast_lat", "--ranks", "1..8", "--landing"], 0,
         out=r"\n  landing layout \(p=1\.\.8, 8 instances\): 28 of 28 transfers land directly in the receiver's vector, proved\n$")
    case("check --landing: a reduce lands none, and says why",
         ["check", "dsl/lib/bine_tree.bine", "--schedule", "bine_reduce_lat", "--ranks", "1..8", "--landing"], 0,
         out=r"0 of 28 transfers land directly(.|\n)*staged: line \d+ -> line \d+: at p=2, .*the receive reduces")
    case("check --landing --json: a sorted landing key",
         ["check", "dsl/lib/bine_bcast.bine", "--schedule", "bine_bcast_lat", "--ranks", "1..8", "--landing", "--json"], 0,
         out=r'"instances":\d+,"landing":\{"analysed":true,"direct":28,"instances":8,"p_hi":8,"p_lo":1,"staged":\[\],"transfers":28\},"ok":true')
    case("cost --bytes -1 does not wrap", ["cost", "dsl/lib/baselines.bine", "--schedule", "ring_allreduce", "-p", "4",
                                           "--bytes", "-1", "--alpha", "1", "--beta", "1", "--gamma", "1"],
         2, err=r"--bytes: must be 0 or more, got -1")
    # cost --counts (irregular blocks): bad text, a disagreeing --bytes, neither given, the
    # wrong number of blocks; a good one prints the layout.
    cost_ag = ["cost", "dsl/lib/baselines.bine", "--schedule", "ring_allgather", "-p", "4", "--alpha", "1", "--beta", "1",
               "--gamma", "0"]
    case("cost --counts with a negative count", cost_ag + ["--counts", "1,-2,3,4"], 2,
         err=r"--counts expects non-negative element counts separated by commas, got '1,-2,3,4'")
    case("cost --counts disagreeing with --bytes", cost_ag + ["--counts", "1,2,3,4", "--bytes", "44"], 2,
         err=r"--bytes 44 disagrees with --counts \(10 elements of 4 bytes\)")
    case("cost without --bytes or --counts", cost_ag, 2, err=r"cost needs --bytes N \(the vector\) or --counts")
    case("cost --counts of the wrong length", cost_ag + ["--counts", "1,2,3"], 1,
         err=r"the counts vector has 3 entries, the instance 4 blocks")
    case("cost --counts prints the irregular layout", cost_ag + ["--counts", "0,5,0,100"], 0,
         out=r"vector: 420 bytes = 105 elements of 4 bytes, 4 blocks of irregular sizes \(elements\): 0 5 0 100")
    # bine-cc lower: the composed schedule's body inlined as phase #0 (its statements keep
    # their source file and line), its checks hoisted as "use #0", the mirror that ends the
    # body marked final; an overridden param is bound to the caller's value.
    lib = sorted(os.path.join("dsl/lib", f) for f in os.listdir(os.path.join(src, "dsl/lib")) if f.endswith(".bine"))
    case("lower inlines a composed schedule, hoists its checks and marks the final mirror",
         ["lower", *lib, "--schedule", "bine_allreduce_rsag"], 0,
         out=r"(?s)use #0 reduce_scatter = bine_reduce_scatter .*check requires is_pow2\(p\).*"
             r"phase #0 reduce_scatter = use #0 bine_reduce_scatter \(inlined\).*exchange .*bine_butterfly\.bine:\d+\n"
             r"\s+phase #1 allgather = mirror\(#0 reduce_scatter\) \[final\]")
    case("lower binds an overridden param to the caller's value",
         ["lower", *lib, "--schedule", "rt_allreduce_lat"], 0, out=r"param whole\.halving@\d+ = 0  // set by the caller")
    with tempfile.TemporaryDirectory() as tmp:
        # Composition that doubles at every level (each schedule uses the previous twice):
        # s_k inlines 2^(k+1) - 2 uses; above 4096 it is refused, quickly, with a diagnostic
        # at the use (a bcast repeated is still a bcast, so s11 verifies).
        deep = os.path.join(tmp, "deep.bine")
        with open(deep, "w") as f:
            f.write("schedule s0 implements bcast {\n  requires p == 2\n  blocks 1\n"
                    "  if r == root { send all to 1 - r } else { recv all from 1 - r }\n}\n")
            for k in range(1, 14):
                f.write(f"schedule s{k} implements bcast {{\n  blocks 1\n  phase a = s{k - 1}\n  phase b = s{k - 1}\n}}\n")
        case("lower: exponential composition is a diagnostic, not a hang",
             ["lower", deep, "--schedule", "s13"], 1, err=r"deep\.bine:\d+:\d+: error: schedule 's13' inlines more than 4096 composed schedules")
        case("check: exponential composition is a diagnostic, not a hang",
             ["check", deep, "--schedule", "s13", "--ranks", "2..2"], 1, err=r"inlines more than 4096 composed schedules")
        case("check: s12 (8190 inlined uses) is refused",
             ["check", deep, "--schedule", "s12", "--ranks", "2..2"], 1, err=r"inlines more than 4096 composed schedules")
        case("check: s11 (4094 inlined uses) verifies", ["check", deep, "--schedule", "s11", "--ranks", "2..2"], 0,
             out=r"s11 \(bcast\): verified p=2\.\.2, 2 instances")
    with tempfile.TemporaryDirectory() as tmp:
        # A block filter over fns that call the previous one twice, 25 levels deep, on a
        # lane-dependent argument: the step limit stops it, in about as long as the
        # block-by-block loop takes and in little memory (the batched filter gives up at 8 MiB
        # of lane arrays; before that bound it kept 2 KiB per call: 24 GB at p = 4).
        expfn = os.path.join(tmp, "expfn.bine")
        with open(expfn, "w") as f:
            f.write("fn g0(x) = x + 1\n")
            for k in range(1, 26):
                f.write(f"fn g{k}(x) = g{k - 1}(x) + g{k - 1}(x + 1)\n")
            f.write("schedule s implements allgather {\n  blocks p\n  send { i in all if g25(i) > 0 } to r + 1\n"
                    "  recv all from r - 1\n}\n")
        case("check: a filter over exponentially many fn calls stops at the step limit, in 1 GiB",
             ["check", expfn, "--ranks", "4"], 1, err=r"more than 50000000 loop iterations and fn calls", mem_bytes=1 << 30)
    with tempfile.TemporaryDirectory() as tmp:
        # Generated C names must be distinct: x_init is x's persistent form, plan_start the
        # header's own; the header must not be emitted with two definitions of one name.
        clash = os.path.join(tmp, "clash.bine")
        body = "  blocks 1\n  for s in 0 .. log2(p) { exchange all / all with r ^ (1 << s) reduce }\n"
        with open(clash, "w") as f:
            for name in ("x", "x_init", "plan_start"):
                f.write(f"schedule {name} implements allreduce {{\n  requires is_pow2(p)\n{body}}}\n")
        out_h = os.path.join(tmp, "clash.h")
        case("compile: a schedule named like another's _init is an error", ["compile", clash, "--verify-ranks", "1..4", "-o", out_h],
             1, err=r"the generated name 'bcc_x_init' of schedule 'x_init' is also defined by schedule 'x'; rename the schedule")
        case("compile: a schedule named like the header's plan_start is an error",
             ["compile", clash, "--schedule", "plan_start", "--verify-ranks", "1..4", "-o", out_h],
             1, err=r"'bcc_plan_start' of schedule 'plan_start' is also defined by a function of the header itself")
        case("compile: x alone has no clash", ["compile", clash, "--schedule", "x", "--verify-ranks", "1..4", "-o", out_h], 0)
        # The clash check is the target's names (Target::defined_names): the cuda target's
        # functions are <stem>_cuda, _cuda_inproc, _cuda_applicable and its own cuda_*, so
        # the three schedules have distinct names there.
        # The pipeline's stages in order on stderr (--log-passes): a schedule the target cannot
        # lower stops at the target stage, unverified.
        case("check --log-passes: lower, verify, analyse per schedule, in order",
             ["check", "dsl/lib/bine_bcast.bine", "--ranks", "1..4", "--landing", "--log-passes"], 0,
             err=r"pass lower bine_bcast_lat: ok \([0-9.]+ ms\)\npass verify bine_bcast_lat: verified p = 1\.\.4 "
                 r"\([0-9.]+ ms\)\npass analyse bine_bcast_lat: landing [0-9]+/[0-9]+ direct")
        case("compile --log-passes: a schedule the target lacks stops at the target stage",
             ["compile", "dsl/lib/barrier.bine", "--target", "cuda", "--verify-ranks", "1..4", "--log-passes", "-o", out_h], 0,
             err=r"pass target dissemination_barrier: does not support barrier schedules \([0-9.]+ ms\)\n"
                 r"(?!pass verify dissemination_barrier)")
        case("compile --target cuda: the mpi target's clashes are not the cuda target's",
             ["compile", clash, "--target", "cuda", "--verify-ranks", "1..4", "-o", out_h], 0)
        empty = os.path.join(tmp, "empty.bine")
        open(empty, "w").close()
        case("an empty input is an error, not a silent OK", ["check", empty], 1, err=r"no schedule in the input files")
    case("json: a schedule that does not apply",
         ["schedule", "dsl/lib/alltoall.bine", "--schedule", "bine_alltoall", "-p", "3", "--diagnostics-format", "json"],
         1, json_stderr=True)
    case("json: an output file that cannot be written",
         ["compile", "dsl/lib/alltoall.bine", "-o", "/nonexistent/dir/x.h", "--diagnostics-format", "json"],
         1, json_stderr=True)
    case("text: an output file that cannot be written",
         ["compile", "dsl/lib/alltoall.bine", "-o", "/nonexistent/dir/x.h"], 1, err=r"^bine-cc: error: cannot write")
    text = open(os.path.join(src, "dsl/lib/bine_bcast.bine")).read()
    from_file = case("check FILE", ["check", "dsl/lib/bine_bcast.bine", "--ranks", "1..8"], 0, out=r"verified")
    from_stdin = case("check - reads standard input", ["check", "-", "--ranks", "1..8"], 0, out=r"verified", stdin=text)
    if from_file != from_stdin:
        print("FAIL check - and check FILE differ")
        failures.append("stdin")
    case("stdin diagnostics are named <stdin>", ["check", "-"], 1, err=r"<stdin>:1:", stdin="schedule x implements {\n")
    # schedule --instance NAME:ROOT ...: one JSON line per instance, each equal to what
    # `schedule --schedule NAME --root ROOT --json` prints alone; a false requires is a line
    # with "not_applicable", a failed instance a line with "error" (exit 1).
    lib = sorted(os.path.join("dsl/lib", f) for f in os.listdir(os.path.join(src, "dsl/lib")) if f.endswith(".bine"))
    wanted = [("bine_bcast_lat", 5), ("ring_allreduce", 0), ("pairwise_alltoall_xor", 0), ("bine_reduce_lat", 3),
              ("rt_allreduce_lat", 0), ("bine_bcast_lat", 0)]
    got_rc, got_out, got_err = run(bine, ["schedule", *lib, "-p", "6",
                                          *[a for n, r in wanted for a in ("--instance", f"{n}:{r}")]], src)
    lines = got_out.splitlines()
    if got_rc != 0 or len(lines) != len(wanted):
        failures.append(f"schedule --instance: exit {got_rc}, {len(lines)} lines for {len(wanted)} instances: {got_err}")
    for (name, root), line in zip(wanted, lines):
        one_rc, one_out, one_err = run(bine, ["schedule", *lib, "--schedule", name, "-p", "6", "--root", str(root),
                                              "--json"], src)
        got = json.loads(line)
        want = json.loads(one_out) if one_rc == 0 else None
        if one_rc != 0 and "does not apply" in one_err:
            want = {"schedule": name, "p": 6, "root": root,
                    "not_applicable": one_err.split(": requires ", 1)[1].strip()}
            want["not_applicable"] = "requires " + want["not_applicable"]
        ok = got == want
        print(("PASS " if ok else "FAIL ") + f"schedule --instance {name}:{root} at p=6 equals schedule --json")
        if not ok:
            failures.append(f"schedule --instance {name}:{root}")
    if not any("not_applicable" in json.loads(x) for x in lines):
        failures.append("schedule --instance: the not-applicable case (pairwise_alltoall_xor at p=6) was not exercised")
    case("schedule --instance: a failed instance is a line with error, exit 1",
         ["schedule", "dsl/lib/bine_bcast.bine", "-p", "4", "--instance", "bine_bcast_lat:1", "--instance",
          "bine_bcast_lat:9"], 1, out=r'"root":1,.*\n\{"schedule":"bine_bcast_lat","p":4,"root":9,"error":',
         err=r"invalid instance: p=4 root=9")
    case("schedule --instance: an unknown name", ["schedule", "dsl/lib/bine_bcast.bine", "-p", "4", "--instance",
                                                  "nope:0"], 1, err=r"no schedule named 'nope'")
    case("schedule --instance: NAME without :ROOT", ["schedule", "dsl/lib/bine_bcast.bine", "-p", "4", "--instance",
                                                     "bine_bcast_lat"], 2, err=r"--instance takes NAME:ROOT")
    case("schedule --instance excludes --root", ["schedule", "dsl/lib/bine_bcast.bine", "-p", "4", "--instance",
                                                 "bine_bcast_lat:1", "--root", "2"], 2, err=r"excludes")
    # commutative = true reproduces what the checker proves for that value: a schedule whose
    # partner order depends on it pairs rank 0 with p/2 first, else with 1.
    comm = ("schedule c implements allreduce {\n  requires is_pow2(p)\n  blocks 1\n  for s in 0 .. log2(p) {\n"
            "    let d = commutative ? (p >> (s + 1)) : (1 << s)\n    exchange all / all with r ^ d reduce\n  }\n}\n")
    case("schedule: commutative = false by default", ["schedule", "-", "-p", "4"], 0,
         out=r"round 0: .*\n  rank 0 send \{0\} to 1 ", stdin=comm)
    case("schedule --commutative", ["schedule", "-", "-p", "4", "--commutative"], 0,
         out=r"round 0: .*\n  rank 0 send \{0\} to 2 ", stdin=comm)
    case("cost --commutative", ["cost", "-", "-p", "4", "--commutative", "--bytes", "64", "--alpha", "1", "--beta", "0",
                                "--gamma", "0"], 0, out=r"cost of c", stdin=comm)
    # A `requires` that reads `root` (issue 18): the refused roots are reported per p (text:
    # the first p; JSON: all), the p-wide clause is attributed to the p it excludes, and the
    # generated code's error for a refused root names the root.
    even = ("schedule er implements bcast {\n  requires root % 2 == 0\n  requires is_pow2(p)\n  blocks 1\n"
            "  for s in 0 .. log2(p) {\n    let v = (r - root + p) % p\n"
            "    if v < (1 << s) { send all to (r + (1 << s)) % p } else if v < (2 << s) { recv all from (r - (1 << s) + p) % p }\n"
            "  }\n}\n")
    case("check: roots refused by a root-dependent requires are reported", ["check", "-", "--ranks", "1..8"], 0,
         out=r"\(requires 'is_pow2\(p\)' excludes 4 p\) \(requires 'root % 2 == 0' excludes roots at 3 p: at p=2 roots 1;",
         stdin=even)
    got_rc, got_out, _ = run(bine, ["check", "-", "--ranks", "1..8", "--json"], src, even)
    er = json.loads(got_out)[0].get("excluded_roots") if got_rc == 0 else None
    if er != [{"p": 2, "requires": "root % 2 == 0", "roots": [1]}, {"p": 4, "requires": "root % 2 == 0", "roots": [1, 3]},
              {"p": 8, "requires": "root % 2 == 0", "roots": [1, 3, 5, 7]}]:
        failures.append(f"check --json excluded_roots: {er}")
    case("compile: a root-dependent clause fails naming the root", ["compile", "-", "--verify-ranks", "1..8"], 0,
         out=r'if \(!\(\(bine::rem\(root_, 2\) == 0\)\)\) return cx.fail_requires_root\("root % 2 == 0"\);', stdin=even)
    # traffic (docs/topology.md): machine specs and allocations; bad input exits 2 naming it.
    rd = ["traffic", "dsl/lib/baselines.bine", "--schedule", "recursive_doubling_allreduce"]
    case("traffic on a dragonfly", rd + ["-p", "8", "--machine", "dragonfly:4,2,1"], 0,
         out=r"machine: dragonfly:4,2,1: 8 ranks on 8 nodes, 8 switches, 4 groups[\s\S]*total +0 +0 +8388608 +8 +16777216 +16")
    out = case("traffic --json", rd + ["-p", "8", "--machine", "ppn=2", "--machine", "torus:2,2,2", "--json"], 0)
    try:
        js = json.loads(out)
        if [j["machine"] for j in js] != ["ppn=2", "torus:2,2,2"] or js[0]["total"]["intra_node"]["messages"] != 8:
            failures.append("traffic --json content")
            print("FAIL traffic --json content")
    except (json.JSONDecodeError, KeyError, TypeError):
        failures.append("traffic --json parses")
        print("FAIL traffic --json parses")
    case("traffic: schedules that do not apply are listed",
         ["traffic", "dsl/lib/baselines.bine", "-p", "6", "--machine", "ppn=3"], 0,
         out=r"ring_allreduce \(allreduce\), p = 6")
    case("traffic without --machine", rd + ["-p", "8"], 2, err=r"--machine is required")
    case("traffic without -p", rd + ["--machine", "ppn=2"], 2, err=r"traffic needs a process count: -p N")
    case("traffic: unparsable spec", rd + ["-p", "8", "--machine", "dragonfly:2,2"], 2,
         err=r"machine spec 'dragonfly:2,2': expected dragonfly:G,R,N")
    case("traffic: unknown kind", rd + ["-p", "8", "--machine", "mesh:4"], 2, err=r"unknown machine kind 'mesh'")
    case("traffic: p too large", rd + ["-p", "16", "--machine", "torus:2,2,2"], 2, err=r"p=16 ranks do not fit")
    case("traffic: JSON diagnostics", rd + ["-p", "8", "--machine", "x", "--diagnostics-format", "json"], 2,
         json_stderr=True)
    with tempfile.TemporaryDirectory() as tmp:
        hosts, mp = os.path.join(tmp, "hosts.txt"), os.path.join(tmp, "map.txt")
        with open(mp, "w") as f:
            f.write("NODE 0001 CELL 1 SWITCH 100\nNODE 0002 CELL 1 SWITCH 100\nNODE 0003 CELL 2 SWITCH 200\n")
        with open(hosts, "w") as f:
            f.write("lrdn0001\nlrdn0003\nnode7\n")
        spec = f"hosts:{hosts},map={mp}"
        case("traffic: unknown host names file and line", rd + ["-p", "3", "--machine", spec], 2,
             err=re.escape(hosts) + r":3: unknown host 'node7'")
        with open(hosts, "w") as f:
            f.write("lrdn0001\nlrdn0003\n")
        case("traffic: p not matching the allocation", rd + ["-p", "4", "--machine", spec], 2,
             err=r"p=4 does not match the allocation: 2 hosts")
        case("traffic on an allocation", rd + ["-p", "2", "--machine", spec], 0,
             out=r"2 ranks on 2 nodes, 2 switches, 2 groups")
        with open(mp, "w") as f:
            f.write("NODE 0001 CELL 1\nNODE 0003 SWITCH 3\n")
        case("traffic: map line without a group", rd + ["-p", "2", "--machine", spec], 2,
             err=re.escape(mp) + r":2: a map line needs NODE <name> and CELL <group>")
    case("cost --machine: regions (seed Eq. 3)",
         ["cost", "dsl/lib/mpich_allgather.bine", "--schedule", "bruck_allgather", "-p", "16", "--bytes", "16",
          "--elem-size", "1", "--alpha", "1", "--beta", "1", "--gamma", "0", "--machine", "ppn=4", "--alpha-local", "0",
          "--beta-local", "0"], 0, out=r"makespan = 4 alpha \+ 15 beta")
    # Regions (docs/topology.md, "Regions in schedules"): the locality-aware Bruck allgather
    # on the seed's Example 2.1, its layouts, and bad --regions.
    lab = ["dsl/lib/locality.bine", "--schedule", "locality_aware_bruck_allgather"]
    case("traffic: locality-aware Bruck, Example 2.1 (regions from the machine)",
         ["traffic"] + lab + ["-p", "16", "--bytes", "16", "--elem-size", "1", "--machine", "ppn=4"], 0,
         out=r"total +240 +64 +0 +0 +48 +12")
    case("cost --machine: locality-aware Bruck, Example 2.1 (seed Eq. 4)",
         ["cost"] + lab + ["-p", "16", "--bytes", "16", "--elem-size", "1", "--alpha", "1", "--beta", "1", "--gamma", "0",
                           "--machine", "ppn=4", "--alpha-local", "0", "--beta-local", "0"], 0,
         out=r"makespan = 1 alpha \+ 4 beta \+ 4 alpha_local \+ 15 beta_local")
    case("check --regions rr:4: round-robin regions, equal or not, verified",
         ["check"] + lab + ["--ranks", "1..16", "--regions", "rr:4"], 0,
         out=r"verified p=1..16, 16 instances\n")
    case("schedule --regions map: a non-contiguous layout",
         ["schedule"] + lab + ["-p", "4", "--regions", "map:5,9,5,9"], 0, out=r"rank 0 send \{0\} to 2")
    case("--regions: bad spec", ["check"] + lab + ["--regions", "0"], 2,
         err=r"--regions: region spec '0': K ranks per region needs K >= 1")
    case("--regions: unknown form", ["schedule"] + lab + ["-p", "4", "--regions", "socket"], 2,
         err=r"expected K \(ranks per region\), rr:N, map:L0,L1,... or one")
    case("--regions map: p does not match", ["check"] + lab + ["--ranks", "3", "--regions", "map:1,2"], 1,
         err=r"locality.bine:\d+:\d+: error: p=3: rank 0: out of domain: region spec 'map:1,2': 2 labels for p = 3 ranks")
    case("cost --alpha-local needs a locality", ["cost", "dsl/lib/baselines.bine", "--schedule", "ring_allreduce", "-p", "4",
                                                 "--bytes", "64", "--alpha", "1", "--beta", "0", "--gamma", "0",
                                                 "--alpha-local", "0"], 2, err=r"need --ppn K or --machine SPEC")
    # Three link classes (docs/cost.md): recursive doubling on dragonfly:2,2,1,ppn=2 (p = 8)
    # meets one partner per class, r ^ 1 on its node, r ^ 2 in its group, r ^ 4 in the other.
    rd = ["cost", "dsl/lib/baselines.bine", "--schedule", "recursive_doubling_allreduce", "-p", "8", "--bytes", "64",
          "--elem-size", "1", "--alpha", "100", "--beta", "1", "--gamma", "0", "--machine", "dragonfly:2,2,1,ppn=2",
          "--alpha-local", "1", "--beta-local", "0"]
    case("cost --alpha-group: three link classes", rd + ["--alpha-group", "10", "--beta-group", "0.5"], 0,
         out=r"makespan = 1 alpha \+ 64 beta \+ 1 alpha_local \+ 64 beta_local \+ 1 alpha_group \+ 64 beta_group \+ 192 gamma\n")
    case("cost --alpha-group: the makespan", rd + ["--alpha-group", "10", "--beta-group", "0.5"], 0,
         out=r"makespan: 207 ")
    case("cost without --alpha-group: two classes", rd, 0, out=r"makespan = 2 alpha \+ 128 beta \+ 1 alpha_local \+ 64 beta_local \+ 192 gamma\n")
    case("cost --alpha-group needs a machine", rd[:-6] + ["--alpha-group", "1"], 2, err=r"need --machine SPEC \(its groups\)")
    case("cost --alpha-group with --local-level group", rd + ["--alpha-group", "1", "--local-level", "group"], 2,
         err=r"--local-level must be node or switch, not group")
    # synth bbs (docs/bbs.md): figures on the 4x4 grid, and bad input.
    case("synth bbs on the 4x4 grid: LP optimum 1/2, every run checked",
         ["synth", "bbs", "--topology", "grid:4x4", "--packets", "20", "--baselines"], 0,
         out=r"optimum C = 1/2 .*\n.*d_m = 4; colouring: 4 colours; frames: 4(.|\n)*Binary Tree +T = \d+ steps, AE = [0-9.]+, check: ok\nSRDA +T = \d+ steps, AE = [0-9.]+, check: ok")
    case("synth bbs: unknown topology", ["synth", "bbs", "--topology", "mesh:4"], 1, err=r"unknown topology")
    case("synth bbs: root not in the graph", ["synth", "bbs", "--topology", "grid:4x4", "--root", "16"], 1,
         err=r"root 16 is not a node of grid:4x4 \(nodes 0\.\.15\)")
    case("synth bbs: N = 0", ["synth", "bbs", "--topology", "grid:4x4", "--packets", "0"], 1,
         err=r"packet count N must be at least 1")
    with tempfile.TemporaryDirectory() as d:
        el = os.path.join(d, "g.txt")
        with open(el, "w") as f:
            f.write("0 1\n2 3\n")
        case("synth bbs: disconnected edge list", ["synth", "bbs", "--topology", "edges:" + el], 1,
             err=r"disconnected \(node 2 is unreachable from node 0\)")
        with open(el, "w") as f:
            f.write("0 1\n1 two\n")
        case("synth bbs: malformed edge list", ["synth", "bbs", "--topology", "edges:" + el], 1,
             err=re.escape(el) + r":2: node ids are integers")
    print(f"cli: {'PASS' if not failures else 'FAIL'} ({len(failures)} failure(s))")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
