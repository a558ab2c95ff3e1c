"""A hostile SDK bot that tries to find the tournament's master seed from its own hand.

The engine is public, so a bot knows exactly how a tournament deals: round ``k`` of every
pairing deals from ``derive_seed(seed, "match", k)`` (``match_seed`` in
``tournaments/schedule/pairings.py``, a package a sandboxed bot does not see); the match runner
seeds ``random.Random`` with it, draws the first master's two cards with
``draw_first_master`` and then deals each game from ``shuffled_deck`` (``referee/runner.py``,
``referee/rules/match.py``, ``referee/rules/game.py``). At the first game it sees, this bot tries
every master seed below ``--limit`` (default 10**6) until one deals the hand and key card it
holds, checks that seed against the next deal it sees (among 10**6 seeds, one deal leaves
about one chance in 250 that a wrong one fits it by luck), and reports on stderr::

    SEED-GUESSER found 42
    SEED-GUESSER found nothing

It plays the first legal action throughout. A search takes seconds, in its first decision:
give it the time (``warmup_ms``, ``decision_ms``).

    seed_guesser.py [--limit N]

Trying a seed costs little more than seeding the generator: a cheap test on the raw words
the generator gives (which card wins the first-master draw; whether every card of the hand
sorts before the key card, and the key card eleventh) rules out almost every seed before
the engine itself deals the few that are left. The seeds are shared out between processes,
one per CPU the bot may use.
"""

from __future__ import annotations

import _random
import argparse
import contextlib
import hashlib
import os
import random
import re
import signal
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from protocol.sdk import Action, Bot, Decision, GameStarted, run
from referee.rules.cards import DECK, Card, draw_beats
from referee.rules.game import HAND_SIZE, Seat, new_game, observation, shuffled_deck
from referee.rules.match import draw_first_master, first_master
from referee.rules.options import RulesOptions
from referee.seeds import derive_seed

_INDEX = {str(card): index for index, card in enumerate(DECK)}
_CARDS = len(DECK)
#: _SEAT0_DRAWS[a * 52 + b]: seat 0, drawing card a against card b, is the first master.
_SEAT0_DRAWS = [draw_beats(first, second) for first in DECK for second in DECK]
#: Each ``random()`` of the shuffle takes two 32-bit words of the generator.
_SHUFFLE_BYTES = 2 * 4 * _CARDS
_ROUND = re.compile(r"r(\d+)-")
#: randbytes gives the words little-endian; an array of them reads them natively.
_BIG_ENDIAN = sys.byteorder == "big"
assert array("I").itemsize == 4


@dataclass(frozen=True, slots=True)
class Deal:
    """One game's deal as this bot saw it."""

    round: int
    game: int
    seat: Seat
    master: Seat
    hand: frozenset[str]
    key_card: str


def dealt(seed: int, deal: Deal) -> bool:
    """Does master seed ``seed`` deal ``deal``? Exactly as the referee deals."""
    rng = random.Random(derive_seed(seed, "match", deal.round))
    draw = draw_first_master(rng)
    deck: Sequence[Card] = ()
    for _ in range(deal.game):
        deck = shuffled_deck(rng)
    master = first_master(draw)
    if deal.game % 2 == 0:
        master = master.other
    if master != deal.master:
        return False
    seen = observation(new_game(RulesOptions(), master, deck, game_number=deal.game), deal.seat)
    return frozenset(map(str, seen.hand)) == deal.hand and str(seen.key_card) == deal.key_card


