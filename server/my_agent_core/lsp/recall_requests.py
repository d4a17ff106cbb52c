"""`myAgent/recall/search|get|delete`: the Recall view's requests, validated here and served by
`ls.recall` (`recall_service.py`).

Registering them loads nothing of the recall archive: `ls.recall` is built on the first Recall
request (or the first write an agent outside our chat makes), so the server's first answers do not
wait for it, as with the chat (`chat_requests.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .params import invalid, opt_int, opt_str, req_str, to_params
from .protocol_types import RecallGetResult, RecallSearchResult

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = ["DEFAULT_LIMIT", "MAX_ID_CHARS", "MAX_LIMIT", "MAX_QUERY_CHARS", "register"]

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
MAX_QUERY_CHARS = 2000
MAX_ID_CHARS = 200


def register(ls: MyAgentServer) -> None:
    """The Recall view's requests; once the service runs, its providers follow the folders and
    the settings."""

    def settings_changed() -> None:
        if ls.recall_started:
            ls.recall.settings_changed()

    def folders_changed() -> None:
        if ls.recall_started:
            ls.recall.sync_folders()

    def shutdown() -> None:
        if ls.recall_started:
            ls.recall.close()

    ls.on_config_changed.append(settings_changed)
    ls.on_folders_changed.append(folders_changed)
    ls.on_shutdown.append(shutdown)

    @ls.feature("myAgent/recall/search")
    async def recall_search(ls: MyAgentServer, raw: Any) -> RecallSearchResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        query = req_str(params, "query", non_empty=True).strip()
        if len(query) > MAX_QUERY_CHARS:
            raise invalid(
                f"`query` is too long ({len(query):,} characters; at most {MAX_QUERY_CHARS:,})"
            )
        limit = opt_int(params, "limit", minimum=1, maximum=MAX_LIMIT)
        return await ls.recall.search(folder, query, limit or DEFAULT_LIMIT)

    @ls.feature("myAgent/recall/get")
    async def recall_get(ls: MyAgentServer, raw: Any) -> RecallGetResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        return await ls.recall.get(folder, _item_id(params))

    @ls.feature("myAgent/recall/delete")
    async def recall_delete(ls: MyAgentServer, raw: Any) -> dict[str, object]:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        await ls.recall.delete(folder, _item_id(params))
        return {}


def _item_id(params: dict[str, Any]) -> str:
    """`id`: a string (a number is accepted as its decimal text), at most MAX_ID_CHARS."""
    value = params.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    item_id = req_str(params, "id", non_empty=True)
    if len(item_id) > MAX_ID_CHARS:
        raise invalid(f"`id` is too long ({len(item_id):,} characters; at most {MAX_ID_CHARS})")
    return item_id
