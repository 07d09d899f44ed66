"""Rewriting helpers: building the new nodes a fix puts in place of old ones.

``analysis/`` says what the code *is* and never builds a node; ``edits/`` says
how to *write* a change so it parses, means what it should and keeps the
user's formatting (argument layout, parentheses, inserted statements, nested
edits composed into one fix). Rules combine the two; neither imports a rule.
"""
