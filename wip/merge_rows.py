#!/usr/bin/env python3
"""Merge an abpair's rows_<tree><round>.json files into one results JSON (benchmarks/results/<gpu>/).

    python3 wip/merge_rows.py OUT.json "what: how the rows were run" DIR [PREFIX ...]

Every DIR/rows_*.json (or only those whose tree name starts with one of the PREFIXes) goes in, in
the order the abpair ran them (round, then tree); each row gets `ab_run` = "<tree> <round>", and
the context is the first file's with `what` added. A summary of frac_* and *_over_* per row and
tree (the mean of the rounds) is printed, to paste into a note.
"""
import collections
import glob
import json
import os
import re
import sys


def main():
    out, what, folder, prefixes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    runs = []
    for path in glob.glob(os.path.join(folder, "rows_*.json")):
        m = re.fullmatch(r"rows_(.+?)(\d+)\.json", os.path.basename(path))
        if not m or (prefixes and not any(m.group(1).startswith(p) for p in prefixes)):
            continue
        runs.append((int(m.group(2)), m.group(1) != "main", m.group(1), path))
    if not runs:
        sys.exit(f"no rows_*.json in {folder}")
    runs.sort()
    merged, ratios = None, collections.defaultdict(list)
    for round_, _, tree, path in runs:
        data = json.load(open(path))
        if merged is None:
            merged = {"context": dict(data["context"], what=what), "benchmarks": []}
        for row in data["benchmarks"]:
            row["ab_run"] = f"{tree} {round_}"
            merged["benchmarks"].append(row)
            name = row["name"].split("/min_time")[0].split("/iterations")[0]
            for key, value in row.items():
                if isinstance(value, float) and (key.startswith("frac_c") or "_over_" in key):
                    ratios[(name, key, tree)].append(value)
    json.dump(merged, open(out, "w"), indent=1)
    print(f"{out}: {len(merged['benchmarks'])} rows from {len(runs)} files")
    for (name, key, tree), values in sorted(ratios.items()):
        print(f"{name:<70} {key:<14} {tree:<28} " + " / ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
