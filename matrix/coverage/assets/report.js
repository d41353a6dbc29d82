// specmatrix coverage page: builds every element from the embedded JSON with textContent (never markup).
"use strict";
(function () {
  const PAGE = 250; // grid rows per page: the DOM stays small whatever the matrix size
  const data = JSON.parse(document.getElementById("specmatrix-data").textContent);
  const byCode = new Map(data.outcomes.map((o) => [o.code, o]));
  const cellIds = data.cells.ids;
  const state = { runner: -1, axes: data.axes.map(() => -1), outcome: "", text: "", page: 0, sort: [-1, 1] };
  let shown = [];
  let resultIndex = null;

  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (key === "text") node.textContent = value;
        else if (key === "cls") node.className = value;
        else if (key.startsWith("data-")) node.dataset[key.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = value;
        else node[key] = value;
      }
    }
    for (const child of children || []) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    return node;
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }
  function outcomeCell(code, title) {
    const o = byCode.get(code);
    return el("td", { cls: "o o-" + code, title: title, "data-outcome": code }, [
      el("span", { cls: "sym", text: o.symbol, ariaHidden: "true" }),
      " " + o.label,
    ]);
  }

  function header() {
    if (data.show_grid === false) {
      // No input is a run report: no cell ran, so the grid and the per-runner outcomes would only list the matrix.
      document.getElementById("outcomes-section").hidden = true;
      document.getElementById("grid-section").hidden = true;
    }
    document.title = "specmatrix: " + data.title;
    document.getElementById("title").textContent = "specmatrix: " + data.title;
    const grid = data.show_grid === false ? "" : cellIds.length + " cells \u00d7 " + data.runners.length + " runners of matrix " +
      data.matrix_source + "; ";
    document.getElementById("subtitle").textContent =
      grid + "page made " + data.generated + " from " + data.inputs.length + " input(s), listed at the end";
    const body = document.querySelector("#inputs tbody");
    for (const input of data.inputs) {
      body.appendChild(el("tr", {}, [
        el("td", { cls: "mono", text: input.label }),
        el("td", { text: input.kind }),
        el("td", { text: input.created + " (" + input.created_from + ")" }),
        el("td", { text: input.summary }),
      ]));
    }
    const legend = document.getElementById("legend");
    for (const o of data.outcomes) {
      legend.appendChild(el("span", { cls: "o o-" + o.code + " chip" }, [el("span", { cls: "sym", text: o.symbol }), " " + o.label]));
    }
    const totals = document.getElementById("totals");
    totals.appendChild(el("thead", {}, [el("tr", {}, [el("th", { text: "runner" }), el("th", { text: "reports" }),
      ...data.outcomes.map((o) => el("th", { text: o.label }))])]));
    const tb = totals.appendChild(el("tbody"));
    for (const r of data.runners) {
      tb.appendChild(el("tr", { "data-runner": r.name }, [
        el("td", { cls: "mono", text: r.name + (r.sm === null ? " (cpu)" : " (sm" + r.sm + ", " + r.gpus + " GPU)") }),
        el("td", { cls: "num", text: String(r.reports) }),
        ...data.outcomes.map((o) => el("td", { cls: "num" + (r.counts[o.code] ? " o o-" + o.code : ""), text: String(r.counts[o.code]) })),
      ]));
    }
  }

  function select(id, label, options, onChange) {
    const s = el("select", { id: id });
    for (const [value, text] of options) s.appendChild(el("option", { value: value, text: text }));
    s.addEventListener("change", () => onChange(s.value));
    return el("label", {}, [label + " ", s]);
  }

  function filters() {
    const form = document.getElementById("filters");
    form.addEventListener("submit", (e) => e.preventDefault());
    form.appendChild(select("f-runner", "runner", [["-1", "all"], ...data.runners.map((r, i) => [String(i), r.name])], (v) => {
      state.runner = Number(v);
      refresh();
    }));
    form.appendChild(select("f-outcome", "outcome", [["", "any"], ...data.outcomes.map((o) => [o.code, o.label])], (v) => {
      state.outcome = v;
      refresh();
    }));
    data.axes.forEach((axis, k) => {
      form.appendChild(select("f-axis-" + axis.name, axis.name, [["-1", "any"], ...axis.values.map((v, i) => [String(i), v])], (v) => {
        state.axes[k] = Number(v);
        refresh();
      }));
    });
    const text = el("input", { id: "f-text", type: "search", placeholder: "cell id contains" });
    text.addEventListener("input", () => {
      state.text = text.value;
      refresh();
    });
    form.appendChild(el("label", {}, ["cell ", text]));
  }

  function runnersShown() {
    return state.runner < 0 ? data.runners.map((_, i) => i) : [state.runner];
  }

  function keep(i, runners) {
    for (let k = 0; k < state.axes.length; k++) {
      if (state.axes[k] >= 0 && data.cells.axes[k][i] !== state.axes[k]) return false;
    }
    if (state.text && !cellIds[i].includes(state.text)) return false;
    if (state.outcome) return runners.some((r) => data.grid[r][i] === state.outcome);
    return true;
  }

  function refresh() {
    const runners = runnersShown();
    shown = [];
    for (let i = 0; i < cellIds.length; i++) if (keep(i, runners)) shown.push(i);
    state.page = 0;
    drawGrid();
  }

  function drawGrid() {
    const runners = runnersShown();
    const grid = clear(document.getElementById("grid"));
    grid.dataset.total = String(cellIds.length);
    grid.dataset.shown = String(shown.length);
    grid.appendChild(el("thead", {}, [el("tr", {}, [el("th", { text: "cell" }), ...runners.map((r) => el("th", { cls: "mono", text: data.runners[r].name }))])]));
    const body = grid.appendChild(el("tbody"));
    const first = state.page * PAGE;
    for (const i of shown.slice(first, first + PAGE)) {
      const row = body.appendChild(el("tr", { "data-cell": cellIds[i] }));
      row.appendChild(el("td", {}, [el("button", { type: "button", cls: "link mono", text: cellIds[i], "data-index": String(i) })]));
      for (const r of runners) {
        const td = row.appendChild(outcomeCell(data.grid[r][i], data.runners[r].name + ": " + byCode.get(data.grid[r][i]).label));
        td.dataset.index = String(i);
        td.dataset.runner = data.runners[r].name;
      }
    }
    const last = Math.min(first + PAGE, shown.length);
    document.getElementById("shown").textContent =
      "showing " + shown.length + " of " + cellIds.length + " cells" + (shown.length ? "; rows " + (first + 1) + "\u2013" + last : "");
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = last >= shown.length;
  }

  function results() {
    if (resultIndex === null) {
      resultIndex = new Map();
      data.results.forEach((block, b) => {
        let cell = 0;
        block.cells.forEach((delta, p) => {
          cell += delta;
          if (!resultIndex.has(cell)) resultIndex.set(cell, []);
          resultIndex.get(cell).push([b, p]);
        });
      });
    }
    return resultIndex;
  }

  function trailList(trail) {
    if (!trail.verdicts.length) return el("p", { text: "no rule applies to this cell" });
    return el("ul", { cls: "trail" }, trail.verdicts.map(([rule, ok, detail]) => {
      const r = data.rules[rule];
      return el("li", { cls: ok ? "ok" : "block" }, [
        el("strong", { text: ok ? "ok " : "SKIP " }),
        el("span", { cls: "mono", text: r.id }),
        " (" + r.kind + "): " + r.reason,
        el("br"), data.strings[detail],
        el("br"), el("small", { text: "source: " + r.source }),
      ]);
    }));
  }

  function openPanel(i, clicked) {
    const panel = document.getElementById("panel");
    const body = clear(document.getElementById("panel-body"));
    panel.dataset.cell = cellIds[i];
    document.getElementById("panel-title").textContent = cellIds[i];
    body.appendChild(el("table", { cls: "axes" }, [el("tbody", {}, data.axes.map((a, k) => el("tr", {}, [
      el("th", { text: a.name }), el("td", { cls: "mono", text: data.cells.axes[k][i] < 0 ? "\u2013" : a.values[data.cells.axes[k][i]] }),
    ])))]));
    // The runner whose square was clicked comes first; the others follow in the grid's order.
    const order = data.runners.map((_, r) => r).sort((a, b) => (data.runners[b].name === clicked) - (data.runners[a].name === clicked));
    order.forEach((r) => {
      const runner = data.runners[r];
      const trail = data.trails[data.trail_index[r][i]];
      const code = data.grid[r][i];
      body.appendChild(el("h3", {}, [el("span", { cls: "mono", text: runner.name }), ": ",
        el("span", { cls: "o o-" + code + " chip" }, [el("span", { cls: "sym", text: byCode.get(code).symbol }), " " + byCode.get(code).label]),
        " (expected " + trail.outcome.toUpperCase() + "; implementation " + (trail.impl || "-") + ")"]));
      body.appendChild(trailList(trail));
    });
    const rows = (results().get(i) || []).map(([b, p]) => {
      const block = data.results[b];
      const test = data.strings[block.tests[p]];
      const why = [data.strings[block.reasons[p]], data.strings[block.messages[p]]].filter((s) => s).join("; ");
      return el("tr", {}, [
        el("td", { cls: "mono", text: data.runners[block.runner].name }),
        el("td", { cls: "mono", text: block.nodeids[String(p)] || test + "[" + cellIds[i] + "]" }),
        el("td", { text: data.result_codes[block.status[p]] }),
        el("td", { text: why }),
        el("td", { cls: "mono", text: block.source }),
      ]);
    });
    body.appendChild(el("h3", { text: "Tests that ran it: " + rows.length }));
    body.appendChild(rows.length
      ? el("table", { id: "panel-tests" }, [el("thead", {}, [el("tr", {}, ["runner", "test", "status", "skip reason / message", "report"].map((t) => el("th", { text: t })))]), el("tbody", {}, rows)])
      : el("p", { text: "no report has a result for this cell" }));
    panel.hidden = false;
  }

  // Problems are listed in the page data's order (errors, then warnings, then information; what ran before what a
  // static audit predicts) until a heading is clicked.
  const COLUMNS = ["severity", "kind", "where", "test / subject", "runner", "message", "from"];
  const SEVERITY_RANK = { error: 0, warning: 1, info: 2 };
  const ROW_INDEX = data.findings.map((_, k) => k);
  function findingKey(row, column, k) {
    if (column < 0) return [k];
    if (column === 0) return [SEVERITY_RANK[row[2]] ?? 3, k];
    if (column === 2) return [row[3], row[4] || 0];
    return [[row[2], row[1], row[3], row[5], row[6], row[7], row[0]][column]];
  }
  function compare(a, b) {
    for (let k = 0; k < a.length; k++) {
      if (a[k] < b[k]) return -1;
      if (a[k] > b[k]) return 1;
    }
    return 0;
  }
  function drawFindings() {
    const table = clear(document.getElementById("findings"));
    const [column, direction] = [state.sort[0], state.sort[1]];
    const rows = ROW_INDEX.slice().sort((a, b) => direction * compare(findingKey(data.findings[a], column, a), findingKey(data.findings[b], column, b)))
      .map((k) => data.findings[k]);
    table.appendChild(el("thead", {}, [el("tr", {}, COLUMNS.map((name, k) => {
      const th = el("th", { ariaSort: k === column ? (direction > 0 ? "ascending" : "descending") : "none" });
      const button = th.appendChild(el("button", { type: "button", cls: "link", text: name + (k === column ? (direction > 0 ? " \u25b2" : " \u25bc") : "") }));
      button.addEventListener("click", () => {
        state.sort = [k, k === column ? -direction : 1];
        drawFindings();
      });
      return th;
    }))]));
    table.appendChild(el("tbody", {}, rows.map((row) => el("tr", { cls: "sev-" + row[2], "data-kind": row[1] }, [
      el("td", { text: row[2] }),
      el("td", { cls: "mono nowrap", text: row[1] }),
      el("td", { cls: "mono", text: row[3] ? row[3] + (row[4] ? ":" + row[4] : "") : "" }),
      el("td", { cls: "mono", text: row[5] }),
      el("td", { cls: "mono", text: row[6] }),
      el("td", { text: row[7] }),
      el("td", { text: row[0] }),
    ]))));
    const counts = {};
    for (const row of data.findings) counts[row[2]] = (counts[row[2]] || 0) + 1;
    const order = ["error", "warning", "info"].filter((k) => counts[k]);
    document.getElementById("findings-count").textContent = data.findings.length
      ? data.findings.length + " problem(s): " + order.map((k) => counts[k] + " " + (k === "info" ? "informational" : k + (counts[k] > 1 ? "s" : ""))).join(", ")
      : "no problem found";
  }

  const TEST_ROWS = 2000; // the view draws this many tests; the count says how many more there are
  function drawTests() {
    const view = data.tests;
    const table = clear(document.getElementById("tests"));
    if (!view.rows.length) {
      document.getElementById("tests-section").hidden = true;
      return;
    }
    table.appendChild(el("thead", {}, [el("tr", {}, [el("th", { text: "test" }), el("th", { text: "where" }),
      ...view.runners.map((name) => el("th", { cls: "mono", text: name }))])]));
    const body = table.appendChild(el("tbody"));
    for (const row of view.rows.slice(0, TEST_ROWS)) {
      const cells = view.runners.map(() => []);
      for (const [runner, label, severity] of row.cells) cells[runner].push(el("span", { cls: "chip sev-" + severity, text: label }));
      body.appendChild(el("tr", { cls: "worst-" + row.worst, "data-test": row.test }, [
        el("td", { cls: "mono", text: row.test }),
        el("td", { cls: "mono nowrap", text: row.where }),
        ...cells.map((chips, r) => el("td", { "data-runner": view.runners[r] }, chips)),
      ]));
    }
    const worse = view.rows.filter((r) => r.worst === "error").length;
    document.getElementById("tests-count").textContent = view.rows.length + " test(s), " + worse + " with an error on some runner" +
      (view.rows.length > TEST_ROWS ? "; the first " + TEST_ROWS + " shown" : "");
  }

  // The join of a pytest audit with its runs: a test x runner table, each cell "static -> observed".
  const JOIN_WORDS = { contradicted: "CONTRADICTED", absent: "absent",
    "not-collected": "not collected", "not-judged": "not judged", resolved: "resolved", confirmed: "confirmed" };
  function drawRuns() {
    const runs = data.runs;
    if (!runs || !runs.tests.length) return;
    document.getElementById("runs-section").hidden = false;
    document.getElementById("runs-count").textContent = runs.tests.length + " test(s) on " + runs.runners.length +
      " runner(s): " + Object.entries(runs.counts).map(([k, n]) => n + " " + k).join(", ");
    const table = clear(document.getElementById("runs"));
    table.appendChild(el("thead", {}, [el("tr", {}, [el("th", { text: "test" }), el("th", { text: "where" }),
      ...runs.runners.map((name) => el("th", { cls: "mono", text: name }))])]));
    table.appendChild(el("tbody", {}, runs.tests.map((t) => el("tr", { "data-test": t.test }, [
      el("td", { cls: "mono", text: t.test }),
      el("td", { cls: "mono", text: t.where }),
      ...t.cells.map((c, k) => c === null
        ? el("td", { cls: "join-none", text: "\u2014" })
        : el("td", { cls: "join join-" + c[2], title: runs.runners[k] + ": " + c[3], "data-join": c[2] }, [
          el("strong", { text: JOIN_WORDS[c[2]] || c[2] }), el("br"),
          "static " + c[0] + " \u2192 run " + c[1],
          ...(c[3] ? [el("br"), el("small", { text: c[3] })] : []),
        ])),
    ]))));
  }

  function wire() {
    document.getElementById("grid").addEventListener("click", (event) => {
      const target = event.target.closest("[data-index]");
      if (target) openPanel(Number(target.dataset.index), target.dataset.runner);
    });
    document.getElementById("panel-close").addEventListener("click", () => {
      document.getElementById("panel").hidden = true;
    });
    document.getElementById("prev").addEventListener("click", () => {
      state.page -= 1;
      drawGrid();
    });
    document.getElementById("next").addEventListener("click", () => {
      state.page += 1;
      drawGrid();
    });
  }

  try {
    header();
    filters();
    wire();
    drawFindings();
    drawRuns();
    drawTests();
    refresh();
    performance.mark("specmatrix-ready");
    document.body.dataset.ready = "true";
  } catch (error) {
    document.getElementById("error").textContent = "this page could not be drawn: " + error;
    document.body.dataset.ready = "error";
  }
})();
