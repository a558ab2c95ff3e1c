"""The ``sprt`` command against real bot processes: its verdicts, exit codes and record, and
the figures it prints recomputed from the published formulas."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from tests.tournaments.cli.helpers import FAST, invoke, rawbot, run_script
from tests.tournaments.sprt_formulas import WALD, images_probability, recomputed_path, walk_of
from tournaments.cli.exit_codes import EXIT_ERROR, EXIT_H0, EXIT_H1, EXIT_UNDECIDED
from tournaments.stats.sprt import PairCounts, PairOutcome

_NUMBER = r"([+-]\d+\.\d+)"
PAIR_LINE = re.compile(
    rf"^pair (\d+): (\d)-\d +pairs \d+ \(.*\)  LLR {_NUMBER} \[{_NUMBER}, {_NUMBER}\]  Elo "
)
FINAL_LINE = re.compile(
    rf"^Elo {_NUMBER} \[{_NUMBER}, {_NUMBER}\] \(95 %\), LOS (\d+\.\d) %, allowing for where "
    "the test stopped"
)


def test_first_against_itself_accepts_h0(tmp_path: Path) -> None:
    record = tmp_path / "sprt.jsonl"
    result = invoke(
        "sprt", "first", "first", "--elo1", "200", "--target-score", "5", "--record", record
    )
    assert result.exit_code == EXIT_H0, result.output
    assert "H0 accepted" in result.output
    _check_printed_figures(result.output, "dynamic", pairs=4)
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    ends = [line for line in lines if line["type"] == "match_end"]
    assert len(ends) % 2 == 0
    assert {line["players"][0] for line in lines if line["type"] == "match_start"} == {
        "first-new",
        "first-old",
    }


def test_first_against_random(tmp_path: Path) -> None:
    result = invoke(
        *("sprt", "first", "random", "--elo0", "0", "--elo1", "200"),
        *("--target-score", "5", "--max-matches", "9", "--seed", "5"),
    )
    assert result.exit_code in (EXIT_H1, EXIT_H0, EXIT_UNDECIDED), result.output
    assert "LLR" in result.output
    assert "Elo" in result.output
    pair_lines = [line for line in result.output.splitlines() if line.startswith("pair ")]
    assert 1 <= len(pair_lines) <= 4  # --max-matches 9 allows 4 whole pairs
    if result.exit_code == EXIT_UNDECIDED:
        assert "undecided: --max-matches 9 reached" in result.output
    assert FINAL_LINE.match(result.output.splitlines()[-1]), result.output


def test_bad_arguments_are_refused() -> None:
    swapped = invoke("sprt", "first", "random", "--elo0", "20", "--elo1", "0")
    assert swapped.exit_code == 2
    assert "elo0 < elo1" in swapped.output
    unknown = invoke("sprt", "first", "no-such-bot-here")
    assert unknown.exit_code == EXIT_ERROR
    assert "no-such-bot-here" in unknown.output


def _rounds_to(value: float, printed: str) -> bool:
    return f"{round(value, 2) + 0.0:+.2f}" == printed or math.isclose(
        value, float(printed), abs_tol=0.005 + 1e-9
    )


def test_walds_bounds_stop_a_pair_later() -> None:
    result = invoke(
        *("sprt", "first", "first", "--elo1", "200", "--target-score", "5"),
        *("--sandbox", "off", "--bounds", "wald"),
    )
    assert result.exit_code == EXIT_H0, result.output
    _check_printed_figures(result.output, "wald", pairs=5)


def _check_printed_figures(output: str, bounds: str, pairs: int) -> None:
    """Recompute every figure ``sprt`` printed for ``first`` against itself at (0, 200) from
    the published formulas. A deterministic bot against itself splits every pair: the LLR
    falls by 0.73 a pair, which the dynamic rule's moving bound stops a pair before Wald's."""
    lines = output.splitlines()
    header = "less the overshoot" if bounds == "dynamic" else "(wald)"
    assert f"LLR bounds [-2.94, +2.94] {header}" in lines[0]
    printed = [match.groups() for line in lines if (match := PAIR_LINE.match(line))]
    outcomes = [PairOutcome(int(won)) for _, won, _, _, _ in printed]
    assert [int(number) for number, *_ in printed] == list(range(1, pairs + 1))
    assert outcomes == [PairOutcome.SPLIT] * pairs
    path = recomputed_path(0, 200, outcomes, dynamic=bounds == "dynamic")
    for (_, _, llr, lower, upper), expected in zip(printed, path, strict=True):
        assert all(map(_rounds_to, expected, (llr, lower, upper))), (expected, llr, lower, upper)
    # It stopped at the first pair past the bound in force (strictly so for dynamic).
    past = [llr < lower if bounds == "dynamic" else llr <= lower for llr, lower, _ in path]
    assert past == [False] * (pairs - 1) + [True]
    verdict = next(line for line in lines if line.startswith("H0 accepted"))
    sign = "<" if bounds == "dynamic" else "<="
    assert f"after {pairs} pairs ({2 * pairs} matches) {sign} {path[-1][1]:+.2f}" in verdict
    # The final Elo: at the printed estimate the chance of a worse outcome is 1/2, at the
    # ends of the interval 97.5 % and 2.5 %; at 0 it is the LOS (within the printed digits).
    final = next(match.groups() for line in lines if (match := FINAL_LINE.match(line)))
    elo, low, high, los = map(float, final)
    drift, variance, time, position = walk_of(PairCounts(0, pairs, 0), 0, 200)

    def worse(value: float) -> float:
        return images_probability(*WALD, drift(value), variance, time, position)

    for figure, level in ((elo, 0.5), (low, 0.975), (high, 0.025)):
        assert worse(figure - 0.05) >= level >= worse(figure + 0.05), (figure, level)
    assert abs(100 * worse(0.0) - los) <= 0.05
    assert "(rough: too few pairs" in lines[-1]  # no spread at all in these pairs


def test_bots_named_by_their_hello_and_the_score_at_the_end(tmp_path: Path) -> None:
    alpha = run_script(tmp_path / "a", rawbot("--name", "alpha"))
    beta = run_script(tmp_path / "b", rawbot("--name", "beta"))
    arguments = ("--max-matches", "4", "--bank-ms", "500", "--sandbox", "off")
    result = invoke("sprt", alpha, beta, *FAST, *arguments)
    assert result.exit_code in (EXIT_H0, EXIT_UNDECIDED), result.output
    assert result.output.startswith("SPRT alpha (new) vs beta (old): ")
    assert re.search(r"^Score of alpha vs beta: \d - \d \[\d\.\d{3}\] 4$", result.output, re.M)


def test_a_bot_that_cannot_start_is_quoted(tmp_path: Path) -> None:
    broken = run_script(tmp_path / "x", f"{sys.executable} -c 'import no_such_module_here'")
    result = invoke("sprt", broken, "first", "--max-matches", "2", *FAST, "--sandbox", "off")
    assert result.exit_code == EXIT_UNDECIDED, result.output
    notes = [line for line in result.output.splitlines() if "forfeit by run" in line]
    assert len(notes) == 2
    why = "; last output: \"ModuleNotFoundError: No module named 'no_such_module_here'\""
    assert all(why in line for line in notes)
