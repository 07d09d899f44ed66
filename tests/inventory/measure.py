"""Measure torch's removed and deprecated API surface on the installed torch.

Run ``python tests/inventory/measure.py --write`` to regenerate
``torchfix_codemods/rules/data/legacy_inventory.json``; ``tests/test_inventory.py``
re-measures and compares, so a new torch release shows exactly what changed.

Two parts:

* **The walk.** Every public callable of the namespaces below (and every
  ``torch.Tensor`` method) whose source or docstring says "deprecat" is a
  *candidate*. The walk is not the judgement: it makes sure that a name torch
  starts deprecating shows up as a new candidate that no entry covers.
* **The entries.** Each is a call on small CPU inputs, written by hand from the
  walk and from the 0.4, 1.x and 2.x release notes (``history``: when the old
  spelling stopped working). Calling it records what it does today: ``ok``,
  ``warns`` (warning class and first line of text) or ``raises`` (exception and
  first line). ``replacement`` is the modern spelling, ``rule`` the code that
  handles it (``handled``: ``safe``/``unsafe``/``report``) or ``null`` with
  ``why`` it is deliberately not handled.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "torchfix_codemods" / "rules" / "data" / "legacy_inventory.json"
NAMESPACES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.utils",
              "torch.autograd", "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data",
              "torch.cuda")
_DEPRECATED = re.compile(r"deprecat", re.IGNORECASE)

SETUP = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
torch.manual_seed(0)
v3 = torch.randn(3)
m3 = torch.randn(3, 3)
spd = m3 @ m3.T + 3 * torch.eye(3)
img = torch.randn(1, 1, 2, 2)
w = torch.empty(3, 3)
params = [nn.Parameter(torch.randn(3))]
loss = (params[0] ** 2).sum()
"""

# name, call, replacement, rule, handled, history / why. `rule=None` needs a `why`.
_INIT = ("constant", "dirac", "eye", "kaiming_normal", "kaiming_uniform", "normal",
         "orthogonal", "sparse", "uniform", "xavier_normal", "xavier_uniform")
_INIT_CALLS = {"constant": "nn.init.constant(w, 0.5)", "dirac": "nn.init.dirac(torch.empty(2, 2, 3))",
               "sparse": "nn.init.sparse(w, 0.5)"}



def _same_init(call: str) -> str:
    """Old and new initialiser from the same seed fill the same values."""
    new = call.replace("(", "_(", 1)
    return (f"torch.manual_seed(1); w = torch.empty(3, 3); a = {call}.clone()\n"
            f"torch.manual_seed(1); w = torch.empty(3, 3); b = {new}.clone()\n"
            "same = torch.equal(a, b)")


