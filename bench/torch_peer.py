"""What the PyTorch peers of bert_pretrain --benchmark and bert_finetune --benchmark share: the
size presets (layers, hidden, heads, as bert_pretrain's), the optimizer variants and the timing
with its search for the fastest setting."""
import resource
import time

import torch


PRESETS = {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8), "base": (12, 768, 12),
           "large": (24, 1024, 16)}
# ALBERT's: (layers, hidden, heads, embedding_size), as AlbertConfig::preset
ALBERT_PRESETS = {"tiny": (2, 128, 2, 64), "small": (4, 512, 8, 128), "base": (12, 768, 12, 128),
                  "large": (24, 1024, 16, 128), "xlarge": (24, 2048, 16, 128), "xxlarge": (12, 4096, 64, 128)}

# torch.optim.AdamW's implementations, the same update: "fused" (one kernel over all parameters;
# CPU tensors from PyTorch 2.4), "foreach" (multi-tensor ops) and "single" (a loop over the
# parameters, PyTorch's default on CPU).
OPTIMIZERS = ("fused", "foreach", "single")


def blas_info():
    """The BLAS this torch was built against: "generic" for Debian's (the system libblas.so.3, so
    OpenBLAS settings apply), "mkl" for PyPI's x86 wheels."""
    for part in torch.__config__.show().replace(",", " ").split():
        if part.startswith("BLAS_INFO="):
            return part[len("BLAS_INFO="):]
    return "unknown"


def adamw(params, variant, **hyper):
    """torch.optim.AdamW(params, **hyper) as `variant` (one of OPTIMIZERS)."""
    if variant == "fused":
        return torch.optim.AdamW(params, fused=True, **hyper)
    return torch.optim.AdamW(params, foreach=(variant == "foreach"), **hyper)


def supported_optimizers():
    """The OPTIMIZERS this torch runs on CPU tensors (1.13 has no fused AdamW, 2.0-2.3 only on CUDA)."""
    ok = []
    for v in OPTIMIZERS:
        p = torch.nn.Parameter(torch.zeros(2))
        p.grad = torch.ones(2)
        try:
            adamw([p], v, lr=1e-3).step()
            ok.append(v)
        except (TypeError, RuntimeError, ValueError):
            pass
    return ok


def choose(spec, available, what):
    """A comma-separated list of choices ("all": every available one, in `available`'s order)."""
    if spec == "all":
        return list(available)
    chosen = spec.split(",")
    for c in chosen:
        if c not in available:
            raise SystemExit(f"{what} {c!r} is not available on PyTorch {torch.__version__} (available: {', '.join(available)})")
    return chosen


def _time(step, steps, units_per_step):
    step(); step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    secs = time.perf_counter() - t0
    return steps * units_per_step / secs, secs / steps


# The fastest setting over `axes`, a list of (name, values, apply) where apply(value) switches to
# that value: threads first, then each further axis at the best values found so far (one pass, one
# axis at a time: with threads 1,2 and three optimizers that is 4 runs rather than 6). Each run is
# two warm-up steps and `steps` timed ones, printed as "threads 2, optimizer fused: X tokens/s, S
# s/step" ("threads 2: ..." with no further axis). Then the peak memory, the winning setting as
# "setting: torch=VERSION blas=BLAS threads=T interop=I NAME=VALUE...", and last 'tokens/s: BEST'
# (or 'examples/s: BEST' with unit="examples").
def search(step, threads, axes, steps, units_per_step, unit="tokens"):
    axes = [("threads", [int(x) for x in str(threads).split(",")], torch.set_num_threads)] + list(axes)
    best = [values[0] for _, values, _ in axes]
    timed = {}
    for i, (_, values, _) in enumerate(axes):
        for v in values:
            setting = tuple(best[:i] + [v] + best[i + 1:])
            if setting not in timed:
                for (_, _, apply), value in zip(axes, setting):
                    apply(value)
                timed[setting] = _time(step, steps, units_per_step)
                label = ", ".join(f"{name} {value}" for (name, _, _), value in zip(axes, setting))
                print(f"{label}: {timed[setting][0]:.1f} {unit}/s, {timed[setting][1]:.3f} s/step", flush=True)
            if timed[setting][0] > timed[tuple(best)][0]:  # the first run is the starting setting
                best = list(setting)
    print(f"peak memory MB: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")
    torch.set_num_threads(best[0])
    extra = "".join(f" {name}={value}" for (name, _, _), value in zip(axes[1:], best[1:]))
    print(f"setting: torch={torch.__version__} blas={blas_info()} threads={best[0]} "
          f"interop={torch.get_num_interop_threads()}{extra}")
    print(f"{unit}/s: {timed[tuple(best)][0]:.1f}")
