"""kbkit as users get it: the sdist and the wheel hold everything kbkit reads at run time, every
imported distribution is declared, and the wheel, installed into a fresh virtualenv (not editable),
runs the whole user path from a scratch git project with an environment that knows nothing of
this checkout: no PYTHONPATH, no development virtualenv on PATH, its own HOME and working folder.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from kbkit import DISTRIBUTION, __version__
from kbkit.runtime import OPTIONAL, REQUIRED, SEMANTIC
from kbkit.shipped import IN_REPOSITORY
from tests.helpers.paths import REPO
from tests.peers.required import require_modules

# one worker builds the sdist, the wheel and the virtualenv, once:
pytestmark = pytest.mark.xdist_group("wheel")

PACKAGE = REPO / "kbkit"
DOCS = {
    "runbooks/deploy.md": "# Deploying\n\nRoll the service out with the blue green strategy.\n",
    "guide.md": "# Getting started\n\nRead the runbooks before the first deploy.\n",
}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:  # noqa: ANN003
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path
    """Built from the sdist, as an installer that gets the sdist builds it."""
    tree_wheel: Path
    """Built straight from the checkout, as `pipx install .` builds it."""


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--no-isolation"]
    _run([*build, "--outdir", str(out / "sdist"), str(REPO)])
    _run([*build, "--wheel", "--outdir", str(out / "tree"), str(REPO)])
    (sdist,) = (out / "sdist").glob("*.tar.gz")
    (wheel,) = (out / "sdist").glob("*.whl")
    (tree_wheel,) = (out / "tree").glob("*.whl")
    return Dists(sdist, wheel, tree_wheel)


@pytest.fixture(scope="session")
def venv(dists: Dists, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel and what it declares, from the run's wheelhouse (which
    pip resolved from the indexes)."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    python = str(root / "bin" / "python")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--quiet",
            "--no-compile",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            str(dists.wheel),
        ]
    )
    return root


@pytest.mark.wheel
def test_the_wheel_holds_every_module_the_shipped_files_and_the_license(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        for path in _files(PACKAGE):
            assert path.relative_to(REPO).as_posix() in names
        for name, in_repo in IN_REPOSITORY.items():
            source = REPO / in_repo
            for path in _files(source) if source.is_dir() else [source]:
                inside = f"kbkit/_data/{name}" + (
                    f"/{path.relative_to(source).as_posix()}" if source.is_dir() else ""
                )
                assert wheel.read(inside) == path.read_bytes(), inside
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        assert wheel.read(f"{info}/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
        metadata = wheel.read(f"{info}/METADATA").decode()
        assert f"\nName: {DISTRIBUTION}\n" in metadata and "\nLicense-Expression: MIT\n" in metadata
        assert "kbkit = kbkit.entry:main" in wheel.read(f"{info}/entry_points.txt").decode()
    assert (
        "MIT License" in (REPO / "LICENSE").read_text()
        and "kbkit contributors" in (REPO / "LICENSE").read_text()
    )


@pytest.mark.wheel
def test_the_wheel_built_from_the_checkout_equals_the_one_built_from_the_sdist(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as a, zipfile.ZipFile(dists.tree_wheel) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())


@pytest.mark.wheel
def test_the_sdist_holds_the_sources_templates_skills_schema_and_license(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    wanted = [*_files(PACKAGE), *_files(REPO / "templates"), *_files(REPO / "skill-sources")]
    wanted += [REPO / p for p in ("docs/doctor.schema.json", "LICENSE", "README.md", "pyproject.toml")]
    missing = [p.relative_to(REPO).as_posix() for p in wanted if p.relative_to(REPO).as_posix() not in names]
    assert not missing


def _third_party_imports() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != "kbkit"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_distribution_is_declared_and_checked_at_start() -> None:
    require_modules(*SEMANTIC, what="the semantic extra")  # whose modules' distributions are checked too
    imported = _third_party_imports()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())

    def names(requirements: list[str]) -> set[str]:
        return {_normalized(re.match(r"[A-Za-z0-9._-]+", req)[0]) for req in requirements}

    declared = names(pyproject["project"]["dependencies"])
    extra = names(pyproject["project"]["optional-dependencies"]["semantic"])
    providers = packages_distributions()
    undeclared = {
        m: providers.get(m)
        for m in imported
        if not {_normalized(d) for d in providers.get(m, [])} & (extra if m in SEMANTIC else declared)
    }
    assert not undeclared, (
        f"imported by kbkit but not in its dependencies (or the semantic extra): {undeclared}"
    )
    assert imported == set(REQUIRED) | set(OPTIONAL) | set(SEMANTIC), (
        "kbkit/runtime.py REQUIRED must name every imported module"
    )


def test_nothing_tells_users_to_install_the_unrelated_kbkit_project() -> None:
    texts = {p: p.read_text(encoding="utf-8") for p in [*PACKAGE.rglob("*.py"), REPO / "README.md"]}
    wrong = [str(p) for p, text in texts.items() if re.search(r"pip install kbkit(?!-)", text)]
    assert not wrong
    assert f"pipx install {DISTRIBUTION}" in texts[REPO / "README.md"]


def _user_env(venv: Path, home: Path) -> dict[str, str]:
    """What a new user's shell or an agent has: the tool's bin folder on PATH (as pipx and uv put it
    there) and the system's tools, nothing of this checkout or of the test's environment."""
    return {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


async def _initialize_and_search(entry: dict, cwd: Path, env: dict[str, str], log: Path) -> tuple[str, dict]:
    params = StdioServerParameters(
        command=entry["command"], args=entry.get("args", []), env={**env, **entry.get("env", {})}, cwd=cwd
    )
    with open(log, "w", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode="legacy", cache=None, read_timeout_seconds=30
        ) as client:
            result = await client.call_tool("search", {"query": "blue green"})
            assert not result.is_error, result.content
            assert client.server_info is not None
            return client.server_info.version, result.structured_content


@pytest.mark.wheel
@pytest.mark.timeout(900)  # pip resolving into a fresh virtualenv on a loaded machine
def test_the_installed_wheel_runs_the_user_path_from_a_scratch_git_project(
    dists: Dists, venv: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = _user_env(venv, home)
    kbkit = str(venv / "bin" / "kbkit")

    def run(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [kbkit, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode in ok, (
            f"kbkit {' '.join(args)} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
        )
        assert "Traceback" not in result.stderr
        return result

    # The installed package, not this checkout, is what runs, and it finds its shipped files inside itself.
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import kbkit, kbkit.shipped as s; print(kbkit.__file__); print(s.shipped('skills'))",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where
    shipped_skills = Path(where[1])
    assert shipped_skills.parts[-2:] == ("_data", "skills")

    assert run("--version").stdout.strip() == f"kbkit {__version__}"
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=env)
    run("init")
    for rel, text in DOCS.items():
        (project / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / "docs" / rel).write_text(text, encoding="utf-8")
    assert "2 documents" in run("index").stdout
    hits = json.loads(run("search", "blue green", "--json").stdout)["results"]
    assert hits[0]["path"] == "runbooks/deploy.md"

    run("sync")
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["kb"]
    assert entry["command"] == kbkit  # agents start the installed kbkit by absolute path
    run("sync", "--check")

    # A skill kbkit ships, taken from the installed package into the project and pinned there.
    shutil.copytree(shipped_skills / "using-the-kb", project / "skill-sources" / "using-the-kb")
    run("skills", "add", "./skill-sources/using-the-kb")
    locked = json.loads((project / "skills-lock.json").read_text())["skills"]["using-the-kb"]
    ours = json.loads((REPO / "skills-lock.json").read_text())["skills"]["using-the-kb"]
    assert locked["computedHash"] == ours["computedHash"]  # shipped byte for byte
    shutil.rmtree(project / ".agents" / "skills")
    run("skills", "check", ok=(1,))
    run("skills", "install")
    assert (project / ".agents" / "skills" / "using-the-kb" / "SKILL.md").is_file()
    run("skills", "check")

    with zipfile.ZipFile(dists.wheel) as wheel:
        schema = json.loads(wheel.read("kbkit/_data/doctor.schema.json"))
    report = json.loads(run("doctor", "--json").stdout)
    jsonschema.validate(report, schema)
    assert report["status"] == "ok", report

    # The entry `kbkit sync` wrote, launched as the agent launches it, answers initialize and a search.
    version, found = anyio.run(_initialize_and_search, entry, project, env, tmp_path / "serve.log")
    assert version == __version__
    assert found["results"][0]["path"] == "runbooks/deploy.md"
