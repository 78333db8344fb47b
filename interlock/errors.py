"""The root of every error that is the user's input, never interlock's own fault: `InterlockError`.

A command reports any `InterlockError` as `interlock: error: MESSAGE` and exits 2; anything else that escapes a
command is an internal error (a bug to report).  A host embedding the runtime can catch `InterlockError` to tell a
bad plan, payload, scenario or store from a fault of interlock.  Faults of interlock itself have types of their own
and do not derive from it (`interlock.dsl.diagnostics.InternalCompilerError`, `interlock.dsl.format.FormatError`).

Each error is defined where it is raised and stays importable there; this module is the catalogue:

=============================================  ===============================================================
`interlock.cmdline.UsageError`                 a command called wrongly (defined here, re-exported there)
`interlock.commands.CommandError`              a scenario command's input (a file, a non-empty `--store`)
`interlock.config.ConfigError`                 a configuration file that cannot be used
`interlock.walk.NothingFound`                  a folder named on the command line holds no file of the kind
`interlock.runner.select.SelectError`          a malformed `interlock test -k` expression
`interlock.tools.diff.DiffUsageError`          `interlock diff`'s sources or `--store`
`interlock.tools.migrate.MigrateUsageError`    `interlock migrate --map`
`interlock.kandev.yamlread.YamlError`          kandev YAML this reader refuses
`interlock.lsp.disk.Refused`                   a file the language server will not read
`interlock.lsp.features.RenameRefused`         a rename the language server refuses
`interlock.diagrams.GraphError`                a diagram that cannot be drawn
`interlock.runtime.plan.PlanError`             a plan that cannot be used (unreadable, another version, edited)
`interlock.runtime.scenario.ScenarioError`     a scenario that cannot be run
`interlock.runtime.store.StoreError`           the store could not do what was asked
`interlock.runtime.errors.RuntimeFault`        a bad request to the runtime (unknown task, step, payload …)
`interlock.stores.inflight.InflightError`      a store `interlock diff --store` cannot read
=============================================  ===============================================================

Only the standard library is imported here (nothing at all): every layer, the runtime included, may import this
module without loading another.
"""

from __future__ import annotations

__all__ = ["InterlockError", "UsageError"]


class InterlockError(Exception):
    """An error in what the user (or the host) gave interlock: a file, a plan, a command line, a request.  The
    message says what and where (`file:line:col` when there is a file)."""


class UsageError(InterlockError):
    """A problem with how the command was called (exit 2)."""
