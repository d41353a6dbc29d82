"""Build the report page from the stored H200 reports and a simulated 4-gpu-b200 fan-out (with its coverage merge, a
guard audit and a ledger join), and from a pytest audit alone, then check both in headless Chromium: problems first
(an error row above the fold, every row with its runner, none twice), the test x runner view with file:line, cell
count, filters, a cell's panel, a planted unexpected skip and a never-ran cell, hostile text kept as text; and that
the checks turn red on a page without the plants and on a page whose script was altered (the
Content-Security-Policy must stop it). Keeps screenshots in --out (report-top.png and pytest-audit-top.png: what a
reader sees first).

Usage: python ci/browser_report.py --out DIR [--screenshot docs/report.png]
Exit status: 0 every check passed, 1 a check failed (one line says which), 2 Chromium missing or a step broke.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chromium import Browser, BrowserError, find_chromium

from matrix.core.expect import effective_versions, expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Outcome

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
H200_REPORTS = ("results/h200x1-shared-warm.json", "results/h200x2-runner-cold.json")
GUARD_SUITE = "tests/guards/fixture_suite"  # relative: the findings then name repository paths
PYTEST_PROJECT = "examples/pytest-project"
LEDGER_SUITE = REPO / "tests" / "ledger" / "fixture_suite"
B200 = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}'
HOSTILE_REASON = (
    '</script><script>window.__pwned=1</script></details><img src=x onerror="window.__pwned=2"> & \' " \n\x01 \udc80 planted'
)
READY = "document.body && document.body.dataset.ready"


class CheckFailed(Exception):
    pass


def step(command: list[str], *, cwd: Path = REPO, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> None:
    print("+ " + " ".join(command), flush=True)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise BrowserError(f"{command[1] if len(command) > 1 else command[0]} exited {done.returncode}:\n" + "\n".join(tail))


def _rewrite(path: Path, change: Callable[[list[dict[str, Any]]], str]) -> str:
    doc = json.loads(path.read_text(encoding="utf-8"))
    cell = change(doc["cells"])
    counts = dict.fromkeys(doc["counts"], 0)
    for c in doc["cells"]:
        counts[c["status"]] += 1
    doc["counts"], doc["planned"] = counts, len(doc["cells"])
    path.write_text(json.dumps(doc), encoding="utf-8")
    return cell


def plant(reports: Path) -> tuple[str, str]:
    """One passing cell of shard 1 becomes an unexpected skip; one of shard 2 loses its result (never ran)."""

    def skip(cells: list[dict[str, Any]]) -> str:
        target = next(c for c in cells if c["status"] == "passed")
        target.update(status="skipped-unexpected", skip_reason=HOSTILE_REASON)
        return str(target["cell"])

    def drop(cells: list[dict[str, Any]]) -> str:
        target = next(c for c in cells if c["status"] == "passed")
        cells[:] = [c for c in cells if c["cell"] != target["cell"]]
        return str(target["cell"])

    return _rewrite(reports / "shard-1.json", skip), _rewrite(reports / "shard-2.json", drop)


def ledger_join(work: Path) -> Path:
    """The ledger fixture suite run as sglang's CI runs it (a process per file, hook installed), then joined."""
    venv = work / "ledger-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True
    ).stdout.strip()
    Path(purelib, "_specmatrix_checkout.pth").write_text(f"{REPO}\n{sysconfig.get_paths()['purelib']}\n", encoding="utf-8")
    step([str(python), "-m", "matrix", "ledger", "--install-hook"])
    suite = work / "ledger-suite"
    shutil.copytree(LEDGER_SUITE, suite)
    ledger = work / "ledger.jsonl"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "SPECMATRIX_LEDGER": str(ledger), "SPECMATRIX_LEDGER_ROOT": str(suite)}
    env |= {"SPECMATRIX_DETECT": B200, "SGLANG_IS_IN_CI": "true", "HOME": str(work)}
    step(["python3", "run_suite.py", "--suite", "base-b-test-4-gpu-b200", "--continue-on-error"], cwd=suite, env=env)
    out = work / "ledger.json"
    step(
        [sys.executable, "-m", "matrix", "ledger", str(ledger), "--root", str(suite / "registered"), "--json", str(out)], ok=(1,)
    )
    return out


