"""Search in every script: known-item questions on tldr-pages in nine languages, per method.

`tldr-i18n.tar.gz` (Chinese, Traditional Chinese, Japanese, Korean, Thai, Russian, Arabic, German:
12,002 pages) and `tldr-en.tar.gz` (English, 7,425 pages), each language its own knowledge base.
Questions are written the way people type: two or three content words of one example's
description (`- 创建存档并将其写入文件:` -> "存档 文件"), the ones fewest pages hold (a person
looking for one page types what sets it apart, not "show help"), from an example picked with a
fixed seed on pages with at least three examples. The words are a native reader's: jieba's for
Chinese, newmm's for Thai (PyThaiNLP), kanji and katakana runs for Japanese, the space-separated
words as written for the others (a Korean word keeps its particle: `파일을`). The answer is the
page (any platform's copy: same file name). success@5: the answer is in the top 5; MRR@10:
1 / rank of the first answer.

Methods, each indexing every language afresh through `KnowledgeBase` in the same run:
- `fts5`: unicode61 + porter alone, as before segmentation (no segmented words, old tokenizer);
- `bigram`: CJK, Hangul and Thai bigrams indexed, a query's bigrams each a term (Lucene's
  CJKAnalyzer with OR-joined terms): the baseline;
- `kbkit`: what kbkit ships (kbkit/kb/segment.py): the same bigrams, a Korean query word searched
  as a phrase of its bigrams;
- `phrase-all`: every query run (Han, kana, Thai too) searched as a phrase of its bigrams;
- `icu`, `icu+bigram`: ICU's dictionary word breaks (Chinese, Japanese, Thai; PyICU) in place of
  or beside the bigrams; `ko-stem`: Korean particles stripped beside the bigrams;
- `hybrid`: what kbkit ships with `[search] semantic = true` (the `semantic` extra): kbkit's
  words fused with the packaged embedding model's vectors, embedded in the run (minutes a
  language). The model was trained on English: this says whether turning it on costs a team in
  another language anything.

Chinese, Japanese and Thai questions are also asked typed without spaces (`存档文件`), as people
there often type them.

    .venv/bin/python -m bench.multilingual [--data DIR] [--per-language 50] [--seed 7]
        [--methods fts5,bigram,kbkit,phrase-all,icu] [--languages zh,ja,...]

Question generation needs `rjieba` and `pythainlp`, the icu methods `pyicu-wheels` (or PyICU):
bench-only, none is a kbkit dependency.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._util import data_dir, print_table, unpack
from bench.search_quality import hybrid_available
from kbkit.config import load_settings
from kbkit.kb import segment
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import STOP_WORDS

LANGUAGES = ("en", "zh", "zh_TW", "ja", "ko", "th", "ru", "ar", "de")
TARGETS = {"ko": 0.80}
"""success@5 goal per language (0.90 for the rest)."""
GOAL = 0.90
OLD_TOKENIZER = "porter unicode61 remove_diacritics 2"
_EXAMPLE = re.compile(r"^- (.+?)[:：]\s*$", re.MULTILINE)
_CODE = re.compile(r"`[^`]*`|\{\{[^}]*\}\}|<[^>]*>|\[[^\]]*\]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}|[\u30a0-\u30ff]{2,}")


def _content_words(lang: str, text: str) -> list[str]:
    """A description's content words as a native reader would type them (see the docstring)."""
    text = _CODE.sub(" ", text)
    if lang in ("zh", "zh_TW"):
        import rjieba

        return [word for word in rjieba.cut(text) if re.fullmatch(r"[\u3400-\u9fff]{2,}", word)]
    if lang == "ja":
        return _HAN.findall(text)
    if lang == "th":
        from pythainlp.corpus import thai_stopwords
        from pythainlp.tokenize import word_tokenize

        stop = thai_stopwords()
        words = word_tokenize(text, engine="newmm", keep_whitespace=False)
        return [w for w in words if len(w) >= 2 and w not in stop and re.fullmatch(r"[\u0e00-\u0e7f]+", w)]
    words = [word.strip(".,;:!?()\"'«»„“”،؛") for word in text.split()]
    shortest = 2 if lang == "ko" else 4
    return [
        w for w in words if len(w) >= shortest and w.lower() not in STOP_WORDS and re.fullmatch(r"\w+", w)
    ]


