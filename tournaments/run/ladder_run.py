"""A ladder played through the store: rounds planned from stored results, one at a time.

The planner (:func:`tournaments.stats.ladder.plan_round`) is a pure function of the bots, the
results of the rounds before, the seed and the budget spent (the matches and rounds played
since the field's last change); this module feeds it from the store and turns
its plans into scheduled matches:

- round ``r``'s pairs each play a duplicate pair: both seat orders, with the round's seed
  :func:`~tournaments.schedule.match_seed` and the usual ids (``r0003-alpha+beta``);
- a round is planned only when every match of the round before is stored, so that its plan
  depends on complete rounds alone;
- a run that starts on a store plans rounds 1, 2, ... again from the stored results (the same
  plans, being deterministic), up to the first round with matches left to play (resuming in
  the middle of a round) or to the plan that stops;
- each round is planned for the field of its time, which the store keeps: a bot added to the
  config (or a league's new version) joins from the next round on, and the rounds before
  are planned again as they were played. The planner reads every result of the rounds
  before, those of bots since gone too (they still tell about their opponents);
- the budget (``rounds``, ``max_matches``) counts from the last change of the field: a bot
  that joins reopens a ladder that had stopped, as a league needs to place a new version.

What each round planned (byes, each bot's status, the certification) is kept in the store for
the standings, which read it without planning anything.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from referee.seeds import derive_seed
from tournaments.config.tournament import TournamentSetup
from tournaments.schedule.pairings import ScheduledMatch, match_id, match_seed, pairing_key
from tournaments.stats.ladder import LadderSettings, PairOutcome, RoundPlan, plan_round
from tournaments.store.database import (
    StoredRound,
    clear_rounds,
    round_winners,
    save_round,
    stored_rounds,
)

__all__ = [
    "Ladder",
    "ladder_budget",
    "pair_outcomes",
    "round_matches",
    "settings_for_field",
]


def round_matches(plan: RoundPlan, master_seed: int) -> list[ScheduledMatch]:
    """The matches of a planned round: each pair's two seat orders, the plan's first."""
    seed = match_seed(master_seed, plan.round_number)
    return [
        ScheduledMatch(
            match_id(plan.round_number, seats),
            plan.round_number,
            pairing_key(first, second),
            seats,
            seed,
        )
        for first, second in plan.pairs
        for seats in ((first, second), (second, first))
    ]


def pair_outcomes(plan: RoundPlan, winners: Mapping[str, str | None]) -> list[PairOutcome]:
    """The round's duplicate pairs as the planner reads them, from ``winners`` (match id ->
    winner, None for a void match; a forfeit is a loss for the bot at fault, as in the
    standings). A pair whose two matches were void teaches nothing and is left out."""
    outcomes = []
    for first, second in plan.pairs:
        decided = [
            winners[identifier]
            for identifier in (
                match_id(plan.round_number, (first, second)),
                match_id(plan.round_number, (second, first)),
            )
            if winners.get(identifier) is not None
        ]
        if decided:
            outcomes.append(
                PairOutcome(
                    first,
                    second,
                    sum(winner == first for winner in decided),
                    sum(winner == second for winner in decided),
                    plan.round_number,
                )
            )
    return outcomes


def ladder_budget(settings: LadderSettings) -> int | None:
    """The most matches the settings allow (``max_matches``), or None when rounds or the
    certification alone stop the ladder (a final round can have more pairs than a Swiss
    round: rounds alone bound no count of matches)."""
    return settings.max_matches


def settings_for_field(settings: LadderSettings, field_size: int) -> LadderSettings:
    """The settings for a field smaller than its ``top`` (a league's, before enough bots
    have arrived): ``top`` and ``finalists`` capped at the field. A config's own field is
    checked against them when it is read; a league's grows, and each round's field, kept in
    the store, gives the same cap when the round is planned again."""
    return replace(
        settings,
        top=None if settings.top is None else min(settings.top, field_size),
        finalists=None if settings.finalists is None else min(settings.finalists, field_size),
    )


@dataclass(slots=True)
class Ladder:
    """A ladder's rounds so far: results fed back to the planner, plans kept in the store.

    :meth:`replay` plans the stored rounds again; then :attr:`plan` is the round to play
    (or the plan that stops), and :meth:`advance` moves on once all its matches are stored.
    """

    setup: TournamentSetup
    connection: sqlite3.Connection
    #: The pairs of every complete round, as the planner reads them.
    results: list[PairOutcome] = field(default_factory=list)
    #: Matches of the complete rounds stored (void ones too: they were played).
    matches_played: int = 0
    #: Every match of the rounds planned so far, the current one included.
    planned: list[ScheduledMatch] = field(default_factory=list)
    plan: RoundPlan | None = None
    #: The field the current plan was made for.
    plan_field: tuple[str, ...] = ()
    #: The field of each round played before this run, as the store kept it.
    fields: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: The field and the matches of each complete round, as planned by this run.
    played_fields: dict[int, tuple[str, ...]] = field(default_factory=dict)
    played_matches: dict[int, int] = field(default_factory=dict)
    #: The first round played with the current plan's field (1 unless a league's field
    #: changed), from which the budget counts.
    field_first_round: int = 1
    #: Matches of the complete rounds since :attr:`field_first_round`: the budget spent.
    field_matches_played: int = 0

    @property
    def settings(self) -> LadderSettings:
        """The config's ladder settings."""
        return self.setup.ladder or LadderSettings()

    @property
    def master_seed(self) -> int:
        """The master seed (the setup's, known once the store is open)."""
        if self.setup.seed is None:
            raise ValueError("a ladder needs the master seed, which the results store gives")
        return self.setup.seed

    @property
    def bots(self) -> Sequence[str]:
        """The field, in config order."""
        return self.setup.bot_names

    @property
    def finished(self) -> bool:
        """The current plan stops the ladder: nothing more to play."""
        return self.plan is not None and self.plan.stop

    def current_matches(self) -> list[ScheduledMatch]:
        """The matches of the current round (none once finished)."""
        if self.plan is None or self.plan.stop:
            return []
        return round_matches(self.plan, self.master_seed)

    def missing(self) -> Iterator[ScheduledMatch]:
        """The current round's matches not stored yet, in schedule order."""
        winners = round_winners(self.connection, self.round_number)
        return (match for match in self.current_matches() if match.match_id not in winners)

    def replay(self) -> None:
        """Plan from round 1 on, over the stored results, up to the first round not
        complete in the store or the plan that stops."""
        self.fields = {
            stored.round: stored.bots
            for stored in stored_rounds(self.connection)
            if not stored.stop
        }
        clear_rounds(self.connection)
        self.results.clear()
        self.planned.clear()
        self.matches_played = 0
        self.played_fields.clear()
        self.played_matches.clear()
        self.field_first_round, self.field_matches_played = 1, 0
        self.plan = None
        self._plan_next()
        while not self.finished and next(self.missing(), None) is None:
            self.advance()

    def advance(self) -> RoundPlan:
        """The current round is stored whole: feed it back and plan the next one."""
        plan = self.plan
        if plan is None or plan.stop:
            raise ValueError("no round to complete")
        winners = round_winners(self.connection, plan.round_number)
        matches = round_matches(plan, self.master_seed)
        absent = [match.match_id for match in matches if match.match_id not in winners]
        if absent:
            raise ValueError(f"round {plan.round_number} is not complete: {', '.join(absent)}")
        self.results.extend(pair_outcomes(plan, winners))
        self.matches_played += len(matches)
        self.played_fields[plan.round_number] = self.plan_field
        self.played_matches[plan.round_number] = len(matches)
        return self._plan_next()

    def matches_before_budget(self) -> int:
        """The matches played before the budget now running began: those before the current
        field's first round. While the current round is still one of a field the config has
        since grown out of (a bot added in the middle of a round, which finishes as it
        began), the new field's budget begins after it: every match so far and this round's."""
        if self.before_bots_added:
            return self.matches_played + len(self.current_matches())
        return self.matches_played - self.field_matches_played

    @property
    def before_bots_added(self) -> bool:
        """The current round is still one of a field the config has since grown out of (a
        bot added in the middle of a round): the bots added join from the next one."""
        return self.plan is not None and not self.plan.stop and self.plan_field != tuple(self.bots)

    @property
    def round_number(self) -> int:
        """The current round (the one to play, or the stopping plan's); 0 before any."""
        return 0 if self.plan is None else self.plan.round_number

    def _plan_next(self) -> RoundPlan:
        number = self.round_number + 1
        bots = self.fields.get(number, tuple(self.bots))
        start = self._field_start(bots, number)
        plan = self._plan(bots, number, start)
        if bots != tuple(self.bots) and not set(bots) <= set(self.bots):
            # A bot of the round's field left the config: a round it did not finish is
            # planned again for the field of now (a complete one stays as it was played).
            winners = round_winners(self.connection, number)
            if any(
                match.match_id not in winners for match in round_matches(plan, self.master_seed)
            ):
                bots = tuple(self.bots)
                start = self._field_start(bots, number)
                plan = self._plan(bots, number, start)
        self.plan = plan
        self.plan_field = tuple(bots)
        self.field_first_round, self.field_matches_played = start
        save_round(
            self.connection,
            StoredRound(
                round=plan.round_number,
                bots=bots,
                phase=plan.phase,
                pairs=len(plan.pairs),
                byes=tuple(plan.byes),
                status=dict(plan.status),
                certification=plan.certification.text(),
                stop=plan.stop,
                prior_games=self.settings.prior_games,
                confidence=self.settings.confidence,
            ),
        )
        if not plan.stop:
            self.planned.extend(round_matches(plan, self.master_seed))
        return plan

    def _field_start(self, bots: Sequence[str], number: int) -> tuple[int, int]:
        """The first of the rounds up to ``number`` played with the field ``bots``, and
        the matches of those before ``number``."""
        first = number
        while first - 1 in self.played_fields and self.played_fields[first - 1] == tuple(bots):
            first -= 1
        return first, sum(self.played_matches[earlier] for earlier in range(first, number))

    def _plan(self, bots: Sequence[str], number: int, start: tuple[int, int]) -> RoundPlan:
        """Round ``number`` for the field ``bots``, from every result so far, with the
        budget counted from the first round of this field (``start``: that round and the
        matches since, as :meth:`_field_start` gives them)."""
        first, spent = start
        return plan_round(
            bots,
            self.results,
            number,
            derive_seed(self.master_seed, "ladder"),
            settings_for_field(self.settings, len(bots)),
            matches_played=spent,
            rounds_played=number - first,
        )
