"""The PyTorch vocabulary: names of torch APIs as plain sets and mappings.

No LibCST and nothing else of this package is imported here, so both parsers
(the LibCST per-file facts and the ``ast`` project summary) read one list.
"""
