#!/usr/bin/env python3
"""What transformers predicts for a few sentences and pairs with the tiny classifiers of
tests/data/heads (seq_single: 3 labels, seq_regression: one output, seq_multi: multi-label), for
`bert_infer classify` (tests/models/bert/test_bert.cpp). The sentences are tokenized by transformers'
BertTokenizer (uncased) over a 30-token vocabulary written beside them, as the models have 30
embeddings and 12 positions (the long sentence is truncated).

Run: python3 tools/gen_classify_goldens.py
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)
Writes tests/data/heads/classify_vocab.txt and tests/data/heads/classify_goldens.json."""
import json
import os

import torch
from transformers import BertForSequenceClassification, BertTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "heads")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "good", "bad",
         "movie", "was", "not", "very", "fun", ",", ".", "!", "it", "'", "s", "and", "but", "plot", "ok"]
# (text, text_b or None): stdin lines of classify, a TAB before text_b
INPUTS = [("the cat sat on the mat", None), ("a dog ran", "The cat sat."), ("It's fun!", None),
          ("the movie was not very good, and the plot was bad but ok", None), ("ok", "the movie was not very fun, but the plot was good")]


def main():
    assert len(VOCAB) == 30
    vocab_path = os.path.join(OUT, "classify_vocab.txt")
    with open(vocab_path, "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    tok = BertTokenizer(vocab_path, do_lower_case=True)
    goldens = {"inputs": [[a, b] if b is not None else [a] for a, b in INPUTS]}
    for case in ["seq_single", "seq_regression", "seq_multi"]:
        model = BertForSequenceClassification.from_pretrained(os.path.join(OUT, case)).eval()
        rows = []
        for a, b in INPUTS:  # one at a time, unpadded: classify's padded batches must give the same
            enc = tok(a, b, truncation=True, max_length=model.config.max_position_embeddings, return_tensors="pt")
            assert tok.unk_token_id not in enc["input_ids"][0].tolist(), (a, b)
            with torch.no_grad():
                logits = model(**enc).logits[0]
            if case == "seq_regression":
                rows.append(logits.tolist())
            elif case == "seq_multi":
                rows.append(torch.sigmoid(logits).tolist())
            else:
                rows.append(torch.softmax(logits, -1).tolist())
        goldens[case] = {"id2label": [model.config.id2label[i] for i in range(model.config.num_labels)], "outputs": rows}
    with open(os.path.join(OUT, "classify_goldens.json"), "w") as f:
        json.dump(goldens, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