def build(work: Path) -> tuple[list[Path], Path, tuple[str, str]]:
    """The inputs of the page: H200 reports, the fan-out's shard reports (planted) and their coverage merge, a guard
    audit, a ledger join."""
    fanout = work / "fanout"
    step([sys.executable, str(HERE / "simulate_fanout.py"), "--out", str(fanout), "--runner", "4-gpu-b200", "--workers", "0"])
    clean = work / "clean-reports"
    shutil.copytree(fanout / "reports", clean)
    planted = plant(fanout / "reports")
    shards = sorted((fanout / "reports").glob("shard-*.json"))
    coverage = work / "coverage"
    step([sys.executable, "-m", "matrix", "coverage", *map(str, shards), "--out", str(coverage), "--no-heatmap"], ok=(1,))
    guards = work / "guards.json"
    step(
        [sys.executable, "-m", "matrix", "guards", str(GUARD_SUITE), "--format", "json", "--output", str(guards), "--no-cache"],
        ok=(0, 1),
    )
    common = [Path(p) for p in H200_REPORTS] + [guards, ledger_join(work)]  # relative: step() runs in the repository
    return [*common, *shards, coverage / "coverage.json"], clean, planted


def pytest_audit_page(work: Path) -> Path:
    """A pytest project's audit alone (the docs' example project), as its page."""
    audit, page = work / "pytest-audit.json", work / "pytest-audit.html"
    step([sys.executable, "-m", "matrix", "pytest-audit", PYTEST_PROJECT, "--format", "json", "--output", str(audit)], ok=(1,))
    render([audit], page)
    return page


def render(inputs: list[Path], out: Path, checkout: Path = Path(".")) -> None:
    step([sys.executable, "-m", "matrix", "report", "--html", str(out), "--checkout", str(checkout), *map(str, inputs)])


def check(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)
    print(f"ok: {what}")


def choose(browser: Browser, select_id: str, value: str) -> None:
    browser.evaluate(
        f"(() => {{ const s = document.getElementById({json.dumps(select_id)}); s.value = {json.dumps(value)};"
        " s.dispatchEvent(new Event('change')); })()"
    )


def grid_rows(browser: Browser) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = browser.evaluate(
        "[...document.querySelectorAll('#grid tbody tr')].map(tr => ({cell: tr.dataset.cell,"
        " outcomes: [...tr.querySelectorAll('td[data-outcome]')]"
        ".map(td => [td.dataset.runner, td.dataset.outcome, td.textContent])}))"
    )
    return rows


# The problems table's columns, as the page draws them.
SEVERITY, KIND, WHERE, SUBJECT, RUNNER, MESSAGE, FROM = range(7)


def finding_rows(browser: Browser) -> list[list[str]]:
    rows: list[list[str]] = browser.evaluate(
        "[...document.querySelectorAll('#findings tbody tr')].map(tr => [...tr.children].map(td => td.textContent))"
    )
    return rows


def test_rows(browser: Browser) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = browser.evaluate(
        "[...document.querySelectorAll('#tests tbody tr')].map(tr => ({test: tr.dataset.test, where: tr.children[1].textContent,"
        " cells: [...tr.querySelectorAll('td[data-runner]')].map(td => [td.dataset.runner, td.textContent])}))"
    )
    return rows


def check_problems_first(browser: Browser, shots: Path, name: str) -> list[list[str]]:
    """Errors first and above the fold, each row naming its runner, none listed twice; the viewport saved."""
    rows = finding_rows(browser)
    check(
        bool(rows) and rows[0][SEVERITY] == "error", f"{name}: the first problem is an error ({rows[0][KIND] if rows else '-'})"
    )
    ranks = [{"error": 0, "warning": 1, "info": 2}[r[SEVERITY]] for r in rows]
    check(ranks == sorted(ranks), f"{name}: errors, then warnings, then information")
    first = browser.evaluate(
        "(() => { const r = document.querySelector('#findings tbody tr').getBoundingClientRect();"
        " return [r.top, r.bottom, window.innerHeight]; })()"
    )
    check(first[1] <= first[2], f"{name}: the first error is above the fold (its row ends at {first[1]:.0f} of {first[2]} px)")
    sections = browser.evaluate("[...document.querySelectorAll('main > section:not([hidden]) h2')].map(h => h.textContent)")
    check(sections[0] == "Problems", f"{name}: the page opens with the problems ({sections})")
    check(all(r[RUNNER] for r in rows), f"{name}: every problem names its runner")
    check(len({tuple(r) for r in rows}) == len(rows), f"{name}: no problem is listed twice")
    shots.mkdir(parents=True, exist_ok=True)
    browser.screenshot(shots / f"{name}-top.png")
    return rows


def check_pytest_audit_page(browser: Browser, page: Path, shots: Path) -> None:
    """A pytest audit alone: titled by what it audited, no cell grid, problems first, each test with file:line."""
    browser.open(page, ready=READY)
    check(browser.console_errors() == [], "pytest-audit: no console error or policy violation")
    title = browser.evaluate("document.title")
    check(title == f"specmatrix: pytest audit of {PYTEST_PROJECT}", f"pytest-audit: the title says what was audited ({title!r})")
    hidden = browser.evaluate("[...document.querySelectorAll('#outcomes-section, #grid-section')].every(s => s.hidden)")
    check(hidden, "pytest-audit: no cell grid (nothing ran a cell)")
    rows = check_problems_first(browser, shots, "pytest-audit")
    check(
        all(r[RUNNER] in ("h100", "no runner") for r in rows), "pytest-audit: runners named (h100; none for an unscheduled file)"
    )
    tests = test_rows(browser)
    located = [t["where"] for t in tests if "::" in t["test"]]
    check(
        bool(located) and all(w.rsplit(":", 1)[-1].isdigit() for w in located),
        f"pytest-audit: each test's file:line ({located[0]})",
    )


