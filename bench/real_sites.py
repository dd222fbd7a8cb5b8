"""kbkit against plain SQLite FTS5 on real documentation sites, with questions written blind.

Five public documentation sites, each from a different generator (Hugo, VitePress, Sphinx,
mdBook, MkDocs; `data/real_sites/sites.toml` names each repository, the exact commit, the content
folders and the licence), two of them in two languages, one of those Chinese. Nothing of theirs
is stored here: each site's folders are taken with `git archive` from a local copy of its
repository (`--repos DIR`, holding `<owner>+<name>/repo`, `<owner>+<name>`, `<name>.git` or
`<name>`), into a cache outside the project, and indexed as a team would index them.

The questions (`data/real_sites/<site>.<lang>.toml`, kbkit's questions file format) were written
from each target page alone, before any search ran, and committed before the first run: two to
six words as people type them, concepts, how-tos, exact identifiers and title-like queries, each
with the one page that answers it (and the section, when it is about one). The Chinese questions
were written in Chinese about Chinese pages.

Each set is asked five ways in one run, over the same files (kbkit/kb/evaluation): plain FTS5,
one row a file ranked by `bm25()`, its words quoted and OR-joined, with `unicode61`, `porter
unicode61` and `trigram` (how plain FTS5 reads Chinese); kbkit's search (BM25 with its ranking
rules, the default); and kbkit hybrid (`[search] semantic = true`, embedded in the run, minutes a
site; `--no-hybrid` leaves it out). success@5 and MRR@10 per site and language, then every
question kbkit's default ranks below the better baseline, with what it ranked first.

`--ablation` also asks every set of kbkit's default once with each of its ranking rules left out
(kbkit/kb/search/ranking.py's RULES, through `ranking.rules_off`), and prints each rule's worth
per set: success@5 and MRR@10 with the rule on minus with it off. A rule that costs a set is
narrowed or removed (docs/adr/0067).

`--workdir DIR` keeps each site's project (its index and vectors) there and reuses it: a hybrid
run embeds each site once, and a later run with other ranking code asks the same vectors.

    .venv/bin/python -m bench.real_sites --repos DIR [--sites a,b] [--no-hybrid] [--ablation]
        [--cache DIR] [--workdir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._util import MachineWatch, print_table
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.evaluation import (
    PORTER,
    TRIGRAM,
    UNICODE61,
    Asked,
    Fts5Baseline,
    ask_baseline,
    ask_kbkit,
    check_answers,
    load_questions,
    pages_of,
    score,
)
from kbkit.kb.search import ranking

DATA = Path(__file__).resolve().parent / "data" / "real_sites"
BASELINES = {"FTS5 unicode61": UNICODE61, "FTS5 porter": PORTER, "FTS5 trigram": TRIGRAM}
DEFAULT = "kbkit BM25"
HYBRID = "kbkit hybrid"


@dataclass(frozen=True)
class Site:
    name: str
    repo: str
    commit: str
    generator: str
    folders: tuple[str, ...]
    kb: str
    languages: tuple[str, ...]


def load_sites(path: Path = DATA / "sites.toml") -> list[Site]:
    table = tomllib.loads(path.read_text(encoding="utf-8"))
    return [
        Site(
            s["name"],
            s["repo"],
            s["commit"],
            s["generator"],
            tuple(s["folders"]),
            s["kb"],
            tuple(s["languages"]),
        )
        for s in table["site"]
    ]


def repository(repos: Path, site: Site) -> Path:
    """The local git repository holding `site.commit`; stops the run, naming what to fetch, when none does."""
    owner, name = site.repo.split("/")
    for candidate in (
        repos / f"{owner}+{name}" / "repo",
        repos / f"{owner}+{name}",
        repos / owner / name,
        repos / f"{name}.git",
        repos / name,
    ):
        git = candidate / ".git" if (candidate / ".git").is_dir() else candidate
        if git.is_dir():
            found = subprocess.run(
                ["git", f"--git-dir={git}", "cat-file", "-e", f"{site.commit}^{{commit}}"],
                capture_output=True,
                check=False,
            )
            if found.returncode == 0:
                return git
    raise SystemExit(
        f"{site.name}: no copy of https://github.com/{site.repo} holding {site.commit[:12]} under {repos}: "
        f"git clone --bare https://github.com/{site.repo} {repos / f'{owner}+{name}'}, or pass --repos"
    )


def materialize(site: Site, repos: Path, cache: Path) -> Path:
    """The site's folders at its commit under `cache` (taken once; kept for the next run): its kb folder."""
    target = cache / f"{site.name}-{site.commit[:12]}"
    if not (target / ".complete").is_file():
        git = repository(repos, site)
        archive = subprocess.run(
            ["git", f"--git-dir={git}", "archive", site.commit, *site.folders],
            capture_output=True,
            check=False,
        )
        if archive.returncode != 0:
            raise SystemExit(
                f"{site.name}: git archive failed: {archive.stderr.decode(errors='replace').strip()}"
            )
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")
        (target / ".complete").touch()
    return target / site.kb


