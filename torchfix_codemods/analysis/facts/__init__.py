"""Per-file facts about PyTorch code, read off LibCST: tensors, values, modules, devices, training."""