def check_page(browser: Browser, page: Path, planted: tuple[str, str], shots: Path) -> float:
    """Every DOM check of the page built with the plants; the seconds it took to be ready."""
    skipped, dropped = planted
    matrix = load_matrix()
    runners = load_runners()
    seconds = browser.open(page, ready=READY)
    check(browser.evaluate("document.body.dataset.ready") == "true", f"the page drew itself ({seconds:.2f} s)")
    check(browser.console_errors() == [], "no console error or policy violation while loading")
    total = browser.evaluate("document.getElementById('grid').dataset.total")
    check(total == str(len(matrix.cells)), f"the grid has the matrix's {len(matrix.cells)} cells")
    heads = browser.evaluate("[...document.querySelectorAll('#grid thead th')].map(th => th.textContent)")
    check(heads == ["cell", "1-gpu-h200", "2-gpu-h200", "4-gpu-b200"], f"one column per runner: {heads[1:]}")
    inputs = browser.evaluate("document.querySelectorAll('#inputs tbody tr').length")
    check(inputs == 8, "the inputs are listed: 2 H200 reports, 3 shard reports, their coverage merge, guard audit, ledger join")
    title = browser.evaluate("document.title")
    check(title == f"specmatrix: {matrix.name} on 1-gpu-h200, 2-gpu-h200, 4-gpu-b200", f"the title names the runners ({title!r})")
    problems = check_problems_first(browser, shots, "report")
    twice = [r for r in problems if r[KIND] == "unexpected-skip" and skipped in r[MESSAGE]]
    check(
        len(twice) == 1 and twice[0][FROM] == "run report + coverage merge" and twice[0][RUNNER] == "4-gpu-b200",
        "the planted skip, stated by the shard report and the coverage merge, is one row naming both and its runner",
    )
    view = {t["test"]: t for t in test_rows(browser)}
    planted_test = next((t for t in view.values() if any("unexpected skip" in c[1] for c in t["cells"])), None)
    check(
        planted_test is not None and re.fullmatch(r"tests/test_draft_decode\.py:[0-9]+", planted_test["where"]) is not None,
        f"the test x runner view shows the skipping test with its file:line ({planted_test and planted_test['where']})",
    )

    choose(browser, "f-outcome", "U")
    rows = grid_rows(browser)
    check([r["cell"] for r in rows] == [skipped], f"outcome filter 'unexpected skip' leaves the planted cell {skipped}")
    b200 = [o for o in rows[0]["outcomes"] if o[0] == "4-gpu-b200"]
    check(b200 and b200[0][1] == "U" and "unexpected skip" in b200[0][2], "its 4-gpu-b200 square says 'unexpected skip'")
    choose(browser, "f-outcome", "N")
    never = [r["cell"] for r in grid_rows(browser)]
    check(dropped in never, f"outcome filter 'never ran' shows the cell whose result was dropped ({dropped})")
    choose(browser, "f-outcome", "")

    backend = matrix.axis("backend").values.index("trtllm_mha")
    choose(browser, "f-axis-backend", str(backend))
    want = sum(1 for c in matrix.cells if c.get("backend") == "trtllm_mha")
    shown = browser.evaluate("document.getElementById('grid').dataset.shown")
    check(shown == str(want), f"axis filter backend=trtllm_mha keeps its {want} cells")
    choose(browser, "f-runner", "2")
    heads = browser.evaluate("[...document.querySelectorAll('#grid thead th')].map(th => th.textContent)")
    check(heads == ["cell", "4-gpu-b200"], "runner filter 4-gpu-b200 leaves its column only")
    shots.mkdir(parents=True, exist_ok=True)
    browser.screenshot(shots / "report-filtered.png")
    choose(browser, "f-axis-backend", "-1")
    choose(browser, "f-runner", "-1")

    findings = finding_rows(browser)
    kinds = {row[KIND] for row in findings}
    check(any(row[KIND] == "never-ran" and dropped in row[MESSAGE] for row in findings), "the problems name the never-ran cell")
    check({"silent-skip", "never-executed"} & kinds != set(), f"guard and ledger findings are listed ({sorted(kinds)})")
    located = [row[WHERE] for row in findings if row[FROM] in ("guard audit", "ledger join")]
    check(bool(located) and all(":" in w for w in located), f"every guard and ledger finding has file:line ({located[0]})")
    browser.evaluate(f"[...document.querySelectorAll('#findings thead button')][{WHERE}].click()")
    where = [row[WHERE] for row in finding_rows(browser)]
    check(
        where == sorted(where, key=lambda w: (w.rsplit(":", 1)[0], int(w.rsplit(":", 1)[1]) if ":" in w else 0)),
        "sorting by 'where' orders the table",
    )

    choose(browser, "f-text", "")
    browser.evaluate(f"document.getElementById('f-text').value = {json.dumps(skipped)}")
    browser.evaluate("document.getElementById('f-text').dispatchEvent(new Event('input'))")
    browser.evaluate("document.querySelector('#grid tbody td[data-runner=\"4-gpu-b200\"]').click()")
    panel = browser.evaluate(
        "({hidden: document.getElementById('panel').hidden, title: document.getElementById('panel-title').textContent,"
        " text: document.getElementById('panel-body').textContent,"
        " rules: [...document.querySelectorAll('#panel-body ul.trail')]"
        ".map(ul => [...ul.querySelectorAll('li > span')].map(s => s.textContent))})"
    )
    check(not panel["hidden"] and panel["title"] == skipped, "clicking the cell opens its panel")
    b200_exp = expectations(matrix, runners["4-gpu-b200"], effective_versions(matrix, {}))[skipped]
    trail_ids = [v.rule.id for v in b200_exp.trail]
    check(
        panel["rules"][0] == trail_ids,
        f"the panel's 4-gpu-b200 trail (first: its square was clicked) is matrix.core.expect's: {trail_ids}",
    )
    check(b200_exp.outcome is Outcome.RUN and "expected RUN" in panel["text"], "the panel says the cell was expected to RUN")
    check("</script><script>window.__pwned=1</script></details>" in panel["text"], "the hostile skip reason is shown as text")
    check(browser.evaluate("window.__pwned === undefined && document.scripts.length === 2"), "and it injected no script")
    browser.screenshot(shots / "report-panel.png")
    return seconds


