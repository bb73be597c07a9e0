"""Derive (pure): what a poll means, decided from its rows and what the store held before it.

Nothing here reads a cluster or writes a row; every rule can be tested without a poll.

- `cluster_changes`: everything one poll writes for one cluster (`derive`, `Changes`), from
  `app_changes` (sync-window verdicts, services each app runs, problem ranks, fingerprints,
  state changes) and `workload_changes` (workload rows, running versions, version changes);
- `destinations` and `topology`: which cluster an Argo CD Application deploys to, by Argo CD's
  own rules, and which catalog cluster that is;
- `disappearance`: the guard that holds a list which suddenly lost nearly every app;
- `unchanged`: recognising a poll (or an app) that can change nothing;
- `attention`: the one definition of "needs attention", in every shape its readers need.
"""
