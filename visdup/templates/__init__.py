"""Template clusters (Simple Tree Matching, CURE-style), a template per cluster and extraction of
records (seed 003).
"""
