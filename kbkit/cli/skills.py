"""`kbkit skills ...`: ship, pin and restore agent skills."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer

from kbkit.cli.common import RootOption
from kbkit.errors import ExitCode

if TYPE_CHECKING:
    from kbkit.config import Settings
    from kbkit.skills.install import SkillsReport

app = typer.Typer(help="Ship, pin and restore agent skills (skills-lock.json).", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON report instead of text.")]
GlobalOption = Annotated[
    bool,
    typer.Option(
        "--global", "-g", help="The user's own skill folders (~/.agents/skills, ~/.claude/skills, ...)."
    ),
]


def _settings(root: Path | None) -> Settings:
    from kbkit.config import load_settings

    return load_settings(root)


def _print_json(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))


def _print_report(report: SkillsReport, as_json: bool = False) -> None:
    if as_json:
        _print_json(report.to_json())
        return
    for item in report.offered:
        typer.echo(f"{item['name']}  {item['path']}  {item['description']}")
    for lines, form, err in (
        (report.installed, "installed {}", False),
        (report.removed, "removed {}", False),
        (report.changes, "updated {}", False),
        (report.backups, "moved aside to {}", False),
        (
            report.unlocked,
            "left alone: .agents/skills/{} is not in skills-lock.json (--prune moves it aside)",
            True,
        ),
        (report.skipped, "skipped {}", True),
        (report.warnings, "warning: {}", True),
        (report.refused, "refused: {}", True),
        (report.problems, "problem: {}", True),
    ):
        for line in lines:
            typer.echo(form.format(line), err=err)


def _run(call: Callable[[], SkillsReport], as_json: bool = False, *, changes: Settings | None = None) -> None:
    """Run a skills operation and print its report; something refused or failed exits with the
    code its error means (a changed source 2, git missing 3, a fetch that failed 4).

    `changes`: the operation changes the project's skill folders, so the managed .gitignore block
    (kbkit/sync/gitignore.py, above the skills kit) is rewritten for them."""
    report = call()
    if changes is not None:
        from kbkit.sync.gitignore import refresh

        refresh(changes)
    _print_report(report, as_json)
    if report.exit_code != ExitCode.OK:
        raise typer.Exit(code=report.exit_code)


class SkillRow(TypedDict):
    """One skill in `kbkit skills list --json` (keys spelled as in skills-lock.json)."""

    name: str
    sourceType: str
    source: str
    ref: str | None
    computedHash: str
    state: str


@app.command("list")
def skills_list(root: RootOption = None, global_: GlobalOption = False, as_json: JsonOption = False) -> None:
    """The locked skills, their sources and whether each installed copy verifies.

    With --global: the skills of the user's own lock (the one `npx skills add -g` keeps), then skill
    folders in ~/.agents/skills that no lock records."""
    if global_:
        _list_user(root, as_json)
        return
    from kbkit.skills.install import installed_problem
    from kbkit.skills.lock import read_lock

    settings = _settings(root)
    lock = read_lock(settings.root)
    rows: list[SkillRow] = [
        {
            "name": name,
            "sourceType": entry.source_type,
            "source": entry.source,
            "ref": entry.ref,
            "computedHash": entry.computed_hash,
            "state": installed_problem(settings.root, name, entry) or "installed and verified",
        }
        for name, entry in lock.entries().items()
    ]
    unusable = [str(item) for item in lock.unusable()]
    if as_json:
        _print_json({"version": 1, "skills": rows, "skipped": unusable})
        return
    for row in rows:
        where = row["source"] + (f"@{row['ref'][:12]}" if row["ref"] else "")
        typer.echo(f"{row['name']}  {row['sourceType']}:{where}  {row['computedHash'][:12]}  {row['state']}")
    for line in unusable:
        typer.echo(f"skipped {line}", err=True)


def _list_user(root: Path | None, as_json: bool) -> None:
    from kbkit.skills.user import list_user, user_settings

    rows, unusable = list_user(user_settings(root))
    if as_json:
        _print_json({"version": 1, "scope": "global", "skills": rows, "skipped": unusable})
        return
    for row in rows:
        where = f"{row['sourceType']}:{row['source']}" if row["source"] else "unrecorded"
        where += f"#{row['ref']}" if row["ref"] else ""
        typer.echo(f"{row['name']}  {where}  {(row['skillFolderHash'] or '-')[:12]}  {row['state']}")
    for line in unusable:
        typer.echo(f"skipped {line}", err=True)


@app.command("add")
def skills_add(
    source: Annotated[
        str,
        typer.Argument(
            help="./folder, owner/repo[/path], https://github.com/owner/repo, or a git URL; @REF picks a ref."
        ),
    ],
    skill: Annotated[
        list[str] | None, typer.Option("--skill", help="A skill to add, by name (repeatable).")
    ] = None,
    all_skills: Annotated[bool, typer.Option("--all", help="Add every skill the source offers.")] = False,
    list_only: Annotated[
        bool, typer.Option("--list", help="List what the source offers; add nothing.")
    ] = False,
    ref: Annotated[str | None, typer.Option("--ref", help="A branch, tag or commit (git sources).")] = None,
    root: RootOption = None,
    global_: GlobalOption = False,
    as_json: JsonOption = False,
) -> None:
    """Pin skills from a source in skills-lock.json (at the commit fetched) and install them.

    With --global: install them into the user's own skill folders and record them in the user's
    lock, as `npx skills add -g` does (a relative ./folder is read from the working folder); the
    project is not touched."""
    if global_:
        from kbkit.skills.user import add_user, user_settings

        settings = user_settings(root)
        base = Path.cwd()
        _run(
            lambda: add_user(
                settings,
                source,
                base=base,
                skills=skill or (),
                all_skills=all_skills,
                ref=ref,
                list_only=list_only,
            ),
            as_json,
        )
        return
    from kbkit.skills.install import add

    settings = _settings(root)
    _run(
        lambda: add(
            settings,
            source,
            skills=skill or (),
            all_skills=all_skills,
            ref=ref,
            list_only=list_only,
        ),
        as_json,
        changes=None if list_only else settings,
    )


@app.command("remove")
def skills_remove(
    name: str, root: RootOption = None, global_: GlobalOption = False, as_json: JsonOption = False
) -> None:
    """Unpin a skill and remove its installed copies (changed copies are moved to .kbkit/backups).

    With --global: remove a skill the user's lock records from the user's folders; a copy changed
    since it was installed stops the removal (nothing is deleted)."""
    if global_:
        from kbkit.skills.user import remove_user, user_settings

        user = user_settings(root)
        _run(lambda: remove_user(user, name), as_json)
        return
    from kbkit.skills.install import remove

    settings = _settings(root)
    _run(lambda: remove(settings, name), as_json, changes=settings)


@app.command("install")
def skills_install(
    root: RootOption = None,
    update: Annotated[
        bool, typer.Option("--update", help="Accept sources that no longer match the lock.")
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Move skill folders the lock does not name to .kbkit/backups.")
    ] = False,
    global_: GlobalOption = False,
    as_json: JsonOption = False,
) -> None:
    """Restore every locked skill into .agents/skills and each configured agent's folder, verifying hashes."""
    from kbkit.skills.install import install

    settings = _settings(root)
    _run(
        lambda: install(settings, update=update, prune=prune, global_=global_),
        as_json,
        changes=None if global_ else settings,
    )


