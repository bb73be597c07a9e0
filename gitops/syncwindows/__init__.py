"""Argo CD sync windows: may this app sync now, which window decides, and until when.

The rules are Argo CD's (`SyncWindows.Matches`, `active`, `inactiveAllows` and `CanSync`
in `pkg/apis/application/v1alpha1/types.go`, v3.5/v3.6 development line):

* A window applies to an app when one of its non-empty selector lists has a glob that
  matches (`applications` -> app name, `clusters` -> destination name or server,
  `namespaces` -> destination namespace); with `andOperator` every non-empty list must
  match (since v3.0). A window without selectors applies to nothing.
* A window is active at `now` when a start `s` of its cron schedule, read on the window
  zone's wall clock with the offset in force at `now`, satisfies `L - duration < s < L`
  where `L` is `now` on that wall clock. Both ends are open; the look-back is the whole
  duration; a schedule that never fires counts as always active.
* Deny beats allow; an active allow wins over inactive ones (since v2.8); when allow
  windows exist but none is active nothing syncs; `manualSync` lets *manual* syncs through
  only when every window that would block has it. Any invalid matching window (schedule
  or duration that does not parse) makes Argo CD refuse every sync (since v2.14).

`syncOverrun` (v3.5) only applies to an operation already running, which a verdict about
"may it sync now" never is, so it is reported but does not change the answer.

Everything here is pure: plain dicts in, frozen dataclasses out, no clock, no database.
One idea per module: `cron` (robfig/cron schedules), `durations` (Go durations), `globs`
(gobwas/glob patterns), `windows` (one window compiled and matched to an app),
`timeline` (when windows are active, their edges, `occurrences` for a calendar), `verdict`
(`evaluate`, `next_edge`, and `verdict_spans`: the verdict over a stretch of time)
and `explain` (every window's part, in words). The public contract is `evaluate`.
"""

from gitops.syncwindows.durations import parse_go_duration
from gitops.syncwindows.explain import Explanation, WindowExplanation, explain, format_explanation
from gitops.syncwindows.globs import compile_glob, glob_match
from gitops.syncwindows.timeline import DEFAULT_HORIZON, TooDense, occurrences
from gitops.syncwindows.verdict import (
    SyncWindowVerdict,
    VerdictSpan,
    Windows,
    evaluate,
    matching_windows,
    next_edge,
    verdict_spans,
)
from gitops.syncwindows.windows import (
    CompiledWindows,
    Window,
    compile_window,
    compile_windows,
    match_app,
    window_label,
)

__all__ = [
    "DEFAULT_HORIZON",
    "CompiledWindows",
    "Explanation",
    "SyncWindowVerdict",
    "TooDense",
    "VerdictSpan",
    "Window",
    "WindowExplanation",
    "Windows",
    "compile_glob",
    "compile_window",
    "compile_windows",
    "evaluate",
    "explain",
    "format_explanation",
    "glob_match",
    "match_app",
    "matching_windows",
    "next_edge",
    "occurrences",
    "parse_go_duration",
    "verdict_spans",
    "window_label",
]
