"""dlsweep_results: a study's results from Python, read-only, under Optuna's names.

    import dlsweep_results as dr            # or: from dlsweep_trial import load_study
    study = dr.load_study(study_name="bs-sweep", storage="sweep.db")
    print(study.best_trial.number, study.best_value, study.best_params)
    for t in study.trials:
        print(t.number, t.state, t.params, t.value, t.intermediate_values, t.attempts)
    df = study.trials_dataframe()           # needs pandas

Standard library only (pandas only for trials_dataframe()). It reads the SQLite file that
dlsweep writes (docs/database.md) with SQL, opened read-only: it never writes, never takes
the orchestrator's lock, and works on a read-only file or directory (an archived copy), and
while a sweep runs (each load_study() is one consistent read; load it again to see more).

What the names mean here (where they differ from Optuna, it is said):
- Trial.state: dlsweep's state, a TrialState, which is also the state's name as a string
  (`t.state == "FAILED"` and `t.state == TrialState.FAIL` are both true for a failed trial).
  Optuna's RUNNING, COMPLETE, PRUNED, WAITING mean the same; Optuna's FAIL is dlsweep's
  FAILED (TrialState.FAIL is TrialState.FAILED); dlsweep adds QUEUED (handed to the backend,
  not started yet; Optuna would call it WAITING) and CANCELLED (`dlsweep cancel`, a stopped
  sweep).
- Trial.value: the value the trial ranks by, as the study's `objective.rank_by` says
  (Study.rank_by). "best" (the default): its best report of the objective metric (max or min
  by the study's mode, over its eval and final records, every attempt; `dlsweep results`'
  `best_value`), not the last report (that is `last_value`). "final": its final report —
  the last number it reported in its current attempt, Optuna's meaning (the value the
  objective returned). Either way `dlsweep best --by value` ranks by it. None when it never
  reported a number. Set for every state (a pruned trial keeps its best). `best_report` is
  the best report whatever rank_by says.
- Trial.values: with several objectives, one value per objective, each as the Pareto front
  reads it (a reported metric's best over the current attempt's eval/final records — its
  last with that objective's `rank_by: final` —, or the
  derived figure: time_to_target_s, steps_to_target, samples_to_target, samples_per_s,
  rank_seconds); with one objective, [value].
- Trial.intermediate_values: {step: value} of the (first) objective metric over the eval
  records of the trial's current attempt (a retried trial shows its last attempt's curve;
  `curve(all_attempts=True)` gives every attempt). A final record is not an intermediate value.
- Trial.user_attrs: what the trial's set_user_attr() kept (dlsweep_optuna writes them to
  user_attrs.json in the trial directory), read from there; {} when the directory is gone.
- Trial.attempts: how many times the trial was launched (attempt + 1); `attempt` is dlsweep's
  0-based counter.
- Trial.datetime_start / datetime_complete: its first RUNNING and its entry into the final
  state it is in now, from the events log (as `dlsweep results` reports started_at/ended_at);
  None when not yet.
- Study.best_trial: the trial `dlsweep best --by value` names: COMPLETE trials only, grouped
  by their params but `seed` (replicates), groups ordered by their mean value (constraints:
  feasible first), ties to the group with the better best seed, then to the trial that
  finished first (Optuna's best_trial keeps the first of equal values to complete); the
  group's best seed is the trial (of equal seeds, the first to finish). `dlsweep best`
  names the same trial but on exact ties among trials that finished out of number order,
  where it still takes trial order (analysis/ranking). Without a target this is plain `dlsweep best`; with a
  target that COMPLETE trials reached, plain `dlsweep best` ranks by time to target instead
  (not offered here: use `dlsweep best` for that).
- Study.best_trials: with several objectives, the Pareto front as `dlsweep best` prints it:
  per seed group (values: the seeds' means) its first trial, the best by the first objective
  first; infeasible groups are never on it.
"""
import datetime
import enum
import json
import math
import os
import pathlib
import sqlite3
import struct

__all__ = ["load_study", "get_all_study_names", "Study", "FrozenTrial", "TrialState", "StudyNotFound"]

DERIVED_FIGURES = ("time_to_target_s", "steps_to_target", "samples_to_target", "rank_seconds", "samples_per_s")


class TrialState(str, enum.Enum):
    """dlsweep's trial states, under their own names and Optuna's (FAIL = FAILED)."""
    WAITING = "WAITING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    PRUNED = "PRUNED"
    FAILED = "FAILED"
    FAIL = "FAILED"  # Optuna's name: an alias of FAILED
    CANCELLED = "CANCELLED"

    def __str__(self):
        return self.value

    def is_finished(self):
        return self in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAILED, TrialState.CANCELLED)


