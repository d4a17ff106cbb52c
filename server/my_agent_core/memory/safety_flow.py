"""Exfiltration by structure: a secret's VALUE flowing into a network sink, whatever the words.

A phrase rule reads an order ("send the API key to ..."); this reads a command or a URL. It finds
where a secret's value is used (`$OPENAI_API_KEY`, `${X}`, `%X%`, `$env:X`, `process.env.X`,
`os.environ[...]`, `os.getenv(...)`, `{X}` in a URL, the whole environment, or a secret file read:
`cat ~/.ssh/id_rsa`, `@.env`, `scp ~/.aws/credentials ...`), and reports it when, in the same
statement, the value reaches the network: it is inside a URL (query, path, host, an image or a link,
protocol-relative ones too), or it is an argument of, or piped into, a network command or call
(curl, wget, nc, scp, ssh, Invoke-WebRequest, fetch, requests ...) that has a destination.

Naming is not a flow: "Set OPENAI_API_KEY in .env; the base URL is https://api.openai.com/v1", "CI
reads $GITHUB_TOKEN from the repository secrets". Nor is a credential used as one:

- in an authentication position (an `Authorization:` or `X-Api-Key:` header, `-u user:$PASS`,
  `--token`, a URL's user info, `IdentityFile`, `ssh -i key`): always;
- in a query or form field named for a credential (`?appid=$OWM_API_KEY`, `-d client_secret=...`):
  when its name does not say whose it is (`$API_KEY`) or the destination belongs to the service the
  name says (`$OWM_API_KEY` to openweathermap.org);
- anywhere else in a command or URL: only when the destination belongs to that service (Telegram's
  `https://api.telegram.org/bot$TELEGRAM_TOKEN/...`) or is this machine or its network
  (`localhost`, `*.internal`, `10.x`).

A value in a Markdown image or link is never a use of the credential: the image loads by itself.
Statements are lines, shell commands (`;`, `&&`, `||`) and sentences; pipes join a command to the
next, as data flows through them. A value passed through a variable of another statement is not
followed (the residual this rule leaves, with header values sent to a foreign host).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["TRIGGERS", "secret_flows"]

# --- secrets: names, value references, files -----------------------------------------------------

# Name segments that say a variable holds a credential (folded: lowercase).
_SECRET_SEGMENTS = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "token",
        "tokens",
        "secret",
        "secrets",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "cred",
        "creds",
        "credential",
        "credentials",
        "auth",
        "pat",
        "privatekey",
    }
)
_SECRET_TAIL = re.compile(r"(?:key|token|secret|password|passwd|credentials?)$")
# Segments that make a name about a credential rather than the credential (`TOKEN_URL`, `KEY_FILE`).
_NOT_THE_VALUE = frozenset(
    {
        "url",
        "uri",
        "endpoint",
        "host",
        "file",
        "path",
        "dir",
        "sock",
        "socket",
        "id",
        "name",
        "type",
        "method",
        "header",
        "region",
        "mode",
        "enabled",
        "expiry",
        "expires",
        "ttl",
        "length",
        "len",
        "size",
        "count",
        "prefix",
        "version",
        "user",
        "username",
        "email",
        "scope",
        "scopes",
    }
)
_SEGMENT_SPLIT = re.compile(r"[_.\-]+")


def _is_secret_name(name: str) -> bool:
    segments = [s for s in _SEGMENT_SPLIT.split(name) if s]
    if not segments or segments[-1] in _NOT_THE_VALUE:
        return False
    return (
        any(s in _SECRET_SEGMENTS for s in segments)
        or _SECRET_TAIL.search(segments[-1]) is not None
    )


_NAME = r"([a-z_][a-z0-9_]*)"
_QUOTED = r"""\s*["'`]([a-z_][a-z0-9_.-]*)["'`]"""
# A reference to a variable's value, the name in group 1 .. 4 (whichever matched).
_VALUE_REF = re.compile(
    rf"\$\{{{_NAME}[^}}\n]{{0,40}}\}}|\$(?:env:)?{_NAME}|%{_NAME}%"
    rf"|(?:process\.env|import\.meta\.env)(?:\.{_NAME}|\[{_QUOTED}\s*\])"
    rf"|(?:os\.environ|env(?<![\w.]env))\[{_QUOTED}\s*\]"
    rf"|(?:os\.environ\.get|getenv|env::var|deno\.env\.get|getenvironmentvariable)\s*\({_QUOTED}"
)
# A template slot in a URL: `{OPENAI_API_KEY}`, `{{api_key}}`.
_SLOT = re.compile(r"\{\{?\s*([a-z_][a-z0-9_.]*)\s*\}?\}")
# The whole environment: `$(env)`, `env | ...`, `printenv`, `os.environ` or `process.env` whole.
_WHOLE_ENV = re.compile(
    r"\$\(\s*(?:env|printenv|set)\s*\)|`\s*(?:env|printenv)\s*`"
    r"|(?:printenv(?<![\w.$-]printenv)|env(?<![\w.$-]env))(?=\s*\|)"
    r"|os\.environ(?<![\w.]os\.environ)(?![\w.]|\s*\[)|process\.env(?<![\w.]process\.env)(?![\w.\[])"
    r"|get-childitem\s+env:"
)
# Files that hold secrets (not their public halves, host lists or example files).
# (Each alternative opens with a literal, so the search skips ahead; the character before a match,
# and the home folder a path may start with, are looked at by `_values`.)
_SECRET_FILE = re.compile(
    r"(?:\.ssh/(?!known_hosts\b|config\b|authorized_keys\b)[\w.-]+(?<!\.pub)(?![\w.-])"
    r"|\.ssh/?(?![\w./-])|\.env(?:\.(?:local|production|prod|development|dev|staging|test))?"
    r"(?![\w-]|\.\w)"
    r"|\.aws/credentials|\.netrc|_netrc|\.npmrc|\.pypirc|\.git-credentials|\.pgpass"
    r"|\.docker/config\.json|\.kube/config|\.config/gcloud(?:/[\w.-]+)*|\.azure(?:/[\w.-]+)*"
    r"|\.gnupg(?:/[\w.-]+)*|/etc/shadow"
    r"|id_(?:rsa|dsa|ecdsa|ed25519)(?![\w.-]))"
)
_HOME = re.compile(r"(?:~|\$home|\$\{home\}|%userprofile%|/root|/home/[\w.-]+)/$")
_VALUE_HINT = re.compile(r"[$%]|env|getenv")
_ENV_HINT = re.compile(r"env\s*[|)`]|environ\b|process\.env\b|env:")
_FILE_HINT = re.compile(
    r"\.ssh|\.env|\.aws|netrc|\.npmrc|\.pypirc|\.git-credentials|\.pgpass|\.docker/|\.kube/|gcloud"
    r"|\.azure|\.gnupg|/etc/shadow|id_(?:rsa|dsa|ecdsa|ed25519)"
)
# What a file is named for without its contents being sent: an option that authenticates with it
# (`ssh -i key`, `--netrc-file`), one that leaves it out (`--exclude .env`), a variable set to its path,
# the shell reading it (`source .env`), or a download written to it (`-o .env`, `> .env`).
_USES_FILE = re.compile(
    r"(?:(?:^|\s)(?:-i|-e|--identity(?:-file)?|--cert|--key|--netrc-file|--userconfig|--config-file"
    r"|--config|--kubeconfig|--credentials(?:-file)?|--env-file|--from-env-file|identityfile"
    r"|--exclude(?:-from)?|--ignore|source|\.|-o|--output(?:-document)?|tee(?:\s+-a)?)[\s=]*[\"']?"
    r"|(?:^|\s)[a-z_][a-z0-9_]*=[\"']?|>>?\s*[\"']?)$"
)

# --- sinks: destinations and network commands ----------------------------------------------------

_TLDS = (
    "com|net|org|io|xyz|ru|cn|top|me|dev|app|site|info|biz|co|sh|ly|example|tk|pw|cc|su|onion|"
    "ai|cloud|tech|online|store|fr|de|it|es|br|jp|kr|uk|us|ca|au|in|nl|pl|eu|ch|se|no|fi|cz|tv|gg"
)
# A URL taken whole (scheme or protocol-relative), a `user@host:` scp target, an address, a host.
_URL = re.compile(
    r"(?:\b[a-z][a-z0-9+.-]{1,9}://|(?<![\w:/.])//(?=[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:[:/?#]|\s|$)))"
    r"[^\s<>\"'`)\]]+"
)
_REMOTE_TARGET = re.compile(r"(?<![\w.@/-])[\w.-]+@([a-z0-9-]+(?:\.[a-z0-9-]+)*):")
# A host name that a value is the first label of (DNS exfiltration: `nslookup $KEY.x.example.net`).
_HOST_AFTER = re.compile(rf"\.((?:[a-z0-9-]+\.)+(?:{_TLDS}))(?![\w-])")
_ADDRESS = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])")
_HOST = re.compile(rf"(?<![\w./@-])(?:[a-z0-9-]+\.)+(?:{_TLDS})(?![\w-])")
_NETWORK_COMMAND = re.compile(
    r"(?<![\w./-])(?:curl|wget|nc|ncat|netcat|socat|telnet|ftp|tftp|sftp|scp|rsync|ssh|http|https|xh"
    r"|httpie|aria2c|invoke-webrequest|invoke-restmethod|iwr|irm|nslookup|dig|ping|sendmail|mutt"
    r"|openssl\s+s_client)(?![\w-])(?=\s+\S)"
    r"|\b(?:requests|httpx|aiohttp|session|axios|http|https|got|superagent|urllib3?)\.(?:get|post|put"
    r"|patch|request|delete|fetch)\s*\(|\b(?:fetch|urlopen|axios|sendbeacon|xmlhttprequest|websocket)"
    r"\s*\(|\bnew\s+websocket\b|\$\.(?:ajax|get|post)\s*\("
)
#: Substrings every flow holds (the scanner's gate): its destination, a URL (`//`) or an scp target
#: (`@`), or the network command or call that takes a destination without them.
TRIGGERS = (
    "//",
    "@",
    "curl",
    "wget",
    "nc ",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "ftp",
    "scp",
    "rsync",
    "ssh",
    "http",
    "xh ",
    "aria2c",
    "invoke-",
    "iwr",
    "irm",
    "nslookup",
    "dig ",
    "ping",
    "sendmail",
    "mutt",
    "openssl",
    "requests.",
    "session.",
    "axios",
    "got.",
    "superagent",
    "urllib",
    "fetch",
    "urlopen",
    "sendbeacon",
    "xmlhttprequest",
    "websocket",
    "$.",
)
# This machine and its network: a value sent there stays home.
_LOCAL_HOST = re.compile(
    r"(?:localhost|(?:[\w-]+\.)+(?:localhost|local|internal|lan|home\.arpa)|127(?:\.\d+){3}|0\.0\.0\.0"
    r"|10(?:\.\d+){3}|192\.168(?:\.\d+){2}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d+){2}|\[::1\])$"
)

