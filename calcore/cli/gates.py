"""Calibration gates: pass/fail limits on the metrics of a report (``calcore check``).

A gate is ``--max METRIC=LIMIT`` (the metric must not exceed the limit) or ``--min
METRIC=LIMIT`` (it must not fall below). Either kind is allowed on any metric of
:data:`calcore.METRICS`: ``--max`` suits errors (lower is better) and ``--min`` suits
accuracy (higher is better), but the gate is the user's, and a ``--min`` and a ``--max``
on the same metric make a band (``--max oe_ratio=1.2 --min oe_ratio=0.8`` for a measure
with an ideal value inside its range). A gate holds at equality. A gate on a measure of
binary models over predictions of more classes is refused, with the keys that apply.

Gates compare the point estimate (``on="estimate"``) or the end of the bootstrap
interval on the side the limit guards (``on="upper"``: the upper end for a ``--max``
gate, the lower end for a ``--min`` gate). The second is stricter: a gate passes only
when the whole interval is on the right side of the limit. A metric that is undefined
(NaN, no interval, not computed) fails its gate with a reason; it never passes silently.

Everything here is pure: parsing, comparison and the renderings of a
:class:`CheckResult` (text, JSON-ready dict, JUnit XML, Markdown). The command line
reads the data and writes the files.
"""

from __future__ import annotations

import math
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace

from calcore.foundation.errors import CalcoreError
from calcore.metrics.registry import METRICS

__all__ = [
    "Gate",
    "GateResult",
    "CheckResult",
    "COMPARE_ON",
    "UPPER_BOOTSTRAP",
    "parse_gates",
    "bootstrap_for",
    "check_report",
    "check_sliced",
    "text_summary",
    "junit_xml",
    "markdown_summary",
    "markdown_text",
    "terminal_text",
]

#: What a gate compares: the point estimate, or the guarded end of the interval.
COMPARE_ON = ("estimate", "upper")
#: Bootstrap resamples of ``calcore check --on upper`` when ``--bootstrap`` is not given.
UPPER_BOOTSTRAP = 200

_SYMBOL = {"max": "<=", "min": ">="}


@dataclass(frozen=True)
class Gate:
    """One limit on one metric.

    Attributes
    ----------
    metric : str
        A key of :data:`calcore.METRICS`.
    kind : {"max", "min"}
        ``"max"``: the metric must be ``<= limit``; ``"min"``: ``>= limit``.
    limit : float
        A finite number inside the metric's range.

    Examples
    --------
    >>> gate = Gate.parse("max", "top_label_ece=0.03")
    >>> gate.name, gate.holds(0.03), gate.holds(0.031)
    ('top_label_ece <= 0.03', True, False)
    """

    metric: str
    kind: str
    limit: float

    @property
    def name(self) -> str:
        """``"top_label_ece <= 0.03"``: the metric key, the comparison and the limit."""
        return f"{self.metric} {_SYMBOL[self.kind]} {self.limit!r}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` (finite) is on the allowed side of the limit (equality holds)."""
        return value <= self.limit if self.kind == "max" else value >= self.limit

    @classmethod
    def parse(cls, kind: str, text: str) -> "Gate":
        """A gate from the text of ``--max`` or ``--min``: ``"METRIC=LIMIT"``.

        Raises
        ------
        CalcoreError
            No ``=``, an unknown metric (the message lists the keys), a limit that is not
            a finite number, or one outside the metric's range (such a gate could never
            fail or never pass, e.g. ``top_label_ece=3`` meant as 3 %).
        """
        option = f"--{kind}"
        key, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not key:
            raise CalcoreError(
                f"{option} must look like METRIC=LIMIT, e.g. top_label_ece=0.03; got {text!r}."
            )
        if key not in METRICS:
            raise CalcoreError(
                f"{option}: unknown metric {key!r}; the metrics are: {', '.join(METRICS)}."
            )
        try:
            limit = float(value)
        except ValueError:
            limit = math.nan
        if not math.isfinite(limit):
            raise CalcoreError(f"{option} {key}: the limit must be a finite number; got {value!r}.")
        low, high = METRICS[key].bounds
        if not low <= limit <= high:
            raise CalcoreError(
                f"{option} {key}={value}: {METRICS[key].label} lies in [{low:g}, {high:g}], so "
                "this gate would always pass or always fail (limits are fractions: 0.03 for 3%)."
            )
        return cls(key, kind, limit)


