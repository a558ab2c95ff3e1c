"""Shared helpers of the protocol tests: the checked-in vectors."""

from __future__ import annotations

import json
from typing import Any

from protocol.vectors_gen import VECTOR_DIRECTORY

__all__ = ["VECTORS", "load_vectors", "vector_bytes"]


def load_vectors() -> dict[str, dict[str, Any]]:
    """Every checked-in vector's JSON, by name (the file name without ``.json``)."""
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(VECTOR_DIRECTORY.glob("*.json"))
    }


def vector_bytes(name: str) -> bytes:
    """The checked-in msgpack bytes of one vector."""
    return (VECTOR_DIRECTORY / f"{name}.msgpack").read_bytes()


VECTORS = load_vectors()
