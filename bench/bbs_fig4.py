#!/usr/bin/env python3
"""Fig. 4 of the BBS paper in our model: active edges per step of BBS, our hybrid, Greedy,
Binary Tree and SRDA (docs/bbs.md). Input: the CSV of `bbs_tables --active-csv FILE --topology T
--packets N`; output: a PNG (matplotlib).

Usage: bbs_fig4.py CSV OUT.png TITLE
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out, title = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(src) as f:
        rows = list(csv.reader(f))
    names, data = rows[0][1:], [[int(x) for x in r] for r in rows[1:]]
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    for i, name in enumerate(names):
        ys = [r[i + 1] for r in data]
        last = max((k for k, y in enumerate(ys) if y > 0), default=0) + 1  # T of this run
        ax.plot(range(1, last + 1), ys[:last], lw=0.7, label=f"{name} (T = {last})")
    ax.set_xlabel("step")
    ax.set_ylabel("active edges")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, metadata={"Software": None})  # no version stamp: same input, same bytes


if __name__ == "__main__":
    main()
