"""Loading user code by import path, and finding the import path of user classes.

Wherever pmsim accepts a runtime, workload or mutant name it also accepts an import path:

* ``path/to/file.py:Name`` loads the file (once per process, under a stable module name
  derived from its resolved path, so ProcessPoolExecutor workers that resolve the same string
  load it the same way) and takes its attribute ``Name``;
* ``package.module:Name`` imports the module and takes ``Name`` (dotted for nested classes).

Registered names win: ``undo:U1`` is the registered mutant, never module ``undo``. The other
direction, :func:`import_path`, finds the string that loads a class back (for reproducers and
saved findings), or says why there is none (a class defined in ``__main__``, in a function,
or built at run time).

User code that fails outside crash recovery (raises, calls ``sys.exit``, raises
KeyboardInterrupt itself) becomes a :class:`UserCodeError` naming the user's own frame
(:func:`user_error`): the innermost frame of a file outside pmsim, crashfuzz and the installed
packages that pmsim called into.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import linecache
import os
import re
import sys
import sysconfig
import traceback
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from . import interrupts
from .errors import ConfigError, PmsimError, UnknownNameError, unknown

MODULE_PREFIX = "pmsim_user_"
"""Prefix of the module names user files are loaded under."""

_FILES: dict[str, str] = {}
"""Module name -> the path string it was loaded from (as the user wrote it)."""

_ORIGINS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""Objects built from an import path (e.g. a runtime built from a Mutant) -> that path."""

_ATTR = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_import_path(name: str) -> bool:
    """Whether ``name`` has the form ``file.py:Name`` or ``module:Name``."""
    where, sep, attr = name.rpartition(":")
    return bool(sep and where and _ATTR.match(attr))


def is_file_path(where: str) -> bool:
    """Whether the part before the colon names a file rather than a module."""
    return where.endswith(".py") or "/" in where or "\\" in where


def module_name_for(path: Path) -> str:
    """The stable module name a file is loaded under (one per resolved path)."""
    real = str(path.resolve())
    stem = re.sub(r"\W", "_", path.stem) or "file"
    return f"{MODULE_PREFIX}{stem}_{hashlib.sha1(real.encode()).hexdigest()[:10]}"


def load_file(where: str) -> ModuleType:
    """Execute the Python file ``where`` once per process; return its module."""
    path = Path(where).expanduser()
    if not path.is_file():
        raise ConfigError(f"{where}: no such file (a relative path is taken from the current "
                          f"directory, {Path.cwd()}); check the path before the ':'")
    name = module_name_for(path)
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    if spec is None or spec.loader is None:
        raise ConfigError(f"{where}: cannot be loaded as a Python module; name a .py file")
    mod = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)  # sibling imports work as for `python file.py`, shadowing nothing
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        del sys.modules[name]
        raise ConfigError(f"{where}: syntax error at line {e.lineno}: {e.msg}; fix the file") from None
    except Exception as e:  # noqa: BLE001 - any error in user code becomes a clear ConfigError
        del sys.modules[name]
        raise ConfigError(f"{where}: importing it raised {type(e).__name__}: {e}"
                          f"{_line_in(e, path)}; fix the file") from e
    _FILES[name] = where
    return mod


def _line_in(e: BaseException, path: Path) -> str:
    real = str(path.resolve())
    lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == real]
    return f" (line {lines[-1]})" if lines else ""


def load_module(where: str, kind: str, name: str, known: Iterable[str]) -> ModuleType:
    """Import module ``where`` for the import path ``name``; an unknown module is reported as
    an unknown ``kind`` name (it may be a mistyped registered name such as ``undo:U9``)."""
    try:
        found = importlib.util.find_spec(where)
    except (ImportError, ValueError):
        found = None
    if found is None:
        err = unknown(kind, name, known)
        raise UnknownNameError(f"{err} It is not an import path either: no module {where!r} "
                               f"(use 'path/to/file.py:Class' or 'package.module:Class')")
    try:
        return importlib.import_module(where)
    except Exception as e:  # noqa: BLE001
        raise ConfigError(f"{name}: importing module {where!r} raised {type(e).__name__}: "
                          f"{e}; fix the module") from e