# --- where a value stands -------------------------------------------------------------------------

# Just before the value: an authentication position (a header named for a credential, an option that
# takes one, a URL's user info).
_STRONG_AUTH = re.compile(
    r"(?:(?:proxy-)?authorization|[\w-]*(?:auth|key|token|secret|session|cookie|password|signature"
    r"|credential)[\w-]*)\s*[\"']?\s*:\s*[\"'`]?\s*(?:(?:bearer|token|basic|bot|apikey|key)\b)?$"
    r"|\b(?:bearer|token)$"
    r"|(?:^|\s)(?:-u|--user|-p|--password|--pass|--token|-t|--auth|--oauth2-bearer|--api-key|--apikey"
    r"|--access-token|--auth-token|--with-token|--header|-h|--username|--secret)(?:\s+|=)?[\"']?"
    r"(?:[^\s:\"']*:)?$"
)
# Just before the value: a query or form field named for a credential.
_FIELD_AUTH = re.compile(
    r"(?:^|[?&\s\"'{,(;-])(?:api[_-]?key|apikey|key|appid|app[_-]?id|access[_-]?token|token|"
    r"auth[_-]?token|auth|_authtoken|client[_-]?secret|password|passwd|pass|pwd|secret|api[_-]?token|"
    r"private[_-]?token|[a-z0-9_]*(?:key|token|secret|password))[\"']?\s*[=:]\s*[\"']?$"
)
_TRAILING = re.compile(r"(?:[\s\"'`{(+$]|\bf(?=[\"']))+$")
_STATEMENT_END = re.compile(r"\n|;|&&|\|\||[.!?。！？](?=\s)")
_BEFORE = 60  # how far before a value its position is read
_BLOCK = 256  # a statement reaches two blocks of this size beyond the value's own block

