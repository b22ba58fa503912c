#!/usr/bin/env python3
"""seqeval's entity-level scores on random and edge-case tag sequences, for tests/metrics/test_entity_metrics.cpp:
precision, recall and F1 (micro) and the per-type report (classification_report) in the default
mode and in strict IOB2 mode (mode="strict", scheme=IOB2).

Run: python3 tools/gen_seqeval_goldens.py   (needs seqeval==1.2.2: pip install seqeval==1.2.2)
Writes tests/data/seqeval_goldens.json (NaN, seqeval's macro average over no entity type, as null)."""
import json
import math
import os
import random
import warnings

import seqeval
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.scheme import IOB2

warnings.filterwarnings("ignore")  # zero-division and "not a NE tag" warnings: the values are the point
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "seqeval_goldens.json")
rng = random.Random(11)
TYPES = ["PER", "LOC", "ORG", "MISC"]


def random_tags(n, prefixes):
    return [rng.choice(["O", "O"] + [p + "-" + rng.choice(TYPES) for p in prefixes]) for _ in range(n)]


def random_case(sentences, prefixes, noise):
    """Truth as random sequences; predictions as the truth with a fraction `noise` of tags redrawn."""
    truth = [random_tags(rng.randint(1, 12), prefixes) for _ in range(sentences)]
    predicted = [[rng.choice(random_tags(1, prefixes)) if rng.random() < noise else t for t in s] for s in truth]
    return truth, predicted


cases = {
    "perfect": ([["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]], [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]),
    "no_predicted_entity": ([["B-PER", "I-PER", "O"], ["B-LOC"]], [["O", "O", "O"], ["O"]]),
    "no_true_entity": ([["O", "O", "O"], ["O"]], [["B-PER", "O", "O"], ["I-LOC"]]),
    "no_entity_at_all": ([["O", "O"], ["O"]], [["O", "O"], ["O"]]),
    "i_without_b": ([["O", "I-PER", "I-PER", "O", "B-LOC"]], [["O", "B-PER", "I-PER", "O", "I-LOC"]]),
    "type_change_mid_entity": ([["B-PER", "I-PER", "I-PER", "O"]], [["B-PER", "I-LOC", "I-PER", "O"]]),
    "touching_entities": ([["B-PER", "B-PER", "I-PER", "B-LOC", "I-LOC"]], [["B-PER", "I-PER", "I-PER", "B-LOC", "I-LOC"]]),
    "entity_at_sentence_edges": ([["I-PER"], ["I-PER", "O"], ["O", "B-ORG"]], [["B-PER"], ["B-PER", "O"], ["O", "B-ORG"]]),
    "bioes": ([["B-PER", "E-PER", "S-LOC", "O", "B-ORG", "I-ORG", "E-ORG"]],
              [["B-PER", "E-PER", "B-LOC", "O", "B-ORG", "E-ORG", "S-ORG"]]),
    "bioes_ill_formed": ([["E-PER", "I-PER", "S-LOC", "E-LOC", "B-ORG", "O"]], [["S-PER", "I-PER", "B-LOC", "E-LOC", "B-ORG", "S-ORG"]]),
}
for i in range(4):
    cases[f"random_iob_{i}"] = random_case(rng.randint(3, 10), ["B", "I"], [0.1, 0.3, 0.6, 1.0][i])
for i in range(2):
    cases[f"random_bioes_{i}"] = random_case(rng.randint(3, 10), ["B", "I", "E", "S"], [0.2, 0.5][i])


def number(x):
    x = float(x)
    return None if math.isnan(x) else x


def report(truth, predicted, **mode):
    r = classification_report(truth, predicted, output_dict=True, **mode)
    out = {"micro": {"precision": number(precision_score(truth, predicted, **mode)),
                     "recall": number(recall_score(truth, predicted, **mode)),
                     "f1": number(f1_score(truth, predicted, **mode))},
           "types": {}}
    for name, row in r.items():
        row = {"precision": number(row["precision"]), "recall": number(row["recall"]), "f1": number(row["f1-score"]),
               "support": int(row["support"])}
        if name.endswith(" avg"):
            out[name.replace(" avg", "_avg")] = row
        else:
            out["types"][name] = row
    return out


goldens = {}
for name, (truth, predicted) in cases.items():
    entry = {"truth": truth, "predicted": predicted, "default": report(truth, predicted)}
    iob = all(t == "O" or t[0] in "BI" for s in truth + predicted for t in s)
    if iob:  # strict IOB2 refuses E- and S- tags
        entry["strict_iob2"] = report(truth, predicted, mode="strict", scheme=IOB2)
    goldens[name] = entry

with open(OUT, "w") as f:
    json.dump({"generator": "tools/gen_seqeval_goldens.py", "seqeval": seqeval.__version__ if hasattr(seqeval, "__version__") else "1.2.2",
               "cases": goldens}, f, indent=1)
    f.write("\n")
print("wrote", os.path.normpath(OUT))
