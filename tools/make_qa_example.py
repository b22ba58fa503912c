#!/usr/bin/env python3
"""Writes data/qa_example_train.json and data/qa_example_dev.json: a small extractive QA set in
SQuAD v2.0 format whose paragraphs, questions and answers were written for this project (no
third-party text). answer_start is computed here (the answer's first occurrence in the context),
so the files always agree with their contexts. Unanswerable questions carry plausible_answers as
SQuAD v2.0's do. Run: python3 tools/make_qa_example.py"""
import json
import os

# (title, context, [(question, answer or None, plausible answer for unanswerable ones)])
TRAIN = [
    ("Lighthouse", "The harbour lighthouse was built in 1874 from grey granite. Its lamp was first lit with whale oil and "
     "later with kerosene. In 1921 the keepers left, and an electric beam has turned automatically ever since. The tower "
     "is 31 metres tall and can be seen from 40 kilometres at sea.",
     [("When was the harbour lighthouse built?", "1874", None),
      ("What stone was the lighthouse built from?", "grey granite", None),
      ("What fuel was the lamp first lit with?", "whale oil", None),
      ("How tall is the tower?", "31 metres", None),
      ("When did the keepers leave?", "1921", None),
      ("Who designed the lighthouse?", None, "The harbour lighthouse")]),
    ("Bakery", "Marta opened her bakery on Mill Street in the spring of 2009. Every morning she bakes rye bread, "
     "cinnamon rolls and a sourdough loaf that takes two days to rise. The shop closes on Mondays, when Marta buys flour "
     "from a mill in the valley.",
     [("Who opened the bakery?", "Marta", None),
      ("On which street is the bakery?", "Mill Street", None),
      ("How long does the sourdough take to rise?", "two days", None),
      ("On which day does the shop close?", "Mondays", None),
      ("Where does Marta buy flour?", "from a mill in the valley", None),
      ("How much does a cinnamon roll cost?", None, "cinnamon rolls")]),
    ("Comet", "A comet is a small icy body that warms up as it nears the Sun. The heat turns its ice into gas, which "
     "forms a glowing cloud called the coma and often a long tail. The tail always points away from the Sun, pushed by "
     "the solar wind.",
     [("What is a comet?", "a small icy body that warms up as it nears the Sun", None),
      ("What is the glowing cloud around a comet called?", "the coma", None),
      ("Which way does the tail point?", "away from the Sun", None),
      ("What pushes the tail?", "the solar wind", None),
      ("How many comets are known?", None, "A comet")]),
    ("Orchestra", "The city orchestra has 64 musicians and plays in the old corn exchange. Its conductor, Ilse Novak, "
     "joined in 2015 after twelve years in Vienna. Each season ends with a free concert in the park, where the "
     "orchestra plays music chosen by a public vote.",
     [("How many musicians does the orchestra have?", "64", None),
      ("Where does the orchestra play?", "the old corn exchange", None),
      ("Who is the conductor?", "Ilse Novak", None),
      ("Where did the conductor work before?", "Vienna", None),
      ("How is the music for the park concert chosen?", "by a public vote", None),
      ("What instrument does Ilse Novak play?", None, "conductor")]),
    ("Bees", "Honey bees live in colonies of up to 60,000 workers and a single queen. Workers gather nectar and pollen "
     "and tell each other where flowers are with a waggle dance. The queen lays up to 2,000 eggs a day in early summer.",
     [("How many workers can a colony have?", "up to 60,000", None),
      ("How many queens does a colony have?", "a single queen", None),
      ("How do workers tell each other where flowers are?", "with a waggle dance", None),
      ("How many eggs can the queen lay in a day?", "up to 2,000", None),
      ("How long does a worker live?", None, "Honey bees")]),
    ("Railway", "The mountain railway climbs 1,200 metres in 9 kilometres, using a toothed rack between the rails. "
     "It opened in 1898 and its first engines burned coal. Since 1954 the trains have been electric, and the journey "
     "to the summit station takes 35 minutes.",
     [("How far does the railway climb?", "1,200 metres", None),
      ("What lies between the rails?", "a toothed rack", None),
      ("When did the railway open?", "1898", None),
      ("What did the first engines burn?", "coal", None),
      ("How long does the journey to the summit take?", "35 minutes", None),
      ("How much is a ticket to the summit?", None, "the summit station")]),
    ("Library", "The village library lends books, maps and tools. A retired carpenter started the tool shelf in 2018, "
     "and it now holds saws, drills and a ladder. Anyone with a library card may borrow a tool for one week.",
     [("What does the village library lend?", "books, maps and tools", None),
      ("Who started the tool shelf?", "A retired carpenter", None),
      ("When was the tool shelf started?", "2018", None),
      ("For how long may a tool be borrowed?", "one week", None),
      ("When does the library open?", None, "The village library")]),
]

DEV = [
    ("Ferry", "The island ferry leaves the harbour at seven in the morning and at five in the afternoon. The crossing "
     "takes fifty minutes in calm weather. In winter storms the ferry stays in port, and the island is supplied by "
     "helicopter.",
     [("When does the morning ferry leave?", "at seven in the morning", None),
      ("How long does the crossing take?", "fifty minutes", None),
      ("How is the island supplied in storms?", "by helicopter", None),
      ("What is the ferry called?", None, "The island ferry")]),
    ("Garden", "The school garden grows beans, potatoes and sunflowers. Pupils water it in turns, and in September "
     "they sell the harvest at a market to buy new seeds. The tallest sunflower last year reached 3 metres.",
     [("What does the school garden grow?", "beans, potatoes and sunflowers", None),
      ("When do the pupils sell the harvest?", "in September", None),
      ("What do they buy with the money?", "new seeds", None),
      ("How tall was the tallest sunflower?", "3 metres", None),
      ("Who planted the garden?", None, "Pupils")]),
]


def squad(articles, prefix):
    data = []
    n = 0
    for title, context, qas in articles:
        out = []
        for question, answer, plausible in qas:
            n += 1
            qid = f"{prefix}-{n:03d}"
            if answer is None:
                start = context.index(plausible)
                out.append({"id": qid, "question": question, "answers": [], "is_impossible": True,
                            "plausible_answers": [{"text": plausible, "answer_start": start}]})
            else:
                start = context.index(answer)
                out.append({"id": qid, "question": question, "answers": [{"text": answer, "answer_start": start}],
                            "is_impossible": False})
        data.append({"title": title, "paragraphs": [{"context": context, "qas": out}]})
    return {"version": "v2.0", "data": data}


root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
for name, articles, prefix in (("qa_example_train.json", TRAIN, "train"), ("qa_example_dev.json", DEV, "dev")):
    with open(os.path.join(root, name), "w") as f:
        json.dump(squad(articles, prefix), f, indent=1, ensure_ascii=False)
        f.write("\n")
