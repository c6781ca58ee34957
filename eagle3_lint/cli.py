"""Command line: parses arguments, calls app/report, and picks the exit code. Nothing else.

Exit codes: 0 no finding at or above the fail level; 1 findings; 2 usage error, unreadable target
or internal error. A traceback is printed only with ``--debug``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import shlex
import shutil
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from eagle3_lint import __version__
from eagle3_lint import config as config_mod
from eagle3_lint.app import CLI_PLATFORMS, CheckRequest, check_output, exit_code, report_once, run_check, write_output
from eagle3_lint.errors import UsageError
from eagle3_lint.report.emitters import EMITTERS, MACHINE, EmitOptions, Report
from eagle3_lint.report.textopts import OutputFormat, TextOptions
from eagle3_lint.reportcache import Replay
from eagle3_lint.safe_text import printable

if TYPE_CHECKING:
    from rich.console import Console

    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint.fixes import Plan
    from eagle3_lint.stages import Analysis, Model

# rich, the analysis, fixes and report builders are imported where they are used: a replayed
# ``check --format json`` (reportcache.py) needs none of them, and importing them was most of its time.


def _fail(msg: str, debug: bool = False) -> NoReturn:
    if debug:
        traceback.print_exc()
    # One line, and nothing a hostile tree put in a name (newlines, terminal escapes) reaches the terminal raw.
    click.echo(f"eagle3-lint: error: {printable(msg)}", err=True)
    sys.exit(2)


class _StderrProgress:
    """Progress on stderr: a status line per step, a transient bar for counted steps (cold parse)."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, msg: str, done: int | None = None, total: int | None = None) -> None:
        if total is None or done is None:
            self._close()
            self.console.print(f"[dim]{msg}[/]")
            return
        if self._bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            # No auto-refresh: no background thread, so the parse may fork worker processes safely.
            self._bar = Progress(TextColumn("[dim]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True, auto_refresh=False)
            self._bar.start()
            self._task = self._bar.add_task(msg, total=total)
        self._bar.update(self._task, completed=done, total=total, description=msg, refresh=True)
        if done >= total:
            self._close()

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _progress(enabled: bool) -> Callable[..., None] | None:
    """Progress only for people watching: text format on a terminal; never in JSON/SARIF or pipes."""
    if not enabled or not sys.stderr.isatty():
        return None
    return _StderrProgress()


def _guard(debug: bool, fn: Callable[[], int]) -> NoReturn:
    try:
        code = fn()
    except UsageError as exc:
        _fail(str(exc), debug)
    except KeyboardInterrupt:
        _fail("interrupted")
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 2
        fixes_mod = sys.modules.get("eagle3_lint.fixes")  # only a run that imported it can raise its error
        if fixes_mod is not None and isinstance(exc, fixes_mod.ApplyError):
            _fail(str(exc), debug)
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", debug)
    sys.exit(code)


def _report_tail(an: Analysis, out: outcome_mod.Outcome, settings: config_mod.Settings, debug: bool,
                 exit_zero: bool, lines: list[str] | None) -> int:
    """The exit code, and the stderr lines that go with it (echoed now if ``lines`` is None, else collected)."""
    say: Callable[[str], None] = (lambda m: click.echo(m, err=True)) if lines is None else lines.append
    for line in out.notes():
        say(f"eagle3-lint: {line}")
    from eagle3_lint.report.headline import split

    # With targets, only the findings on their serving path decide (--arch X --fail-on warning).
    counted = split(an, out.findings)[0] if an.targeted else out.findings
    code = exit_code(counted, settings.fail_on, len(an.errors))
    stale = out.stale_baseline_failure()
    if stale and code == 0:
        say(f"eagle3-lint: error: {stale}")
        code = 1
    if code == 2:
        for e in an.errors:
            say(f"eagle3-lint: internal error in {printable(e.where)}: {printable(e.message)}")
            if debug:
                say(e.traceback)
    if exit_zero and code == 1:
        return 0
    return code


def _emit(r: Replay, output: str | None) -> int:
    write_output(r.report, output)
    for line in r.stderr:
        click.echo(line, err=True)
    return r.code


def entry() -> NoReturn:
    """The console script and ``python -m eagle3_lint``: :func:`main`, then end the process at once.

    ``os._exit`` skips tearing down the heap: freeing a check's objects one by one (its facts, class
    graph and answers, which app.report_once keeps alive for this) took about 0.1 s of CPU, a fifth
    of a one-edit re-check of SGLang 0.5.23. Nothing is lost: the tool registers no ``atexit`` hook,
    every file it writes is closed (and renamed into place) before, and stdout and stderr are
    flushed here. In-process callers (tests, click's runner) call :func:`main`, which exits normally.

    The cyclic GC stays off for the whole process: a check makes almost no reference cycles
    (app.report_once), and re-enabling it at the end of the check let the next allocation
    trigger a collection over every object the check made (about 0.3 s of a one-edit re-check of
    SGLang 0.5.23, whose heap nothing had frozen). What has no cycle is still freed by reference
    counting; a process that runs many analyses still collects between them (store.no_gc).
    """
    gc.disable()
    code: object = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)  # what sys.exit does with a message
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (| head) or stream: the report was not wanted
            stream.flush()
    os._exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="eagle3-lint")
def main() -> None:
    """Static EAGLE-3 compatibility analyzer for the model classes of LLM inference engines (never imports the tree)."""


