"""Report sections for ``--draft-config`` (the drafter analysis behind EGL007) and ``--plugin``.

JSON: ``"draft"`` holds the ids the runner uses and where they came from, the model default, the
capture points, the drafter's fc width and, with ``--pipeline-parallel``, the layer split and the
rank that captures each id; ``"plugins"`` lists each plugin's entry points and register calls.
Text: the same as two small tables after the architecture table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape as _escape
from rich.table import Table

from eagle3_lint import drafter as dr
from eagle3_lint.contract import CheckKind

if TYPE_CHECKING:
    from eagle3_lint.stages import Analysis


def escape(text: str) -> str:
    """Tree and config strings: control/bidi characters stripped (safe_text.printable), markup escaped."""
    from eagle3_lint.safe_text import printable

    return _escape(printable(text))


def _analysis(an: Analysis) -> dr.DraftAnalysis | None:
    if an.options.draft_config is None:
        return None
    from eagle3_lint.rules.egl007_draft_layer_ids_invalid import analysis

    return analysis(an.model)


def _where(w: dr.Where | None) -> dict[str, Any] | None:
    return None if w is None else {"path": w.path, "line": w.line, "what": w.text}


def _span(ids: list[int]) -> dict[str, Any] | list[int]:
    """``{"first": a, "last": b}`` for a contiguous run (the usual case), else the list."""
    if ids and ids == list(range(ids[0], ids[-1] + 1)):
        return {"first": ids[0], "last": ids[-1]}
    return ids


def draft_json(da: dr.DraftAnalysis) -> dict[str, Any]:
    cap = da.capture
    out: dict[str, Any] = {
        "path": da.draft_path,
        "architecture": da.arch,
        "speculators_format": da.speculators,
        "conversion_error": da.conversion_error or None,
        "fields": [
            {
                "key": f.name,
                "ids": list(f.ids),
                "numbering": {0: "input", 1: "output"}.get(f.convention) if f.convention is not None else None,
                "origin": f.origin,
                "line": f.line,
            }
            for f in da.fields
        ],
        "runner": {
            "reads_config": da.runner_reads,
            "ids": None if da.runner_ids is None else list(da.runner_ids),
            "function": _where(da.runner_where),
            "note": da.runner_note or None,
            "field": da.used_field.name if da.used_field else None,
            "shift": da.transform,
        },
        "default": {
            "ids": None if da.default_ids is None else list(da.default_ids),
            "method": _where(da.default_where),
            "note": da.default_note or None,
        },
        "effective_ids": None if da.effective_ids is None else list(da.effective_ids),
        "effective_from": da.effective_from or None,
        "target": {"num_hidden_layers": da.num_layers, "hidden_size": da.target_hidden},
        "capture": None
        if cap is None
        else {
            "decoder": str(cap.owner),
            "path": cap.path,
            "forward_line": cap.forward_line,
            "loop_line": cap.loop_line,
            "idiom": cap.idiom,
            "shift": cap.shift,
            "absolute_index": cap.absolute,
            "sites": [{"position": p, "offset": o, "line": ln} for p, o, ln in cap.sites],
            "valid_ids": _span(sorted(cap.valid_ids(da.num_layers)))
            if da.num_layers is not None and cap.sites
            else None,
            "order_dependent": cap.order_dependent,
            "order": cap.order_why or None,
            "relays_pp": cap.relays_pp,
            "relay": cap.relay_why or None,
            "note": cap.note or None,
        },
        "fc": None
        if da.fc is None
        else {
            "input_size": da.fc.in_size,
            "drafter": da.fc.drafter_class,
            "where": _where(da.fc.where),
            "note": da.fc.note or None,
        },
        "pipeline_parallel": None,
        "notes": list(da.notes),
    }
    if da.pp is not None:
        sp = da.pp.split
        out["pipeline_parallel"] = {
            "size": sp.pp_size, "num_layers": sp.num_layers, "partition": sp.partition,
            "split_source": sp.source, "get_pp_indices": {"path": sp.path, "line": sp.line} if sp.path else None,
            "reads_partition_env": sp.reads_partition_env, "note": sp.note or None,
            "ranks": [{"rank": r, "start": s, "end": e,
                       "captures": [{"id": k, "enters_layer": layer} for k, layer in da.pp.captures.get(r, [])]}
                      for r, (s, e) in enumerate(sp.ranges)],
        }
    return out


def report_json(an: Analysis) -> dict[str, Any]:
    out: dict[str, Any] = {}
    da = _analysis(an)
    if da is not None:
        out["draft"] = draft_json(da)
    plugins = an.source.plugins_json()
    if plugins:
        out["plugins"] = plugins
    return out


def _ids(v: Any) -> str:
    return "-" if v is None else "(" + ", ".join(str(x) for x in v) + ")"


def render_text(an: Analysis, console: Console) -> None:
    def say(text: str) -> None:
        # Piped or written with -o: whole lines for grep, as the findings are; a terminal wraps at its width.
        console.print(text, soft_wrap=not console.is_terminal)

    for p in an.source.plugins_json():
        # Names, paths and notes come from the analyzed files: escape them, never render them as markup.
        t = Table(
            title=escape(f"plugin {p['name']} ({p['kind']}, {p['files']} files as {p['prefix']}/)"),
            header_style="bold",
            title_justify="left",
        )
        t.add_column("architecture")
        t.add_column("class")
        t.add_column("registered at")
        t.add_column("status")
        t.add_column("notes")
        registrations: list[dict[str, Any]] = p["registrations"]  # type: ignore[assignment]  # plugin_json's shape
        for reg in registrations:
            v = an.verdicts.get(reg["architecture"])
            notes = ["conditional: " + "; ".join(
                c["text"] for c in reg["conditions"]) if reg["conditional"] else "",
                "overrides " + str(reg["overrides"]) if reg["overrides"] else ""]
            # A registration replaced by a later one (another branch, another plugin) is not the class judged.
            judged = v is not None and (v.module, v.class_name) == (reg["module"], reg["class"])
            t.add_row(
                escape(reg["architecture"]),
                escape(f"{reg['module']}:{reg['class']}"),
                escape(f"{reg['path']}:{reg['line']}"),
                v.status.value if v and judged else "replaced" if v else "-",
                escape("; ".join(n for n in notes if n)) or "-",
            )
        console.print(t)
        notes_of_plugin: list[str] = p["notes"]  # type: ignore[assignment]  # plugin_json's shape
        for n in notes_of_plugin:
            say(f"[dim]plugin note: {escape(n)}[/]")
    da = _analysis(an)
    if da is None:
        return
    say(escape(f"drafter config: {da.draft_path}" + (" (speculators format)" if da.speculators else "")))
    if da.conversion_error:
        say(escape(f"  {da.conversion_error}"))
        return
    if an.model.contract.check is CheckKind.NONE:
        # The method's runner asks for no aux states (Engine.for_method): no ids are used and nothing is captured.
        say(escape(f"  aux ids: none used (under method {an.options.method!r} the runner asks for no aux hidden "
                   "states)"))
        _fc_line(say, da)
        for n in da.notes:
            say(f"  [dim]{escape(n)}[/]")
        return
    src = {"config": f"from {da.used_field.name if da.used_field else 'the drafter config'}",
           "default": "model default"}.get(da.effective_from, "unknown")
    say(escape(f"  aux ids used: {_ids(da.effective_ids)} ({src}); model default: {_ids(da.default_ids)}"
                         + (f"; target layers: {da.num_layers}" if da.num_layers is not None else "")))
    if da.capture is not None and da.capture.sites:
        c = da.capture
        say(escape(f"  capture: {c.owner.name}.forward {c.path}:{c.loop_line or c.forward_line} ({c.idiom}, "
                             + ("absolute index" if c.absolute else "slice-relative index") + ")"))
    _fc_line(say, da)
    if da.pp is not None and da.pp.split.ranges:
        sp = da.pp.split
        # A line of its own, not the table's title: a title wraps to the table's width (a third of 80
        # columns), splitting the file:line; a line keeps it whole when piped.
        say(escape(f"  pipeline parallel {sp.pp_size} ("
                   + (f"get_pp_indices {sp.path}:{sp.line}" if sp.source == "tree" else "reference split") + ")"))
        t = Table(header_style="bold")
        t.add_column("rank", justify="right")
        t.add_column("layers")
        t.add_column("captures aux ids")
        for r, (s, e) in enumerate(sp.ranges):
            caps = da.pp.captures.get(r, [])
            t.add_row(str(r), f"{s} … {e - 1}" if e > s else "-",
                      ", ".join(str(k) if layer == k else f"{k} (enters layer {layer})" for k, layer in caps) or "-")
        console.print(t)
    for n in da.notes:
        say(f"  [dim]{escape(n)}[/]")


def _fc_line(say: Callable[[str], None], da: dr.DraftAnalysis) -> None:
    if da.fc is not None:
        say(escape(f"  drafter fc input: {da.fc.in_size if da.fc.in_size is not None else '?'}"
                   + (f" ({da.fc.where.path}:{da.fc.where.line})" if da.fc.where else "")
                   + (f"; {da.fc.note}" if da.fc.note else "")))
