"""The schedule: duplicate pairs, shared seeds, interleaving, stable ids."""

from __future__ import annotations

import pytest

from referee.seeds import derive_seed
from tournaments.schedule.pairings import (
    match_id,
    match_seed,
    pairing_key,
    pairings,
    schedule,
    schedule_size,
)

NAMES = ("alpha", "beta", "gamma", "delta")


def test_round_robin_pairs_every_two_bots_once() -> None:
    pairs = pairings(NAMES)
    assert len(pairs) == 6
    assert {frozenset(pair) for pair in pairs} == {
        frozenset((a, b)) for a in NAMES for b in NAMES if a != b
    }


def test_gauntlet_pairs_named_bots_with_all_others() -> None:
    assert pairings(NAMES, "gauntlet", ["beta", "delta"]) == [
        ("beta", "alpha"),
        ("beta", "gamma"),
        ("delta", "alpha"),
        ("delta", "gamma"),
    ]
    with pytest.raises(ValueError, match="unknown tournament format"):
        pairings(NAMES, "swiss")


def test_duplicate_pairs_share_a_seed_with_seats_swapped() -> None:
    matches = list(schedule(NAMES, matches_per_pair=6, master_seed=3))
    assert len(matches) == schedule_size(NAMES, matches_per_pair=6) == 36
    for first, second in zip(matches[::2], matches[1::2], strict=True):
        assert first.seed == second.seed
        assert first.round == second.round
        assert first.pairing == second.pairing
        assert second.seats == first.seats[::-1]


def test_every_pairing_reuses_the_same_seeds() -> None:
    matches = list(schedule(NAMES, matches_per_pair=6, master_seed=3))
    expected = [derive_seed(3, "match", k) for k in (1, 2, 3)]
    by_pairing: dict[str, list[int]] = {}
    for match in matches:
        by_pairing.setdefault(match.pairing, []).append(match.seed)
    assert len(by_pairing) == 6
    for seeds in by_pairing.values():
        assert seeds == [seed for seed in expected for _ in range(2)]
    assert [match_seed(3, k) for k in (1, 2, 3)] == expected


def test_rounds_are_interleaved_across_pairings() -> None:
    matches = list(schedule(NAMES, matches_per_pair=6))
    rounds = [match.round for match in matches]
    assert rounds == sorted(rounds)
    # Each round holds both seat orders of every pairing.
    for number in (1, 2, 3):
        in_round = [match for match in matches if match.round == number]
        assert len(in_round) == 12
        assert {match.seats for match in in_round} == {
            (a, b) for a in NAMES for b in NAMES if a != b
        }


def test_schedule_is_reproducible_and_ids_are_unique() -> None:
    first = list(schedule(NAMES, matches_per_pair=4, master_seed=8))
    again = list(schedule(NAMES, matches_per_pair=4, master_seed=8))
    assert first == again
    assert len({match.match_id for match in first}) == len(first)
    other = list(schedule(NAMES, matches_per_pair=4, master_seed=9))
    assert [match.seed for match in other] != [match.seed for match in first]


def test_adding_a_bot_keeps_every_existing_match() -> None:
    old = {match.match_id: match for match in schedule(NAMES[:3], matches_per_pair=4)}
    new = {match.match_id: match for match in schedule(NAMES, matches_per_pair=4)}
    assert set(old) <= set(new)
    assert all(new[key] == match for key, match in old.items())
    added = [match for key, match in new.items() if key not in old]
    assert len(added) == 3 * 4
    assert all("delta" in match.seats for match in added)


def test_reordering_bots_keeps_ids() -> None:
    forward = {match.match_id for match in schedule(NAMES, matches_per_pair=2)}
    backward = {match.match_id for match in schedule(NAMES[::-1], matches_per_pair=2)}
    assert forward == backward


def test_ids_and_pairing_keys() -> None:
    assert match_id(3, ("alpha", "beta")) == "r0003-alpha+beta"
    assert match_id(12345, ("a", "b")) == "r12345-a+b"
    assert pairing_key("beta", "alpha") == pairing_key("alpha", "beta") == "alpha+beta"


@pytest.mark.parametrize("count", [0, 1, 3])
def test_matches_per_pair_must_be_even(count: int) -> None:
    with pytest.raises(ValueError, match="even"):
        list(schedule(NAMES, matches_per_pair=count))