class _EngineChoice(click.Choice):
    """``--engine``: the names of the engines installed (``engines.names()``), read when an engine is named or the
    help is shown, not when the command line is built (that would load every engine plugin on a replayed check)."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from eagle3_lint import engines

        try:
            return engines.names()
        except UsageError as exc:  # a broken engine plugin: click's one-line usage error, exit 2
            raise click.UsageError(str(exc)) from None

    @choices.setter
    def choices(self, _value: object) -> None:
        pass


_common = [
    click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Cache folder (default $XDG_CACHE_HOME/eagle3-lint).",
    ),
    click.option("--no-cache", is_flag=True, help="Do not read or write the facts cache."),
    click.option("--debug", is_flag=True, help="Show tracebacks of internal errors."),
    click.option("--engine", type=_EngineChoice(), default=None,
                 help="The engine whose tree to check when TARGET holds more than one (default: detect)."),
]


def common(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(_common):
        f = opt(f)
    return f


MATRIX_FORMATS = ["table", "json", "markdown", "html"]
TRACE_FORMATS = ["text", "json", "dot", "mermaid"]
# One list, one order, for --output-format (and its old spelling --format): the emitters' (report/emitters.py).
CHECK_FORMATS = list(EMITTERS)


def _deprecated(old: str, new: str) -> None:
    """An old spelling still works for a release, and says which one to use (on stderr, so reports stay clean)."""
    click.echo(f"eagle3-lint: warning: {old} is deprecated; use {new}", err=True)


def _alias(cctx: click.Context, name: str) -> bool:
    return cctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE


@main.command(short_help="Will an architecture serve with EAGLE-3 on vLLM or SGLang?")
@click.version_option(__version__, "--version", "-V", prog_name="eagle3-lint")
@click.argument("target", required=False)
@click.option(
    "--arch", "archs", multiple=True, help="Architecture to target (repeatable). Default: report all, flag none."
)
@click.option("--output-format", "output_format", type=click.Choice(CHECK_FORMATS), default=None,
              help="concise (path:line:col: severity: EGLnnn [*] one sentence; the text default), full (with the "
                   "evidence), grouped (by file), json, sarif, github.")
@click.option("--format", "fmt", type=click.Choice(CHECK_FORMATS), default=None, hidden=True,
              help="Deprecated spelling of --output-format.")
@click.option("--output", "-o", default=None, help="Write the report (or the patch, with --fix) to this file.")
@click.option("--fix", "do_fix", is_flag=True, help="Emit a unified diff of the fixes (writes nothing to the tree).")
@click.option("--diff", "do_diff", is_flag=True, hidden=True, help="Deprecated spelling of --fix.")
@click.option("--apply", "do_apply", is_flag=True, help="With --fix: write the fixes into the tree, atomically.")
@click.option("--into", "into", default=None, metavar="DIR", type=click.Path(file_okay=False),
              help="With --fix --apply: write a patched copy of the analysed files into DIR (a new or empty folder) "
                   "instead of the tree; the way to patch a downloaded release (vllm==X).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
              help="Include fixes marked unsafe (new methods, new loops). Config: unsafe-fixes.")
@click.option("--backup", is_flag=True, help="With --apply: keep FILE.orig copies.")
@click.option("--target-config", default=None, help="The target model's HF config.json.")
@click.option(
    "--draft-config", default=None, help="The EAGLE-3 drafter's config.json (EGL007; speculators format too)."
)
@click.option("--speculative-config", default=None, metavar="JSON",
              help="vLLM's own spelling: '{\"method\": \"eagle3\", \"model\": \"<local drafter folder>\", ...}'; "
                   "other keys and hf_overrides override the drafter config.")
@click.option("--method", default=None, metavar="METHOD",
              help="The speculative method whose gates to check, in the engine's spelling, read as the release reads "
                   "it (SGLang upper-cases it); a method the tool does not check is an error naming those it does; "
                   "default EAGLE-3, or --speculative-config's method.")
@click.option("--pipeline-parallel-size", "-pp", "pipeline_parallel", type=click.IntRange(min=1), default=None,
              help="Pipeline-parallel size N (vLLM's spelling): the layer split, which rank captures each aux id, "
                   "the PP gates.")
@click.option("--pipeline-parallel", "pipeline_parallel_old", type=click.IntRange(min=1), default=None, hidden=True,
              help="Deprecated spelling of --pipeline-parallel-size.")
@click.option("--tensor-parallel-size", "-tp", "tensor_parallel", type=click.IntRange(min=1), default=None,
              help="Recorded in the serving verdict; tensor parallelism does not change which layers are captured.")
@click.option("--runner", type=click.Choice(["auto", "v1", "v2"]), default="auto", show_default=True,
              help="vLLM model runner to model: auto = what the release picks for a plain EAGLE-3 set-up on the "
                   "--platform.")
@click.option("--platform", type=click.Choice(list(CLI_PLATFORMS)), default="cuda", show_default=True,
              help="The platform vLLM serves on: the runner it picks and the model classes it dispatches to.")
@click.option("--drafter-convention", type=click.Choice(["vllm", "sglang"]), default=None,
              help="How the drafter's aux ids number layers (vllm: state entering layer k; sglang/SpecForge: output "
                   "of layer k). Default: from where the ids sit in its config.")
@click.option("--pp-partition", default=None, metavar="N,N,...",
              help="Layers per pipeline rank, as vLLM's VLLM_PP_LAYER_PARTITION (default: the tree's even split).")
@click.option("--plugin", "plugins", multiple=True, metavar="PATH_OR_DIST",
              help="Also analyze an out-of-tree model plugin (a folder or an installed distribution; never imported).")
@click.option("--fail-on", type=click.Choice(["error", "warning", "note"]), default=None,
              help="Lowest severity that fails the run (default error); with targets, only their findings count. "
                   "Config: fail-on.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--all", "show_all", is_flag=True, help="Text: every architecture and every finding, even with --arch.")
@click.option("--show-context", is_flag=True, help="Text: also the contract, runner, gates and the status table.")
@click.option("--verbose", "-v", is_flag=True, help="Text: same as --show-context.")
@click.option("--quiet", "-q", is_flag=True, help="Text: print the diagnostics and nothing else.")
@click.option("--statistics", is_flag=True, help="Text: one line per rule (count, id, fixable, name).")
@click.option("--show-fixes", is_flag=True, help="Text: the fix under each fixable finding.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour in text output; auto honours NO_COLOR and FORCE_COLOR.")
@click.option("--config", "config_file", default=None,
              help="Configuration file (pyproject.toml or eagle3-lint.toml). Default: found from the cwd upward.")
@click.option("--no-config", is_flag=True, help="Ignore configuration files.")
@click.option("--select", multiple=True, help="Rule ids or prefixes to run, comma-separated (replaces config select).")
@click.option("--extend-select", multiple=True, help="Rule ids or prefixes to run in addition.")
@click.option("--ignore", multiple=True, help="Rule ids or prefixes not to run (adds to config ignore).")
@click.option(
    "--baseline", "baseline_file", default=None, help="Report only findings not recorded in this baseline file."
)
@click.option("--write-baseline", default=None, help="Record the current findings in this baseline file.")
@click.option("--path-prefix", multiple=True, metavar="FROM=TO",
              help="Rewrite reported paths starting with FROM (tree-relative) to start with TO (repeatable).")
@common
def check(target: str | None, archs: tuple[str, ...], fmt: str | None, output: str | None, do_fix: bool,
          do_apply: bool, unsafe_fixes: bool | None, backup: bool, target_config: str | None, draft_config: str | None,
          fail_on: str | None, exit_zero: bool, show_all: bool, config_file: str | None, no_config: bool,
          select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...], baseline_file: str | None,
          write_baseline: str | None, path_prefix: tuple[str, ...], cache_dir: str | None, no_cache: bool,
          debug: bool, pipeline_parallel: int | None = None, pp_partition: str | None = None,
          plugins: tuple[str, ...] = (), output_format: str | None = None, into: str | None = None,
          show_context: bool = False, verbose: bool = False, quiet: bool = False, statistics: bool = False,
          show_fixes: bool = False, color: str = "auto", speculative_config: str | None = None,
          tensor_parallel: int | None = None, runner: str = "auto", drafter_convention: str | None = None,
          engine: str | None = None, do_diff: bool = False, pipeline_parallel_old: int | None = None,
          platform: str = "cuda", method: str | None = None) -> None:
    """Will each architecture (--arch ARCH) serve with EAGLE-3 speculative decoding on TARGET? Prints the verdict
    with the file:line of each gate, the findings and, with --fix, a patch; exit 1 when it finds an error.

    TARGET: a site-packages, vllm/ or sglang/ folder, a checkout, a .whl, vllm==X.Y.Z or sglang==X.Y.Z, or the
    installed vllm."""
    cctx = click.get_current_context()

    def run() -> int:
        nonlocal do_fix, pipeline_parallel
        if fmt:
            _deprecated("--format", "--output-format")
        if do_diff:
            _deprecated("--diff", "--fix")
            do_fix = True
        if pipeline_parallel_old is not None:
            _deprecated("--pipeline-parallel", "--pipeline-parallel-size (or -pp)")
            if pipeline_parallel is not None and pipeline_parallel != pipeline_parallel_old:
                raise UsageError(f"--pipeline-parallel {pipeline_parallel_old} and --pipeline-parallel-size "
                                 f"{pipeline_parallel} disagree; give one")
            pipeline_parallel = pipeline_parallel_old
        if fmt and output_format and fmt != output_format:
            raise UsageError(f"--format {fmt} and --output-format {output_format} disagree; give one")
        kind = output_format or fmt or "text"
        machine = kind in MACHINE
        check_output(output)
        _refuse_conflicts(cctx, kind, quiet, verbose, show_context, statistics, show_fixes, do_fix)
        if do_apply and not do_fix:
            raise UsageError("--apply needs --fix")
        if into and not do_apply:
            raise UsageError("--into needs --fix --apply")
        if do_apply and plugins:
            raise UsageError("--apply does not write into --plugin packages; use --fix and apply the diff in the "
                             "plugin root with git apply -p2")
        settings = config_mod.resolve(config=config_file, no_config=no_config, select=select,
                                      extend_select=extend_select, ignore=ignore, archs=archs, fail_on=fail_on,
                                      baseline=baseline_file, write_baseline=write_baseline,
                                      unsafe_fixes=unsafe_fixes, path_prefixes=path_prefix)
        req = CheckRequest(target, settings.archs, cache_dir, no_cache, target_config, draft_config, debug,
                           select=settings.selection, progress=_progress(not machine and not do_fix and not quiet),
                           plugins=plugins, pipeline_parallel=pipeline_parallel, pp_partition=pp_partition,
                           runner=runner, platform=platform, drafter_convention=drafter_convention,
                           speculative_config=speculative_config, tensor_parallel=tensor_parallel, engine=engine,
                           method=method)
        if do_fix:
            return _fix(req, settings, output, do_apply, into, backup, debug, exit_zero, color)

        console = None
        if not machine:
            # Rendered into a string (the report cache keeps it); a file gets a fixed width and no colour.
            console = _text_console(output, color)
        look = () if console is None else (console.width, console.color_system, console.is_terminal,
                                           console.encoding, console.legacy_windows, console.no_color)
        text = TextOptions(
            fmt=OutputFormat("concise" if kind == "text" else kind) if not machine else OutputFormat.CONCISE,
            show_all=show_all, show_context=show_context or verbose, quiet=quiet, statistics=statistics,
            show_fixes=show_fixes, wrap=output is None and sys.stdout.isatty(),
            unsafe_fixes=settings.unsafe_fixes)
        invocation = _invocation(cctx)

        def render(an: Analysis) -> Replay:
            return _render(an, settings, "text" if not machine else kind, console, text, debug, exit_zero, invocation)

        # Runs that write or read other trees are never replayed (reportcache.py).
        cacheable = not (plugins or settings.write_baseline)
        return _emit(report_once(req, settings, render, (kind, output is None, look, text, invocation, exit_zero),
                                 cacheable), output)

    _guard(debug, run)


def _refuse_conflicts(cctx: click.Context, kind: str, quiet: bool, verbose: bool, show_context: bool,
                      statistics: bool, show_fixes: bool, do_fix: bool) -> None:
    """Options that cannot all be honoured are refused (exit 2), never silently dropped: -q -v, or a text-only
    option with a machine format or with --fix (which prints a patch, not a report)."""
    def given(name: str) -> str | None:
        flag = {"verbose": "-v", "quiet": "-q", "show_context": "--show-context", "statistics": "--statistics",
                "show_fixes": "--show-fixes"}[name]
        return flag if _alias(cctx, name) and cctx.params.get(name) else None

    if quiet and (verbose or show_context):
        raise UsageError(f"-q and {given('verbose') or given('show_context')} contradict each other; give one")
    text_only = [g for g in (given(n) for n in ("quiet", "verbose", "show_context", "statistics", "show_fixes")) if g]
    if text_only and kind in MACHINE:
        raise UsageError(f"{', '.join(text_only)} shape{'s' if len(text_only) == 1 else ''} the text report; "
                         f"--output-format {kind} has no such option")
    if statistics and show_fixes:
        raise UsageError("--statistics prints one line per rule, so --show-fixes has no finding to show a fix under")
    if do_fix and (text_only or (kind != "text" and _alias(cctx, "output_format"))):
        raise UsageError(f"--fix prints a patch, not a report: {', '.join(text_only) or '--output-format'} "
                         "does not apply to it")


# Wide enough that no trace line wraps when piped (rich pads nothing to this width).
_PIPED_WIDTH = 10_000


def _text_console(output: str | None, color: str) -> Console:
    """The console of the text report: ``--color`` wins; ``auto`` leaves NO_COLOR/FORCE_COLOR to rich."""
    from rich.console import Console

    if output:
        return Console(file=io.StringIO(), width=160, color_system=None if color != "always" else "standard",
                       force_terminal=color == "always")
    if color == "always":
        return Console(force_terminal=True)
    if color == "never" or os.environ.get("NO_COLOR"):
        # no-color.org: no ANSI styling at all, so bold and dim go too (rich's no_color keeps them). NO_COLOR
        # wins over FORCE_COLOR; only --color always wins over NO_COLOR (the command line is the nearer choice).
        return Console(color_system=None, no_color=True)
    # force-color.org: FORCE_COLOR set to any non-empty value, "0" included, forces colour (rich reads it).
    return Console()


# How the report is shown or cached, not what is checked: the next step's command leaves them out (it prints a
# patch, and the cache gives the same findings).
_PRESENTATION = frozenset({"output_format", "fmt", "output", "quiet", "verbose", "show_context", "statistics",
                           "show_fixes", "color", "exit_zero", "debug", "show_all", "write_baseline", "do_fix",
                           "do_diff", "do_apply", "into", "backup", "cache_dir", "no_cache"})
# Old spellings (hidden): the next step writes the one spelling.
_SPELLING = {"pipeline_parallel_old": "--pipeline-parallel-size"}


def _invocation(cctx: click.Context) -> str:
    """The command the user ran, every option that decides what is checked, in its one spelling (``next:``
    repeats it with ``--fix``): the drafter config, -pp, the runner and the selection change the findings."""
    parts = ["eagle3-lint", cctx.info_name or "check"]
    for p in cctx.command.params:
        if p.name is None or p.name in _PRESENTATION or \
                cctx.get_parameter_source(p.name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        value = cctx.params.get(p.name)
        if isinstance(p, click.Argument):
            parts += [shlex.quote(str(value))] if value is not None else []
            continue
        flag = _spelling(p)
        if isinstance(p, click.Option) and p.is_flag:
            if p.secondary_opts and value is False:
                parts.append(p.secondary_opts[0])
            elif value:
                parts.append(flag)
            continue
        for v in (value if isinstance(value, tuple) else (value,)):
            if v is not None:
                parts.append(f"{flag} {shlex.quote(str(v))}")
    return " ".join(parts)


def _spelling(p: click.Parameter) -> str:
    """An option's one spelling: its first long name (``--pipeline-parallel-size``, not ``-pp``)."""
    if p.name in _SPELLING:
        return _SPELLING[p.name]
    names = [o for o in getattr(p, "opts", ()) if o.startswith("--")]
    return names[0] if names else p.opts[0]


