"""Invoices of a legal entity."""
