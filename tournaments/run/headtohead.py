"""Two bots, many matches: what ``aegis-ref match`` and ``aegis-ref sprt`` play and report.

The matches come in duplicate pairs: matches 2k-1 and 2k deal from
``derive_seed(seed, "match", k)``, bot A in seat 0 in the first and bot B in the second
(:meth:`Duel.task`), as a tournament deals its rounds.

:class:`MatchPlayer` plays them and hands back each match in order, whatever the
concurrency: at 1, one :class:`~referee.runner.MatchRunner` in this process; above, the
tournament's own local pool (:func:`tournaments.run.coordinator.make_executor` and
:func:`tournaments.run.worker.play_match_task`), a window of matches in flight. Either way every
match is one ``MatchRunner.play`` with the same seed and the same bots, so bots that draw
their chance from the match's seed (protocol 1.1) give the same results at any concurrency.

:class:`Tally` counts what the matches say, and :class:`Score` is the score of A against B:
wins and losses, and the Elo difference with its interval and the likelihood of
superiority as a tournament's standings give them (:func:`tournaments.stats.ratings.fit_elo`),
with the duplicate **pair** as the unit (:mod:`tournaments.stats.ratings` explains why).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from referee.bots import BotSpec
from referee.faults import Fault, FaultKind
from referee.listeners import RemoteListener
from referee.rules.options import RulesOptions
from referee.runner import MatchRunner
from referee.sandbox import SandboxPlan
from referee.seeds import derive_seed
from referee.time_control import TimeControl
from tournaments.errors import TournamentError
from tournaments.run.coordinator import make_executor, worker_cpus
from tournaments.run.worker import MatchOutcome, MatchTask, match_outcome, play_match_task, reaped
from tournaments.stats.ratings import fit_elo
from tournaments.stats.sprt import PairCounts, PairOutcome, signed

__all__ = [
    "Duel",
    "EloDifference",
    "MatchPlayer",
    "Played",
    "Score",
    "Tally",
]


@dataclass(frozen=True, slots=True)
class Duel:
    """Two bots and how they meet: A (``bots[0]``) and B, the master seed, the rules and
    clock, how bots are started, where their output goes, and how many matches at once."""

    bots: tuple[BotSpec, BotSpec]
    seed: int
    options: RulesOptions = field(default_factory=RulesOptions)
    time_control: TimeControl = field(default_factory=TimeControl)
    sandbox: SandboxPlan | None = None
    #: Each bot's output goes to ``<name>.log`` here (at concurrency 1), or to a folder per
    #: worker process in it.
    logs: Path | None = None
    remote: RemoteListener | None = None
    concurrency: int = 1

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        remote = [spec.name for spec in self.bots if spec.is_remote]
        if remote and self.concurrency != 1:
            raise TournamentError(
                f"remote bot {remote[0]} plays one match at a time over one connection: "
                f"--concurrency must be 1, not {self.concurrency}"
            )

    def task(self, number: int) -> MatchTask:
        """Match ``number`` (from 1): pair ``(number + 1) // 2``, A in seat 0 when odd."""
        first, second = self.bots
        return MatchTask(
            match_id=str(number),
            seed=derive_seed(self.seed, "match", (number + 1) // 2),
            bots=(second, first) if number % 2 == 0 else (first, second),
            options=self.options,
            time_control=self.time_control,
            runner_key=self._key(),
            sandbox=self.sandbox,
            record_number=number,
            log_root=None if self.logs is None else str(self.logs),
        )

    def _key(self) -> str:
        text = repr((self.options, self.time_control, self.bots, self.sandbox))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Played:
    """One played match, as these commands show it."""

    number: int
    #: By seat, seat 0 first.
    players: tuple[str, str]
    #: The winner's seat; None for a void match (both bots failed before the first game).
    winner: int | None
    termination: str
    scores: tuple[int, int]
    games: int
    #: Game points by seat, summed over the games played.
    points: tuple[int, int]
    forfeit: Fault | None
    faults: tuple[Fault, ...]
    #: The match in the record format, one JSON text per line.
    record: tuple[str, ...]

    @classmethod
    def of(cls, number: int, outcome: MatchOutcome) -> Played:
        """The match of a worker's outcome (its results row and its record)."""
        row = outcome.row
        points = [0, 0]
        for text in outcome.record:
            line = json.loads(text)
            if line.get("type") == "game" and line.get("points") is not None:
                points[0] += line["points"][0]
                points[1] += line["points"][1]
        forfeit = row.forfeit_json
        return cls(
            number=number,
            players=row.seats,
            winner=None if row.void else row.winner_seat,
            termination=row.termination,
            scores=(row.score0, row.score1),
            games=row.games,
            points=(points[0], points[1]),
            forfeit=None if forfeit is None else Fault.from_json(json.loads(forfeit)),
            faults=tuple(Fault.from_json(item) for item in json.loads(row.faults_json)),
            record=tuple(outcome.record),
        )

    @property
    def void(self) -> bool:
        """True when neither bot won: both failed before the first game."""
        return self.winner is None

    def won_by(self, name: str) -> bool:
        """Whether the bot called ``name`` won this match."""
        return self.winner is not None and self.players[self.winner] == name


class MatchPlayer:
    """Plays a :class:`Duel`'s matches and yields them in order (a context manager: leaving
    it stops every bot, and any worker pool once the matches it runs are over)."""

    def __init__(self, duel: Duel) -> None:
        self.duel = duel
        self._runner: MatchRunner | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._budgets: tempfile.TemporaryDirectory[str] | None = None
        self._pending: deque[tuple[int, Future[MatchOutcome]]] = deque()

    def __enter__(self) -> MatchPlayer:
        duel = self.duel
        if duel.concurrency == 1:
            self._runner = MatchRunner(
                options=duel.options,
                time_control=duel.time_control,
                log_dir=duel.logs,
                remote=duel.remote,
                sandbox=duel.sandbox,
            )
        else:
            # The workers' bots share each bot's log cap for the run through these ledgers.
            self._budgets = tempfile.TemporaryDirectory(prefix="aegis-ref-log-budget-")
            self._pool = make_executor(duel.concurrency, cpu_groups=worker_cpus(duel.concurrency))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop every bot; cancel the matches not started and wait for those playing."""
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._pending.clear()
        if self._budgets is not None:
            self._budgets.cleanup()
            self._budgets = None

    @property
    def remote_endpoint(self) -> str | None:
        """Where remote bots dial in, if the duel listens for them."""
        return None if self._runner is None else self._runner.server.remote_endpoint

    def play(self, numbers: Iterable[int]) -> Iterator[Played]:
        """Play these matches, yielding each in the order of ``numbers`` (which may be
        endless: only a few matches are ever in flight, and none once the caller stops)."""
        if self._runner is not None:
            runner = self._runner
            for number in numbers:
                task = self.duel.task(number)
                started = time.perf_counter()
                # Bots of this process: its reaper kills what they leave if it is killed.
                bots = [reaped(spec) for spec in task.bots]
                report = runner.play(bots, task.seed, task.match_id)
                duration = time.perf_counter() - started
                yield Played.of(number, match_outcome(task, report, duration))
            return
        if self._pool is None or self._budgets is None:
            raise RuntimeError("MatchPlayer.play outside its 'with' block")
        pool, budgets = self._pool, self._budgets.name
        # Two matches per worker, as a tournament keeps: none waits for this process.
        window = 2 * self.duel.concurrency
        upcoming = iter(numbers)
        pending = self._pending
        while True:
            while len(pending) < window:
                following = next(upcoming, None)
                if following is None:
                    break
                task = replace(self.duel.task(following), log_budget=budgets)
                pending.append((following, pool.submit(play_match_task, task)))
            if not pending:
                return
            number, future = pending.popleft()
            try:
                outcome = future.result()
            except BrokenProcessPool as error:
                raise TournamentError(f"match {number}: a worker process died: {error}") from None
            except Exception as error:  # a worker's failure, not a bot's: those are faults
                raise TournamentError(f"match {number} failed in its worker: {error!r}") from None
            yield Played.of(number, outcome)


@dataclass(frozen=True, slots=True)
class EloDifference:
    """A's Elo advantage over B with its confidence interval, and the likelihood that A is
    the stronger (LOS)."""

    elo: float
    low: float
    high: float
    los: float
    confidence: float

    def text(self) -> str:
        """``+70.4 ± 95.0 (95 %), LOS: 92.3 %``."""
        return (
            f"{signed(self.elo)} ± {(self.high - self.low) / 2:.1f} "
            f"({round(self.confidence * 100)} %), LOS: {self.los * 100:.1f} %"
        )


@dataclass(frozen=True, slots=True)
class Score:
    """The score of A against B: matches won and lost (void ones aside), and the duplicate
    pairs they came in, for the Elo difference and the LOS."""

    names: tuple[str, str]
    wins: int
    losses: int
    void: int = 0
    #: Whole pairs without a void match, from A's side.
    pairs: PairCounts = field(default_factory=PairCounts)
    #: Every decided match by its pair, as :func:`tournaments.stats.ratings.fit_elo` takes them:
    #: ``(A, B, A's wins, B's wins)`` to the number of such pairs (a pair with a void or an
    #: unplayed match holds one decided match).
    pair_results: Mapping[tuple[str, str, int, int], int] = field(default_factory=dict)

    @classmethod
    def of_pairs(cls, names: tuple[str, str], pairs: PairCounts) -> Score:
        """The score of counted pairs (the SPRT's), each 2-0, 1-1 or 0-2."""
        wins = 2 * pairs.won_both + pairs.split
        first, second = names
        results = {
            (first, second, won, 2 - won): count for won, count in enumerate(pairs.as_tuple())
        }
        return cls(names, wins, 2 * pairs.pairs - wins, 0, pairs, results)

    @property
    def matches(self) -> int:
        """Matches with a winner."""
        return self.wins + self.losses

    @property
    def ratio(self) -> float:
        """A's share of the matches with a winner (½ when there are none)."""
        return self.wins / self.matches if self.matches else 0.5

    def elo(self, confidence: float = 0.95) -> EloDifference | None:
        """A's Elo advantage over B, None before a match had a winner: the tournament's
        ratings (:func:`~tournaments.stats.ratings.fit_elo`) of the two, B held at 0, with the
        duplicate pair as the unit of the interval and the LOS, as the standings have it."""
        if not self.matches:
            return None
        first, second = self.names
        fit = fit_elo(
            self.names,
            {(first, second): self.wins, (second, first): self.losses},
            anchor=second,
            anchor_elo=0.0,
            confidence=confidence,
            pairs={key: count for key, count in self.pair_results.items() if count},
        )
        rating = fit.ratings[first]
        if rating.elo is None or rating.low is None or rating.high is None:
            return None  # cannot happen: both bots have a decided match
        return EloDifference(
            rating.elo, rating.low, rating.high, fit.los[first][second], confidence
        )

    def score_text(self) -> str:
        """``Score of A vs B: 12 - 8 [0.600] 20``: wins - losses [ratio] matches, as
        cutechess prints it (Aegis has no draws)."""
        first, second = self.names
        text = f"Score of {first} vs {second}: {self.wins} - {self.losses} [{self.ratio:.3f}]"
        text += f" {self.matches}"
        return text + (f" ({self.void} void)" if self.void else "")

    def elo_text(self) -> str:
        """``Elo difference: +70.4 ± 95.0 (95 %), LOS: 92.3 %, over 10 pairs (2-0: 4, …)``."""
        difference = self.elo()
        if difference is None:
            return "Elo difference: none, no match had a winner"
        pairs = self.pairs.pairs
        text = (
            f"Elo difference: {difference.text()}, over {pairs} pair{'' if pairs == 1 else 's'} "
            f"({self.pairs.text()})"
        )
        halves = sum(count for key, count in self.pair_results.items() if key[2] + key[3] == 1)
        if halves:  # a void match, or the last of an odd number
            text += f" and {halves} of one match"
        return text


class Tally:
    """What a duel's matches add up to, match by match: wins, game points and faults per
    bot, and the score of A (``names[0]``) against B by duplicate pair."""

    def __init__(self, names: tuple[str, str]) -> None:
        self.names = names
        self.played = 0
        self.wins: Counter[str] = Counter()
        self.points: Counter[str] = Counter()
        self.faults: Counter[tuple[str, FaultKind]] = Counter()
        self.void = 0
        #: Whole pairs without a void match, from A's side.
        self.pairs = PairCounts()
        #: Pairs with a void match, out of :attr:`pairs` (their decided match still counts).
        self.void_pairs = 0
        #: Decided matches by pair, :attr:`Score.pair_results`, the last pair's included.
        self._results: Counter[tuple[str, str, int, int]] = Counter()
        self._half: Played | None = None

    def add(self, match: Played) -> None:
        """Count a match; matches come in order, 2k-1 before 2k."""
        self.played += 1
        if match.void:
            self.void += 1
        else:
            self.wins[match.players[match.winner or 0]] += 1
        for seat in (0, 1):
            self.points[match.players[seat]] += match.points[seat]
        for fault in match.faults:
            self.faults[(fault.bot, fault.kind)] += 1
        if match.number % 2:
            self._half = match
            return
        first, self._half = self._half, None
        if first is None or first.number != match.number - 1:
            return
        self._results[self._pair_key(first, match)] += 1
        if first.void or match.void:
            self.void_pairs += 1
            return
        won = sum(played.won_by(self.names[0]) for played in (first, match))
        self.pairs = self.pairs.add(PairOutcome(won))

    def _pair_key(self, *matches: Played) -> tuple[str, str, int, int]:
        decided = [played for played in matches if not played.void]
        won = sum(played.won_by(self.names[0]) for played in decided)
        return (*self.names, won, len(decided) - won)

    @property
    def unpaired(self) -> int:
        """Matches not in a whole pair (the last one of an odd number)."""
        return 1 if self._half is not None else 0

    def score(self) -> Score:
        """The score of A against B so far."""
        first, second = self.names
        results = Counter(self._results)
        if self._half is not None:  # the last pair, half played
            results[self._pair_key(self._half)] += 1
        return Score(
            self.names, self.wins[first], self.wins[second], self.void, self.pairs, dict(results)
        )

    def fault_text(self, name: str) -> str:
        """``timeout 2, crash 1``, or ``none``."""
        kinds = [
            f"{kind.value} {count}"
            for (bot, kind), count in sorted(self.faults.items())
            if bot == name
        ]
        return ", ".join(kinds) or "none"
