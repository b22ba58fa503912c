"""What the PyTorch peers of bert_pretrain --benchmark share: the size presets (layers, hidden,
heads, as bert_pretrain's) and the timing."""
import resource
import time

import torch


PRESETS = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8), "base": (12, 768, 12),
           "large": (24, 1024, 16)}
# ALBERT's: (layers, hidden, heads, embedding_size), as AlbertConfig::preset
ALBERT_PRESETS = {"tiny": (2, 128, 2, 64), "small": (4, 512, 8, 128), "base": (12, 768, 12, 128),
                  "large": (24, 1024, 16, 128), "xlarge": (24, 2048, 16, 128), "xxlarge": (12, 4096, 64, 128)}


# Each thread count in turn: two warm-up steps, then `steps` timed ones; prints each count's figure,
# the peak memory and, last, 'tokens/s: BEST' (or 'examples/s: BEST' with unit="examples").
def report_best(step, threads, steps, units_per_step, unit="tokens"):
    best = None
    for t in [int(x) for x in threads.split(",")]:
        torch.set_num_threads(t)
        step(); step()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        secs = time.perf_counter() - t0
        tps = steps * units_per_step / secs
        print(f"threads {t}: {tps:.1f} {unit}/s, {secs / steps:.3f} s/step")
        best = max(best or 0, tps)
    print(f"peak memory MB: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    print(f"{unit}/s: {best:.1f}")
