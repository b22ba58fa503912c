#!/usr/bin/python3
"""PyTorch zip checkpoints (torch.save) for the restricted unpickler's tests (tests/test_torch_pickle.cpp):
files PyTorch itself writes, with the values the reader must return, and hostile files crafted
to attack it (a global that would run a command, truncation, offsets past the storage, absurd
sizes, deep nesting, a wrong CRC, a compressed entry, the legacy format).

Run: python3 tools/gen_torch_pickle_goldens.py   (needs torch 1.13: pip install torch==1.13.1)
Writes tests/data/torch_pickle/*.bin, expected.safetensors and bert_a_bin/{config.json,
pytorch_model.bin} (tests/data/bert_a's weights as PyTorch pickles them: F16 for some tensors,
the tied decoder weight sharing the word embeddings' storage, an int64 position_ids buffer)."""
import collections
import io
import os
import pickle
import shutil
import struct
import zipfile
import zlib

import torch

from torch_bert import read_safetensors, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "torch_pickle")
os.makedirs(OUT, exist_ok=True)


def save(obj, name, **kw):
    torch.save(obj, os.path.join(OUT, name), **kw)


# --- Good files, written by PyTorch. ---
torch.manual_seed(5)
base = torch.randn(3, 4)
good = collections.OrderedDict()
good["f32"] = base
good["f32_transposed"] = base.t()                  # non-contiguous, same storage
good["f32_slice"] = base[1:, 1:3]                  # storage offset 5, strides (4, 1)
good["f32_strided"] = base[:, ::2]                 # stride 2 in the last dimension
good["f16"] = torch.randn(2, 3).half()
good["bf16"] = torch.randn(5).bfloat16()
good["bf16_transposed"] = torch.randn(2, 3).bfloat16().t()
good["i64"] = torch.arange(7) - 3
good["scalar"] = torch.tensor(2.5)
good["empty"] = torch.zeros(0, 3)
good["parameter"] = torch.nn.Parameter(torch.randn(2, 2))  # pickled through _rebuild_parameter
save(good, "tensors.bin")
write_safetensors(os.path.join(OUT, "expected.safetensors"),
                  {k: (v.detach().float() if v.is_floating_point() else v) for k, v in good.items()})

# The same state dict as protocol 4 (SHORT_BINUNICODE, MEMOIZE, FRAME...).
save(good, "tensors_protocol4.bin", pickle_protocol=4)


# --- Hostile files. ---
class Call:
    """Pickles as a call of `fn(*args)`: what an attacker's checkpoint would do on torch.load."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


save({"w": torch.ones(2), "x": Call(os.system, "touch /tmp/xgrad-pwned")}, "global_os_system.bin")
save({"w": Call(eval, "__import__('os').system('touch /tmp/xgrad-pwned')")}, "global_builtins_eval.bin")

with open(os.path.join(OUT, "tensors.bin"), "rb") as f:
    whole = f.read()
with open(os.path.join(OUT, "truncated.bin"), "wb") as f:
    f.write(whole[: len(whole) // 2])


class FakeStorage:
    def __init__(self, dtype_global, key, numel):
        self.persistent = ("storage", dtype_global, key, "cpu", numel)


class FakeTensor:
    """A tensor as torch pickles it, with whatever offset, sizes and strides a test needs."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


class TorchLikePickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.persistent if isinstance(obj, FakeStorage) else None


def archive(name, state, storages, pickle_bytes=None, compression=zipfile.ZIP_STORED):
    """A zip laid out as torch.save's: <prefix>/data.pkl, <prefix>/data/<key>, <prefix>/version."""
    if pickle_bytes is None:
        buf = io.BytesIO()
        TorchLikePickler(buf, protocol=2).dump(state)
        pickle_bytes = buf.getvalue()
    prefix = name[: -len(".bin")]
    with zipfile.ZipFile(os.path.join(OUT, name), "w", compression) as z:
        z.writestr(f"{prefix}/data.pkl", pickle_bytes)
        for key, data in storages.items():
            z.writestr(f"{prefix}/data/{key}", data)
        z.writestr(f"{prefix}/version", "3\n")


