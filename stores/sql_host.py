"""What the parts of the SQL store ask of the store they serve: the `SqlHost` protocol.

`SqlStore` (`stores/sql.py`) composes some of its parts (`SqlDue`, `SqlIncidents`) and takes the others in as base
classes (`SqlLedger`, `SqlEntries`, `SqlOperations`, `SqlSeats`: their methods' `self` is a `SqlHost`); it imports
them all, and they name the store through this protocol, never by importing `stores/sql.py` back, so the module graph has no cycle even through
`TYPE_CHECKING` imports (`tests/test_import_graph.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .connections import Shared, Tx, Write

__all__ = ["SqlHost"]


class SqlHost(Protocol):
    """The store as its parts use it (`SqlDue`, `SqlIncidents`, the history reader, the base classes' methods): its
    engine's shared state, its clock, the unit it is bound to, its writes and its reads."""

    _shared: Shared
    _clock: Callable[[], float] | None
    _conn: Tx | None

    def _tx(self, doing: str) -> Write:
        """A write: joins the bound or thread's unit, else one transaction of its own."""
        ...

    def _rows(self, doing: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of one read."""
        ...

    def _read(self, doing: str, fn: Callable[[Tx], Any]) -> Any:
        """A read: joins the bound or thread's unit, else one autocommit statement."""
        ...
