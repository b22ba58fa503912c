#!/usr/bin/env python3
"""Answers questions with a *ForQuestionAnswering checkpoint in transformers, as run_qa.py does
(windows of --max-len tokens with --doc-stride, postprocess_qa_predictions from
tools/gen_squad_goldens.py), and compares with bert_infer qa's JSON lines.

Run: build/bin/bert_infer qa --model DIR --input Q.jsonl --max-len 48 --doc-stride 16 --version-2 > A.jsonl
     python3 tools/check_qa_checkpoint.py DIR Q.jsonl A.jsonl --max-len 48 --doc-stride 16 --version-2
     (needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)
Prints each question whose answer differs and the largest null-odds difference; exit status 1 on a difference."""
import argparse
import json
import os
import sys

import numpy as np
import torch
from transformers import AutoModelForQuestionAnswering, AutoTokenizer

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("questions")
p.add_argument("answers")
p.add_argument("--max-len", type=int, default=384)
p.add_argument("--doc-stride", type=int, default=128)
p.add_argument("--version-2", action="store_true")
args = p.parse_args()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_squad_goldens as ref  # noqa: E402  (postprocess_qa_predictions, as utils_qa.py has it)

tok = AutoTokenizer.from_pretrained(args.model)
model = AutoModelForQuestionAnswering.from_pretrained(args.model).eval()
rows = [json.loads(l) for l in open(args.questions) if l.strip()]
ours = [json.loads(l) for l in open(args.answers) if l.strip()]
enc = tok([r["question"].lstrip() for r in rows], [r["context"] for r in rows], truncation="only_second", max_length=args.max_len,
          stride=args.doc_stride, return_overflowing_tokens=True, return_offsets_mapping=True)
features, starts, ends = [], [], []
for i in range(len(enc["input_ids"])):
    seq = enc.sequence_ids(i)
    features.append({"example_id": rows[enc["overflow_to_sample_mapping"][i]]["id"],
                     "offset_mapping": [o if seq[k] == 1 else None for k, o in enumerate(enc["offset_mapping"][i])]})
    with torch.no_grad():
        out = model(input_ids=torch.tensor([enc["input_ids"][i]]), token_type_ids=torch.tensor([enc["token_type_ids"][i]]))
    starts.append(out.start_logits[0].numpy())
    ends.append(out.end_logits[0].numpy())
examples = {"id": [r["id"] for r in rows], "rows": rows}
preds, odds, _ = ref.postprocess_qa_predictions(examples, features, (starts, ends), args.version_2)
bad, worst = 0, 0.0
for r, o in zip(rows, ours):
    if preds[r["id"]] != o["answer"]:
        bad += 1
        print(f"{r['id']}: transformers '{preds[r['id']]}', bert_infer '{o['answer']}'")
    if args.version_2:
        worst = max(worst, abs(odds[r["id"]] - o["null_odds"]))
print(f"{len(rows)} questions, {bad} different answers, largest null-odds difference {worst:.2e}")
sys.exit(1 if bad else 0)
