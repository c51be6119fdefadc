// Chart.js for the lab and the calculator, bundled by esbuild into static/dist/charts.js.
// Pages pass data in <script type="application/json"> blocks; nothing here fetches anything.
import {
  Chart,
  LineController,
  ScatterController,
  LineElement,
  PointElement,
  LinearScale,
  LogarithmicScale,
  Legend,
  Tooltip,
  Title,
} from "chart.js";

Chart.register(
  LineController, ScatterController, LineElement, PointElement, LinearScale, LogarithmicScale, Legend, Tooltip, Title,
);

const PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2"];

// spec: {title, x_label, y_label, y2_label?, x_integer?, series: [{label, points: [[x, y]...], dashed?,
//        axis?: "right"}], seed_points?: [[x, y]...], hlines?: [{label, y}]}
// A series with axis "right" is read against a second y-axis (y2_label): two quantities of different
// units and sizes (tokens/s in thousands, ms below one) never share one scale. x_integer: ticks only
// at whole numbers (batch sizes), never 1.5.
function lineChart(canvas, spec) {
  const datasets = spec.series.map((s, i) => ({
    label: s.label,
    data: s.points.map(([x, y]) => ({ x, y })),
    borderColor: PALETTE[i % PALETTE.length],
    backgroundColor: PALETTE[i % PALETTE.length],
    borderDash: s.dashed ? [6, 4] : [],
    yAxisID: s.axis === "right" ? "y2" : "y",
    tension: 0,
    showLine: true,
  }));
  if (spec.seed_points && spec.seed_points.length) {
    datasets.push({
      type: "scatter",
      label: "seed (GPT-2 small, our CPU run)",
      data: spec.seed_points.map(([x, y]) => ({ x, y })),
      pointStyle: "crossRot",
      pointRadius: 8,
      borderWidth: 2,
      borderColor: "#111827",
      backgroundColor: "#111827",
    });
  }
  const xs = datasets.flatMap((d) => d.data.map((p) => p.x));
  for (const [i, line] of (spec.hlines || []).entries()) {
    datasets.push({
      label: line.label,
      data: [{ x: Math.min(...xs), y: line.y }, { x: Math.max(...xs), y: line.y }],
      borderColor: "#6b7280",
      borderDash: [2, 3 + i],
      pointRadius: 0,
      showLine: true,
    });
  }
  return new Chart(canvas, {
    type: "line",
    data: { datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      plugins: { title: { display: !!spec.title, text: spec.title }, legend: { position: "bottom" } },
      scales: {
        x: {
          type: "linear",
          title: { display: true, text: spec.x_label || "" },
          ticks: spec.x_integer ? { callback: (v) => (Number.isInteger(v) ? v : null) } : {},
        },
        y: { type: "linear", beginAtZero: true, title: { display: true, text: spec.y_label || "" } },
        ...(spec.series.some((s) => s.axis === "right")
          ? {
              y2: {
                type: "linear",
                position: "right",
                beginAtZero: true,
                grid: { drawOnChartArea: false },
                title: { display: true, text: spec.y2_label || "" },
              },
            }
          : {}),
      },
    },
  });
}

window.KvCharts = { lineChart, Chart };
