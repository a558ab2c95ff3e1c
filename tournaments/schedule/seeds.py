"""Master seeds: a secret one drawn when a config names none, and a warning for small ones.

Every deal of a tournament follows from its master seed (:mod:`tournaments.schedule.pairings`), and
the engine is public. So the seed is the only secret between a bot and every card of every
game: a bot that knows its own first hand (or its ``AEGIS_SEED``, derived from the master
seed and its name) can try seeds one by one until one deals that hand, and from then on
predict every deal. A seed of a few digits falls in milliseconds; 64 random bits from the
operating system are out of reach, as long as they stay secret.

A config without ``seed`` therefore gets one drawn by :func:`draw_seed` when its results
store is made; the store keeps it, and every later run on that store reuses it.
"""

from __future__ import annotations

import secrets

__all__ = ["SMALL_SEED", "draw_seed", "small_seed_warning"]

#: Seeds below this one are small enough to be found by trying them all: the tournament
#: warns about them (:func:`small_seed_warning`).
SMALL_SEED = 2**32
_SEED_LIMIT = 2**64


def draw_seed() -> int:
    """A new secret master seed from the operating system's randomness: 64 bits, never
    below :data:`SMALL_SEED` (a drawn seed never earns the warning of a small one)."""
    return SMALL_SEED + secrets.randbelow(_SEED_LIMIT - SMALL_SEED)


def small_seed_warning(seed: int) -> str | None:
    """The warning a tournament prints for master seed ``seed``, or None if it is not small."""
    if seed >= SMALL_SEED:
        return None
    return (
        f"Warning: seed {seed} is small (below 2**32): a bot can find it by trying seeds "
        "until one deals its own first hand (in milliseconds for a seed of a few digits), "
        "and then predict every deal of the tournament. Leave 'seed' out of the config to "
        "have a secret 64-bit seed drawn from the operating system and stored with the "
        "results, or give a long secret one (in a new output directory: one that holds "
        "results keeps its seed)."
    )
