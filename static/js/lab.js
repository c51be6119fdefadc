// The lab run page: poll the run while it is queued or running (the progress bar), then draw its charts.
(function () {
  "use strict";
  const live = document.getElementById("lab-live");
  const data = document.getElementById("lab-result");

  if (data && window.KvCharts) {
    const results = JSON.parse(data.textContent);
    for (const canvas of document.querySelectorAll("canvas[data-chart]")) {
      const spec = results[canvas.dataset.chart];
      if (spec && spec.series) window.KvCharts.lineChart(canvas, spec);
    }
  }

  if (!live || !["queued", "running"].includes(live.dataset.status)) return;
  const bar = document.getElementById("lab-progress");
  const message = document.getElementById("lab-message");
  const status = document.getElementById("lab-status");
  let delay = 300;

  async function poll() {
    try {
      const response = await fetch(`/api/lab/runs/${live.dataset.runId}`, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const run = await response.json();
        bar.value = run.progress;
        bar.textContent = `${Math.round(run.progress * 100)}%`;
        message.textContent = run.message || run.status;
        status.textContent = run.status;
        if (run.status === "done" || run.status === "failed") {
          window.location.reload(); // the server renders the tables; this script then draws the charts
          return;
        }
      }
    } catch (err) {
      message.textContent = "Lost contact with the server; retrying...";
    }
    delay = Math.min(delay * 1.3, 2000);
    window.setTimeout(poll, delay);
  }
  window.setTimeout(poll, delay);
})();