def _colour_diff(diff: str) -> str:
    out = []
    for line in diff.splitlines(keepends=True):
        code = "1" if line.startswith(("--- ", "+++ ")) else "32" if line.startswith("+") else \
            "31" if line.startswith("-") else "36" if line.startswith("@@") else ""
        out.append(f"\x1b[{code}m{line.rstrip(chr(10))}\x1b[0m\n" if code else line)
    return "".join(out)


def _fix(req: CheckRequest, settings: config_mod.Settings, output: str | None, do_apply: bool, into: str | None,
         backup: bool, debug: bool, exit_zero: bool, color: str) -> int:
    """--fix (print the patch), --fix --apply (write it, re-check, exit by what remains), --apply --into DIR."""
    from eagle3_lint import fixes as fixes_mod
    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint import target as target_mod
    from eagle3_lint.report.headline import split

    an = run_check(req)
    out = outcome_mod.finalize(an, settings)
    plan = fixes_mod.plan(an.source, out.findings, settings.unsafe_fixes)
    root = an.source.writable_root
    if do_apply and into is None and root is not None and target_mod.is_fetched(root, req.cache_dir):
        raise UsageError(f"{req.target or root} is a downloaded release, kept read-only in the cache; "
                         "print the patch with --fix, or write a patched copy with --fix --apply --into DIR")

    def say(m: str) -> None:
        click.echo(m, err=True)

    if not plan.files:
        if plan.held_back_unsafe:
            n = plan.held_back_unsafe
            say(f"eagle3-lint: no safe fix to {'apply' if do_apply else 'print'}; "
                f"{n} unsafe fix{'' if n == 1 else 'es'} available with --unsafe-fixes")
        else:
            say("eagle3-lint: nothing to fix")
    elif do_apply:
        dest = root
        if into is not None:
            dest = _copy_tree(an.source, Path(into))
        written = fixes_mod.apply(dest, plan, backup)
        for p in written:
            say(f"fixed {p}" if into is None else f"fixed {Path(into) / p}")
        fixed = len(plan.fixes)
        # Re-check what was written, and exit by what remains (0 when nothing at the fail level is left).
        again = CheckRequest(str(dest), req.archs, req.cache_dir, req.no_cache, req.target_config, req.draft_config,
                             req.debug, select=req.select, pipeline_parallel=req.pipeline_parallel,
                             pp_partition=req.pp_partition, engine=req.engine)
        ctx2 = run_check(again)
        out2 = outcome_mod.finalize(ctx2, settings)
        mine = split(ctx2, out2.findings)[0]
        before = len(split(an, out.findings)[0])
        say(f"Found {before} finding{'' if before == 1 else 's'} ({fixed} fixed, {len(mine)} remaining).")
        if plan.held_back_unsafe:
            say(f"{plan.held_back_unsafe} unsafe fix(es) held back; rerun with --unsafe-fixes")
        _say_overlaps(plan, say)
        return _report_tail(ctx2, out2, settings, debug, exit_zero, None)
    else:
        diff = fixes_mod.unified_diff(out.paths.plan(plan))
        if output is None and color != "never" and (color == "always" or sys.stdout.isatty()) \
                and not os.environ.get("NO_COLOR"):
            diff = _colour_diff(diff)
        write_output(diff, output)
        if plan.held_back_unsafe:
            n = plan.held_back_unsafe
            say(f"{n} unsafe fix{'' if n == 1 else 'es'} available with --unsafe-fixes")
    _say_overlaps(plan, say)
    return _report_tail(an, out, settings, debug, exit_zero, None)


