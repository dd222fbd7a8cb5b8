"""`kbkit eval`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kbkit.cli.common import RootOption, open_kb, progress_shown
from kbkit.errors import ExitCode

if TYPE_CHECKING:
    from kbkit.kb.evaluation import Evaluation

QUESTIONS_FILE = "kb-questions.toml"


def evaluate(
    questions: Annotated[
        Path | None,
        typer.Argument(help=f"The questions file (TOML; default: {QUESTIONS_FILE} beside kbkit.toml)."),
    ] = None,
    root: RootOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Ask the team's own questions of its kb: success@k and MRR@10 beside plain FTS5 over the same
    files, the questions that moved since the last run; exit 1 below the file's thresholds."""
    from kbkit.kb.evaluation import evaluate as run
    from kbkit.kb.evaluation import load_questions

    settings, kb = open_kb(root)
    try:
        asked = load_questions(questions or settings.root / QUESTIONS_FILE)
        if kb.stale():
            kb.scan()
        if kb.hybrid is not None:  # every document's vectors, as `kbkit index` leaves them
            with progress_shown("embedding") as progress:
                kb.embed(progress)
        found = run(kb, asked)
    finally:
        kb.close()
    if as_json:
        typer.echo(json.dumps(found.to_dict(), ensure_ascii=False, indent=2))
    else:
        _print(found)
    if found.unmet:
        raise typer.Exit(ExitCode.CHECK_FAILED)


def _print(found: Evaluation) -> None:
    mine = [("kbkit", found.kbkit)]
    if found.words_alone is not None:
        mine = [("kbkit, hybrid", found.kbkit), ("kbkit, words alone", found.words_alone)]
    rows = [*mine, *((f"plain FTS5 ({name})", s) for name, s in found.baselines.items())]
    typer.echo(f"{found.name}: {found.kbkit.questions} questions")
    typer.echo(f"{'':24} {'success@1':>9} {'success@5':>9} {'success@10':>10} {'MRR@10':>7}")
    for label, s in rows:
        figures = f"{s.success_at_1:9.2f} {s.success_at_5:9.2f} {s.success_at_10:10.2f} {s.mrr_at_10:7.2f}"
        typer.echo(f"{label:24} {figures}")
    for item in found.asked:
        if item.rank is None:
            typer.echo(
                f"missed: {item.question.text!r} -> {item.question.answer} (first: {item.first or 'nothing'})"
            )
    if found.first_run:
        typer.echo("first run here: the next one names the questions that moved")
    for moved in found.moved:
        typer.echo(f"moved: {moved.text!r} -> {moved.answer}: {_rank(moved.before)} -> {_rank(moved.now)}")
    for moved in found.hybrid_moved:
        words = _rank(moved.before)
        typer.echo(f"hybrid: {moved.text!r} -> {moved.answer}: {_rank(moved.now)} (words alone: {words})")
    for line in found.unmet:
        typer.echo(f"below the threshold: {line}")


def _rank(rank: int | None) -> str:
    return "not in the top 10" if rank is None else str(rank)
