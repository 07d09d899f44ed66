"""Python semantics: names, scopes, bindings, imports, calls, loops, flow. No PyTorch knowledge."""
