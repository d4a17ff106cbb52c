"""The test suite (a regular package, so `tests.support` can never be shadowed by a `tests` package
that some third-party distribution installs into site-packages)."""
