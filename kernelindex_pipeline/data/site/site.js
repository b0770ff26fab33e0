/* The site's charts, filters and compare view, drawn in the browser from one kernel's compact JSON
   (reporting/site.py documents the layout). Loaded by <script> tags only, so it works from file://. */
(function () {
  "use strict";
  const KI = (window.KI = window.KI || {});
  const METRIC_TITLE = { latency: "latency", peak_memory: "peak memory" };
  const P = { version: 0, median: 1, p20: 2, p80: 3, date: 4, run: 5, source: 6, commit: 7, pct: 8, folded: 9, caveat: 10, pctCaveat: 11, origin: 12 };

  KI.load = function (data) {
    KI.data = data;
    const start = () => (data.page === "regressions" ? regressionsPage(data) : data.cells ? landing(data) : kernelPage(data));
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  };

  // ------------------------------------------------------------------ units and drawing
  function unitFor(metric, values) {
    const top = Math.max(...values.filter((v) => v != null), 0);
    if (metric === "peak_memory") {
      const units = [[2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"], [1, "bytes"]];
      return units.find(([f]) => top >= f) || units[units.length - 1];
    }
    const units = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];
    return units.find(([f]) => top >= f) || units[units.length - 1];
  }
  const round = (v) => (v == null ? null : Number(v.toPrecision(4)));

  function draw(el, spec) {
    spec.$schema = "https://vega.github.io/schema/vega-lite/v6.json";
    spec.config = Object.assign({ font: "system-ui, sans-serif", legend: { orient: "bottom", columns: 3 } }, spec.config);
    el.chartRows = spec.data ? spec.data.values : null; // what the chart draws, for the browser tests
    el.chartTitle = spec.title || "";
    return vegaEmbed(el, spec, { actions: false, renderer: "svg" })
      .then(() => { el.dataset.rendered = "1"; })
      .catch((err) => { el.dataset.rendered = "error"; console.error("chart failed:", el.id || el.className, err); });
  }

  // the records' own units (latencyNs, peak memory in bytes): what a tooltip's raw value is in
  const RAW_UNIT = { latency: "ns", peak_memory: "bytes" };
  const RUN_TOOLTIP = [
    { field: "provider" }, { field: "version", title: "Liger" }, { field: "case", title: "workload" },
    { field: "shown", title: "value" }, { field: "raw", title: "median (raw)" }, { field: "band", title: "p20–p80 (raw)" },
    { field: "date" }, { field: "source" }, { field: "commit" }, { field: "run", title: "run digest" }, { field: "caveat" },
    { field: "from", title: "from (click the point)" },
  ];
  // where a point's run came from (reporting/site.py: the data's `origins`): a click on the point opens it
  const HREF = { field: "origin" };

  // A point with a caveat (implausible efficiency, a forward that computes gradients: reporting/efficiency.py
  // point_caveats) is ringed, and its tooltip says why.
  function ringLayer(x, y, tooltip) {
    return { name: "caveat", transform: [{ filter: "datum.ringed" }],
      mark: { type: "point", shape: "circle", filled: false, size: 170, strokeWidth: 2, color: "#cf222e" },
      encoding: { x, y, tooltip } };
  }

  // ------------------------------------------------------------------ landing
  function landing(d) {
    const el = document.getElementById("overview-chart");
    if (!el) return;
    draw(el, {
      width: 700, height: 220, data: { values: d.cells },
      mark: { type: "bar", tooltip: true },
      encoding: {
        x: { field: "version", type: "ordinal", sort: d.versions, title: "Liger version" },
        y: { field: "runs", type: "quantitative", title: "runs drawn" },
        color: { field: "gpu", type: "nominal", title: "GPU" },
        tooltip: [{ field: "gpu" }, { field: "version" }, { field: "runs" }],
      },
    });
  }

  // ------------------------------------------------------------------ kernel page
  function kernelPage(d) {
    const series = d.series.map((row, i) => ({
      id: i, gpu: row[0], provider: row[1], mode: row[2], metric: d.metrics[row[3]], workload: row[4], env: row[5],
      points: d.points[i],
    }));
    const state = { gpu: "all", provider: "all", mode: "all", version: "newest", workload: "all" };
    new URLSearchParams(location.hash.slice(1)).forEach((value, key) => {
      if (key in state) state[key] = value;
    });
    const options = {
      gpu: d.gpus.map((g) => [g.slug, g.name]),
      provider: d.providers.map((p) => [p.name, p.role === "baseline" ? p.name + " (baseline)" : p.name]),
      mode: d.modes.map((m) => [m, m]),
      version: d.versions.map((v) => [v, v]),
      workload: d.workloads.map((w) => [w.case + (w.category ? " · " + w.category : ""), w.case + (w.category ? " · " + w.category : "")]),
    };
    for (const key of Object.keys(state)) {
      const select = document.getElementById("f-" + key);
      const first = key === "version" ? ["newest", "newest of each series"] : ["all", "all"];
      fill(select, [first, ...dedupe(options[key])], state[key]);
      select.addEventListener("change", () => {
        state[key] = select.value;
        history.replaceState(null, "", "#" + new URLSearchParams(Object.entries(state).filter(([k, v]) => v !== "all" && v !== "newest")));
        renderGrid(d, series, state);
      });
    }
    const note = document.getElementById("kernel-note");
    note.textContent = `${series.length} series on ${d.gpus.length} GPU(s), Liger ${d.versions.join(", ")}. ` +
      "Hover a point for its run; a chart is drawn when it scrolls into view.";
    renderGrid(d, series, state);
    setupCompare(d, series);
  }

  function dedupe(pairs) {
    const seen = new Set();
    return pairs.filter(([v]) => (seen.has(v) ? false : seen.add(v)));
  }

  function fill(select, pairs, chosen) {
    select.replaceChildren(...pairs.map(([value, label]) => {
      const o = document.createElement("option");
      o.value = value; o.textContent = label; o.selected = value === chosen;
      return o;
    }));
    if (![...select.options].some((o) => o.selected) && select.options.length) select.options[0].selected = true;
  }

  const workloadLabel = (d, w) => d.workloads[w].case + (d.workloads[w].category ? " · " + d.workloads[w].category : "");

  function renderGrid(d, series, state) {
    const grid = document.getElementById("chart-grid");
    grid.replaceChildren();
    if (KI.observer) KI.observer.disconnect();
    KI.observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (e.isIntersecting && !e.target.dataset.drawn) {
          e.target.dataset.drawn = "1";
          drawFigure(d, e.target, state);
        }
      }
    }, { rootMargin: "300px" });
    const pick = (value, index, names) => value === "all" || names[index] === value;
    let count = 0;
    d.sweeps.forEach((sweep, si) => {
      if (!pick(state.gpu, sweep.gpu, d.gpus.map((g) => g.slug))) return;
      const members = new Map(sweep.members.map(([w, x]) => [w, x]));
      if (state.workload !== "all" && ![...members.keys()].some((w) => workloadLabel(d, w) === state.workload)) return;
      d.modes.forEach((mode, mi) => {
        if (!pick(state.mode, mi, d.modes)) return;
        const section = [];
        for (const metric of d.metrics) {
          const chosen = series.filter((s) => s.gpu === sweep.gpu && s.mode === mi && s.metric === metric &&
            members.has(s.workload) && pick(state.provider, s.provider, d.providers.map((p) => p.name)));
          if (!chosen.length) continue;
          const kinds = [metric === "latency" ? "latency" : "memory", "versions"];
          const roles = new Set(chosen.map((s) => d.providers[s.provider].role));
          if (roles.has("liger") && roles.has("baseline")) kinds.push(metric === "latency" ? "speedup" : "saving");
          if (metric === "latency" && chosen.some((s) => s.points.some((p) => p[P.pct] != null))) kinds.push("efficiency");
          for (const kind of kinds) section.push({ kind, sweep, si, mode, metric, series: chosen, members });
        }
        if (!section.length) return;
        const block = document.createElement("div");
        block.className = "sweep";
        const h = document.createElement("h3");
        h.textContent = `${d.gpus[sweep.gpu].name} · ${mode} · ${sweep.axis} swept · ${sweep.label}`;
        block.append(h);
        for (const plan of section) {
          const fig = document.createElement("figure");
          fig.className = "chart";
          Object.assign(fig.dataset, { chartKind: plan.kind, gpu: d.gpus[sweep.gpu].slug, mode, metric: plan.metric });
          fig.plan = plan;
          const box = document.createElement("div");
          box.className = "vega";
          fig.append(box);
          block.append(fig);
          KI.observer.observe(fig);
          count += 1;
        }
        grid.append(block);
      });
    });
    grid.dataset.figureCount = String(count);
    if (!count) grid.textContent = "No series match these filters.";
  }

  function pointAt(s, state, d) {
    if (state.version === "newest") return s.points[s.points.length - 1];
    return s.points.find((p) => d.versions[p[P.version]] === state.version);
  }

  function runRow(d, s, p, unit, x) {
    const [f, name] = unit;
    return {
      sid: s.id, line: `${s.provider}|${s.env}`, provider: d.providers[s.provider].name, role: d.providers[s.provider].role, x,
      case: workloadLabel(d, s.workload), version: d.versions[p[P.version]], value: round(p[P.median] / f),
      lo: p[P.p20] == null ? null : round(p[P.p20] / f), hi: p[P.p80] == null ? null : round(p[P.p80] / f),
      shown: `${round(p[P.median] / f)} ${name}`, raw: `${p[P.median]} ${RAW_UNIT[s.metric] || ""}`.trim(),
      band: p[P.p20] == null ? "–" : `${p[P.p20]}–${p[P.p80]} ${RAW_UNIT[s.metric] || ""}`.trim(), date: p[P.date], source: p[P.source] || "–",
      commit: p[P.commit] || "not recorded", run: p[P.run], pct: p[P.pct],
      caveat: p[P.caveat] || "–", ringed: Boolean(p[P.caveat]),
      origin: p[P.origin] == null ? null : d.origins[p[P.origin]], from: p[P.origin] == null ? "not known" : d.origins[p[P.origin]],
    };
  }

  function xEncoding(plan, d) {
    const sweep = plan.sweep;
    if (sweep.categories) {
      return { field: "xlabel", type: "ordinal", sort: sweep.categories, title: sweep.axis };
    }
    const xs = [...plan.members.values()];
    const log = xs.length > 2 && Math.min(...xs) > 0 && Math.max(...xs) / Math.min(...xs) >= 8;
    return { field: "x", type: "quantitative", title: sweep.axis, scale: log ? { type: "log", base: 2 } : { zero: false } };
  }

  function drawFigure(d, figure, state) {
    const plan = figure.plan;
    const box = figure.querySelector(".vega");
    const label = (r) => (plan.sweep.categories ? plan.sweep.categories[r.x] : r.x);
    const values = plan.series.flatMap((s) => s.points.map((p) => p[P.median]));
    const unit = unitFor(plan.metric, values);
    const color = { field: "provider", type: "nominal", title: "provider" };
    const x = xEncoding(plan, d);
    let spec;
    if (plan.kind === "latency" || plan.kind === "memory") {
      const rows = plan.series.map((s) => [s, pointAt(s, state, d)]).filter(([, p]) => p)
        .map(([s, p]) => runRow(d, s, p, unit, plan.members.get(s.workload)));
      rows.forEach((r) => { r.xlabel = label(r); });
      spec = {
        title: `${METRIC_TITLE[plan.metric]} (${unit[1]}) at ${state.version === "newest" ? "each series' newest version" : "Liger " + state.version}`,
        data: { values: rows },
        layer: [
          { transform: [{ filter: "datum.lo != null" }], mark: { type: "area", opacity: 0.15 },
            encoding: { x, y: { field: "lo", type: "quantitative" }, y2: { field: "hi" }, color, detail: { field: "line" } } },
          { mark: { type: "line", point: true },
            encoding: { x, y: { field: "value", type: "quantitative", title: unit[1], scale: { zero: false } }, color,
              detail: { field: "line" }, tooltip: RUN_TOOLTIP, href: HREF } },
          ringLayer(x, { field: "value", type: "quantitative" }, RUN_TOOLTIP),
        ],
      };
    } else if (plan.kind === "versions") {
      const target = versionsWorkload(d, plan, state);
      const versionX = { field: "version", type: "ordinal", sort: d.versions, title: "Liger version" };
      const rows = plan.series.filter((s) => s.workload === target)
        .flatMap((s) => s.points.map((p) => runRow(d, s, p, unit, null)));
      spec = {
        title: `${METRIC_TITLE[plan.metric]} (${unit[1]}) across Liger versions · ${workloadLabel(d, target)}`,
        data: { values: rows },
        layer: [
          { mark: { type: "line", point: true },
            encoding: { x: versionX, y: { field: "value", type: "quantitative", title: unit[1], scale: { zero: false } }, color,
              detail: { field: "sid" }, tooltip: RUN_TOOLTIP, href: HREF } },
          ringLayer(versionX, { field: "value", type: "quantitative" }, RUN_TOOLTIP),
        ],
      };
    } else if (plan.kind === "efficiency") {
      const rows = plan.series.map((s) => [s, pointAt(s, state, d)]).filter(([, p]) => p && p[P.pct] != null)
        .map(([s, p]) => {
          const r = runRow(d, s, p, unit, plan.members.get(s.workload));
          const caveats = [p[P.pctCaveat], p[P.caveat]].filter(Boolean);  // why this reading is implausible first
          return Object.assign(r, { caveat: caveats.join("; ") || "–", ringed: caveats.length > 0 });
        });
      rows.forEach((r) => { r.xlabel = label(r); });
      spec = {
        title: "% of the GPU's datasheet peak", data: { values: rows },
        layer: [
          { mark: { type: "line", point: true },
            encoding: { x, y: { field: "pct", type: "quantitative", title: "% of peak" }, color, detail: { field: "line" },
              tooltip: [{ field: "pct", title: "% of peak" }, ...RUN_TOOLTIP], href: HREF } },
          ringLayer(x, { field: "pct", type: "quantitative" }, [{ field: "pct", title: "% of peak" }, ...RUN_TOOLTIP]),
        ],
      };
    } else {
      spec = comparisonSpec(d, plan, state, unit, x, label);
    }
    spec.width = 380;
    spec.height = 220;
    return draw(box, spec);
  }

  function versionsWorkload(d, plan, state) {
    const onSweep = [...plan.members.entries()].filter(([w]) => plan.series.some((s) => s.workload === w));
    const chosen = onSweep.find(([w]) => workloadLabel(d, w) === state.workload);
    if (chosen) return chosen[0];
    onSweep.sort((a, b) => b[1] - a[1]);
    return onSweep[0][0]; // the largest x: where differences show most
  }

  function comparisonSpec(d, plan, state, unit, x, label) {
    // Liger provider over each baseline at the same workload and environment, at the chosen (or newest) version
    const rows = [];
    const byKey = new Map();
    for (const s of plan.series) {
      const key = `${s.workload}|${s.env}`;
      if (!byKey.has(key)) byKey.set(key, []);
      byKey.get(key).push(s);
    }
    for (const group of byKey.values()) {
      for (const l of group.filter((s) => d.providers[s.provider].role === "liger")) {
        for (const b of group.filter((s) => d.providers[s.provider].role === "baseline")) {
          // at a chosen version both points of it; at "newest", the newest version both measured
          const both = (p) => b.points.find((q) => q[P.version] === p[P.version]);
          const lp = state.version === "newest" ? [...l.points].reverse().find(both) : pointAt(l, state, d);
          const bp = lp && both(lp);
          if (!lp || !bp) continue;
          const value = plan.kind === "speedup" ? bp[P.median] / lp[P.median]
            : (100 * (bp[P.median] - lp[P.median])) / bp[P.median];
          const r = { sid: `${l.provider}/${b.provider}|${l.env}`, pair: `${d.providers[l.provider].name} vs ${d.providers[b.provider].name}`,
            x: plan.members.get(l.workload), value: round(value), version: d.versions[lp[P.version]],
            case: workloadLabel(d, l.workload), liger: String(lp[P.median]), baseline: String(bp[P.median]),
            date: lp[P.date], commit: lp[P.commit] || "not recorded",
            caveat: [...new Set([lp[P.caveat], bp[P.caveat]].filter(Boolean))].join("; ") || "–",
            ringed: Boolean(lp[P.caveat] || bp[P.caveat]) };
          r.xlabel = label(r);
          rows.push(r);
        }
      }
    }
    const pairTooltip = [{ field: "pair" }, { field: "value" }, { field: "version", title: "Liger" }, { field: "case", title: "workload" },
      { field: "liger", title: "Liger (raw)" }, { field: "baseline", title: "baseline (raw)" }, { field: "date" }, { field: "commit" },
      { field: "caveat" }];
    return {
      title: plan.kind === "speedup" ? "speed-up: baseline median / Liger median" : "memory saving: (baseline − Liger) / baseline, %",
      data: { values: rows },
      layer: [
        { mark: { type: "rule", strokeDash: [4, 4], color: "#888" },
          encoding: { y: { datum: plan.kind === "speedup" ? 1 : 0 } } },
        { mark: { type: "line", point: true },
          encoding: { x, y: { field: "value", type: "quantitative", title: plan.kind === "speedup" ? "×" : "%" },
            color: { field: "pair", type: "nominal", title: "" }, detail: { field: "sid" },
            tooltip: pairTooltip } },
        ringLayer(x, { field: "value", type: "quantitative" }, pairTooltip),
      ],
    };
  }

  // ------------------------------------------------------------------ compare view
  function setupCompare(d, series) {
    const $ = (k) => document.getElementById("c-" + k);
    const c = { by: "version", mode: d.modes[0], provider: null, metric: "latency", fixed: null, a: null, b: null };
    const liger = d.providers.find((p) => p.role === "liger") || d.providers[0];
    c.provider = liger.name;
    // two GPUs when no GPU of this provider has two versions (a single CI file per GPU)
    const ligerSeries = series.filter((s) => d.providers[s.provider].name === c.provider && s.metric === c.metric);
    const versionsPerGpu = d.gpus.map((g, i) => new Set(ligerSeries.filter((s) => s.gpu === i).flatMap((s) => s.points.map((p) => p[P.version]))).size);
    if (Math.max(0, ...versionsPerGpu) < 2 && d.gpus.length > 1) c.by = "gpu";
    const refresh = () => {
      fill($("by"), [["version", "two Liger versions on one GPU"], ["run", "two runs (commits) on one GPU"],
        ["gpu", "two GPUs at one Liger version"]], c.by);
      fill($("mode"), d.modes.map((m) => [m, m]), c.mode);
      fill($("provider"), d.providers.map((p) => [p.name, p.name]), c.provider);
      fill($("metric"), d.metrics.filter((m) => series.some((s) => s.metric === m)).map((m) => [m, METRIC_TITLE[m]]), c.metric);
      const matching = series.filter((s) => d.modes[s.mode] === c.mode && d.providers[s.provider].name === c.provider && s.metric === c.metric);
      const gpus = d.gpus.map((g, i) => [g.slug, g.name, i]).filter(([, , i]) => matching.some((s) => s.gpu === i));
      const versionsOf = (filter) => d.versions.filter((v, vi) => matching.some((s) => filter(s) && s.points.some((p) => p[P.version] === vi)));
      let fixedChoices, sides;
      if (c.by === "run") {
        fixedChoices = gpus.map(([slug, name]) => [slug, name]);
        if (!fixedChoices.some(([v]) => v === c.fixed)) c.fixed = fixedChoices.length ? fixedChoices[0][0] : null;
        sides = runsOn(d, matching, d.gpus.findIndex((g) => g.slug === c.fixed));
      } else if (c.by === "version") {
        fixedChoices = gpus.map(([slug, name]) => [slug, name]);
        if (!fixedChoices.some(([v]) => v === c.fixed)) {
          const rich = gpus.map(([slug, , i]) => [slug, versionsOf((s) => s.gpu === i).length]).sort((a, b) => b[1] - a[1]);
          c.fixed = rich.length ? rich[0][0] : null;
        }
        const gi = d.gpus.findIndex((g) => g.slug === c.fixed);
        sides = versionsOf((s) => s.gpu === gi).map((v) => [v, v]);
      } else {
        fixedChoices = versionsOf(() => true).map((v) => [v, v]);
        if (!fixedChoices.some(([v]) => v === c.fixed)) {
          // the version measured on the most GPUs (the newest of those): a comparison needs two
          const gpusAt = (v) => gpus.filter(([, , i]) => matching.some((s) => s.gpu === i && s.points.some((p) => d.versions[p[P.version]] === v))).length;
          const ranked = fixedChoices.map(([v], i) => [v, gpusAt(v), i]).sort((x, y) => y[1] - x[1] || y[2] - x[2]);
          c.fixed = ranked.length ? ranked[0][0] : null;
        }
        const vi = d.versions.indexOf(c.fixed);
        sides = gpus.filter(([, , i]) => matching.some((s) => s.gpu === i && s.points.some((p) => p[P.version] === vi))).map(([slug, name]) => [slug, name]);
      }
      fill($("fixed"), fixedChoices, c.fixed);
      if (!sides.some(([v]) => v === c.a)) c.a = sides.length > 1 ? sides[sides.length - 2][0] : (sides[0] || [null])[0];
      if (!sides.some(([v]) => v === c.b)) c.b = (sides[sides.length - 1] || [null])[0];
      fill($("a"), sides, c.a);
      fill($("b"), sides, c.b);
      drawCompare(d, matching, c);
    };
    for (const key of Object.keys(c)) {
      $(key).addEventListener("change", () => { c[key] = $(key).value; refresh(); });
    }
    refresh();
  }

  const runKey = (p) => `${p[P.source]}|${p[P.version]}`;

  function runsOn(d, matching, gi) {
    // the runs (source labels) measured on GPU gi, oldest first, named by version and commit
    const runs = new Map();
    for (const s of matching) {
      if (s.gpu !== gi) continue;
      for (const p of s.points) {
        if (p[P.source] == null) continue;
        const key = runKey(p);  // a source run of one version (a relabelled copy is another run)
        if (runs.has(key)) continue;
        const commit = p[P.commit] ? ` (${String(p[P.commit]).slice(0, 7)})` : "";
        runs.set(key, [String(p[P.date] || ""), `${d.versions[p[P.version]]}${commit} ${String(p[P.date] || "").slice(0, 10)}`]);
      }
    }
    return [...runs.entries()].sort((a, b) => a[1][0].localeCompare(b[1][0])).map(([key, [, label]]) => [key, label]);
  }

  function compareSide(d, matching, c, side) {
    // side value: a version (by version, on GPU c.fixed), a run's source label (by run, on GPU c.fixed) or a
    // GPU slug (by GPU, at version c.fixed)
    const gpu = c.by === "gpu" ? side : c.fixed;
    const gi = d.gpus.findIndex((g) => g.slug === gpu);
    const vi = d.versions.indexOf(c.by === "version" ? side : c.fixed);
    const wanted = c.by === "run" ? (pt) => runKey(pt) === side : (pt) => pt[P.version] === vi;
    const found = new Map();
    for (const s of matching) {
      if (s.gpu !== gi || found.has(s.workload)) continue;
      const p = s.points.find(wanted);
      if (p) found.set(s.workload, [s, p]);
    }
    return found;
  }

  // a compared value, linked to where its run came from where that is known
  const linked = (r) => (r.origin ? `<a class="origin" href="${esc(r.origin)}">${r.value}</a>` : String(r.value));

  // Detection's changes of one series between two of its runs (reporting/site.py: the data's `changes`, the
  // regressions page's ratio and 95 % interval), each as B / A: a change measured from B to A is inverted.
  // null: A and B are not one series (two GPUs), nothing to say.
  function detectedBetween(d, sa, pa, sb, pb) {
    if (sa.id !== sb.id) return null;
    const [da, db] = [String(pa[P.date] || ""), String(pb[P.date] || "")];
    const [lo, hi] = da <= db ? [da, db] : [db, da];
    return (d.changes || []).filter((ch) => ch[0] === sa.id && ch[1] >= lo && ch[2] <= hi)
      .map(([, before, after, ratio, low, high, id]) => (da <= db ? { ratio, low, high, id, after }
        : { ratio: round(1 / ratio), low: round(1 / high), high: round(1 / low), id, after }));
  }
  const detectedText = (found) => (found == null ? "–" : found.length === 0 ? "none (within noise)"
    : found.map((f) => `×${f.ratio} [${f.low}–${f.high}]`).join(" · "));

  function drawCompare(d, matching, c) {
    const table = document.getElementById("compare-table");
    const A = compareSide(d, matching, c, c.a);
    const B = compareSide(d, matching, c, c.b);
    const both = [...A.keys()].filter((w) => B.has(w))
      .sort((x, y) => workloadLabel(d, x).localeCompare(workloadLabel(d, y), "en", { numeric: true }));
    const unit = unitFor(c.metric, both.flatMap((w) => [A.get(w)[1][P.median], B.get(w)[1][P.median]]));
    const runLabel = (side) => (runsOn(d, matching, d.gpus.findIndex((g) => g.slug === c.fixed)).find(([k]) => k === side) || [side, side])[1];
    const name = (side) => (c.by === "version" ? "Liger " + side : c.by === "run" ? runLabel(side)
      : (d.gpus.find((g) => g.slug === side) || { name: side }).name);
    const values = [];
    const ratios = [];
    const rows = [`<tr><th>workload</th><th>A: ${esc(name(c.a))} (${unit[1]})</th><th>B: ${esc(name(c.b))} (${unit[1]})</th><th>B / A</th>` +
      "<th>detected change between them, B / A [95 %] (the regressions page's)</th></tr>"];
    for (const w of both) {
      const [sa, pa] = A.get(w);
      const [sb, pb] = B.get(w);
      const ra = runRow(d, sa, pa, unit, null);
      const rb = runRow(d, sb, pb, unit, null);
      ra.side = "A: " + name(c.a);
      rb.side = "B: " + name(c.b);
      values.push(ra, rb);
      const ratio = pb[P.median] / pa[P.median];
      ratios.push({ case: ra.case, ratio: round(ratio), a: ra.raw, b: rb.raw, dateA: ra.date, dateB: rb.date,
        commitA: ra.commit, commitB: rb.commit });
      const found = detectedBetween(d, sa, pa, sb, pb);
      rows.push(`<tr class="compare-row" data-workload="${esc(ra.case)}" data-ratio="${ratio}"><td>${esc(ra.case)}</td>` +
        `<td class="num">${linked(ra)}</td><td class="num">${linked(rb)}</td><td class="num ${ratio > 1.05 ? "worse" : ratio < 0.95 ? "better" : ""}">×${round(ratio)}</td>` +
        `<td class="detected" data-changes="${esc(JSON.stringify(found))}">${esc(detectedText(found))}</td></tr>`);
    }
    table.innerHTML = both.length ? rows.join("") : '<tr><td>No workload has both sides: choose other A and B.</td></tr>';
    table.dataset.rows = String(both.length);
    const order = both.map((w) => workloadLabel(d, w));
    const x = { field: "case", type: "ordinal", sort: order, title: "workload", axis: { labelAngle: -40, labelLimit: 140 } };
    draw(document.getElementById("compare-values"), {
      title: `${METRIC_TITLE[c.metric]} (${unit[1]})`, width: 420, height: 220, data: { values },
      mark: { type: "line", point: true },
      encoding: { x, y: { field: "value", type: "quantitative", title: unit[1], scale: { zero: false } },
        color: { field: "side", type: "nominal", title: "" }, tooltip: [{ field: "side" }, ...RUN_TOOLTIP] },
    });
    draw(document.getElementById("compare-ratio"), {
      title: "B / A (above 1: B is larger)", width: 420, height: 220, data: { values: ratios },
      layer: [
        { mark: { type: "rule", strokeDash: [4, 4], color: "#888" }, encoding: { y: { datum: 1 } } },
        { mark: { type: "line", point: true },
          encoding: { x, y: { field: "ratio", type: "quantitative", title: "B / A", scale: { zero: false }, axis: { format: ".3~f" } },
            tooltip: [{ field: "case", title: "workload" }, { field: "ratio", title: "B / A" }, { field: "a", title: "A (raw)" },
              { field: "b", title: "B (raw)" }, { field: "dateA", title: "A date" }, { field: "dateB", title: "B date" },
              { field: "commitA", title: "A commit" }, { field: "commitB", title: "B commit" }] } },
      ],
    });
  }

  // ------------------------------------------------------------------ regressions page
  // Each change's trend chart (and the host effects chart) is drawn when its figure scrolls into view: a page of
  // hundreds of changes opens at once. Layout of the data: reporting/regressions_page.py.
  function regressionsPage(d) {
    const observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting || e.target.dataset.drawn) continue;
        e.target.dataset.drawn = "1";
        observer.unobserve(e.target);
        const f = e.target;
        const spec = f.id === "host-effects" ? hostSpec(d)
          : trendSpec(d, d.trends[Number(f.dataset.trend)], Number(f.dataset.split), f.dataset.direction);
        draw(f.querySelector(".vega"), spec);
      }
    }, { rootMargin: "200px" });
    document.querySelectorAll("figure.trend[data-trend], figure#host-effects").forEach((f) => observer.observe(f));
  }

  const middle = (a, b) => new Date((Date.parse(a) + Date.parse(b)) / 2).toISOString();

  function trendSpec(d, t, split, direction) {
    const [f, name] = t.metric === "peak_memory" ? [2 ** 20, "MiB"] : [1e6, "ms"];
    const rows = [];
    t.t.forEach((date, i) => {
      const origin = (d.sourceOrigins || [])[t.src[i]] || null;  // where the run came from (a click opens it)
      const run = { date, when: date, version: d.versions[t.ver[i]], source: d.sources[t.src[i]], commit: t.ref[i] || "not recorded",
        raw: String(t.v[i]), corrected: String(t.c[i]), origin, from: origin || "not known" };
      rows.push(Object.assign({ kind: "measured", value: round(t.v[i] / f) }, run));
      rows.push(Object.assign({ kind: "host effects out", value: round(t.c[i] / f) }, run));
    });
    const segments = t.segments.map(([a, b, level]) => ({ start: t.t[a], end: t.t[b], level: round(level / f),
      lo: round(level / t.band / f), hi: round(level * t.band / f) }));
    const boundaries = [];
    for (let i = 1; i < t.t.length; i++) {
      if (t.ver[i] !== t.ver[i - 1]) boundaries.push({ at: middle(t.t[i - 1], t.t[i]), version: d.versions[t.ver[i]] });
    }
    const values = rows.map((r) => r.value).filter((v) => v > 0);
    const log = values.length && Math.max(...values) / Math.min(...values) > 5; // a >5x change flattens the rest
    const x = { field: "date", type: "temporal", title: null, axis: { format: "%y-%m", labelFontSize: 9 } };
    const y = { type: "quantitative", title: name, scale: log ? { type: "log" } : { zero: false } };
    const tooltip = [{ field: "when", title: "date" }, { field: "source" }, { field: "version", title: "Liger" }, { field: "commit" },
      { field: "kind", title: "value" }, { field: "value", title: name }, { field: "raw", title: "raw value" },
      { field: "corrected", title: "host effects out (raw)" }, { field: "from", title: "from (click the point)" }];
    return {
      width: 330, height: 170,
      layer: [
        { data: { values: segments }, mark: { type: "rect", color: "#0969da", opacity: 0.15 },
          encoding: { x: Object.assign({}, x, { field: "start" }), x2: { field: "end" },
            y: Object.assign({}, y, { field: "lo" }), y2: { field: "hi" } } },
        { data: { values: segments }, mark: { type: "rule", color: "#0969da", opacity: 0.6 },
          encoding: { x: Object.assign({}, x, { field: "start" }), x2: { field: "end" }, y: Object.assign({}, y, { field: "level" }) } },
        { data: { values: boundaries }, mark: { type: "rule", color: "#999", strokeDash: [2, 2] },
          encoding: { x: Object.assign({}, x, { field: "at" }) } },
        { data: { values: boundaries }, mark: { type: "text", angle: 270, align: "right", baseline: "bottom", dy: -2, y: 0, fontSize: 8, color: "#666" },
          encoding: { x: Object.assign({}, x, { field: "at" }), text: { field: "version" } } },
        { data: { values: [{ at: middle(t.t[split - 1], t.t[split]) }] },
          mark: { type: "rule", strokeWidth: 1.6, color: direction === "slowdown" ? "#cf222e" : "#1a7f37" },
          encoding: { x: Object.assign({}, x, { field: "at" }) } },
        { data: { values: rows }, transform: [{ filter: "datum.kind === 'host effects out'" }],
          mark: { type: "line", color: "#0969da", strokeWidth: 1 },
          encoding: { x, y: Object.assign({}, y, { field: "value" }) } },
        { data: { values: rows }, mark: { type: "point", filled: true, size: 18 },
          encoding: { x, y: Object.assign({}, y, { field: "value" }),
            color: { field: "kind", type: "nominal", title: null,
              scale: { domain: ["measured", "host effects out"], range: ["#bbbbbb", "#0969da"] } },
            tooltip, href: { field: "origin" } } },
      ],
    };
  }

  function hostSpec(d) {
    const x = { field: "date", type: "temporal", title: null, axis: { format: "%Y-%m-%d" } };
    const y = { field: "factor", type: "quantitative", title: "run factor", scale: { type: "log" } };
    const color = { field: "class", type: "nominal", title: "latency class", sort: d.classes, legend: { orient: "right", columns: 1 } };
    return {
      width: 800, height: 150, data: { values: d.host },
      layer: [
        { mark: { type: "rule", color: "#444", strokeDash: [2, 2] }, encoding: { y: { datum: 1 } } },
        { mark: { type: "line", strokeWidth: 1, opacity: 0.7 }, encoding: { x, y, color } },
        { mark: { type: "point", size: 22 },
          encoding: { x, y, color, fill: { condition: { test: "datum.reported", field: "class", type: "nominal", legend: null }, value: "white" },
            tooltip: [{ field: "date", type: "temporal", format: "%Y-%m-%d %H:%M" }, { field: "source" }, { field: "gpu", title: "GPU" }, { field: "class", title: "latency class" },
              { field: "factor", title: "factor" }, { field: "reported" }] } },
      ],
    };
  }

  function esc(text) {
    return String(text).replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]));
  }
})();
