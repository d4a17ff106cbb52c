"""A small labelled corpus for recall tests: ordinary turns on many topics, entries taken out of memory,
messages that must recall nothing and messages that must recall one archived fact (with a marker of it)."""

from __future__ import annotations

__all__ = ["PARAPHRASES", "RELATED", "REMOVED", "TURNS", "UNRELATED"]

TURNS = [
    ("How do I run the unit tests?", "Run uv run pytest -q from the repository root."),
    (
        "The staging database is on which port?",
        "Staging Postgres listens on port 6543 on db-stg-2.",
    ),
    ("Rename the helper in utils.py to parse_header", "Renamed it and updated the three callers."),
    (
        "Why does the CI job time out?",
        "The integration suite waits on a Kafka broker that never starts.",
    ),
    ("Add type hints to the loader module", "Added hints; mypy --strict passes on loader.py now."),
    (
        "What's our branching model?",
        "Trunk-based: short feature branches, squash merges into main.",
    ),
    ("Write a docstring for fetch_orders", "Done: it documents the pagination cursor and retries."),
    (
        "How are secrets provided in production?",
        "Through Vault agent sidecars; nothing in env files.",
    ),
    (
        "Fix the flaky websocket reconnect test",
        "The test raced the heartbeat timer; it now awaits it.",
    ),
    (
        "Which logging library do we use?",
        "structlog with JSON output, configured in app/logging.py.",
    ),
    (
        "Explain the cache invalidation bug",
        "Keys ignored the tenant id, so tenants saw stale prices.",
    ),
    ("Bump the Node version in the Dockerfile", "Moved the base image to node:20-bookworm-slim."),
    (
        "How do we release the mobile app?",
        "Fastlane lanes beta and release; tags trigger the upload.",
    ),
    ("Make the invoice PDF use A4", "Switched the ReportLab page size to A4 and fixed margins."),
    ("请帮我重构解析器模块", "好的，我把解析器拆成了词法分析、语法分析和求值三个模块。"),
    (
        "测试数据库的密码在哪里配置？",
        "测试数据库的连接串在 config/test.toml 里，密码从环境变量 DB_PASS 读取。",
    ),
    ("前端用的是哪个状态管理库？", "前端用 Zustand 管理状态，旧页面还在用 Redux。"),
    ("Set up the pre-commit hooks", "Installed ruff, ruff-format and end-of-file-fixer hooks."),
    ("What is the SLA for the search API?", "p99 under 300 ms and 99.9% monthly availability."),
    (
        "How do I regenerate the GraphQL schema?",
        "Run make schema; it writes schema.graphql from resolvers.",
    ),
]
REMOVED = [
    (
        "memory",
        "replace",
        "Deploy: ssh deploy@app-1 && ./ship.sh (old host)",
        "Deploy: make release",
    ),
    ("memory", "remove", "Feature flags live in LaunchDarkly project checkout-web", None),
    ("user", "remove", "User prefers tabs over spaces in Go files", None),
]
UNRELATED = [
    "Can you help me with something?",
    "Please write a haiku about autumn.",
    "Thanks, that looks good to me!",
    "What's the difference between a list and a tuple in Python?",
    "Summarise this paragraph for me please.",
    "Let's refactor the payment service next week.",
    "Can you explain what a monad is?",
    "Please review my pull request when you have time.",
    "How are you today?",
    "Translate 'good morning' into French.",
    "What time zone is Tokyo in?",
    "帮我写一首关于春天的诗。",
    "今天天气怎么样？",
    "OK, do it.",
    "Show me how to reverse a string in JavaScript.",
]
RELATED = [
    ("what port does the staging database use again?", "6543"),
    ("remind me how the secrets get into production", "Vault agent"),
    ("why did tenants see stale prices?", "tenant id"),
    ("how do we ship the mobile app release", "Fastlane"),
    ("where are feature flags configured for checkout-web?", "LaunchDarkly"),
    ("how did we deploy with ship.sh before?", "ship.sh"),
    ("解析器模块是怎么拆分的？", "词法分析"),
    ("测试数据库的密码怎么配置", "DB_PASS"),
    ("前端状态管理用的什么库？Zustand 还是 Redux", "Zustand"),
    ("the GraphQL schema regenerate command", "make schema"),
]
# Messages about an archived fact in OTHER words (what lexical matching misses): message, marker.
PARAPHRASES = [
    ("Which library handles our logs?", "structlog"),
    ("How do I execute the test suite?", "uv run pytest"),
    ("Where do API credentials come from in prod?", "Vault agent"),
    ("What's the latency target for search?", "p99 under 300 ms"),
    ("How do we ship a new build of the phone app?", "Fastlane"),
    ("Why did customers get outdated prices?", "tenant id"),
    ("What git workflow do we follow?", "Trunk-based"),
    ("Which port is the pre-production Postgres on?", "6543"),
    ("Our pipeline keeps hanging, why?", "Kafka broker"),
    ("What paper format do invoices use?", "A4"),
    ("Which container base image runs Node?", "node:20-bookworm-slim"),
    ("Where are the toggles for the checkout site kept?", "LaunchDarkly"),
    ("Which linters run before each commit?", "ruff-format"),
    ("How is the GraphQL SDL rebuilt?", "make schema"),
    ("Indentation preference for Go code?", "tabs over spaces"),
]