twelve = torch.arange(12, dtype=torch.float32).numpy().tobytes()
fs = lambda numel, key="0": FakeStorage(torch.FloatStorage, key, numel)
archive("fake_ok.bin", {"t": FakeTensor(fs(12), 2, (2, 3), (1, 2))}, {"0": twelve})  # a valid control
archive("offset_past_storage.bin", {"t": FakeTensor(fs(12), 100, (2,), (1,))}, {"0": twelve})
archive("stride_past_storage.bin", {"t": FakeTensor(fs(12), 0, (3, 4), (10, 1))}, {"0": twelve})
archive("absurd_size.bin", {"t": FakeTensor(fs(12), 0, (1 << 40, 1 << 40), (0, 0))}, {"0": twelve})
archive("storage_size_mismatch.bin", {"t": FakeTensor(fs(1000), 0, (2,), (1,))}, {"0": twelve})
# 2^62 floats: the byte count wraps to 0 in 64 bits, the size of the empty entry beside it.
archive("storage_count_wraps.bin", {"t": FakeTensor(fs(1 << 62), 0, (1024,), (1,))}, {"0": b""})
archive("missing_storage.bin", {"t": FakeTensor(fs(12, key="7"), 0, (2,), (1,))}, {"0": twelve})
archive("negative_size.bin", {"t": FakeTensor(fs(12), 0, (-2,), (1,))}, {"0": twelve})
archive("not_a_dict.bin", [FakeTensor(fs(12), 0, (2,), (1,))], {"0": twelve})
# 20000 nested tuples: MARK x N, EMPTY_TUPLE, TUPLE x N.
archive("deep_nesting.bin", None, {}, b"\x80\x02" + b"(" * 20000 + b")" + b"t" * 20000 + b".")
# INST ('i'): the other opcode that calls a global, here os.system("echo").
archive("opcode_inst.bin", None, {}, b"\x80\x02(X\x04\x00\x00\x00echoios\nsystem\n.")
good_pickle = zipfile.ZipFile(os.path.join(OUT, "fake_ok.bin")).read("fake_ok/data.pkl")
archive("truncated_pickle.bin", None, {"0": twelve}, good_pickle[: len(good_pickle) - 9])
archive("compressed.bin", {"t": FakeTensor(fs(12), 0, (2,), (1,))}, {"0": twelve}, compression=zipfile.ZIP_DEFLATED)


def zip64_archive(name, entries):
    """Stored entries with every size and offset in zip64 extra fields and a zip64 end record, as
    writers do for archives past 4 GiB (built by hand: Python's zipfile only does it when needed)."""
    out, central = bytearray(), bytearray()
    for entry, data in entries:
        crc, n, at, fname = zlib.crc32(data), len(data), len(out), entry.encode()
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(fname), 20)
        out += fname + struct.pack("<HHQQ", 1, 16, n, n) + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                               len(fname), 28, 0, 0, 0, 0, 0xFFFFFFFF)
        central += fname + struct.pack("<HHQQQ", 1, 24, n, n, at)
    dir_at = len(out)
    out += central
    end64_at = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(entries), len(entries), len(central), dir_at)
    out += struct.pack("<IIQI", 0x07064B50, 0, end64_at, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(out)


ok = zipfile.ZipFile(os.path.join(OUT, "fake_ok.bin"))
zip64_archive("zip64.bin", [(i.filename.replace("fake_ok/", "zip64/"), ok.read(i.filename)) for i in ok.infolist()])
assert zipfile.ZipFile(os.path.join(OUT, "zip64.bin")).read("zip64/data/0") == twelve  # Python agrees it is valid

# A byte of a storage changed after the CRC was written.
with open(os.path.join(OUT, "fake_ok.bin"), "rb") as f:
    data = bytearray(f.read())
at = data.index(twelve)
data[at + 5] ^= 0xFF
with open(os.path.join(OUT, "bad_crc.bin"), "wb") as f:
    f.write(data)

save({"w": torch.ones(2)}, "legacy.bin", _use_new_zipfile_serialization=False)

# --- tests/data/bert_a's weights as a pytorch_model.bin. ---
src = os.path.join(HERE, "..", "tests", "data", "bert_a")
dst = os.path.join(HERE, "..", "tests", "data", "bert_a_bin")
os.makedirs(dst, exist_ok=True)
shutil.copy(os.path.join(src, "config.json"), dst)
weights = read_safetensors(os.path.join(src, "model.safetensors"))
state = collections.OrderedDict()
for name, t in weights.items():
    # Layer 1 in F16 to read a mixed file; the reference tests compare against these rounded values.
    state[name] = t.half() if ".layer.1." in name else t
state["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"]  # tied: one storage
state["bert.embeddings.position_ids"] = torch.arange(40).unsqueeze(0)  # an int64 buffer, as older transformers saved
torch.save(state, os.path.join(dst, "pytorch_model.bin"))
print("wrote", OUT, "and", dst)
