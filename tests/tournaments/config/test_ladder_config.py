"""The ladder's config: its keys, what it resolves to, and errors that name the line and key."""

from __future__ import annotations

from pathlib import Path

from tests.tournaments.config_helpers import errors, load
from tournaments.stats.ladder import LadderSettings

BOTS = """
name: l
bots:
  - {name: a, command: random}
  - {name: b, command: random}
  - {name: c, command: first}
  - {name: d, command: first}
"""


def test_a_ladder_resolves_to_its_settings(tmp_path: Path) -> None:
    setup = load(
        tmp_path,
        BOTS
        + """\
format: ladder
ladder:
  top: 2
  confidence: 0.9
  rounds: 6
  max_matches: 40
  random_share: 0.25
  repeat_penalty: 10
  finalists: 3
  prior_games: 1
  final_share: 0.5
  race_confidence: 0.9
""",
    )
    assert setup.format == "ladder"
    assert setup.ladder == LadderSettings(
        top=2,
        confidence=0.9,
        max_matches=40,
        rounds=6,
        random_share=0.25,
        repeat_penalty=10.0,
        finalists=3,
        prior_games=1.0,
        final_share=0.5,
        race_confidence=0.9,
    )


def test_a_ladder_without_its_mapping_takes_the_defaults(tmp_path: Path) -> None:
    setup = load(tmp_path, BOTS + "format: ladder\n")
    assert setup.ladder == LadderSettings()
    assert load(tmp_path, BOTS).ladder is None  # a round robin has none


def test_ladder_values_and_keys_are_checked_with_their_line(tmp_path: Path) -> None:
    found = errors(
        tmp_path,
        BOTS
        + """\
format: ladder
ladder:
  top: 0
  confidence: 1.5
  rounds: two
  finalist: 3
  final_share: 1
""",
    )
    assert found == [
        "config.yaml:9: ladder.top: should be greater than or equal to 1, got 0",
        "config.yaml:10: ladder.confidence: should be less than 1, got 1.5",
        "config.yaml:11: ladder.rounds: should be a valid integer, got 'two'",
        "config.yaml:13: ladder.final_share: should be less than 1, got 1",
        "config.yaml:12: ladder.finalist: unknown key; known keys here: top, confidence, "
        "max_matches, rounds, random_share, repeat_penalty, finalists, prior_games, "
        "final_share, race_confidence",
    ]


def test_race_confidence_is_checked_at_its_key(tmp_path: Path) -> None:
    found = errors(tmp_path, BOTS + "format: ladder\nladder:\n  top: 2\n  race_confidence: 0.4\n")
    assert found == ["config.yaml:10: ladder.race_confidence: should be greater than 0.5, got 0.4"]
    found = errors(tmp_path, BOTS + "format: ladder\nladder:\n  race_confidence: 0.9\n")
    assert len(found) == 1
    assert found[0].startswith("config.yaml:9: ladder.race_confidence: ")
    assert "needs top" in found[0]


def test_a_ladder_mapping_needs_format_ladder(tmp_path: Path) -> None:
    found = errors(tmp_path, BOTS + "ladder: {top: 2}\n")
    assert found == ["config.yaml:7: ladder: only used with format: ladder"]


def test_matches_per_pair_is_not_for_a_ladder(tmp_path: Path) -> None:
    found = errors(tmp_path, BOTS + "format: ladder\nmatches_per_pair: 4\n")
    assert found == [
        "config.yaml:8: matches_per_pair: not used with format: ladder, whose rounds decide "
        "who meets how often; give a budget in 'ladder' (max_matches or rounds) instead"
    ]


def test_a_ladder_larger_than_its_field_is_rejected_at_its_key(tmp_path: Path) -> None:
    found = errors(tmp_path, BOTS + "format: ladder\nladder:\n  top: 5\n  rounds: 3\n")
    assert len(found) == 1
    assert found[0].startswith("config.yaml:9: ladder.top: ")
    assert "5" in found[0]
    assert "4 bots" in found[0]


def test_a_budget_below_one_round_is_rejected_at_its_key(tmp_path: Path) -> None:
    found = errors(tmp_path, BOTS + "format: ladder\nladder:\n  max_matches: 2\n")
    assert len(found) == 1
    assert found[0].startswith("config.yaml:9: ladder.max_matches: ")


def test_a_leagues_ladder_is_checked_at_load_where_its_field_does_not_matter(
    tmp_path: Path,
) -> None:
    """A league's field is known only when it runs, but a key that needs ``top``, or a
    ``finalists`` below it, is wrong whatever the field: named with its line at load."""
    league = "name: l\nsubmissions: subs\nformat: ladder\nladder:\n"
    found = errors(tmp_path, league + "  race_confidence: 0.9\n  finalists: 3\n")
    assert found == [
        "config.yaml:5: ladder.race_confidence: race_confidence needs top: only a top K has a race",
        "config.yaml:6: ladder.finalists: finalists needs top: the final decides the top K",
    ]
    found = errors(tmp_path, league + "  top: 5\n  finalists: 4\n")
    assert found == ["config.yaml:6: ladder.finalists: finalists must be at least top (5), got 4"]
    found = errors(tmp_path, league + "  top: 3\n  race_confidence: 0.9\n")
    assert len(found) == 1
    assert found[0].startswith("config.yaml:6: ladder.race_confidence: race_confidence 0.9 ")
    assert "needs a budget" in found[0]
    # A league's field is at least the config's own bots: a budget below their round.
    found = errors(
        tmp_path, BOTS + "submissions: subs\nformat: ladder\nladder:\n  max_matches: 2\n"
    )
    assert len(found) == 1
    assert found[0].startswith("config.yaml:10: ladder.max_matches: below one round: 2 matches")
    assert "the config's 4 bots" in found[0]
    # What depends on the field is left to the run: a top larger than today's field loads.
    setup = load(tmp_path, league + "  top: 50\n  finalists: 60\n  max_matches: 10\n")
    assert setup.ladder == LadderSettings(top=50, finalists=60, max_matches=10)
