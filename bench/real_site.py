"""kbkit on a real documentation site: FastAPI's docs (MkDocs, 14 languages), indexed as a team would.

The whole `docs/` folder of a FastAPI checkout is the kb folder (`[kb] path = "docs"`): every
language's pages (`docs/<lang>/docs/**.md`), the English release notes (700 KB), the theme's
templates (`docs/en/overrides/**.html`) and the site's data files. Searched through
`KnowledgeBase` with the agent defaults (limit 10, max_tokens 4000), as an agent's query is.

- **Known-item questions** (`bench/data/fastapi_questions.json`): English questions written the way
  people type ("upload a file together with form fields"), each with the pages that answer it
  (paths under `docs/<lang>/docs/`); ten of them also asked in Japanese, Chinese, Korean, Spanish
  and Russian, answered by that language's copy of the pages. success@5 and MRR@10 per language;
  how many of the top 5 are translations of a page already above them (same path under another
  `docs/<lang>/docs/`) and how many questions have the release notes in the top 5; the distinct
  pages in the top 5.
- **Hygiene**: titles, section paths and kb://topic listing entries (every folder's listing) that
  carry an MkDocs heading attribute (`{ #id }`); snippets holding `****` (bold markup around a
  match) or a match marked inside a heading attribute; whether the theme's Jinja templates
  (`overrides/*.html`) are indexed as pages.
- **The release notes**: where `en/docs/release-notes.md` ranks for each question.

Nothing is downloaded: `--site DIR` names a folder holding FastAPI's `docs/` (a clone of
https://github.com/fastapi/fastapi); without it, `docs/` is taken from the git repository at
`--git DIR` (default: `$FASTAPI_GIT_DIR`). `--json OUT` saves the figures and every
question's top 10 paths; `--compare OLD.json` prints them beside an earlier run's (before/after).

    .venv/bin/python -m bench.real_site [--site DIR | --git DIR] [--json OUT] [--compare OLD.json]
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._util import PROJECT_ROOT, MachineWatch, print_table, write_project
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.sections import Layout
from kbkit.kb.uris import TOPIC_PREFIX
from kbkit.server.resources import read_resource

QUESTIONS = Path(__file__).resolve().parent / "data" / "fastapi_questions.json"
DEFAULT_GIT = os.environ.get("FASTAPI_GIT_DIR")
"""A FastAPI git repository to take docs/ from when neither --site nor --git is given."""
KB_FOLDER = "docs"
LANGUAGES = ("en", "ja", "zh", "ko", "es", "ru")
RELEASE_NOTES = "en/docs/release-notes.md"
PAGE = re.compile(r"^([^/]+)/docs/(.+)$")
"""A translated page: `<lang>/docs/<relative path>`."""
HEADING_ATTRIBUTE = re.compile(r"\{\s*#[^}]*\}")
MARK_IN_ATTRIBUTE = re.compile(r"\{\s*#[^}]*\*\*[^}]*\}")
TOP = 5
DEPTH = 10


@dataclass
class Asked:
    """One question in one language, and what search returned for it."""

    lang: str
    question: str
    answers: list[str]
    ranked: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    snippets: list[str] = field(default_factory=list)
    folded: int = 0

    def rank(self) -> int | None:
        """1-based rank of the first answering page in the top DEPTH, or None."""
        for index, path in enumerate(self.ranked[:DEPTH]):
            if path in self.answers:
                return index + 1
        return None

    def rank_of(self, path: str) -> int | None:
        return self.ranked.index(path) + 1 if path in self.ranked else None

    def translations_in_top(self) -> int:
        """Top-TOP hits that are another language's copy of a page already above them."""
        seen: set[str] = set()
        repeats = 0
        for path in self.ranked[:TOP]:
            page = relative_page(path)
            if page in seen:
                repeats += 1
            seen.add(page)
        return repeats

    def distinct_in_top(self) -> int:
        return len({relative_page(path) for path in self.ranked[:TOP]})


def relative_page(path: str) -> str:
    """The page a path is a copy of: its path under `<lang>/docs/` (other files: the path itself)."""
    match = PAGE.match(path)
    return match.group(2) if match else path


