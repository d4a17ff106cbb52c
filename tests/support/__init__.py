"""Shared test helpers: the fake OpenAI server and agent fixtures."""
