"""The same registration through the module, in both spellings."""
import torch
from torch.utils import _pytree as pytree_utils


class Pair(tuple):
    pass


pytree_utils._register_pytree_node(Pair, lambda p: (list(p), None), lambda v, c: Pair(v))
torch.utils._pytree._register_pytree_node(Pair, lambda p: (list(p), None), lambda v, c: Pair(v))