ENTRIES: list[dict[str, Any]] = [
    # ---- torch 0.4: Variable and Tensor merged, 0-dim tensors, renamed keywords
    dict(name="torch.autograd.Variable(volatile=)", call="Variable(v3, volatile=True)",
         replacement="run the code under `with torch.no_grad():`", rule="TFC106", handled="unsafe",
         history="0.4: volatile removed, ignored with a warning"),
    dict(name="torch.autograd.Variable", call="Variable(v3)", replacement="x.detach()",
         rule="TFC106", handled="safe", history="0.4: Variable and Tensor merged"),
    dict(name="torch.Tensor.backward(retain_variables=)",
         call="loss.backward(retain_variables=True)", replacement="retain_graph=",
         rule="TFC412", handled="safe", history="0.4: renamed retain_graph",
         same="a = torch.ones(2, requires_grad=True); y = (a * a).sum()\n"
              "y.backward(retain_graph=True); y.backward()\nsame = a.grad.tolist() == [4.0, 4.0]"),
    dict(name="torch.autograd.backward(retain_variables=)",
         call="torch.autograd.backward(loss, retain_variables=True)",
         replacement="retain_graph=", rule="TFC412", handled="safe",
         history="0.4: renamed retain_graph"),
    dict(name="torch.Tensor.__getitem__(0-dim)", call="loss.data[0]", replacement="loss.item()",
         rule="TFC105", handled="safe", history="0.4: reductions return 0-dim tensors"),
    dict(name="numpy.ndarray.__getitem__(0-dim array of a tensor)", call="loss.data.numpy()[0]",
         replacement="loss.item()", rule="TFC105", handled="safe", shows=".numpy()[0]",
         history="0.4: reductions return 0-dim tensors, whose arrays are 0-dim"),
    dict(name="torch.Tensor.cuda(async=)", call="compile('x.cuda(async=True)', 'f', 'exec')",
         replacement="non_blocking=", rule="TFC004", handled="safe",
         history="0.4: renamed non_blocking; Python 3.7: `async` is a keyword"),
    dict(name="torch.Tensor.type(torch.cuda.FloatTensor)",
         call="torch.randn(2).type(torch.cuda.FloatTensor)",
         replacement="x.to(device, torch.float32)", rule=None,
         why="device placement by type: the device to use is the program's choice "
             "(`torch.device(...)`), not text the tool can read from the call. Measured on "
             "the CPU build the tests run on, where it raises as 0.3 did without CUDA (a "
             "CUDA build was not measured here)"),
    dict(name="torch.cuda.FloatTensor", call="torch.cuda.FloatTensor(2)",
         replacement="torch.empty(2, device='cuda')", rule=None,
         why="the constructor's meaning depends on its arguments (sizes, data, a storage); "
             "measured on the CPU build the tests run on, where it raises as 0.3 did without "
             "CUDA (a CUDA build was not measured here)"),
    # ---- removed linear algebra (0.4-1.x names)
    *[dict(name=f"torch.{old}", call=f"torch.{old}", replacement=new, rule="TFC406",
           handled="report", history=when)
      for old, new, when in (
          ("gels", "torch.linalg.lstsq(A, B)", "removed 1.2 (renamed lstsq, itself removed 2.0)"),
          ("potrf", "torch.linalg.cholesky(A) (potrf returned the upper factor by default)", "removed 1.2"),
          ("potrs", "torch.cholesky_solve(B, L)", "removed 1.2"),
          ("potri", "torch.cholesky_inverse(L)", "removed 1.2"),
          ("trtrs", "torch.linalg.solve_triangular(A, B, upper=...)", "removed 1.2"),
          ("gesv", "torch.linalg.solve(A, B)", "removed 1.2"),
          ("btrifact", "torch.linalg.lu_factor(A)", "removed 1.2"),
          ("btrisolve", "torch.lu_solve(B, LU, pivots)", "removed 1.2"),
      )],
    *[dict(name=f"torch.{old}", call=call, replacement=new, rule="TFC406", handled=handled,
           history="deprecated 1.9, removed 2.0" if removed else "deprecated 1.9+")
      for old, call, new, handled, removed in (
          ("solve", "torch.solve(spd, m3)", "torch.linalg.solve", "safe", True),
          ("symeig", "torch.symeig(spd)", "torch.linalg.eigh", "unsafe", True),
          ("eig", "torch.eig(spd)", "torch.linalg.eig", "report", True),
          ("lstsq", "torch.lstsq(m3, spd)", "torch.linalg.lstsq", "report", True),
          ("matrix_rank", "torch.matrix_rank(m3)", "torch.linalg.matrix_rank", "safe", True),
          ("chain_matmul", "torch.chain_matmul(m3, m3)", "torch.linalg.multi_dot", "safe", False),
          ("cholesky", "torch.cholesky(spd)", "torch.linalg.cholesky", "safe", False),
          ("qr", "torch.qr(m3)", "torch.linalg.qr", "safe", False),
          ("ger", "torch.ger(v3, v3)", "torch.outer", "safe", False),
          ("range", "torch.range(0, 3)", "torch.arange", "unsafe", False),
          ("set_default_tensor_type", "torch.set_default_tensor_type(torch.FloatTensor)",
           "torch.set_default_dtype", "report", False),
      )],
    # ---- nn.init without the trailing underscore (0.4)
    *[dict(name=f"torch.nn.init.{name}", call=_INIT_CALLS.get(name, f"nn.init.{name}(w)"),
           replacement=f"torch.nn.init.{name}_", rule="TFC406", handled="safe",
           history="0.4: in-place initialisers renamed with `_`",
           same=_same_init(_INIT_CALLS.get(name, f"nn.init.{name}(w)"))) for name in _INIT],
    dict(name="torch.nn.utils.clip_grad_norm",
         call="nn.utils.clip_grad_norm(params, 1.0)",
         replacement="torch.nn.utils.clip_grad_norm_", rule="TFC406", handled="safe",
         history="0.4: renamed clip_grad_norm_",
         same="a = [nn.Parameter(torch.ones(3))]; a[0].grad = torch.full((3,), 4.0)\n"
              "b = [nn.Parameter(torch.ones(3))]; b[0].grad = torch.full((3,), 4.0)\n"
              "r1 = nn.utils.clip_grad_norm(a, 1.0); r2 = nn.utils.clip_grad_norm_(b, 1.0)\n"
              "same = bool(r1 == r2) and torch.equal(a[0].grad, b[0].grad)"),
    dict(name="torch.nn.utils.clip_grad_value", call="nn.utils.clip_grad_value",
         replacement="torch.nn.utils.clip_grad_value_", rule=None,
         why="never existed: clip_grad_value_ was added with the underscore (0.4)"),
    # ---- functional aliases and legacy reduction arguments
    *[dict(name=f"torch.nn.functional.{name}", call=f"F.{name}(img, scale_factor=2)",
           replacement="torch.nn.functional.interpolate", rule="TFC402", handled="safe",
           history="0.4.1: upsample deprecated for interpolate", same=same)
      for name, same in (
          ("upsample", "same = all(torch.equal(F.upsample(img, scale_factor=2, mode=m), "
                       "F.interpolate(img, scale_factor=2, mode=m)) for m in "
                       "('nearest', 'bilinear')) and torch.equal(F.upsample(img, size=(3, 5), "
                       "mode='bilinear', align_corners=True), F.interpolate(img, size=(3, 5), "
                       "mode='bilinear', align_corners=True))"),
          ("upsample_nearest", "same = torch.equal(F.upsample_nearest(img, scale_factor=2), "
                               "F.interpolate(img, scale_factor=2, mode='nearest'))"),
          # align_corners=True is what upsample_bilinear always did; the default differs.
          ("upsample_bilinear", "same = torch.equal(F.upsample_bilinear(img, scale_factor=2), "
                                "F.interpolate(img, scale_factor=2, mode='bilinear', "
                                "align_corners=True)) and not torch.equal(F.upsample_bilinear("
                                "img, scale_factor=2), F.interpolate(img, scale_factor=2, "
                                "mode='bilinear'))"),
      )],
    dict(name="torch.nn.functional.mse_loss(size_average=)",
         call="F.mse_loss(v3, v3, size_average=False)", replacement="reduction='sum'",
         rule="TFC403", handled="safe", history="0.4.1: size_average/reduce deprecated"),
    dict(name="torch.nn.MSELoss(reduce=)", call="nn.MSELoss(reduce=False)",
         replacement="reduction='none'", rule="TFC403", handled="safe",
         history="0.4.1: size_average/reduce deprecated"),
    dict(name="torch.nn.functional.sigmoid", call="F.sigmoid(v3)", replacement="torch.sigmoid",
         rule=None, history="called deprecated in torch 1.x docs; no warning and no such note "
         "in 2.13's docstring", why="not deprecated on the torch we test against: it neither "
         "warns nor differs from torch.sigmoid (bitwise), so a rewrite is noise"),
    dict(name="torch.nn.functional.tanh", call="F.tanh(v3)", replacement="torch.tanh",
         rule=None, history="called deprecated in torch 1.x docs; no warning and no such note "
         "in 2.13's docstring", why="not deprecated on the torch we test against: it neither "
         "warns nor differs from torch.tanh (bitwise), so a rewrite is noise"),
    # ---- other deprecations the walk finds
    # The number-first overloads (torch 0.3's order) warn once per process; measure_call
    # turns torch's warn-always on, so each entry sees its own warning. `same` compares the
    # old and new spellings, with a Python number and with a 0-dim tensor as the number.
    *[dict(name=f"{name}(Number first)", call=old, replacement=replacement, rule="TFC413",
           handled="safe", shows=shows,
           history="0.4: the number became a keyword (`alpha=`/`value=`); the old order stays "
                   "as a deprecated overload",
           same=(f"n = 0.5\nsame = torch.equal({old.replace('0.5', 'n')}, {new}) and "
                 f"torch.equal({old.replace('0.5', 'torch.tensor(n)')}, "
                 f"{new.replace('n)', 'torch.tensor(n))')})"))
      for name, old, new, replacement, shows in (
          ("torch.Tensor.add_", "v3.clone().add_(0.5, m3[0])", "v3.clone().add_(m3[0], alpha=n)",
           "x.add_(other, alpha=number)", ".add_(-lr, p.grad.data)"),
          ("torch.Tensor.add", "v3.add(0.5, m3[0])", "v3.add(m3[0], alpha=n)",
           "x.add(other, alpha=number)", ".add(0.25, torch.ones"),
          ("torch.Tensor.sub_", "v3.clone().sub_(0.5, m3[0])", "v3.clone().sub_(m3[0], alpha=n)",
           "x.sub_(other, alpha=number)", ".sub(0.25, torch.ones"),
          ("torch.Tensor.sub", "v3.sub(0.5, m3[0])", "v3.sub(m3[0], alpha=n)",
           "x.sub(other, alpha=number)", ".sub(0.25, torch.ones"),
          ("torch.Tensor.addcmul_", "v3.clone().addcmul_(0.5, m3[0], m3[1])",
           "v3.clone().addcmul_(m3[0], m3[1], value=n)", "x.addcmul_(t1, t2, value=number)",
           ".addcmul_(1 - beta2, grad, grad)"),
          ("torch.Tensor.addcdiv_", "v3.clone().addcdiv_(0.5, m3[0], m3[1])",
           "v3.clone().addcdiv_(m3[0], m3[1], value=n)", "x.addcdiv_(t1, t2, value=number)",
           ".addcdiv_(-step_size, exp_avg, denom)"),
          ("torch.add", "torch.add(v3, 0.5, m3[0])", "torch.add(v3, m3[0], alpha=n)",
           "torch.add(input, other, alpha=number)", "torch.add(model.weight, 0.5,"),
      )],
    dict(name="torch.Tensor.add_(Tensor, Number)", call="v3.clone().add_(m3[0], 0.5)",
         replacement="x.add_(other, alpha=number)", rule=None, evidence_for="TFC413",
         why="not an old spelling: it raises, which is why two positional arguments can only "
             "be the number-first overload (TFC413's evidence)"),
    dict(name="torch.Tensor.addmm_(Number first)", call="m3.clone().addmm_(0.5, 0.5, m3, m3)",
         replacement="x.addmm_(m1, m2, beta=number, alpha=number)", rule=None,
         why="one or two numbers (beta, alpha) in places that differ between the overloads; "
             "rare in training code (the 0.3 optimizers use add_/addcmul_/addcdiv_)"),
    dict(name="torch.nn.functional.softmax(no dim)", call="F.softmax(m3)",
         replacement="dim=... (the implicit choice was 0 for 0/1/3-dim input, else 1)",
         rule=None, why="the right `dim` depends on the input's rank, which the code does not show"),
    dict(name="torch.cuda.memory_cached", call="torch.cuda.memory_cached()",
         replacement="torch.cuda.memory_reserved", rule="TFC406", handled="safe",
         history="1.4: renamed memory_reserved"),
    dict(name="torch.cuda.max_memory_cached", call="torch.cuda.max_memory_cached()",
         replacement="torch.cuda.max_memory_reserved", rule="TFC406", handled="safe",
         history="1.4: renamed max_memory_reserved"),
    dict(name="torch.cross(no dim)", call="torch.cross(torch.randn(3, 2), torch.randn(3, 2))",
         replacement="torch.linalg.cross(a, b, dim=...)", rule=None,
         why="the implicit dim is the first of size 3: only the shapes say which"),
    dict(name="torch.Tensor.T(not 2-D)", call="torch.randn(2, 2, 2).T",
         replacement="x.permute(*reversed(range(x.ndim))) or x.mT", rule=None,
         why="rank is not visible in the code"),
    dict(name="torch.Tensor.resize", call="v3.resize(3)", replacement="x.reshape / x.resize_",
         rule=None, why="rare in training code; shape-dependent"),
    dict(name="torch.Tensor.storage", call="v3.storage()", replacement="x.untyped_storage()",
         rule=None, why="the typed and untyped storages differ in element type"),
    dict(name="torch.Tensor.scatter_(reduce=)",
         call="torch.zeros(2).scatter_(0, torch.tensor([0]), torch.ones(1), reduce='add')",
         replacement="x.scatter_reduce_", rule=None, why="different argument set"),
    dict(name="torch.optim.lr_scheduler.LRScheduler.step(epoch)",
         call="s = torch.optim.lr_scheduler.StepLR(torch.optim.SGD(params, lr=0.1), 1); s.step(1)",
         replacement="scheduler.step()", rule=None,
         why="dropping the epoch changes the schedule unless it equals the step count"),
    # ---- removed in 2.x: LR schedulers' `verbose` (deprecated 2.2)
    dict(name="torch.optim.lr_scheduler.ReduceLROnPlateau(verbose=)",
         call="torch.optim.lr_scheduler.ReduceLROnPlateau(torch.optim.SGD(params, lr=0.1), "
              "patience=3, verbose=True)",
         replacement="drop it (log `scheduler.get_last_lr()`)", rule="TFC414", handled="unsafe",
         history="2.2: deprecated; removed since (TypeError)"),
    dict(name="torch.optim.lr_scheduler.StepLR(verbose=)",
         call="torch.optim.lr_scheduler.StepLR(torch.optim.SGD(params, lr=0.1), 10, "
              "verbose=False)",
         replacement="drop it (`verbose=False` printed nothing)", rule="TFC414", handled="safe",
         history="2.2: deprecated; removed since (TypeError)"),
    dict(name="torch.optim.lr_scheduler.LRScheduler.__init__(verbose)",
         call="torch.optim.lr_scheduler.LRScheduler.__init__(object.__new__("
              "torch.optim.lr_scheduler.StepLR), torch.optim.SGD(params, lr=0.1), -1, False)",
         replacement="super().__init__(optimizer, last_epoch)", rule="TFC414",
         handled="unsafe", shows="__init__(optimizer, last_epoch, verbose)",
         history="2.2: deprecated; removed since (TypeError)"),
    dict(name="torch.optim.lr_scheduler.ReduceLROnPlateau(verbose positional)",
         call="s = torch.optim.lr_scheduler.ReduceLROnPlateau(torch.optim.SGD(params, lr=0.1), "
              "'min', 0.5, 5, True)\nassert s.threshold is True",
         replacement="pass the arguments by keyword", rule="TFC414", handled="report",
         shows="0.5, 5, True)",
         history="until 2.1 `verbose` was the fifth parameter; since 2.2 the fifth positional "
                 "argument is `threshold`, silently"),
    # ---- removed in 0.4-1.x, gone altogether
    dict(name="torch.Tensor.volatile", call="v3.volatile",
         replacement="False (always); run inference under `torch.no_grad()`", rule=None,
         why="reading it is rare and always gives False; `Variable(x, volatile=True)` is the "
             "entry that matters (TFC106)"),
    dict(name="torch.Tensor.volatile(set)", call="v3.volatile = False",
         replacement="nothing: the assignment has no effect", rule="TFC106", handled="safe",
         shows="volatile = False", history="0.4: volatile removed, ignored with a warning"),
    dict(name="torch.autograd.Function(non-static forward)",
         call="class Old(torch.autograd.Function):\n    def forward(self, x):\n"
              "        return x * 2\nOld()(v3)",
         replacement="@staticmethod forward(ctx, ...), called as Old.apply(...)", rule=None,
         why="state kept on the instance (set in `__init__` or `forward`) has to move to `ctx` "
             "and every call site (often in other files) to `Old.apply(...)`: a rewrite of the "
             "class, not of a call"),
    dict(name="torch.autograd.function.FunctionCtx.saved_variables",
         call="class New(torch.autograd.Function):\n    @staticmethod\n"
              "    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x * 2\n"
              "    @staticmethod\n    def backward(ctx, g):\n"
              "        x, = ctx.saved_variables\n        return g * x\n"
              "New.apply(v3.clone().requires_grad_()).sum().backward()",
         replacement="ctx.saved_tensors", rule=None,
         why="still works (it warns); `ctx` is typed only inside an `autograd.Function`, and "
             "the name survives in very little code; a later round"),
    dict(name="torch.rfft", call="torch.rfft(v3, 1)", replacement="torch.fft.rfft (complex "
         "result; torch.view_as_real for the old layout)", rule="TFC406", handled="report",
         history="removed 1.8 (torch.fft became a module)"),
    dict(name="torch.irfft", call="torch.irfft(v3, 1)", replacement="torch.fft.irfft (complex "
         "input; torch.view_as_complex from the old layout)", rule="TFC406", handled="report",
         history="removed 1.8 (torch.fft became a module)"),
    dict(name="torch.fft(function)", call="torch.fft(v3, 1)",
         replacement="torch.fft.fft / fftn (complex in and out)", rule=None,
         why="`torch.fft` is a module now: its name still resolves, so only a call of it is the "
             "old function, and its real-pairs layout has no one-call replacement"),
    dict(name="torch.utils.ffi", call="import torch.utils.ffi",
         replacement="torch.utils.cpp_extension", rule=None,
         why="removed in 1.0: the C extension's build has to be rewritten, not a call"),
    dict(name="torch.Tensor.__getitem__(uint8 mask)",
         call="v3[torch.tensor([1, 0, 1], dtype=torch.uint8)]",
         replacement="a bool mask (`mask.bool()`)", rule=None,
         why="comparisons give bool masks since 1.2, so most old code needs nothing; a "
             "`.byte()` mask is one the code made on purpose, often far from its use"),
    dict(name="torch.Tensor.masked_fill(uint8 mask)",
         call="v3.masked_fill(torch.tensor([1, 0, 1], dtype=torch.uint8), 0.0)",
         replacement="a bool mask (`mask.bool()`)", rule=None,
         why="as for indexing: the mask's dtype is decided where it is made, not at the call"),
    dict(name="torch.Tensor.__rsub__(bool)", call="1 - (v3 > 0)",
         replacement="~mask or mask.logical_not()", rule=None,
         why="`1 - mask` was right for 0.4's uint8 comparisons; it raises only when `mask` is "
             "bool, which the code shows only where the comparison is written in place"),
    dict(name="torch.nn.functional.grid_sample(align_corners unset)",
         call="F.grid_sample(img, torch.zeros(1, 1, 1, 2))",
         replacement="align_corners=False (today's result) or True (before 1.3)", rule=None,
         why="the author's choice: False silences the warning and keeps today's result, True "
             "restores what 0.4-1.2 code computed; which one the code wants is not in it"),
    dict(name="torch.nn.functional.log_softmax(no dim)", call="F.log_softmax(m3)",
         replacement="dim=... (the implicit choice was 0 for 0/1/3-dim input, else 1)",
         rule=None, why="the right `dim` depends on the input's rank, which the code does not "
                        "show"),
    dict(name="torch.nn.Hardtanh(min_value=)", call="nn.Hardtanh(min_value=-1.0)",
         replacement="min_val=", rule=None,
         why="deprecated before 0.3 (the 0.3 docs already say `min_val`): no code of the era "
             "this inventory serves was seen to use it"),
    dict(name="torch.nn.Module.state_dict(positional)",
         call="nn.Linear(2, 2).state_dict(None, 'p.')",
         replacement="state_dict(destination=..., prefix=..., keep_vars=...)", rule=None,
         why="used by overrides of `state_dict` in custom modules, which pass on their own "
             "positional parameters; a later round"),
    dict(name="torch.nn.Module.register_backward_hook",
         call="m = nn.Linear(2, 2); m.register_backward_hook(lambda *a: None); "
              "m(torch.ones(1, 2, requires_grad=True)).sum().backward()",
         replacement="register_full_backward_hook", rule=None,
         why="the full hook's `grad_input` is the module's inputs' gradient, not the last "
             "operation's: the hook's body has to change with it"),
    dict(name="torch.optim.lr_scheduler.ReduceLROnPlateau.step(epoch)",
         call="torch.optim.lr_scheduler.ReduceLROnPlateau(torch.optim.SGD(params, lr=0.1))"
              ".step(1.0, 3)",
         replacement="scheduler.step(metrics)", rule=None,
         why="dropping the epoch changes `last_epoch` unless it equals the step count"),
    dict(name="torch.stft(return_complex unset)", call="torch.stft(torch.randn(64), 16)",
         replacement="return_complex=True, then torch.view_as_real", rule=None,
         why="the output changes type; its uses must change with it"),
]