# Words of a variable name that do not say whose credential it is.
_GENERIC = frozenset(
    {
        *_SECRET_SEGMENTS,
        *_NOT_THE_VALUE,
        *[
            "api",
            "access",
            "private",
            "public",
            "client",
            "oauth",
            "oauth2",
            "id",
            "app",
            "bot",
            "personal",
            "bearer",
            "session",
            "refresh",
            "master",
            "admin",
            "root",
            "service",
            "account",
            "env",
            "var",
            "value",
            "my",
            "our",
            "the",
            "prod",
            "production",
            "dev",
            "development",
            "staging",
            "stage",
            "test",
            "testing",
            "local",
            "default",
            "main",
            "primary",
            "secondary",
            "new",
            "old",
            "read",
            "write",
            "readonly",
            "deploy",
            "deployment",
            "ci",
            "cd",
            "build",
            "release",
            "webhook",
            "hook",
            "db",
            "database",
            "postgres",
            "pg",
            "mysql",
            "redis",
            "mongo",
            "mongodb",
            "smtp",
            "mail",
            "email",
            "ftp",
            "ssh",
            "sftp",
            "registry",
            "server",
            "backend",
            "frontend",
            "internal",
            "external",
            "shared",
            "global",
            "team",
            "org",
            "project",
            "repo",
            "github_actions",
            "signing",
            "encryption",
            "jwt",
            "hmac",
            "cookie",
            "csrf",
            "basic",
        ],
    }
)
# The domains a service's name stands for, where they are not the name itself.
_ALIASES: dict[str, tuple[str, ...]] = {
    "gh": ("github", "githubusercontent", "ghcr"),
    "github": ("github", "githubusercontent", "ghcr"),
    "hf": ("huggingface", "hf"),
    "huggingface": ("huggingface", "hf"),
    "npm": ("npmjs",),
    "aws": ("amazonaws", "amazon", "aws"),
    "gcp": ("googleapis", "google", "googleusercontent"),
    "google": ("googleapis", "google", "googleusercontent"),
    "gemini": ("googleapis", "google"),
    "firebase": ("googleapis", "firebaseio", "firebase"),
    "gcloud": ("googleapis", "google"),
    "owm": ("openweathermap",),
    "openweather": ("openweathermap",),
    "tmdb": ("themoviedb",),
    "twine": ("pypi",),
    "pypi": ("pypi",),
    "azure": ("azure", "windows", "microsoft", "azurewebsites", "azure-api"),
    "microsoft": ("microsoft", "azure", "live", "microsoftonline"),
    "cf": ("cloudflare",),
    "tg": ("telegram",),
    "do": ("digitalocean",),
    "docker": ("docker",),
}


