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
  as a phrase of its stem's bigrams (the particle or ending dropped by a list: `korean_stem`);
- `ko-whole`: as kbkit, a Korean query word's own bigrams as the phrase, particle kept (before
  docs/adr/0072);
- `phrase-all`: every query run (Han, kana, Thai too) searched as a phrase of its bigrams;
- `icu`, `icu+bigram`: ICU's dictionary word breaks (Chinese, Japanese, Thai; PyICU) in place of
  or beside the bigrams;
- `kiwi`: a Korean analyzer's morphemes (kiwipiepy: nouns, roots, foreign words) indexed beside the
  bigrams and searched for a Korean query word; `mecab-q`: mecab-ko's morphemes of a Korean
  query word, each a phrase of its bigrams, over kbkit's index;
- `fts5-seg` (Korean only): plain FTS5 (`unicode61`, `bm25`) over pages and questions cut into
  kiwipiepy's morphemes beforehand, what a team could write with an analyzer;
- `hybrid`: what kbkit ships with `[search] semantic = true` (the `semantic` extra): kbkit's
  words fused with the packaged embedding model's vectors, embedded in the run (minutes a
  language). The model was trained on English: this says whether turning it on costs a team in
  another language anything.

Chinese, Japanese and Thai questions are also asked typed without spaces (`存档文件`), as people
there often type them. Korean is also asked the 36 questions of `data/ko_particle_questions.toml`,
whose words carry particles as people type them (`파일을`, `설정에서`), written blind.

    .venv/bin/python -m bench.multilingual [--data DIR] [--per-language 50] [--seed 7]
        [--methods fts5,bigram,kbkit,phrase-all,icu] [--languages zh,ja,...]

Question generation needs `rjieba` and `pythainlp`, the icu methods `pyicu-wheels` (or PyICU),
`kiwi` and `fts5-seg` kiwipiepy, `mecab-q` mecab-ko: bench-only, none is a kbkit dependency.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from bench._util import data_dir, print_table, unpack
from bench.search_quality import hybrid_available
from kbkit.config import load_settings
from kbkit.kb import segment
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.evaluation.baselines import Fts5Baseline, page
from kbkit.kb.evaluation.questions import load_questions
from kbkit.kb.search import STOP_WORDS

LANGUAGES = ("en", "zh", "zh_TW", "ja", "ko", "th", "ru", "ar", "de")
TARGETS = {"ko": 0.80}
"""success@5 goal per language (0.90 for the rest)."""
GOAL = 0.90
PARTICLE_QUESTIONS = Path(__file__).parent / "data" / "ko_particle_questions.toml"
"""Korean questions whose words carry their particles, written blind (the file says how)."""
PARTICLE_ROW = "ko, particles (blind)"
NEEDS = {
    "icu": ("icu", "pyicu-wheels"),
    "icu+bigram": ("icu", "pyicu-wheels"),
    "kiwi": ("kiwipiepy", "kiwipiepy"),
    "fts5-seg": ("kiwipiepy", "kiwipiepy"),
    "mecab-q": ("mecab_ko", "mecab-ko"),
}
"""The module each bench-only method imports, and the package that has it."""
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


_HANGUL = re.compile(f"[{segment._HANGUL}]+")
_CONTENT_TAGS = frozenset(("NNG", "NNP", "NR", "NP", "VV", "VA", "XR", "SL", "SH", "MAG"))
"""The morphemes a Korean analyzer's methods keep: nouns, verb and adjective roots, foreign words,
adverbs (Sejong tags, which kiwipiepy and mecab-ko share); particles and endings are left out."""


@functools.cache
def _kiwi() -> Any:
    from kiwipiepy import Kiwi

    return Kiwi()


@functools.cache
def _mecab() -> Any:
    import mecab_ko

    return mecab_ko.Tagger()


@functools.lru_cache(maxsize=200_000)
def _kiwi_words(run: str) -> tuple[str, ...]:
    return tuple(token.form for token in _kiwi().tokenize(run) if token.tag in _CONTENT_TAGS)


def _mecab_words(run: str) -> tuple[str, ...]:
    pairs = [line.split("\t", 1) for line in _mecab().parse(run).splitlines() if "\t" in line]
    return tuple(form for form, feature in pairs if feature.split(",")[0] in _CONTENT_TAGS)


def _kiwi_index(run: str, kind: str) -> list[str]:
    pieces = segment.bigrams(run, clustered=kind == "sea")
    return pieces if kind != "hangul" else [*pieces, *(w for w in _kiwi_words(run) if w not in pieces)]


def _korean_query(words_of: Callable[[str], tuple[str, ...]], *, phrases: bool) -> Any:
    """segment.query_pieces with a Korean run's words found by an analyzer (`words_of`): each
    searched as a phrase of its bigrams (`phrases`) or as the word the index holds."""
    shipped = segment.query_pieces

    def pieces(word: str) -> Iterator[tuple[str, bool]]:
        for piece, cut in shipped(word):
            if not (cut and _HANGUL.match(piece)):  # the shipped stem phrase: the analyzer's words instead
                yield piece, cut
        for run in _HANGUL.findall(word):
            for form in words_of(run):
                yield (" ".join(segment.bigrams(form)) if phrases else form), True

    return pieces


def _whole(word: str) -> str:
    return word


def _never(text: str) -> bool:
    return False


def _old_tokenizer() -> str:
    return OLD_TOKENIZER


