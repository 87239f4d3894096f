"""Spiders that ship with visdup."""
