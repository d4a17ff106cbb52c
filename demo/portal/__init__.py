"""The customer portal."""