@dataclass(frozen=True, slots=True)
class _Value:
    """A secret's value in the text: its span and the service its name says (empty: none)."""

    start: int
    end: int
    owners: tuple[str, ...]
    read_file: bool = False


def _owners(name: str) -> tuple[str, ...]:
    segments = [
        s for s in _SEGMENT_SPLIT.split(name) if s and s not in _GENERIC and not s.isdigit()
    ]
    out: list[str] = []
    for segment in segments:
        out += _ALIASES.get(segment, (segment,))
    return tuple(dict.fromkeys(out))


def _registrable(host: str) -> str:
    """The part of a host its owner registers (`api.openai.com` -> `openai`, `x.co.uk` -> `x`)."""
    labels = [label for label in host.split(".") if label]
    if (
        len(labels) >= 3
        and len(labels[-1]) == 2
        and labels[-2] in {"co", "com", "net", "org", "ac", "gov", "edu", "ne", "or", "go"}
    ):
        return labels[-3]
    return labels[-2] if len(labels) >= 2 else (labels[0] if labels else "")


def _host_of(destination: str) -> str:
    """The host a destination names (a URL, `user@host:`, an address, a host)."""
    rest = destination.split("://", 1)[1] if "://" in destination else destination.lstrip("/")
    rest = re.split(r"[/?#]", rest, maxsplit=1)[0]
    rest = rest.rsplit("@", 1)[-1]
    if rest.startswith("["):
        return rest.split("]", 1)[0] + "]"
    return rest.split(":", 1)[0].rstrip(".")


