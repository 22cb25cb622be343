// The workload page's GPU use card: a line per GPU in each of its three charts (utilization,
// memory, power). The card comes by htmx (after the page, and again for each period), so its
// charts are drawn whenever htmx brings one in, and the old ones let go before it is replaced.
(() => {
  const palette = ["#5b3cc4", "#0ea5e9", "#f59e0b", "#10b981", "#ef4444", "#a78bfa", "#14b8a6", "#ec4899"];
  const limits = { utilization: 100 };

  const draw = (root) => {
    const source = root.querySelector && root.querySelector("#gpu-use-data");
    if (!source) return;
    const data = JSON.parse(source.textContent);
    root.querySelectorAll("canvas[data-gpu-chart]").forEach((canvas) => {
      const key = canvas.dataset.gpuChart;
      const lines = data.charts[key].lines;
      new Chart(canvas, {
        type: "line",
        data: {
          labels: data.labels,
          datasets: lines.map((line, index) => ({
            label: line.label,
            data: line.data,
            borderColor: palette[index % palette.length],
            borderWidth: 1.5,
            pointRadius: 0,
            spanGaps: false,
            tension: 0.2,
          })),
        },
        options: {
          animation: false,
          responsive: true,
          maintainAspectRatio: false,
          interaction: { mode: "index", intersect: false },
          plugins: { legend: { display: false } },
          scales: {
            x: { grid: { display: false }, ticks: { maxTicksLimit: 4, maxRotation: 0 } },
            y: { beginAtZero: true, suggestedMax: limits[key], ticks: { maxTicksLimit: 5 } },
          },
        },
      });
    });
  };

  document.addEventListener("htmx:load", (event) => draw(event.detail.elt));
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.target.id !== "gpu-use") return;
    event.detail.target.querySelectorAll("canvas[data-gpu-chart]").forEach((canvas) => {
      const chart = Chart.getChart(canvas);
      if (chart) chart.destroy();
    });
  });
})();
