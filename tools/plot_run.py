#!/usr/bin/python3
"""Plots a training run or a learning curve of bert_finetune / bert_pretrain as a PNG.

  tools/plot_run.py runs/x/metrics.jsonl -o run.png
      the loss (and its parts: mlm_loss, nsp_loss, ...), the learning rate and each eval_* metric
      (with the training metric of the same name, when the task logs one) against the step.
  tools/plot_run.py --curve OUT/learning_curve.csv -o curve.png
      each dev metric of bert_finetune --learning-curve against the training examples (log scale):
      the mean over seeds with a band and error bars of one sample standard deviation, and each run
      as a dot.

Needs matplotlib only (Debian: apt-get install python3-matplotlib); draws without a display.
"""
import argparse
import csv
import json
import math
import statistics
import sys
from collections import defaultdict

try:
    import matplotlib
except ImportError:
    sys.exit("plot_run.py needs matplotlib: apt-get install python3-matplotlib (or pip install matplotlib)")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Values logged with the metrics that count things or time the run: not worth a plot of their own.
COUNTS = {"examples", "entities", "sentences", "questions", "step", "elapsed_s", "tokens_per_s", "allreduce_wait_s"}


def is_count(name):
    return name in COUNTS or name.endswith("total") or name.endswith("_thresh")


def read_metrics(path):
    """The rows of a metrics.jsonl: {"step": N, name: value, ...}, training and evaluation rows alike."""
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_run: {path}:{number}: not JSON: {e}")
            if "step" not in row:
                sys.exit(f"plot_run: {path}:{number}: a row without 'step'")
            rows.append(row)
    if not rows:
        sys.exit(f"plot_run: {path}: no rows")
    return rows


def series(rows, name):
    """(steps, values) of one metric, in the order logged."""
    pts = [(r["step"], r[name]) for r in rows if isinstance(r.get(name), (int, float)) and r.get(name) is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def plot_run(path, out, title):
    rows = read_metrics(path)
    names = sorted({k for r in rows for k in r})
    losses = [n for n in names if n == "loss" or (n.endswith("_loss") and not n.startswith("eval_"))]
    evals = [n for n in names if n.startswith("eval_") and not is_count(n[len("eval_"):])]
    panels = []
    if losses:
        panels.append(("loss", [(n, n) for n in losses], False))
    if "lr" in names:
        panels.append(("learning rate", [("lr", "lr")], False))
    for n in evals:
        lines = [(n, "dev")]
        train_name = n[len("eval_"):]
        if train_name in names:  # the same metric on the training batches
            lines.append((train_name, "train"))
        panels.append((n, lines, True))
    if not panels:
        sys.exit(f"plot_run: {path}: no loss, lr or eval_* values to plot")
    cols = 2 if len(panels) > 1 else 1
    rows_n = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(6 * cols, 3.2 * rows_n), squeeze=False)
    for ax, (label, lines, markers) in zip(axes.flat, panels):
        for name, legend in lines:
            steps, values = series(rows, name)
            dots = (markers and legend == "dev") or len(steps) < 30  # a line of one point draws nothing
            ax.plot(steps, values, marker="o" if dots else None, markersize=3, label=legend)
        ax.set_title(label)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if len(lines) > 1:
            ax.legend()
        if "perplexity" in label:  # falls by orders of magnitude early on
            ax.set_yscale("log")
        if label == "learning rate":
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title or path)
    fig.tight_layout(rect=(0, 0, 1, 0.97))  # room for the title
    fig.savefig(out, dpi=110)


def read_curve(path):
    """{metric: {examples: [values over seeds]}} from learning_curve.csv (dev_<metric> columns)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        if "examples" not in fields or "seed" not in fields:
            sys.exit(f"plot_run: {path}: not a learning_curve.csv (columns examples,seed,dev_...; the summary file is "
                     "learning_curve_summary.csv, give the rows)")
        metrics = [c for c in fields if c.startswith("dev_")]
        curve = {m[len("dev_"):]: defaultdict(list) for m in metrics}
        for row in reader:
            for m in metrics:
                if row[m] not in ("", "nan"):
                    curve[m[len("dev_"):]][int(row["examples"])].append(float(row[m]))
    if not metrics:
        sys.exit(f"plot_run: {path}: no dev_* columns")
    return curve


def plot_curve(path, out, title):
    curve = read_curve(path)
    cols = min(3, len(curve))
    rows_n = math.ceil(len(curve) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(5 * cols, 3.6 * rows_n), squeeze=False)
    for ax, (metric, by_size) in zip(axes.flat, curve.items()):
        sizes = sorted(by_size)
        means = [statistics.fmean(by_size[n]) for n in sizes]
        stds = [statistics.stdev(by_size[n]) if len(by_size[n]) > 1 else 0.0 for n in sizes]
        for n in sizes:
            ax.scatter([n] * len(by_size[n]), by_size[n], s=10, color="grey", alpha=0.5, zorder=2)
        ax.fill_between(sizes, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)], alpha=0.2)
        ax.errorbar(sizes, means, yerr=stds, marker="o", capsize=4, zorder=3,
                    label=f"mean ± std ({max(len(v) for v in by_size.values())} seeds)")
        ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("training examples")
        ax.set_title(f"dev {metric}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(curve):]:
        ax.axis("off")
    fig.suptitle(title or path)
    fig.tight_layout(rect=(0, 0, 1, 0.97))  # room for the title
    fig.savefig(out, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("metrics", nargs="?", help="a run's metrics.jsonl")
    p.add_argument("--curve", help="a learning_curve.csv of bert_finetune --learning-curve")
    p.add_argument("-o", "--output", required=True, help="the PNG to write")
    p.add_argument("--title", help="the figure's title (default: the input's path)")
    a = p.parse_args()
    if bool(a.metrics) == bool(a.curve):
        p.error("give either a metrics.jsonl or --curve learning_curve.csv")
    try:
        if a.curve:
            plot_curve(a.curve, a.output, a.title)
        else:
            plot_run(a.metrics, a.output, a.title)
    except OSError as e:
        sys.exit(f"plot_run: {e}")
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
