// Run page: the per-step chart, the copy button and the log filter. Data comes from the page
// (a JSON script element); nothing here builds HTML from strings.
(function () {
  "use strict";

  function drawSteps() {
    var holder = document.getElementById("step-chart");
    var source = document.getElementById("step-data");
    if (!holder || !source || typeof Plotly === "undefined") return;
    var data = JSON.parse(source.textContent);
    var steps = data.steps;
    var x = steps.map(function (_, index) { return index; });
    var colors = steps.map(function (_, index) { return index === 0 ? "#f79009" : "#444ce7"; });
    var sizes = steps.map(function (_, index) { return index === 0 ? 10 : 6; });
    var traces = [{
      name: "step time",
      x: x,
      y: steps,
      type: "scatter",
      mode: "lines+markers",
      line: { color: "#a4bcfd", width: 1.5 },
      marker: { color: colors, size: sizes },
      hovertemplate: "step %{x}: %{y:.2f} ms<extra></extra>",
    }];
    if (data.median !== null) {
      traces.push({
        name: "median",
        x: [0, steps.length - 1],
        y: [data.median, data.median],
        type: "scatter",
        mode: "lines",
        line: { color: "#12b76a", width: 1.5, dash: "dash" },
        hovertemplate: "median %{y:.2f} ms<extra></extra>",
      });
    }
    var layout = {
      margin: { l: 56, r: 12, t: 8, b: 40 },
      height: 260,
      showlegend: false,
      xaxis: { title: { text: "denoise step" }, zeroline: false, gridcolor: "#f2f4f7" },
      yaxis: { title: { text: "ms" }, zeroline: false, gridcolor: "#f2f4f7" },
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: { family: "system-ui, sans-serif", size: 12, color: "#344054" },
    };
    Plotly.newPlot(holder, traces, layout, { displayModeBar: false, responsive: true });
  }

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var copied = false;
    try { copied = document.execCommand("copy"); } catch (error) { copied = false; }
    document.body.removeChild(area);
    return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function setupCopy() {
    document.querySelectorAll("button[data-copy-target]").forEach(function (button) {
      button.addEventListener("click", function () {
        var target = document.getElementById(button.getAttribute("data-copy-target"));
        if (!target) return;
        var text = target.textContent;
        var copy = navigator.clipboard && window.isSecureContext
          ? navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); })
          : fallbackCopy(text);
        copy.then(
          function () { button.textContent = "Copied"; },
          function () { button.textContent = "Select and copy"; }
        );
        window.setTimeout(function () { button.textContent = "Copy"; }, 2000);
      });
    });
  }

  function setupLogFilter() {
    var input = document.getElementById("log-filter");
    var parsedOnly = document.getElementById("log-parsed");
    var count = document.getElementById("log-count");
    var log = document.getElementById("log");
    if (!input || !log) return;
    var lines = Array.prototype.slice.call(log.querySelectorAll(".ln"));
    var params = new URLSearchParams(window.location.search);
    input.value = params.get("log") || "";
    parsedOnly.checked = params.get("parsed") === "1";

    function apply() {
      var query = input.value.trim().toLowerCase();
      var shown = 0;
      lines.forEach(function (line) {
        var visible = (!query || line.textContent.toLowerCase().indexOf(query) !== -1) &&
          (!parsedOnly.checked || line.getAttribute("data-kind") !== "plain");
        line.hidden = !visible;
        if (visible) shown += 1;
      });
      count.textContent = shown === lines.length ? lines.length + " lines" : shown + " of " + lines.length + " lines";
      var url = new URL(window.location.href);
      if (query) url.searchParams.set("log", input.value.trim()); else url.searchParams.delete("log");
      if (parsedOnly.checked) url.searchParams.set("parsed", "1"); else url.searchParams.delete("parsed");
      window.history.replaceState(null, "", url);
    }

    input.addEventListener("input", apply);
    parsedOnly.addEventListener("change", apply);
    if (input.value || parsedOnly.checked) apply();
  }

  drawSteps();
  setupCopy();
  setupLogFilter();
})();
