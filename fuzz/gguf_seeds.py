"""GGUF seeds for fuzz_gguf (standard library only), imported by make_corpus.py.

A GGUF v3 file: "GGUF", u32 version, u64 tensor count, u64 metadata count, metadata entries
(u64-length key, u32 value type, value; arrays: u32 element type, u64 count, elements), tensor
infos (name, u32 n_dims, u64 dims with ne0 first, u32 ggml type, u64 offset into the data),
zero padding to the alignment, then the data. Seeds: every value type with nested arrays, and a
one-layer llama whose tensors use every type Quantscope decodes (F32, F16, BF16, Q8_0, Q4_0,
Q4_1), with a sentencepiece ("llama") and a byte-level ("gpt2") tokenizer; with SHARED_DIR, the
same model carrying stories260K.gguf's real metadata with its vocabulary cut to 48 pieces.
"""
import os
import struct

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
          U64: "Q", I64: "q", F64: "d"}
# ggml type: (block elements, block bytes)
GGML = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18), 3: (32, 20)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(vtype, v):
    if vtype == STRING:
        return gstr(v)
    if vtype == ARRAY:
        etype, items = v
        return struct.pack("<IQ", etype, len(items)) + b"".join(value(etype, x) for x in items)
    return struct.pack("<" + SCALAR[vtype], v)


def kv(key, vtype, v):
    return gstr(key) + struct.pack("<I", vtype) + value(vtype, v)


