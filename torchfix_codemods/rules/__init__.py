"""Rules, one module per family; each module lists its rule classes in ``RULES``."""
