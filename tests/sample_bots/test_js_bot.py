"""The JavaScript sample bot (``sample_bots/js``): its own ``node --test`` suite, and real
matches with the referee. ``.ci/run`` installs its npm packages; elsewhere it needs Node.js
(the bot's ``run`` installs the packages on first use)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from referee.rules.options import RulesOptions
from tests.sample_bots.language_bots import (
    SHORT,
    bot_dir,
    c_toolchain_missing,
    check_conversation,
    check_reject_and_arguments,
    check_remote_matches,
    check_remote_reconnects,
    play_both_seats,
    skip_unless_ci,
    wins,
)

JS = bot_dir("js")


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    """Node.js is there and the bot's packages are installed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        skip_unless_ci("Node.js (node and npm) is not installed")
    if not (JS / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--silent"], cwd=JS, check=True, timeout=300)


def test_node_test_suite() -> None:
    result = subprocess.run(
        ["node", "--test"], cwd=JS, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout


def test_plays_random_in_both_seats(tmp_path: Path) -> None:
    reports = play_both_seats("js", "random", [1, 2, 3], tmp_path)
    assert len(reports) == 6


def test_at_least_as_good_as_random(tmp_path: Path) -> None:
    # 20 duplicate pairs of short matches; the bot wins nearly all, asking for 40% keeps luck out.
    reports = play_both_seats("js", "random", list(range(100, 120)), tmp_path, SHORT)
    assert wins(reports, "js") >= 0.4 * len(reports)


def test_plays_the_c_bot(tmp_path: Path) -> None:
    missing = c_toolchain_missing()
    if missing:
        skip_unless_ci(f"the C bot cannot be built: {missing}")
    play_both_seats("js", "c", [7], tmp_path)


def test_plays_other_rules_options(tmp_path: Path) -> None:
    # No exchange phase at all, and promise only from bid 4.
    options = RulesOptions(max_exchange_rounds=0, promise_min_bid=4)
    play_both_seats("js", "random", [4], tmp_path, options)


def test_plays_itself(tmp_path: Path) -> None:
    play_both_seats("js", "js", [9], tmp_path)


def test_conversation() -> None:
    check_conversation("js")


def test_reject_and_arguments() -> None:
    check_reject_and_arguments("js")


def test_plays_as_a_remote_bot_over_curve_zmq(tmp_path: Path) -> None:
    check_remote_matches("js", tmp_path)


def test_a_remote_bot_dials_in_again_when_its_connection_drops() -> None:
    check_remote_reconnects("js")