def _say_overlaps(plan: Plan, say: Callable[[str], None]) -> None:
    """One line per fix held back whole because its edits overlap a fix planned before it (fixes.plan)."""
    for held, other in plan.overlaps:
        at = f"{held.rule} at {held.location.path}:{held.location.line}"
        why = ("its own edits overlap" if other is held else
               f"its edits overlap the fix for {other.rule} at {other.location.path}:{other.location.line}")
        say(f"eagle3-lint: note: the fix for {at} is held back: {why}; rerun --fix after applying")


def _copy_tree(source: Any, dest: Path) -> Path:
    """The analysed .py files of ``source`` under ``dest`` (new or empty), byte for byte."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(f"--into {dest}: must be a new or empty folder")
    try:
        for rel in source.py_files():
            p = dest / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(source.read_bytes(rel))
    except OSError as exc:
        raise UsageError(f"cannot write {dest}: {exc.strerror or exc}") from None
    return dest


def _render(an: Analysis, settings: config_mod.Settings, fmt: str, console: Console | None, text: TextOptions,
            debug: bool, exit_zero: bool, invocation: str = "eagle3-lint check") -> Replay:
    """The report of ``an`` in ``fmt``, the stderr lines that go with it, and the exit code."""
    from eagle3_lint import outcome as outcome_mod

    out = outcome_mod.finalize(an, settings)
    report = EMITTERS[fmt].render(Report(an, out), EmitOptions(text, console, invocation, settings.unsafe_fixes))
    lines: list[str] = []
    code = _report_tail(an, out, settings, debug, exit_zero, lines)
    return Replay(report, tuple(lines), code)


@main.command(short_help="How the runner reaches an architecture: serving chain, gates, MRO.")
@click.argument("args", nargs=-1, metavar="[TARGET]")
@click.option("--arch", "arch_opt", default=None, help="The architecture to trace (as in check).")
@click.option("--target-config", default=None, help="The target model's HF config.json.")
@click.option("--draft-config", default=None, help="The EAGLE-3 drafter's config.json (or its model folder).")
@click.option("--pipeline-parallel-size", "-pp", "pipeline_parallel", type=click.IntRange(min=1), default=None,
              help="Pipeline-parallel size for the serving chain.")
@click.option("--pipeline-parallel", "pipeline_parallel_old", type=click.IntRange(min=1), default=None, hidden=True,
              help="Deprecated spelling of --pipeline-parallel-size.")
@click.option("--runner", type=click.Choice(["auto", "v1", "v2"]), default="auto", show_default=True,
              help="vLLM model runner to model.")
@click.option("--platform", type=click.Choice(list(CLI_PLATFORMS)), default="cuda", show_default=True,
              help="The platform vLLM serves on: the runner it picks and the model classes it dispatches to.")
@click.option("--output-format", "fmt", type=click.Choice(TRACE_FORMATS), default=None,
              help="text (default), json for tools, dot for Graphviz, mermaid to paste into a pull request.")
@click.option("--format", "fmt_old", type=click.Choice(TRACE_FORMATS), default=None, hidden=True,
              help="Deprecated spelling of --output-format.")
@click.option("--plugin", "plugins", multiple=True, metavar="PATH_OR_DIST",
              help="Also analyze an out-of-tree model plugin (a folder or an installed distribution; never imported).")
@common
def trace(args: tuple[str, ...], arch_opt: str | None, target_config: str | None, cache_dir: str | None,
          no_cache: bool, debug: bool, plugins: tuple[str, ...] = (), draft_config: str | None = None,
          pipeline_parallel: int | None = None, runner: str = "auto", fmt: str | None = None,
          engine: str | None = None, fmt_old: str | None = None, pipeline_parallel_old: int | None = None,
          platform: str = "cuda") -> None:
    """Show how the runner reaches an architecture: the serving chain, gates, call site, MRO, delegation,
    aux-state loop.

    Same shape as check: ``trace [TARGET] --arch ARCH``; the older ``trace ARCH [TARGET]`` still works.
    """

    def run() -> int:
        import json as json_mod

        from eagle3_lint import trace as trace_mod
        from eagle3_lint.report.text import trace_tree

        nonlocal fmt, pipeline_parallel
        if fmt_old is not None:
            _deprecated("--format", "--output-format")
            fmt = fmt or fmt_old
        fmt = fmt or "text"
        if pipeline_parallel_old is not None:
            _deprecated("--pipeline-parallel", "--pipeline-parallel-size (or -pp)")
            pipeline_parallel = pipeline_parallel or pipeline_parallel_old
        arch, target = _trace_args(args, arch_opt)
        an = run_check(CheckRequest(target, (arch,), cache_dir, no_cache, target_config, draft_config, debug,
                                     progress=_progress(fmt == "text"), plugins=plugins,
                                     pipeline_parallel=pipeline_parallel, runner=runner, engine=engine,
                                     platform=platform))
        node = trace_mod.build(an, arch)
        if fmt == "json":
            write_output(json_mod.dumps(trace_mod.to_json(node), indent=2) + "\n", None)
        elif fmt == "dot":
            write_output(trace_mod.to_dot(node), None)
        elif fmt == "mermaid":
            write_output(trace_mod.to_mermaid(node), None)
        else:
            from rich.console import Console

            console = Console()
            if not console.is_terminal:
                # Piped: one line per node, so file:line evidence stays whole for grep and copy (as check's
                # concise lines do); a terminal keeps rich's wrapping to its width.
                console = Console(width=_PIPED_WIDTH)
            console.print(trace_tree(node))
        return 0

    _guard(debug, run)




def _trace_args(args: tuple[str, ...], arch_opt: str | None) -> tuple[str, str | None]:
    """(architecture, target) of ``trace [TARGET] --arch ARCH`` or the older ``trace ARCH [TARGET]``. A path on
    disk, a wheel or ``vllm==X`` is a target, never read as an architecture."""
    def is_target(a: str) -> bool:
        return "==" in a or a.endswith(".whl") or Path(a).exists()

    usage = "eagle3-lint trace [TARGET] --arch ARCH"
    if arch_opt is not None:
        if len(args) > 1:
            raise UsageError(f"trace takes one TARGET with --arch, got {len(args)}: {' '.join(args)}")
        return arch_opt, (args[0] if args else None)
    if not args:
        raise UsageError(f"trace needs an architecture: {usage}")
    if len(args) > 2:
        raise UsageError(f"trace takes [TARGET] --arch ARCH, got {len(args)} arguments")
    if len(args) == 1 and (is_target(args[0]) or "/" in args[0]):
        raise UsageError(f"trace needs --arch: eagle3-lint trace {shlex.quote(args[0])} --arch ARCH")
    if len(args) == 2 and is_target(args[0]) and not is_target(args[1]):
        raise UsageError(f"{args[0]!r} is not an architecture (a class name such as LlamaForCausalLM); "
                         f"{usage}")
    return args[0], (args[1] if len(args) > 1 else None)


@main.command("rules", short_help="List the rules; --write-docs writes their pages.")
@click.option("--output-format", "fmt", type=click.Choice(["table", "json"]), default=None,
              help="table (default) or json.")
@click.option("--format", "fmt_old", type=click.Choice(["table", "json"]), default=None, hidden=True,
              help="Deprecated spelling of --output-format.")
@click.option("--write-docs", type=click.Path(file_okay=False), default=None,
              help="Write one Markdown page per rule plus an index (README.md) into this folder.")
def rules_cmd(fmt: str | None, write_docs: str | None, fmt_old: str | None = None) -> None:
    """List the rules (from the rule plugins); --write-docs regenerates the rules/ pages."""

    def run() -> int:
        from eagle3_lint import catalog
        from eagle3_lint.rules import all_rules

        if fmt_old is not None:
            _deprecated("--format", "--output-format")
        kind = fmt or fmt_old or "table"
        if write_docs:
            names = catalog.write_docs(Path(write_docs))
            click.echo(f"wrote {len(names)} pages to {write_docs}", err=True)
            return 0
        if kind == "json":
            write_output(json.dumps([catalog.summary_json(r) for r in all_rules()], indent=2) + "\n", None)
            return 0
        from rich.console import Console
        from rich.padding import Padding
        from rich.text import Text

        # One line of short fields per rule and its summary under it, wrapped to the width: a five-column
        # table at 80 columns wrapped the summary to a word per line.
        console = Console() if sys.stdout.isatty() else Console(width=_PIPED_WIDTH)
        rows = list(all_rules())
        # Every severity the reports use for a rule, default first where it is the most severe.
        sevs = {r.meta.id: "/".join(s.value for s in catalog.severities(r)) for r in rows}
        width, sw = max(len(r.meta.name) for r in rows), max(len(s) for s in sevs.values())
        for r in rows:
            m = r.meta
            head = f"  {m.name:<{width}}  " + (f"{sevs[m.id]:<{sw}}  fixable" if m.fixable else sevs[m.id])
            console.print(Text.assemble((m.id, "bold"), head), soft_wrap=True)
            if console.is_terminal:
                console.print(Padding(m.summary, (0, 0, 0, 8)))
            else:
                console.print(" " * 8 + m.summary, soft_wrap=True, markup=False, highlight=False)
        return 0

    _guard(False, run)


@main.command(short_help="Print the documentation page of a rule (EGL001).")
@click.argument("rule")
def explain(rule: str) -> None:
    """Print the documentation page of RULE (an id such as EGL001, or its name)."""

    def run() -> int:
        from eagle3_lint import catalog

        write_output(catalog.rule_page(catalog.find_rule(rule)), None)
        return 0

    _guard(False, run)


@main.command(short_help="Print the JSON Schema of the JSON report.")
@click.argument("kind", type=click.Choice(["json", "sarif"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of the JSON report (json), or the id of the SARIF 2.1.0 schema (sarif)."""

    def run() -> int:
        if kind == "json":
            # Generated, not the shipped data/report.schema.json: its engine enum is the engines installed here (an
            # engine plugin's reports validate against it); without plugins the two are the same bytes (tests).
            from eagle3_lint.report.schema import schema_text

            write_output(schema_text(), None)
        else:
            from eagle3_lint.report.sarif import SARIF_SCHEMA

            write_output(SARIF_SCHEMA + "\n", None)
        return 0

    _guard(False, run)


