"""The command line's output rule, shared by every subcommand, and its all-or-nothing writing.

The rule: no output may be, or lie inside, any input the run reads. Inputs are every path the
command line names to be read (PREDS, GT, folders, ``--config``, ``--slices`` and any protocol
option whose value names an existing path: ``--names``, ``--classes``, ``--hierarchy`` ...).
An output and an input are the same when their resolved paths are, or when they are the same
file (device and inode: a hard link, a bind mount); an output lies inside an input folder when
one of its resolved parents is that folder, by either test.

Outputs are written to temporaries beside their targets and renamed into place once all are
written (:class:`Staging`); SIGTERM and SIGHUP interrupt the run as Ctrl-C does
(:func:`terminable`), so no temporary survives any of them.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deteval.errors import InputError

__all__ = ["Staging", "Terminated", "check_outputs", "input_files", "terminable"]


@dataclass(frozen=True)
class InputFile:
    """One input: the flag (or positional) naming it, its resolved path, its file identity and kind."""

    what: str
    real: str
    ident: tuple[int, int] | None  # (st_dev, st_ino); None when it cannot be stat'ed (missing, a loop)
    is_dir: bool


def _ident(path: str | os.PathLike) -> tuple[tuple[int, int] | None, bool]:
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # missing, a symlink loop, a NUL in the name: the reader says which
        return None, False
    return (st.st_dev, st.st_ino), stat.S_ISDIR(st.st_mode)


def _real(path: str | os.PathLike) -> str:
    """The resolved absolute path; a symlink loop or missing part is left as far as it resolves (never raises)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.abspath(path)


def input_files(named: Mapping[str, Any], maybe: Mapping[str, Any] = {}) -> list[InputFile]:
    """The inputs of a run: ``named`` (what -> path) are inputs whether or not they exist; ``maybe``
    (a protocol option's flag -> its value) are inputs when the value is a path that exists
    (``--classes dota1.0`` names a class list, ``--classes cls.txt`` a file)."""
    found = []
    for what, value in [*named.items(), *maybe.items()]:
        if not isinstance(value, (str, os.PathLike)) or value in ("", "-"):
            continue
        ident, is_dir = _ident(value)
        if what in maybe and ident is None and not os.path.lexists(value):
            continue
        found.append(InputFile(what, _real(value), ident, is_dir))
    return found


def _clash(path: str | os.PathLike, inputs: Iterable[InputFile]) -> InputFile | None:
    """The input that ``path`` is, or lies inside; None when there is none."""
    real = _real(path)
    ident, _ = _ident(path)
    parents = [str(p) for p in Path(real).parents]
    parent_idents = None
    for inp in inputs:
        if real == inp.real or (ident is not None and ident == inp.ident):
            return inp
        if inp.is_dir:  # a folder input: is the output inside it?
            if inp.real in parents:
                return inp
            if inp.ident is not None:
                if parent_idents is None:
                    parent_idents = {_ident(p)[0] for p in parents}
                if inp.ident in parent_idents:
                    return inp
    return None


def check_outputs(outputs: Mapping[str, tuple[str, bool]], inputs: list[InputFile]) -> None:
    """Each output (flag -> (path, is a directory)) usable, none an input or inside one, none another output.

    :class:`InputError` naming the flag; ``-`` (stdout) is the caller's to have taken out.
    """
    seen: dict[str, str] = {}
    seen_idents: dict[tuple[int, int], str] = {}
    for flag, (path, directory) in outputs.items():
        check_target(flag, Path(path), directory=directory)
        inp = _clash(path, inputs)
        if inp is not None:
            if _real(path) == inp.real or _ident(path)[0] == inp.ident:
                raise InputError(flag, None, f"{path} is also {inp.what}; refusing to overwrite it")
            raise InputError(flag, None, f"{path} lies inside the folder {inp.what}; refusing to write into an input")
        real, (ident, _) = _real(path), _ident(path)
        other = seen.get(real) or (seen_idents.get(ident) if ident is not None else None)
        if other is not None:
            raise InputError(flag, None, f"{path} is also {other}")
        seen[real] = flag
        if ident is not None:
            seen_idents[ident] = flag


