"""Allow ``python -m torchfix_codemods``."""

from torchfix_codemods.entry import main

if __name__ == "__main__":
    main()
