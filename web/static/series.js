// The series chart: fetched as JSON, drawn with plotly.js (served by perftrack at /vendor).
// Commit titles and authors are untrusted: plotly renders a subset of HTML in hover text, so they
// are escaped before they reach it, and nothing here builds HTML from them.
(function () {
  "use strict";

  var KINDS = {
    nightly: { label: "nightly", symbol: "circle", color: "#3538cd", size: 7 },
    confirm: { label: "confirmation", symbol: "diamond", color: "#7a5af8", size: 9 },
    bisect: { label: "bisection", symbol: "triangle-up", color: "#dc6803", size: 9 },
    import: { label: "imported", symbol: "square", color: "#0086c9", size: 8 },
    manual: { label: "manual", symbol: "star", color: "#475467", size: 9 },
    pr: { label: "pr", symbol: "hexagon", color: "#475467", size: 8 },
    job: { label: "job", symbol: "circle-open", color: "#475467", size: 7 },
  };
  var ORDER = ["nightly", "confirm", "bisect", "import", "manual", "pr", "job"];

  function escapeText(value) {
    return String(value === null || value === undefined ? "" : value)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;");
  }

  function plotlyDate(iso) {
    // plotly.js dates carry no zone: hand it UTC wall time.
    return new Date(iso).toISOString().replace("T", " ").slice(0, 19);
  }

  function hoverData(point) {
    return [
      escapeText(point.sha.slice(0, 7)),
      escapeText(point.title.length > 80 ? point.title.slice(0, 79) + "…" : point.title),
      escapeText(point.author),
      plotlyDate(point.committed_at).slice(0, 16) + " UTC",
      (KINDS[point.kind] || KINDS.job).label + (point.excluded_reason ? " (excluded)" : ""),
      point.run_id,
      point.excluded_reason ? "<br>" + escapeText(shorten(point.excluded_reason, 120)) : "",
    ];
  }

  function shorten(text, limit) {
    return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
  }


  function build(data, el) {
    var unit = data.unit ? " " + data.unit : "";
    var digits = data.metric === "graph_breaks" ? ":.0f" : ":.2f";
    var hover =
      "<b>%{customdata[0]}</b> %{customdata[1]}<br>%{customdata[2]} · %{customdata[3]}<br>" +
      "<b>%{y" + digits + "}" + escapeText(unit) + "</b> · %{customdata[4]} · run #%{customdata[5]}%{customdata[6]}<extra></extra>";
    var measured = data.points.filter(function (p) { return p.value !== null; });
    var counted = measured.filter(function (p) { return !p.excluded_reason; });
    var traces = [];
    var withIqr = counted.filter(function (p) { return p.iqr !== null; });
    if (data.metric === "denoise_step_ms" && withIqr.length) {
      var xs = withIqr.map(function (p) { return plotlyDate(p.committed_at); });
      traces.push({
        x: xs, y: withIqr.map(function (p) { return p.value + p.iqr / 2; }),
        mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false, name: "iqr-high",
      });
      traces.push({
        x: xs, y: withIqr.map(function (p) { return p.value - p.iqr / 2; }),
        mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: "rgba(53,56,205,0.10)",
        hoverinfo: "skip", name: "step IQR per run", legendrank: 900,
      });
    }
    if (data.band && counted.length) {
      var from = data.band.since ? plotlyDate(data.band.since) : plotlyDate(counted[0].committed_at);
      var to = plotlyDate(counted[counted.length - 1].committed_at);
      traces.push({
        x: [from, to, to, from, from],
        y: [data.band.low, data.band.low, data.band.high, data.band.high, data.band.low],
        mode: "lines", fill: "toself", fillcolor: "rgba(102,112,133,0.12)", line: { width: 0 },
        hoverinfo: "skip", name: "threshold ±" + data.band.pct.toFixed(1) + " %", legendrank: 950,
      });
    }
    traces.push({
      x: counted.map(function (p) { return plotlyDate(p.committed_at); }),
      y: counted.map(function (p) { return p.value; }),
      mode: "lines", line: { color: "#98a2b3", width: 1.5 }, hoverinfo: "skip", showlegend: false,
      name: "series",
    });
    ORDER.forEach(function (kind) {
      var points = counted.filter(function (p) { return (KINDS[p.kind] ? p.kind : "job") === kind; });
      if (!points.length) return;
      var style = KINDS[kind];
      traces.push({
        x: points.map(function (p) { return plotlyDate(p.committed_at); }),
        y: points.map(function (p) { return p.value; }),
        customdata: points.map(hoverData),
        mode: "markers", type: "scatter", name: style.label, meta: "runs",
        marker: { symbol: style.symbol, color: style.color, size: style.size, line: { color: "#fff", width: 1 } },
        hovertemplate: hover,
      });
    });
    // Runs measured under contention or GPU throttling: kept, excluded, and marked apart from outliers.
    var flagged = measured.filter(function (p) { return p.excluded_reason && p.flag; });
    if (flagged.length) {
      traces.push({
        x: flagged.map(function (p) { return plotlyDate(p.committed_at); }),
        y: flagged.map(function (p) { return p.value; }),
        customdata: flagged.map(hoverData),
        mode: "markers", name: "flagged (contention / throttling)", meta: "runs",
        marker: { symbol: "circle-x-open", color: "#dc6803", size: 10, line: { width: 1.5 } },
        hovertemplate:
          "<b>%{customdata[0]}</b> %{customdata[1]}<br>%{customdata[2]} · %{customdata[3]}<br>" +
          "<b>%{y" + digits + "}" + escapeText(unit) + "</b> · flagged, excluded · run #%{customdata[5]}%{customdata[6]}<extra></extra>",
      });
    }
    var excluded = measured.filter(function (p) { return p.excluded_reason && !p.flag; });
    if (excluded.length) {
      traces.push({
        x: excluded.map(function (p) { return plotlyDate(p.committed_at); }),
        y: excluded.map(function (p) { return p.value; }),
        customdata: excluded.map(hoverData),
        mode: "markers", name: "excluded", meta: "runs",
        marker: { symbol: "x-thin-open", color: "#98a2b3", size: 8, line: { width: 1.5 } },
        hovertemplate: hover,
      });
    }
    // Failed runs have no value: they sit on the axis floor, so a night that broke is not invisible.
    var failed = data.points.filter(function (p) { return p.status === "failed"; });
    if (failed.length && counted.length) {
      var floor = Math.min.apply(null, counted.map(function (p) { return p.value; }));
      traces.push({
        x: failed.map(function (p) { return plotlyDate(p.committed_at); }),
        y: failed.map(function () { return floor; }),
        customdata: failed.map(hoverData),
        mode: "markers", name: "failed run", meta: "failed",
        marker: { symbol: "x-thin-open", color: "#b42318", size: 10, line: { width: 2 } },
        hovertemplate:
          "<b>%{customdata[0]}</b> %{customdata[1]}<br>%{customdata[2]} · %{customdata[3]}<br>" +
          "<b>failed</b> · %{customdata[4]} · run #%{customdata[5]}<extra></extra>",
      });
    }
    var shapes = [];
    var annotations = [];
    var alertPoints = { x: [], y: [], customdata: [] };
    data.alerts.forEach(function (alert, index) {
      var output = alert.kind === "output"; // an event on the chart: its values are dB, not times
      var color = output ? "#7a5af8" : alert.direction === "regression" ? "#d92d20" : "#079455";
      var x = plotlyDate(alert.first_bad.committed_at);
      shapes.push({
        type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1,
        line: { color: color, width: 1.5, dash: "dash" },
      });
      annotations.push({
        x: x, xref: "x", y: 1, yref: "paper", yanchor: "bottom", showarrow: false,
        text: escapeText(output ? "output changed at " + alert.first_bad.sha.slice(0, 7) : (alert.change_pct > 0 ? "+" : "") + alert.change_pct.toFixed(1) + " % at " + alert.first_bad.sha.slice(0, 7)),
        hovertext: output ? escapeText(alert.output_summary) : undefined,
        font: { color: color, size: 11 }, xanchor: index % 2 ? "right" : "left",
      });
      if (!output) {
        alertPoints.x.push(x);
        alertPoints.y.push(alert.after_value);
        alertPoints.customdata.push([
          escapeText(alert.first_bad.sha.slice(0, 7)),
          escapeText(alert.first_bad.title),
          alert.culprit ? escapeText("culprit " + alert.culprit.sha.slice(0, 7) + " " + alert.culprit.title) : "culprit not known",
          escapeText(alert.state),
          alert.id,
        ]);
      }
      if (alert.culprit && alert.culprit.sha !== alert.first_bad.sha) {
        var cx = plotlyDate(alert.culprit.committed_at);
        shapes.push({
          type: "line", xref: "x", yref: "paper", x0: cx, x1: cx, y0: 0, y1: 1,
          line: { color: color, width: 1, dash: "dot" },
        });
        annotations.push({
          x: cx, xref: "x", y: 0, yref: "paper", yanchor: "bottom", showarrow: false,
          text: "culprit " + escapeText(alert.culprit.sha.slice(0, 7)), font: { color: color, size: 11 },
          xanchor: "right", bgcolor: "rgba(255,255,255,0.85)",
        });
      }
    });
    if (alertPoints.x.length) {
      traces.push({
        x: alertPoints.x, y: alertPoints.y, customdata: alertPoints.customdata,
        mode: "markers", name: "alert (first bad)", meta: "alerts",
        marker: { symbol: "x", color: "#d92d20", size: 11, line: { width: 1 } },
        hovertemplate:
          "<b>alert #%{customdata[4]}</b> (%{customdata[3]})<br>first bad <b>%{customdata[0]}</b> %{customdata[1]}<br>%{customdata[2]}<extra></extra>",
      });
    }
    var narrow = el.clientWidth < 600;
    return {
      traces: traces,
      layout: {
        margin: { l: 56, r: 12, t: 28, b: narrow ? 110 : 70 },
        font: { family: "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size: 12, color: "#1d2433" },
        hovermode: "closest",
        hoverlabel: { bgcolor: "#fff", bordercolor: "#d0d5dd", font: { color: "#1d2433" }, align: "left" },
        xaxis: { type: "date", gridcolor: "#f2f4f7", linecolor: "#d0d5dd", tickformat: "%b %d" },
        yaxis: {
          title: { text: escapeText(el.dataset.label + (data.unit ? " (" + data.unit + ")" : "")) },
          gridcolor: "#eaecf0", zeroline: false, rangemode: data.metric === "graph_breaks" ? "tozero" : "normal",
        },
        legend: { orientation: "h", x: 0, y: -0.15, yanchor: "top", font: { size: 11 } },
        shapes: shapes,
        annotations: annotations,
        plot_bgcolor: "#fff",
        paper_bgcolor: "#fff",
      },
    };
  }

  function draw(el, note, data) {
    var figure = build(data, el);
    window.Plotly.newPlot(el, figure.traces, figure.layout, {
      responsive: true,
      displaylogo: false,
      modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
    }).then(function () {
      el.dataset.ready = "1";
    });
    el.on("plotly_click", function (event) {
      var point = event.points && event.points[0];
      if (!point || !point.customdata || (point.data.meta !== "runs" && point.data.meta !== "failed")) return;
      window.location.assign("/runs/" + encodeURIComponent(point.customdata[5]));
    });
    if (!data.points.some(function (p) { return p.value !== null; })) {
      note.textContent = "No run in this range has a value for this metric; the table below lists them.";
    }
  }

  function start() {
    var el = document.getElementById("chart");
    var note = document.getElementById("chart-note");
    if (!el || !window.Plotly) {
      if (note) note.textContent = "The chart needs JavaScript and /vendor/plotly.min.js; the table below has every run.";
      return;
    }
    fetch(el.dataset.src, { headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) { draw(el, note, data); })
      .catch(function (error) {
        note.textContent = "Could not load the chart (" + error.message + "); the table below has every run.";
      });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