class StudyNotFound(KeyError, LookupError):
    """No such study in the database (the message names the file and the studies it holds)."""

    def __str__(self):
        return self.args[0] if self.args else ""


def _finite(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _when(ts):
    return datetime.datetime.fromtimestamp(ts) if ts is not None else None


class FrozenTrial:
    """One trial, as read; see the module's doc for what each field means."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    # Optuna's spellings
    @property
    def duration(self):
        if self.datetime_start is None or self.datetime_complete is None:
            return None
        return self.datetime_complete - self.datetime_start

    @property
    def distributions(self):  # not stored per trial: see the study's spec (Study.spec["space"])
        return {}

    def curve(self, metric=None, all_attempts=False, kinds=("eval", "final")):
        """[(attempt, step, value)] of `metric` (default: the first objective's metric)."""
        return self._study._curve(self, metric or self._study.metric, all_attempts, kinds)

    def __repr__(self):
        return (f"FrozenTrial(number={self.number}, state={self.state.value}, value={self.value!r}, "
                f"params={self.params!r}, attempts={self.attempts})")


def _writer_holds_lock(path):
    """Whether any orchestrator holds the POSIX lock on `<db>.lock` (tested with F_GETLK for a write
    lock through a read-only descriptor: it finds the shared lock every study's orchestrator holds
    while several write the file, and the exclusive one of snapshot mode; it takes no lock, so a
    starting orchestrator never sees this reader). True when it cannot tell."""
    lock = str(path) + ".lock"
    if not os.path.exists(lock):
        return False
    try:
        import fcntl
        fd = os.open(lock, os.O_RDONLY)
        try:
            fmt = "hhqqi4x"  # struct flock on 64-bit Linux: type, whence, start, len, pid
            got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, fcntl.F_WRLCK, 0, 0, 0, 0))
            return struct.unpack(fmt, got)[0] != fcntl.F_UNLCK
        finally:
            os.close(fd)
    except (OSError, ImportError, AttributeError, struct.error):
        return True


