// Sluice's admin dashboard: polls data.json once a second and draws the
// last 15 minutes with uPlot. Everything it loads comes from the gateway.
(function () {
  "use strict";

  var WINDOW_MS = 15 * 60 * 1000;
  var STATE_COLOUR = { closed: "#2e9d4f", open: "#d93025", half_open: "#e8a317", recovering: "#1a73e8", "": "#9aa4b0" };
  var PALETTE = ["#1a73e8", "#d93025", "#2e9d4f", "#e8a317", "#8e44ad", "#00897b", "#6d4c41", "#c2185b", "#546e7a", "#7cb342"];
  var KIND_NAME = {
    calm: "Calm", provider_limits: "Provider limits", slow_generations: "Slow generations",
    retry_storm: "Retry storm", local_saturation: "Local saturation", provider_out: "Provider out of rotation"
  };

  // state is what the page knows; window.sluiceDashboard exposes it so a
  // test (or a curious operator in the console) can read the chart data.
  var state = { samples: [], events: [], seq: 0, budgets: { hedge: 0, retry: 0 }, verdict: null, since: 0, charts: {}, spenders: [], nearLimits: [] };
  window.sluiceDashboard = state;

  function colour(i) { return PALETTE[i % PALETTE.length]; }
  function secs(s) { return s.t / 1000; }
  function gap(v) { return v > 0 ? v : null; }

  // markers draws the transitions and marks on a chart's time axis.
  function markers() {
    return {
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
          var lo = u.scales.x.min, hi = u.scales.x.max;
          ctx.save();
          ctx.font = Math.round(10 * devicePixelRatio) + "px system-ui, sans-serif";
          ctx.textBaseline = "top";
          var row = 0;
          state.events.forEach(function (e) {
            var t = e.t / 1000;
            if (e.kind === "verdict" || t < lo || t > hi) { return; }
            var dy = (row++ % 3) * 12 * devicePixelRatio;
            var x = Math.round(u.valToPos(t, "x", true));
            var c = e.kind === "mark" ? "#8e44ad" : (STATE_COLOUR[e.to] || "#9aa4b0");
            ctx.strokeStyle = c;
            ctx.fillStyle = c;
            ctx.lineWidth = devicePixelRatio;
            ctx.setLineDash(e.kind === "mark" ? [4 * devicePixelRatio, 3 * devicePixelRatio] : []);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + h);
            ctx.stroke();
            ctx.fillText(e.label, x + 3 * devicePixelRatio, top + 2 * devicePixelRatio + dy);
          });
          ctx.restore();
        }]
      }
    };
  }

  function unitAxis(unit, scale, side) {
    return {
      scale: scale || "y", side: side === undefined ? 3 : side, label: unit, size: 86,
      values: function (u, vals) { return vals.map(function (v) { return v == null ? "" : fmt(v) + " " + unit; }); }
    };
  }

  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e6) { return (v / 1e6).toFixed(1) + "M"; }
    if (a >= 1e4) { return (v / 1e3).toFixed(0) + "k"; }
    if (a >= 100 || v === Math.round(v)) { return String(Math.round(v)); }
    return v.toFixed(a >= 10 ? 1 : 2);
  }

  // Each spec turns the samples into uPlot series and data. A chart is
  // rebuilt when its series change (a provider, class or reason appears)
  // and otherwise only given new data.
  var specs = {
    "c-inflight": function (ss) {
      var names = providerNames(ss), series = [], cols = [];
      names.forEach(function (n, i) {
        series.push({ label: n + " in-flight", stroke: colour(i), width: 2 });
        cols.push(ss.map(function (s) { var p = prov(s, n); return p ? p.in_flight : null; }));
        series.push({ label: n + " limit", stroke: colour(i), dash: [6, 4], width: 1 });
        cols.push(ss.map(function (s) { var p = prov(s, n); return p && p.limit > 0 ? p.limit : null; }));
      });
      return { series: series, cols: cols, axes: [unitAxis("req")] };
    },
    "c-queue": function (ss) {
      var classes = keysOf(ss, function (s) { return s.queue; }), series = [], cols = [];
      classes.forEach(function (c, i) {
        series.push({ label: c + " queued", stroke: colour(i), width: 2, fill: colour(i) + "22" });
        cols.push(ss.map(function (s) { return (s.queue || {})[c] || 0; }));
      });
      series.push({ label: "oldest wait", stroke: "#444", dash: [3, 3], scale: "ms" });
      cols.push(ss.map(function (s) { return s.oldest_wait_ms; }));
      return { series: series, cols: cols, axes: [unitAxis("req"), unitAxis("ms", "ms", 1)], scales: { ms: { auto: true } } };
    },
    "c-latency": function (ss) {
      var series = [
        { label: "p50", stroke: colour(2), width: 2 },
        { label: "p95", stroke: colour(3), width: 2 },
        { label: "p99", stroke: colour(1), width: 2 },
        { label: "TTFT p50", stroke: colour(0), dash: [6, 4] },
        { label: "TTFT p99", stroke: colour(4), dash: [6, 4] }
      ];
      var cols = [
        ss.map(function (s) { return gap(s.latency_ms.p50); }),
        ss.map(function (s) { return gap(s.latency_ms.p95); }),
        ss.map(function (s) { return gap(s.latency_ms.p99); }),
        ss.map(function (s) { return gap(s.ttft_ms.p50); }),
        ss.map(function (s) { return gap(s.ttft_ms.p99); })
      ];
      return { series: series, cols: cols, axes: [unitAxis("ms")], scales: { y: { distr: 3 } } };
    },
    "c-sheds": function (ss) {
      var reasons = keysOf(ss, function (s) { return s.sheds; });
      var series = [{ label: "answered", stroke: colour(2), width: 2 }], cols = [ss.map(function (s) { return s.ok; })];
      reasons.forEach(function (r, i) {
        series.push({ label: "shed " + r, stroke: colour(i + 3), width: 2, fill: colour(i + 3) + "22" });
        cols.push(ss.map(function (s) { return (s.sheds || {})[r] || 0; }));
      });
      return { series: series, cols: cols, axes: [unitAxis("req/s")] };
    },
    "c-health": function (ss) {
      var names = providerNames(ss), series = [], cols = [];
      names.forEach(function (n, i) {
        series.push({ label: n + " slow calls", stroke: colour(i), width: 2 });
        cols.push(ss.map(function (s) { var p = prov(s, n); return p ? 100 * p.slow_rate : null; }));
        series.push({ label: n + " errors", stroke: colour(i), dash: [2, 3], width: 2 });
        cols.push(ss.map(function (s) { var p = prov(s, n); return p ? 100 * p.error_rate : null; }));
        series.push({ label: n + " weight", stroke: colour(i) + "99", width: 1, paths: uPlot.paths.stepped({ align: 1 }) });
        cols.push(ss.map(function (s) { var p = prov(s, n); return p && p.state ? 100 * p.weight : null; }));
      });
      return { series: series, cols: cols, axes: [unitAxis("%")], scales: { y: { range: [0, 100] } } };
    },
    "c-second": function (ss) {
      function share(f) { return ss.map(function (s) { return s.rps > 0 ? 100 * f(s) / s.rps : 0; }); }
      var series = [
        { label: "hedges + rescues", stroke: colour(0), width: 2 },
        { label: "retries", stroke: colour(1), width: 2 },
        { label: "refused by budget", stroke: colour(4), dash: [2, 3] },
        { label: "hedge budget", stroke: colour(0), dash: [8, 4], width: 1 },
        { label: "retry budget", stroke: colour(1), dash: [8, 4], width: 1 }
      ];
      var cols = [
        share(function (s) { return s.hedges + s.rescues; }),
        share(function (s) { return s.retries; }),
        share(function (s) { return s.refused; }),
        ss.map(function () { return 100 * state.budgets.hedge; }),
        ss.map(function () { return 100 * state.budgets.retry; })
      ];
      return { series: series, cols: cols, axes: [unitAxis("% of req")] };
    },
    "c-tokens": function (ss) {
      var keys = keysOf(ss, function (s) { return s.tokens_per_min; }), series = [], cols = [];
      keys.forEach(function (k, i) {
        series.push({ label: k === "-" ? "(no key)" : k, stroke: colour(i), width: 2 });
        cols.push(ss.map(function (s) { return (s.tokens_per_min || {})[k] || 0; }));
      });
      return { series: series, cols: cols, axes: [unitAxis("tok/min")],
        empty: "No token counts: the gateway counts tokens when it needs them (prices:, key or provider token limits, lanes)." };
    },
    "c-cache": function (ss) {
      var any = ss.some(function (s) { return (s.cache_hits || 0) + (s.cache_misses || 0) > 0; });
      if (!any) {
        return { series: [], cols: [], axes: [unitAxis("%")],
          empty: "No cache lookups: turn the response cache on per model or key (docs/CACHE.md)." };
      }
      var series = [
        { label: "hit ratio", stroke: colour(2), width: 2 },
        { label: "hits", stroke: colour(0), dash: [2, 3], scale: "rps" }
      ];
      var cols = [
        ss.map(function (s) { var n = (s.cache_hits || 0) + (s.cache_misses || 0); return n > 0 ? 100 * (s.cache_hits || 0) / n : null; }),
        ss.map(function (s) { return s.cache_hits || 0; })
      ];
      return { series: series, cols: cols, axes: [unitAxis("% of lookups"), unitAxis("req/s", "rps", 1)],
        scales: { y: { range: [0, 100] }, rps: { auto: true } } };
    },
    "c-evals": function (ss) {
      var keys = keysOf(ss, function (s) { return s.eval_pass_rate; }), series = [], cols = [];
      keys.forEach(function (k, i) {
        series.push({ label: k, stroke: colour(i), width: 2 });
        cols.push(ss.map(function (s) { var r = s.eval_pass_rate || {}; return k in r ? 100 * r[k] : null; }));
      });
      return { series: series, cols: cols, axes: [unitAxis("% passed")],
        empty: "No eval sets: declare models[].evals to grade each target on a schedule (docs/EVALS.md)." };
    }
  };

  function providerNames(ss) {
    var seen = {}, out = [];
    ss.forEach(function (s) { (s.providers || []).forEach(function (p) { if (!seen[p.name]) { seen[p.name] = 1; out.push(p.name); } }); });
    return out.sort();
  }
  function prov(s, n) {
    var ps = s.providers || [];
    for (var i = 0; i < ps.length; i++) { if (ps[i].name === n) { return ps[i]; } }
    return null;
  }
  function keysOf(ss, get) {
    var seen = {}, out = [];
    ss.forEach(function (s) { Object.keys(get(s) || {}).forEach(function (k) { if (!seen[k]) { seen[k] = 1; out.push(k); } }); });
    return out.sort();
  }

  function width(el) { return Math.max(280, el.clientWidth); }

  function draw() {
    var ss = state.samples;
    var xs = ss.map(secs);
    Object.keys(specs).forEach(function (id) {
      var el = document.getElementById(id);
      var spec = specs[id](ss);
      var data = [xs].concat(spec.cols);
      var key = spec.series.map(function (s) { return s.label; }).join("|");
      var c = state.charts[id];
      if (!spec.series.length) {
        if (c) { c.plot.destroy(); delete state.charts[id]; }
        el.textContent = spec.empty || "nothing yet";
        el.classList.add("empty");
        return;
      }
      el.classList.remove("empty");
      if (c && c.key === key) {
        c.plot.setData(data);
        return;
      }
      if (c) { c.plot.destroy(); }
      var opts = {
        width: width(el), height: 220,
        series: [{}].concat(spec.series),
        axes: [{}].concat(spec.axes),
        scales: Object.assign({ x: { time: true } }, spec.scales || {}),
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
        plugins: [markers()]
      };
      el.textContent = "";
      state.charts[id] = { key: key, plot: new uPlot(opts, data, el), series: spec.series.map(function (s) { return s.label; }) };
    });
    drawStrip();
    drawProviders();
    drawVerdict();
    drawEvents();
    drawTable("spenders", state.spenders, "no priced requests today", function (p) {
      return [p.key, p.team, String(p.requests), "$" + (p.cost_micros / 1e6).toFixed(p.cost_micros < 10000 ? 6 : 2)];
    });
    drawTable("near-limits", state.nearLimits, "every key has at least a fifth of each budget left", function (n) {
      return [n.key, n.dimension.replace("_", " "), n.remaining + " / " + n.limit, Math.round(100 * n.used) + "%"];
    });
  }

  // drawTable fills table id's body with a row per item, its cells from
  // cells(item), or one row saying none.
  function drawTable(id, items, none, cells) {
    var body = document.querySelector("#" + id + " tbody");
    body.textContent = "";
    if (!items.length) {
      var tr = document.createElement("tr"), td = document.createElement("td");
      td.colSpan = 4;
      td.className = "none";
      td.textContent = none;
      tr.appendChild(td);
      body.appendChild(tr);
      return;
    }
    items.forEach(function (it) {
      var tr = document.createElement("tr");
      cells(it).forEach(function (c, i) {
        var td = document.createElement("td");
        if (i >= 2) { td.className = "num"; }
        td.textContent = c;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }

  // drawStrip paints each provider's breaker state over the window, one
  // row per provider, coloured by state.
  function drawStrip() {
    var cv = document.getElementById("strip"), ss = state.samples;
    var names = providerNames(ss);
    var dpr = window.devicePixelRatio || 1;
    var w = cv.clientWidth, rowH = 18, h = Math.max(1, names.length) * rowH;
    cv.style.height = h + "px";
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(h * dpr);
    var ctx = cv.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.clearRect(0, 0, w, h);
    if (!ss.length) { return; }
    // The same span as the charts: the samples held, up to the window.
    var label = 90, t1 = ss[ss.length - 1].t, t0 = Math.max(ss[0].t - 1000, t1 - WINDOW_MS), span = Math.max(1000, t1 - t0);
    var px = function (t) { return label + (w - label) * (t - t0) / span; };
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    names.forEach(function (n, row) {
      var y = row * rowH;
      ctx.fillStyle = "#1d2430";
      ctx.fillText(n, 2, y + rowH / 2);
      for (var i = 0; i < ss.length; i++) {
        var p = prov(ss[i], n);
        if (!p) { continue; }
        var a = px(i > 0 ? ss[i - 1].t : ss[i].t - 1000), b = px(ss[i].t);
        ctx.fillStyle = STATE_COLOUR[p.state] || STATE_COLOUR[""];
        ctx.fillRect(a, y + 2, Math.max(1, b - a + 0.5), rowH - 4);
      }
    });
  }

  function drawProviders() {
    var box = document.getElementById("providers"), ss = state.samples;
    if (!ss.length) { return; }
    var last = ss[ss.length - 1];
    box.textContent = "";
    (last.providers || []).forEach(function (p) {
      var d = document.createElement("div");
      d.className = "provider";
      d.dataset.provider = p.name;
      d.dataset.state = p.state || "none";
      var name = document.createElement("span");
      name.className = "name";
      name.textContent = p.name;
      var badge = document.createElement("span");
      badge.className = "badge";
      badge.dataset.state = p.state;
      badge.textContent = p.state ? p.state.replace("_", " ") : "no breaker";
      var fig = document.createElement("div");
      fig.className = "figures";
      fig.textContent = p.in_flight + " in flight / " + (p.limit > 0 ? p.limit : "∞") + " limit · weight " +
        Math.round(100 * p.weight) + "% · slow " + Math.round(100 * p.slow_rate) + "% · errors " + Math.round(100 * p.error_rate) + "%";
      d.appendChild(name);
      d.appendChild(badge);
      d.appendChild(fig);
      box.appendChild(d);
    });
  }

  function drawVerdict() {
    var v = state.verdict;
    if (!v) { return; }
    document.getElementById("verdict").dataset.kind = v.kind;
    document.getElementById("verdict-kind").textContent = KIND_NAME[v.kind] || v.kind;
    document.getElementById("verdict-summary").textContent = v.summary;
    var ul = document.getElementById("verdict-why");
    ul.textContent = "";
    (v.why || []).forEach(function (w) {
      var li = document.createElement("li");
      li.textContent = w;
      ul.appendChild(li);
    });
  }

  function drawEvents() {
    var ol = document.getElementById("events");
    ol.textContent = "";
    state.events.slice().reverse().forEach(function (e) {
      var li = document.createElement("li");
      li.dataset.kind = e.kind;
      if (e.provider) { li.dataset.provider = e.provider; }
      if (e.to) { li.dataset.to = e.to; }
      var when = new Date(e.t).toLocaleTimeString();
      li.textContent = when + "  " + (e.kind === "breaker" && e.from === e.to ? e.label : e.kind === "breaker" ? e.provider + ": " + e.from.replace("_", " ") + " → " + e.to.replace("_", " ") :
        e.kind === "verdict" ? "pressure: " + e.label : e.label);
      ol.appendChild(li);
    });
  }

  function setStatus(s, text) {
    var el = document.getElementById("status");
    el.dataset.state = s;
    el.textContent = text;
  }

  function merge(snap) {
    state.budgets = snap.budgets;
    state.verdict = snap.verdict;
    state.spenders = snap.spenders || [];
    state.nearLimits = snap.near_limits || [];
    var lastT = state.samples.length ? state.samples[state.samples.length - 1].t : 0;
    (snap.samples || []).forEach(function (s) { if (s.t > lastT) { state.samples.push(s); lastT = s.t; } });
    // Events are timed apart from samples, so a poll may repeat one: keep
    // each once, by its sequence number.
    (snap.events || []).forEach(function (e) {
      if (e.seq > state.seq) { state.events.push(e); state.seq = e.seq; }
    });
    if (state.samples.length) {
      state.since = state.samples[state.samples.length - 1].t;
      var horizon = state.since - WINDOW_MS;
      state.samples = state.samples.filter(function (s) { return s.t > horizon; });
      state.events = state.events.filter(function (e) { return e.t > horizon; });
    }
  }

  var busy = false;
  function poll() {
    if (busy) { return; }
    busy = true;
    // Ask a little further back than the last sample: an event can be
    // timed just before a sample that was recorded first. merge keeps
    // each sample and event once.
    fetch("data.json?since=" + Math.max(0, state.since - 5000), { cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 401) {
          // Behind an admin token: the session this page was opened
          // with has ended (12 hours), or the gateway restarted.
          throw new Error("the admin session has ended; open this page again as /dashboard/?token=TOKEN");
        }
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (snap) {
        merge(snap);
        draw();
        setStatus("live", "live · " + new Date(snap.now).toLocaleTimeString());
      })
      .catch(function (err) { setStatus("error", "no data: " + err.message); })
      .then(function () { busy = false; });
  }

  window.addEventListener("resize", function () {
    Object.keys(state.charts).forEach(function (id) {
      var el = document.getElementById(id);
      state.charts[id].plot.setSize({ width: width(el), height: 220 });
    });
    drawStrip();
  });
  poll();
  setInterval(poll, 1000);
})();