@main.command(short_help="Status of every architecture across releases.")
@click.argument("targets", nargs=-1)
@click.option(
    "--releases",
    default=None,
    metavar="FIRST..LAST",
    help="Add every vLLM release between FIRST and LAST (inclusive), e.g. 0.11.0..0.33.0: those in the cache, "
    "plus PyPI's with --index.",
)
@click.option("--index", "use_index", is_flag=True, help="With --releases: also ask PyPI (pip index versions vllm).")
@click.option("--arch", "archs", multiple=True, help="Only these architectures (repeatable).")
@click.option("--changed", is_flag=True, help="Only architectures whose status changes across the targets.")
@click.option("--output-format", "fmt", type=click.Choice(MATRIX_FORMATS), default=None,
              help="table (default), json, markdown, or html: one self-contained page per engine, filterable, "
              "reasons on hover.")
@click.option("--format", "fmt_old", type=click.Choice(MATRIX_FORMATS), default=None, hidden=True,
              help="Deprecated spelling of --output-format.")
@click.option("--output", "-o", default=None,
              help="Write to this file (e.g. docs/compatibility.md). html: a FILE.html for one engine, or a folder "
              "(made if missing) that gets one page per engine, FOLDER/vllm.html, FOLDER/sglang.html.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: CPU count).")
