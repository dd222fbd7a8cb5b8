"""Search in scripts written without spaces (kbkit/kb/segment.py): Chinese, Japanese, Korean and
Thai words are found inside longer runs, in every field, in passages and snippets, on real tldr-pages
translations (tests/fixtures/tldr-i18n, CC BY 4.0); English is searched as before."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb import segment
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.fields import COLUMNS, INDEX_TEXT_CAP
from kbkit.kb.schema import REREAD, RESEGMENTED, SCHEMA_VERSION
from kbkit.kb.search import MAX_TERMS, compile_query
from tests.helpers.project import make_project

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tldr-i18n"
GUIDE = "# 部署指南\n\n本页说明如何把应用发布到生产环境。\n"
MIXED = "# 发布流程\n\n我们使用 kubectl 部署服务，然后检查日志。\n\n另一种写法：使用kubectl部署。\n"
ENGLISH = "# Deploying\n\nRun the deployment with kubectl and watch the rollout.\n"


def open_kb(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    pages = {path.name: path.read_text(encoding="utf-8") for path in FIXTURES.glob("*-*.md")}
    root = make_project(
        tmp_path / "p", {**pages, "guide.md": GUIDE, "mixed.md": MIXED, "english.md": ENGLISH}
    )
    base = open_kb(root)
    yield base
    base.close()


def paths(kb: KnowledgeBase, query: str) -> list[str]:
    return [hit.path for hit in kb.search(query).results]


def test_a_chinese_word_finds_the_longer_run_holding_it_in_a_title_and_in_a_body(kb: KnowledgeBase) -> None:
    assert paths(kb, "部署")[0] == "guide.md"  # the title 部署指南
    assert "zh-hexo.md" in paths(kb, "部署")  # the body's 部署网站
    assert paths(kb, "部署网站")[0] == "zh-hexo.md"
    assert paths(kb, "归档")[0] == "zh-tar.md"  # 归档实用程序 in the description
    assert paths(kb, "移除 檔案")[0] == "zh_TW-rm.md"  # Traditional Chinese


def test_japanese_kana_and_kanji_words_are_found_inside_sentences(kb: KnowledgeBase) -> None:
    assert paths(kb, "アーカイブ")[0] == "ja-tar.md"  # katakana
    assert paths(kb, "圧縮")[0] == "ja-tar.md"  # kanji inside 圧縮方法と組み合わせる
    assert "**アーカイブ**" in kb.search("アーカイブ").results[0].snippet


def test_a_korean_word_is_found_whatever_particle_it_carries(kb: KnowledgeBase) -> None:
    assert paths(kb, "파일 삭제")[0] == "ko-del.md"  # the page says 파일을 삭제하는
    assert paths(kb, "파일을 삭제")[0] == "ko-del.md"
    assert paths(kb, "아카이브 압축")[0] == "ko-tar.md"


def test_a_korean_question_whose_words_carry_other_particles_than_the_page_finds_it(
    kb: KnowledgeBase,
) -> None:
    # The page has 아카이브 파일을 ... 추출 and 파일 확장자를 ... 압축: no word of these is written so there.
    assert paths(kb, "아카이브를 추출하려면")[0] == "ko-tar.md"
    assert paths(kb, "확장자로 압축을")[0] == "ko-tar.md"
    assert paths(kb, "명령어로 삭제하기")[0] == "ko-del.md"  # 명령어. and 삭제하는


@pytest.mark.parametrize(
    ("asked", "written"),
    [
        ("파일을", "파일이"),
        ("설정에서", "설정의"),
        ("클래스를", "클래스와"),
        ("추출하려면", "추출된"),
        ("포맷하기", "포맷합니다"),
    ],
)
def test_the_index_and_the_query_cut_a_korean_word_alike(asked: str, written: str) -> None:
    """A query word's stem phrase is made of pieces the index holds for the word with any ending."""
    indexed = set(segment.segmented(f"{written} 다른 말").split())
    cut = [piece for piece, is_cut in segment.query_pieces(asked) if is_cut]
    assert cut == [" ".join(segment.bigrams(segment.korean_stem(asked)))]
    assert set(cut[0].split()) <= indexed
    assert segment.korean_stem(asked) == segment.korean_stem(written)


