#!/usr/bin/python3
# An independent safetensors writer and reader in plain Python (struct + json: no torch, no safetensors package)
# for tests/test_safetensors.cpp. `write PATH`: every dtype with the values of value(); `read PATH`: parses a file
# strictly and prints each tensor (data order) and the metadata. Leaves out dtypes lmzoo does not read.
import json
import struct
import sys

# dtype -> (struct format of one element, bytes per element); BF16 is decoded by hand.
FORMATS = {"F32": ("f", 4), "F16": ("e", 2), "BF16": (None, 2), "F64": ("d", 8), "I64": ("q", 8),
           "I32": ("i", 4), "I16": ("h", 2), "I8": ("b", 1), "U8": ("B", 1), "BOOL": ("?", 1)}

# The tensors `write` stores, in data order: (name, dtype, shape).
TENSORS = [("f32", "F32", [2, 3]), ("f16", "F16", [4]), ("bf16", "BF16", [2, 2]), ("f64", "F64", [3]),
           ("i64", "I64", [2, 2]), ("i32", "I32", [5]), ("i16", "I16", [3]), ("i8", "I8", [4]),
           ("u8", "U8", [2, 3]), ("bool", "BOOL", [5]), ("scalar", "F32", []), ("empty", "I64", [0, 3])]
METADATA = {"format": "pt", "written_by": "safetensors_reference.py"}


def count(shape):
    n = 1
    for size in shape:
        n *= size
    return n


def value(dtype, i):
    """Element i of a tensor of DTYPE (the C++ test computes the same)."""
    k = (i * 37) % 23 - 11
    if dtype in ("F32", "F64"):
        return k / 3.0
    if dtype in ("F16", "BF16"):
        return k * 0.375
    scale = {"I64": 1000000007 * 1000, "I32": 100000007, "I16": 1001, "I8": 11}
    if dtype in scale:
        return k * scale[dtype]
    if dtype == "U8":
        return (i * 37) % 256
    return i % 3 == 0


def encode(dtype, values):
    fmt, _ = FORMATS[dtype]
    if dtype == "BF16":  # the top half of the float32 (exact for these values)
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in values)
    return struct.pack("<%d%s" % (len(values), fmt), *values)


def decode(dtype, chunk):
    fmt, size = FORMATS[dtype]
    n = len(chunk) // size
    if dtype == "BF16":
        halves = struct.unpack("<%dH" % n, chunk)
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]
    return list(struct.unpack("<%d%s" % (n, fmt), chunk))


def write(path):
    header, data = {"__metadata__": METADATA}, b""
    for name, dtype, shape in TENSORS:
        chunk = encode(dtype, [value(dtype, i) for i in range(count(shape))])
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(chunk)]}
        data += chunk
    # Header keys sorted (unlike the data), so that the reader must order names by their bytes.
    text = json.dumps(dict(sorted(header.items())), separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), "duplicate keys"
    return dict(pairs)


def show(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    return repr(v)


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert n % 8 == 0 and 8 + n <= len(blob), "header length %d" % n
    header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    out, end = [], 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):  # in data order
        assert set(entry) == {"dtype", "shape", "data_offsets"}, entry
        begin, stop = entry["data_offsets"]
        assert begin == end, "%s begins at %d, not %d" % (name, begin, end)
        assert stop - begin == count(entry["shape"]) * FORMATS[entry["dtype"]][1], name
        values = decode(entry["dtype"], data[begin:stop])
        shape = "[" + ",".join(str(s) for s in entry["shape"]) + "]"
        out.append(" ".join(["tensor", name, entry["dtype"], shape] + [show(v) for v in values]))
        end = stop
    assert end == len(data), "%d of %d data bytes covered" % (end, len(data))
    out.append("__metadata__ " + json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    sys.stdout.buffer.write(("\n".join(out) + "\n").encode("utf-8"))


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2])