_LOSSES_WITH_LEGACY_REDUCTION = (
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "cross_entropy", "hinge_embedding_loss", "kl_div", "l1_loss", "margin_ranking_loss",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "nll_loss",
    "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss")
_LOSS_CLASSES_WITH_LEGACY_REDUCTION = (
    "BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss",
    "HingeEmbeddingLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
    "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss",
    "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss")
REVIEWED: dict[str, str] = {
    # Walk candidates that no entry above calls, and why: what handles them, or why nothing.
    **{f"torch.nn.{name}": "size_average=/reduce=: TFC403 (its data lists every loss; the "
       "MSELoss entry measures the warning)" for name in _LOSS_CLASSES_WITH_LEGACY_REDUCTION},
    "torch.nn.UpsamplingBilinear2d": "TFC406 (replacements.toml: nn.Upsample with the mode)",
    "torch.nn.UpsamplingNearest2d": "TFC406 (replacements.toml: nn.Upsample with the mode)",
    "torch.GradScaler.step": "not a deprecation of the API: a comment about an internal "
                             "optimizer contract",
    "torch.utils.data.DataLoader": "not handled: only `pin_memory_device` is deprecated (a 2.x "
                                   "argument: the current accelerator is used)",
    **{f"torch.nn.functional.{name}": "size_average=/reduce=: TFC403 (its data lists every "
       "loss; the mse_loss entry measures the warning)" for name in _LOSSES_WITH_LEGACY_REDUCTION},
    "torch.lu_solve": "TFC406 (replacements.toml maps it to torch.linalg.lu_solve)",
    "torch.norm": "TFC406 (replacements.toml: torch.linalg.vector_norm / matrix_norm)",
    "torch.svd": "TFC406, report only (torch.linalg.svd returns Vh)",
    "torch.triangular_solve": "TFC406, report only (argument order and results changed)",
    "torch.nn.utils.weight_norm": "TFC405",
    "torch.nn.utils.spectral_norm": "not handled: only announced (\"will be deprecated\"); "
                                    "the parametrizations version renames state dict keys",
    "torch.nn.functional.dropout2d": "not handled: the warning is about 3-D input, a shape",
    "torch.nn.functional.dropout3d": "not handled: the warning is about 4-D input, a shape",
    "torch.nn.functional.embedding_bag": "not handled: `embedding_bag(weight, input)` (the "
                                         "swapped order) is deprecated; tensors' roles are not "
                                         "visible in the code",
    "torch.nn.functional.gumbel_softmax": "not handled: only `eps` is deprecated (no effect)",
    "torch.nn.functional.handle_torch_function": "not an API: the docstring mentions deprecation",
    "torch.autograd.grad": "not handled: only `only_inputs` is deprecated (ignored)",
    "torch.autograd.variable": "TFC106 (the Variable module; the class is the entry)",
    "torch.Tensor.matrix_power": "not handled: the docstring points to torch.linalg.matrix_power, "
                                 "which computes the same; no warning",
    "torch.Tensor.resize_as": "not handled: like resize, shape-dependent",
}


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = re.sub(r"\s*\(Triggered internally at .*", "", line)  # a build path
    return re.sub(r"0x[0-9a-f]+", "0x…", line)[:200]