@pytest.mark.parametrize("word", ["추가", "결과", "속도", "스케줄링", "파일"])
def test_a_korean_word_that_only_looks_like_it_ends_in_a_particle_is_kept_whole(word: str) -> None:
    assert segment.korean_stem(word) == word


def test_a_thai_word_is_found_inside_a_sentence_without_spaces(kb: KnowledgeBase) -> None:
    assert paths(kb, "ไวรัส")[0] == "th-clamscan.md"  # in ตรวจหาไวรัสบนคอมมานด์ไลน์
    assert paths(kb, "แสกน ไดเรคทอรี")[0] == "th-clamscan.md"
    assert "**ไวรัส**" in kb.search("ไวรัส").results[0].snippet


def test_english_identifiers_in_chinese_prose_work_spaced_or_glued(kb: KnowledgeBase) -> None:
    assert paths(kb, "使用 kubectl 部署")[0] == "mixed.md"
    assert paths(kb, "使用kubectl部署")[0] == "mixed.md"
    assert set(paths(kb, "kubectl")) == {"mixed.md", "english.md"}


def test_a_snippet_marks_the_matched_chinese_words(kb: KnowledgeBase) -> None:
    [hit] = [hit for hit in kb.search("部署 网站").results if hit.path == "zh-hexo.md"]
    assert "**部署网站**" in hit.snippet or ("**部署**" in hit.snippet and "**网站**" in hit.snippet)
    [hit] = [hit for hit in kb.search("kubectl 部署").results if hit.path == "mixed.md"]
    assert "**kubectl**" in hit.snippet and "**部署**" in hit.snippet
    assert len(hit.snippet) < 400


def test_a_snippet_of_text_without_spaces_is_cut_to_its_window(tmp_path: Path) -> None:
    page = "# 长文\n\n" + "这是一个没有空格的很长的段落" * 400 + "回滚操作" + "其余的内容" * 400 + "\n"
    kb = open_kb(make_project(tmp_path / "p", {"long.md": page}))
    try:
        [hit] = kb.search("回滚").results
        assert "**回滚**" in hit.snippet and len(hit.snippet) < 300
    finally:
        kb.close()


def test_a_hit_points_at_the_chinese_section_holding_the_words(tmp_path: Path) -> None:
    filler = "服务会在每天夜里自动重启并写入新的日志文件，值班同学需要在早上检查告警。" * 30
    sections = "".join(f"## 第{n}部分\n\n{filler}\n\n" for n in range(12))
    page = (
        "# 运维手册\n\n"
        + sections
        + "## 回滚步骤\n\n如果发布失败，先停止流量，再回滚到上一个版本。\n\n"
        + sections
    )
    kb = open_kb(make_project(tmp_path / "p", {"handbook.md": page}))
    try:
        [hit] = kb.search("回滚 版本").results
        assert hit.section == "运维手册 > 回滚步骤"
        assert kb.load("handbook.md").text[hit.offset :].startswith("## 回滚步骤")
    finally:
        kb.close()


def test_english_queries_and_the_index_of_english_text_are_as_before() -> None:
    compiled = compile_query("How do I roll back a deployment?")
    assert compiled.terms == ("roll", "back", "deployment")
    assert compiled.match == '"roll" OR "back" OR "deployment"'
    assert segment.segmented("Run the deployment with kubectl, café and naïve.") == ""


def test_english_known_items_rank_as_before(kb: KnowledgeBase) -> None:
    assert paths(kb, "watch the rollout") == ["english.md"]
    assert paths(kb, "deployments")[0] == "english.md"  # Porter stemming kept


