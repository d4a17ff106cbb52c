"""A separate writer process for the multi-process store tests (run as a script, never imported by pytest).

memory_writer.py add DIR PREFIX COUNT TARGET GO_FILE   add COUNT entries once GO_FILE exists
memory_writer.py counter DIR NAME COUNT GO_FILE        bump this writer's fixed-width entry COUNT times;
                                                       exit 3 if another writer's stale write lost one
memory_writer.py churn DIR SIZE                        rewrite one large entry forever (killed by the test)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from my_agent_core.memory import MemoryEditError, MemoryStore

BIG = 10**9


def blob(version: int, size: int) -> str:
    """A large entry whose every part depends on `version`, so a torn or mixed file cannot pass as one."""
    unit = f"{version:08d}{chr(0x4E00 + version % 2000)}\u00e9|"
    return f"BLOB {version:08d}\n" + (unit * (size // len(unit) + 1))[:size]


def blob_version(entry: str) -> int:
    return int(entry.split("\n", 1)[0].split()[1])


def _wait_for(go_file: str) -> None:
    while not os.path.exists(go_file):
        time.sleep(0.001)


def _add(mem_dir: str, prefix: str, count: int, target: str, go_file: str) -> int:
    store = MemoryStore(mem_dir, memory_char_limit=BIG, user_char_limit=BIG)
    _wait_for(go_file)
    for n in range(count):
        store.add(target, f"{prefix}-{n:03d}")
    return 0


def _counter(mem_dir: str, name: str, count: int, go_file: str) -> int:
    store = MemoryStore(mem_dir, memory_char_limit=BIG)
    _wait_for(go_file)
    lost = 0
    for n in range(count):
        try:
            store.replace("memory", f"{name}:{n:06d}", f"{name}:{n + 1:06d}")
        except MemoryEditError:
            lost += 1  # our previous value is gone: someone wrote a stale copy over it
            store.replace("memory", f"{name}:", f"{name}:{n + 1:06d}")
    print(f"{name} lost {lost}", flush=True)
    return 3 if lost else 0


def _churn(mem_dir: str, size: int) -> int:
    store = MemoryStore(mem_dir, memory_char_limit=BIG)
    store.load_from_disk()
    version = blob_version(store.entries("memory")[0])
    announced = False
    while True:
        version += 1
        store.replace("memory", "BLOB ", blob(version, size))
        if not announced:
            print("ready", flush=True)
            announced = True


def _die(mem_dir: str, stage: str, text: str) -> int:
    """Crash deterministically inside the store's write path, as a power cut or kill -9 would."""

    def kill_self(*_args: object, **_kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    real_fsync, real_replace = os.fsync, os.replace
    if stage == "fsync":
        os.fsync = kill_self  # type: ignore[assignment]
    elif stage == "replace":

        def replace(src: object, dst: object) -> None:
            if str(dst).endswith(("MEMORY.md", "USER.md")):
                kill_self()
            real_replace(src, dst)  # type: ignore[arg-type]

        os.replace = replace  # type: ignore[assignment]
    elif stage == "journal":

        def fsync(fd: int) -> None:
            real_fsync(fd)
            if os.path.isdir(f"/proc/self/fd/{fd}"):  # the folder fsync that follows the rename
                kill_self()

        os.fsync = fsync  # type: ignore[assignment]
    else:
        raise SystemExit(f"unknown stage {stage!r}")
    MemoryStore(mem_dir, memory_char_limit=BIG).add("memory", text)
    return 0


def main(argv: list[str]) -> int:
    mode, mem_dir, *rest = argv
    Path(mem_dir).mkdir(parents=True, exist_ok=True)
    if mode == "add":
        prefix, count, target, go_file = rest
        return _add(mem_dir, prefix, int(count), target, go_file)
    if mode == "counter":
        name, count, go_file = rest
        return _counter(mem_dir, name, int(count), go_file)
    if mode == "die":
        stage, text = rest
        return _die(mem_dir, stage, text)
    if mode == "churn":
        return _churn(mem_dir, int(rest[0]))
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