def _belongs(owners: tuple[str, ...], host: str) -> bool:
    return bool(owners) and _registrable(host) in owners


# --- finding them ---------------------------------------------------------------------------------


def _values(text: str, start: int, end: int) -> Iterator[_Value]:
    # Each pattern only where its cheapest marker occurs (most text has none of them).
    if _VALUE_HINT.search(text, start, end) is not None:
        for m in _VALUE_REF.finditer(text, start, end):
            name = next(g for g in m.groups() if g is not None)
            if _is_secret_name(name):
                yield _Value(m.start(), m.end(), _owners(name))
    if _ENV_HINT.search(text, start, end) is not None:
        for m in _WHOLE_ENV.finditer(text, start, end):
            yield _Value(m.start(), m.end(), ())
    if _FILE_HINT.search(text, start, end) is None:
        return
    for m in _SECRET_FILE.finditer(text, start, end):
        head = text[max(0, m.start() - _BEFORE) : m.start()]
        home = _HOME.search(head)
        if home is not None:
            head = head[: home.start()]
        elif head and (head[-1].isalnum() or head[-1] in "_.-"):
            continue  # inside another name (`app.env`, `my_id_rsa_backup`)
        remote = head.endswith(":")  # `scp host:~/.ssh/id_rsa .` fetches a remote file
        if not remote and _USES_FILE.search(head) is None:
            yield _Value(
                m.start() - (len(home.group()) if home else 0), m.end(), (), read_file=True
            )


Destination = tuple[int, int, str, bool]  # start, end, host, in an image or link


class _Statements:
    """The statements of one text, each cut and read once: a long line of values costs a pass.

    A statement runs from the last break before a value to the next after it, within the block
    of `_BLOCK` characters the value is in and two blocks either side, so at least 512 and at most
    768 characters each way (blocks are fixed places of the text: any window of it sees the same
    statements)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._breaks: dict[int, list[tuple[int, int]]] = {}
        self._sinks: dict[tuple[int, int], tuple[list[Destination], list[int]]] = {}

    def _block(self, block: int) -> list[tuple[int, int]]:
        found = self._breaks.get(block)
        if found is None:
            lo, hi = block * _BLOCK, (block + 1) * _BLOCK
            ends = _STATEMENT_END.finditer(self.text, lo, min(len(self.text), hi + 2))
            found = self._breaks[block] = [m.span() for m in ends if m.start() < hi]
        return found

    def bounds(self, at: int, stop: int) -> tuple[int, int]:
        begin = max(0, (at // _BLOCK - 2) * _BLOCK)
        for block in range(begin // _BLOCK, at // _BLOCK + 1):
            for _, e in self._block(block):
                if e <= at:
                    begin = max(begin, e)
        end = min(len(self.text), (stop // _BLOCK + 3) * _BLOCK)
        for block in range(stop // _BLOCK, (end - 1) // _BLOCK + 1):
            after = [s for s, _ in self._block(block) if s >= stop]
            if after:
                return begin, min(after)
        return begin, end

    def sinks(self, begin: int, stop: int) -> tuple[list[Destination], list[int]]:
        """The statement's destinations, and where its network commands start."""
        key = (begin, stop)
        found = self._sinks.get(key)
        if found is None:
            commands = [m.start() for m in _NETWORK_COMMAND.finditer(self.text, begin, stop)]
            found = self._sinks[key] = (_destinations(self.text, begin, stop), commands)
        return found