@app.command("check")
def skills_check(root: RootOption = None, global_: GlobalOption = False, as_json: JsonOption = False) -> None:
    """Read-only and offline: missing installs, changed copies, changed local sources. Exit 1 on any.

    With --global: the project's locked skills in the user's folders, and every skill the user's
    lock records (what `npx skills add -g` or `kbkit skills add --global` installed)."""
    from kbkit.skills.install import check

    if global_:
        from kbkit.skills.user import check_user, user_settings

        report = check_user(user_settings(root))
    else:
        report = check(_settings(root))
    _print_report(report, as_json)
    if report.problems:
        raise typer.Exit(code=ExitCode.CHECK_FAILED)
    if not as_json:
        typer.echo("skills: all installed and verified")


@app.command("update")
def skills_update(
    name: Annotated[str | None, typer.Argument()] = None, root: RootOption = None, as_json: JsonOption = False
) -> None:
    """Fetch each source again (its branch or tag, else the default branch), repin and reinstall."""
    from kbkit.skills.install import update

    settings = _settings(root)
    _run(lambda: update(settings, name), as_json, changes=settings)
    if not as_json:
        typer.echo("skills: update done")


@app.command("validate")
def skills_validate(
    path: Annotated[Path, typer.Argument(help="A skill folder, or a folder of skills.")] = Path("."),
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Keys outside the spec are errors, as the reference validator has it."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check SKILL.md folders against the Agent Skills spec; exit 1 when any is invalid."""
    from kbkit.skills.validate import validate_path

    results = validate_path(path, strict=strict)
    if as_json:
        _print_json({"version": 1, "skills": [r.to_json() for r in results]})
    else:
        for result in results:
            typer.echo(f"{'ok  ' if result.valid else 'FAIL'}  {result.path}")
            for line in result.errors:
                typer.echo(f"      error: {line}", err=True)
            for line in result.warnings:
                typer.echo(f"      warning: {line}", err=True)
    if not all(result.valid for result in results):
        raise typer.Exit(code=ExitCode.CHECK_FAILED)


@app.command("agents")
def skills_agents(as_json: JsonOption = False) -> None:
    """Every agent [skills] agents accepts, with its npx skills aliases and skill folders."""
    from kbkit.catalog.agents import AGENTS

    rows = [
        {
            "id": a.id,
            "title": a.title,
            "aliases": list(a.aliases),
            "project": a.project_dir,
            "global": a.global_dir,
        }
        for a in AGENTS.values()
    ]
    if as_json:
        _print_json({"version": 1, "agents": rows})
        return
    for row in rows:
        aliases = f" (also {', '.join(row['aliases'])})" if row["aliases"] else ""
        typer.echo(f"{row['id']}{aliases}  {row['project'] or '-'}  {row['global'] or '-'}")


@app.command("migrate")
def skills_migrate(root: RootOption = None) -> None:
    """Move local skill sources out of skills/ (an agent folder for npx skills) into skill-sources/."""
    from kbkit.skills.install import migrate

    _run(lambda: migrate(_settings(root)))
