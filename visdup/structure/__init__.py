"""A page's layout: the visual irreducible term (seed 000), its tree edit distance, its structural
SimHash.
"""