def load_attr(name: str, kind: str, known: Iterable[str] = ()) -> Any:
    """The object an import path ``file.py:Name`` / ``module:Name`` names."""
    where, _, attr = name.rpartition(":")
    mod = load_file(where) if is_file_path(where) else load_module(where, kind, name, known)
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            have = sorted(k for k, v in vars(mod).items()
                          if not k.startswith("_") and isinstance(v, type) and
                          getattr(v, "__module__", None) == mod.__name__)
            raise ConfigError(f"{name}: {where} has no attribute {attr!r}"
                              + (f"; it defines {', '.join(have)}" if have else "")
                              + f". Name the {kind} after the ':'")
        obj = getattr(obj, part)
    return obj


def candidates(where: str, test: Any) -> list[str]:
    """Attributes of the file or module ``where`` for which ``test(obj)`` holds, those it
    defines itself (rather than imports) first."""
    mod = load_file(where) if is_file_path(where) else importlib.import_module(where)
    found = [(getattr(v, "__module__", mod.__name__) != mod.__name__, k)
             for k, v in vars(mod).items() if not k.startswith("_") and test(v)]
    return [k for _, k in sorted(found)]


def remember(obj: Any, path: str) -> Any:
    """Record that ``obj`` (a class built from an import path) is loaded back by ``path``."""
    try:
        _ORIGINS[obj] = path
    except TypeError:
        pass
    return obj


def import_path(obj: Any) -> tuple[str | None, str]:
    """``(path, "")`` where ``path`` loads ``obj`` back in a fresh process, or ``(None, why)``."""
    try:
        known = _ORIGINS.get(obj)
    except TypeError:
        known = None
    if known:
        return known, ""
    if not isinstance(obj, type) and not callable(obj):
        return None, f"{obj!r} was not loaded from an import path"
    modname = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
    what = getattr(obj, "__name__", repr(obj))
    if modname is None:
        return None, f"{what} has no module"
    if modname == "__main__":
        return None, (f"{what} is defined in __main__ (a script or notebook), which cannot be "
                      "imported back; move it into a file and pass 'file.py:" + qual + "'")
    if "<locals>" in qual:
        return None, (f"{what} is defined inside a function; define it at module level in a "
                      "file and pass 'file.py:" + qual.rpartition("<locals>.")[2] + "'")
    mod = sys.modules.get(modname)
    target: Any = mod
    for part in qual.split("."):
        target = getattr(target, part, None)
    if mod is None or target is not obj:
        return None, (f"{what} was built at run time (it is not the attribute {qual} of module "
                      f"{modname}); define it at module level in a file")
    if modname in _FILES:
        return f"{_FILES[modname]}:{qual}", ""
    if modname.startswith(MODULE_PREFIX):
        return None, f"{what} comes from a file loaded outside pmsim; pass 'file.py:{qual}'"
    return f"{modname}:{qual}", ""


def display_name(obj: Any) -> str:
    """A short name for a runtime or workload argument: the string itself, the class's import
    path, or its ``name`` attribute."""
    if isinstance(obj, str):
        return obj
    cls = obj if isinstance(obj, type) else type(obj)
    path, _ = import_path(cls)
    return path or getattr(cls, "name", "") or cls.__name__


class UserCodeError(PmsimError):
    """User code (a workload, its model, a runtime) raised, exited or hung where no crash is
    involved: a bug in that code. The message names the method, file and line."""


def _system_dirs() -> tuple[str, ...]:
    """Directories whose files are not user code: pmsim, crashfuzz, the standard library and
    installed packages."""
    here = Path(__file__).resolve().parent
    dirs = {str(here), str(here.parent / "crashfuzz")}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(str(Path(sysconfig.get_path(key)).resolve()))
        except (KeyError, OSError, TypeError):
            continue
    return tuple(sorted(dirs))


_SYSTEM = _system_dirs()


def is_user_file(filename: str) -> bool:
    """Whether code in ``filename`` is user code (not pmsim's, crashfuzz's or a package's)."""
    if not filename or filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    return not any(real == d or real.startswith(d + os.sep) for d in _SYSTEM)