def parse_gates(maxima=(), minima=()) -> tuple[Gate, ...]:
    """The gates of ``--max`` and ``--min`` options (texts ``"METRIC=LIMIT"``), in that order.

    Raises
    ------
    CalcoreError
        No gate at all, a malformed gate (:meth:`Gate.parse`), or the same kind of gate on
        the same metric twice (which limit would be meant?). A ``--min`` and a ``--max`` on
        one metric are allowed: a band.

    Examples
    --------
    >>> [g.name for g in parse_gates(["classwise_ece=0.005"], ["accuracy=0.9"])]
    ['classwise_ece <= 0.005', 'accuracy >= 0.9']
    """
    gates = [Gate.parse("max", t) for t in maxima or ()]
    gates += [Gate.parse("min", t) for t in minima or ()]
    if not gates:
        raise CalcoreError(
            "no gate: give at least one --max METRIC=LIMIT (e.g. --max top_label_ece=0.03) "
            "or --min METRIC=LIMIT (e.g. --min accuracy=0.9)."
        )
    seen: dict[tuple[str, str], Gate] = {}
    for gate in gates:
        first = seen.setdefault((gate.kind, gate.metric), gate)
        if first is not gate:
            raise CalcoreError(
                f"--{gate.kind} {gate.metric} is given twice ({first.limit!r} and "
                f"{gate.limit!r}); give one limit per metric and kind."
            )
    return tuple(gates)


def bootstrap_for(on: str, bootstrap: int | None) -> int:
    """The bootstrap resamples to compute: ``bootstrap`` if given, else
    :data:`UPPER_BOOTSTRAP` for ``on="upper"`` and 0 for ``on="estimate"``.

    Raises
    ------
    CalcoreError
        ``on="upper"`` with ``bootstrap=0``: there would be no interval to compare.

    Examples
    --------
    >>> bootstrap_for("upper", None), bootstrap_for("estimate", None), bootstrap_for("upper", 50)
    (200, 0, 50)
    """
    if on not in COMPARE_ON:
        raise CalcoreError(f"on must be one of {COMPARE_ON}; got {on!r}.")
    if bootstrap is None:
        return UPPER_BOOTSTRAP if on == "upper" else 0
    if on == "upper" and bootstrap == 0:
        raise CalcoreError(
            "--on upper compares the ends of bootstrap intervals, and --bootstrap 0 computes "
            f"none: give --bootstrap R (R >= 2; default {UPPER_BOOTSTRAP} with --on upper) "
            "or use --on estimate."
        )
    return bootstrap


@dataclass(frozen=True)
class GateResult:
    """A gate and what it found.

    Attributes
    ----------
    gate : Gate
    estimate : float or None
        The metric's point estimate (None: not computed; NaN: undefined).
    low, high : float or None
        Its bootstrap interval, None without one.
    compared : float or None
        The value held against the limit: the estimate, or the guarded end of the interval.
    passed : bool
    reason : str
        Why it failed (empty when it passed), e.g. ``"0.041 > 0.03"`` or ``"undefined"``.
    scope : str
        The slice the gate was held in (``"country = DE"``); empty for all rows.
    """

    gate: Gate
    estimate: float | None
    low: float | None
    high: float | None
    compared: float | None
    passed: bool
    reason: str = ""
    scope: str = ""

    @property
    def name(self) -> str:
        """The gate's name, with its slice in brackets when it was held in one."""
        return self.gate.name + (f" [{self.scope}]" if self.scope else "")