def measure_call(call: str) -> dict[str, str]:
    """What ``call`` does on this torch: ``ok``, ``warns`` or ``raises``, with text."""
    import torch

    namespace: dict[str, Any] = {}
    # torch warns about some deprecations once per process (the number-first overloads
    # share one flag): each call must see its own warning, whatever ran before it.
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(SETUP, namespace)  # noqa: S102 - our own fixed snippets
        caught.clear()
        try:
            exec(call, namespace)  # noqa: S102
        except Exception as error:  # noqa: BLE001 - what it raises is the measurement
            return {"outcome": "raises", "error": type(error).__name__,
                    "message": _first_line(str(error))}
        finally:
            torch.set_warn_always(warn_always)
    if caught:
        # The deprecation, when the call also trips an unrelated warning first.
        said = [w for w in caught if _DEPRECATED.search(str(w.message))] or caught
        return {"outcome": "warns", "warning": said[0].category.__name__,
                "message": _first_line(str(said[0].message))}
    return {"outcome": "ok"}


def check_equivalence(check: str) -> bool:
    """Run ``check``, which must leave ``same`` True when old and new spellings agree."""
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(SETUP, namespace)  # noqa: S102
        exec(check, namespace)  # noqa: S102
    return bool(namespace["same"])


def _text_of(obj: object) -> str:
    parts = []
    try:
        parts.append(inspect.getsource(obj))  # type: ignore[arg-type]
    except (OSError, TypeError):
        pass
    doc = getattr(obj, "__doc__", None)
    if isinstance(doc, str):
        parts.append(doc)
    return "\n".join(parts)


