"""Money as integer minor units; the one place amounts are rounded."""

from decimal import ROUND_HALF_EVEN, Decimal


def round_half_even(amount: Decimal) -> int:
    """Round an amount in major units to integer minor units (banker's rounding)."""
    return int((amount * 100).quantize(Decimal("1"), rounding=ROUND_HALF_EVEN))
