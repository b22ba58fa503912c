#!/usr/bin/env python3
"""Writes data/ner_example_train.conll and data/ner_example_dev.conll: small synthetic NER data in
CoNLL-2003 layout (-DOCSTART- lines, one "word tag" line per word, IOB2 tags for PER, LOC, ORG and
MISC), made from the hand-written sentence templates and name lists below, for the NER command
of docs/finetuning.md and the end-to-end test. Not real text: the dev sentences are other
combinations of the same templates, and a fifth of the dev names appear in no training sentence,
so a model must read the context to tag those.

Run: python3 tools/make_ner_example.py (standard library only; the output is deterministic)."""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")

NAMES = {
    "PER": ["Angela Merkel", "John Smith", "Maria Garcia", "Kofi Annan", "Li Wei", "Peter Blackburn", "Anna Kowalski",
            "Jacques Chirac", "Nelson Mandela", "Yuki Tanaka", "Ahmed Hassan", "Olga Ivanova", "Carlos Santos",
            "Emma Johansson", "Rahul Gupta", "Fatima Malik", "Hans Becker", "Sophie Martin", "David Cohen", "Ines Duarte",
            "Boris Yeltsin", "Grace Okafor", "Tom Hanks", "Marta Rossi", "Jan Novak"],
    "LOC": ["Germany", "Paris", "New York", "Brazil", "Tokyo", "Nairobi", "London", "Moscow", "Bonn", "Cairo",
            "South Africa", "Lima", "Oslo", "Jakarta", "Sydney", "Madrid", "Lagos", "Vienna", "Chile", "Warsaw",
            "Mexico City", "Geneva", "Seoul", "Istanbul", "Toronto"],
    "ORG": ["European Union", "United Nations", "Deutsche Bank", "Reuters", "NATO", "Microsoft", "Toyota",
            "World Bank", "Red Cross", "Siemens", "Barclays", "Nestle", "Interpol", "Fiat", "Unilever",
            "Boeing", "Airbus", "Samsung", "Shell", "Philips", "Ajax", "Real Madrid", "Bayern Munich", "Juventus",
            "Arsenal"],
    "MISC": ["German", "French", "Brazilian", "Japanese", "Olympic", "Christmas", "English", "Russian", "Kenyan",
             "Dutch", "Spanish", "Polish", "Nobel", "Italian", "Korean", "Mexican", "Swiss", "Canadian", "Chilean",
             "Egyptian"],
}

TEMPLATES = [
    "{PER} visited {LOC} on Monday .",
    "{ORG} shares rose 3 percent in {LOC} trading .",
    "{PER} , a spokesman for {ORG} , said the talks would resume in {LOC} .",
    "The {MISC} government denied the report .",
    "{ORG} beat {ORG} 2-1 in the final .",
    "{PER} told reporters in {LOC} that prices would fall .",
    "Police in {LOC} arrested two men on Tuesday .",
    "{ORG} said it would cut 500 jobs .",
    "{PER} won the {MISC} prize for literature .",
    "Talks between {LOC} and {LOC} ended without agreement .",
    "The {MISC} minister met {PER} in {LOC} .",
    "{ORG} opened a new office in {LOC} last year .",
    "Fans in {LOC} celebrated the {MISC} victory .",
    "{PER} joined {ORG} in 1995 .",
    "Heavy rain fell across {LOC} for a third day .",
    "{ORG} and {ORG} agreed to merge .",
    "{PER} said the economy of {LOC} was growing .",
    "A {MISC} tourist was injured near {LOC} .",
    "The report by {ORG} was published on Friday .",
    "{PER} and {PER} signed the agreement .",
    "Exports from {LOC} rose sharply in March .",
    "{PER} scored twice for {ORG} on Sunday .",
    "The {MISC} embassy in {LOC} was closed .",
    "Officials at {ORG} declined to comment .",
    "Nothing changed in the market today .",
    "{PER} arrived in {LOC} for a two-day visit .",
    "{ORG} lost money for the first time since 1990 .",
    "Thousands marched through {LOC} on Saturday .",
]


def sentence(template, rng, names):
    words, tags = [], []
    for piece in template.split():
        if piece.startswith("{") and piece.endswith("}"):
            kind = piece[1:-1]
            name = rng.choice(names[kind]).split()
            words += name
            tags += ["B-" + kind] + ["I-" + kind] * (len(name) - 1)
        else:
            words.append(piece)
            tags.append("O")
    return words, tags


def write(path, rng, names, count):
    with open(path, "w") as f:
        for i in range(count):
            if i % 20 == 0:  # documents of 20 sentences, as CoNLL-2003 separates articles
                f.write("-DOCSTART- O\n\n")
            words, tags = sentence(rng.choice(TEMPLATES), rng, names)
            f.writelines(f"{w} {t}\n" for w, t in zip(words, tags))
            f.write("\n")
    print("wrote", os.path.normpath(path), count, "sentences")


rng = random.Random(2003)
held_out = {k: v[::5] for k, v in NAMES.items()}  # every fifth name appears in dev only
train_names = {k: [n for n in v if n not in held_out[k]] for k, v in NAMES.items()}
write(os.path.join(DATA, "ner_example_train.conll"), rng, train_names, 400)
write(os.path.join(DATA, "ner_example_dev.conll"), rng, NAMES, 100)