@common
def matrix(targets: tuple[str, ...], releases: str | None, use_index: bool, archs: tuple[str, ...], changed: bool,
           fmt: str | None, output: str | None, jobs: int | None, cache_dir: str | None, no_cache: bool, debug: bool,
           engine: str | None = None, fmt_old: str | None = None) -> None:
    """Status of every architecture across TARGETS (paths, wheels, vllm==X.Y.Z) and --releases: first supported,
    regressions."""

    def run() -> int:
        from eagle3_lint import engines
        from eagle3_lint import matrix as matrix_mod

        nonlocal fmt
        if fmt_old is not None:
            _deprecated("--format", "--output-format")
        fmt = fmt or fmt_old or "table"
        chosen = engines.get(engine) if engine else engines.all_engines()[0]
        specs = matrix_mod.targets_from(list(targets), releases, cache_dir, use_index, chosen)
        if releases and not use_index:
            picked = [t.split("==", 1)[1] for t in specs if t.startswith(f"{chosen.release_names[0]}==")]
            gaps = matrix_mod.missing_series(releases, picked)
            click.echo(f"eagle3-lint: --releases {releases}: {len(picked)} cached release(s) ({', '.join(picked)})"
                       + (f"; none of {', '.join(gaps)} is in the cache" if gaps else "")
                       + "; add --index to list PyPI's releases and fetch the missing ones", err=True)
        missing = matrix_mod.missing_releases(specs, cache_dir)
        unfetched: dict[str, str] = {}
        if missing:
            click.echo(f"eagle3-lint: {len(missing)} release(s) not in the cache: "
                       f"{', '.join(f'{e.release_names[0]}=={v}' for e, v in missing)}; fetching them (once)", err=True)
            def say(line: str) -> None:
                click.echo(f"eagle3-lint: {line}", err=True)

            unfetched = matrix_mod.prefetch(missing, cache_dir, say, _progress(True))
        m = matrix_mod.run(specs, cache_dir, jobs, use_cache=not no_cache, unfetched=unfetched)
        mixed = sorted({r.engine for r in m.releases if r.engine})
        if len(mixed) > 1 and fmt != "html":
            # "since" and "regressed" read one engine's releases in version order; SGLang's 0.5.23 is not before
            # vLLM's 0.16.0. The HTML format writes one page per engine.
            raise UsageError(f"matrix compares the releases of one engine, got {' and '.join(mixed)} targets: run it "
                             "once per engine (--output-format html writes one page per engine)")
        rows = matrix_mod.select_rows(m, archs, changed)
        if fmt == "json":
            write_output(json.dumps(matrix_mod.to_json(m, rows), indent=2, ensure_ascii=False) + "\n", output)
        elif fmt in ("markdown", "html"):
            cmd = " ".join(["eagle3-lint matrix", *targets, *(["--releases", releases] if releases else []),
                            *[f"--arch {a}" for a in archs], *(["--changed"] if changed else []),
                            f"--output-format {fmt}",
                            *(["--output", output] if output else [])])
            if fmt == "html":
                from eagle3_lint import matrix_html

                made = matrix_html.pages(m, rows, cmd)
                for (_engine, page), dest in zip(made, matrix_html.destinations(output, [e for e, _p in made]),
                                                 strict=True):
                    write_output(page, None if dest is None else str(dest))
                    if dest is not None:
                        click.echo(f"eagle3-lint: wrote {dest}", err=True)
            elif output:
                matrix_mod.write_markdown(Path(output), matrix_mod.to_markdown(m, rows, cmd))
            else:
                write_output(matrix_mod.to_markdown(m, rows, cmd), None)
        else:
            from rich.console import Console

            # On a terminal (or a pipe, at $COLUMNS or 80) the tables fit its width; a file has no width, so it
            # gets one table as wide as its content.
            if output:
                with open(output, "w", encoding="utf-8") as fh:
                    matrix_mod.render_table(m, rows, Console(file=fh), fit=False)
            else:
                matrix_mod.render_table(m, rows, Console())
        failed = [r for r in m.releases if r.error]
        for r in failed:
            click.echo(f"eagle3-lint: cannot analyze {r.target}: {r.error}", err=True)
        return 2 if failed or any(r.internal_errors for r in m.releases) else 0

    _guard(debug, run)