def open_indexed(root: Path, kb_folder: Path, *, hybrid: bool) -> tuple[KnowledgeBase, float]:
    """A project over `kb_folder` indexed (and embedded, for hybrid): the kb and the seconds it took.
    A project kept from an earlier run (`--workdir`) is brought up to date, not made again."""
    root.mkdir(parents=True, exist_ok=True)
    semantic = "[search]\nsemantic = true\n" if hybrid else ""
    (root / "kbkit.toml").write_text(f'[kb]\npath = "{kb_folder}"\n{semantic}', encoding="utf-8")
    kb = KnowledgeBase.open(load_settings(root, as_written=True))  # the bench wrote it: nothing to trust
    started = time.perf_counter()
    kb.scan()
    if hybrid:
        kb.embed()
    return kb, time.perf_counter() - started


def ablation_label(rule: str) -> str:
    return f"{DEFAULT} without {rule}"


def run_site(
    site: Site, kb_folder: Path, work: Path, *, hybrid: bool, ablation: bool = False
) -> dict[str, Any]:
    """Every language's questions asked every way: {lang: {method: [Asked]}}, with the site's figures."""
    sets = {lang: load_questions(DATA / f"{site.name}.{lang}.toml") for lang in site.languages}
    kb, seconds = open_indexed(work / f"{site.name}-bm25", kb_folder, hybrid=False)
    try:
        pages = list(pages_of(kb))
        for questions in sets.values():
            check_answers(questions, {page.path for page in pages})
        asked: dict[str, dict[str, list[Asked]]] = {lang: {} for lang in sets}
        for label, tokenizer in BASELINES.items():
            baseline = Fts5Baseline(pages, tokenizer)
            try:
                for lang, questions in sets.items():
                    asked[lang][label] = ask_baseline(baseline, questions)
            finally:
                baseline.close()
        for lang, questions in sets.items():
            asked[lang][DEFAULT] = ask_kbkit(kb, questions)
        for rule in ranking.RULES if ablation else ():
            with ranking.rules_off(rule):
                for lang, questions in sets.items():
                    asked[lang][ablation_label(rule)] = ask_kbkit(kb, questions)
    finally:
        kb.close()
    figures: dict[str, Any] = {"files": len(pages), "index seconds": seconds, "asked": asked}
    if hybrid:
        print(f"{site.name}: embedding {len(pages)} files for hybrid search...", file=sys.stderr, flush=True)
        kb, seconds = open_indexed(work / f"{site.name}-hybrid", kb_folder, hybrid=True)
        try:
            for lang, questions in sets.items():
                asked[lang][HYBRID] = ask_kbkit(kb, questions)
        finally:
            kb.close()
        figures["hybrid seconds"] = seconds
    return figures


def better_baseline(methods: dict[str, list[Asked]]) -> str:
    """The baseline with the higher MRR@10 on this set (the first named, on a tie)."""
    return max(BASELINES, key=lambda label: score(methods[label]).mrr_at_10)


def report(sites: list[Site], results: dict[str, dict[str, Any]], methods: list[str]) -> None:
    rows = []
    for site in sites:
        figures = results[site.name]
        for lang, by_method in figures["asked"].items():
            cells = []
            for method in methods:
                scores = score(by_method[method]) if method in by_method else None
                cells.append(f"{scores.success_at_5:.2f} / {scores.mrr_at_10:.2f}" if scores else "-")
            count = len(by_method[DEFAULT])
            rows.append([site.name, site.generator, lang, str(figures["files"]), str(count), *cells])
    headers = ["site", "generator", "lang", "files", "questions", *(f"{m} s@5 / MRR@10" for m in methods)]
    print_table(headers, rows, "Known-item questions written blind: success@5 / MRR@10")
    print("\nWhere kbkit's default ranks the answer below the better baseline (-: not in the top 10):")
    for site in sites:
        for lang, by_method in results[site.name]["asked"].items():
            label = better_baseline(by_method)
            for ours, theirs in zip(by_method[DEFAULT], by_method[label], strict=True):
                if theirs.rank is not None and (ours.rank is None or ours.rank > theirs.rank):
                    print(
                        f"- {site.name} {lang}: {ours.question.text!r} -> {ours.question.answer}: "
                        f"kbkit {ours.rank or '-'}, {label} {theirs.rank}; "
                        f"kbkit first: {ours.first or 'nothing'}"
                    )


