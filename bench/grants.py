"""What restricted folders cost search (docs/adr/0070): Microsoft's C++ docs (`cpp-docs.tar.gz`,
9,753 pages) served as one index, and served with three folders restricted (`docs/build`,
`docs/atl`, `docs/assembler`: 1,463 pages), which makes four indexes: everything else, and each
folder alone. The same queries (half page titles, half runs of prose, as `bench.cpp_docs` picks
them) are searched through the server's guard (kbkit/server/grants.py) with the agent defaults
(limit 10, max_tokens 4000) by four principals: anyone, on the one index (the baseline); a
principal without grants (the public index alone); one granted one folder (two indexes merged);
one granted all three (four merged). Per principal: the median and p95 of a search, and its ratio
to the baseline's (the target: at most 1.2). For the principal granted everything, how often its
first hit and its top five are the baseline's: merging indexes ranks each with its own statistics.

    .venv/bin/python -m bench.grants [--queries 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import MachineWatch, data_dir, make_queries, percentile, print_table, unpack, verdict
from kbkit.config import load_settings
from kbkit.config.restricted import Reader
from kbkit.errors import KbkitError
from kbkit.kb.base import KnowledgeBase
from kbkit.server.grants import Library, Part, View

KB_FOLDER = "cpp-docs"
RESTRICTED = {"build": "docs/build/", "atl": "docs/atl/", "assembler": "docs/assembler/"}
TARGET = 1.2


def library(kbs: list[KnowledgeBase]) -> Library:
    return Library([Part(kb.partition or "", kb, lambda: None) for kb in kbs])


def titled(kb: KnowledgeBase, queries: set[str]) -> dict[str, set[str]]:
    """Query -> the pages titled exactly so (half the queries are titles: a known answer)."""
    found: dict[str, set[str]] = {}
    for row in kb.list_servable():
        if row.title in queries:
            found.setdefault(row.title, set()).add(row.path)
    return found


def timed(
    views: dict[str, View], queries: list[str], rounds: int
) -> dict[str, tuple[list[float], list[list[str]]]]:
    """Each query searched by every principal in turn, the order rotating from query to query, so
    the machine's load falls on all alike."""
    found: dict[str, tuple[list[float], list[list[str]]]] = {name: ([], []) for name in views}
    names = list(views)
    for round_ in range(rounds):
        for number, query in enumerate(queries):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                result = views[name].search(query, limit=10, max_tokens=4000)
                found[name][0].append(time.perf_counter() - started)
                if round_ == 0:
                    found[name][1].append([hit.path for hit in result.results[:5]])
    return found


def refusal_times(view: View, rounds: int = 2000) -> dict[str, list[float]]:
    """How long a refused read takes: a restricted page, a missing page beside it, a missing folder."""
    paths = {
        "restricted": "docs/build/reference/vcxproj-file-structure.md",
        "missing beside it": "docs/build/reference/no-such-page.md",
        "missing folder": "docs/no-such-folder/page.md",
    }
    found: dict[str, list[float]] = {name: [] for name in paths}
    for number in range(rounds):
        for name, path in paths.items() if number % 2 else reversed(paths.items()):
            started = time.perf_counter()
            with contextlib.suppress(KbkitError):
                view.load(path)
            found[name].append(time.perf_counter() - started)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    machine = MachineWatch()
    with tempfile.TemporaryDirectory(prefix="kbkit-grants-") as tmp:
        root = Path(tmp)
        unpack(archive, root)
        tables = "".join(
            f'\n[restricted.{name}]\npaths = ["{path}"]\ntokens = ["{name}-reader", "all-reader"]\n'
            for name, path in RESTRICTED.items()
        )
        (root / "kbkit.toml").write_text(f'[kb]\npath = "{KB_FOLDER}"\n{tables}', encoding="utf-8")
        settings = load_settings(root)
        unrestricted = dataclasses.replace(
            settings, config=settings.config.model_copy(update={"restricted": {}})
        )
        whole = KnowledgeBase.open(unrestricted)
        parts = KnowledgeBase.partitioned(settings)
        started = time.perf_counter()
        whole.scan()
        whole_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for part in parts:
            part.prepare()
            part.scan()
        parts_seconds = time.perf_counter() - started
        sizes = [part.store.count_documents() for part in parts]
        queries = make_queries(root / KB_FOLDER, args.queries, args.seed)
        title_pages = titled(whole, set(queries))
        one, split = library([whole]), library(parts)
        views = {
            "anyone, one index (baseline)": one.view(None),
            "no grant (public index)": split.view(Reader("token", "nobody")),
            "granted build (2 indexes)": split.view(Reader("token", "build-reader")),
            "granted all three (4 indexes)": split.view(Reader("token", "all-reader")),
        }
        timed(views, queries[:20], 1)  # warm each index's pages and statements
        results = timed(views, queries, args.rounds)
        refusals = refusal_times(views["no grant (public index)"])
        for kb in (whole, *parts):
            kb.close()
    base = statistics.median(results["anyone, one index (baseline)"][0])
    rows = []
    for name, (times, _) in results.items():
        median = statistics.median(times)
        ratio = median / base
        goal = "" if name.startswith("anyone") else f"<= {TARGET}"
        status = "" if name.startswith("anyone") else verdict(ratio <= TARGET)
        rows.append(
            [
                name,
                f"{median * 1000:.2f} ms",
                f"{percentile(times, 95) * 1000:.2f} ms",
                f"{ratio:.2f}",
                goal,
                status,
            ]
        )
    title = (
        f"{len(queries)} queries x {args.rounds} rounds; index: one of {sum(sizes)} pages in "
        f"{whole_seconds:.1f} s, four ({', '.join(map(str, sizes))}) in {parts_seconds:.1f} s"
    )
    print_table(["principal", "search p50", "p95", "p50 / baseline", "target", "status"], rows, title)
    base_tops = results["anyone, one index (baseline)"][1]
    all_tops = results["granted all three (4 indexes)"][1]
    first = sum(a[:1] == b[:1] for a, b in zip(base_tops, all_tops, strict=True)) / len(base_tops)
    five = statistics.mean(
        len(set(a) & set(b)) / max(1, len(set(a) | set(b))) for a, b in zip(base_tops, all_tops, strict=True)
    )
    print(f"\ngranted everything against one index: same first hit {first:.0%}, top-5 overlap {five:.2f}")
    for name, (_, tops) in results.items():
        found = [title_pages.get(query, set()) & set(top) for query, top in zip(queries, tops, strict=True)]
        asked = [query for query in queries if query in title_pages]
        share = sum(bool(hit) for query, hit in zip(queries, found, strict=True) if query in title_pages)
        print(f"{name}: the titled page in the top 5 for {share} of {len(asked)} title queries")
    print(
        "a principal without the grant asking for a restricted page, against a page that is not "
        "there (get_document, in the process; a network round trip adds milliseconds): "
        + ", ".join(f"{name} {statistics.median(times) * 1e6:.0f} us" for name, times in refusals.items())
    )
    print(machine.note())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