def check_target(flag: str, path: Path, *, directory: bool) -> None:
    """The target's parent exists and is writable; the target itself, if present, is of the right kind."""
    parent = path.parent
    try:
        parent_ok = parent.is_dir()
    except OSError:  # a loop among the parents
        parent_ok = False
    if not parent_ok:
        # no longer created: a typo in a directory name should not scatter outputs
        problem = "is not a directory" if os.path.lexists(parent) else "does not exist"
        raise InputError(flag, None, f"cannot write {path}: {parent} {problem}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(flag, None, f"cannot write {path}: directory {parent} is not writable")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(flag, None, f"cannot write {path}: {exc.strerror}") from None
    if directory:
        if not stat.S_ISDIR(mode):
            raise InputError(flag, None, f"{path} exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(flag, None, f"cannot write into {path}: not writable")
    elif stat.S_ISDIR(mode):
        raise InputError(flag, None, f"{path} is a directory")
    elif not stat.S_ISREG(mode):
        raise InputError(flag, None, f"{path} is not a regular file (a device, pipe or socket)")


class Staging:
    """Temporary files and directories beside their targets; :meth:`commit` renames them all into place.

    Renames within one directory are atomic, so each target is either old or new, never half written;
    :meth:`discard` (on any failure) removes every temporary and leaves the targets untouched. The files
    a directory output holds are checked against the inputs before any rename (``inputs``).
    """

    def __init__(self, inputs: list[InputFile] | None = None) -> None:
        self.files: list[tuple[Path, Path, str]] = []  # (temporary, target, flag)
        self.dirs: list[tuple[Path, Path, str]] = []
        self.inputs = inputs or []

    def file(self, target: Path, flag: str = "") -> Path:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        self.files.append((Path(tmp), target, flag))
        return Path(tmp)

    def directory(self, target: Path, flag: str = "") -> Path:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        self.dirs.append((tmp, target, flag))
        return tmp

    def commit(self) -> None:
        for tmp, target, flag in self.dirs:
            for item in sorted(tmp.iterdir()):
                inp = _clash(target / item.name, self.inputs)
                if inp is not None:
                    raise InputError(flag, None, f"{target / item.name} is also {inp.what}; refusing to overwrite it")
        mask = _umask()
        for tmp, target, _ in self.files:
            # mkstemp makes 0600 files; outputs get the usual mode, as a plain open() would
            os.chmod(tmp, 0o666 & ~mask)
            os.replace(tmp, target)
        for tmp, target, _ in self.dirs:
            target.mkdir(exist_ok=True)  # the directory itself (its parent was checked): documented under --plot
            for item in sorted(tmp.iterdir()):
                os.chmod(item, 0o666 & ~mask)
                os.replace(item, target / item.name)
            tmp.rmdir()
        self.files, self.dirs = [], []

    def discard(self) -> None:
        for tmp, _, _ in self.files:
            tmp.unlink(missing_ok=True)
        for tmp, _, _ in self.dirs:
            shutil.rmtree(tmp, ignore_errors=True)
        self.files, self.dirs = [], []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the run is, as Ctrl-C raises KeyboardInterrupt: every ``finally``
    (the temporaries' removal among them) runs. ``signum`` is the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextmanager
def terminable() -> Iterator[None]:
    """In this block SIGTERM and SIGHUP raise :class:`Terminated` (main thread only; elsewhere a no-op),
    and SIGINT raises KeyboardInterrupt (whatever the handler during the imports was); a signal the
    process was started ignoring (``nohup``) stays ignored."""
    wanted = [signal.SIGINT, *(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))]
    previous = {}
    try:
        for sig in wanted:
            if signal.getsignal(sig) is signal.SIG_IGN:  # nohup, a background job: ignored it stays
                continue
            handler = signal.default_int_handler if sig == signal.SIGINT else _raise_terminated
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: signals are not ours to take
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
