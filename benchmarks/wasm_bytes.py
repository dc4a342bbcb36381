"""The WebAssembly binary format's building blocks, for the benchmark scripts that write a unit
byte by byte (warm-unit.py, run-stack-flood.sh): there is no wat2wasm on a fresh machine."""


def uleb(n):
    """n as unsigned LEB128."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def vec(items):
    """A vector: its length, then its items' bytes."""
    return uleb(len(items)) + b"".join(items)


def section(code, body):
    """A section: its id, its size, its body."""
    return bytes([code]) + uleb(len(body)) + body


def name(s):
    """A name: its UTF-8 length, then its bytes."""
    return uleb(len(s)) + s.encode()