@dataclass(frozen=True)
class CheckResult:
    """Every gate of one ``calcore check`` run.

    Attributes
    ----------
    file : str
    n_rows, n_classes : int
    on : {"estimate", "upper"}
    results : tuple of GateResult
    confidence_level : float or None
        Of the intervals, None without a bootstrap.
    notes : tuple of str
        What the loader and the report said.
    """

    file: str
    n_rows: int
    n_classes: int
    on: str
    results: tuple
    confidence_level: float | None = None
    notes: tuple = ()

    @property
    def n_passed(self) -> int:
        """How many gates passed."""
        return sum(r.passed for r in self.results)

    @property
    def passed(self) -> bool:
        """Whether every gate passed."""
        return self.n_passed == len(self.results)

    @property
    def headline(self) -> str:
        """``"2 of 3 gates passed"``."""
        return f"{self.n_passed} of {len(self.results)} gates passed"

    def as_dict(self) -> dict:
        """JSON-ready: the object ``calcore check --json`` prints (NaN as None)."""
        return {
            "file": self.file,
            "n_rows": self.n_rows,
            "on": self.on,
            "passed": self.passed,
            "gates": [
                {
                    "metric": r.gate.metric,
                    "kind": r.gate.kind,
                    "limit": r.gate.limit,
                    "estimate": _finite(r.estimate),
                    "low": _finite(r.low),
                    "high": _finite(r.high),
                    "compared": _finite(r.compared),
                    "passed": r.passed,
                    "reason": r.reason or None,
                    "slice": r.scope or None,
                }
                for r in self.results
            ],
            "notes": list(self.notes),
        }


def _finite(value):
    return None if value is None or not math.isfinite(value) else float(value)


def _judge(gate: Gate, report, on: str) -> GateResult:
    """One gate against a :class:`~calcore.CalibrationReport`."""
    estimate = report.metrics.get(gate.metric)
    interval = report.intervals.get(gate.metric)
    low, high = (interval.low, interval.high) if interval is not None else (None, None)
    if on == "estimate":
        compared, what = estimate, "estimate"
    else:
        compared = high if gate.kind == "max" else low
        what = f"{'upper' if gate.kind == 'max' else 'lower'} end of the interval"
    if estimate is None:
        reason = "not computed (see the notes)"
    elif compared is None:
        reason = "no bootstrap interval"
    elif not math.isfinite(compared):
        reason = f"undefined {what} (NaN; e.g. fewer than 2 rows)"
    elif gate.holds(compared):
        reason = ""
    else:
        flipped = ">" if gate.kind == "max" else "<"
        shown = f"{compared:.6g}"
        if float(shown) == gate.limit:  # "0.03 > 0.03" would read as a bug: show every digit
            shown = repr(float(compared))
        reason = f"{what} {shown} {flipped} {gate.limit!r}"
    return GateResult(gate, estimate, low, high, compared, passed=not reason, reason=reason)


def check_report(report, gates, *, on: str = "estimate", file: str = "", notes=()) -> CheckResult:
    """Hold every gate against ``report`` (a :class:`~calcore.CalibrationReport`).

    Parameters
    ----------
    report : CalibrationReport
        With the gates' metrics computed, and intervals for ``on="upper"``.
    gates : sequence of Gate
    on : {"estimate", "upper"}
    file : str
        The data's name, for the renderings.
    notes : sequence of str
        Shown with the results (default: the report's notes).

    Returns
    -------
    CheckResult

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]], [0, 1, 1])
    >>> report = calcore.evaluate(preds, metrics=["accuracy"])
    >>> result = check_report(report, parse_gates(minima=["accuracy=0.7"]))
    >>> result.passed, result.headline, result.results[0].reason
    (False, '0 of 1 gates passed', 'estimate 0.666667 < 0.7')
    """
    if on not in COMPARE_ON:
        raise CalcoreError(f"on must be one of {COMPARE_ON}; got {on!r}.")
    _check_applicable(gates, report.n_classes)
    results = tuple(_judge(g, report, on) for g in gates)
    level = next(iter(report.intervals.values())).confidence_level if report.intervals else None
    return CheckResult(
        file,
        report.n,
        report.n_classes,
        on,
        results,
        level,
        tuple(notes) if notes else tuple(report.notes),
    )


def _check_applicable(gates, n_classes: int) -> None:
    """Refuse gates on measures of binary models over predictions of more classes (they
    would fail as "not computed", which reads as a regression of the model)."""
    binary = [g.metric for g in gates if METRICS[g.metric].binary_only]
    if binary and n_classes != 2:
        keys = [k for k, spec in METRICS.items() if not spec.binary_only]
        raise CalcoreError(
            f"{', '.join(dict.fromkeys(binary))}: measure(s) of binary models (2 classes), but "
            f"these predictions have {n_classes} classes. The metrics that apply: "
            f"{', '.join(keys)}."
        )


