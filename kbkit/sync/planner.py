"""`kbkit sync`: plan every client's change, refuse before writing anything, then write atomically.

The plan is computed in full first (parse every file, render every entry, scan for secrets,
check the paths), so a refusal leaves every file as it was. Writing, `--dry-run` and `--check`
are three views of the same plan.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbkit.catalog.clients import CLIENTS, PERSONAL_TOKEN_VAR, SIGN_IN, TOKEN_VAR, Client, canonical
from kbkit.config import CONFIG_FILE, ENV_FILE, Settings, read_env_file
from kbkit.errors import ConfigError, SyncRefused
from kbkit.fsutil import atomic_write_text, read_text_file
from kbkit.sync import preapprove
from kbkit.sync.adopt import take_out_of_git
from kbkit.sync.gitignore import (
    NOT_A_WORK_TREE,
    block_is_current,
    in_git_work_tree,
    managed_entries,
    not_ignored,
    update_gitignore,
)
from kbkit.sync.merge import ConfigText
from kbkit.sync.preapprove import approved_tools
from kbkit.sync.render import EntrySource, kbkit_command, render_entry
from kbkit.sync.servers import TeamEntry, parse_owner, team_entries
from kbkit.sync.state import Owned, entry_hash, load_state, save_state

STATE_FILE = "sync-state.json"
SECRET_MIN_LENGTH = 8
"""Values shorter than this in .env.local (flags like MCP_ALLOW_ANONYMOUS=1) are not treated as secrets."""
RERUN = "then rerun kbkit sync"


PREAPPROVAL = "tool pre-approval"
"""What a sync line about a pre-approval says it is (the kb tools allowed without asking)."""


@dataclass
class Outcome:
    client: str
    path: str
    action: str
    """created | updated | unchanged | removed | skipped | conflict"""
    reason: str | None = None
    next_step: str | None = None
    server: str | None = None
    """A team server's name, for its entry's outcome (None: the kb entry, a pre-approval)."""
    what: str | None = None
    """What the line is about when it is not an entry: "tool pre-approval"."""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class SyncReport:
    outcomes: list[Outcome] = field(default_factory=list)
    gitignore: str = "unchanged"
    """unchanged | updated (or, in a check or dry run, stale)"""
    problems: list[str] = field(default_factory=list)
    """What `--check` fails on in the client configs and the .gitignore block."""
    skill_problems: list[str] = field(default_factory=list)
    """What `--check` fails on in the installed skills (what `kbkit skills check` reports)."""
    notes: list[str] = field(default_factory=list)
    """What the user must know about the entries written (one line each)."""
    caveats: list[str] = field(default_factory=list)
    """One line per agent that needs a step in the agent itself before the kb server works there."""
    adopted: list[str] = field(default_factory=list)
    """Client files that `--adopt` took out of git (`git rm --cached`)."""
    diffs: dict[str, str] = field(default_factory=dict)

    @property
    def failures(self) -> list[str]:
        """Every line `--check` fails on; the skills' ones say so."""
        return self.problems + [f"skills: {problem}" for problem in self.skill_problems]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "clients": [outcome.to_dict() for outcome in self.outcomes],
            "gitignore": self.gitignore,
            "problems": self.failures,
            "notes": self.notes,
            "caveats": self.caveats,
            "adopted": self.adopted,
        }


@dataclass
class _File:
    path: str
    before: str | None
    config: ConfigText


