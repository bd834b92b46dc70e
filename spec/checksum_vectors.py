#!/usr/bin/env python3
"""Independent reference implementation of brickprof's checksum algorithms (spec/checksums.md).

Prints the test-vector table of spec/checksums.md; with --check FILE, verifies that FILE holds
exactly these vectors (exit 1 otherwise). Written from the spec's prose, not from the Rust code,
so the Rust tests that read the same table can fail.
"""
import struct
import sys

MASK = (1 << 64) - 1
OFFSET = 0xCBF29CE484222325
PRIME = 0x100000001B3
ROTATION = 27
XOR_SHIFT = 32
LANES = 8


def fnv1a64(data: bytes) -> int:
    h = OFFSET
    for b in data:
        h = ((h ^ b) * PRIME) & MASK
    return h


def rotl(x: int) -> int:
    return ((x << ROTATION) | (x >> (64 - ROTATION))) & MASK


def step_v1(h: int, w: int) -> int:
    """fnv1a64-lanes8: rotl((h ^ w) * P, 27)."""
    return rotl(((h ^ w) * PRIME) & MASK)


def step_v2(h: int, w: int) -> int:
    """fnv1a64-lanes8-v2: x = (h ^ w) * P; x ^ (x >> 32)."""
    x = ((h ^ w) * PRIME) & MASK
    return x ^ (x >> XOR_SHIFT)


def lanes8(data: bytes, step) -> int:
    n = len(data)
    words = n // 8
    lanes = [OFFSET] * LANES
    for j in range(words):
        w = int.from_bytes(data[8 * j : 8 * j + 8], "little")
        lanes[j % LANES] = step(lanes[j % LANES], w)
    tail = data[8 * words :]
    t = int.from_bytes(tail + bytes(8 - len(tail)), "little")
    g = OFFSET
    for h in lanes:
        g = step(g, h)
    g = step(g, t)
    return step(g, n)


def fnv1a64_lanes8(data: bytes) -> int:
    return lanes8(data, step_v1)


def fnv1a64_lanes8_v2(data: bytes) -> int:
    return lanes8(data, step_v2)


def f32_words(values) -> bytes:
    return b"".join(struct.pack("<f", v) for v in values)


def collision_pair():
    """The two-bit collision of fnv1a64-lanes8 (spec/checksums.md): 32 f32 1.0 (16 words, two
    per lane); element 1 (the high half of word 0, lane 0) negated, and bit 26 of element 16
    (the low half of word 8, lane 0 again) flipped."""
    a = bytearray(f32_words([1.0] * 32))
    b = bytearray(a)
    b[4 * 1 + 3] ^= 0x80  # the sign bit of element 1: bit 63 of word 0
    b[4 * 16 + 3] ^= 0x04  # bit 26 of element 16: bit 26 of word 8
    return bytes(a), bytes(b)


VECTORS = [
    ("empty", "no bytes", b""),
    ("a", "ASCII `a`", b"a"),
    ("foobar", "ASCII `foobar`", b"foobar"),
    ("abcdefgh", "ASCII `abcdefgh` (one word)", b"abcdefgh"),
    ("seq64", "bytes 0, 1, ..., 63 (one block)", bytes(range(64))),
    ("seq71", "bytes 0, 1, ..., 70 (a block, a word, 7 tail bytes)", bytes(range(71))),
    ("mod1000", "1000 bytes, byte i = (31 i + 7) mod 256", bytes((31 * i + 7) % 256 for i in range(1000))),
    ("f32x100", "100 f32, element i = i / 4 - 12, little-endian", b"".join(struct.pack("<f", i / 4 - 12) for i in range(100))),
    ("bf16x5", "bf16 bits 0x3f80, 0xc000, 0x0000, 0x8000, 0x7fc0, little-endian", b"".join(struct.pack("<H", v) for v in [0x3F80, 0xC000, 0x0000, 0x8000, 0x7FC0])),
    ("ones32", "32 f32 1.0, little-endian", collision_pair()[0]),
    ("ones32flip", "`ones32` with element 1 negated and bit 26 of element 16 flipped", collision_pair()[1]),
]


def table() -> str:
    rows = [
        "| id | input | fnv1a64 | fnv1a64-lanes8 | fnv1a64-lanes8-v2 |",
        "|---|---|---|---|---|",
    ]
    for vid, desc, data in VECTORS:
        rows.append(
            f"| `{vid}` | {desc} | `{fnv1a64(data):016x}` | `{fnv1a64_lanes8(data):016x}`"
            f" | `{fnv1a64_lanes8_v2(data):016x}` |"
        )
    return "\n".join(rows) + "\n"


def main() -> int:
    a, b = collision_pair()
    assert fnv1a64_lanes8(a) == fnv1a64_lanes8(b), "the documented collision of fnv1a64-lanes8"
    assert fnv1a64_lanes8_v2(a) != fnv1a64_lanes8_v2(b)
    t = table()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2], encoding="utf-8") as f:
            spec = f.read()
        if t not in spec:
            print(f"{sys.argv[2]} does not hold these test vectors:\n{t}", file=sys.stderr)
            return 1
        print(f"{sys.argv[2]}: {len(VECTORS)} test vectors agree with the Python reference")
        return 0
    sys.stdout.write(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