def check_sliced(sliced, gates, *, on: str = "estimate", file: str = "", notes=()) -> CheckResult:
    """Hold every gate against all rows and within every slice of a
    :class:`~calcore.SlicedReport` that has at least ``sliced.min_slice_rows`` rows.

    Smaller slices are not gated (their estimates are mostly noise); a note counts them.
    Each slice's results carry its name as ``scope`` (untrusted text: every rendering
    escapes it).

    Examples
    --------
    >>> import calcore, numpy as np
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="calibrated")
    >>> preds = calcore.simulate_predictions(sim, 200, seed=0).preds
    >>> preds = preds.with_metadata({"shop": np.repeat(["x", "y"], 100)})
    >>> sliced = calcore.evaluate_by(preds, "shop", n_resamples=19, metrics=["accuracy"])
    >>> result = check_sliced(sliced, parse_gates(minima=["accuracy=0.5"]))
    >>> [r.name for r in result.results]
    ['accuracy >= 0.5', 'accuracy >= 0.5 [shop = x]', 'accuracy >= 0.5 [shop = y]']
    """
    overall = check_report(sliced.overall, gates, on=on, file=file, notes=notes)
    results = list(overall.results)
    skipped = 0
    for s in sliced.in_order():
        if s.n < sliced.min_slice_rows or s.report is None:
            skipped += 1
            continue
        scope = f"{' x '.join(sliced.columns)} = {s.label}"
        results += [replace(_judge(g, s.report, on), scope=scope) for g in gates]
    extra = ()
    if skipped:
        extra = (
            f"{skipped} slice(s) with fewer than {sliced.min_slice_rows} rows (or no weight) "
            "were not gated.",
        )
    return replace(overall, results=tuple(results), notes=overall.notes + extra)


# ----------------------------------------------------------------------------- renderings


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.6f}"


def _interval(r: GateResult) -> str:
    return "" if r.low is None else f"[{_number(r.low)}, {_number(r.high)}]"


def _compared_on(result: CheckResult) -> str:
    if result.on == "estimate":
        return "gates on the point estimate"
    level = f"{result.confidence_level:.0%} " if result.confidence_level else ""
    return f"gates on the {level}interval (upper end for --max, lower end for --min)"


_HEADER = ["gate", "metric", "estimate", "interval", "limit", "result"]
_INTERVAL = _HEADER.index("interval")


def _rows(result: CheckResult) -> list[list[str]]:
    """gate, metric, estimate, interval, limit, result: the cells of every rendering."""
    return [
        [
            r.name,
            METRICS[r.gate.metric].label,
            _number(r.estimate),
            _interval(r),
            repr(r.gate.limit),
            "PASS" if r.passed else f"FAIL: {r.reason}",
        ]
        for r in result.results
    ]


def _table(result: CheckResult) -> list[list[str]]:
    """The header and the rows, without the interval column when no gate has an interval."""
    rows = [_HEADER] + _rows(result)
    if any(r.low is not None for r in result.results):
        return rows
    return [row[:_INTERVAL] + row[_INTERVAL + 1 :] for row in rows]


def terminal_text(text) -> str:
    r"""``text`` on one line with control characters (an escape sequence from a slice's
    name could drive the terminal) shown as U+FFFD.

    Examples
    --------
    >>> terminal_text("DE\x1b[2J\nFR")
    'DE\ufffd[2J FR'
    """
    flat = " ".join(str(text).split())
    return "".join("\ufffd" if unicodedata.category(ch) == "Cc" else ch for ch in flat)


def text_summary(result: CheckResult) -> str:
    """The human table of ``calcore check``; its last line is :attr:`CheckResult.headline`."""
    rows = [[terminal_text(c) for c in row] for row in _table(result)]
    widths = [max(len(row[j]) for row in rows) for j in range(len(rows[0]))]
    lines = [
        f"{result.file}: {result.n_rows} rows, {result.n_classes} classes; {_compared_on(result)}",
        "",
    ]
    for row in rows:
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        )
    if result.notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in result.notes]
    return "\n".join(lines + ["", result.headline])


# Characters that XML 1.0 cannot carry at all (ElementTree would write them and produce a
# file that no parser reads): C0 controls except tab and line breaks, surrogates, U+FFFE/F.
_XML_INVALID = {c: "\ufffd" for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)}
_XML_INVALID |= {c: "\ufffd" for c in range(0xD800, 0xE000)} | {0xFFFE: "\ufffd", 0xFFFF: "\ufffd"}


