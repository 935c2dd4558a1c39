"""Documents made from one evaluation of the paper targets.

REPRODUCTION.md, the per-paper pages under docs/reproduction/ and the offline HTML site (templates
in ``templates/``).
"""