def walk() -> list[str]:
    """Public functions, classes (their docstring and ``__init__``) and the methods each class
    defines itself, and ``torch.Tensor``'s methods, whose text mentions deprecation. A class
    is walked once, under the first namespace that exports it; the tensor and storage
    classes (``torch.FloatTensor``, ``torch.cuda.FloatTensor``...) only through
    ``torch.Tensor``, whose methods they share."""
    import torch

    found = []
    seen: set[int] = set()
    for name in NAMESPACES:
        module = importlib.import_module(name)
        public = getattr(module, "__all__", None) or [n for n in dir(module)
                                                     if not n.startswith("_")]
        for attribute in sorted(set(public)):
            try:
                obj = getattr(module, attribute)
            except AttributeError:
                continue
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            if not isinstance(obj, type):
                if _DEPRECATED.search(_text_of(obj)):
                    found.append(f"{name}.{attribute}")
                continue
            if not obj.__module__.startswith("torch") or _tensor_or_storage(obj, torch):
                continue
            found += [f"{name}.{attribute}{member}" for member in _class_candidates(obj)]
    for attribute in sorted(dir(torch.Tensor)):
        if not attribute.startswith("_") and _DEPRECATED.search(
                _text_of(getattr(torch.Tensor, attribute))):
            found.append(f"torch.Tensor.{attribute}")
    return found


