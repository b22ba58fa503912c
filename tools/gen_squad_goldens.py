#!/usr/bin/env python3
"""SQuAD goldens for tests/test_squad.cpp, from the reference logic in Python:

- metrics: the official evaluation scripts, evaluate-v1.1.py and evaluate-v2.0.py (Rajpurkar et
  al., https://rajpurkar.github.io/SQuAD-explorer/), their functions copied below verbatim as
  published (only the file I/O of main() is left out); `pip install evaluate` fetches the same
  scripts from the Hub at run time, which this offline machine cannot;
- features: transformers 4.45.2's BertTokenizerFast (tokenizers 0.20.3) on data/bert-base-uncased-
  vocab.txt, called as examples/pytorch/question-answering/run_qa.py calls it
  (prepare_train_features and prepare_validation_features, copied below), on the SQuAD v2.0 file
  this script writes to tests/data/squad_windows.json (long contexts cut into several windows,
  accents, unanswerable questions, a question with leading spaces and one longer than
  max_query_length, answers at window edges);
- predictions: postprocess_qa_predictions of run_qa's utils_qa.py (copied below) on random
  logits, for v1.1 and v2.0 with two settings.

Run: python3 tools/gen_squad_goldens.py  (needs transformers==4.45.2, tokenizers==0.20.3 and
     numpy: pip install transformers==4.45.2 tokenizers==0.20.3 numpy).
     Writes tests/data/squad_metric_goldens.json, tests/data/squad_windows.json and
     tests/data/squad_feature_goldens.json."""
import collections
import json
import os
import re
import string
import sys
from collections import Counter

import numpy as np
import transformers
from transformers import BertTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")


# ---- evaluate-v1.1.py (official), verbatim ----
def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction, ground_truth):
    return (normalize_answer(prediction) == normalize_answer(ground_truth))


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


def evaluate_v1(dataset, predictions):
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article['paragraphs']:
            for qa in paragraph['qas']:
                total += 1
                if qa['id'] not in predictions:
                    message = 'Unanswered question ' + qa['id'] + \
                              ' will receive score 0.'
                    print(message, file=sys.stderr)
                    continue
                ground_truths = list(map(lambda x: x['text'], qa['answers']))
                prediction = predictions[qa['id']]
                exact_match += metric_max_over_ground_truths(
                    exact_match_score, prediction, ground_truths)
                f1 += metric_max_over_ground_truths(
                    f1_score, prediction, ground_truths)

    exact_match = 100.0 * exact_match / total
    f1 = 100.0 * f1 / total

    return {'exact_match': exact_match, 'f1': f1}


# ---- evaluate-v2.0.py (official), verbatim but for main()'s file reading ----
def make_qid_to_has_ans(dataset):
    qid_to_has_ans = {}
    for article in dataset:
        for p in article['paragraphs']:
            for qa in p['qas']:
                qid_to_has_ans[qa['id']] = bool(qa['answers'])
    return qid_to_has_ans


def get_tokens(s):
    if not s: return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def get_raw_scores(dataset, preds):
    exact_scores = {}
    f1_scores = {}
    for article in dataset:
        for p in article['paragraphs']:
            for qa in p['qas']:
                qid = qa['id']
                gold_answers = [a['text'] for a in qa['answers']
                                if normalize_answer(a['text'])]
                if not gold_answers:
                    # For unanswerable questions, only correct answer is empty string
                    gold_answers = ['']
                if qid not in preds:
                    print('Missing prediction for %s' % qid)
                    continue
                a_pred = preds[qid]
                # Take max over all gold answers
                exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
                f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    new_scores = {}
    for qid, s in scores.items():
        pred_na = na_probs[qid] > na_prob_thresh
        if pred_na:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = s
    return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores.values()) / total),
            ('f1', 100.0 * sum(f1_scores.values()) / total),
            ('total', total),
        ])
    else:
        total = len(qid_list)
        return collections.OrderedDict([
            ('exact', 100.0 * sum(exact_scores[k] for k in qid_list) / total),
            ('f1', 100.0 * sum(f1_scores[k] for k in qid_list) / total),
            ('total', total),
        ])


