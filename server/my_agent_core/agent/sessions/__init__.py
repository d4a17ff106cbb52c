"""Chat sessions persisted as they go and resumed byte for byte: `store` (the folder of session files:
list, load, prune), `format` (the records and their parser), `writer` (appends one session's records
under its lock), `signing` (only sessions this machine wrote are resumed) and `recorder` (what the
agent calls, never failing a turn)."""

from .recorder import SessionRecorder
from .signing import SessionKeyError, SessionNotTrusted
from .store import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_COUNT,
    MAX_SESSION_BYTES,
    SessionBusy,
    SessionDamaged,
    SessionError,
    SessionHeader,
    SessionInfo,
    SessionNotFound,
    SessionRecord,
    SessionStore,
    SessionWriter,
    new_session_id,
    title_of,
)

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MAX_COUNT",
    "MAX_SESSION_BYTES",
    "SessionBusy",
    "SessionDamaged",
    "SessionError",
    "SessionHeader",
    "SessionInfo",
    "SessionKeyError",
    "SessionNotFound",
    "SessionNotTrusted",
    "SessionRecord",
    "SessionRecorder",
    "SessionStore",
    "SessionWriter",
    "new_session_id",
    "title_of",
]
