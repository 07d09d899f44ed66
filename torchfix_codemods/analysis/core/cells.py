"""The marker that starts each code cell in a notebook's joined text.

The notebook reader (:mod:`torchfix_codemods.notebooks`) writes it above every cell and
splits the fixed text back at it; the analysis reads it to keep a block from reaching
across cells. Plain Python: the ``ast`` side of the run imports it without LibCST.
"""

CELL_MARKER = "# torchfix-codemods: cell "
