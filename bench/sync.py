"""`kbkit sync` for every client it knows (23) in a git repository that already holds the users'
own files, with rulesync and ruler doing the same job side by side.

Each run gets a fresh temporary git repository: kbkit.toml with `[sync] clients` = every client
kbkit knows, a docs folder, a user `.gitignore`, `.env.local` with secrets (so the secret scan
has work to do), and the agents' own config files already present with other servers, settings
and comments (the kinds tests/sync/test_sync.py merges into: Claude Code's `.mcp.json`, VS Code's
`.vscode/mcp.json` with inputs, Zed's commented JSONC settings, Codex's TOML with profiles, plus
Cursor, Gemini CLI, opencode, Crush and Kilo Code files in the same spirit). Timed, median of
`--runs` (5):

- the CLI as a user runs it, `kbkit sync --root R` (wall time of the process): the first run
  (everything created or merged, pre-approvals included) and a no-op rerun;
- the peers on the same repository with the same server in their own source format, each writing
  every target it has: `rulesync generate --targets '*' --features mcp` (from `.rulesync/mcp.json`)
  and `ruler apply --no-backup` (from `.ruler/ruler.toml`; ruler also writes its instruction
  files, which it cannot skip), first run and rerun, with the number of config files each wrote
  that hold the `kb` server. They are installed from npm at pinned versions into `bench/.npm/`
  (`--no-peers` skips them; without npm they are skipped, saying why);
- the library call `kbkit.sync.planner.sync(load_settings(R))` in this process, for reference;
- start-up: `kbkit --version`, and the floor typer sets: a typer app with the same options as
  `kbkit sync` whose command does nothing, run with the same command line (typer coerces option
  values with pydantic, so any command that parses one imports pydantic);
- where the CLI's time goes: interpreter start-up, imports (`python -X importtime`), the two git
  subprocesses sync runs, and the functions of the library call (cProfile).

Every timed process is given as wall time and CPU time (user + system, its children included):
on a busy machine wall time grows with the load, CPU time much less, so the targets are judged
on CPU time and the load average is printed with the figures. kbkit's modules are byte-compiled
first, as pip does when it installs the wheel: run from a checkout with PYTHONDONTWRITEBYTECODE=1
each run would otherwise compile them from source again.

    .venv/bin/python -m bench.sync [--runs 5] [--no-peers]
"""

from __future__ import annotations

import compileall
import cProfile
import io
import json
import os
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._util import MachineWatch, ms, print_table, verdict
from kbkit.catalog.clients import CLIENTS
from kbkit.config import load_settings
from kbkit.sync import jsonc
from kbkit.sync.planner import sync
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_command
from tests.helpers.sync import CODEX_TOML, MCP_JSON, VSCODE_JSON, ZED_SETTINGS

PROJECT = Path(__file__).resolve().parents[1]
FIRST_TARGET = 0.300
NOOP_TARGET = 0.200
PEERS = {"rulesync": "rulesync@17.0.0", "ruler": "@intellectronica/ruler@0.3.44"}
"""The peers, pinned; installed with npm into bench/.npm (gitignored) on first use."""
PEER_DIR = Path(__file__).resolve().parent / ".npm"
CHANGES = {"created", "updated"}
PEER_ENV = {**os.environ, "NO_COLOR": "1"}

CURSOR_JSON = """{
  "mcpServers": {
    "linear": {"url": "https://mcp.linear.app/sse"},
    "sentry": {"command": "npx", "args": ["-y", "@sentry/mcp-server"], "env": {"SENTRY_HOST": "sentry.io"}}
  }
}
"""

GEMINI_JSON = """{
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  "contextFileName": "GEMINI.md",
  "mcpServers": {
    "github": {
      "httpUrl": "https://api.githubcopilot.com/mcp/",
      "headers": {"Authorization": "Bearer $GH_TOKEN"}
    }
  }
}
"""

OPENCODE_JSON = """{
  "$schema": "https://opencode.ai/config.json",
  "theme": "opencode",
  "model": "anthropic/claude-sonnet-4",
  "mcp": {
    "playwright": {"type": "local", "command": ["npx", "@playwright/mcp@latest"], "enabled": true}
  }
}
"""

