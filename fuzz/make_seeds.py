#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/seed-* (standard library
only; the files are committed, this script says where they came from). Each seed is a small valid
input, or one just off valid, so the fuzzer starts from every branch of its parser.
Regression inputs (regress-*: inputs that once crashed a target) sit beside the seeds and are
not written by this script."""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] -> file bytes."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    f32 = struct.pack("<3f", 1.0, -2.5, 3.0)
    f16 = struct.pack("<4H", 0x3C00, 0x7BFF, 0x0001, 0x7C00)
    bf16 = struct.pack("<2H", 0x3F80, 0xC000)
    i64 = struct.pack("<2q", 1 << 40, -3)
    i32 = struct.pack("<2i", -7, 40000)
    full = [("w", "F32", [3], f32), ("h", "F16", [2, 2], f16), ("b", "BF16", [2], bf16),
            ("input_ids", "I64", [1, 2], i64), ("labels", "I32", [2], i32)]
    put("fuzz_safetensors_file", "all-dtypes", safetensors(full, {"format": "pt"}))
    put("fuzz_safetensors_file", "empty-tensor", safetensors([("e", "F32", [0, 4], b"")]))
    put("fuzz_safetensors_file", "scalar", safetensors([("s", "F32", [], struct.pack("<f", 7.0))]))
    put("fuzz_safetensors_file", "truncated", safetensors(full)[:-5])
    # Header seeds: offsets within the 64 data bytes fuzz_safetensors_header appends.
    hdr = lambda h: json.dumps(h)
    put("fuzz_safetensors_header", "f32-i64", hdr({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                                                   "ids": {"dtype": "I64", "shape": [6], "data_offsets": [16, 64]}}))
    put("fuzz_safetensors_header", "f16-bf16-i32", hdr({
        "__metadata__": {"format": "pt"},
        "h": {"dtype": "F16", "shape": [4, 4], "data_offsets": [0, 32]},
        "b": {"dtype": "BF16", "shape": [8], "data_offsets": [32, 48]},
        "i": {"dtype": "I32", "shape": [2, 2], "data_offsets": [48, 64]}}))
    put("fuzz_safetensors_header", "overlap", hdr({"a": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]},
                                                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}))
    put("fuzz_safetensors_header", "bad-dtype", hdr({"a": {"dtype": "F64", "shape": [8], "data_offsets": [0, 64]}}))


def config_seeds():
    small = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 30, "hidden_size": 8,
             "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu",
             "max_position_embeddings": 16, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
             "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
             "pad_token_id": 0}
    put("fuzz_config_json", "bert-mlm", json.dumps(small, indent=2))
    put("fuzz_config_json", "bert-pretraining", json.dumps(dict(small, architectures=["BertForPreTraining"],
                                                                hidden_act="gelu_new")))
    put("fuzz_config_json", "bert-bare", json.dumps({k: v for k, v in small.items() if k != "architectures"}))
    put("fuzz_config_json", "unknown-type", json.dumps({"model_type": "gpt2", "n_embd": 8}))
    put("fuzz_config_json", "bad-heads", json.dumps(dict(small, num_attention_heads=3)))


def training_state_seeds():
    state = {"format": 2, "task": "mlm_nsp", "step": 3,
             "rng": {"s": [18229367531569391690, 6937749954251268966, 2061484235470601048, 18446421332541160596],
                     "has_spare": False, "spare": -0.0544},
             "schedule": {"kind": "linear", "base_lr": 0.005, "warmup_steps": 1, "total_steps": 6, "end_lr": 0.0,
                          "power": 1.0},
             "options": {"batch": 4, "lr": 0.005, "seq_len": 32, "optimizer": "adamw"},
             "data": {"epoch": 0, "index": 24}}
    put("fuzz_training_state", "format2", json.dumps(state, indent=2))
    v1 = {k: v for k, v in state.items() if k not in ("format", "task", "data")}
    v1.update({"data_epoch": 0, "data_index": 24})
    put("fuzz_training_state", "format1", json.dumps(v1))
    put("fuzz_training_state", "format3", json.dumps(dict(state, format=3)))
    adamw = {"optimizer": "adamw", "step": 3, "lr": 0.001, "settings": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-08}}
    put("fuzz_optimizer_state", "adamw", json.dumps(adamw, indent=2))
    put("fuzz_optimizer_state", "fractional-step", json.dumps(dict(adamw, step=3.5)))
    put("fuzz_optimizer_state", "lamb", json.dumps(dict(adamw, optimizer="lamb")))


def text_seeds():
    put("fuzz_vocab", "bert", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n,\n!\nw\n##or\n##ld\nun\n##aff\n##able\n")
    put("fuzz_vocab", "crlf-unicode", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\n東\r\n京\r\nwörld\r\n")
    put("fuzz_vocab", "duplicate", "[UNK]\na\na\n")
    put("fuzz_vocab", "no-unk", "a\nb\n")
    for name, text in [("ascii", "Hello, world! Isn't it unaffable?"),
                       ("accents-cjk", "Héllo Wörld 東京タワー naïve Ǆ"),
                       ("controls", "tab\there\x00nul\u200bzero-width\ufffd"),
                       ("long-word", "x" * 120 + " the"),
                       ("special", "[CLS] the [MASK] world [SEP]")]:
        put("fuzz_tokenizer", name, text)
    put("fuzz_tokenizer", "invalid-utf8", b"ok \xff\xfe broken \xc3 end \xe6\x9d")
    put("fuzz_tokenizer_files", "bert", json.dumps({"tokenizer_class": "BertTokenizer", "do_lower_case": True,
                                                     "model_max_length": 512, "unk_token": "[UNK]"}))
    put("fuzz_tokenizer_files", "added-tokens", json.dumps({
        "tokenizer_class": "BertTokenizerFast", "do_lower_case": False, "strip_accents": None,
        "tokenize_chinese_chars": True, "mask_token": {"content": "[MASK]", "lstrip": False},
        "added_tokens_decoder": {"0": {"content": "[PAD]", "special": True},
                                 "9": {"content": "<new>", "special": True}}}, indent=2))
    put("fuzz_tokenizer_files", "unknown-class", json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    put("fuzz_conll", "conll2003", "-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP I-MISC\n\n"
                                    "Peter NNP B-NP I-PER\nBlackburn NNP I-NP I-PER\n")
    put("fuzz_conll", "bioes-crlf-bom", "\ufeffEU\tS-ORG\r\nthe\tO\r\nGer\tB-MISC\r\nger\tE-MISC\r\n\r\n")
    put("fuzz_conll", "long-sentence", "".join(f"the{i % 3} {'B-LOC' if i % 4 == 0 else 'I-LOC'}\n" for i in range(30)))
    put("fuzz_conll", "bad-tag", "EU B-ORG\nrejects I-\n")
    put("fuzz_conll", "columns", "EU NNP B-ORG\n\nrejects O\n")


def shard(seq, preds, vocab, records):
    """records: [(tokens, a_end, is_random_next, positions, labels)] -> shard bytes."""
    out = b"XGBERT01" + struct.pack("<IIIIQ", 1, seq, preds, vocab, len(records))
    for tokens, a_end, rnd, pos, labels in records:
        r = struct.pack("<HHBBH", len(tokens), a_end, rnd, 0, len(pos))
        r += struct.pack("<%dI" % seq, *(tokens + [0] * (seq - len(tokens))))
        r += struct.pack("<%dH" % preds, *(pos + [0] * (preds - len(pos))))
        r += struct.pack("<%dI" % preds, *(labels + [0] * (preds - len(labels))))
        out += r
    return out


def shard_seeds():
    recs = [([2, 7, 8, 3, 9, 3], 3, 0, [1, 4], [7, 9]), ([2, 5, 3, 6, 6, 6, 3], 2, 1, [3], [11])]
    put("fuzz_shard", "two-records", shard(8, 2, 12, recs))
    put("fuzz_shard", "bad-record", shard(8, 2, 12, [([2, 7, 3, 40, 3], 2, 0, [1], [7])]))
    put("fuzz_shard", "truncated", shard(8, 2, 12, recs)[:-3])


def torch_pickle_seeds():
    """The small checkpoints tools/gen_torch_pickle_goldens.py wrote with torch.save (good and
    hostile), and their data.pkl alone, which the target also feeds to the bare unpickler."""
    import zipfile
    src = os.path.join(os.path.dirname(ROOT), "..", "tests", "data", "torch_pickle")
    for name in sorted(os.listdir(src)):
        if not name.endswith(".bin") or name == "deep_nesting.bin":
            continue
        with open(os.path.join(src, name), "rb") as f:
            data = f.read()
        put("fuzz_torch_pickle", name[:-4], data)
        try:
            z = zipfile.ZipFile(os.path.join(src, name))
            put("fuzz_torch_pickle", name[:-4] + "-pickle", z.read(name[:-4] + "/data.pkl"))
        except (zipfile.BadZipFile, KeyError, OSError, NotImplementedError, zipfile.error):
            pass


def squad_seeds():
    ctx = "The bridge was finished in 1789, when the river froze."
    v1 = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": ctx, "qas": [
        {"id": "q1", "question": "When was the bridge finished?", "answers": [{"text": "1789", "answer_start": 27},
                                                                               {"text": "in 1789", "answer_start": 24}]}]}]}]}
    put("fuzz_squad", "v1", json.dumps(v1))
    v2 = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": ctx * 3, "qas": [
        {"id": "a", "question": "  When?", "answers": [{"text": "froze", "answer_start": ctx.index("froze")}], "is_impossible": False},
        {"id": "b", "question": "Who?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "the river", "answer_start": ctx.index("the river")}]}]}]}]}
    put("fuzz_squad", "v2-windows", json.dumps(v2, ensure_ascii=False))
    put("fuzz_squad", "bad-start", json.dumps(v1).replace('"answer_start": 27', '"answer_start": 26'))
    put("fuzz_squad", "unicode", json.dumps(v1, ensure_ascii=False).replace("The bridge", "Thé brïdge 東京"))


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def proto_fields(data):
    """[(field number, wire type, raw field bytes including its key)] of one protobuf message."""
    fields, pos = [], 0

    def read_varint():
        nonlocal pos
        v, shift = 0, 0
        while True:
            b = data[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    while pos < len(data):
        start = pos
        key = read_varint()
        wire = key & 7
        if wire == 0:
            read_varint()
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n = read_varint()  # (before pos: read_varint moves it)
            pos += n
        fields.append((key >> 3, wire, data[start:pos]))
    return fields


def payload(raw):
    """The value of a length-delimited field's raw bytes (key and length dropped)."""
    pos = 1
    while raw[pos] & 0x80:
        pos += 1
    return raw[pos + 1:]


