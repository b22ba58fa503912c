#!/usr/bin/env python3
"""One table of several learning curves (bert_finetune --learning-curve's OUT/learning_curve_summary.csv):
a row per run directory, a column per number of examples, each cell a dev metric's mean ± sample std
over the seeds (with the number of seeds when it is not 3).

  tools/transfer_table.py --metric accuracy runs/transfer/sentiment-*      (Markdown on stdout)
"""
import argparse
import csv
import os
import sys

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("runs", nargs="+", help="directories holding learning_curve_summary.csv")
p.add_argument("--metric", default="accuracy", help="a dev metric of the curves (accuracy, f1, mcc, ...)")
a = p.parse_args()

table, sizes = {}, []
for run in a.runs:
    path = os.path.join(run, "learning_curve_summary.csv")
    if not os.path.exists(path):
        print(f"transfer_table: {path} is missing: {run} left out", file=sys.stderr)
        continue
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            n = int(row["examples"])
            if n not in sizes:
                sizes.append(n)
            runs = int(row.get("runs", 3))
            mean, std = float(row[f"dev_{a.metric}_mean"]), float(row[f"dev_{a.metric}_std"])
            cell = f"{mean:.3f} ± {std:.3f}" if runs > 1 else f"{mean:.3f}"
            table.setdefault(run, {})[n] = cell + ("" if runs == 3 else f" ({runs} seed{'s' if runs > 1 else ''})")
sizes.sort()
print(f"| run | " + " | ".join(f"{n} examples" for n in sizes) + " |")
print("|---|" + "---|" * len(sizes))
for run, cells in table.items():
    print(f"| {os.path.basename(run.rstrip('/'))} | " + " | ".join(cells.get(n, "-") for n in sizes) + " |")
