"""Measured on torch 2.13: the torch 0.3 overloads of `addmm`/`addmv`/`addr`/`addbmm`/`baddbmm`
(and their in-place forms) that take `beta` and `alpha` as leading positional numbers
(`dist.addmm_(1, -2, x, y.t())`, the re-id distance matrix of every 2018 re-id repository),
or `beta` alone (`x.addmm_(0.5, a, b)`).

For each: does the call still run, does it warn as deprecated (the message), is the result
bitwise equal to the keyword form (`x.addmm_(a, b, beta=1, alpha=-2)`), and does the
keyword order raise when the numbers are passed last positionally (so that with that many
positional arguments only the deprecated overload matches).

Run: python docs/measurements/number_first_matrix_overloads.py > docs/measurements/number_first_matrix_overloads.txt
"""
import warnings

import torch

print("torch", torch.__version__)
torch.manual_seed(0)
CASES = {
    "addmm": (torch.randn(3, 5), torch.randn(3, 4), torch.randn(4, 5)),
    "addmv": (torch.randn(3), torch.randn(3, 4), torch.randn(4)),
    "addr": (torch.randn(3, 4), torch.randn(3), torch.randn(4)),
    "addbmm": (torch.randn(3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5)),
    "baddbmm": (torch.randn(2, 3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5)),
}
for name, (base, a, b) in CASES.items():
    for inplace in (False, True):
        method = name + ("_" if inplace else "")
        for numbers, keywords in (((1, -2), {"beta": 1, "alpha": -2}),
                                  ((0.5,), {"beta": 0.5})):
            old_x, new_x = base.clone(), base.clone()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    old = getattr(old_x, method)(*numbers, a, b)
                except Exception as error:  # noqa: BLE001
                    print(f"{method}{numbers + ('a', 'b')}: raises {type(error).__name__}: {error}")
                    continue
            new = getattr(new_x, method)(a, b, **keywords)
            message = next((str(w.message).splitlines()[0] for w in caught), "no warning")
            same = torch.equal(old, new) and (not inplace or torch.equal(old_x, new_x))
            print(f"{method}{numbers + ('a', 'b')}: runs; warns: {message!r}; bitwise equal to "
                  f"{method}(a, b, **{keywords}): {same}")
        try:
            getattr(base.clone(), method)(a, b, 1, -2)
            print(f"{method}(a, b, 1, -2): runs")
        except TypeError as error:
            print(f"{method}(a, b, 1, -2): TypeError ({str(error).splitlines()[0][:80]})")
    # the function form: torch.addmm(input, beta, alpha, a, b)?
    function = getattr(torch, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            old = function(base, a, b, 1, -2)
            print(f"torch.{name}(x, a, b, 1, -2): runs")
        except TypeError as error:
            print(f"torch.{name}(x, a, b, 1, -2): TypeError")
        try:
            old = function(1, base, -2, a, b)
            message = next((str(w.message).splitlines()[0] for w in caught), "no warning")
            same = torch.equal(old, function(base, a, b, beta=1, alpha=-2))
            print(f"torch.{name}(1, x, -2, a, b): runs; warns: {message!r}; equal: {same}")
        except TypeError:
            print(f"torch.{name}(1, x, -2, a, b): TypeError")

# torch warns about a deprecated overload once per process: the warning of each form is
# measured in a fresh process.
if __name__ == "__main__":
    import subprocess
    import sys

    SHAPES = {"addmm": "(3, 5), (3, 4), (4, 5)", "addmv": "(3,), (3, 4), (4,)",
              "addr": "(3, 4), (3,), (4,)", "addbmm": "(3, 5), (2, 3, 4), (2, 4, 5)",
              "baddbmm": "(2, 3, 5), (2, 3, 4), (2, 4, 5)"}
    for name, shapes in SHAPES.items():
        for method in (name, name + "_"):
            for numbers in ("1, -2", "0.5"):
                code = (f"import warnings, torch\nx, a, b = (torch.randn(*s) for s in ({shapes}))\n"
                        "with warnings.catch_warnings(record=True) as w:\n"
                        "    warnings.simplefilter('always')\n"
                        f"    x.{method}({numbers}, a, b)\n"
                        "print(str(w[0].message).splitlines()[0] if w else 'no warning')\n")
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
                print(f"fresh process: {method}({numbers}, a, b) warns: {out.stdout.strip()!r}")