def load_questions(path: Path, docs: Path) -> list[Asked]:
    """Every question in every language it is given in, answered by that language's pages that
    exist; a question with no such page stops the run (a broken question file)."""
    asked = []
    for item in json.loads(path.read_text(encoding="utf-8"))["questions"]:
        for lang in LANGUAGES:
            if lang not in item:
                continue
            answers = [f"{lang}/docs/{page}" for page in item["answers"]]
            answers = [answer for answer in answers if (docs / answer).is_file()]
            if not answers:
                raise SystemExit(f"no answering page in {docs} for {item[lang]!r} ({lang})")
            asked.append(Asked(lang, item[lang], answers))
    return asked


def site_docs(site: Path | None, git: Path | None, dest: Path) -> tuple[Path, str]:
    """Copy FastAPI's `docs/` into `dest/docs`, from `site` or from the git repository `git`; the
    commit it came from ("unknown" when not a git checkout)."""
    target = dest / KB_FOLDER
    if site is not None:
        source = site.expanduser().resolve() / "docs"
        if not (source / "en" / "docs").is_dir():
            raise SystemExit(f"{source} is not FastAPI's docs folder (no en/docs in it); pass --site CLONE")
        shutil.copytree(source, target)
        return target, _commit(["git", "-C", str(source), "rev-parse", "HEAD"])
    if git is None or not git.exists():
        raise SystemExit(
            f"FastAPI's docs not found: no repository at {git}. Clone https://github.com/fastapi/fastapi "
            "and pass --site CLONE (the folder holding docs/), or --git CLONE/.git"
        )
    archive = subprocess.run(
        ["git", f"--git-dir={git}", "archive", "HEAD", KB_FOLDER], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise SystemExit(f"cannot read docs/ from {git}: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return target, _commit(["git", f"--git-dir={git}", "rev-parse", "HEAD"])


def _commit(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def ask(kb: KnowledgeBase, asked: list[Asked]) -> float:
    """Run every question (agent defaults); the median seconds a search took."""
    seconds = []
    for item in asked:
        started = time.perf_counter()
        result = kb.search(item.question)
        seconds.append(time.perf_counter() - started)
        hits = result.results[:DEPTH]
        item.ranked = [hit.path for hit in hits]
        item.titles = [hit.title for hit in hits]
        item.sections = [hit.section for hit in hits]
        item.snippets = [hit.snippet for hit in hits]
        item.folded = sum(len(hit.folded) for hit in hits)
    return statistics.median(seconds)


def quality(asked: list[Asked]) -> dict[str, dict[str, float]]:
    """Per language: success@5, MRR@10, translations of a page above in the top 5 (mean), distinct
    pages in the top 5 (mean), questions with the release notes in the top 5 (share)."""
    figures = {}
    for lang in LANGUAGES:
        items = [item for item in asked if item.lang == lang]
        if not items:
            continue
        ranks = [item.rank() for item in items]
        figures[lang] = {
            "questions": float(len(items)),
            "success@5": statistics.fmean(rank is not None and rank <= TOP for rank in ranks),
            "MRR@10": statistics.fmean(1.0 / rank if rank else 0.0 for rank in ranks),
            "translations in top 5": statistics.fmean(item.translations_in_top() for item in items),
            "distinct pages in top 5": statistics.fmean(item.distinct_in_top() for item in items),
            "release notes in top 5": statistics.fmean(
                (rank := item.rank_of(RELEASE_NOTES)) is not None and rank <= TOP for item in items
            ),
        }
    return figures


def release_notes(asked: list[Asked]) -> dict[str, float]:
    """Where the release notes rank: in the top 1, 3, 5 and 10 (share of questions), per language
    set (English alone, and all)."""
    out = {}
    for name, items in (("en", [a for a in asked if a.lang == "en"]), ("all", asked)):
        ranks = [item.rank_of(RELEASE_NOTES) for item in items]
        for cut in (1, 3, 5, 10):
            out[f"{name} top {cut}"] = statistics.fmean(rank is not None and rank <= cut for rank in ranks)
    return out


def hygiene(kb: KnowledgeBase, asked: list[Asked]) -> dict[str, Any]:
    """Heading attributes and markup where a reader sees them; the theme's templates as pages."""
    rows = kb.list_servable()
    sections = with_attribute = 0
    for row in rows:
        doc = kb.load(row.path)
        for span in Layout(len(doc.text), doc.outline).spans:
            sections += 1
            with_attribute += bool(HEADING_ATTRIBUTE.search(span.path))
    entries = entries_with = 0
    for folder in sorted({row.path.rsplit("/", 1)[0] for row in rows if "/" in row.path}):
        listing = read_resource(kb, f"{TOPIC_PREFIX}{folder}")
        for content in listing.contents:
            for line in getattr(content, "text", "").splitlines():
                if line.startswith("- ["):
                    entries += 1
                    entries_with += bool(HEADING_ATTRIBUTE.search(line))
    hit_titles = [title for item in asked for title in item.titles]
    hit_sections = [section for item in asked for section in item.sections]
    snippets = [snippet for item in asked for snippet in item.snippets]
    templates = [row.path for row in rows if "/overrides/" in f"/{row.path}" and row.path.endswith(".html")]
    return {
        "documents": len(rows),
        "titles with {#id}": sum(bool(HEADING_ATTRIBUTE.search(row.title or "")) for row in rows),
        "section paths": sections,
        "section paths with {#id}": with_attribute,
        "topic entries": entries,
        "topic entries with {#id}": entries_with,
        "hits": len(hit_titles),
        "hit titles with {#id}": sum(bool(HEADING_ATTRIBUTE.search(t)) for t in hit_titles),
        "hit sections with {#id}": sum(bool(HEADING_ATTRIBUTE.search(s)) for s in hit_sections),
        "snippets with {#id}": sum(bool(HEADING_ATTRIBUTE.search(s)) for s in snippets),
        "snippets with a match marked inside {#id}": sum(bool(MARK_IN_ATTRIBUTE.search(s)) for s in snippets),
        "snippets with ****": sum("****" in s for s in snippets),
        "templates indexed": templates,
    }


def print_report(figures: dict[str, Any], before: dict[str, Any] | None) -> None:
    def pair(now: float, then: float | None, fmt: str = "{:.2f}") -> str:
        return fmt.format(now) if then is None else f"{fmt.format(then)} -> {fmt.format(now)}"

    print(
        f"FastAPI docs at {figures['site commit'][:12]}: {figures['documents']} documents indexed in "
        f"{figures['index seconds']:.1f} s; search p50 {figures['search p50 ms']:.1f} ms; "
        f"kbkit/ as of {figures['kbkit commit'][:12]}"
    )
    if before:
        print(f"compared with {before['kbkit commit'][:12]} ({before['date']}): before -> now")
    print(f"machine: {figures['machine']}")
    rows = []
    for lang, now in figures["quality"].items():
        then = (before or {}).get("quality", {}).get(lang, {})
        rows.append(
            [lang, f"{now['questions']:.0f}"]
            + [
                pair(now[key], then.get(key))
                for key in (
                    "success@5",
                    "MRR@10",
                    "translations in top 5",
                    "distinct pages in top 5",
                    "release notes in top 5",
                )
            ]
        )
    headers = [
        "lang",
        "questions",
        "success@5",
        "MRR@10",
        "translations of a page above, in top 5 (mean)",
        "distinct pages in top 5 (mean)",
        "release notes in top 5 (share)",
    ]
    print_table(headers, rows, "Known-item questions (agent defaults)")
    then_notes = (before or {}).get("release notes", {})
    print_table(
        ["questions", "top 1", "top 3", "top 5", "top 10"],
        [
            [name]
            + [
                pair(figures["release notes"][f"{name} top {cut}"], then_notes.get(f"{name} top {cut}"))
                for cut in (1, 3, 5, 10)
            ]
            for name in ("en", "all")
        ],
        f"Where {RELEASE_NOTES} ranks (share of questions)",
    )
    now_h, then_h = figures["hygiene"], (before or {}).get("hygiene", {})
    hygiene_rows = []
    for key, total in (
        ("titles with {#id}", "documents"),
        ("section paths with {#id}", "section paths"),
        ("topic entries with {#id}", "topic entries"),
        ("hit titles with {#id}", "hits"),
        ("hit sections with {#id}", "hits"),
        ("snippets with {#id}", "hits"),
        ("snippets with a match marked inside {#id}", "hits"),
        ("snippets with ****", "hits"),
    ):
        value = f"{now_h[key]:,} of {now_h[total]:,}"
        if then_h:
            value = f"{then_h[key]:,} of {then_h[total]:,} -> {value}"
        hygiene_rows.append([key, value])
    templates = now_h["templates indexed"]
    listed = ", ".join(templates) or "-"
    hygiene_rows.append(["theme templates indexed as pages", f"{len(templates)}: {listed}"])
    print_table(["what", "count"], hygiene_rows, "Hygiene (index, kb://topic listings, and the hits above)")
    if before:
        then_rank = {(item["lang"], item["question"]): item["rank"] for item in before.get("questions", [])}
        print("\nQuestions whose answer moved: question (lang): rank before -> now (-: not in the top 10)")
        for item in figures["questions"]:
            lang, question = item["lang"], item["question"]
            if (lang, question) in then_rank and then_rank[lang, question] != item["rank"]:
                print(f"- {question} ({lang}): {then_rank[lang, question] or '-'} -> {item['rank'] or '-'}")
    print(f"\nQuestions with {RELEASE_NOTES} in the top {DEPTH}: question (lang): its rank")
    for item in figures["questions"]:
        if RELEASE_NOTES in item["ranked"]:
            print(f"- {item['question']} ({item['lang']}): {item['ranked'].index(RELEASE_NOTES) + 1}")
    print("\nMisses (no answer in the top 5): question (lang) -> top 3")
    for item in figures["questions"]:
        rank = item["rank"]
        if rank is None or rank > TOP:
            top = ", ".join(item["ranked"][:3]) or "nothing found"
            print(f"- {item['question']} ({item['lang']}) -> {top}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site", type=Path, help="a folder holding FastAPI's docs/ (a clone of fastapi/fastapi)"
    )
    parser.add_argument(
        "--git",
        type=Path,
        default=Path(DEFAULT_GIT) if DEFAULT_GIT else None,
        help="a FastAPI git repository to take docs/ from (default: $FASTAPI_GIT_DIR)",
    )
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the questions file")
    parser.add_argument("--json", type=Path, help="save the figures and every question's top 10 paths here")
    parser.add_argument("--compare", type=Path, help="an earlier run's --json file: print before -> now")
    args = parser.parse_args(argv)
    before = json.loads(args.compare.read_text(encoding="utf-8")) if args.compare else None
    machine = MachineWatch()
    with tempfile.TemporaryDirectory(prefix="kbkit-real-site-") as tmp:
        root = Path(tmp)
        docs, site_commit = site_docs(args.site, args.git, root)
        asked = load_questions(args.questions, docs)
        write_project(root, KB_FOLDER)
        kb = KnowledgeBase.open(load_settings(root))
        try:
            started = time.perf_counter()
            report = kb.scan()
            index_seconds = time.perf_counter() - started
            search_p50 = ask(kb, asked)
            figures: dict[str, Any] = {
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "kbkit commit": _commit(  # the last change to the code measured
                    ["git", "-C", str(PROJECT_ROOT), "log", "-1", "--format=%H", "--", "kbkit"]
                ),
                "site commit": site_commit,
                "documents": report.documents,
                "index seconds": index_seconds,
                "search p50 ms": search_p50 * 1000,
                "quality": quality(asked),
                "release notes": release_notes(asked),
                "hygiene": hygiene(kb, asked),
            }
        finally:
            kb.close()
    figures["machine"] = machine.note()
    figures["questions"] = [
        {
            "lang": item.lang,
            "question": item.question,
            "answers": item.answers,
            "rank": item.rank(),
            "ranked": item.ranked,
            "folded": item.folded,
        }
        for item in asked
    ]
    print_report(figures, before)
    if args.json:
        args.json.write_text(json.dumps(figures, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"\nsaved to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
