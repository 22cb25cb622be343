// The tenant's spend page: cumulative spend this month, its forecast and the budget.
document.addEventListener("DOMContentLoaded", () => {
  const data = JSON.parse(document.getElementById("spend-data").textContent);
  const number = (value) => (value === null ? null : Number(value));
  const datasets = [
    {
      label: "Spent",
      data: data.spent.map(number),
      borderColor: "#5b3cc4",
      backgroundColor: "rgba(91, 60, 196, .12)",
      fill: true,
      tension: 0.2,
      pointRadius: 0,
      spanGaps: false,
    },
    {
      label: "Forecast",
      data: data.forecast.map(number),
      borderColor: "#6c757d",
      borderDash: [6, 4],
      pointRadius: 0,
      fill: false,
    },
  ];
  if (data.budget !== null) {
    datasets.push({
      label: "Budget",
      data: data.labels.map(() => Number(data.budget)),
      borderColor: "#dc3545",
      borderWidth: 1.5,
      pointRadius: 0,
      fill: false,
    });
  }
  new Chart(document.getElementById("spend-chart"), {
    type: "line",
    data: { labels: data.labels.map((day) => day.slice(8)), datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false },
      scales: {
        y: { beginAtZero: true, title: { display: true, text: data.currency } },
        x: { title: { display: true, text: "Day of the month" } },
      },
    },
  });
});
