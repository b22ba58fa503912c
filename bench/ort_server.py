"""The serving peer of bench/serve_vs_ort.sh: ONNX Runtime behind uvicorn + Starlette, POST /embed
as text-embeddings-inference answers it (mean pooling, unit length), one request per session.run,
as such a service is usually written (no batching across requests).

    ort_server.py --model DIR --port 8081 [--threads 2] [--int8]

DIR is a Hugging Face BERT checkpoint with its tokenizer (the same one bert_serve serves). The model is
exported with torch.onnx (bench/ort_peer.py's export), at ORT_ENABLE_ALL; --int8 quantizes it as
bench/ort_peer.py's ort-int8 does (quantize_dynamic, per channel, QInt8).
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import transformers
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

sys.path.insert(0, os.path.dirname(__file__))
from ort_peer import build_model, export  # noqa: E402


def make_session(model_dir, threads, int8, work):
    path = os.path.join(work, "model.onnx")
    export(build_model(model_dir, 512), path, 128)
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantized = os.path.join(work, "model.int8.onnx")
        quantize_dynamic(path, quantized, weight_type=QuantType.QInt8, per_channel=True)
        path = quantized
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8081)
    p.add_argument("--threads", type=int, default=2, help="ORT intra-op threads")
    p.add_argument("--int8", action="store_true")
    a = p.parse_args()
    tokenizer = transformers.AutoTokenizer.from_pretrained(a.model)
    with tempfile.TemporaryDirectory() as work:
        session = make_session(a.model, a.threads, a.int8, work)

    def embed_sync(texts, normalize):
        enc = tokenizer(texts, padding=True, truncation=True, max_length=512, return_tensors="np")
        feeds = {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64),
                 "token_type_ids": np.zeros_like(enc["input_ids"], dtype=np.int64)}
        hidden = session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
        if normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.tolist()

    async def embed(request: Request):
        body = await request.json()
        inputs = body["inputs"]
        texts = [inputs] if isinstance(inputs, str) else inputs
        from starlette.concurrency import run_in_threadpool
        return JSONResponse(await run_in_threadpool(embed_sync, texts, body.get("normalize", True)))

    async def health(request: Request):
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/embed", embed, methods=["POST"]), Route("/health", health)])
    uvicorn.run(app, host=a.host, port=a.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