def report_ablation(sites: list[Site], results: dict[str, dict[str, Any]]) -> None:
    """Each rule's worth per set: kbkit's default minus kbkit without the rule, success@5 / MRR@10."""
    rows = []
    for site in sites:
        for lang, by_method in results[site.name]["asked"].items():
            full = score(by_method[DEFAULT])
            cells = []
            for rule in ranking.RULES:
                off = score(by_method[ablation_label(rule)])
                cells.append(
                    f"{full.success_at_5 - off.success_at_5:+.2f} / {full.mrr_at_10 - off.mrr_at_10:+.3f}"
                )
            rows.append([site.name, lang, f"{full.success_at_5:.2f} / {full.mrr_at_10:.2f}", *cells])
    print_table(
        ["site", "lang", "default", *ranking.RULES],
        rows,
        "What each ranking rule is worth: success@5 / MRR@10 with it, minus without it",
    )


def as_json(sites: list[Site], results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for site in sites:
        figures = dict(results[site.name])
        figures["asked"] = {
            lang: {
                method: [
                    {"q": a.question.text, "answer": a.question.answer, "rank": a.rank, "first": a.first}
                    for a in items
                ]
                for method, items in by_method.items()
            }
            for lang, by_method in figures["asked"].items()
        }
        out[site.name] = {"repo": site.repo, "commit": site.commit, **figures}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repos",
        type=Path,
        default=os.environ.get("KBKIT_SITE_REPOS"),
        help="folder holding the sites' git repositories (default: $KBKIT_SITE_REPOS)",
    )
    parser.add_argument("--sites", help="comma-separated site names (default: all in sites.toml)")
    parser.add_argument("--no-hybrid", action="store_true", help="leave out kbkit hybrid (no embedding)")
    parser.add_argument(
        "--cache", type=Path, help="keep the sites' files here between runs (default: a temp folder)"
    )
    parser.add_argument(
        "--ablation", action="store_true", help="also ask kbkit's default with each ranking rule left out"
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep each site's project (index and vectors) here and reuse it"
    )
    parser.add_argument("--json", type=Path, help="save every question's rank per method here")
    args = parser.parse_args(argv)
    if args.repos is None:
        parser.error("pass --repos DIR (or set KBKIT_SITE_REPOS): the folder holding the sites' repositories")
    sites = load_sites()
    if args.sites:
        wanted = args.sites.split(",")
        unknown = sorted(set(wanted) - {site.name for site in sites})
        if unknown:
            parser.error(f"unknown site {unknown[0]!r}; sites.toml has {', '.join(s.name for s in sites)}")
        sites = [site for site in sites if site.name in wanted]
    hybrid = not args.no_hybrid
    if hybrid:
        from kbkit.kb import semantic

        if (why := semantic.unavailable_reason()) is not None:
            parser.error(f"hybrid search cannot run here ({why}); pass --no-hybrid")
    methods = [*BASELINES, DEFAULT, *([HYBRID] if hybrid else [])]
    machine = MachineWatch()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kbkit-real-sites-") as tmp:
        cache = args.cache.expanduser().resolve() if args.cache else Path(tmp) / "sites"
        for site in sites:
            kb_folder = materialize(site, args.repos.expanduser().resolve(), cache)
            projects = args.workdir.expanduser().resolve() if args.workdir else Path(tmp) / "projects"
            results[site.name] = run_site(site, kb_folder, projects, hybrid=hybrid, ablation=args.ablation)
            print(f"{site.name}: {results[site.name]['files']} files", file=sys.stderr, flush=True)
    for site in sites:
        figures = results[site.name]
        timing = f"indexed in {figures['index seconds']:.1f} s"
        if "hybrid seconds" in figures:
            timing += f", indexed and embedded in {figures['hybrid seconds']:.0f} s"
        print(
            f"{site.name}: {site.repo} at {site.commit[:12]} ({site.generator}), "
            f"{figures['files']} files {timing}"
        )
    print(f"machine: {machine.note()}")
    report(sites, results, methods)
    if args.ablation:
        print()
        report_ablation(sites, results)
    if args.json:
        args.json.write_text(
            json.dumps(as_json(sites, results), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        print(f"\nsaved to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
