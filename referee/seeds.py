"""Seeds derived from a master seed: every deal, policy and bot seed of a run comes from one
number, by label, so any match can be reproduced on its own."""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed"]


def derive_seed(master_seed: int, *labels: str | int) -> int:
    """A 63-bit seed derived from ``master_seed`` and labels, stable across runs and platforms."""
    text = ":".join(str(part) for part in (master_seed, *labels))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1
