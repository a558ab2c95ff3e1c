"""The conformance checks of ``aegis-ref check-bot``: every sample bot passes; deliberately
broken bots fail exactly the items they break (the command itself:
``tests/tournaments/cli/test_check_bot.py``).

The broken bots are ``tests/bots/rawbot.py`` with ``--fault``. ``--at N`` counts the bot's
decisions, so it depends on the checklist's order: decisions 1-3 are ``exchange_decision``,
``bid_decision`` and ``play_decision``, 4-7 ``legal_actions``, 8 ``follow_suit``, 9
``void_in_led_suit``, 10-11 ``killer_on_trump_lead``, 12 ``unknown_fields`` and 13 onwards
``several_matches``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from referee.bots import BotSpec
from referee.bundled import resolve_bot, sample_bots_dir
from referee.conformance import (
    CHECKLIST,
    CheckReport,
    CheckSettings,
    Fail,
    ItemResult,
    Pass,
    Skip,
    Status,
    check_bot,
)
from tests.protocol.sdk_support import wait_gone

RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"
NAMES = [item.name for item in CHECKLIST]
#: Short waits for broken bots: rawbot starts in well under a second.
FAST = CheckSettings(decision_ms=1000, warmup_ms=2000, heartbeat_ms=1000, matches=2)


def rawbot(*arguments: str) -> BotSpec:
    """rawbot.py with these arguments."""
    return BotSpec("rawbot", (sys.executable, str(RAWBOT), *arguments))


def statuses(report: CheckReport, status: Status) -> set[str]:
    """The names of the items with this status."""
    return {item.name for item in report.items if item.status is status}


def reason(report: CheckReport, name: str) -> str:
    """The reason given for one item."""
    return next(item.reason for item in report.items if item.name == name)


def test_the_checklist_covers_the_issue_in_order() -> None:
    assert NAMES == [
        "handshake",
        "unsupported_version",
        "ping",
        "exchange_decision",
        "bid_decision",
        "play_decision",
        "legal_actions",
        "follow_suit",
        "void_in_led_suit",
        "killer_on_trump_lead",
        "unknown_fields",
        "unknown_type",
        "several_matches",
        "reproducible",
        "shutdown",
        "no_leftovers",
    ]
    assert all(item.description and item.check.__doc__ for item in CHECKLIST)


def _toolchain_missing(name: str) -> str | None:
    folder = sample_bots_dir() / name
    if not (folder / "run").is_file():
        return f"sample_bots/{name} does not exist yet"
    if name == "js" and shutil.which("node") is None:
        return "node is not installed"
    if name == "c" and not (folder / "bot").is_file() and shutil.which("cc") is None:
        return "no C compiler to build the bot"
    return None


@pytest.mark.parametrize("name", ["random", "first", "js", "c"])
def test_sample_bot_passes_every_item(name: str) -> None:
    missing = _toolchain_missing(name)
    if missing is not None:
        pytest.skip(missing)
    seen: list[ItemResult] = []
    report = check_bot(resolve_bot(name), CheckSettings(matches=2), on_result=seen.append)
    assert report.passed, "\n".join(item.line() for item in report.items)
    assert [item.name for item in report.items] == NAMES
    assert list(report.items) == seen  # each result is reported as soon as it is known
    assert report.restarts == 0
    assert "2 matches" in reason(report, "several_matches")
    assert "its seed" in reason(report, "reproducible")  # all of them speak 1.1


@pytest.mark.parametrize(
    ("arguments", "failed", "in_reason"),
    [
        (["--fault", "illegal", "--at", "1"], "exchange_decision", "which is illegal"),
        # The referee's reading of an action: one space between words, as SPEC section 2 says.
        (["--fault", "double_space", "--at", "3"], "play_decision", "one space between words"),
        (["--fault", "sleep", "--at", "2"], "bid_decision", "the deadline is 1000 ms"),
        (["--fault", "error_reply", "--at", "3"], "play_decision", "error 'unexpected'"),
        (["--fault", "illegal", "--at", "4"], "legal_actions", "the slave's exchange"),
        (["--fault", "illegal", "--at", "8"], "follow_suit", "legal: play KH, play 5H"),
        (["--fault", "illegal", "--at", "9"], "void_in_led_suit", "which is illegal"),
        (["--fault", "illegal", "--at", "11"], "killer_on_trump_lead", "legal: play KD"),
        (["--fault", "strict_fields"], "unknown_fields", "x_checker_unknown"),
        (["--fault", "ignore_unknown_type"], "unknown_type", "no error answering 'frobnicate'"),
        (["--fault", "crash", "--at", "13"], "several_matches", "rawbot crashing"),
        (["--fault", "ignore_shutdown"], "shutdown", "still running 1.0 s after shutdown"),
        (["--fault", "child_ignores_term"], "no_leftovers", "still ran"),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, list) else None,
)
def test_a_broken_bot_fails_exactly_the_item_it_breaks(
    arguments: list[str], failed: str, in_reason: str
) -> None:
    settings = CheckSettings(matches=2, heartbeat_ms=1000) if "sleep" in arguments else FAST
    report = check_bot(rawbot(*arguments), settings)
    assert statuses(report, Status.FAIL) == {failed}, report.summary()
    assert statuses(report, Status.SKIP) == set()
    assert in_reason in reason(report, failed)
    assert not report.passed
    assert report.summary().endswith(f"failed: {failed}")


def test_a_descendant_that_escapes_the_process_group_is_found_then_killed(
    tmp_path: Path,
) -> None:
    # Both copies of the bot (the one rejected by unsupported_version too) write the pidfile.
    pidfile = tmp_path / "child.pid"
    report = check_bot(rawbot("--fault", "child_escapes", "--pidfile", str(pidfile)), FAST)
    assert statuses(report, Status.FAIL) == {"no_leftovers"}
    found = re.search(r"\(pid (\d+): \S*python", reason(report, "no_leftovers"))
    assert found is not None, reason(report, "no_leftovers")
    assert wait_gone(int(found.group(1)), 3.0)
    assert wait_gone(int(pidfile.read_text()), 3.0)


@pytest.mark.parametrize(
    ("fault", "failed", "in_reason"),
    [
        ("wrong_version", {"handshake"}, "bot speaks 7.0"),
        ("wrong_token", {"handshake", "unsupported_version"}, "unknown token were rejected"),
    ],
)
def test_a_bot_without_a_handshake_fails_it_and_the_rest_is_not_checked(
    fault: str, failed: set[str], in_reason: str
) -> None:
    report = check_bot(rawbot("--fault", fault), FAST)
    assert statuses(report, Status.FAIL) == failed
    assert statuses(report, Status.PASS) == {"handshake", "unsupported_version"} - failed
    assert statuses(report, Status.SKIP) == set(NAMES) - {"handshake", "unsupported_version"}
    assert in_reason in reason(report, "handshake")
    assert reason(report, "ping") == "not checked: the bot did not complete the handshake"


def test_a_bot_that_crashes_at_every_first_decision_is_restarted_each_time() -> None:
    report = check_bot(rawbot("--fault", "crash", "--at", "1"), FAST)
    decisions = {
        "exchange_decision",
        "bid_decision",
        "play_decision",
        "legal_actions",
        "follow_suit",
        "void_in_led_suit",
        "killer_on_trump_lead",
        "unknown_fields",
        "several_matches",
    }
    assert statuses(report, Status.FAIL) == decisions
    assert statuses(report, Status.ADVICE) == {"reproducible"}  # "not checked: ..."
    assert report.restarts == len(decisions) + 1  # reproducible needs the bot again
    assert "exit code 9" in reason(report, "follow_suit")


def test_a_command_that_cannot_start_fails_the_handshake(tmp_path: Path) -> None:
    report = check_bot(BotSpec("ghost", (str(tmp_path / "no-such-bot"),)), FAST)
    assert statuses(report, Status.FAIL) == {"handshake", "unsupported_version"}
    assert "could not start" in reason(report, "handshake")
    assert statuses(report, Status.SKIP) == set(NAMES) - {"handshake", "unsupported_version"}


def test_the_report_summary_and_json() -> None:
    items = (
        ItemResult("handshake", "says hello", Pass("hello"), 0.1),
        ItemResult("ping", "answers ping", Fail("no pong"), 1.0),
        ItemResult("shutdown", "exits", Skip("not checked: gone"), 0.0),
    )
    report = CheckReport("bot", ("./bot",), CheckSettings(), items)
    assert not report.passed
    assert report.summary() == "1 of 3 items passed; failed: ping; not checked: shutdown"
    assert [item.line() for item in items] == [
        "PASS handshake: hello",
        "FAIL ping: no pong",
        "SKIP shutdown: not checked: gone",
    ]
    data = report.to_json()
    assert data["passed"] is False
    assert data["settings"]["decision_ms"] == 1000
    assert [item["status"] for item in data["items"]] == ["pass", "fail", "skip"]
    assert json.loads(json.dumps(data)) == data
    passing = CheckReport("bot", ("./bot",), CheckSettings(), items[:1])
    assert passing.passed
    assert passing.summary() == "1 of 1 items passed: bot is ready for a tournament"


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="invalid check settings"):
        CheckSettings(matches=0)


def test_a_remote_spec_needs_a_listener() -> None:
    with pytest.raises(ValueError, match="remote: it needs a listener"):
        check_bot(BotSpec("far", curve_public_key="x" * 40))


UNSEEDED = Path(__file__).resolve().parents[1] / "bots" / "unseeded_bot.py"


def test_a_bot_that_ignores_the_seed_gets_advice_and_still_passes() -> None:
    """The ``reproducible`` item is advice: a bot drawing from the system's randomness is told
    what to change, and the check passes."""
    report = check_bot(BotSpec("unseeded", (sys.executable, str(UNSEEDED))), FAST)
    assert statuses(report, Status.ADVICE) == {"reproducible"}, report.summary()
    assert statuses(report, Status.FAIL) == statuses(report, Status.SKIP) == set()
    assert report.passed
    assert "draw all randomness from match_start's seed" in reason(report, "reproducible")
    assert report.summary().endswith("is ready for a tournament; advice: reproducible")
    assert report.to_json()["items"][-3]["status"] == "advice"


def test_a_1_0_bot_that_plays_the_same_way_is_reproducible_without_a_seed() -> None:
    report = check_bot(rawbot(), FAST)
    assert report.passed, report.summary()
    assert "protocol 1.0: no seed" in reason(report, "reproducible")
