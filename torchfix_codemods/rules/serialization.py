"""TFC001-TFC003: loading and saving checkpoints with ``torch.load`` and ``torch.save``.

The docstrings below are what ``torchfix-codemods explain`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from torchfix_codemods.analysis.core.calls import (
    argument,
    has_star_args,
    has_star_kwargs,
    keyword_arg,
)
from torchfix_codemods.analysis.core.definite import definitely_bound
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.usage import assigned_name
from torchfix_codemods.analysis.core.walk import names_in
from torchfix_codemods.analysis.facts.checkpoints import (
    TORCH_LOAD,
    TORCH_SAVE,
    LoadUse,
    explicitly_whole,
    load_use,
    module_load_of_the_same_file,
    module_pair,
    object_part,
    saved_back,
    saved_before,
    saved_content,
    state_dict_saved_before,
)
from torchfix_codemods.analysis.facts.modules import module_evidence
from torchfix_codemods.analysis.facts.restores import restores_own_save
from torchfix_codemods.analysis.project import ModulePair, SavedContent
from torchfix_codemods.analysis.vocabulary.naming import named_like_model
from torchfix_codemods.edits.arguments import add_keyword
from torchfix_codemods.edits.references import ImportUnavailable
from torchfix_codemods.edits.statements import parse_statement
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule


class TorchLoadWithoutWeightsOnly(Rule):
    """## What it does
    Finds `torch.load(...)` calls that do not say `weights_only=`, and adds
    `weights_only=True`.

    ## Why is this bad?
    With `weights_only=False`, loading a checkpoint runs arbitrary pickled
    code: a downloaded `.pt` file can execute anything. torch 2.6 made `True`
    the default, but code that runs on torch 1.13-2.5 still loads with full
    pickle, and an explicit argument documents the intent everywhere.

    ## Example
    ```python
    state = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", weights_only=True)
    ```

    ## Fix safety
    `weights_only=True` loads tensors, state dicts (a model's, an optimizer's,
    a scheduler's, a grad scaler's), Python numbers, strings, `None` and
    dicts/lists/tuples of them; it refuses a whole `nn.Module`, numpy arrays,
    `argparse.Namespace` and instances of other classes (measured on torch
    2.13). Since torch 2.6 it is the default, so the argument changes nothing
    there; on 1.13-2.5 it decides what loads. Hence the tier depends on what
    the file holds:
    - Safe when the result only goes into `load_state_dict` (directly or by
      string key), or when every `torch.save` of the run that writes the file
      (found by the project index through its path: a literal file name, a
      module constant, an argparse default) saves allow-listed content.
    - Unsafe when what the file holds is not visible in the run (loaded from a
      user-given path, saved by another program): on torch 1.13-2.5 a file
      holding other objects would stop loading. Unsafe too with `encoding=`
      (ignored with a warning under `weights_only=True`).
    - No fix, only a report, when the program itself may write the file and
      nothing proves what it writes loads: a save of that file writes a
      checkpoint dict, list or tuple holding a value the tool cannot follow
      (a metric, a trainer's `**kwargs`, an attribute), or the load is tied
      to the program's saves only loosely (its path is not known, but the
      same file saves checkpoints, or the program saves a dict with every key
      the load reads) and what they hold is not known. Training-state
      checkpoints habitually hold metrics (numpy scalars), arguments and
      objects beside their state dicts.
    - Never `weights_only=True` when the run shows something it cannot load:
      a save of the file writes a numpy array or numpy scalar (what
      `np.nanmean` returns), an `argparse.Namespace`, a whole module, an
      optimizer or LR scheduler object (not its `state_dict()`) or another
      object (through dict literals, items stored later, variables, the
      arguments of a save helper such as `save_checkpoint(state, filename)`,
      a helper of another module that hands its arguments to `torch.save`,
      and the keyword arguments of a trainer's `save(**kwargs)`); the loaded
      object, a part of it (`decoder = checkpoint["decoder"]`, also once
      rebound as `decoder = decoder.to(device)`) or a name it is unpacked to
      (`actor_critic, obs_rms = torch.load(...)`), is used as a whole
      `nn.Module` (called, `.eval()`, `.parameters()`, ...), an optimizer
      (`.step()`) or an object with attributes (`args.lr`, or the whole
      loaded object read as `vocab.tgt`: no tensor, dict, list or number
      has such an attribute), or is assigned
      to a model-like name. Where the run itself writes that file
      (it is trusted), the fix is `weights_only=False`, unsafe: it keeps the
      file loading on torch >= 2.6, as torch's own error message proposes.
      What a save holds is followed through a helper's returned tuple
      (`voc, pairs = read(...)` with `return voc, pairs`), a path template of
      literals (`'{!s}.tar'.format('voc')`), a module-level path name saved
      later in the file, a base class bound by a star import, and a helper
      that saves its first parameter (`save_checkpoint({...}, is_best, dir)`),
      also from a module of a folder the program puts on `sys.path`.
      Elsewhere, no fix, only a report: the file saves a whole module (also
      where the result goes into `load_state_dict`: a module fails there with
      either value, measured); the load reads an in-memory buffer
      that carries arbitrary objects between processes (a broadcast); the
      loaded object is saved back (a tool that rewrites checkpoints, which must
      load whatever a file holds); `pickle_module=` is passed (combining it
      with `weights_only=True` raises); arguments come from `**kwargs` or
      `*args` (they may already set it). For files you trust, pass
      `weights_only=False` or allow the classes with
      `torch.serialization.safe_globals([...])`; better, save a `state_dict()`.
    An explicit `weights_only=False` is the user's decision and is left alone;
    so is a load whose `**kwargs` the same function gives a `weights_only` key
    (`kwargs["weights_only"] = True`, `setdefault`, `pop`: accelerate's
    `utils.other.load` sets it where torch has it and drops it where not).

    ## References
    - [`torch.load`](https://docs.pytorch.org/docs/stable/generated/torch.load.html)
    - [Serialization semantics: `weights_only`](https://docs.pytorch.org/docs/stable/notes/serialization.html)
    - [pytorch/pytorch#86812: add `weights_only` to `torch.load`](https://github.com/pytorch/pytorch/pull/86812)
    """

    code = "TFC001"
    name = "torch-load-without-weights-only"
    project_facts = ("module-classes", "checkpoints")
    message = "`torch.load` without `weights_only`: add `weights_only=True` so loading runs no pickled code"
    safety = Safety.SAFE
    min_torch = (1, 13)
    triggers = ("load",)
    needs = Needs.any_of("load")  # torch.load: an attribute or an imported name
    valid = (
        "import torch\nstate = torch.load('m.pt', weights_only=True)\n",
        "import torch\nobj = torch.load('m.pt', weights_only=False)\n",
        "import pickle\nobj = pickle.load(open('m.pkl', 'rb'))\n",
        "def load(p):\n    return p\nload('m.pt')\n",
        # the code decides weights_only itself in the kwargs it passes (accelerate)
        "import torch\ndef load(f, **kwargs):\n    if 'weights_only' not in kwargs:\n"
        "        kwargs['weights_only'] = True\n    return torch.load(f, **kwargs)\n",
        "import torch\ndef load(f, **kwargs):\n    kwargs.setdefault('weights_only', True)\n"
        "    return torch.load(f, **kwargs)\n",
    )
    invalid = (
        # only read, never set: the caller's kwargs decide, unseen here
        Example("import torch\ndef load(f, **kwargs):\n    print(kwargs['weights_only'])\n"
                "    return torch.load(f, **kwargs)\n"),
        Example(
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\n"
            "m.load_state_dict(torch.load('m.pt'))\n",
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\n"
            "m.load_state_dict(torch.load('m.pt', weights_only=True))\n",
        ),
        Example(
            "import torch\nstate = torch.load('m.pt')\n",
            "import torch\nstate = torch.load('m.pt', weights_only=True)\n",
            unsafe=True,
        ),
        Example(
            "from torch import load as L\nsd = L('m.pt', map_location='cpu')\n",
            "from torch import load as L\nsd = L('m.pt', map_location='cpu', weights_only=True)\n",
            unsafe=True,
        ),
        Example("import torch\nmodel = torch.load('whole.pt')\nmodel.eval()\n"),
        # moved, then called: a whole pickled model (pix2pix's test script)
        Example("import torch\nnet_g = torch.load('netG.pth').to('cpu')\n"
                "out = net_g(torch.ones(1, 3, 8, 8))\n"),
        # moved, then read as a tensor: still only a promise, unsafe
        Example("import torch\nx = torch.load('x.pt').to('cpu')\nprint(x.shape)\n",
                "import torch\nx = torch.load('x.pt', weights_only=True).to('cpu')\n"
                "print(x.shape)\n", unsafe=True),
        # The run writes the file (trusted) and it holds a numpy array: weights_only=False.
        Example("import torch\nimport numpy as np\ntorch.save(np.ones(3), 'a.pt')\n"
                "a = torch.load('a.pt')\n",
                "import torch\nimport numpy as np\ntorch.save(np.ones(3), 'a.pt')\n"
                "a = torch.load('a.pt', weights_only=False)\n", unsafe=True),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._loads: list[cst.Call] = []
        self._every_load: list[cst.Call] = []
        self._saves_module = False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified == TORCH_LOAD:
            self._every_load.append(node)
            if keyword_arg(node, "weights_only") is None:
                self._loads.append(node)
        elif qualified == TORCH_SAVE:
            saved = argument(node, "obj", 0)
            if saved is not None and module_evidence(self.names, saved.value):
                self._saves_module = True

    def leave_Module(self, original_node: cst.Module) -> None:
        for call in self._loads:
            self._check(call)

    def _check(self, call: cst.Call) -> None:
        if has_star_kwargs(call) and self._kwargs_decide_weights_only(call):
            return
        if has_star_kwargs(call) or has_star_args(call):
            self.report(call, "`torch.load` without an explicit `weights_only`; it may come "
                        "from `*args`/`**kwargs`, so no fix: pass `weights_only=True` explicitly")
            return
        if argument(call, "pickle_module", 2) is not None:
            self.report(call, "`torch.load` with `pickle_module=` runs pickled code; "
                        "`weights_only=True` cannot be combined with it, so no fix: load only "
                        "files you trust, or save tensors/state dicts and drop `pickle_module`")
            return
        use = load_use(self.names, call)
        saved = saved_content(self.names, call)
        if saved is not None and saved.allow_listed is False and \
                state_dict_saved_before(self.names, call):
            saved = None  # the save right above, as the file reads now, writes a state dict
        refusal = self._refusal(use, saved)
        if refusal is None:
            sibling = module_load_of_the_same_file(self.names, call, self._every_load)
            if sibling is not None:
                line = positions_of(self.context.module, [sibling])[id(sibling)].start.line
                refusal = (f"the load of the same file on line {line} uses it as a whole "
                           "`nn.Module`")
        if refusal is None and _unproven(use, saved):
            assert saved is not None
            # The project writes this file (or one of its shape), and nothing proves that
            # what it writes is only tensors, state dicts and primitives: no promise either
            # way, so no fix (`False` would give up the safety of a file that may load).
            unproven = (f"{saved.where} saves {saved.what} to {_which_file(saved)}, not "
                        "known to be only tensors, state dicts and primitives")
            self.report(call, f"`torch.load` without `weights_only`, but {unproven}: "
                        "`weights_only=True` may fail to load it; pass `weights_only=True` "
                        "if it holds only those, else `weights_only=False` for a trusted "
                        "file", reason=unproven)
            return
        if refusal is not None:
            # A whole module read into `load_state_dict` fails with either value: no fix.
            mismatch = saved is not None and saved.whole_module and use.into_state_dict
            if saved is not None and saved.named and saved.allow_listed is not True and \
                    not mismatch:
                # The run itself writes the file (trusted), and what it writes or how the
                # result is used cannot load with `weights_only=True`: `False` keeps it
                # loading on torch >= 2.6, as torch's own error message proposes.
                self.report(call, f"`torch.load` without `weights_only`, but {refusal}, "
                            "which `weights_only=True` cannot load; the run writes this file "
                            f"({saved.where}), so pass `weights_only=False` (or save and load "
                            "a `state_dict()`)", reason=refusal, fix=Fix(
                                Safety.UNSAFE, "add `weights_only=False` (a file the run writes)",
                                [(call, add_keyword(call, "weights_only", cst.Name("False")))],
                                min_torch=(1, 13)))
                return
            self.report(call, f"`torch.load` without `weights_only`, but {refusal}, which "
                        "`weights_only=True` cannot load: pass `weights_only=False` for trusted "
                        "files, or save and load a `state_dict()`", reason=refusal)
            return
        known = use.into_state_dict or (saved is not None and saved.matched_by == "path"
                                        and saved.allow_listed is True)
        encoding = keyword_arg(call, "encoding") is not None
        safe = known and not encoding
        fix = Fix(
            Safety.SAFE if safe else Safety.UNSAFE,
            "add `weights_only=True`",
            [(call, add_keyword(call, "weights_only", cst.Name("True")))],
            min_torch=(1, 13),
        )
        message = self.message
        if encoding:
            message += " (`encoding=` is ignored with a warning under `weights_only=True`)"
        if use.into_state_dict:
            reason = "the result only goes into `load_state_dict`: a state dict loads"
        elif known:
            assert saved is not None
            reason = f"{saved.where} saves {saved.what} to that file, which loads"
        else:
            reason = ("what the file holds is not visible in the run: on torch 1.13-2.5 a "
                      "file of other objects would stop loading (torch >= 2.6 loads this way "
                      "already)")
        self.report(call, message, fix=fix, reason=reason)

    def _kwargs_decide_weights_only(self, call: cst.Call) -> bool:
        """``kwargs["weights_only"] = True`` (or ``setdefault``/``pop`` of that key) on the
        ``**kwargs`` dict this load passes, in the same function: the code decides
        ``weights_only`` itself (accelerate's ``utils.other.load`` sets it where torch has
        it and drops it where torch does not)."""
        spread = [a.value for a in call.args if a.star == "**"]
        if len(spread) != 1 or not isinstance(spread[0], cst.Name):
            return False
        name = spread[0].value
        scope = self.names.scope_of(call)
        for read in self.names.loads_in(scope, name):
            parent = self.names.parent(read)
            if isinstance(parent, cst.Subscript) and parent.value is read and \
                    _is_weights_only_key(parent.slice) and \
                    isinstance(self.names.parent(parent), cst.AssignTarget):
                return True
            if isinstance(parent, cst.Attribute) and parent.value is read and \
                    parent.attr.value in ("setdefault", "pop"):
                method = self.names.parent(parent)
                if isinstance(method, cst.Call) and method.args and \
                        _is_weights_only_text(method.args[0].value):
                    return True
        return False

    def _refusal(self, use: LoadUse, saved: SavedContent | None) -> str | None:
        """Why ``weights_only=True`` would refuse what this load reads, if the code shows it."""
        # A model-like name is no proof, but enough to *not* add weights_only=True (which
        # could then fail to load a whole pickled module): report instead.
        if use.as_module or (use.target is not None and named_like_model(use.target.value)):
            return "the loaded object is used as a whole `nn.Module`"
        if saved is not None and saved.allow_listed is False:
            return f"{saved.where} saves {saved.what} to {_which_file(saved)}"
        part = object_part(self.names, use)
        if part is not None:
            return part
        if saved is not None and saved.transport and saved.allow_listed is not True:
            return ("it reads an in-memory buffer that carries arbitrary objects between "
                    "processes")
        if self._saves_module and saved is None:
            # Without the index's answer for this file, a whole-module save anywhere in
            # the file is reason enough not to promise the load works.
            return "this file saves a whole `nn.Module` with `torch.save`"
        if saved_back(self.names, use):
            return ("the loaded object is saved back, so this code rewrites checkpoints "
                    "and must load whatever a file holds")
        return None


def _unproven(use: LoadUse, saved: SavedContent | None) -> bool:
    """The program writes what this load may read, and its content is not known to load:
    a checkpoint bundle (a dict, list or tuple) of the file the load names, or anything the
    load is tied to only weakly (the same source file's saves, a dict with the keys it
    reads). The whole result going into ``load_state_dict`` is proof enough of a state
    dict."""
    if saved is None or saved.allow_listed is not None or use.whole_into_state_dict:
        return False
    return saved.bundle or saved.matched_by != "path"


def _which_file(saved: SavedContent) -> str:
    """How the load's file is tied to the save that decides (for messages)."""
    if saved.matched_by == "keys":
        return "a dict with the keys this load reads (likely the file it reads)"
    if saved.matched_by == "file":
        return "a file (likely the one this load reads)"
    return "that file"


def _is_weights_only_key(elements: Sequence[cst.SubscriptElement]) -> bool:
    return len(elements) == 1 and isinstance(elements[0].slice, cst.Index) and \
        _is_weights_only_text(elements[0].slice.value)


def _is_weights_only_text(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "weights_only"


class TorchLoadWithoutMapLocation(Rule):
    """## What it does
    Finds `torch.load(...)` without `map_location` and adds one:
    `map_location="cpu"`, or `map_location=device` when a variable named
    `device` is in scope.

    ## Why is this bad?
    A checkpoint saved from GPU tensors records their device. Loading it on a
    machine without that GPU fails with `RuntimeError: Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is
    False`, and on a multi-GPU host every process loads onto GPU 0.

    ## Example
    ```python
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", map_location="cpu"))
    ```

    ## Fix safety
    Safe when the loaded object only goes into `load_state_dict` (a model's or
    an optimizer's), directly or through a name or string keys of it:
    `load_state_dict` copies values onto the parameters' own device anyway.
    Unsafe when the run shows what the file holds (the project index finds
    the `torch.save` that writes it) and it is state dicts, tensors and
    primitives used directly: where those tensors live changes.
    No fix, only a report, everywhere else: a whole object (explicit
    `weights_only=False`, used as a module, a model-like name, the result
    returned, a saved whole module), whose devices `map_location="cpu"`
    would silently change (a GPU model comes back on the CPU), and loads
    whose content the run does not show (an FSDP optimizer state, tensors
    placed by the caller).
    No finding where nothing can fail: the run shows the file holds nothing
    that lives on an accelerator (numpy arrays, Python numbers, `.cpu()`
    tensors, a grad scaler's state, whose `state_dict()` holds Python floats
    and ints), or the load reads an in-memory buffer this program wrote
    (tensors come back on the devices they were sent from, which exist), or a
    file that a `torch.save` on an earlier line of the same block wrote (the
    same literal path, or the same name bound the same way): this process
    saved it moments ago, from devices it has (yunjey's pytorch_basics saves
    and reloads a whole ResNet on consecutive lines). Nor where a model gets
    back the state dict this program saved from that same model earlier in the
    same scope (the "best checkpoint" of a training loop,
    `torch.save(model.state_dict(), "best.pt")` ... then
    `model.load_state_dict(torch.load("best.pt"))`, same path, same model
    object; or a path filling the same literal template as the saves,
    `"{}.pkl".format(epoch)` saved every epoch and `.format(best_epoch)`
    restored): the tensors come from devices this process has, and
    `load_state_dict` copies them onto the parameters' device anyway.

    ## References
    - [`torch.load`, `map_location`](https://docs.pytorch.org/docs/stable/generated/torch.load.html)
    - [Saving and loading models across devices](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html)
    """

    code = "TFC002"
    name = "torch-load-without-map-location"
    project_facts = ("module-classes", "checkpoints")
    message = "`torch.load` without `map_location` fails on a host without the GPU it was saved from"
    safety = Safety.SAFE
    triggers = ("load",)
    needs = Needs.any_of("load")  # torch.load: an attribute or an imported name
    valid = (
        "import torch\nsd = torch.load('m.pt', map_location='cpu')\n",
        "import torch\nsd = torch.load('m.pt', 'cpu')\n",
        "import numpy as np\narr = np.load('a.npy')\n",
        "import torch\nimport numpy as np\ntorch.save(np.ones(3), 'a.pt')\n"
        "a = torch.load('a.pt', weights_only=False)\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n"
        "scaler.load_state_dict(torch.load('scaler.pt'))\n",
        # this process wrote the file on the line before, from devices it has
        "import torch\ntorch.save(net, 'm.pt')\nnet2 = torch.load('m.pt', weights_only=False)\n",
        "import torch\ndef f(net, path):\n    torch.save(net, path)\n"
        "    return torch.load(path, weights_only=False)\n",
    )
    invalid = (
        Example(
            "import torch\nmodel.load_state_dict(torch.load('m.pt'))\n",
            "import torch\nmodel.load_state_dict(torch.load('m.pt', map_location=\"cpu\"))\n",
        ),
        Example(
            "import torch\nfrom torch import nn\nnet = nn.Linear(2, 2)\n\n\ndef save():\n"
            "    torch.save({'ema': net.state_dict()}, 'm.pt')\n\n\n"
            "ckpt = torch.load('m.pt')\nema = ckpt['ema']\n",
            "import torch\nfrom torch import nn\nnet = nn.Linear(2, 2)\n\n\ndef save():\n"
            "    torch.save({'ema': net.state_dict()}, 'm.pt')\n\n\n"
            "ckpt = torch.load('m.pt', map_location=\"cpu\")\nema = ckpt['ema']\n",
            unsafe=True,
        ),
        Example("import torch\nckpt = torch.load('m.pt')\nema = ckpt['ema']\n"),
        Example("import torch\nmodel = torch.load('whole.pt')\nmodel.eval()\n"),
        # the save may not have run in this process (an older file, from another host)
        Example("import torch\nif best:\n    torch.save(net, 'm.pt')\n"
                "net2 = torch.load('m.pt', weights_only=False)\n"),
        Example("import torch\ndef f(net, path):\n    torch.save(net, path)\n"
                "    path = other\n    return torch.load(path, weights_only=False)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) != TORCH_LOAD:
            return
        if argument(node, "map_location", 1) is not None:
            return
        if has_star_kwargs(node) or has_star_args(node):
            self.report(node, self.message + "; arguments come from `*args`/`**kwargs`, so "
                        "no fix: pass `map_location=` explicitly")
            return
        use = load_use(self.names, node)
        saved = saved_content(self.names, node)
        if saved is not None and (saved.cpu_only or saved.transport):
            return  # nothing in the file lives on an accelerator, or its devices exist here
        if saved_before(self.names, node) is not None:
            return  # this process wrote the file just before: its devices exist here
        if restores_own_save(self.names, node) is not None:
            return  # the model's own state dict, saved earlier by this program, put back
        if use.into_scaler_only:
            return  # a grad scaler's state holds Python numbers
        whole = self._whole_object(node, use, saved)
        if not use.into_state_dict and (whole is not None or saved is None or
                                        saved.matched_by != "path" or
                                        saved.allow_listed is not True):
            why = whole or "what the file holds and where its tensors go are not visible here"
            self.report(node, f"{self.message} (no fix: {why}; pass `map_location=` where "
                        "the loaded objects should live)", reason=why)
            return
        device = self._device_name(node)
        value: cst.BaseExpression = cst.Name(device) if device else cst.SimpleString('"cpu"')
        shown = device or '"cpu"'
        safe = use.into_state_dict
        fix = Fix(
            Safety.SAFE if safe else Safety.UNSAFE,
            f"add `map_location={shown}`",
            [(node, add_keyword(node, "map_location", value))],
        )
        reason = ("the result only goes into `load_state_dict`, which copies to the "
                  "parameters' device" if safe else
                  "state dicts and tensors are used directly, so their device would change")
        self.report(node, self.message, fix=fix, reason=reason)

    def _whole_object(self, node: cst.Call, use: LoadUse,
                      saved: SavedContent | None) -> str | None:
        """Why the load returns a whole object whose devices must not be remapped."""
        if explicitly_whole(node):
            return "`weights_only=False` loads a whole object, whose devices would move"
        if use.as_module or (use.target is not None and named_like_model(use.target.value)):
            return "a whole module is loaded; `map_location` would move it off its device"
        if saved is not None and saved.whole_module:
            return f"{saved.where} saves a whole module there"
        if use.returned:
            return "the loaded object is returned to callers, who decide its device"
        return None

    def _device_name(self, node: cst.Call) -> str | None:
        """``device`` when a variable of that name is bound wherever the load runs.

        Bound *before* the load on every path, not merely somewhere in the scope:
        a ``device`` assigned later, or under ``if args.accel:`` only, would be a
        NameError (pytorch/examples ``super_resolution/super_resolve.py``).
        """
        found = self.names.lookup("device", self.names.scope_of(node))
        if found is None:
            return None
        _, bindings = found
        if any(b.kind == "import" for b in bindings):
            return None
        return "device" if definitely_bound(self.names, node, "device") else None


class SaveWholeModule(Rule):
    """## What it does
    Finds `torch.save(model, path)` where `model` is an `nn.Module` instance,
    which pickles the whole object.

    ## Why is this bad?
    A pickled module stores the import path of its class. Rename or move the
    class, or load the file in another project, and loading fails; loading it
    also needs `weights_only=False`, which runs pickled code. A `state_dict()`
    holds only tensors and loads anywhere with `weights_only=True`.

    ## Example
    ```python
    torch.save(model, "model.pt")
    model = torch.load("model.pt")
    ```

    ## Use instead
    ```python
    torch.save(model.state_dict(), "model.pt")
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Fix safety
    Report only, unless the load of that file is found too, and both sites are
    rewritten together, as an unsafe fix:
    - in the same file, when it loads it back into a model it has already
      built (`model = Net(...)` ... `model = torch.load(path)`);
    - in another file of the run (the project index matches the file name),
      when the class is defined in a third module that the loading file can
      import the way the saving file does (unpickling the whole module imports
      it from there anyway), its constructor takes literal arguments, and this
      save and that load are the only ones of the file in the run. The load
      `model = torch.load(path)` becomes `model = Net(...)` followed by
      `model.load_state_dict(torch.load(path))` (importing `Net` next to it
      unless the file already names it, next to the load as unpickling did);
      a pair is offered only when both files are in the run, this rule runs on
      both under the same fix policy, neither line is silenced and the load
      statement can be replaced, so the two sides are rewritten together or not
      at all.
    Unsafe because the loaded weights go into a new or existing object instead
    of replacing it (a model saved from a GPU now loads onto the device its
    new instance lives on), and files saved earlier in the old format no
    longer load through the new code. On torch >= 2.6 the original load fails
    anyway (`weights_only=True` by default cannot unpickle a module).

    ## References
    - [Saving and loading models: `state_dict` vs the entire model](https://docs.pytorch.org/tutorials/beginner/saving_loading_models.html)
    - [Serialization semantics](https://docs.pytorch.org/docs/stable/notes/serialization.html)
    """

    code = "TFC003"
    name = "save-whole-module"
    project_facts = ("module-classes", "checkpoints", "checkpoint-pairs")
    message = "`torch.save` of a whole `nn.Module` pickles its class path; save `state_dict()` instead"
    safety = Safety.UNSAFE
    triggers = ("save", "load")  # a file that only loads may hold the other side of a pair
    needs = Needs.any_of("save", "load")
    valid = (
        "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m.state_dict(), 'm.pt')\n",
        "import torch\ntorch.save({'epoch': 1}, 'c.pt')\n",
    )
    invalid = (
        Example("import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m, 'm.pt')\n"),
        Example(
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m, 'm.pt')\n"
            "m = nn.Linear(2, 2)\nm = torch.load('m.pt')\n",
            "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\n"
            "torch.save(m.state_dict(), 'm.pt')\nm = nn.Linear(2, 2)\n"
            "m.load_state_dict(torch.load('m.pt'))\n",
            unsafe=True,
        ),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._saves: list[tuple[cst.Call, cst.Arg, str]] = []
        self._loads: list[tuple[cst.Assign, cst.Name, cst.Call]] = []

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        if qualified == TORCH_SAVE:
            saved = argument(node, "obj", 0)
            if saved is None:
                return
            evidence = module_evidence(self.names, saved.value)
            if evidence:
                self._saves.append((node, saved, evidence.reason))
        elif qualified == TORCH_LOAD:
            target = assigned_name(self.names, node)
            statement = self.names.parent(node)
            if target is not None and isinstance(statement, cst.Assign):
                self._loads.append((statement, target, node))

    def leave_Module(self, original_node: cst.Module) -> None:
        for call, saved, evidence in self._saves:
            fix = self._paired_fix(call, saved) or self._cross_file_save(call, saved)
            self.report(call, self.message, fix=fix, reason=evidence)
        for statement, target, load in self._loads:
            pair = module_pair(self.names, load, "load")
            if pair is None or pair.target != target.value:
                continue
            message = (f"`torch.load` of a whole `{pair.class_name}` that {pair.other_path} "
                       "saves with `torch.save`: the pickle holds its class path; load a "
                       "`state_dict()` into a new instance instead")
            self.report(load, message, fix=self._build_and_load(statement, target, load, pair),
                        reason=f"paired with the `state_dict()` save in {pair.other_path}")

    def _built_before(self, statement: cst.Assign, name: str) -> bool:
        """``name = <a module>`` earlier in the block of ``name = torch.load(...)``, so the
        model exists wherever the load runs (a build in another branch or later does not
        count: the load would then read an unbound name)."""
        line = self.names.parent(statement)
        block = self.names.parent(line) if line is not None else None
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)) or line not in body:
            return False
        for earlier in reversed(body[: body.index(line)]):
            if not isinstance(earlier, cst.SimpleStatementLine):
                if any(n.value == name for n in names_in(earlier)):
                    return False  # a branch or loop that may rebind it
                continue
            for small in reversed(earlier.body):
                targets = [t.target for t in getattr(small, "targets", ())] + (
                    [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
                if not any(n.value == name for t in targets for n in names_in(t)):
                    continue
                return isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Name) and \
                    module_evidence(self.names, small.value) is not None
        return False

    def _cross_file_save(self, call: cst.Call, saved: cst.Arg) -> Fix | None:
        """Save ``state_dict()`` when another file's load of it is rewritten in the same run."""
        pair = module_pair(self.names, call, "save")
        if pair is None or not isinstance(saved.value, cst.Name):
            return None
        return Fix(
            Safety.UNSAFE,
            f"save `state_dict()`; {pair.other_path} loads it into a new `{pair.class_name}` "
            "in the same change",
            [(call, _with_state_dict(call, saved))],
        )

    def _build_and_load(self, statement: cst.Assign, target: cst.Name, load: cst.Call,
                        pair: ModulePair) -> Fix | None:
        """``model = torch.load(p)`` -> ``model = Net(...)``; ``model.load_state_dict(...)``."""
        line = self.names.parent(statement)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        load_into = _load_state_dict_into(target.value, load)
        scope = self.names.scope_of(target)
        if self._built_before(statement, target.value):
            return Fix(Safety.UNSAFE, "load the `state_dict()` into the model built here",
                       [(statement, load_into)])
        try:
            reference = self.context.imports.reference(pair.qualified, at=statement)
        except ImportUnavailable:
            reference = None
        new: list[cst.BaseStatement] = []
        if reference is not None and reference.needs is None:
            constructor = reference.code
        else:
            # Imported where it is used, as unpickling the whole module did: a lazy
            # import stays lazy. The index checked the name is free here.
            if self.names.lookup(pair.class_name, scope) is not None:
                return None
            new.append(parse_statement(f"from {pair.module} import {pair.class_name}\n"))
            constructor = pair.class_name
        new.append(parse_statement(f"{target.value} = {constructor}({pair.arguments})\n"))
        new.append(cst.SimpleStatementLine([load_into]))
        new[0] = new[0].with_changes(leading_lines=line.leading_lines)
        new[-1] = new[-1].with_changes(trailing_whitespace=line.trailing_whitespace)
        return Fix(
            Safety.UNSAFE,
            f"build a `{pair.class_name}` and load the `state_dict()` {pair.other_path} saves "
            "into it",
            [(line, cst.FlattenSentinel(new))],
        )

    def _paired_fix(self, call: cst.Call, saved: cst.Arg) -> Fix | None:
        """Rewrite save and load together when the load goes back into a built model."""
        if not isinstance(saved.value, cst.Name):
            return None
        name = saved.value.value
        pairs = [(statement, target, load) for statement, target, load in self._loads
                 if target.value == name and self._built_before(statement, name)]
        if len(pairs) != 1:
            return None
        statement, target, load = pairs[0]
        return Fix(
            Safety.UNSAFE,
            "save `state_dict()` and load it into the model this file already builds",
            [(call, _with_state_dict(call, saved)),
             (statement, _load_state_dict_into(target.value, load))],
        )


def _with_state_dict(call: cst.Call, saved: cst.Arg) -> cst.Call:
    """``torch.save(m, f)`` -> ``torch.save(m.state_dict(), f)``."""
    state_dict = cst.Call(func=cst.Attribute(value=saved.value, attr=cst.Name("state_dict")))
    return call.with_changes(args=[
        arg.with_changes(value=state_dict) if arg is saved else arg for arg in call.args
    ])


def _load_state_dict_into(name: str, load: cst.Call) -> cst.Expr:
    """``name.load_state_dict(<load>)``."""
    return cst.Expr(cst.Call(
        func=cst.Attribute(value=cst.Name(name), attr=cst.Name("load_state_dict")),
        args=[cst.Arg(load)],
    ))


RULES = [TorchLoadWithoutWeightsOnly, TorchLoadWithoutMapLocation, SaveWholeModule]