def check_red(browser: Browser, unplanted: Path, tampered: Path, planted: tuple[str, str]) -> None:
    """The planted checks fail on a page without the plants; an altered script does not run at all."""
    browser.open(unplanted, ready=READY)
    choose(browser, "f-outcome", "U")
    check(grid_rows(browser) == [], "red: without the plants the 'unexpected skip' filter is empty")
    # Of the never-ran kind: a guard finding may cite the same cell as the one its backend must run (its trail).
    never_ran = [row for row in finding_rows(browser) if row[KIND] == "never-ran"]
    check(not any(planted[1] in row[MESSAGE] for row in never_ran), "red: and no never-ran finding names the dropped cell")
    try:
        browser.open(tampered, ready=READY, timeout=3)
    except BrowserError:
        errors = browser.console_errors()
        check(any("Content Security Policy" in e for e in errors), "red: an altered script is refused by the page's policy")
        return
    raise CheckFailed("a page whose script was altered still ran: the Content-Security-Policy does not pin the script")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="work folder; screenshots land in OUT/screenshots")
    parser.add_argument("--screenshot", type=Path, help="also copy the page's first screen here (e.g. docs/report.png)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        binary = find_chromium()
        work: Path = args.out.resolve()
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        inputs, clean, planted = build(work)
        page, unplanted, tampered = work / "report.html", work / "unplanted.html", work / "tampered.html"
        render(inputs, page, checkout=work / "fanout")  # the fan-out's node ids are relative to its own folder
        kept = [p for p in inputs if p.parent.name not in ("reports", "coverage")]
        render(kept + sorted(clean.glob("shard-*.json")), unplanted)
        audit_page = pytest_audit_page(work)
        tampered.write_text(page.read_text(encoding="utf-8").replace('"use strict";', '"use strict"; ', 1), encoding="utf-8")
        with Browser(binary, width=1600, height=1000) as browser:
            seconds = check_page(browser, page, planted, work / "screenshots")
            check_pytest_audit_page(browser, audit_page, work / "screenshots")
            check_red(browser, unplanted, tampered, planted)
    except CheckFailed as exc:
        print(f"browser check failed: {exc}", file=sys.stderr)
        return 1
    except (BrowserError, subprocess.CalledProcessError, OSError) as exc:
        first, *rest = (str(exc) or repr(exc)).splitlines()
        print(f"browser check could not run: {first}", file=sys.stderr)
        if rest:  # a failed step's output tail
            print("\n".join(rest), file=sys.stderr)
        return 2
    if args.screenshot is not None:
        shutil.copyfile(work / "screenshots" / "report-top.png", args.screenshot)
    size = page.stat().st_size / 1e6
    print(f"browser check passed: page {size:.2f} MB, ready in {seconds:.2f} s; {time.monotonic() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
