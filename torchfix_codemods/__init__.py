"""torchfix-codemods: find and safely rewrite common PyTorch mistakes."""

__version__ = "0.1.0"
