// Comparison page: a small per-round chart per result (base A and head B across rounds) and the
// "copy as Markdown" button. Names come from the server as JSON; hover text is HTML-escaped.
"use strict";

(function () {
  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  const source = document.getElementById("rounds-data");
  const charts = source ? JSON.parse(source.textContent) : [];
  if (typeof Plotly !== "undefined") {
    document.querySelectorAll(".rounds-chart").forEach((target) => {
      const chart = charts[Number(target.dataset.index)];
      if (!chart) return;
      const rounds = chart.rounds;
      const arm = (key, name, color) => ({
        x: rounds.map((item) => `R${item.round}`),
        y: rounds.map((item) => item[key]),
        name,
        type: "scatter",
        mode: "lines+markers",
        marker: { color, size: 9 },
        line: { color, width: 1.5 },
        text: rounds.map(() => escapeHtml(`${chart.case} · ${chart.hardware}`)),
        hovertemplate: `%{text}<br>%{x} ${name}: %{y:.2f} ms<extra></extra>`,
      });
      Plotly.newPlot(
        target,
        [arm("base_ms", "A base", "#667085"), arm("head_ms", "B head", "#3538cd")],
        {
          height: 200,
          margin: { l: 48, r: 8, t: 8, b: 32 },
          legend: { orientation: "h", y: -0.25 },
          xaxis: { type: "category" },
          yaxis: { title: { text: "ms" }, zeroline: false },
          paper_bgcolor: "rgba(0,0,0,0)",
          plot_bgcolor: "#fff",
        },
        { responsive: true, displaylogo: false, displayModeBar: false },
      );
    });
  }

  const button = document.getElementById("copy-markdown");
  const text = document.getElementById("markdown");
  const status = document.getElementById("copy-status");
  if (button && text) {
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(text.textContent);
        status.textContent = "Copied.";
      } catch (error) {
        // No clipboard permission (plain http, old browser): select the text for Ctrl+C instead.
        const range = document.createRange();
        range.selectNodeContents(text);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        status.textContent = "Selected: press Ctrl+C to copy.";
      }
    });
  }
})();