CRUSH_JSON = """{
  "$schema": "https://charm.land/crush.json",
  "options": {"debug": false},
  "mcp": {"files": {"type": "stdio", "command": "npx", "args": ["@modelcontextprotocol/server-filesystem"]}}
}
"""

KILO_JSONC = """{
  // team defaults
  "model": "anthropic/claude-sonnet-4",
  "permission": {"bash": "ask"},
  "mcp": {"context7": {"type": "remote", "url": "https://mcp.context7.com/mcp"}}
}
"""

USER_FILES = {
    ".crush.json": CRUSH_JSON,
    ".kilo/kilo.json": KILO_JSONC,
    ".mcp.json": MCP_JSON,
    ".cursor/mcp.json": CURSOR_JSON,
    ".vscode/mcp.json": VSCODE_JSON,
    ".zed/settings.json": ZED_SETTINGS,
    ".codex/config.toml": CODEX_TOML,
    ".gemini/settings.json": GEMINI_JSON,
    "opencode.json": OPENCODE_JSON,
    ".gitignore": "# build output\n/dist/\n/build/\n__pycache__/\n*.pyc\nnode_modules/\n.DS_Store\n",
    ".env.local": "MCP_TOKEN=s3cr3t-token-value-0123456789\nHINDSIGHT_API_KEY=hsk_live_0123456789abcdef\n",
}

DOCS = {
    "guide/getting-started.md": "# Getting started\n\nInstall, index, search.\n",
    "adr/0001-storage.md": "# Use SQLite\n\nOne file, FTS5, WAL.\n",
    "runbooks/deploy.md": "# Deploy\n\nRoll out, then watch the dashboards.\n",
}


def make_repo(base: Path, clients: list[str] | None = None) -> Path:
    listed = ", ".join(f'"{name}"' for name in (CLIENTS if clients is None else clients))
    config = f'[kb]\npath = "docs"\n\n[server]\nname = "kb"\n\n[sync]\nclients = [{listed}]\n'
    root = make_project(base, DOCS, config=config)
    for rel, text in USER_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "kbkit.toml", "docs", ".gitignore"], check=True)
    return root


def make_repo_synced(base: Path) -> Path:
    root = make_repo(base)
    subprocess.run([*kbkit_command(), "sync", "--root", str(root)], capture_output=True, check=True)
    return root


def kbkit_version() -> str:
    from kbkit import __version__

    return __version__


CPU: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each timed process, by label: on a busy machine wall time
inflates with the load, while a process's own CPU time stays near what it costs on an idle one."""


def timed_cli(
    *args: str, label: str = "", cwd: Path | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd, env=PEER_ENV)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if label:
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        CPU.setdefault(label, []).append(used)
    return seconds, result


def repeat(label: str, argv: list[str], runs: int) -> list[float]:
    """Wall times of `runs` runs of `argv` (each must succeed); CPU times go to CPU[label]."""
    walls = []
    for _ in range(runs):
        seconds, result = timed_cli(*argv, label=label)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed:\n{result.stdout}{result.stderr}")
        walls.append(seconds)
    return walls


FLOOR_APP = """
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", is_eager=True)] = False,
    debug: Annotated[bool, typer.Option("--debug", envvar="KBKIT_DEBUG")] = False,
) -> None:
    pass


@app.command()
def sync(
    root: Annotated[Path | None, typer.Option("--root")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run")] = False,
    check: Annotated[bool, typer.Option("--check")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    only: Annotated[list[str] | None, typer.Option("--only")] = None,
    force: Annotated[bool, typer.Option("--force")] = False,
    adopt: Annotated[bool, typer.Option("--adopt")] = False,
) -> None:
    pass


@app.command()
def other() -> None:
    pass


app()
"""
"""The floor typer sets for `kbkit sync --root R`: the same options, parsed, and nothing done."""


def compile_bytecode(*trees: Path) -> None:
    """Byte-compile kbkit's modules in each source tree, as pip does when it installs the wheel."""
    for tree in trees:
        if not compileall.compile_dir(str(tree / "kbkit"), quiet=1):
            raise SystemExit(f"byte-compiling {tree / 'kbkit'} failed")