def search(deal: Deal, start: int, limit: int) -> int | None:
    """The first seed from ``start`` below ``limit`` that deals ``deal`` (game 1), or None."""
    assert deal.game == 1
    suffix = f":match:{deal.round}".encode()
    hand = [_INDEX[card] for card in deal.hand]
    key = _INDEX[deal.key_card]
    # Where the key card sorts: after both hands (positions 0-9 of the deck), at 10.
    position = 2 * HAND_SIZE
    rng = random.Random()
    reseed = _random.Random.seed  # random.Random.seed less its Python wrapper
    bits = rng.getrandbits
    words = rng.randbytes
    blake2b = hashlib.blake2b
    from_bytes = int.from_bytes
    wanted = deal.master == Seat.FIRST
    for seed in range(start, limit):
        # derive_seed(seed, "match", round), inlined.
        digest = blake2b(b"%d%s" % (seed, suffix), digest_size=8).digest()
        reseed(rng, from_bytes(digest, "big") >> 1)
        # draw_first_master: sample(DECK, 2) takes getrandbits(6) below 52, the second
        # unlike the first.
        first = bits(6)
        while first >= _CARDS:
            first = bits(6)
        second = bits(6)
        while second >= _CARDS or second == first:
            second = bits(6)
        if _SEAT0_DRAWS[first * _CARDS + second] != wanted:
            continue
        # shuffled_deck sorts the cards by one random() each, in DECK order, whose high word
        # comes first: comparing the high words alone is exact unless two agree in their top
        # 27 bits, so the tests below allow for that (``| 31``, ``& ~31``).
        keys = array("I", words(_SHUFFLE_BYTES))[::2]
        if _BIG_ENDIAN:
            keys.byteswap()
        top = keys[key] | 31
        if max([keys[card] for card in hand]) > top:
            continue
        # Cards surely before the key card, and cards perhaps before it or it itself.
        below = sum(map((keys[key] & ~31).__gt__, keys))
        if below > position or sum(map(top.__ge__, keys)) <= position:
            continue
        if dealt(seed, deal):
            return seed
    return None


def search_in_parallel(deal: Deal, start: int, limit: int) -> int | None:
    """:func:`search` shared out between this process and a child for each other CPU it may
    use, as a hostile bot would; the first seed found, as :func:`search` gives it."""
    workers = max(1, min(len(os.sched_getaffinity(0)), limit - start))
    bounds = [start + (limit - start) * part // workers for part in range(workers + 1)]
    children: list[tuple[int, int]] = []  # (pid, read end of its pipe), by share
    try:
        for part in range(1, workers):
            read_end, write_end = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # no more processes: this one searches the shares left
                os.close(read_end)
                os.close(write_end)
                break
            if pid == 0:  # the child: search its share, write what it found, go
                code = 1
                try:
                    found = search(deal, bounds[part], bounds[part + 1])
                    os.write(write_end, b"none" if found is None else b"%d" % found)
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_end)
            children.append((pid, read_end))
        found = search(deal, bounds[0], bounds[1])
        for _pid, read_end in children:
            if found is not None:
                break
            answer = _read_all(read_end)
            if not answer:
                raise RuntimeError("a search process failed")
            found = None if answer == b"none" else int(answer)
        if found is None and len(children) + 1 < workers:
            found = search(deal, bounds[len(children) + 1], limit)
        return found
    finally:
        for pid, read_end in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # done or no longer needed
            os.close(read_end)
            os.waitpid(pid, 0)


def _read_all(descriptor: int) -> bytes:
    chunks = []
    while chunk := os.read(descriptor, 64):
        chunks.append(chunk)
    return b"".join(chunks)


class SeedGuesser(Bot):
    """Plays the first legal action; finds the seed on the side."""

    name = "seed-guesser"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.deals: list[Deal] = []
        #: The seed that fits every deal so far, and where the search goes on if it fails.
        self.candidate: int | None = None
        self.next_seed = 0
        self.done = False

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        numbered = _ROUND.match(view.match_id)  # a tournament's: r0001-alpha+beta
        if not self.done and numbered is not None:
            for event in view.events:
                if isinstance(event, GameStarted):
                    self.deals.append(
                        Deal(
                            int(numbered.group(1)),
                            event.game,
                            view.seat,
                            event.master,
                            frozenset(map(str, event.hand)),
                            str(event.key_card),
                        )
                    )
                    self.guess()
        return legal[0]

    def guess(self) -> None:
        """Narrow the search with the deals seen so far; report when it is over."""
        if self.candidate is not None and all(dealt(self.candidate, d) for d in self.deals):
            self.report(f"found {self.candidate}")
            return
        first = next((deal for deal in self.deals if deal.game == 1), None)
        if first is None:
            return
        self.candidate = None
        while self.candidate is None and self.next_seed < self.limit:
            seed = search_in_parallel(first, self.next_seed, self.limit)
            if seed is None:
                break
            self.next_seed = seed + 1
            if all(dealt(seed, deal) for deal in self.deals):
                self.candidate = seed
        if self.candidate is None:
            self.report("found nothing")
        elif len(self.deals) > 1:
            self.report(f"found {self.candidate}")

    def report(self, text: str) -> None:
        print(f"SEED-GUESSER {text}", file=sys.stderr, flush=True)
        self.done = True


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=10**6)
    run(SeedGuesser(parser.parse_known_args()[0].limit))