@contextmanager
def method(name: str) -> Iterator[None]:
    """kbkit's segmentation swapped for the method `name` for the block (index and queries)."""
    names = ("split_run", "has_unspaced", "tokenizer", "PHRASE_KINDS", "query_pieces", "korean_stem")
    saved: dict[str, Any] = {attr: getattr(segment, attr) for attr in names}
    if name == "fts5":
        segment.has_unspaced = _never
        segment.tokenizer = _old_tokenizer
    elif name == "icu":
        segment.split_run = _icu
    elif name == "icu+bigram":
        segment.split_run = _icu_and_bigrams
    elif name == "ko-whole":
        segment.korean_stem = _whole
    elif name == "kiwi":
        segment.split_run = _kiwi_index
        segment.query_pieces = _korean_query(_kiwi_words, phrases=False)
    elif name == "mecab-q":
        segment.query_pieces = _korean_query(_mecab_words, phrases=True)
    elif name == "bigram":
        segment.PHRASE_KINDS = frozenset()
    elif name == "phrase-all":
        segment.PHRASE_KINDS = frozenset(("cjk", "hangul", "sea"))
    try:
        yield
    finally:
        for attr, value in saved.items():
            setattr(segment, attr, value)


def measure(
    rank: Callable[[str], list[list[str]]], asked: list[tuple[str, str]]
) -> tuple[float, float, float]:
    """success@5, MRR@10 and the median search time (ms); `rank` gives a question's top 10 hits,
    each as the page names it stands for."""
    found, reciprocal, times = 0, 0.0, []
    for question, answer in asked:
        started = time.perf_counter()
        names = rank(question)
        times.append(time.perf_counter() - started)
        rank_of = next((index + 1 for index, stems in enumerate(names) if answer in stems), None)
        found += rank_of is not None and rank_of <= 5
        reciprocal += 1 / rank_of if rank_of else 0.0
    times.sort()
    return found / len(asked), reciprocal / len(asked), 1000 * times[len(times) // 2]


def kbkit_ranks(kb: KnowledgeBase) -> Callable[[str], list[list[str]]]:
    def rank(question: str) -> list[list[str]]:
        hits = kb.search(question, limit=10, max_tokens=None).results
        return [[Path(path).stem for path in (hit.path, *hit.folded)] for hit in hits]

    return rank


def _presegmented(text: str) -> str:
    """`text` as a Korean morphological analyzer cuts it (kiwipiepy), the morphemes space-separated."""
    return " ".join(token.form for token in _kiwi().tokenize(text))


def presegmented_fts5(folder: Path) -> Callable[[str], list[list[str]]]:
    """Plain FTS5 (unicode61, bm25) over the pages and questions cut into morphemes beforehand: the
    baseline a Korean team could write with an analyzer and twenty lines."""
    pages = [
        page(str(path.relative_to(folder)), _presegmented(path.read_text(encoding="utf-8")))
        for path in sorted(folder.rglob("*.md"))
    ]
    baseline = Fts5Baseline(pages)
    return lambda question: [[Path(path).stem] for path in baseline.rank(_presegmented(question), 10)]


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
        if lang == "ko":
            blind = load_questions(PARTICLE_QUESTIONS).questions
            sets[PARTICLE_ROW] = ("ko", [(q.text, PurePosixPath(q.answer).stem) for q in blind])
    figures: dict[tuple[str, str], tuple[float, float, float]] = {}
    index_seconds: dict[str, float] = {}
    for name in methods:
        if name == "fts5-seg":  # Korean only: the analyzer knows no other language
            started = time.perf_counter()
            if "ko" in languages:
                rank = presegmented_fts5(folders["ko"])
                for label, (of, asked) in sets.items():
                    if of == "ko":
                        figures[(name, label)] = measure(rank, asked)
            index_seconds[name] = time.perf_counter() - started
            continue
        with method(name):
            index_seconds[name] = 0.0
            for lang in languages:
                root = work / f"{name}-{lang}"
                root.mkdir()
                semantic = "[search]\nsemantic = true\n" if name == "hybrid" else ""
                config = f'[kb]\npath = "{folders[lang]}"\n{semantic}'
                (root / "kbkit.toml").write_text(config, encoding="utf-8")
                kb = KnowledgeBase.open(load_settings(root, as_written=True))  # the bench wrote it
                try:
                    started = time.perf_counter()
                    kb.scan()
                    if semantic:
                        kb.embed()
                    index_seconds[name] += time.perf_counter() - started
                    for label, (of, asked) in sets.items():
                        if of == lang:
                            figures[(name, label)] = measure(kbkit_ranks(kb), asked)
                finally:
                    kb.close()
            print(f"{name}: indexed in {index_seconds[name]:.1f} s", file=sys.stderr)
    headers = ["questions", "n", *(f"{name} s@5 / MRR" for name in methods), "goal (kbkit s@5)", "met"]
    rows = []
    for label, (lang, asked) in sets.items():
        goal = TARGETS.get(lang, GOAL)
        cells = [
            f"{figures[(name, label)][0]:.2f} / {figures[(name, label)][1]:.2f}"
            if (name, label) in figures
            else "-"
            for name in methods
        ]
        shipped = figures.get(("kbkit", label))
        if lang == "en":
            plain = figures.get(("fts5", label))
            met = (
                "" if shipped is None or plain is None else ("met" if shipped[:2] == plain[:2] else "MISSED")
            )
            rows.append([label, str(len(asked)), *cells, "= fts5", met])
            continue
        if label == PARTICLE_ROW:  # the goal: plain FTS5 over analyzer-segmented text (docs/adr/0072)
            plain = figures.get(("fts5-seg", label))
            met = "" if shipped is None or plain is None else ("met" if shipped[0] >= plain[0] else "MISSED")
            rows.append([label, str(len(asked)), *cells, ">= fts5-seg", met])
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
    for name in args.methods.split(","):
        if (package := NEEDS.get(name)) and importlib.util.find_spec(package[0]) is None:
            parser.error(f"the {name} method needs {package[1]}: pip install {package[1]}")
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