def _xml_text(text) -> str:
    return str(text).translate(_XML_INVALID)


def junit_xml(result: CheckResult) -> bytes:
    """A JUnit XML report (UTF-8): one ``<testcase>`` per gate, a ``<failure>`` if it failed.

    Built with :mod:`xml.etree.ElementTree`, which escapes the file name and every other
    text; characters XML cannot carry become U+FFFD.

    Examples
    --------
    >>> import calcore, xml.etree.ElementTree as ET
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [0, 1])
    >>> report = calcore.evaluate(preds, metrics=["accuracy"])
    >>> result = check_report(report, parse_gates(minima=["accuracy=0.9"]), file="a<b>.csv")
    >>> suite = ET.fromstring(junit_xml(result))
    >>> suite.get("tests"), suite.get("failures"), suite.find("testcase").get("name")
    ('1', '0', 'accuracy >= 0.9')
    """
    suite = ET.Element(
        "testsuite",
        {
            "name": "calcore check",
            "tests": str(len(result.results)),
            "failures": str(len(result.results) - result.n_passed),
            "errors": "0",
            "skipped": "0",
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("file", result.file),
        ("n_rows", result.n_rows),
        ("on", result.on),
    ):
        ET.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
    for r, row in zip(result.results, _rows(result), strict=True):
        case = ET.SubElement(
            suite, "testcase", {"classname": "calcore.check", "name": _xml_text(row[0])}
        )
        if not r.passed:
            failure = ET.SubElement(
                case, "failure", {"message": _xml_text(f"{row[0]}: {r.reason}"), "type": "gate"}
            )
            failure.text = _xml_text(
                f"{result.file}: {row[1]} estimate {row[2]}"
                + (f", interval {row[3]}" if row[3] else "")
                + f"; {_compared_on(result)}; limit {row[4]}; {r.reason}"
            )
    ET.indent(suite)
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True) + b"\n"


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Every character that starts Markdown syntax on GitHub: emphasis, code, links and images,
# headings and lists, table cells, strikethrough, emoji (:x:), mentions and math ($x$).
# Other punctuation (, ; ' " = % / ?) stays as it is, so that the source stays readable.
_MD_ESCAPED = set("\\`*_{}[]()#+-.!|~:@$")


def markdown_text(text) -> str:
    """``text`` as inert Markdown: on one line (control characters as U+FFFD, as
    :func:`terminal_text`), ``& < >`` as entities (no HTML) and the
    characters that start Markdown syntax backslash-escaped (no emphasis, link, code,
    math or table cell break: ``|`` becomes ``\\|``).

    Examples
    --------
    >>> print(markdown_text("a|b <script>*x*"))
    a\\|b &lt;script&gt;\\*x\\*
    """
    flat = terminal_text(text)  # a line break would end the table row
    return "".join(_MD_ENTITIES.get(ch) or ("\\" + ch if ch in _MD_ESCAPED else ch) for ch in flat)


def markdown_summary(result: CheckResult) -> str:
    """A Markdown summary (e.g. for ``$GITHUB_STEP_SUMMARY``): a heading with the headline,
    the file, a table of the gates and the notes; every text cell is :func:`markdown_text`.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [0, 1])
    >>> report = calcore.evaluate(preds, metrics=["accuracy"])
    >>> result = check_report(report, parse_gates(minima=["accuracy=0.9"]), file="a|b.csv")
    >>> print(markdown_summary(result).splitlines()[0])
    ### calcore check: 1 of 1 gates passed
    """
    mark = "✅" if result.passed else "❌"
    lines = [
        f"### calcore check: {result.headline}",
        "",
        f"{mark} {markdown_text(result.file)}: {result.n_rows} rows, {result.n_classes} "
        f"classes; {markdown_text(_compared_on(result))}",
        "",
    ]
    header, *rows = _table(result)
    lines.append("| " + " | ".join(h.capitalize() for h in header) + " |")
    lines.append("|" + " --- |" * len(header))
    for row in rows:
        lines.append("| " + " | ".join(markdown_text(c) for c in row) + " |")
    if result.notes:
        lines += ["", "Notes:", ""] + [f"- {markdown_text(n)}" for n in result.notes]
    return "\n".join(lines) + "\n"