def _as_schema_6(index: Path) -> None:
    """What an index of schema 6 had: unicode61 cutting Thai marks, no segmented columns."""
    old = "porter unicode61 remove_diacritics 2"
    with closing(sqlite3.connect(index)) as conn, conn:
        rows = conn.execute(f"SELECT rowid, {', '.join(COLUMNS)} FROM documents_fts").fetchall()
        bodies = {row[0]: row[-1] for row in rows}
        conn.execute("DROP TABLE documents_fts")
        conn.execute("DROP TABLE passages_fts")
        conn.execute(
            f"CREATE VIRTUAL TABLE documents_fts USING fts5({', '.join(COLUMNS)}, tokenize = '{old}')"
        )
        conn.execute(
            f"CREATE VIRTUAL TABLE passages_fts USING fts5(heading, body, content = '', tokenize = '{old}')"
        )
        conn.executemany(
            f"INSERT INTO documents_fts (rowid, {', '.join(COLUMNS)}) VALUES (?{', ?' * len(COLUMNS)})", rows
        )
        for id_, doc_id, start, length, heading in conn.execute(
            "SELECT id, doc_id, start, length, heading FROM passages"
        ).fetchall():
            body = bodies[doc_id][start : start + length]
            conn.execute(
                "INSERT INTO passages_fts (rowid, heading, body) VALUES (?, ?, ?)", (id_, heading, body)
            )
        conn.execute("PRAGMA user_version = 6")


def test_an_index_built_before_segmentation_is_rebuilt_once_keeping_its_vectors(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"guide.md": GUIDE, "english.md": ENGLISH})
    settings = load_settings(root)
    open_kb(root).close()
    _as_schema_6(settings.index_path)
    with closing(sqlite3.connect(settings.index_path)) as conn, conn:
        conn.execute(
            "INSERT INTO embeddings (doc_id, chunk, sha256, model, vector) VALUES (1, 0, 's', 'm', x'00')"
        )
    kb = KnowledgeBase.open(settings)  # no scan: the upgrade alone makes the words findable
    try:
        assert kb.store.repaired == f"{RESEGMENTED}; {REREAD}"
        assert [hit.path for hit in kb.search("部署").results] == ["guide.md"]
        assert [hit.path for hit in kb.search("rollout").results] == ["english.md"]
        conn = kb.store.reader()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
        for table in ("documents_fts", "passages_fts"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
    finally:
        kb.close()
    again = KnowledgeBase.open(settings)
    try:
        assert again.store.repaired is None  # once
    finally:
        again.close()


def test_a_megabyte_of_han_without_a_space_is_indexed_and_searched_within_the_caps(tmp_path: Path) -> None:
    run = "".join(chr(0x4E00 + (index * 7919) % 20000) for index in range(1024 * 1024))
    kb = open_kb(make_project(tmp_path / "p", {"wall.md": "# 墙\n\n" + run + "\n", "guide.md": GUIDE}))
    try:
        assert kb.store.count_documents() == 2
        hits = kb.search(run[5000:5012]).results
        assert hits[0].path == "wall.md" and len(hits[0].snippet) < 400
        result = kb.search(run)  # a megabyte of query: its first MAX_TERMS pieces are searched
        assert result.results[0].path == "wall.md" and "cut to its first" in (result.note or "")
        assert paths(kb, "部署") == ["guide.md"]
    finally:
        kb.close()


def test_segmented_words_are_capped_and_the_query_keeps_its_term_budget() -> None:
    wall = "汉字" * (INDEX_TEXT_CAP // 3)
    assert len(segment.segmented(wall)) <= segment.MAX_SEGMENTED_CHARS + 8
    compiled = compile_query("".join(chr(0x4E00 + index) for index in range(5000)))
    assert len(compiled.terms) == MAX_TERMS and compiled.dropped_terms > 4000


def test_a_korean_word_is_searched_by_its_stem_and_a_sentence_typed_without_spaces_by_its_pieces(
    tmp_path: Path,
) -> None:
    files = {
        "whole.md": "# 설정\n\n설정 파일을 엽니다.\n",
        "other.md": "# 없음\n\n그런 파일이 없습니다.\n",
        "scattered.md": "# 목록\n\n목록과 일을 합니다.\n",
    }
    kb = open_kb(make_project(tmp_path / "p", {**files, "guide.md": GUIDE}))
    try:
        # the word as written first, then with another particle; 일을 alone is not the word
        assert paths(kb, "파일을") == ["whole.md", "other.md"]
        assert paths(kb, "怎样发布应用到生产环境")[0] == "guide.md"  # not verbatim: found by its pieces
    finally:
        kb.close()
