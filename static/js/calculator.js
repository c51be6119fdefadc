// The calculator: draw the chart the server computed; changing a select recalculates (a GET, so the URL keeps it).
(function () {
  "use strict";
  const data = document.getElementById("calc-chart-data");
  const canvas = document.getElementById("calc-chart");
  if (data && canvas && window.KvCharts) window.KvCharts.lineChart(canvas, JSON.parse(data.textContent));
  const form = document.getElementById("calc-form");
  if (!form) return;
  const config = document.getElementById("calc-config");
  for (const select of form.querySelectorAll("select")) {
    select.addEventListener("change", () => {
      // "My config.json" with nothing pasted yet: open the box to paste into, nothing to calculate.
      if (select.id === "calc-model" && select.value === "custom" && config && !config.value.trim()) {
        config.closest("details").open = true;
        config.focus();
        return;
      }
      form.requestSubmit();
    });
  }
})();