def _chain(e: BaseException) -> list[BaseException]:
    """``e`` and its causes, outermost first (SimPy re-raises a process's exception as a copy
    whose ``__cause__`` is the original)."""
    out: list[BaseException] = []
    seen: BaseException | None = e
    while seen is not None and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def user_frame(e: BaseException) -> tuple[str, int, str, str] | None:
    """``(file, line, function, source line)`` of the innermost user-code frame pmsim called
    into when ``e`` was raised (its cause chain included); None if user code did not raise it."""
    for exc in reversed(_chain(e)):
        frames = list(traceback.walk_tb(exc.__traceback__))
        called = False
        found = None
        for frame, line in frames:
            name = frame.f_code.co_filename
            if is_user_file(name):
                if called:
                    found = (name, line, frame.f_code.co_qualname,
                             linecache.getline(name, line).strip())
            else:
                called = True
        if found is not None:
            return found
    return None


def _shown(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def user_raised(e: BaseException) -> bool:
    """Whether ``e`` is a failure of user code to report rather than to pass on: any Exception,
    a SystemExit, or a KeyboardInterrupt that is not a recorded stop request (see
    :mod:`pmsim.interrupts`); never a PmsimError (already a clear message) or GeneratorExit."""
    if isinstance(e, PmsimError | GeneratorExit):
        return False
    if isinstance(e, KeyboardInterrupt):
        return interrupts.active() and not interrupts.requested()
    return isinstance(e, Exception | SystemExit)


def describe_failure(e: BaseException) -> tuple[str, str]:
    """What user code did and what to do about it, e.g. ``("raised ValueError: boom", "fix
    that code")`` or ``("called sys.exit(0)", "... raise an exception instead")``."""
    if isinstance(e, SystemExit):
        return (f"called sys.exit({e.code!r})", "exiting would end the run as if it had "
                "finished; raise an exception instead")
    if isinstance(e, KeyboardInterrupt):
        return ("raised KeyboardInterrupt itself (no Ctrl-C was pressed)",
                "raise another exception instead")
    text = str(e)
    return f"raised {type(e).__name__}" + (f": {text}" if text else ""), "fix that code"


def where(e: BaseException) -> str:
    """`` in Class.method (file, line N: source)`` for the user frame of ``e``, or ''."""
    found = user_frame(e)
    if found is None:
        return ""
    name, line, func, src = found
    return f" in {func} ({_shown(name)}, line {line}" + (f": {src}" if src else "") + ")"


def user_error(e: BaseException, context: str = "") -> UserCodeError | None:
    """A :class:`UserCodeError` for ``e`` if user code raised it (see :func:`user_raised` and
    :func:`user_frame`), with ``context`` (e.g. "in thread 0's transaction 3") appended; else
    None."""
    if isinstance(e, UserCodeError):
        return e
    if not user_raised(e):
        return None
    found = where(e)
    if not found:
        return None
    what, advice = describe_failure(e)
    return UserCodeError(f"user code {what}{found}" + (f", {context}" if context else "")
                         + f"; {advice}")


def hang_error(e: BaseException, context: str, detail: str) -> PmsimError:
    """The error for a run that did not terminate (a :class:`~pmsim.watchdog.Hang`): a
    :class:`UserCodeError` naming the user's frame the loop was in, else a StallError (the
    loop is pmsim's own: a runtime that waits for progress that never comes)."""
    from .errors import StallError

    found = where(e)
    if found:
        return UserCodeError(f"user code did not terminate{found}, {context}: {detail}; fix "
                             "the loop")
    return StallError(f"the run did not terminate, {context}: {detail}; if a runtime or "
                      "workload of yours waits for a condition, check that something sets it")


def reraise(e: BaseException, context: str = "") -> NoReturn:
    """Raise ``e``, as a :class:`UserCodeError` (caused by it) if user code failed."""
    err = user_error(e, context)
    if err is None or err is e:
        raise e
    raise err from e


__all__ = ["MODULE_PREFIX", "UserCodeError", "hang_error", "reraise", "describe_failure",
           "is_user_file", "user_error", "user_frame", "user_raised", "where", "candidates",
           "display_name", "import_path", "is_file_path",
           "is_import_path", "load_attr", "load_file", "load_module", "module_name_for",
           "remember"]
