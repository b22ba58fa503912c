#!/usr/bin/env python3
"""scikit-learn's and scipy's metrics on small cases (random ones and edge cases: one class only,
a class never predicted, ties, constant inputs), for tests/metrics/test_eval_metrics.cpp.

Run: python3 tools/gen_metric_goldens.py   (needs scikit-learn and scipy: pip install scikit-learn scipy)
Writes tests/data/metric_goldens.json."""
import json
import math
import os
import random

import scipy
import sklearn
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "metric_goldens.json")
rng = random.Random(5)

label_cases = {
    "binary_random": ([rng.randint(0, 1) for _ in range(40)], [rng.randint(0, 1) for _ in range(40)]),
    "multiclass_random": ([rng.randint(0, 3) for _ in range(50)], [rng.randint(0, 3) for _ in range(50)]),
    "perfect": ([0, 1, 2, 1, 0], [0, 1, 2, 1, 0]),
    "all_wrong": ([0, 1, 0, 1], [1, 0, 1, 0]),
    "all_same_truth": ([1, 1, 1, 1], [1, 0, 1, 1]),
    "all_same_both": ([0, 0, 0], [0, 0, 0]),
    "never_predicted": ([0, 1, 2, 2, 1], [0, 0, 0, 0, 0]),
    "predicted_only": ([0, 0, 1, 1], [0, 2, 1, 2]),
    "one": ([1], [1]),
}
labels_out = {}
for name, (t, p) in label_cases.items():
    binary = len(set(t) | set(p)) <= 2
    labels_out[name] = {
        "truth": t, "predicted": p, "accuracy": accuracy_score(t, p),
        "f1_macro": f1_score(t, p, average="macro", zero_division=0),
        "f1_micro": f1_score(t, p, average="micro", zero_division=0),
        "mcc": matthews_corrcoef(t, p),
    }
    if binary and (1 in set(t) | set(p) or len(set(t) | set(p)) < 2):
        labels_out[name]["f1_binary"] = f1_score(t, p, average="binary", pos_label=1, zero_division=0)

value_cases = {
    "random": ([rng.gauss(0, 1) for _ in range(30)], [rng.gauss(0, 1) for _ in range(30)]),
    "ties": ([1, 2, 2, 3, 3, 3, 5, 0.5], [2, 1, 4, 4, 3, 1, 1, 0]),
    "negative": ([1, 2, 3, 4, 5], [5, 4, 3.5, 2, -1]),
    "stsb_like": ([rng.choice([0, 0.5, 1, 2.4, 3, 3.8, 5]) for _ in range(25)], [rng.uniform(0, 5) for _ in range(25)]),
    "two": ([0, 1], [3, 7]),
}
values_out = {}
for name, (x, y) in value_cases.items():
    values_out[name] = {"x": x, "y": y, "pearson": float(pearsonr(x, y)[0]), "spearman": float(spearmanr(x, y)[0]),
                        "ranks_x": [float(r) for r in scipy.stats.rankdata(x)]}

with open(OUT, "w") as f:
    json.dump({"generator": "tools/gen_metric_goldens.py", "sklearn": sklearn.__version__, "scipy": scipy.__version__,
               "labels": labels_out, "values": values_out}, f, indent=1)
    f.write("\n")
print("wrote", os.path.normpath(OUT))