def _destinations(text: str, begin: int, end: int) -> list[Destination]:
    """Each destination in the statement `text[begin:end]`."""
    found: list[Destination] = []
    taken: list[tuple[int, int]] = []
    for m in _URL.finditer(text, begin, end):
        head = text[max(begin, m.start() - 3) : m.start()]
        linked = head.endswith(("](", "](<")) or head.rstrip().endswith("](")
        found.append((m.start(), m.end(), _host_of(m.group()), linked))
        taken.append(m.span())
    for pattern in (_REMOTE_TARGET, _ADDRESS, _HOST):
        for m in pattern.finditer(text, begin, end):
            if not any(s <= m.start() < e for s, e in taken):
                host = m.group(1) if pattern is _REMOTE_TARGET else m.group()
                found.append((m.start(), m.end(), host, False))
                taken.append(m.span())
    return found


def _position(text: str, begin: int, start: int) -> str:
    """`strong` (a credential used to authenticate), `field` (a field named for one), or `data`."""
    head = _TRAILING.sub("", text[max(begin, start - _BEFORE) : start])
    if _STRONG_AUTH.search(head):
        return "strong"
    if _FIELD_AUTH.search(head):
        return "field"
    return "data"


def _in_user_info(url: str, offset: int) -> bool:
    """Whether `offset` (into `url`) falls in the URL's user info (`https://user:VALUE@host`)."""
    if "://" not in url:
        return False
    authority_start = url.index("://") + 3
    at = url.find("@", authority_start)
    slash = url.find("/", authority_start)
    return at >= 0 and (slash < 0 or at < slash) and authority_start <= offset < at


def _leaves(value: _Value, host: str, position: str, *, linked: bool) -> bool:
    """Whether the value, standing at `position`, leaves for `host` as data."""
    if linked:
        return True  # an image or a link: never a use of the credential
    if _LOCAL_HOST.search(host) or _belongs(value.owners, host):
        return False
    if position == "strong":
        return False
    return not (position == "field" and not value.owners)


def secret_flows(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Spans (of folded `text`, within `start:end`) where a secret's value reaches the network."""
    statements = _Statements(text)
    for value in _values(text, start, end):
        begin, stop = statements.bounds(value.start, value.end)
        destinations, commands = statements.sinks(begin, stop)
        label = None if value.read_file else _HOST_AFTER.match(text, value.end)
        if label is not None:  # `nslookup $KEY.dns.example.net`: the value looked up as a name
            sent = bool(commands) and commands[0] < value.start
            if sent and _leaves(value, label.group(1), "data", linked=False):
                yield value.start, label.end()
            continue
        if not destinations:
            continue
        position = "data" if value.read_file else _position(text, begin, value.start)
        hit = _flow(text, value, position, destinations, commands)
        if hit is not None:
            yield min(value.start, hit[0]), max(value.end, hit[1])
    for m in _SLOT.finditer(text, start, end):
        if _is_secret_name(m.group(1).rsplit(".", 1)[-1]):
            begin, stop = statements.bounds(m.start(), m.end())
            value = _Value(m.start(), m.end(), _owners(m.group(1)))
            position = _position(text, begin, m.start())
            for d_start, d_end, host, linked in statements.sinks(begin, stop)[0]:
                if d_start <= m.start() < d_end and _leaves(value, host, position, linked=linked):
                    yield min(m.start(), d_start), max(m.end(), d_end)
                    break


def _flow(
    text: str,
    value: _Value,
    position: str,
    destinations: list[Destination],
    commands: list[int],
) -> tuple[int, int] | None:
    """The destination the value flows to, if any: the URL it stands in, or the destination of a
    network command it is an argument of or is piped into."""
    for d_start, d_end, host, linked in destinations:
        if d_start <= value.start < d_end:
            if value.read_file:
                return None  # a remote path (`https://host/.env`), not this machine's file
            url = text[d_start:d_end]
            inside = "strong" if _in_user_info(url, value.start - d_start) else position
            return (d_start, d_end) if _leaves(value, host, inside, linked=linked) else None
    if not commands:
        return None
    command = commands[0]
    if value.start < command and text.find("|", value.end, command) < 0:
        return None  # before the command and not piped into it (`KEY=$KEY curl ...`: not sent)
    for d_start, d_end, host, linked in destinations:
        if d_start > command and _leaves(value, host, position, linked=linked):
            return d_start, d_end
    return None