def actions(stdout: str) -> dict[str, str]:
    """Each client's action from the CLI's table (`client  path  action  -> next step`)."""
    found = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in CLIENTS:
            found[parts[0]] = parts[2]
    return found


def cli_runs(tmp: Path, runs: int) -> tuple[list[float], list[float]]:
    first, again = [], []
    for number in range(runs):
        root = make_repo(tmp / f"cli-{number}")
        seconds, result = timed_cli(*kbkit_command(), "sync", "--root", str(root), label="kbkit first")
        written = actions(result.stdout)
        if result.returncode != 0 or set(written) != set(CLIENTS) or set(written.values()) - CHANGES:
            output = result.stdout + result.stderr
            raise SystemExit(f"kbkit sync did not write all {len(CLIENTS)} clients:\n{output}")
        first.append(seconds)
        seconds, result = timed_cli(*kbkit_command(), "sync", "--root", str(root), label="kbkit rerun")
        if result.returncode != 0 or set(actions(result.stdout).values()) != {"unchanged"}:
            raise SystemExit(f"the rerun was not a no-op:\n{result.stdout}{result.stderr}")
        again.append(seconds)
    return first, again


def install_peers() -> dict[str, Path] | str:
    """The peers' commands, installed into bench/.npm once; or why they cannot run here."""
    bins = {name: PEER_DIR / "node_modules" / ".bin" / name for name in PEERS}
    if all(path.exists() for path in bins.values()):
        return bins
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH"
    options = ["--no-audit", "--no-fund", "--loglevel=error"]
    result = subprocess.run(
        [npm, "install", "--prefix", str(PEER_DIR), *options, *PEERS.values()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0 or not all(path.exists() for path in bins.values()):
        return f"npm install failed: {(result.stderr.strip().splitlines() or ['no output'])[-1]}"
    return bins


def peer_repo(base: Path, peer: str) -> Path:
    """The same repository as kbkit's runs, with the same server in the peer's own source format."""
    root = make_repo(base)
    command = [*kbkit_command()]
    args = [*command[1:], "serve", "--root", str(root)]
    if peer == "rulesync":
        source = {"mcpServers": {"kb": {"type": "stdio", "command": command[0], "args": args}}}
        (root / ".rulesync").mkdir()
        (root / ".rulesync/mcp.json").write_text(json.dumps(source, indent=2) + "\n")
    else:
        (root / ".ruler").mkdir()
        (root / ".ruler/AGENTS.md").write_text("# Team rules\n\nUse the kb server for project docs.\n")
        (root / ".ruler/ruler.toml").write_text(
            f"[mcp_servers.kb]\ncommand = {json.dumps(command[0])}\nargs = {json.dumps(args)}\n"
        )
    return root


def peer_command(peer: str, binary: Path) -> list[str]:
    if peer == "rulesync":
        return [str(binary), "generate", "--targets", "*", "--features", "mcp", "--silent"]
    return [str(binary), "apply", "--no-backup"]


def configs_with_kb(root: Path) -> int:
    """Config files (outside the peer's own source folder and git) that hold the kb server."""
    count = 0
    for path in root.rglob("*"):
        parts = path.relative_to(root).parts
        if not path.is_file() or parts[0] in (".git", ".rulesync", ".ruler", "docs", ".kbkit"):
            continue
        if path.suffix not in (".json", ".jsonc", ".toml", ".yaml", ".yml") or path.name == "kbkit.toml":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "serve" in text and str(root) in text:
            count += 1
    return count


PeerResult = tuple[list[float], list[float], int, str]
"""First runs, reruns, config files written with the kb server, and what the peer refused."""


def peer_runs(tmp: Path, runs: int, bins: dict[str, Path]) -> dict[str, PeerResult]:
    """Each peer's first runs and reruns, the config files it wrote, and what it refused: a peer
    that refuses one of the users' files is timed again with that file made plain JSON."""
    results = {}
    for peer, binary in bins.items():
        first, again, written, refused = [], [], 0, ""
        command = peer_command(peer, binary)
        for number in range(runs):
            root = peer_repo(tmp / f"{peer}-{number}", peer)
            seconds, done = timed_cli(*command, cwd=root, label=f"{peer} first")
            if done.returncode != 0:
                CPU[f"{peer} first"].pop()  # a refused attempt is not a timing
                refused = (done.stderr.strip() or done.stdout.strip()).splitlines()[0][:160]
                for rel in (rel for rel in USER_FILES if rel.endswith(".json")):
                    plain = json.dumps(jsonc.loads((root / rel).read_text()))
                    (root / rel).write_text(plain, encoding="utf-8")
                seconds, done = timed_cli(*command, cwd=root, label=f"{peer} first")
                if done.returncode != 0:
                    raise SystemExit(f"{peer} failed:\n{done.stdout}{done.stderr}")
            first.append(seconds)
            written = configs_with_kb(root)
            seconds, _ = timed_cli(*command, cwd=root, label=f"{peer} rerun")
            again.append(seconds)
        results[peer] = (first, again, written, refused)
    return results


def library_runs(tmp: Path, runs: int) -> tuple[list[float], list[float]]:
    first, again = [], []
    sync(load_settings(make_repo(tmp / "lib-warm")))  # imports and caches, once
    for number in range(runs):
        root = make_repo(tmp / f"lib-{number}")
        started = time.perf_counter()
        sync(load_settings(root))
        first.append(time.perf_counter() - started)
        started = time.perf_counter()
        report = sync(load_settings(root))
        again.append(time.perf_counter() - started)
        assert {o.action for o in report.outcomes} == {"unchanged"}, report.outcomes
    return first, again


def import_breakdown(root: Path, top: int) -> tuple[float, list[tuple[str, float]]]:
    """Total import time of a `kbkit sync` run and its costliest top-level imports (-X importtime)."""
    script = (
        "import sys; from kbkit.entry import main; "
        "sys.argv = ['kbkit', 'sync', '--root', sys.argv[1]]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    tops: dict[str, float] = {}
    pattern = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")
    for line in result.stderr.splitlines():
        match = pattern.match(line)
        if match and len(match.group(3)) == 1:  # a top-level import (one space of indent)
            name = match.group(4)
            tops[name] = tops.get(name, 0.0) + int(match.group(2)) / 1e6
    ranked = sorted(tops.items(), key=lambda item: item[1], reverse=True)
    return sum(tops.values()), ranked[:top]


def git_costs(root: Path, runs: int) -> list[float]:
    paths = "\n".join(client.path for client in CLIENTS.values()) + "\n"
    rev, check = [], []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True)
        rev.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(
            ["git", "-C", str(root), "check-ignore", "--stdin"], input=paths, capture_output=True, text=True
        )
        check.append(time.perf_counter() - started)
    return [statistics.median(rev), statistics.median(check)]


def profile_library(root: Path, top: int) -> list[list[str]]:
    profiler = cProfile.Profile()
    profiler.enable()
    sync(load_settings(root))
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    rows = []
    # `Stats.stats` is public in pstats but missing from its stubs; get_stats_profile() keys by bare
    # function name, which would merge same-named functions of different files.
    table = stats.stats  # type: ignore[attr-defined]
    entries = sorted(table.items(), key=lambda item: item[1][3], reverse=True)  # cumulative
    seen = 0
    for (filename, line, name), (_, calls, _, cumulative, _) in entries:
        if "kbkit" not in filename and name not in ("run", "read_text", "loads", "get_template"):
            continue
        where = filename[filename.index("kbkit/") :] if "kbkit/" in filename else Path(filename).name
        rows.append([f"{name} ({where}:{line})", str(calls), ms(cumulative)])
        seen += 1
        if seen == top:
            break
    return rows


def baseline_runs(tmp: Path, ref: str, runs: int) -> list[list[str]]:
    """The code of git `ref` with its own client list, this code with those clients, and this code
    with all of its clients, alternated run by run: what a change costs on the same machine."""
    tree = tmp / "baseline"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(PROJECT), "archive", ref], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    compile_bytecode(tree)
    listing = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); "
        + "from kbkit.catalog.clients import CLIENTS; print(*CLIENTS)"
    )
    theirs = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True)
    old_clients = [name for name in theirs.stdout.split() if name in CLIENTS]
    variants = {
        f"{ref}, its {len(theirs.stdout.split())} clients": (tree, theirs.stdout.split()),
        f"this code, the same {len(old_clients)} clients": (PROJECT, old_clients),
        f"this code, all {len(CLIENTS)} clients": (PROJECT, list(CLIENTS)),
    }
    for label in variants:
        CPU.pop(f"{label} first", None), CPU.pop(f"{label} rerun", None)
    for number in range(runs):
        for index, (label, (code, clients)) in enumerate(variants.items()):
            root = make_repo(tmp / f"baseline-{index}-{number}", clients)
            run = (
                f"import sys; sys.path.insert(0, {str(code)!r}); "
                f"sys.argv = ['kbkit', 'sync', '--root', {str(root)!r}]; from kbkit.entry import main; main()"
            )
            for kind in ("first", "rerun"):
                _, done = timed_cli(sys.executable, "-c", run, label=f"{label} {kind}")
                if done.returncode != 0:
                    raise SystemExit(f"{label}: kbkit sync failed:\n{done.stderr}")
    return [
        [label, ms(statistics.median(CPU[f"{label} first"])), ms(statistics.median(CPU[f"{label} rerun"]))]
        for label in variants
    ]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (default 5)")
    parser.add_argument("--top", type=int, default=10, help="rows in the import and profile breakdowns")
    parser.add_argument("--no-peers", action="store_true", help="skip rulesync and ruler")
    parser.add_argument("--baseline", metavar="REF", help="also time the code of this git ref (e.g. main)")
    args = parser.parse_args(argv)
    bins = "--no-peers given" if args.no_peers else install_peers()
    compile_bytecode(PROJECT)
    machine = MachineWatch()
    load_before = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="kbkit-sync-bench-") as tmp_name:
        tmp = Path(tmp_name)
        cli_first, cli_again = cli_runs(tmp, args.runs)
        kbkit_written = configs_with_kb(make_repo_synced(tmp / "count"))
        peers = peer_runs(tmp, args.runs, bins) if isinstance(bins, dict) else {}
        lib_first, lib_again = library_runs(tmp, args.runs)
        baseline = baseline_runs(tmp, args.baseline, args.runs) if args.baseline else []

        probe = make_repo(tmp / "probe")
        floor_app = tmp / "typer_floor.py"
        floor_app.write_text(FLOOR_APP, encoding="utf-8")
        walls = {
            "version": repeat("version", [*kbkit_command(), "--version"], args.runs),
            "floor": repeat(
                "floor", [sys.executable, str(floor_app), "sync", "--root", str(probe)], args.runs
            ),
            "bare": repeat("bare", [sys.executable, "-c", "pass"], args.runs),
            "imports": repeat(
                "imports", [sys.executable, "-c", "import kbkit.cli, kbkit.sync.planner"], args.runs
            ),
        }
        import_total, import_top = import_breakdown(probe, args.top)
        git_rev, git_check = git_costs(probe, args.runs)
        profile_rows = profile_library(make_repo(tmp / "profile"), args.top)
    load_after = os.getloadavg()

    def cpu(label: str) -> str:
        return ms(statistics.median(CPU[label])) if CPU.get(label) else ""

    def cpu_within(label: str, target: float) -> str:
        return verdict(statistics.median(CPU[label]) <= target)

    def spread(values: list[float]) -> str:
        return f"{ms(min(values))} / {ms(max(values))}"

    first, again = statistics.median(cli_first), statistics.median(cli_again)
    n = len(CLIENTS)
    timed = [
        (f"CLI `kbkit sync`, first run ({n} clients)", cli_first, "kbkit first", "<= 300 ms", FIRST_TARGET),
        ("CLI `kbkit sync`, no-op rerun", cli_again, "kbkit rerun", "<= 200 ms", NOOP_TARGET),
        ("CLI `kbkit --version`", walls["version"], "version", "", None),
        ("typer alone: the same options parsed, no work (floor)", walls["floor"], "floor", "", None),
        ("interpreter start-up (`python -c pass`)", walls["bare"], "bare", "", None),
    ]
    floor_cpu = statistics.median(CPU["floor"])

    def per_floor(label: str) -> str:
        return f"{statistics.median(CPU[label]) / floor_cpu:.2f}"

    rows = [
        [label, ms(statistics.median(values)), spread(values), cpu(key), per_floor(key), target]
        + [cpu_within(key, limit) if limit is not None else ""]
        for label, values, key, target, limit in timed
    ]
    for label, values in (("first run", lib_first), ("no-op rerun", lib_again)):
        wall = ms(statistics.median(values))
        rows.append([f"library `sync(load_settings(root))`, {label}", wall, spread(values), "", "", "", ""])
    print_table(
        [
            "measure",
            "wall, median",
            "wall, min / max",
            "CPU, median",
            "CPU / typer floor",
            "target",
            "status (on CPU time)",
        ],
        rows,
        title=f"kbkit sync, {n} clients, fresh git repo with the users' own files (median of {args.runs})",
    )

    rows = [
        [
            f"kbkit {kbkit_version()}: `kbkit sync`",
            str(kbkit_written),
            ms(first),
            ms(again),
            cpu("kbkit first"),
            cpu("kbkit rerun"),
        ]
    ]
    refusals = []
    for peer, (peer_first, peer_again, written, refused) in peers.items():
        rows.append(
            [
                f"{PEERS[peer]}: `{' '.join(peer_command(peer, Path(peer))[1:])}`",
                str(written),
                ms(statistics.median(peer_first)),
                ms(statistics.median(peer_again)),
                cpu(f"{peer} first"),
                cpu(f"{peer} rerun"),
            ]
        )
        if refused:
            refusals.append(f"{peer} refused the users' files ({refused}); timed with comments stripped")
    print_table(
        [
            "tool, command",
            "agent config files written with the kb server",
            "first run",
            "rerun",
            "first run, CPU",
            "rerun, CPU",
        ],
        rows,
        title=f"side by side, same repository and server, CLI wall time and CPU time (user + system), "
        f"median of {args.runs}" + ("" if peers else f" (peers skipped: {bins})"),
    )
    for line in refusals:
        print(f"\n{line}")
    print_table(
        ["part of a CLI run", "wall", "CPU"],
        [
            ["interpreter start-up (`python -c pass`)", ms(statistics.median(walls["bare"])), cpu("bare")],
            [
                "start-up + `import kbkit.cli, kbkit.sync.planner`",
                ms(statistics.median(walls["imports"])),
                cpu("imports"),
            ],
            [
                "typer alone, the same command line parsed (its pydantic coercion included)",
                ms(statistics.median(walls["floor"])),
                cpu("floor"),
            ],
            ["imports of a whole `kbkit sync` run (-X importtime, top level, summed)", ms(import_total), ""],
            ["`git rev-parse --is-inside-work-tree` (once per run)", ms(git_rev), ""],
            [f"`git check-ignore --stdin` ({n} paths, once per writing run)", ms(git_check), ""],
            ["library sync, first run (above)", ms(statistics.median(lib_first)), ""],
        ],
        title="where a CLI run's time goes",
    )
    print_table(
        ["top-level import", "cumulative"],
        [[name, ms(seconds)] for name, seconds in import_top],
        title="costliest imports of `kbkit sync` (python -X importtime)",
    )
    print_table(
        ["function (cProfile, library first run)", "calls", "cumulative"],
        profile_rows,
        title="library sync, first run, by cumulative time",
    )
    if baseline:
        print_table(
            ["code and clients (a fresh repo each run, alternated)", "first run, CPU", "rerun, CPU"],
            baseline,
            title=f"against {args.baseline}: CPU time (user + system) of `kbkit sync`, median of {args.runs}",
        )
    print(f"\nmachine: {machine.note()}")
    print(
        "load average (1, 5, 15 min): "
        f"{' '.join(f'{v:.2f}' for v in load_before)} at the start, "
        f"{' '.join(f'{v:.2f}' for v in load_after)} at the end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
