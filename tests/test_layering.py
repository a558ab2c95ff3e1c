"""The direction of imports, read from the code itself (docs/architecture.md).

``referee.rules`` (pure) ← ``protocol`` ← the match runner in ``referee`` ← ``tournaments``
(scheduling, the store, ratings, and the command line in ``tournaments.cli``). Every import
of the production code counts, also one inside a function.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("referee", "protocol", "tournaments", "sample_bots")
PROJECT = frozenset(PACKAGES)
STANDARD_LIBRARY = frozenset(sys.stdlib_module_names) | {"__future__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every module ``module``'s code imports, with relative imports resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = _source(node, module, is_package)
            yield prefix
            # ``from protocol import builders`` imports the module protocol.builders.
            for alias in node.names:
                candidate = f"{prefix}.{alias.name}"
                if _is_project_module(candidate):
                    yield candidate


def _source(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from ... import`` in ``module`` imports from, relative imports resolved."""
    if node.level:
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        return ".".join([*base, node.module] if node.module else base)
    return node.module or ""


def _is_project_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Each production module (by dotted name) and the modules it imports."""
    graph: dict[str, frozenset[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            graph[module] = frozenset(_imported(tree, module, path.name == "__init__.py"))
    return graph


def _within(name: str, *prefixes: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _violations(modules: str | tuple[str, ...], allowed: Callable[[str, str], bool]) -> list[str]:
    """``module imports name`` for each import by ``modules`` that ``allowed`` refuses."""
    prefixes = (modules,) if isinstance(modules, str) else modules
    found = []
    for module, names in import_graph().items():
        if not _within(module, *prefixes):
            continue
        for name in sorted(names):
            if not allowed(module, name):
                found.append(f"{module} imports {name}")
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "referee.rules.game" in graph
    assert "referee.rules.cards" in graph["referee.rules.game"]
    assert "protocol.builders" in graph["referee.runner"]  # ``from protocol import builders``
    assert len(graph) > 60


def _import_cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module in the project's part of
    ``graph``: each is an import cycle (Tarjan's algorithm). A package naming itself
    (``from . import command`` in its ``__init__``) is none."""
    edges = {module: sorted(names & graph.keys()) for module, names in graph.items()}
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for name in edges[module]:
            if name not in index:
                visit(name)
                lowest[module] = min(lowest[module], lowest[name])
            elif name in stack:
                lowest[module] = min(lowest[module], index[name])
        if lowest[module] == index[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return cycles


def test_there_is_no_import_cycle() -> None:
    """Not even through an import inside a function: such an import hides a cycle (it works
    only while the first module is done loading before the function runs), and its layers
    cannot be told apart."""
    assert _import_cycles(import_graph()) == []


def test_a_cycle_would_be_found() -> None:
    graph = {
        "a": frozenset({"b", "os"}),
        "b": frozenset({"c"}),
        "c": frozenset({"a"}),
        "d": frozenset({"d", "e"}),
        "e": frozenset({"a"}),
    }
    assert _import_cycles(graph) == [["a", "b", "c"]]
    assert _import_cycles({**graph, "c": frozenset({"e"}), "e": frozenset({"b"})}) == [
        ["b", "c", "e"]
    ]


def test_the_rules_import_only_the_standard_library_and_themselves() -> None:
    def allowed(_module: str, name: str) -> bool:
        # mypy_extensions only marks classes for the compiled build; a no-op otherwise.
        return (
            _within(name, "referee.rules")
            or _top(name) in STANDARD_LIBRARY
            or name == "mypy_extensions"
        )

    assert _violations("referee.rules", allowed) == []


def test_records_selfplay_and_seeds_sit_on_the_rules_alone() -> None:
    pure = ("referee.records", "referee.selfplay", "referee.seeds")

    def allowed(_module: str, name: str) -> bool:
        return (
            _within(name, "referee.rules", *pure)
            or name == "referee"
            or _top(name) in STANDARD_LIBRARY
        )

    assert _violations(pure, allowed) == []


def test_protocol_imports_from_the_referee_only_its_rules() -> None:
    def allowed(_module: str, name: str) -> bool:
        if _top(name) == "referee":
            return _within(name, "referee.rules")
        return _top(name) not in {"tournaments", "sample_bots"}

    assert _violations("protocol", allowed) == []


def test_the_referee_never_imports_tournaments() -> None:
    def allowed(module: str, name: str) -> bool:
        if _top(name) == "sample_bots":
            # bundled finds the bundled bots' folders; sandbox shows their folder to a bot.
            return module in ("referee.bundled", "referee.sandbox")
        return _top(name) != "tournaments"

    assert _violations("referee", allowed) == []


def test_sample_bots_speak_only_the_protocol() -> None:
    def allowed(_module: str, name: str) -> bool:
        if _top(name) == "referee":
            return _within(name, "referee.rules")
        return _top(name) != "tournaments"

    assert _violations("sample_bots", allowed) == []


def test_the_server_and_the_hub_meet_only_at_the_edge() -> None:
    """Both face bots through referee.edge, and neither imports the other: the match runner's
    server reaches the hub through its link (referee.hub_link), a worker's end of it; and
    what a config, the command line or the edge itself needs (keys, peers, a session) loads
    neither."""
    below = (
        "referee.edge",
        "referee.listeners",
        "referee.peers",
        "referee.session",
        "referee.hub_link",
    )
    forbidden = {
        "referee.server": ("referee.hub",),
        "referee.hub": ("referee.server", "referee.session", "referee.hub_link"),
        **{module: ("referee.server", "referee.hub") for module in below},
    }

    def allowed(module: str, name: str) -> bool:
        return not _within(name, *forbidden.get(module, ()))

    assert _violations(tuple(forbidden), allowed) == []
    graph = import_graph()
    assert all(module in graph for module in forbidden)  # no name here is stale
    assert "referee.edge" in graph["referee.server"]
    assert "referee.edge" in graph["referee.hub"]


#: The sub-packages of ``tournaments``, lowest first: each imports only from its own layer and
#: those below it (docs/architecture.md). ``tournaments.errors`` is shared by all of them.
TOURNAMENTS_LAYERS = (
    "config",
    "schedule",
    "store",
    "stats",
    "report",
    "run",
    "league",
    "web",
    "cli",
)
TOURNAMENTS_SHARED = ("tournaments", "tournaments.errors", "tournaments.examples")


def _tournaments_layer(name: str) -> int:
    """The rank of the layer of ``name``, a module of ``tournaments`` outside the shared ones."""
    return TOURNAMENTS_LAYERS.index(name.split(".")[1])


def test_every_tournaments_module_sits_in_a_layer() -> None:
    """A new module goes into the sub-package of what it does, not flat beside them."""
    stray = [
        module
        for module in import_graph()
        if _top(module) == "tournaments"
        and module not in TOURNAMENTS_SHARED
        and module.split(".")[1] not in TOURNAMENTS_LAYERS
    ]
    assert stray == []


def test_tournaments_imports_only_its_own_layer_and_those_below() -> None:
    """config < schedule < store < stats < report < run < league < cli: the coordinator (run)
    knows no league (its callers enter a league's submissions before it runs), and nothing
    below the command line imports it."""

    def allowed(module: str, name: str) -> bool:
        if _top(name) != "tournaments" or _within(name, *TOURNAMENTS_SHARED[1:]):
            return True
        if name == "tournaments" or module == "tournaments":
            return True
        return _tournaments_layer(name) <= _tournaments_layer(module)

    assert _violations(tuple(f"tournaments.{layer}" for layer in TOURNAMENTS_LAYERS), allowed) == []
    assert _tournaments_layer("tournaments.store.database") < _tournaments_layer(
        "tournaments.run.worker"
    )


def test_nothing_below_the_command_line_imports_it() -> None:
    def allowed(module: str, name: str) -> bool:
        return not _within(name, "tournaments.cli") or _within(module, "tournaments.cli")

    assert _violations(PACKAGES, allowed) == []


def test_running_a_tournament_loads_no_renderer() -> None:
    """The coordinator and a league's runner tell a display (tournaments.run.display, a
    protocol) what happens: the rich renderer is the command line's choice, not theirs."""
    loaded = _loaded_by(
        ("tournaments.run.coordinator", "tournaments.league.runner"),
        modules=("tournaments.report.terminal",),
        packages=("rich", "typer"),
    )
    assert loaded == []


def test_only_the_command_line_uses_the_terminal_renderer() -> None:
    """The pages and the standings' text forms come from tournaments.report.formats; the rich
    tables and displays (tournaments.report.terminal) are the command line's alone."""

    def allowed(module: str, name: str) -> bool:
        return not _within(name, "tournaments.report.terminal") or _within(
            module, "tournaments.cli", "tournaments.report.terminal"
        )

    assert _violations(PACKAGES, allowed) == []


def test_the_pages_and_the_web_service_load_no_rich() -> None:
    """Writing the HTML report or serving the league needs the standings as data, not rich:
    nothing they import, however indirectly, loads the terminal renderer or rich."""
    loaded = _loaded_by(
        (
            "tournaments.report.formats",
            "tournaments.report.html_report",
            "tournaments.report.replay_page",
            "tournaments.web.app",
        ),
        modules=("tournaments.report.terminal",),
        packages=("rich",),
    )
    assert loaded == []


def _loaded_by(
    imported: tuple[str, ...], *, modules: tuple[str, ...] = (), packages: tuple[str, ...] = ()
) -> list[str]:
    """Which of ``modules``, and of the modules of ``packages``, a fresh Python process has
    loaded once it has imported ``imported``."""
    probe = (
        f"import sys, {', '.join(imported)}; "
        "print('\\n'.join(sorted(name for name in sys.modules "
        f"if name in {modules!r} or name.split('.')[0] in {packages!r})))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return shown.stdout.split()


@pytest.mark.parametrize(
    ("library", "owners"),
    [
        # The referee's ZeroMQ edge and its users: the match runner's server, the remote
        # bots' hub and a worker's link to it; and the SDK (the bot's side). The command line
        # names its version. referee.listeners makes and reads keys and probes an address,
        # importing zmq inside those functions alone (a test below holds a config's reading
        # free of it).
        (
            "zmq",
            (
                "referee.edge",
                "referee.server",
                "referee.hub",
                "referee.hub_link",
                "referee.listeners",
                "protocol.sdk",
                "tournaments.cli",
            ),
        ),
        # Bytes: the protocol's codec, and the edge's one envelope packer.
        ("msgpack", ("protocol", "referee.edge")),
        # CurveZMQ's ZAP handler: one, in the edge.
        ("zmq.auth", ("referee.edge",)),
        # A config's YAML, read with the line of every key.
        ("yaml", ("tournaments.config.sources",)),
        # The command line, and the one module that renders tables and the live display: what
        # runs a tournament knows only its protocol (tournaments.run.display).
        ("typer", ("tournaments.cli",)),
        ("rich", ("tournaments.cli", "tournaments.report.terminal")),
        ("distributed", ("tournaments.run.cluster",)),
        # The web service.
        ("starlette", ("tournaments.web",)),
        ("uvicorn", ("tournaments.web.server",)),
    ],
)
def test_a_library_is_used_where_it_belongs(library: str, owners: tuple[str, ...]) -> None:
    def allowed(module: str, name: str) -> bool:
        return not _within(name, library) or _within(module, *owners)

    assert _violations(PACKAGES, allowed) == []


#: Private names a module may still import from another, and why. The test fails on an
#: entry that is no longer needed, so the list shrinks with the code.
PRIVATE_IMPORTS_ALLOWED: dict[str, str] = {}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(path: Path, module: str) -> Iterator[str]:
    """``module imports other._name`` for each private name of another project module that
    ``module`` (its source at ``path``) imports (``from other import _name``) or reads
    (``other._name``, ``other`` imported as a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    modules: dict[str, str] = {}  # local name -> the project module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _source(node, module, is_package)
            if _top(source) not in PROJECT:
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    yield f"{module} imports {source}.{alias.name}"
                elif _is_project_module(f"{source}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _top(alias.name) in PROJECT and alias.asname is not None:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _is_private(node.attr)
        ):
            yield f"{module} imports {modules[node.value.id]}.{node.attr}"


def test_no_module_uses_another_modules_private_names() -> None:
    """A leading underscore means "this module's own": a name another module needs is made
    public (with a docstring), or the two modules are one."""
    found = {
        use
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for use in _private_uses(path, _module_name(path))
    }
    assert sorted(found - PRIVATE_IMPORTS_ALLOWED.keys()) == []
    assert sorted(PRIVATE_IMPORTS_ALLOWED.keys() - found) == [], "no longer needed: remove"


def test_a_private_name_would_be_found(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from referee.bots import BotSpec, _group_alive\n"
        "from referee import sandbox\n"
        "import referee.cgroups as cgroups\n"
        "x = sandbox._MASKED, cgroups._helper, sandbox.__name__, BotSpec\n",
        encoding="utf-8",
    )
    assert sorted(_private_uses(probe, "referee.probe")) == [
        "referee.probe imports referee.bots._group_alive",
        "referee.probe imports referee.cgroups._helper",
        "referee.probe imports referee.sandbox._MASKED",
    ]


def test_the_store_alone_runs_sql() -> None:
    sql_calls = {"execute", "executemany", "executescript"}
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            if module == "tournaments.store.database":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in sql_calls
                ):
                    found.append(f"{module}:{node.lineno} calls {node.func.attr}")
    assert found == []


def test_the_sdk_starts_without_the_models() -> None:
    """A Python bot starts in a tenth of a second only if the SDK leaves pydantic (the
    message models, a quarter of a second to import) alone."""
    assert _loaded_by(("protocol.sdk", "sample_bots.random.bot"), packages=("pydantic",)) == []


def test_reading_a_config_loads_neither_the_server_nor_zmq() -> None:
    """A config names the remote bots' listener and its key file: reading one (a report, a
    standings table, a check of the file) needs neither the match runner's server nor
    ZeroMQ."""
    loaded = _loaded_by(
        ("tournaments.config.tournament",),
        modules=("referee.server", "referee.hub", "referee.runner"),
        packages=("zmq",),
    )
    assert loaded == []


def test_tests_share_code_only_through_helper_modules() -> None:
    """A test module imports what tests share from a module of helpers (``helpers.py``,
    ``bot_helpers.py``, ...), never from another test module: moving or deleting one test
    must not break another."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom):
                source = _source(node, module, path.name == "__init__.py")
                if source.split(".")[-1].startswith("test_"):
                    found.append(f"{module} imports {source}")
    assert found == []