def questions(pages: Path, lang: str, count: int, seed: int) -> list[tuple[str, str]]:
    """(question, answer file name) pairs: `count` pages, one example description each, asked with
    its two or three most telling content words (those the fewest pages of the language hold, as
    text: no tokenizer decides), in the description's order."""
    rng = random.Random(f"{seed}-{lang}")
    files = sorted(pages.rglob("*.md"))
    texts = [path.read_text(encoding="utf-8").lower() for path in files]
    order = list(range(len(files)))
    rng.shuffle(order)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for index in order:
        path = files[index]
        if len(out) == count:
            break
        if path.name in seen:
            continue
        examples = _EXAMPLE.findall(texts[index])
        if len(examples) < 3:
            continue  # an alias page ("see the page of `let`") has one example, like hundreds of others
        words = list(dict.fromkeys(_content_words(lang, rng.choice(examples))))
        if len(words) < 2:
            continue
        pages_holding = {word: sum(word.lower() in text for text in texts) for word in words}
        telling = sorted(words, key=lambda word: (pages_holding[word], words.index(word)))
        picked = set(telling[: rng.choice((2, 3))])
        out.append((" ".join(word for word in words if word in picked), path.stem))
        seen.add(path.name)
    return out


def _icu_words(run: str) -> list[str]:
    import icu

    if max(run) > "\uffff":  # ICU counts UTF-16 units: leave astral runs to bigrams
        return segment.bigrams(run)
    breaker = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
    breaker.setText(run)
    words, start = [], 0
    for end in breaker:
        if run[start:end].strip():
            words.append(run[start:end])
        start = end
    return words


def _icu(run: str, kind: str) -> list[str]:
    return segment.bigrams(run) if kind == "hangul" else _icu_words(run)


def _icu_and_bigrams(run: str, kind: str) -> list[str]:
    pieces = segment.bigrams(run, clustered=kind == "sea")
    return pieces if kind == "hangul" else pieces + _icu_words(run)


PARTICLES = sorted(
    "을 를 이 가 은 는 에 에서 의 로 으로 와 과 도 만 까지 부터 에게 한테 께 처럼 "
    "보다 이나 나 랑 이랑 라는 이라는 으로서 로서 으로써 로써 에게서 마다 조차 "
    "밖에 뿐 하고 이며 며 인 할 한 된 될 하는 하여 해서 합니다 입니다".split(),
    key=len,
    reverse=True,
)
"""Korean particles and common endings (bench variant `ko-stem`): longest first."""


def _korean_stem(word: str) -> str:
    for particle in PARTICLES:
        if word.endswith(particle) and len(word) > len(particle):
            return word[: -len(particle)]
    return word


def _ko_stem(run: str, kind: str) -> list[str]:
    pieces = segment.bigrams(run, clustered=kind == "sea")
    stem = _korean_stem(run) if kind == "hangul" else run
    return pieces if stem == run else [stem, *pieces]


def _never(text: str) -> bool:
    return False


def _old_tokenizer() -> str:
    return OLD_TOKENIZER


@contextmanager
def method(name: str) -> Iterator[None]:
    """kbkit's segmentation swapped for the method `name` for the block (index and queries)."""
    names = ("split_run", "has_unspaced", "tokenizer", "PHRASE_KINDS")
    saved: dict[str, Any] = {attr: getattr(segment, attr) for attr in names}
    if name == "fts5":
        segment.has_unspaced = _never
        segment.tokenizer = _old_tokenizer
    elif name == "icu":
        segment.split_run = _icu
    elif name == "icu+bigram":
        segment.split_run = _icu_and_bigrams
    elif name == "ko-stem":
        segment.split_run = _ko_stem
    elif name == "bigram":
        segment.PHRASE_KINDS = frozenset()
    elif name == "phrase-all":
        segment.PHRASE_KINDS = frozenset(("cjk", "hangul", "sea"))
    try:
        yield
    finally:
        for attr, value in saved.items():
            setattr(segment, attr, value)