@main.command(short_help="The aux-layer ids to write into each engine's drafter config.")
@click.argument("targets", nargs=-1)
@click.option("--target-config", default=None, help="The target's config.json (its num_hidden_layers, architectures).")
@click.option("--arch", default=None, help="The target's architecture (default: the target config's first).")
@click.option("--num-layers", type=click.IntRange(min=1), default=None,
              help="The target's layer count, without a --target-config.")
@click.option("--trained-on", default=None, metavar="ENGINE:IDS",
              help="The ids the drafter was served with correctly, as ENGINE reads them (vllm, sglang or trtllm), "
                   "e.g. sglang:1,15,28.")
@click.option("--draft-config", default=None,
              help="Or: the drafter's config.json, when where its ids sit says how they number layers.")
@click.option("--output-format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="text (default) or json.")
@click.option("--format", "fmt_old", type=click.Choice(["text", "json"]), default=None, hidden=True,
              help="Deprecated spelling of --output-format.")
@click.option("--output", "-o", default=None, help="Write to this file.")
@common
def layers(targets: tuple[str, ...], target_config: str | None, arch: str | None, num_layers: int | None,
           trained_on: str | None, draft_config: str | None, fmt: str | None, output: str | None,
           cache_dir: str | None, no_cache: bool, debug: bool, engine: str | None = None,
           fmt_old: str | None = None) -> None:
    """The aux-layer ids to write into each engine's drafter config (TARGETS: vLLM or SGLang releases or trees,
    e.g. vllm==0.33.0 sglang==0.5.23; TensorRT-LLM always, from its public sources) so that the drafter receives
    the layers it was trained on."""

    def run() -> int:
        from eagle3_lint.engines import layers as layers_mod

        if fmt_old is not None:
            _deprecated("--format", "--output-format")
        def model_of(target: str, archs: tuple[str, ...]) -> Model:
            return run_check(CheckRequest(target, archs, cache_dir, no_cache, target_config, None)).model

        ans = layers_mod.answer(layers_mod.Request(targets, arch, target_config, num_layers, trained_on, draft_config),
                                model_of)
        # On a terminal the text is word-wrapped to its width (a hard wrap splits names and paths mid-word).
        size = shutil.get_terminal_size() if output is None and sys.stdout.isatty() else None
        write_output(ans.to_json() if (fmt or fmt_old) == "json" else ans.to_text(*size) if size else ans.to_text(),
                     output)
        return 0

    _guard(debug, run)


if __name__ == "__main__":
    main()
