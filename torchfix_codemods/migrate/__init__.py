"""``torchfix-codemods migrate``: a branch per repository, one commit per rule, a PR body.

Modules, one job each: ``git`` (plumbing), ``repository`` (checks and the
rule-by-rule branch in a worktree), ``commits`` (grouping and messages),
``testcmd`` (the repository's own tests), ``prbody`` (Markdown),
``publish`` (body file, push, ``gh``), ``campaign`` (several repositories in
parallel) and ``output`` (JSON and the final table).
"""
