"""Semantic recall (optional extra): keywords and embeddings fused. The model tests run only where the
`semantic` extra is installed (they load all-MiniLM-L6-v2 from its wheel, offline); the fallback to
keyword recall is tested everywhere."""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from my_agent_core.memory.providers import ProviderContext, build_manager, semantic
from my_agent_core.memory.providers.archive import ArchiveProvider, archive_path
from my_agent_core.memory.providers.items import RecallItem
from my_agent_core.memory.providers.registry import SEMANTIC_ENV, semantic_enabled
from my_agent_core.memory.providers.vectors import VECTOR_FILE
from tests.support.recall_corpus import PARAPHRASES, RELATED, REMOVED, TURNS, UNRELATED


def test_without_the_extra_semantic_falls_back_to_keywords(tmp_path: Path) -> None:
    if semantic.unavailable() is None:
        pytest.skip("the semantic extra is installed here")
    notices: list[str] = []
    manager = build_manager(
        ProviderContext(tmp_path, settings={"semantic": True}),
        on_error=lambda _name, message: notices.append(message),
    )
    try:
        assert manager.name == "archive" and manager.active
        assert len(notices) == 1 and "download.pytorch.org/whl/cpu" in notices[0]
        assert "1.6 GB" in notices[0]
    finally:
        manager.shutdown()


def test_fusion_ranks_what_either_list_ranks_high() -> None:
    def item(n: int) -> RecallItem:
        return RecallItem(id=str(n), kind="turn", text=f"item {n}")

    fused = semantic.fuse([item(1), item(2), item(3)], [item(3), item(4)])
    assert [i.id for i in fused][:1] == ["3"], "in both lists beats first in one"
    assert {i.id for i in fused} == {"1", "2", "3", "4"}


# ------------------------------------------------------------------ the switch


@pytest.mark.parametrize(
    ("settings", "env", "on"),
    [
        ({}, {}, False),
        ({"semantic": True}, {}, True),
        ({"semantic": False}, {}, False),
        ({}, {SEMANTIC_ENV: "1"}, True),
        ({}, {SEMANTIC_ENV: "true"}, True),
        ({}, {SEMANTIC_ENV: "0"}, False),
        ({}, {SEMANTIC_ENV: "off"}, False),
        ({"semantic": False}, {SEMANTIC_ENV: "1"}, True),
    ],
)
def test_one_switch_for_the_editor_the_cli_the_mcp_server_and_the_api(
    settings: dict[str, object], env: dict[str, str], on: bool
) -> None:
    assert semantic_enabled(settings, env) is on


