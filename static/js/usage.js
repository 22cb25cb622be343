// The usage explorer's charts: GPU-hours by day (stacked by model or tenant) and busy/idle per tenant.
document.addEventListener("DOMContentLoaded", () => {
  const palette = ["#5b3cc4", "#0ea5e9", "#f59e0b", "#10b981", "#ef4444", "#a78bfa", "#14b8a6", "#ec4899", "#94a3b8"];
  const daily = JSON.parse(document.getElementById("daily-data").textContent);
  const dailyCanvas = document.getElementById("daily-chart");
  if (dailyCanvas) {
    const datasets = (key) => daily[key].map((series, index) => ({
      label: series.label,
      data: series.data,
      backgroundColor: series.key === "other" ? "#cbd5e1" : palette[index % palette.length],
      borderRadius: 2,
    }));
    const chart = new Chart(dailyCanvas, {
      type: "bar",
      data: { labels: daily.days.map((day) => day.slice(5)), datasets: datasets("by_model") },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
        scales: {
          x: { stacked: true, grid: { display: false } },
          y: { stacked: true, beginAtZero: true, title: { display: true, text: "GPU-hours" } },
        },
      },
    });
    document.querySelectorAll("input[name=stack-by]").forEach((input) => {
      input.addEventListener("change", () => {
        chart.data.datasets = datasets(input.value);
        chart.update();
      });
    });
  }
  const utilizationCanvas = document.getElementById("utilization-chart");
  if (utilizationCanvas) {
    const rows = JSON.parse(document.getElementById("utilization-data").textContent);
    new Chart(utilizationCanvas, {
      type: "bar",
      data: {
        labels: rows.map((row) => row.tenant),
        datasets: [
          { label: "Busy", data: rows.map((row) => row.busy), backgroundColor: "#5b3cc4", borderRadius: 2 },
          { label: "Idle", data: rows.map((row) => row.idle), backgroundColor: "#fbbf24", borderRadius: 2 },
        ],
      },
      options: {
        indexAxis: "y",
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
        scales: {
          x: { stacked: true, beginAtZero: true, title: { display: true, text: "GPU-hours allocated" } },
          y: { stacked: true, grid: { display: false } },
        },
      },
    });
  }
});
