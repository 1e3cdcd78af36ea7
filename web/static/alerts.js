// The alert page's chart: the series around the change, with last good / first bad / culprit marked.
// Data comes from a JSON script block (rendered with |tojson); commit titles are untrusted, so hover
// text is HTML-escaped before plotly sees it.
"use strict";

// The group page draws one small chart per alert the same way: each script.group-chart-data block
// names its chart's element in data-chart.
(function () {
  if (typeof Plotly === "undefined") return;

  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  const single = document.getElementById("alert-chart-data");
  const singleTarget = document.getElementById("alert-chart");
  if (single && singleTarget) draw(single, singleTarget, 320);
  for (const source of document.querySelectorAll("script.group-chart-data")) {
    const target = document.getElementById(source.dataset.chart);
    if (target) draw(source, target, 220);
  }

  function draw(source, target, height) {
  const chart = JSON.parse(source.textContent);

  const points = chart.points;
  const x = points.map((point) => point.sha.slice(0, 7));
  const hover = points.map(
    (point) =>
      `<b>${escapeHtml(point.sha.slice(0, 7))}</b> ${escapeHtml(point.title.slice(0, 80))}<br>` +
      `${escapeHtml(point.author)}<br>${point.value.toFixed(2)} ${escapeHtml(chart.unit)} · run #${point.run}`,
  );
  const colour = (point) => {
    if (point.sha === chart.culprit) return "#b42318";
    if (point.sha === chart.first_bad) return "#f79009";
    if (point.sha === chart.last_good) return "#067647";
    return "#3538cd";
  };
  const size = (point) =>
    [chart.culprit, chart.first_bad, chart.last_good].includes(point.sha) ? 12 : 6;
  const traces = [
    {
      x,
      y: points.map((point) => point.value),
      mode: "lines+markers",
      type: "scatter",
      name: "runs",
      line: { color: "#98a2b3", width: 1 },
      marker: { color: points.map(colour), size: points.map(size) },
      text: hover,
      hovertemplate: "%{text}<extra></extra>",
    },
  ];
  const marks = [
    [chart.last_good, "last good", "#067647"],
    [chart.first_bad, "first bad", "#f79009"],
    [chart.culprit, "culprit", "#b42318"],
  ].filter(([sha]) => sha && points.some((point) => point.sha === sha));
  const shapes = marks.map(([sha, , color]) => ({
    type: "line", xref: "x", yref: "paper", x0: sha.slice(0, 7), x1: sha.slice(0, 7), y0: 0, y1: 1,
    line: { color, width: 1.5, dash: "dot" },
  }));
  for (const [level, color] of [[chart.before, "#067647"], [chart.after, "#b42318"]]) {
    if (level === null || level === undefined) continue; // an output alert: no levels of time
    shapes.push({
      type: "line", xref: "paper", x0: 0, x1: 1, y0: level, y1: level,
      line: { color, width: 1, dash: "dash" },
    });
  }
  // Marks that share a commit (first bad = culprit) are stacked, not drawn over each other.
  const seen = {};
  const annotations = marks.map(([sha, label, color]) => {
    const key = sha.slice(0, 7);
    seen[key] = (seen[key] || 0) + 1;
    return {
      x: key, xref: "x", yref: "paper", y: 1 + 0.07 * seen[key], text: label, showarrow: false,
      font: { color, size: 11 },
    };
  });
  Plotly.newPlot(
    target,
    traces,
    {
      margin: { l: 56, r: 12, t: 36, b: 56 },
      height,
      shapes,
      annotations,
      showlegend: false,
      xaxis: { type: "category", tickangle: -45, tickfont: { family: "ui-monospace, monospace", size: 10 } },
      yaxis: { title: { text: chart.unit }, zeroline: false },
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "#fff",
    },
    { responsive: true, displaylogo: false },
  );
  }
})();