def _tensor_or_storage(cls: type, torch: Any) -> bool:
    """``torch.Tensor`` itself, its subclasses, the legacy typed classes (their metaclass is
    ``torch.tensortype``) and the storages."""
    return issubclass(cls, torch.Tensor) or type(cls).__name__ == "tensortype" or \
        "Storage" in cls.__name__


def _class_candidates(cls: type) -> list[str]:
    """``""`` when the class's docstring or ``__init__`` mentions deprecation, and
    ``".method"`` for each public method it defines itself whose text does."""
    own = cls.__dict__
    doc = own.get("__doc__")
    init = own.get("__init__")
    text = (doc if isinstance(doc, str) else "") + (_text_of(init) if init else "")
    found = [""] if _DEPRECATED.search(text) else []
    for member, value in sorted(own.items()):
        if not member.startswith("_") and callable(value) and _DEPRECATED.search(_text_of(value)):
            found.append(f".{member}")
    return found


def measure() -> dict[str, Any]:
    import torch

    entries = {}
    for entry in ENTRIES:
        row = {key: value for key, value in entry.items() if key != "name"}
        row["measured"] = measure_call(entry["call"])
        if "same" in entry:
            row["measured"]["same"] = check_equivalence(entry["same"])
        entries[entry["name"]] = row
    return {
        "torch": torch.__version__.split("+")[0],
        "python": ".".join(map(str, sys.version_info[:2])),
        "command": "python tests/inventory/measure.py --write",
        "candidates": walk(),
        "entries": entries,
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DATA.name}")
    arguments = parser.parse_args()
    text = render(measure())
    if arguments.write:
        DATA.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