def measure(kb: KnowledgeBase, asked: list[tuple[str, str]]) -> tuple[float, float, float]:
    """success@5, MRR@10 and the median search time (ms)."""
    found, reciprocal, times = 0, 0.0, []
    for question, answer in asked:
        started = time.perf_counter()
        hits = kb.search(question, limit=10, max_tokens=None).results
        times.append(time.perf_counter() - started)
        names = [[Path(path).stem for path in (hit.path, *hit.folded)] for hit in hits]
        rank = next((index + 1 for index, stems in enumerate(names) if answer in stems), None)
        found += rank is not None and rank <= 5
        reciprocal += 1 / rank if rank else 0.0
    times.sort()
    return found / len(asked), reciprocal / len(asked), 1000 * times[len(times) // 2]


UNSPACED = ("zh", "zh_TW", "ja", "th")
"""Languages whose people also type a question as one run, without spaces: asked both ways."""


def run(data: Path, languages: list[str], methods: list[str], count: int, seed: int, work: Path) -> None:
    unpack(data / "tldr-i18n.tar.gz", work)
    if "en" in languages:
        unpack(data / "tldr-en.tar.gz", work)
    folders = {
        lang: work / (f"tldr-i18n/pages.{lang}" if lang != "en" else "tldr-en/pages") for lang in languages
    }
    sets: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for lang in languages:
        asked = questions(folders[lang], lang, count, seed)
        sets[lang] = (lang, asked)
        if lang in UNSPACED:
            sets[f"{lang}, typed unspaced"] = (lang, [(q.replace(" ", ""), answer) for q, answer in asked])
    figures: dict[tuple[str, str], tuple[float, float, float]] = {}
    index_seconds: dict[str, float] = {}
    for name in methods:
        with method(name):
            index_seconds[name] = 0.0
            for lang in languages:
                root = work / f"{name}-{lang}"
                root.mkdir()
                semantic = "[search]\nsemantic = true\n" if name == "hybrid" else ""
                config = f'[kb]\npath = "{folders[lang]}"\n{semantic}'
                (root / "kbkit.toml").write_text(config, encoding="utf-8")
                kb = KnowledgeBase.open(load_settings(root, as_written=True))
                try:
                    started = time.perf_counter()
                    kb.scan()
                    if semantic:
                        kb.embed()
                    index_seconds[name] += time.perf_counter() - started
                    for label, (of, asked) in sets.items():
                        if of == lang:
                            figures[(name, label)] = measure(kb, asked)
                finally:
                    kb.close()
            print(f"{name}: indexed in {index_seconds[name]:.1f} s", file=sys.stderr)
    headers = ["questions", "n", *(f"{name} s@5 / MRR" for name in methods), "goal (kbkit s@5)", "met"]
    rows = []
    for label, (lang, asked) in sets.items():
        goal = TARGETS.get(lang, GOAL)
        cells = [f"{figures[(name, label)][0]:.2f} / {figures[(name, label)][1]:.2f}" for name in methods]
        shipped = figures.get(("kbkit", label))
        if lang == "en":
            plain = figures.get(("fts5", label))
            met = (
                "" if shipped is None or plain is None else ("met" if shipped[:2] == plain[:2] else "MISSED")
            )
            rows.append([label, str(len(asked)), *cells, "= fts5", met])
            continue
        met = "" if shipped is None else ("met" if shipped[0] >= goal else "MISSED")
        rows.append([label, str(len(asked)), *cells, f">= {goal:.2f}", met])
    print_table(headers, rows, title="Known-item questions per language: success@5 / MRR@10")
    timing = [[name, f"{index_seconds[name]:.1f}"] for name in methods]
    print_table(["method", "index all languages (s)"], timing)
    samples: list[list[str]] = [[lang, " / ".join(q for q, _ in sets[lang][1][:3])] for lang in languages]
    print_table(["language", "first questions"], samples)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--per-language", type=int, default=50, help="questions per language (default 50)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--methods", default="fts5,bigram,kbkit,phrase-all,icu")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    args = parser.parse_args(argv)
    if "hybrid" in args.methods.split(",") and (why := hybrid_available()) is not None:
        parser.error(f"the hybrid method needs hybrid search to run: {why}")
    options: dict[str, Any] = {
        "languages": args.languages.split(","),
        "methods": args.methods.split(","),
        "count": args.per_language,
        "seed": args.seed,
    }
    with tempfile.TemporaryDirectory(prefix="kbkit-multilingual-") as work:
        run(data_dir(args.data), work=Path(work), **options)


if __name__ == "__main__":
    main()
