"""The tree as an engine's own questions read it while it derives its data, before any analysis exists.

Questions such as "which setters does SGLang's runner call for DFLASH" or "does vLLM's runner ask for aux states
under ``eagle``" are written against the analysis' ``Model`` (its ``source``, its ``memo`` and its ``queries``), and
are asked both by the serving chain (with the model) and by ``Engine.for_method`` (with this). The memo and queries
here are fresh ones of the query layer's own kind, dropped with the derivation: what the derivation rests on is the
files the engine names to ``FactStore.memo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3_lint.source import SourceTree


class TreeReader:
    def __init__(self, source: SourceTree) -> None:
        from eagle3_lint.queries import Memo, Queries

        self.source = source
        self.queries = Queries()  # records nothing outside a computation: read_module's notes are no-ops here
        self.memo = Memo(self.queries)