def test_the_environment_switch_reaches_the_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build_manager` (what the Python API and every front end use) reads MY_AGENT_SEMANTIC."""
    monkeypatch.setenv(SEMANTIC_ENV, "1")
    notices: list[str] = []
    manager = build_manager(ProviderContext(tmp_path), on_error=lambda _n, m: notices.append(m))
    try:
        if semantic.unavailable() is None:
            assert isinstance(manager.provider, semantic.HybridArchiveProvider)
        else:
            assert notices and "Semantic recall is on" in notices[0]
    finally:
        manager.shutdown()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", *args],
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith("MY_AGENT_")},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def test_the_cli_and_the_mcp_server_take_the_switch(tmp_path: Path) -> None:
    if semantic.unavailable() is None:
        pytest.skip("the semantic extra is installed here (the real model runs below)")
    writer = ArchiveProvider(tmp_path)
    writer.sync_turn("Which port does staging use?", "6543")
    writer.shutdown()
    searched = _cli("recall", "--semantic", "staging", cwd=tmp_path)
    assert searched.returncode == 2 and "download.pytorch.org/whl/cpu" in searched.stderr
    assert len(searched.stderr.strip().splitlines()) == 1
    served = _cli("mcp", "--semantic", cwd=tmp_path)
    assert served.returncode == 2 and "--semantic: semantic recall needs" in served.stderr
    plain = _cli("recall", "staging", cwd=tmp_path)  # the benign twin: keywords as before
    assert plain.returncode == 0 and "6543" in plain.stdout


# ------------------------------------------------------------------ with a stand-in model


_TOPICS = [
    {"database", "postgres", "port", "db", "staging", "sql"},
    {"deploy", "deploys", "release", "helm", "rollout", "ship"},
    {"invoice", "invoices", "billing", "payment", "paid"},
    {"lint", "style", "format", "ruff", "tabs"},
]


class TopicEmbedder:
    """A small stand-in with the real interface: texts about the same topic are close (cosine 1),
    texts about different topics far apart (0). Plain Python: runs without the extra."""

    name = "topic-test"
    dim = len(_TOPICS) + 1

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        self.calls += len(texts)
        out = []
        for text in texts:
            words = set(text.lower().replace("?", " ").replace(".", " ").split())
            counts = [float(len(words & topic)) for topic in _TOPICS] + [0.0]
            if not any(counts):
                counts[-1] = 1.0
            norm = math.sqrt(sum(c * c for c in counts))
            out.append(struct.pack(f"<{self.dim}f", *(c / norm for c in counts)))
        return out


OLD_FACT = (  # mostly about the database, a little about deploys: close to a db question, not equal
    "What port does the staging postgres listen on?",
    "Staging postgres: port 6543 (set by the helm release).",
)


def test_old_items_get_their_vectors_in_the_background(tmp_path: Path) -> None:
    """Items archived while semantic recall was off are found by meaning once it is on."""
    plain = ArchiveProvider(tmp_path, session_id="earlier")
    plain.sync_turn(*OLD_FACT)
    for n in range(40):
        plain.sync_turn(f"Question {n} about lint style", f"Use ruff format {n}.")
    plain.shutdown()
    hybrid = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder(), session_id="now")
    try:
        assert hybrid.wait_idle(30) and hybrid.status == "ready"
        assert hybrid.vectors is not None and hybrid.vectors.count() == 41
        found = hybrid.search_items("which db endpoint for sql", 3)  # no word in common
        assert found and "6543" in found[0].text
    finally:
        hybrid.shutdown()


def test_the_model_loads_in_the_background_and_recall_is_keywords_meanwhile(
    tmp_path: Path,
) -> None:
    release = threading.Event()

    def slow_model() -> semantic.Embedder:
        release.wait(30)
        return TopicEmbedder()

    started = time.monotonic()
    hybrid = semantic.HybridArchiveProvider(tmp_path, embedder=slow_model, session_id="s")
    try:
        assert time.monotonic() - started < 5, "a session never waits for the model"
        assert hybrid.status == "loading the semantic model" and hybrid.vectors is None
        hybrid.sync_turn(*OLD_FACT)  # archived now, its vector comes later
        assert hybrid.search_items("staging postgres port", 3)  # keywords work meanwhile
        assert hybrid.search_items("which db endpoint for sql", 3) == []
        release.set()
        assert hybrid.wait_idle(30)
        found = hybrid.search_items("which db endpoint for sql", 3)
        assert found and "6543" in found[0].text
    finally:
        release.set()
        hybrid.shutdown()


def test_a_model_that_fails_to_load_leaves_keyword_recall_and_says_so(tmp_path: Path) -> None:
    notices: list[str] = []

    def broken() -> semantic.Embedder:
        raise OSError("model files missing")

    hybrid = semantic.HybridArchiveProvider(
        tmp_path, embedder=broken, session_id="s", report=notices.append
    )
    try:
        assert hybrid.wait_idle(30)
        assert "keyword recall only" in hybrid.status and "model files missing" in notices[0]
        hybrid.sync_turn(*OLD_FACT)
        assert hybrid.search_items("staging postgres", 3)
    finally:
        hybrid.shutdown()


def test_this_sessions_own_items_never_crowd_an_older_fact_out(tmp_path: Path) -> None:
    """The session's own items are left out BEFORE the nearest vectors are taken: after many
    turns on one topic, an older fact on that topic is still recalled."""
    earlier = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder(), session_id="old")
    earlier.sync_turn(*OLD_FACT)
    earlier.shutdown()
    now = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder(), session_id="now")
    try:
        assert now.wait_idle(30)
        for n in range(semantic.RECALL_NEIGHBOURS + 4):  # more than the neighbours recall takes
            now.sync_turn(f"staging db question {n}", f"staging sql answer {n}")
        recalled = now.prefetch_items("is the staging db up")
        assert any("6543" in item.text for item in recalled), [i.text for i in recalled]
        assert all(item.session != "now" for item in recalled)
    finally:
        now.shutdown()


def test_search_puts_items_holding_every_word_first(tmp_path: Path) -> None:
    hybrid = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder(), session_id="s")
    try:
        hybrid.sync_turn("staging deploy", "The staging rollout goes through Helm.")
        for n in range(6):
            hybrid.sync_turn(f"postgres port {n}", f"db on staging {n}")
        found = hybrid.search_items("staging helm rollout", 5)
        assert "goes through Helm" in found[0].text
    finally:
        hybrid.shutdown()


def test_nothing_is_created_until_the_first_write_and_vectors_are_private(tmp_path: Path) -> None:
    hybrid = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder(), session_id="s")
    try:
        assert hybrid.wait_idle(30)
        assert hybrid.search_items("anything", 3) == [] and hybrid.prefetch_items("x y z") == []
        assert not (tmp_path / ".my_agent_core").exists()
        hybrid.sync_turn(*OLD_FACT)
        vectors = archive_path(tmp_path, create=False).with_name(VECTOR_FILE)
        assert (vectors.stat().st_mode & 0o777) == 0o600
        assert (archive_path(tmp_path, create=False).stat().st_mode & 0o777) == 0o600
    finally:
        hybrid.shutdown()


def test_an_old_world_readable_vector_file_is_made_private(tmp_path: Path) -> None:
    first = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder())
    first.sync_turn(*OLD_FACT)
    first.shutdown()
    vectors = archive_path(tmp_path, create=False).with_name(VECTOR_FILE)
    os.chmod(vectors, 0o644)  # as an older version left it
    again = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder())
    try:
        assert (vectors.stat().st_mode & 0o777) == 0o600
    finally:
        again.shutdown()


def test_vectors_follow_items_through_delete(tmp_path: Path) -> None:
    provider = semantic.HybridArchiveProvider(tmp_path, embedder=TopicEmbedder(), session_id="a")
    try:
        provider.sync_turn("staging postgres question", "port 6543")
        provider.sync_turn("helm deploy question", "release train")
        assert provider.wait_idle(30) and provider.vectors is not None
        (first_id, score), _ = provider.vectors.nearest(TopicEmbedder().embed(["postgres"])[0], 2)
        assert score == pytest.approx(1.0, abs=1e-5)
        assert provider.get(str(first_id)) is not None
        assert provider.delete(str(first_id))
        assert all(i != first_id for i, _ in provider.vectors.nearest(b"\0" * 20, 5))
    finally:
        provider.shutdown()


needs_model = pytest.mark.skipif(semantic.unavailable() is not None, reason="no semantic extra")


@pytest.fixture(scope="module")
def embedder() -> semantic.Embedder:
    return semantic.MiniLMEmbedder()


@pytest.fixture(scope="module")
def hybrid(
    tmp_path_factory: pytest.TempPathFactory, embedder: semantic.Embedder
) -> Iterator[semantic.HybridArchiveProvider]:
    folder = tmp_path_factory.mktemp("hybrid")
    writer = semantic.HybridArchiveProvider(folder, embedder=embedder, session_id="earlier")
    for user, reply in TURNS:
        writer.sync_turn(user, reply)
    for target, action, before, after in REMOVED:
        writer.on_memory_write(target, action, before, after)
    writer.shutdown()
    reader = semantic.HybridArchiveProvider(folder, embedder=embedder, session_id="now")
    yield reader
    reader.shutdown()


@needs_model
def test_reworded_questions_are_found(hybrid: semantic.HybridArchiveProvider) -> None:
    found = sum(
        any(marker in item.text for item in hybrid.search_items(q, 3)) for q, marker in PARAPHRASES
    )
    assert found >= 13, f"hit@3 {found}/{len(PARAPHRASES)}"


@needs_model
def test_hybrid_recall_keeps_the_bar(hybrid: semantic.HybridArchiveProvider) -> None:
    assert [q for q in UNRELATED if hybrid.prefetch_items(q)] == []
    for message, marker in RELATED:
        assert any(marker in item.text for item in hybrid.prefetch_items(message)), message
    reworded = sum(
        any(marker in i.text for i in hybrid.prefetch_items(q)) for q, marker in PARAPHRASES
    )
    assert reworded >= 8, f"recalled {reworded}/{len(PARAPHRASES)} reworded questions"