def merge_eval(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval['%s_%s' % (prefix, k)] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for i, qid in enumerate(qid_list):
        if qid not in scores: continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            if preds[qid]:
                diff = -1
            else:
                diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
    best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval['best_exact'] = best_exact
    main_eval['best_exact_thresh'] = exact_thresh
    main_eval['best_f1'] = best_f1
    main_eval['best_f1_thresh'] = f1_thresh


def evaluate_v2(dataset, preds, na_probs, na_prob_thresh):
    """evaluate-v2.0.py's main() after reading its three files."""
    qid_to_has_ans = make_qid_to_has_ans(dataset)  # maps qid to True/False
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(dataset, preds)
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        has_ans_eval = make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids)
        merge_eval(out_eval, has_ans_eval, 'HasAns')
    if no_ans_qids:
        no_ans_eval = make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids)
        merge_eval(out_eval, no_ans_eval, 'NoAns')
    find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
    return out_eval


# ---- utils_qa.py ----
def postprocess_qa_predictions(examples, features, predictions, version_2_with_negative=False, n_best_size=20,
                               max_answer_length=30, null_score_diff_threshold=0.0):
    """utils_qa.py's postprocess_qa_predictions, verbatim but for its logging and file output."""
    all_start_logits, all_end_logits = predictions
    example_id_to_index = {k: i for i, k in enumerate(examples["id"])}
    features_per_example = collections.defaultdict(list)
    for i, feature in enumerate(features):
        features_per_example[example_id_to_index[feature["example_id"]]].append(i)
    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()
    for example_index, example in enumerate(examples["rows"]):
        feature_indices = features_per_example[example_index]
        min_null_prediction = None
        prelim_predictions = []
        for feature_index in feature_indices:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = features[feature_index]["offset_mapping"]
            token_is_max_context = features[feature_index].get("token_is_max_context", None)
            feature_null_score = start_logits[0] + end_logits[0]
            if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
                min_null_prediction = {"offsets": (0, 0), "score": feature_null_score,
                                       "start_logit": start_logits[0], "end_logit": end_logits[0]}
            start_indexes = np.argsort(start_logits)[-1 : -n_best_size - 1 : -1].tolist()
            end_indexes = np.argsort(end_logits)[-1 : -n_best_size - 1 : -1].tolist()
            for start_index in start_indexes:
                for end_index in end_indexes:
                    if (start_index >= len(offset_mapping) or end_index >= len(offset_mapping)
                            or offset_mapping[start_index] is None or len(offset_mapping[start_index]) < 2
                            or offset_mapping[end_index] is None or len(offset_mapping[end_index]) < 2):
                        continue
                    if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                        continue
                    if token_is_max_context is not None and not token_is_max_context.get(str(start_index), False):
                        continue
                    prelim_predictions.append({
                        "offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                        "score": start_logits[start_index] + end_logits[end_index],
                        "start_logit": start_logits[start_index], "end_logit": end_logits[end_index]})
        if version_2_with_negative and min_null_prediction is not None:
            prelim_predictions.append(min_null_prediction)
            null_score = min_null_prediction["score"]
        predictions = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:n_best_size]
        if (version_2_with_negative and min_null_prediction is not None
                and not any(p["offsets"] == (0, 0) for p in predictions)):
            predictions.append(min_null_prediction)
        context = example["context"]
        for pred in predictions:
            offsets = pred.pop("offsets")
            pred["text"] = context[offsets[0] : offsets[1]]
        if len(predictions) == 0 or (len(predictions) == 1 and predictions[0]["text"] == ""):
            predictions.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
        scores = np.array([pred.pop("score") for pred in predictions])
        exp_scores = np.exp(scores - np.max(scores))
        probs = exp_scores / exp_scores.sum()
        for prob, pred in zip(probs, predictions):
            pred["probability"] = prob
        if not version_2_with_negative:
            all_predictions[example["id"]] = predictions[0]["text"]
            all_nbest_json[example["id"]] = float(predictions[0]["probability"])
        else:
            i = 0
            while predictions[i]["text"] == "":
                i += 1
            best_non_null_pred = predictions[i]
            score_diff = null_score - best_non_null_pred["start_logit"] - best_non_null_pred["end_logit"]
            scores_diff_json[example["id"]] = float(score_diff)
            if score_diff > null_score_diff_threshold:
                all_predictions[example["id"]] = ""
            else:
                all_predictions[example["id"]] = best_non_null_pred["text"]
    return all_predictions, scores_diff_json, all_nbest_json


