"""Drift alarms: crawls kept as snapshots, compared template by template and field by field."""