def spiece_seeds():
    """ALBERT's test spiece.model cut to its first 300 pieces (its <pad>, <unk>, [CLS], [SEP],
    [MASK] among them), with the normalizer's precompiled character map (a double-array trie the
    tokenizer checks on load) and without it (small, for the pieces)."""
    path = os.path.join(os.path.dirname(ROOT), "..", "tests", "data", "spiece", "spiece.model")
    with open(path, "rb") as f:
        model = f.read()
    pieces, rest = [], []
    for number, _, raw in proto_fields(model):
        (pieces if number == 1 else rest).append((number, raw))
    kept = b"".join(raw for _, raw in pieces[:300])
    with_map = kept + b"".join(raw for _, raw in rest)
    without_map = kept
    for number, raw in rest:
        if number == 3:  # NormalizerSpec without field 2 (precompiled_charsmap)
            spec = b"".join(r for n, _, r in proto_fields(payload(raw)) if n != 2)
            raw = varint(3 << 3 | 2) + varint(len(spec)) + spec
        without_map += raw
    put("fuzz_spiece", "albert-300-pieces", with_map)
    put("fuzz_spiece", "albert-300-pieces-no-charsmap", without_map)


if __name__ == "__main__":
    safetensors_seeds()
    config_seeds()
    training_state_seeds()
    text_seeds()
    shard_seeds()
    torch_pickle_seeds()
    squad_seeds()
    spiece_seeds()
