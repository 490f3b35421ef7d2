"""The library's mutable state, in one place: what this process read, wrote, was told and
answered. The other modules read and rebind it as ``_state.<name>``; reset() forgets it
(between tests, and between the trials of a process kept imported: dlsweep_optuna --serve)."""

from __future__ import annotations

import os
import threading
import time

start_time = time.time()  # wall_s counts from the import of the library (about program start)

# params.json as read once, and which of its keys (or of the defaults) the program read.
params_cache: dict | None = None
params_read: set = set()
params_defaulted: set = set()

# metrics.jsonl: the open writer (records._Writer), and whether the outside-dlsweep warning was given.
writer = None
warned_outside = False

# What this run found when it started (taken at import, before the program saves anything of
# its own): (trial dir, a checkpoint was there, the last wall_s of the latest earlier attempt).
start_state = None

# The last position report() or final() was given in this process (every rank keeps it), and
# whether this attempt's metrics.jsonl was read for one.
position: dict = {}
position_checked = False

# Waiting for dlsweep's decision on the last report (control._await_decision).
answered_seq = -1        # the highest seq dlsweep said it decided on (decided.json)
unanswered_seq = None    # the seq whose wait ran out (dlsweep unreachable): short waits until it answers
said_unanswered = False

# Preemption: a signal arrived (on_preempt), and the handler is saving.
preempted = threading.Event()
handler_state = {"busy": False}

# suggest_*: name -> (distribution, value) answered in this process; the outside-dlsweep draws.
suggested: dict = {}
local_rng = None


def reset() -> None:
    """Forgets cached state (params, open metrics file, preemption flag). Tests only."""
    global params_cache, writer, warned_outside, start_state, position_checked
    global answered_seq, unanswered_seq, said_unanswered, local_rng
    if writer is not None:
        os.close(writer.fd)
    params_cache, writer, warned_outside, start_state = None, None, False, None
    answered_seq, unanswered_seq, said_unanswered = -1, None, False
    params_read.clear()
    params_defaulted.clear()
    suggested.clear()
    local_rng = None
    position_checked = False
    preempted.clear()
    position.clear()
    handler_state["busy"] = False
