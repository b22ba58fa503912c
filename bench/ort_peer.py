"""The ONNX Runtime peer of `bert_infer bench`: the same encoder (transformers' BertModel of a size
preset with random weights, or a checkpoint directory), exported with torch.onnx.export and timed
in ONNX Runtime on random ids of batch x seq-len, every position a real token, or on real sentences
(--sentences, padded to the longest as a user would batch them; tokens/s counts real tokens).

ONNX Runtime gets its fastest setting here: each of
  - the plain export at ORT_ENABLE_ALL (ORT's own graph optimisations), and
  - the export rewritten by onnxruntime.transformers.optimizer (model_type bert: the fused
    Attention, SkipLayerNormalization, BiasGelu and EmbedLayerNormalization kernels ORT is known
    for), also at ORT_ENABLE_ALL,
and their int8 forms (ort-int8, ort-fused-int8: onnxruntime.quantization.quantize_dynamic, int8
weights per output channel, uint8 activations quantized at run time, ORT's VNNI kernels where the
CPU has them; ORT quantizes after its graph fusions, as its docs advise),
at each --threads count (intra-op threads; sequential execution); the best of the --variants
asked for is printed last as 'tokens/s: X', after a line naming the setting it came from.

  python bench/ort_peer.py --model base --batch 8 --seq-len 128 --steps 20 --threads 1,2
  (--variants ort-fused --threads 2 times one setting alone; --variants ort-int8,ort-fused-int8 the int8 peer)
"""
import argparse
import os
import resource
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.transformers import optimizer as ort_optimizer

VARIANTS = ("ort", "ort-fused", "ort-int8", "ort-fused-int8")
PRESETS = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8), "base": (12, 768, 12),
           "large": (24, 1024, 16)}  # (layers, hidden, heads), as BertConfig::preset


def build_model(name, seq_len):
    if os.path.isdir(name):
        return transformers.BertModel.from_pretrained(name, add_pooling_layer=False)
    layers, hidden, heads = PRESETS[name]
    config = transformers.BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                                     intermediate_size=4 * hidden, max_position_embeddings=max(512, seq_len))
    return transformers.BertModel(config, add_pooling_layer=False)


def export(model, path, seq_len):
    ids = torch.ones(1, seq_len, dtype=torch.int64)
    axes = {0: "batch", 1: "seq"}
    with torch.no_grad():
        torch.onnx.export(model, (ids, ids, torch.zeros_like(ids)), path, opset_version=14,
                          input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                        "last_hidden_state": axes})


def time_session(path, feeds, threads, steps):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for i in range(2):
        session.run(None, feeds[i % len(feeds)])
    t0 = time.perf_counter()
    for i in range(steps):
        session.run(None, feeds[i % len(feeds)])
    return (time.perf_counter() - t0) / steps


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="base", help="a size preset or a Hugging Face checkpoint directory")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", default="1,2", help="intra-op thread counts to try")
    p.add_argument("--variants", default="ort,ort-fused", help="graphs to try: ort (the plain export), ort-fused, and their int8 forms ort-int8, ort-fused-int8")
    p.add_argument("--sentences", help="time real text: the first --batch non-empty lines of this file, tokenized by "
                   "--vocab (BertTokenizerFast), cut to --seq-len and padded to the longest, as a user batches them; "
                   "tokens/s counts real tokens (the padding's cost included)")
    p.add_argument("--vocab", help="the WordPiece vocab.txt for --sentences")
    a = p.parse_args()
    if a.sentences and not a.vocab:
        p.error("--sentences needs --vocab")
    unknown = set(a.variants.split(",")) - set(VARIANTS)
    if unknown:
        p.error(f"--variants: unknown {sorted(unknown)} ({', '.join(VARIANTS)})")

    torch.manual_seed(0)
    model = build_model(a.model, a.seq_len).eval()
    config = model.config
    rng = np.random.default_rng(0)
    feeds = [{"input_ids": rng.integers(0, config.vocab_size, (a.batch, a.seq_len), dtype=np.int64),
              "attention_mask": np.ones((a.batch, a.seq_len), dtype=np.int64),
              "token_type_ids": rng.integers(0, config.type_vocab_size, (a.batch, a.seq_len), dtype=np.int64)}
             for _ in range(4)]
    real_tokens = a.batch * a.seq_len
    if a.sentences:
        with open(a.sentences, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f if line.strip(" \t\r\n")][:a.batch]
        if len(lines) < a.batch:
            p.error(f"--sentences {a.sentences} has {len(lines)} non-empty lines, fewer than --batch {a.batch}")
        tok = transformers.BertTokenizerFast(a.vocab, do_lower_case=True)
        enc = tok(lines, padding="longest", truncation=True, max_length=a.seq_len, return_tensors="np")
        feeds = [{k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}]
        real_tokens = int(enc["attention_mask"].sum())
        print(f"sentences: {len(lines)} lines, {real_tokens} real tokens ({enc['input_ids'].size} with padding)")
    best = None
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.onnx")
        export(model, plain, a.seq_len)
        fused = os.path.join(tmp, "fused.onnx")
        optimized = ort_optimizer.optimize_model(plain, model_type="bert", num_heads=config.num_attention_heads,
                                                 hidden_size=config.hidden_size)
        print("fused operators:", {k: v for k, v in optimized.get_fused_operator_statistics().items() if v})
        optimized.save_model_to_file(fused)
        variants = a.variants.split(",")
        paths = {"ort": plain, "ort-fused": fused}
        for source in ("ort", "ort-fused"):
            if source + "-int8" in variants:
                paths[source + "-int8"] = os.path.join(tmp, source + "-int8.onnx")
                # the fused graph's contrib operators defeat ONNX shape inference: their outputs are float
                quantize_dynamic(paths[source], paths[source + "-int8"], per_channel=True, weight_type=QuantType.QInt8,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        for variant, path in paths.items():
            if variant not in variants:
                continue
            for threads in [int(t) for t in a.threads.split(",")]:
                secs = time_session(path, feeds, threads, a.steps)
                tps = real_tokens / secs
                print(f"{variant} threads {threads}: {tps:.1f} tokens/s, {secs * 1e3:.2f} ms/batch")
                if best is None or tps > best[0]:
                    best = (tps, f"{variant} threads {threads}")
    print(f"onnxruntime {ort.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"peak memory MB: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    print(f"best: {best[1]}")
    print(f"tokens/s: {best[0]:.1f}")


if __name__ == "__main__":
    main()