def main():
    # ---- metric goldens ----
    PAIRS = [  # (prediction, gold)
        ("", ""), ("", "the"), ("the", ""), ("", "Paris"), ("Paris", ""), ("...", "!!"), ("An apple", "apple"),
        ("The Eiffel Tower!", "eiffel tower"), ("anthem", "the anthem"), ("a  b\tc\n", "A B C"), ("Café", "café"),
        ("ΟΔΟΣ", "οδος"), ("ΟΔΟΣ ΣΑ", "οδος σα"), ("théâtre", "the âtre"), ("the\u0301 cat", "cat"), ("l'an", "lan"),
        ("naïve a", "naïve"), ("İstanbul", "i̇stanbul"), ("a_b the", "a_b"), ("1,200 metres", "1200 metres"),
        ("x²a", "x² a"), ("the the the", "the"), ("Paris Paris London", "Paris London London"),
        ("\u3000the\u00a0cat\u2003", "cat"), ("\x1ftest", "test"), ("«the» cat", "cat"), ("an an", ""),
        ("über the top", "uber top"), ("北京 the 大学", "北京 大学"), ("theater", "the ater"), ("A-B", "ab"),
        ("the cat sat on the mat", "a cat on a mat"), ("one two three four", "two four six"), ("ⅷthe", "the"),
        ("e\u0301the", "e\u0301"), ("Straße", "STRASSE"), ("ǅa", "ǆa"), ("؟the؟", "؟ ؟"),
    ]

    pairs_out = []
    for pred, gold in PAIRS:
        pairs_out.append({"prediction": pred, "gold": gold, "normalized_prediction": normalize_answer(pred),
                          "normalized_gold": normalize_answer(gold), "exact": bool(exact_match_score(pred, gold)),
                          "f1_v1": f1_score(pred, gold), "f1_v2": compute_f1(gold, pred)})

    rng = np.random.RandomState(11)
    # v1.1: several gold answers per question, a missing prediction
    v1_questions, v1_preds = [], {}
    for i in range(0, len(PAIRS) - 2, 2):
        qid = f"v1-{i}"
        golds = [PAIRS[i][1] or "x", PAIRS[i + 1][1] or "y", "extra gold answer"]
        v1_questions.append({"id": qid, "answers": [{"text": g, "answer_start": 0} for g in golds]})
        if i != 4:
            v1_preds[qid] = PAIRS[i][0]
    v1_dataset = [{"paragraphs": [{"context": "", "qas": v1_questions}]}]

    # v2.0: answerable (one with only golds that normalise to nothing), unanswerable, na_probs with ties
    v2_questions, v2_preds, v2_na = [], {}, {}
    answer_pool = ["Paris", "the", "...", "Eiffel Tower", "", "north of the river", "an"]
    for i in range(24):
        qid = f"v2-{i}"
        unanswerable = i % 3 == 0
        golds = [] if unanswerable else [g for g in answer_pool[i % 7: i % 7 + 2] if g] or ["a"]
        if i == 5:
            golds = ["the", "."]  # normalises to nothing: the only right answer is ""
        v2_questions.append({"id": qid, "answers": [{"text": g, "answer_start": 0} for g in golds]})
        v2_preds[qid] = ["", "Paris", "eiffel tower", "the river", "An", "x"][rng.randint(0, 6)]
        v2_na[qid] = float(np.round(rng.uniform(-3, 3), 1))  # rounded: ties happen
    v2_dataset = [{"paragraphs": [{"context": "", "qas": v2_questions}]}]

    def gold_list(questions):
        return [{"id": q["id"], "answers": [a["text"] for a in q["answers"]]} for q in questions]

    metric_goldens = {
        "generator": "tools/gen_squad_goldens.py (official evaluate-v1.1.py / evaluate-v2.0.py logic)",
        "pairs": pairs_out,
        "v1": {"gold": gold_list(v1_questions), "predictions": v1_preds, "result": evaluate_v1(v1_dataset, v1_preds)},
        "v2": [{"gold": gold_list(v2_questions), "predictions": v2_preds, "na_probs": na, "na_prob_thresh": t,
                "result": evaluate_v2(v2_dataset, v2_preds, na if na else {k: 0.0 for k in v2_preds}, t)}
               for na, t in ((v2_na, 1.0), (v2_na, 0.0), ({}, 1.0))],
    }


    # ---- features and predictions: run_qa.py / utils_qa.py ----
    LONG = ("The river Åre rises in the northern hills and flows south for 212 kilometres. Its water turns the wheels of "
            "eleven mills, the oldest of which, built in 1612, still grinds wheat for the town's bakers. In spring the "
            "snowmelt floods the meadows near Kolby, and the herons return in April. A stone bridge with seven arches "
            "crosses the river at Kolby; it was finished in 1789 by the mason Petra Lind. Below the bridge the river "
            "widens into a lake called Stillwater, where the town holds a rowing race every August. The race was first "
            "rowed in 1903 between two crews of fishermen. Today twenty crews take part, and the winners receive a "
            "copper oar.")
    SHORT = "Crème brûlée is a dessert of rich custard topped with a layer of hard caramel, often served cold."

    def occurrences(context, qas):
        out = []
        for qid, question, answer in qas:
            if answer is None:
                out.append({"id": qid, "question": question, "answers": [], "is_impossible": True})
            else:
                out.append({"id": qid, "question": question, "is_impossible": False,
                            "answers": [{"text": answer, "answer_start": context.index(answer)}]})
        return out

    windows_file = {"version": "v2.0", "data": [{"title": "windows", "paragraphs": [
        {"context": LONG, "qas": occurrences(LONG, [
            ("w-1", "How long is the river?", "212 kilometres"),
            ("w-2", "When was the oldest mill built?", "1612"),
            ("w-3", "     Who finished the stone bridge?", "Petra Lind"),
            ("w-4", "What do the winners of the race receive?", "a copper oar"),
            ("w-5", "What is the lake below the bridge called, and what happens on it every year in the late summer "
                    "months when the town gathers?", "Stillwater"),
            ("w-6", "When do the herons return?", "April"),
            ("w-7", "How many arches does the bridge have?", "seven"),
            ("w-8", "Who built the first mill?", None),
            ("w-9", "Where does the river rise?", "the northern hills"),
            ("w-10", "When was the race first rowed?", "1903"),
        ])},
        {"context": SHORT, "qas": occurrences(SHORT, [
            ("s-1", "What is crème brûlée topped with?", "a layer of hard caramel"),
            ("s-2", "Who invented crème brûlée?", None),
        ])},
    ]}]}
    with open(os.path.join(DATA, "squad_windows.json"), "w") as f:
        json.dump(windows_file, f, indent=1, ensure_ascii=False)
        f.write("\n")

    MAX_LEN, STRIDE, MAX_QUERY = 40, 12, 16
    tokenizer = BertTokenizerFast(os.path.join(HERE, "..", "data", "bert-base-uncased-vocab.txt"), do_lower_case=True)

    flat = [(p["context"], qa) for p in windows_file["data"][0]["paragraphs"] for qa in p["qas"]]
    examples = {"id": [qa["id"] for _, qa in flat], "context": [c for c, _ in flat],
                "answers": [{"text": [a["text"] for a in qa["answers"]], "answer_start": [a["answer_start"] for a in qa["answers"]]}
                            for _, qa in flat]}


    def truncated_query(question):
        """squad.py's max_query_length: the question's first MAX_QUERY tokens (run_qa has no such cut)."""
        enc = tokenizer(question, add_special_tokens=False, return_offsets_mapping=True)
        if len(enc["input_ids"]) <= MAX_QUERY:
            return question
        return question[: enc["offset_mapping"][MAX_QUERY - 1][1]]


    examples["question"] = [truncated_query(qa["question"].lstrip()) for _, qa in flat]
    pad_on_right = True


    def prepare_train_features(examples):  # run_qa.py, verbatim but for the names of its globals
        examples["question"] = [q.lstrip() for q in examples["question"]]
        tokenized_examples = tokenizer(
            examples["question" if pad_on_right else "context"],
            examples["context" if pad_on_right else "question"],
            truncation="only_second" if pad_on_right else "only_first",
            max_length=MAX_LEN,
            stride=STRIDE,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=False,
        )
        sample_mapping = tokenized_examples.pop("overflow_to_sample_mapping")
        offset_mapping = tokenized_examples.pop("offset_mapping")
        tokenized_examples["start_positions"] = []
        tokenized_examples["end_positions"] = []
        for i, offsets in enumerate(offset_mapping):
            input_ids = tokenized_examples["input_ids"][i]
            if tokenizer.cls_token_id in input_ids:
                cls_index = input_ids.index(tokenizer.cls_token_id)
            elif tokenizer.bos_token_id in input_ids:
                cls_index = input_ids.index(tokenizer.bos_token_id)
            else:
                cls_index = 0
            sequence_ids = tokenized_examples.sequence_ids(i)
            sample_index = sample_mapping[i]
            answers = examples["answers"][sample_index]
            if len(answers["answer_start"]) == 0:
                tokenized_examples["start_positions"].append(cls_index)
                tokenized_examples["end_positions"].append(cls_index)
            else:
                start_char = answers["answer_start"][0]
                end_char = start_char + len(answers["text"][0])
                token_start_index = 0
                while sequence_ids[token_start_index] != (1 if pad_on_right else 0):
                    token_start_index += 1
                token_end_index = len(input_ids) - 1
                while sequence_ids[token_end_index] != (1 if pad_on_right else 0):
                    token_end_index -= 1
                if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
                    tokenized_examples["start_positions"].append(cls_index)
                    tokenized_examples["end_positions"].append(cls_index)
                else:
                    while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                        token_start_index += 1
                    tokenized_examples["start_positions"].append(token_start_index - 1)
                    while offsets[token_end_index][1] >= end_char:
                        token_end_index -= 1
                    tokenized_examples["end_positions"].append(token_end_index + 1)
        return tokenized_examples


    def prepare_validation_features(examples):  # run_qa.py, verbatim but for the names of its globals
        examples["question"] = [q.lstrip() for q in examples["question"]]
        tokenized_examples = tokenizer(
            examples["question" if pad_on_right else "context"],
            examples["context" if pad_on_right else "question"],
            truncation="only_second" if pad_on_right else "only_first",
            max_length=MAX_LEN,
            stride=STRIDE,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=False,
        )
        sample_mapping = tokenized_examples.pop("overflow_to_sample_mapping")
        tokenized_examples["example_id"] = []
        for i in range(len(tokenized_examples["input_ids"])):
            sequence_ids = tokenized_examples.sequence_ids(i)
            context_index = 1 if pad_on_right else 0
            sample_index = sample_mapping[i]
            tokenized_examples["example_id"].append(examples["id"][sample_index])
            tokenized_examples["offset_mapping"][i] = [
                (o if sequence_ids[k] == context_index else None)
                for k, o in enumerate(tokenized_examples["offset_mapping"][i])
            ]
        return tokenized_examples


    train = prepare_train_features(dict(examples))
    val = prepare_validation_features(dict(examples))
    features = []
    for i in range(len(train["input_ids"])):
        seq = train.sequence_ids(i)
        begin = seq.index(1)
        end = len(seq) - seq[::-1].index(1)
        start_pos = train["start_positions"][i]
        features.append({
            "question": val["example_id"][i], "input_ids": train["input_ids"][i], "token_type_ids": train["token_type_ids"][i],
            "context_begin": begin, "context_end": end,
            "context_offsets": [list(o) for o in val["offset_mapping"][i][begin:end]],
            "start_position": start_pos, "end_position": train["end_positions"][i],
            # run_qa walks past the context when the answer starts in the window's last context token
            "start_past_context": start_pos != 0 and not (begin <= start_pos < end),
        })

    logit_rng = np.random.RandomState(3)
    start_logits = [logit_rng.normal(size=len(f["input_ids"])).astype(np.float32) for f in features]
    end_logits = [logit_rng.normal(size=len(f["input_ids"])).astype(np.float32) for f in features]
    for f, s, e in zip(features, start_logits, end_logits):  # the null answer wins for some questions, narrowly for w-3
        boost = {"w-8": 4.0, "s-2": 4.0, "w-3": 1.6}.get(f["question"], 0.0)
        s[0] += boost
        e[0] += boost
    val_features = [{"example_id": val["example_id"][i], "offset_mapping": val["offset_mapping"][i]} for i in range(len(features))]
    rows = [{"id": examples["id"][i], "context": examples["context"][i]} for i in range(len(flat))]
    decoded = []
    for v2, n_best, max_answer, threshold in ((False, 20, 30, 0.0), (True, 20, 30, 0.0), (False, 3, 4, 0.0), (True, 5, 6, 0.8)):
        preds, odds, probs = postprocess_qa_predictions({"id": examples["id"], "rows": rows}, val_features, (start_logits, end_logits),
                                                        v2, n_best, max_answer, threshold)
        decoded.append({"version_2": v2, "n_best_size": n_best, "max_answer_length": max_answer,
                        "null_score_diff_threshold": threshold, "predictions": preds, "null_odds": odds, "probabilities": probs})

    feature_goldens = {
        "generator": f"tools/gen_squad_goldens.py (transformers {transformers.__version__}, run_qa.py / utils_qa.py logic)",
        "file": "squad_windows.json", "max_len": MAX_LEN, "doc_stride": STRIDE, "max_query_length": MAX_QUERY,
        "features": features,
        "start_logits": [[float(x) for x in l] for l in start_logits], "end_logits": [[float(x) for x in l] for l in end_logits],
        "decoded": decoded,
    }
    for name, obj in (("squad_metric_goldens.json", metric_goldens), ("squad_feature_goldens.json", feature_goldens)):
        with open(os.path.join(DATA, name), "w") as f:
            json.dump(obj, f, ensure_ascii=False)
            f.write("\n")
    print(f"{len(features)} features; past-context starts: {sum(f['start_past_context'] for f in features)}")


if __name__ == "__main__":
    main()
