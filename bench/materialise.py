"""Extract the benchmark's real repositories (bench/repos.toml) at their pinned commits.

Only names and commits are kept in this repository, never the code. Each
repository is read from a local bare mirror (``<mirrors>/<owner>+<name>/repo``
or ``<mirrors>/<owner>+<name>``, as the ``fetch`` tool or ``git clone --mirror``
leaves it) with ``git archive``; only ``.py`` and ``.ipynb`` files are written, so
no repository's ``pyproject.toml`` or ``.gitignore`` changes what either linter
sees. A repository already extracted at the same commit is left as it is.

Usage::

    python bench/materialise.py --out /tmp/tfc-bench            # every repository
    python bench/materialise.py --out /tmp/tfc-bench --sample 300 --sample-out /tmp/s300
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import tomllib

HERE = Path(__file__).resolve().parent
REPOS = HERE / "repos.toml"
DEFAULT_MIRRORS = os.environ.get("TFC_BENCH_MIRRORS", "/work/.mirror")
MARKER = ".bench-commit"
CODE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Repo:
    name: str
    commit: str
    kind: str

    @property
    def directory(self) -> str:
        return self.name.replace("/", "+")


def load_repos(path: Path = REPOS) -> list[Repo]:
    with path.open("rb") as handle:
        table = tomllib.load(handle)
    return [Repo(entry["name"], entry["commit"], entry.get("kind", "")) for entry in table["repo"]]


def git_dir(mirrors: Path, repo: Repo) -> Path:
    """The bare repository holding ``repo``; a clear error when there is none."""
    base = mirrors / repo.directory
    for candidate in (base / "repo", base):
        if (candidate / "HEAD").is_file():
            return candidate
    raise SystemExit(
        f"materialise: no mirror of {repo.name} under {mirrors} (looked for {base}/repo and "
        f"{base}); clone it with `git clone --mirror https://github.com/{repo.name} {base}`"
    )


def extract(mirrors: Path, repo: Repo, out: Path) -> Path:
    """``repo``'s code files at its commit under ``out/<owner>+<name>``; returns that directory."""
    target = out / repo.directory
    marker = target / MARKER
    if marker.is_file() and marker.read_text().strip() == repo.commit:
        return target
    source = git_dir(mirrors, repo)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    # Only the code files: a mirror may lack the blobs of large data files, and
    # git archive stops at the first missing one.
    listing = _git(source, "ls-tree", "-r", "-z", "--name-only", repo.commit, repo=repo)
    paths = [name for name in listing.decode().split("\0") if name.endswith(CODE_SUFFIXES)]
    archive = subprocess.Popen(
        ["git", f"--git-dir={source}", "archive", "--format=tar", repo.commit, "--", *paths],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, GIT_LITERAL_PATHSPECS="1"),
    )
    assert archive.stdout is not None
    with tarfile.open(fileobj=archive.stdout, mode="r|") as stream:
        for member in stream:
            if member.isfile() and member.name.endswith(CODE_SUFFIXES):
                stream.extract(member, target, filter="data")
    error = archive.stderr.read().decode(errors="replace").strip() if archive.stderr else ""
    if archive.wait() != 0:
        lines = error.splitlines()
        raise SystemExit(f"materialise: {repo.name} @ {repo.commit[:12]}: "
                         f"{lines[-1] if lines else 'git archive failed'}")
    marker.write_text(repo.commit + "\n")
    return target


def _git(source: Path, *arguments: str, repo: Repo) -> bytes:
    done = subprocess.run(["git", f"--git-dir={source}", *arguments], capture_output=True)
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise SystemExit(f"materialise: {repo.name} @ {repo.commit[:12]}: "
                         f"{lines[-1] if lines else 'git failed'}")
    return done.stdout


def materialise(out: Path, mirrors: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [extract(mirrors, repo, out) for repo in load_repos()]


def code_files(directories: list[Path]) -> list[Path]:
    return sorted(
        path for directory in directories for path in directory.rglob("*")
        if path.suffix in CODE_SUFFIXES and path.is_file()
    )


def sample(directories: list[Path], count: int, out: Path) -> int:
    """Copy ``count`` of the code files under ``directories`` into ``out``, keeping their paths.

    The order is fixed by a hash of each file's path, so repositories are mixed
    and a smaller sample is a subset of a larger one. Returns how many were copied.
    """
    files = [(path, directory) for directory in directories for path in code_files([directory])]
    files.sort(key=lambda item: hashlib.sha1(str(item[0].relative_to(item[1].parent))
                                             .encode()).hexdigest())
    if out.exists():
        shutil.rmtree(out)
    chosen = files[:count]
    for path, directory in chosen:
        target = out / path.relative_to(directory.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return len(chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where the repositories go")
    parser.add_argument("--mirrors", type=Path, default=Path(DEFAULT_MIRRORS),
                        help=f"directory of bare mirrors (default {DEFAULT_MIRRORS}, "
                             "or $TFC_BENCH_MIRRORS)")
    parser.add_argument("--sample", type=int, help="also copy this many files to --sample-out")
    parser.add_argument("--sample-out", type=Path)
    args = parser.parse_args(argv)
    directories = materialise(args.out, args.mirrors)
    for repo, directory in zip(load_repos(), directories, strict=True):
        print(f"{len(code_files([directory])):5d} files  {repo.name} @ {repo.commit[:12]}")
    print(f"{len(code_files(directories)):5d} files  in {args.out}")
    if args.sample is not None:
        if args.sample_out is None:
            parser.error("--sample needs --sample-out")
        copied = sample(directories, args.sample, args.sample_out)
        print(f"{copied:5d} files  sampled into {args.sample_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
