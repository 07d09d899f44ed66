"""Output formats. Reports see findings and texts, never LibCST nodes."""
