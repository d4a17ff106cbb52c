"""Semantic recall (optional extra): keywords and embeddings fused. The model tests run only where the
`semantic` extra is installed (they load all-MiniLM-L6-v2 from its wheel, offline); the fallback to
keyword recall is tested everywhere."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from my_agent_core.memory.providers import ProviderContext, build_manager, semantic
from my_agent_core.memory.providers.items import RecallItem
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
    finally:
        manager.shutdown()


def test_fusion_ranks_what_either_list_ranks_high() -> None:
    def item(n: int) -> RecallItem:
        return RecallItem(id=str(n), kind="turn", text=f"item {n}")

    fused = semantic.fuse([item(1), item(2), item(3)], [item(3), item(4)])
    assert [i.id for i in fused][:1] == ["3"], "in both lists beats first in one"
    assert {i.id for i in fused} == {"1", "2", "3", "4"}


class HashEmbedder:
    """A deterministic stand-in with the real interface: similar only when texts are equal."""

    name = "hash-test"
    dim = 8

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        import numpy as np

        out = []
        for text in texts:
            seed = hashlib.sha256(text.encode()).digest()
            v = np.frombuffer(seed, dtype=np.uint8)[: self.dim].astype("<f4") - 127.5
            out.append((v / np.linalg.norm(v)).astype("<f4").tobytes())
        return out


def test_vectors_follow_items_through_delete(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    provider = semantic.HybridArchiveProvider(tmp_path, embedder=HashEmbedder(), session_id="a")
    try:
        provider.sync_turn("alpha question", "alpha answer")
        provider.sync_turn("beta question", "beta answer")
        (first_id, score), _ = provider.vectors.nearest(
            HashEmbedder().embed(["alpha question\nalpha answer"])[0], 2
        )
        assert score == pytest.approx(1.0, abs=1e-5)
        assert provider.get(str(first_id)) is not None
        assert provider.delete(str(first_id))
        assert all(i != first_id for i, _ in provider.vectors.nearest(b"\0" * 32, 5))
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