def sync(
    settings: Settings,
    *,
    only: list[str] | None = None,
    force: bool = False,
    mode: str = "write",
    adopt: bool = False,
    confirm: Callable[[str], bool] | None = None,
) -> SyncReport:
    """Bring every selected client's `kb` entry (and pre-approval) in line with kbkit.toml.

    `mode`: write | dry-run | check. `adopt`: a client file that git tracks is taken out of git
    (`git rm --cached`, the file stays) instead of refused; `confirm`, when given, is asked with
    the plan instead (see `kbkit.sync.adopt`)."""
    root = settings.root
    state_path = settings.state_dir / STATE_FILE
    owned = {canonical(name): item for name, item in load_state(state_path).items()}  # a renamed row's old id
    selected = _selected(settings, only)
    tools = approved_tools(settings)
    source = EntrySource(
        settings.server_name,
        root,
        kbkit_command(),
        settings.sync_remote_url or None,
        settings.sync.remote_transport,
        approved=tools,
        remote_auth=settings.sync.remote_auth,
    )
    files: dict[str, _File] = {}
    report = SyncReport()
    new_owned = dict(owned)

    def file_for(path: str, format: str) -> _File:
        if path not in files:
            target = _safe_target(root, path)
            before = read_text_file(target, fix=RERUN)
            files[path] = _File(path, before, ConfigText(format, before, path))
        return files[path]

    key_of = {name: (*CLIENTS[name].root_key, settings.server_name) for name in selected}
    rendered = {name: render_entry(CLIENTS[name], source) for name in selected}
    team = team_entries(settings, source.command, only)
    own_paths = (str(root), *(part for part in source.command if Path(part).is_absolute()))
    _refuse_secrets(settings, {**rendered, **{t.owner: t.entry for t in team}}, own_paths)
    placed: dict[tuple[str, tuple[str, ...]], Outcome] = {}
    for name in selected:
        client = CLIENTS[name]
        handle = file_for(client.path, client.format)
        previous = owned.get(name)
        if previous is not None and (previous.path, previous.key) != (client.path, key_of[name]):
            _retract(name, previous, file_for(previous.path, client.format), force, report, new_owned)
        outcome = _place(name, client, key_of[name], rendered[name], handle, previous, force, new_owned)
        shared = placed.setdefault((client.path, key_of[name]), outcome)
        if shared is not outcome and outcome.action == "unchanged":  # one entry, two agents (.mcp.json)
            outcome.action, outcome.next_step = shared.action, shared.next_step and _next_step(client)
        report.outcomes.append(outcome)

    _place_team(team, owned, file_for, force, report, new_owned, only)

    team_clients = [t.client for t in team]
    wanted = {grant.owner: grant for grant in preapprove.grants(settings, selected, team_clients)}
    for owner, grant in wanted.items():
        previous = owned.get(owner)
        if previous is not None and (previous.path, previous.key) != (grant.path, grant.key):
            fmt = preapprove.recorded_format(previous)
            _retract_grant(owner, previous, file_for(previous.path, fmt), force, report, new_owned)
            previous = None
        handle = file_for(grant.path, grant.format)
        report.outcomes.append(_place_grant(grant, handle, previous, force, new_owned))

    for owner, previous in owned.items():
        agent = preapprove.client_of(owner)
        if agent is None or owner in wanted or (only is not None and agent not in only):
            continue
        fmt = preapprove.recorded_format(previous)
        _retract_grant(owner, previous, file_for(previous.path, fmt), force, report, new_owned)

    report.notes = (
        _direct_http_notes(source, selected) + _sign_in_notes(source, selected) + _trust_notes(settings)
    )
    if only is None:
        claimed = set(placed)
        for name, previous in owned.items():
            if name not in selected and name in CLIENTS:
                if (previous.path, previous.key) in claimed:  # another agent's entry now: keep it
                    new_owned.pop(name, None)
                    continue
                handle = file_for(previous.path, CLIENTS[name].format)
                _retract(name, previous, handle, force, report, new_owned)

    changed = {path: f for path, f in files.items() if f.config.text != (f.before or "")}
    for outcome in report.outcomes:
        if outcome.action in ("created", "updated") and outcome.path not in changed:
            outcome.action = "unchanged"
            outcome.next_step = None
    ignore_entries = managed_entries(settings)
    if not block_is_current(root, ignore_entries):
        report.gitignore = "stale" if mode != "write" else "updated"
    for outcome in report.outcomes:
        if outcome.action == "unchanged" and not (root / outcome.path).exists():
            outcome.action = "created"  # an output deleted by hand
    report.diffs = {
        path: "".join(
            difflib.unified_diff(
                (f.before or "").splitlines(keepends=True),
                f.config.text.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
        )
        for path, f in changed.items()
    }

    report.caveats = caveats(settings, selected, source, tools) + _team_caveats(team)
    outputs = list(
        dict.fromkeys(
            [CLIENTS[n].path for n in selected] + [t.path for t in team] + [g.path for g in wanted.values()]
        )
    )
    git = in_git_work_tree(root)
    if not git:
        report.notes.append(NOT_A_WORK_TREE)
    if mode == "check":
        from kbkit.skills.install import check as check_skills  # only --check needs the skills kit

        report.problems = _problems(report, settings, outputs, git)
        report.skill_problems = check_skills(settings).problems
        return report
    if mode == "dry-run":
        return report

    gitignore = root / ".gitignore"
    gitignore_before = read_text_file(gitignore, fix=RERUN)
    if report.gitignore == "updated":
        update_gitignore(root, ignore_entries)
    if git:
        try:
            exposed = not_ignored(root, outputs)
            report.adopted = take_out_of_git(root, exposed, adopt=adopt, confirm=confirm)
        except SyncRefused:
            _restore(gitignore, gitignore_before)  # a refusal writes nothing, the block included
            raise
    for path, f in changed.items():
        target = root / path
        if f.config.text == "":  # kbkit created it and its entry was the last thing in it
            target.unlink(missing_ok=True)
        else:
            atomic_write_text(target, f.config.text)
    save_state(state_path, new_owned)
    return report


def _place(
    name: str,
    client: Client,
    key: tuple[str, ...],
    desired: dict[str, Any],
    handle: _File,
    previous: Owned | None,
    force: bool,
    new_owned: dict[str, Owned],
    server: str | None = None,
) -> Outcome:
    """Put one entry (kb's, or team server `server`'s) in place; `name` is its owner in the state."""
    path = handle.path
    current = handle.config.get(key)
    mine = previous is not None and previous.key == key and previous.path == path
    outcome = Outcome(client.name, path, "unchanged", server=server)
    if current is not None and current != desired and not force:
        if previous is None or not mine:
            outcome.action, outcome.reason = (
                "conflict",
                (f"an entry named {key[-1]!r} that kbkit did not write is in the way"),
            )
            outcome.next_step = "rename or remove that entry, or rerun with --force to replace it"
            return outcome
        if entry_hash(current) != previous.sha256:
            outcome.action, outcome.reason = "conflict", "kbkit's entry was edited by hand; left as it is"
            outcome.next_step = "put the change in kbkit.toml, or rerun with --force to overwrite it"
            return outcome
    same_file = previous is not None and previous.path == path
    created_file = previous.created_file if previous is not None and same_file else handle.before is None
    if current != desired:
        handle.config.set(key, desired)
        outcome.action = "created" if handle.before is None else "updated"
        outcome.next_step = _next_step(client, server or "kb")
    new_owned[name] = Owned(path, key, entry_hash(desired), created_file)
    return outcome


def _place_team(
    team: list[TeamEntry],
    owned: dict[str, Owned],
    file_for: Callable[[str, str], _File],
    force: bool,
    report: SyncReport,
    new_owned: dict[str, Owned],
    only: list[str] | None,
) -> None:
    """The team servers' entries, placed as kb's are; entries of servers (or clients) no longer
    declared are retracted, unless another agent's current entry is the same one (.mcp.json)."""
    placed: dict[tuple[str, tuple[str, ...]], Outcome] = {}
    for item in team:
        client = CLIENTS[item.client]
        previous = owned.get(item.owner)
        if previous is not None and (previous.path, previous.key) != (item.path, item.key):
            handle = file_for(previous.path, client.format)
            _retract(item.owner, previous, handle, force, report, new_owned, item.client, item.server)
            previous = None
        handle = file_for(item.path, client.format)
        outcome = _place(
            item.owner, client, item.key, item.entry, handle, previous, force, new_owned, item.server
        )
        shared = placed.setdefault((item.path, item.key), outcome)
        if shared is not outcome and outcome.action == "unchanged":  # one entry, two agents (.mcp.json)
            outcome.action, outcome.next_step = shared.action, shared.next_step and _next_step(client)
        report.outcomes.append(outcome)
    current = {item.owner for item in team}
    for owner, previous in owned.items():
        parsed = parse_owner(owner)
        if parsed is None or owner in current or (only is not None and parsed[0] not in only):
            continue
        new_owned.pop(owner, None)
        if (previous.path, previous.key) in placed:  # another agent's entry now: keep it
            continue
        handle = file_for(previous.path, CLIENTS[parsed[0]].format)
        _retract(owner, previous, handle, force, report, new_owned, *parsed)


def _place_grant(
    grant: preapprove.Grant, handle: _File, previous: Owned | None, force: bool, new_owned: dict[str, Owned]
) -> Outcome:
    """A pre-approval, reported on its own line (it often lives in a file of its own)."""
    created_file = previous.created_file if previous is not None else handle.before is None
    before = handle.config.text
    owned, reason = preapprove.place(grant, handle.config, previous, created_file, force)
    client = CLIENTS[grant.client]
    if owned is None:
        step = "fix it by hand, or set [sync] preapprove = false in kbkit.toml"
        why = f"pre-approval: {reason}"
        return Outcome(grant.client, grant.path, "conflict", why, step, what=PREAPPROVAL)
    new_owned[grant.owner] = owned
    if handle.config.text == before:
        return Outcome(grant.client, grant.path, "unchanged", what=PREAPPROVAL)
    action = "created" if handle.before is None else "updated"
    return Outcome(grant.client, grant.path, action, None, _next_step(client), what=PREAPPROVAL)


def _retract_grant(
    owner: str, previous: Owned, handle: _File, force: bool, report: SyncReport, new_owned: dict[str, Owned]
) -> None:
    new_owned.pop(owner, None)
    client = preapprove.client_of(owner) or owner
    before = handle.config.text
    reason = preapprove.retract(previous, handle.config, force)
    if reason is not None:
        report.outcomes.append(
            Outcome(client, previous.path, "conflict", reason, "remove it by hand", what=PREAPPROVAL)
        )
    elif handle.config.text != before:
        title = CLIENTS[client].title if client in CLIENTS else client
        report.outcomes.append(
            Outcome(client, previous.path, "removed", None, f"restart {title}", what=PREAPPROVAL)
        )


def caveats(
    settings: Settings, selected: list[str], source: EntrySource, tools: tuple[str, ...]
) -> list[str]:
    """One line per selected agent that needs a step in the agent itself (said after writing, and
    by `kbkit doctor`), for the entries this configuration writes."""
    lines = []
    for name in selected:
        client = CLIENTS[name]
        if client.caveat is None:
            continue
        if client.caveat_when == "http" and (not source.direct_http(client) or source.signs_in(client)):
            continue
        if client.caveat_when == "preapprove" and not tools:
            continue
        lines.append(f"{client.title}: {client.step(settings.server_name)}")
    return lines


def _team_caveats(team: list[TeamEntry]) -> list[str]:
    """The per-server steps (approve each server, start it once) for each team server too."""
    lines = []
    for item in team:
        client = CLIENTS[item.client]
        if client.caveat and "{server}" in client.caveat and client.caveat_when == "always":
            lines.append(f"{client.title}: {client.step(item.server)}")
    return list(dict.fromkeys(lines))


def _retract(
    name: str,
    previous: Owned,
    handle: _File,
    force: bool,
    report: SyncReport,
    new_owned: dict[str, Owned],
    client: str | None = None,
    server: str | None = None,
) -> None:
    """Take out an entry kbkit wrote (`name`: its owner; `client`: its agent, when not the owner)."""
    client = client or name
    current = handle.config.get(previous.key)
    new_owned.pop(name, None)
    if current is None:
        return
    if entry_hash(current) != previous.sha256 and not force:
        report.outcomes.append(
            Outcome(
                client,
                previous.path,
                "conflict",
                "kbkit's old entry was edited by hand; left in place",
                "remove it by hand, or rerun with --force",
                server,
            )
        )
        return
    handle.config.delete(previous.key)
    if previous.created_file and handle.config.holds_nothing_but(previous.key[:-1]):
        handle.config.text = ""
    title = CLIENTS[client].title
    report.outcomes.append(Outcome(client, previous.path, "removed", None, f"restart {title}", server))


def _direct_http_notes(source: EntrySource, selected: list[str]) -> list[str]:
    """With `remote_transport = "http"`, say once that the token now comes from each agent's own
    environment, and which entries that is: the failure it prevents is a silent 401 later."""
    direct = [
        name for name in selected if source.direct_http(CLIENTS[name]) and not source.signs_in(CLIENTS[name])
    ]
    if not direct:
        return []
    return [
        f'remote_transport = "http": {", ".join(direct)} read {TOKEN_VAR} from the environment each agent '
        f"starts in, not from {ENV_FILE}; export it there, or drop remote_transport to use kbkit connect "
        f"(it reads {ENV_FILE})"
    ]


def _sign_in_notes(source: EntrySource, selected: list[str]) -> list[str]:
    """With `remote_auth = "oauth"`: per agent, how its user signs in (or that the relay sends a
    personal token from .env.local)."""
    if source.remote_url is None or source.remote_auth != "oauth":
        return []
    lines = []
    for name in selected:
        client = CLIENTS[name]
        if source.signs_in(client):
            lines.append(f"{client.title}: sign in: {SIGN_IN[name].replace('{server}', source.name)}")
        else:
            lines.append(
                f"{client.title}: runs kbkit connect, which sends {PERSONAL_TOKEN_VAR} from {ENV_FILE} "
                "(a personal token: `kbkit token create NAME` where the server runs)"
            )
    return lines


def _trust_notes(settings: Settings) -> list[str]:
    """What the tracked files changed that this sync left out, or kept as last trusted."""
    notes = []
    for waiting in settings.pending:
        if waiting.key.startswith("servers.") and not waiting.fallback:
            notes.append(f"{waiting.what()}: not written into any agent's file; {waiting.review}")
        else:
            notes.append(waiting.line())
    return notes


def _selected(settings: Settings, only: list[str] | None) -> list[str]:
    if not only:
        return list(settings.sync_clients)
    names = [canonical(name) for name in only]
    for name in names:
        if name not in CLIENTS:
            raise ConfigError(f"--only: unknown client {name!r}; known: {', '.join(CLIENTS)}")
    return list(dict.fromkeys(names))


def _safe_target(root: Path, rel: str) -> Path:
    """The output path, refused when a symlinked folder would carry it outside the project."""
    target = root / rel
    resolved = target.parent.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise SyncRefused(
            f"{rel} resolves to {resolved / target.name}, outside the project, where kbkit cannot keep it "
            "out of git; remove the symlink, then rerun kbkit sync"
        )
    if target.is_symlink():
        raise SyncRefused(f"{rel} is a symbolic link; kbkit writes only regular files in the project")
    return target


def _next_step(client: Client, server: str = "kb") -> str:
    if client.user_level:
        return f"copy the {server} entry from {client.path} into {client.user_config}"
    return f"restart {client.title} (or reload its MCP servers)"


def _restore(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write_text(path, text)


def _refuse_secrets(
    settings: Settings, entries: dict[str, dict[str, Any]], own_paths: tuple[str, ...] = ()
) -> None:
    """No entry kbkit writes may hold a secret: any value from .env.local, or the token and memory key
    from the environment. Refuse before writing, naming the variable, never the value. The paths
    kbkit itself must write (the project root, its own executable) are taken out first: a value
    found only inside them (`PROJECT_DIR=/home/me/project`) is a path, not a secret being written."""
    values = {k: v for k, v in read_env_file(settings.root).items() if v}
    for variable in (TOKEN_VAR, settings.memory.credential):
        if settings.env.get(variable):
            values[variable] = settings.env[variable]
    secrets = {k: v for k, v in values.items() if len(v) >= SECRET_MIN_LENGTH}
    for name, entry in entries.items():
        text = json.dumps(entry, ensure_ascii=False)
        for path in sorted(own_paths, key=len, reverse=True):
            text = text.replace(json.dumps(path, ensure_ascii=False)[1:-1], "")
        for variable, value in secrets.items():
            if value in text or json.dumps(value)[1:-1] in text:
                raise SyncRefused(
                    f"the {name} entry would hold the value of {variable} from {ENV_FILE}; kbkit never "
                    f"writes a secret into a config file. Take it out of {CONFIG_FILE}, then rerun kbkit sync"
                )


def _problems(report: SyncReport, settings: Settings, outputs: list[str], git: bool) -> list[str]:
    root = settings.root
    problems = []
    for outcome in report.outcomes:
        if outcome.action == "created":
            problems.append(f"{outcome.path}: missing; run kbkit sync")
        elif outcome.action in ("updated", "removed"):
            problems.append(f"{outcome.path}: out of date ({outcome.client}); run kbkit sync")
        elif outcome.action == "conflict":
            problems.append(f"{outcome.path}: {outcome.reason}")
    if report.gitignore == "stale":
        problems.append(".gitignore: the kbkit block is out of date; run kbkit sync")
    elif git:
        for path in not_ignored(root, [path for path in outputs if (root / path).exists()]):
            problems.append(
                f"{path}: not ignored by git (tracked, or a '!' rule); run git rm --cached {path}"
            )
    return problems
