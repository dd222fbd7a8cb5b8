"""The questions file: TOML, one `[[question]]` table per question, optional `[thresholds]`.

    [thresholds]            # optional: what the team expects
    success_at_5 = 0.8
    mrr_at_10 = 0.6

    [[question]]
    text = "rotate the signing key"      # as people type it
    answer = "ops/keys.md"              # the file that answers it, relative to the kb folder
    section = "Rotation"                # optional: the heading of the section that answers it

Every mistake is refused with one line naming the file, the question's number and the fix, so a
team editing the file by hand finds it at once.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from kbkit.errors import InputError
from kbkit.fsutil import read_text_file

THRESHOLD_KEYS = ("success_at_1", "success_at_5", "success_at_10", "mrr_at_10")
_QUESTION_KEYS = frozenset(("text", "answer", "section"))


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    """The answering file's path relative to the kb folder, with forward slashes."""
    section: str | None = None


@dataclass(frozen=True)
class Thresholds:
    """Shares (0 to 1) a team expects; None where it set none."""

    success_at_1: float | None = None
    success_at_5: float | None = None
    success_at_10: float | None = None
    mrr_at_10: float | None = None


@dataclass(frozen=True)
class QuestionSet:
    name: str
    """Where the questions came from (the file's name), for messages and reports."""
    questions: tuple[Question, ...]
    thresholds: Thresholds = Thresholds()


def load_questions(path: Path) -> QuestionSet:
    text = read_text_file(path, fix="pass a questions file (TOML)")
    if text is None:
        raise InputError(f"{path}: no such questions file", fix="pass the path of a TOML questions file")
    return parse_questions(text.removeprefix("\ufeff"), str(path))


def parse_questions(text: str, name: str) -> QuestionSet:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{name}: not valid TOML: {error}", fix="fix the file's syntax") from None
    unknown = sorted(set(data) - {"question", "thresholds"})
    if unknown:
        raise _refused(name, f"unknown key {unknown[0]!r}", "use [[question]] tables and [thresholds]")
    items = data.get("question")
    if not isinstance(items, list) or not items:
        raise _refused(
            name, "no [[question]] table", "add one [[question]] with text and answer per question"
        )
    questions = tuple(_question(name, number, item) for number, item in enumerate(items, 1))
    return QuestionSet(name, questions, _thresholds(name, data.get("thresholds", {})))


def _question(name: str, number: int, item: Any) -> Question:
    where = f"question {number}"
    if not isinstance(item, dict):
        raise _refused(name, f"{where} is not a table", "write it as a [[question]] table")
    unknown = sorted(set(item) - _QUESTION_KEYS)
    if unknown:
        raise _refused(
            name, f"{where}: unknown key {unknown[0]!r}", "a question has text, answer and section"
        )
    for key in ("text", "answer"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise _refused(name, f"{where}: `{key}` is missing or empty", f"give it a {key} string")
    section = item.get("section")
    if section is not None and not isinstance(section, str):
        raise _refused(name, f"{where}: `section` is not a string", "write the section's heading as a string")
    answer = item["answer"].strip()
    parts = PurePosixPath(answer).parts
    if "\\" in answer or answer.startswith("/") or ".." in parts or "." in parts:
        raise _refused(
            name,
            f"{where}: answer {answer!r} is not a path inside the kb folder",
            "write it relative to the kb folder, with forward slashes",
        )
    return Question(item["text"].strip(), answer, section)


def _thresholds(name: str, table: Any) -> Thresholds:
    if not isinstance(table, dict):
        raise _refused(name, "`thresholds` is not a table", "write it as [thresholds]")
    values: dict[str, float] = {}
    for key, value in table.items():
        if key not in THRESHOLD_KEYS:
            raise _refused(name, f"unknown threshold {key!r}", f"use {', '.join(THRESHOLD_KEYS)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise _refused(name, f"threshold {key} = {value!r} is not a share", "give a number from 0 to 1")
        values[key] = float(value)
    return Thresholds(**values)


def _refused(name: str, problem: str, fix: str) -> InputError:
    return InputError(f"{name}: {problem}", fix=fix)
