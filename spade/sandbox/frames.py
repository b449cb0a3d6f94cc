"""Length-prefixed JSON frames: the only format that crosses the sandbox boundary.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. The reader checks
the length against a cap *before* reading the payload, so a worker cannot make the supervisor
allocate more than the cap. JSON only: pickle would be code execution in the reader (SANDBOX.md,
lesson 3). Standard library only (used by the worker too).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")


class FrameError(Exception):
    """A malformed, oversized or truncated frame."""


def _default(obj: Any) -> Any:
    # numpy scalars (np.bool_, np.float64...) are common in reference environments
    item = getattr(obj, "item", None)
    if callable(item) and type(obj).__module__ == "numpy":
        return item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def encode(obj: Any) -> bytes:
    """One frame; raises ValueError/TypeError for non-JSON values (NaN and inf included)."""
    data = json.dumps(obj, allow_nan=False, separators=(",", ":"), default=_default).encode()
    return HEADER.pack(len(data)) + data


def decode_payload(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # RecursionError: valid JSON nested deeper than the parser's stack (a hostile reply)
        raise FrameError(f"payload is not UTF-8 JSON: {type(exc).__name__}: {exc}") from None


def _read_exactly(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, max_bytes: int) -> Any:
    """Blocking read of one frame (worker side). EOFError at a clean end of stream."""
    (length,) = HEADER.unpack(_read_exactly(fd, HEADER.size))
    if length > max_bytes:
        raise FrameError(f"frame of {length} bytes exceeds the {max_bytes}-byte cap")
    return decode_payload(_read_exactly(fd, length))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
