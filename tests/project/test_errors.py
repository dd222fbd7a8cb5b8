"""Every error a user can meet is declared in kbkit/errors.py and drawn in its tree with its exit
code (docs/adr/0013, 0050): one place to read what kbkit can refuse and what each refusal exits with."""

from __future__ import annotations

import importlib
import inspect
import re

from kbkit import errors
from kbkit.errors import ExitCode, KbkitError
from tests.project.test_layering import module_name, sources

INTERNAL = {
    "kbkit.config.fields.Invalid": "a validator's refusal: pydantic needs a ValueError; load.py turns it into ConfigError",
    "kbkit.server.memory.bounds.ReplyTooLarge": "an httpx stream error, so the MCP SDK fails the one call and keeps the connection",
    "kbkit.config.variables.BadReference": "a malformed ${...}: the model turns it into Invalid, then a ConfigError naming the table",
    "kbkit.config.variables.Unset": "the variables a value names that are unset: kbkit run and the doctor say it as a ConfigError",
}
"""Exception classes outside errors.py that never reach a user as themselves, and why."""

TREE_LINE = re.compile(r"^    (?P<lead>[│ ]*(?:[├└]── )?)(?P<name>[A-Z]\w+)\s+\S.*?(?:exit (?P<code>\d+))?$")


def every_module() -> list[object]:
    return [importlib.import_module(module_name(path)) for path in sources() if path.name != "__main__.py"]


def drawn_tree() -> dict[str, tuple[str | None, int | None]]:
    """Class name -> (its parent in errors.py's docstring, the exit code written on its line)."""
    drawn: dict[str, tuple[str | None, int | None]] = {}
    parents: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        match = TREE_LINE.match(line)
        if match is None:
            continue
        depth = len(match["lead"])
        while parents and parents[-1][0] >= depth:
            parents.pop()
        drawn[match["name"]] = (
            parents[-1][1] if parents else None,
            int(match["code"]) if match["code"] else None,
        )
        parents.append((depth, match["name"]))
    return drawn


def test_every_kbkit_error_is_declared_in_errors_py_and_drawn_where_it_inherits() -> None:
    every_module()  # every subclass that exists is now defined
    found, pending = {}, [KbkitError]
    while pending:
        cls = pending.pop()
        found[cls.__name__] = cls
        pending += cls.__subclasses__()
    elsewhere = sorted(
        f"{cls.__module__}.{name}" for name, cls in found.items() if cls.__module__ != "kbkit.errors"
    )
    assert elsewhere == []
    drawn = drawn_tree()
    assert sorted(drawn) == sorted(found)
    for name, cls in found.items():
        parent = cls.__bases__[0].__name__ if cls is not KbkitError else None
        assert drawn[name][0] == parent, f"{name} is drawn under {drawn[name][0]}, inherits {parent}"


def test_each_branch_of_the_tree_says_the_exit_code_its_classes_exit_with() -> None:
    drawn = drawn_tree()
    codes = {name: code for name, (_, code) in drawn.items() if code is not None}
    assert codes == {"InputError": 2, "EnvironmentProblem": 3, "RemoteError": 4}
    for name in drawn.keys() - {"KbkitError"}:
        branch = name
        while drawn[branch][0] != "KbkitError":
            branch = drawn[branch][0] or ""
        assert getattr(errors, name).exit_code == ExitCode(codes[branch]), name


def test_no_other_exception_class_in_kbkit_reaches_a_user() -> None:
    """An exception class outside errors.py is private (`_Name`) or named in INTERNAL with the reason."""
    public = sorted(
        f"{module.__name__}.{name}"
        for module in every_module()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and module.__name__ != "kbkit.errors"
        and not name.startswith("_")
    )
    assert public == sorted(INTERNAL)


def test_the_tree_check_sees_a_class_drawn_under_the_wrong_parent(monkeypatch) -> None:
    moved = (errors.__doc__ or "").replace("    │   └── HashMismatch", "    │   │   └── HashMismatch")
    monkeypatch.setattr(errors, "__doc__", moved)
    assert drawn_tree()["HashMismatch"][0] == "SkillError"  # the first test would refuse it