def block_bytes(gtype, count, seed):
    """Valid-looking blocks: small half scales, varied codes."""
    elems, size = GGML[gtype]
    out = bytearray()
    for b in range(count // elems):
        if gtype == 0:
            out += struct.pack("<f", ((b * 37 + seed) % 19 - 9) / 16.0)
        elif gtype == 1:
            out += struct.pack("<e", ((b * 37 + seed) % 19 - 9) / 16.0)
        elif gtype == 30:
            out += struct.pack("<f", ((b * 37 + seed) % 19 - 9) / 16.0)[2:]
        else:
            scales = struct.pack("<e", 0.01 + 0.001 * (b % 7))
            if gtype == 3:
                scales += struct.pack("<e", -0.05)
            out += scales + bytes((i * 29 + b * 7 + seed) & 0xFF
                                  for i in range(size - len(scales)))
    return bytes(out)


def gguf_image(kvs, tensors, alignment=32):
    """tensors: (name, dims with ne0 first, ggml type)."""
    infos, data = b"", b""
    for n, (name, dims, gtype) in enumerate(tensors):
        data += b"\0" * ((alignment - len(data) % alignment) % alignment)
        count = 1
        for d in dims:
            count *= d
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(
            struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", gtype, len(data))
        data += block_bytes(gtype, count, n)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * ((alignment - len(head) % alignment) % alignment)
    return head + data


TINY_TENSORS = [
    ("token_embd.weight", [32, 48], 1), ("output_norm.weight", [32], 0),
    ("output.weight", [32, 48], 8), ("blk.0.attn_norm.weight", [32], 0),
    ("blk.0.attn_q.weight", [32, 32], 2), ("blk.0.attn_k.weight", [32, 16], 3),
    ("blk.0.attn_v.weight", [32, 16], 30), ("blk.0.attn_output.weight", [32, 32], 8),
    ("blk.0.ffn_gate.weight", [32, 32], 2), ("blk.0.ffn_up.weight", [32, 32], 3),
    ("blk.0.ffn_down.weight", [32, 32], 1), ("blk.0.ffn_norm.weight", [32], 0),
]
LLAMA_KEYS = [
    ("general.architecture", STRING, "llama"), ("general.alignment", U32, 32),
    ("llama.context_length", U32, 128), ("llama.embedding_length", U32, 32),
    ("llama.feed_forward_length", U32, 32), ("llama.attention.head_count", U32, 2),
    ("llama.attention.head_count_kv", U32, 1), ("llama.block_count", U32, 1),
    ("llama.rope.dimension_count", U32, 16), ("llama.rope.freq_base", F32, 10000.0),
    ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
]


def sentencepiece_vocab(pieces=None):
    if pieces is None:
        pieces = (["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(8)] +
                  ["\u2581", "t", "h", "e", "\u2581t", "he", "\u2581the", "a", "\u2581a"])
        pieces += ["x%d" % i for i in range(48 - len(pieces))]
    types = [2, 3, 3] + [6 if p.startswith("<0x") else 1 for p in pieces[3:]]
    scores = [0.0] * 3 + [-float(i) for i in range(len(pieces) - 3)]
    return [kv("tokenizer.ggml.model", STRING, "llama"),
            kv("tokenizer.ggml.tokens", ARRAY, (STRING, pieces)),
            kv("tokenizer.ggml.scores", ARRAY, (F32, scores)),
            kv("tokenizer.ggml.token_type", ARRAY, (I32, types)),
            kv("tokenizer.ggml.bos_token_id", U32, 1), kv("tokenizer.ggml.eos_token_id", U32, 2),
            kv("tokenizer.ggml.unknown_token_id", U32, 0),
            kv("tokenizer.ggml.add_bos_token", BOOL, True)]


def gpt2_vocab():
    tokens = [chr(c) for c in range(ord("a"), ord("a") + 20)] + ["\u0120", "\u0120a", "ab",
                                                                 "<|endoftext|>"]
    tokens += ["y%d" % i for i in range(48 - len(tokens))]
    return [kv("tokenizer.ggml.model", STRING, "gpt2"), kv("tokenizer.ggml.pre", STRING, "gpt2"),
            kv("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            kv("tokenizer.ggml.merges", ARRAY, (STRING, ["\u0120 a", "a b"])),
            kv("tokenizer.ggml.eos_token_id", U32, 23)]


def every_value_type():
    return gguf_image([
        kv("u8", U8, 200), kv("i8", I8, -5), kv("u16", U16, 60000), kv("i16", I16, -3),
        kv("u32", U32, 7), kv("i32", I32, -7), kv("f32", F32, 0.5), kv("bool", BOOL, True),
        kv("str", STRING, "h\u00e9llo"), kv("u64", U64, 1 << 40), kv("i64", I64, -(1 << 40)),
        kv("f64", F64, 0.1),
        kv("nested", ARRAY, (ARRAY, [(I32, [1, 2]), (STRING, ["a", "b"])])),
    ], [("v", [4], 0), ("h", [8, 2], 1)], alignment=32)


def read_metadata(path):
    """(key, type, value) of a GGUF file's metadata (enough of a reader for the seeds)."""
    with open(path, "rb") as f:
        b = f.read()
    pos = [24]

    def take(fmt):
        v = struct.unpack_from("<" + fmt, b, pos[0])[0]
        pos[0] += struct.calcsize(fmt)
        return v

    def read(vtype):
        if vtype == STRING:
            n = take("Q")
            pos[0] += n
            return b[pos[0] - n:pos[0]].decode("utf-8", "replace")
        if vtype == ARRAY:
            etype, n = take("I"), take("Q")
            return (etype, [read(etype) for _ in range(n)])
        return take(SCALAR[vtype])

    count = struct.unpack_from("<Q", b, 16)[0]
    out = []
    for _ in range(count):
        key = read(STRING)
        vtype = take("I")
        out.append((key, vtype, read(vtype)))
    return out


def shrunk_stories(path):
    """stories260K.gguf's own metadata (vocabulary cut to 48 pieces, sizes made to fit) over
    the tiny one-layer tensors."""
    kvs = []
    fit = dict((k, v) for k, _, v in LLAMA_KEYS)
    for key, vtype, v in read_metadata(path):
        if vtype == ARRAY:
            v = (v[0], v[1][:48])
        elif key in fit:
            v = fit[key]
        kvs.append(kv(key, vtype, v))
    return gguf_image(kvs, TINY_TENSORS)


def write_all(out, shared, write):
    llama = [kv(k, t, v) for k, t, v in LLAMA_KEYS]
    write(out, "gguf", "empty.gguf", gguf_image([], []))
    write(out, "gguf", "value_types.gguf", every_value_type())
    write(out, "gguf", "llama_sentencepiece.gguf", gguf_image(llama + sentencepiece_vocab(),
                                                             TINY_TENSORS))
    write(out, "gguf", "llama_gpt2.gguf", gguf_image(llama + gpt2_vocab(), TINY_TENSORS))
    stories = os.path.join(shared, "models", "stories260K-gguf", "stories260K.gguf")
    if shared and os.path.isfile(stories):
        write(out, "gguf", "stories260K_shrunk.gguf", shrunk_stories(stories))
