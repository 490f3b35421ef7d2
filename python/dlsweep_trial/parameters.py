"""params.json: the trial's hyperparameters, and params_read.json: which of them the program
read (dlsweep names a study parameter nobody read)."""

from __future__ import annotations

import json
import os

from . import _state
from .environment import is_writer, trial_dir
from .protocol import ENV_TRIAL_DIR, PARAMS_FILE, PARAMS_READ_FILE, ProtocolError


def params(defaults: dict | None = None) -> dict:
    """The trial's hyperparameters: `defaults` updated with params.json.

    Outside dlsweep (no DLSWEEP_TRIAL_DIR) returns a copy of `defaults` (or {}), so the
    script runs by hand. Inside, a missing or malformed params.json raises ProtocolError.
    """
    out = dict(defaults or {})
    d = trial_dir()
    if d is None:
        return out
    if _state.params_cache is None:
        path = d / PARAMS_FILE
        try:
            with open(path, encoding="utf-8") as f:
                loaded = json.load(f)
        except FileNotFoundError:
            raise ProtocolError(f"{path}: missing (dlsweep writes it before launch; "
                                f"is {ENV_TRIAL_DIR} right?)") from None
        except (OSError, ValueError) as e:
            raise ProtocolError(f"{path}: cannot read it as JSON: {e}") from None
        if not isinstance(loaded, dict):
            raise ProtocolError(f"{path}: expected a JSON object, got {type(loaded).__name__}")
        _state.params_cache = loaded
    cache = _state.params_cache
    out.update(cache)
    return _TrackedParams(out, set(cache), set(out) - set(cache))


def _note_read(keys, from_file: set, defaulted: set) -> None:
    """Records that the program read `keys` (params_read.json, rewritten atomically when a key
    is read for the first time), so dlsweep can name a study parameter nobody read (a typo in
    the study, read by the script under another name with a default)."""
    new_read = {k for k in keys if k in from_file} - _state.params_read
    new_def = {k for k in keys if k in defaulted} - _state.params_defaulted
    if not new_read and not new_def:
        return
    _state.params_read.update(new_read)
    _state.params_defaulted.update(new_def)
    d = trial_dir()
    if d is None or not is_writer():
        return
    # One trial may run its program several times (a requeue, a resume from its checkpoint, a
    # Slurm time-limit restart); a later run that skips a key (it restored it from the
    # checkpoint) must not erase what an earlier run read: the file holds the union.
    earlier_read, earlier_def = _recorded(d / PARAMS_READ_FILE)
    tmp = d / f".{PARAMS_READ_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps({"read": sorted(_state.params_read | earlier_read),
                                   "defaulted": sorted(_state.params_defaulted | earlier_def)}))
        os.replace(tmp, d / PARAMS_READ_FILE)
    except OSError:
        pass  # a read-only trial directory: dlsweep then does not check


def _recorded(path) -> tuple[set, set]:
    """The keys an earlier run of this trial recorded in params_read.json (none when the file is
    missing or damaged: this run's record then replaces it)."""
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return set(), set()
    if not isinstance(rec, dict):
        return set(), set()

    def names(key):
        v = rec.get(key)
        return {k for k in v if isinstance(k, str)} if isinstance(v, list) else set()

    return names("read"), names("defaulted")


class _TrackedParams(dict):
    """params()' dict: notes which keys the program reads. Reading every key at once (iterating,
    items(), copying, json.dumps, **p) counts as reading them all."""

    def __init__(self, data: dict, from_file: set, defaulted: set):
        super().__init__(data)
        self._from_file = from_file
        self._defaulted = defaulted

    def _note(self, keys) -> None:
        _note_read(keys, self._from_file, self._defaulted)

    def __getitem__(self, key):
        self._note((key,))
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note((key,))
        return super().get(key, default)

    def __contains__(self, key):
        self._note((key,))
        return super().__contains__(key)

    def _all(self):
        self._note(tuple(super().keys()))

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def copy(self):
        self._all()
        return dict(super().items())

    def pop(self, key, *default):
        self._note((key,))
        return super().pop(key, *default)

    def setdefault(self, key, default=None):
        self._note((key,))
        return super().setdefault(key, default)