def _connect(path):
    """A read-only connection, made as dlsweep's own readers make it (docs/database.md):
    immutable (creates nothing, takes no lock) when no orchestrator holds `<db>.lock` and the
    -wal is empty or absent (a finished sweep, an archived copy, a read-only file or directory,
    a published snapshot); else mode=ro, which reads a running sweep through its -wal/-shm."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{path}: no dlsweep database there (pass storage= the --db file of the sweep)")
    uri = p.absolute().as_uri()
    wal = pathlib.Path(str(p) + "-wal")
    quiet = (not wal.exists() or wal.stat().st_size == 0) and not _writer_holds_lock(p)
    tries = ("?mode=ro&immutable=1", "?mode=ro") if quiet else ("?mode=ro", "?mode=ro&immutable=1")
    errors = []
    for query in tries:
        try:
            con = sqlite3.connect(uri + query, uri=True)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return con
        except sqlite3.Error as e:
            errors.append(f"{query[1:]}: {e}")
    raise PermissionError(f"{path}: cannot read the database read-only ({'; '.join(errors)}); "
                          "a running sweep's reader needs read access to sweep.db-wal and sweep.db-shm too")


def _study_names(con, storage):
    """The study names in creation order; none for a database with no tables yet (the file a
    starting `dlsweep submit` has created but not yet given its schema)."""
    try:
        return [n for (n,) in con.execute("SELECT name FROM studies ORDER BY id")]
    except sqlite3.Error as e:
        if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            return []
        raise ValueError(f"{storage}: not a dlsweep database ({e})") from None


def get_all_study_names(storage="sweep.db"):
    """The names of the studies in the database, in creation order (Optuna's name)."""
    con = _connect(storage)
    try:
        return _study_names(con, os.fspath(storage))
    finally:
        con.close()


def load_study(study_name=None, storage="sweep.db"):
    """Read one study from the database `storage` (a path; an `sqlite:///path` URL is accepted).
    study_name may be left out when the database holds exactly one study."""
    if isinstance(storage, str) and storage.startswith("sqlite:///"):
        storage = storage[len("sqlite:///"):]
    storage = os.fspath(storage)
    con = _connect(storage)
    try:
        names = _study_names(con, storage)
        if study_name is None:
            if len(names) != 1:
                held = ("it holds no study yet: run `dlsweep submit STUDY` first" if not names
                        else "it holds " + ", ".join(names) + ": pass study_name=")
                raise StudyNotFound(f"{storage}: which study? {held}")
            study_name = names[0]
        if study_name not in names:
            held = "it holds no study yet" if not names else "known studies: " + ", ".join(names)
            raise StudyNotFound(f"{storage}: no study named '{study_name}' ({held})")
        con.execute("BEGIN")  # one snapshot for every read below
        return Study(con, storage, study_name)
    finally:
        con.close()


class Study:
    """A study as read by load_study(): not live (load again to see newer trials)."""

    def __init__(self, con, storage, name):
        self.storage = storage
        row = con.execute("SELECT id, spec_json, objective_metric, objective_mode, objective_target, state, "
                          "created_at FROM studies WHERE name = ?", (name,)).fetchone()
        sid, spec_json, self.metric, self.mode, self.target, self.study_state, created = row
        self.study_name = name
        self.datetime_start = _when(created)
        self.spec = json.loads(spec_json)
        obj = self.spec.get("objective")
        objs = obj if isinstance(obj, list) else [obj] if isinstance(obj, dict) else []
        self.objectives = [(o["metric"], o.get("mode", "max") == "max") for o in objs] or \
            [(self.metric, self.mode == "max")]
        # objective.rank_by per objective ("best" unless the stored spec says "final").
        self._final = [o.get("rank_by") == "final" for o in objs] or [False]
        self.rank_by = "final" if self._final[0] else "best"
        self.constraints = self.spec.get("constraints") or []
        spec_ranks = (self.spec.get("trial") or {}).get("ranks", 1)

        # Its first RUNNING, its entry into its final state, and that entry's place in the events
        # log (the order trials finished in: ties of best_trial go to the first to finish).
        times = {tid: (s, e, seq) for tid, s, e, seq in con.execute(
            "SELECT e.trial_id, min(CASE WHEN e.to_state = 'RUNNING' THEN e.at END), "
            "  max(CASE WHEN e.to_state = t.state AND t.state IN ('COMPLETE', 'PRUNED', 'FAILED', 'CANCELLED') "
            "           THEN e.at END), "
            "  max(CASE WHEN e.to_state = t.state AND t.state IN ('COMPLETE', 'PRUNED', 'FAILED', 'CANCELLED') "
            "           THEN e.id END) "
            "FROM events e JOIN trials t ON t.id = e.trial_id "
            "WHERE e.study_id = ? AND e.kind = 'transition' GROUP BY e.trial_id", (sid,))}
        # Every metric of every record, in order: intermediate values, curves and figures.
        self._points = {}
        for tid, att, seq, kind, step, m, v in con.execute(
                "SELECT m.trial_id, m.attempt, m.seq, m.kind, m.step, m.name, m.value FROM metrics m "
                "JOIN trials t ON t.id = m.trial_id WHERE t.study_id = ? AND m.kind IN ('eval', 'final') "
                "ORDER BY m.trial_id, m.attempt, m.seq", (sid,)):
            self._points.setdefault(tid, []).append((att, seq, kind, step, m, v))
        last_eval = {tid: (samples, wall) for tid, samples, wall in con.execute(
            "SELECT r.trial_id, r.samples, r.wall_s FROM records r JOIN trials t ON t.id = r.trial_id "
            "AND t.attempt = r.attempt WHERE t.study_id = ? AND r.kind IN ('eval', 'final') "
            "AND r.seq = (SELECT max(r2.seq) FROM records r2 WHERE r2.trial_id = r.trial_id "
            "AND r2.attempt = r.attempt AND r2.kind IN ('eval', 'final'))", (sid,))}

        self.trials = []
        for (tid, number, state, attempt, params, value, best_value, steps_tt, samples_tt, time_tt, sps, wall_s,
             exit_code, message, trial_dir) in con.execute(
                "SELECT trial_id, number, state, attempt, params, value, best_value, steps_to_target, "
                "samples_to_target, time_to_target_s, samples_per_s, wall_s, exit_code, message, trial_dir "
                "FROM trial_summary WHERE study_id = ? ORDER BY number", (sid,)):
            params = json.loads(params) if params else {}
            start, end, end_seq = times.get(tid, (None, None, None))
            pts = [p for p in self._points.get(tid, []) if p[0] == attempt]
            inter = {}
            for _att, _seq, kind, step, m, v in pts:
                if kind == "eval" and m == self.metric and v is not None:
                    inter[step] = v
            figures = {"metrics": {}, "time_to_target_s": time_tt, "steps_to_target": steps_tt,
                       "samples_to_target": samples_tt, "wall_s": wall_s}
            for _att, _seq, _kind, _step, m, v in pts:
                if _finite(v) is None:
                    continue
                last, lo, hi = figures["metrics"].get(m, (v, v, v))
                figures["metrics"][m] = (v, min(lo, v), max(hi, v))
            ranks = params.get("ranks") if isinstance(params.get("ranks"), int) else spec_ranks
            figures["ranks"] = max(1, int(ranks or 1))
            figures["last_eval"] = last_eval.get(tid)
            # rank_by final: the last number of the current attempt (analysis' TrialData::final_value).
            final = None
            for _att, _seq, _kind, _step, m, v in pts:
                if m == self.metric and v is not None:
                    final = v
            t = FrozenTrial(
                _study=self, _id=tid, _figures=figures, _finished=math.inf if end_seq is None else end_seq,
                number=number, state=TrialState(state), params=params,
                value=_finite(final) if self._final[0] else _finite(best_value), best_report=_finite(best_value),
                last_value=_finite(value), attempt=attempt, attempts=attempt + 1,
                intermediate_values=inter, datetime_start=_when(start), datetime_complete=_when(end),
                started_at=start, ended_at=end, exit_code=exit_code, message=message, trial_dir=trial_dir,
                steps_to_target=steps_tt, samples_to_target=samples_tt, time_to_target_s=time_tt,
                user_attrs=_user_attrs(trial_dir, storage), system_attrs={})
            if len(self.objectives) > 1:
                vals = [self._figure(figures, m, mx, best=not fin) for (m, mx), fin in zip(self.objectives, self._final)]
                t.values = vals if all(_finite(v) is not None for v in vals) else None
            else:
                t.values = [t.value] if t.value is not None else None
            t.constraints = [self._constraint(figures, c) for c in self.constraints]
            t.violation = _total_violation(t.constraints)
            self.trials.append(t)

    # ---- Optuna's study names
    @property
    def directions(self):
        return ["maximize" if mx else "minimize" for _m, mx in self.objectives]

    @property
    def direction(self):
        if len(self.objectives) > 1:
            raise RuntimeError(f"study {self.study_name} has {len(self.objectives)} objectives: use directions")
        return self.directions[0]

    def get_trials(self, deepcopy=False, states=None):
        return [t for t in self.trials if states is None or t.state in states]

    @property
    def best_trial(self):
        if len(self.objectives) > 1:
            raise RuntimeError(f"study {self.study_name} has {len(self.objectives)} objectives "
                               f"({', '.join(m for m, _ in self.objectives)}): it has no one best trial; "
                               "use best_trials (the Pareto front)")
        t = self._winner()
        if t is None:
            raise ValueError(f"study {self.study_name}: no best trial yet: no COMPLETE trial with a value of "
                             f"{self.metric}" + (" that satisfies the constraints" if self.constraints else ""))
        return t

    @property
    def best_value(self):
        return self.best_trial.value

    @property
    def best_params(self):
        return self.best_trial.params

    @property
    def best_trials(self):
        return self._front()

    def trials_dataframe(self, attrs=None):
        """A pandas DataFrame, one row per trial, Optuna's columns: number, value (values_0, ... with
        several objectives), datetime_start, datetime_complete, duration, params_<name>, user_attrs_<key>, state;
        then dlsweep's attempts, last_value, steps_to_target, time_to_target_s, message."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("trials_dataframe() needs pandas: `pip install pandas` "
                              "(or `apt install python3-pandas`)") from None
        names = sorted({k for t in self.trials for k in t.params})
        attr_names = sorted({k for t in self.trials for k in t.user_attrs})
        rows = []
        for t in self.trials:
            r = {"number": t.number}
            if len(self.objectives) > 1:
                for i in range(len(self.objectives)):
                    r[f"values_{i}"] = t.values[i] if t.values else None
            else:
                r["value"] = t.value
            r.update(datetime_start=t.datetime_start, datetime_complete=t.datetime_complete, duration=t.duration)
            for k in names:
                r["params_" + k] = t.params.get(k)
            for k in attr_names:
                r["user_attrs_" + k] = t.user_attrs.get(k)
            r.update(state=t.state.value, attempts=t.attempts, last_value=t.last_value,
                     steps_to_target=t.steps_to_target, time_to_target_s=t.time_to_target_s, message=t.message)
            rows.append(r)
        df = pd.DataFrame(rows)
        if attrs is not None:
            keep = [c for c in df.columns if c in attrs or any(c.startswith(a + "_") for a in attrs)]
            df = df[keep]
        return df

    def __repr__(self):
        return f"Study(study_name={self.study_name!r}, directions={self.directions}, trials={len(self.trials)})"

    # ---- dlsweep's rules (analysis/ranking.cpp, analysis/front.cpp, common/multi_objective.cpp)
    def _curve(self, trial, metric, all_attempts, kinds):
        return [(att, step, v) for att, _seq, kind, step, m, v in self._points.get(trial._id, [])
                if m == metric and kind in kinds and (all_attempts or att == trial.attempt)]

    @staticmethod
    def _figure(f, name, maximize, best):
        if name in ("time_to_target_s", "steps_to_target", "samples_to_target"):
            return f[name]
        if name == "rank_seconds":
            return None if f["wall_s"] is None else f["ranks"] * f["wall_s"]
        m = f["metrics"].get(name)
        if m is None:
            if name == "samples_per_s" and f["last_eval"] and f["last_eval"][1] and f["last_eval"][1] > 0:
                return f["last_eval"][0] / f["last_eval"][1]
            return None
        return (m[2] if maximize else m[1]) if best else m[0]

    def _constraint(self, f, c):
        if c.get("reached_target"):
            return 0.0 if f["steps_to_target"] is not None else 1.0
        v = _finite(self._figure(f, c.get("metric", ""), True, best=False))
        if v is None:
            return math.inf
        viol = -math.inf
        if c.get("max") is not None:
            viol = max(viol, v - c["max"])
        if c.get("min") is not None:
            viol = max(viol, c["min"] - v)
        return 0.0 if math.isinf(viol) else viol

    def _groups(self, members):
        """Seed groups: params but `seed`, in the order of their first member."""
        groups = []
        for t in members:
            key = json.dumps({k: v for k, v in t.params.items() if k != "seed"}, sort_keys=True)
            for g in groups:
                if g[0] == key:
                    g[1].append(t)
                    break
            else:
                groups.append((key, [t]))
        return [g[1] for g in groups]

    def _winner(self):
        maximize = self.objectives[0][1]
        sign = -1.0 if maximize else 1.0
        entries = []
        for g in self._groups([t for t in self.trials if t.state == TrialState.COMPLETE]):
            if any(t.value is None for t in g):
                continue
            seeds = sorted(g, key=lambda t: (sign * t.value, t._finished))  # ties: the first to finish
            mean = sign * (sum(t.value for t in g) / len(g))
            viol = max(t.violation for t in g) if self.constraints else 0.0
            entries.append((viol, mean, sign * seeds[0].value, seeds[0]._finished, seeds[0]))
        entries.sort(key=lambda e: e[:4])  # exact ties: the trial that finished first, as Optuna's best_trial
        if not entries or entries[0][0] > 0:
            return None
        return entries[0][4]

    def _front(self):
        eligible = [t for t in self.trials if t.state == TrialState.COMPLETE and t.values is not None]
        signs = [-1.0 if mx else 1.0 for _m, mx in self.objectives]
        pts = []
        for g in self._groups(eligible):
            mean = [sum(t.values[k] for t in g) / len(g) for k in range(len(signs))]
            viol = max(t.violation for t in g)
            pts.append((g, [s * v for s, v in zip(signs, mean)], viol))
        feasible = [p for p in pts if p[2] <= 0]
        front = [p for p in feasible
                 if not any(all(a <= b for a, b in zip(q[1], p[1])) and q[1] != p[1] for q in feasible)]
        front.sort(key=lambda p: (p[1][0], min(t.number for t in p[0])))
        return [min(p[0], key=lambda t: t.number) for p in front]


def _user_attrs(trial_dir, storage):
    """What the trial's set_user_attr() kept (dlsweep_optuna: user_attrs.json in its directory); a
    relative trial directory is taken from the database's folder. {} when there is none or it
    cannot be read (a database copied away from its runs)."""
    if not trial_dir:
        return {}
    d = pathlib.Path(trial_dir)
    if not d.is_absolute():
        d = pathlib.Path(storage).resolve().parent / d
    try:
        attrs = json.loads((d / "user_attrs.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return attrs if isinstance(attrs, dict) else {}


def _total_violation(cs):
    v = 0.0
    for c in cs:
        if math.isnan(c):
            return math.inf
        if c > 0:
            v += c
    return v
