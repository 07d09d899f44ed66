"""``torchfix-codemods server``: the findings and fixes in an editor, over the Language
Server Protocol.

:mod:`.convert` turns findings and new texts into LSP values, :mod:`.analysis`
analyses an open document with the settings in force for its path, and
:mod:`.app` wires both to pygls. pygls is the optional ``server`` extra: nothing
outside this package imports it.
"""
