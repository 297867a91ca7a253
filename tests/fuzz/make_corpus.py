#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (tests/fuzz/corpus/): every dsl/lib file whole, each of
its top-level schedules on its own (after the file's fn declarations, which it may call),
every malformed input of tests/diagnostics and the frames schedules of examples/bbs. Deterministic; rerun after changing the
library and commit the result."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "tests" / "fuzz" / "corpus"
out.mkdir(exist_ok=True)
for old in out.glob("*.bine"):
    old.unlink()


def top_level_items(text):
    """(kind, source) of each top-level `fn` or `schedule`, by brace matching (comments and
    the language's lack of string literals make this enough for the library)."""
    items, i = [], 0
    for m in re.finditer(r"^(schedule|fn)\b", text, re.M):
        if m.start() < i:
            continue
        j = m.start()
        if m.group(1) == "fn" and "{" not in text[j:text.find("\n", j)]:
            end = text.find("\n", j)  # fn f(x) = expr
            items.append(("fn", text[j:end + 1]))
            i = end
            continue
        depth, k = 0, text.index("{", j)
        while True:
            if text[k] == "{":
                depth += 1
            elif text[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        items.append((m.group(1), text[j:k + 1] + "\n"))
        i = k
    return items


n = 0
for f in sorted((root / "dsl" / "lib").glob("*.bine")):
    text = f.read_text()
    (out / f"lib_{f.stem}.bine").write_text(text)
    items = top_level_items(text)
    fns = "".join(src for kind, src in items if kind == "fn")
    for kind, src in items:
        if kind == "schedule":
            name = re.match(r"schedule\s+(\w+)", src).group(1)
            (out / f"sched_{name}.bine").write_text(fns + src)
            n += 1
for f in sorted((root / "tests" / "diagnostics").glob("*.bine")):
    (out / f"diag_{f.stem}.bine").write_text(f.read_text())
for f in sorted((root / "examples" / "bbs").glob("*.bine")):  # frames schedules
    (out / f"frames_{f.stem}.bine").write_text(f.read_text())
print(f"{len(list(out.glob('*.bine')))} corpus files ({n} single schedules)", file=sys.stderr)
