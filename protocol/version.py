"""The protocol version: kept apart from the package version, in this one place.

Versions are ``"MAJOR.MINOR"``. A new major version breaks compatibility; a new minor
version only adds optional fields or message types that peers may ignore. Two peers speak
together when they share a major version, at the lower of their minor versions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "CLOCK_VERSION",
    "PROTOCOL_VERSION",
    "SEED_VERSION",
    "SUPPORTED_VERSIONS",
    "at_least",
    "negotiate_version",
    "parse_version",
]

#: The version this package speaks. ``protocol/SPEC.md`` states the same; a test checks it.
PROTOCOL_VERSION = "1.2"
#: Every version the referee accepts, newest first. A bot that speaks only 1.0 is spoken to in
#: 1.0: negotiation takes the lower minor version of a shared major one.
SUPPORTED_VERSIONS: tuple[str, ...] = (PROTOCOL_VERSION,)
#: The first version whose ``match_start`` carries ``seed``.
SEED_VERSION = "1.1"
#: The first version whose ``match_start`` says which clock the bot plays under.
CLOCK_VERSION = "1.2"

# \Z, not $: "$" also matches before a final newline, which would accept "1.0\n".
_VERSION = re.compile(r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\Z")


def parse_version(text: str) -> tuple[int, int]:
    """``"1.2"`` → ``(1, 2)``; raise ``ValueError`` for anything else."""
    match = _VERSION.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a protocol version: {text!r} (expected MAJOR.MINOR, e.g. '1.0')")
    return int(match.group(1)), int(match.group(2))


def at_least(version: str, since: str) -> bool:
    """Whether a connection speaking ``version`` has what ``since`` added."""
    return parse_version(version) >= parse_version(since)


def negotiate_version(
    offered: Iterable[str], supported: Iterable[str] = SUPPORTED_VERSIONS
) -> str | None:
    """The version two peers will speak, or None if they share no major version.

    For each major version both offer, they speak the lower of the two minor versions; the
    highest such version wins. Unparsable offers are skipped.
    """
    ours: dict[int, int] = {}
    for text in supported:
        major, minor = parse_version(text)
        ours[major] = max(minor, ours.get(major, -1))
    best: tuple[int, int] | None = None
    for text in offered:
        try:
            major, minor = parse_version(text)
        except ValueError:
            continue
        if major in ours:
            candidate = (major, min(minor, ours[major]))
            if best is None or candidate > best:
                best = candidate
    return None if best is None else f"{best[0]}.{best[1]}"
