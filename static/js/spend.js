// The tenant's spend page: cumulative spend this month (today's with the estimate of what runs
// since the last metered hour), its forecast from today to month end, and the budget.
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
  // The budget is a labelled reference line, sent only when it is within reach of the spend
  // (the page says where a far higher budget is): it never flattens the spend line.
  if (data.budget !== null) {
    datasets.push({
      label: data.budget_label || "Budget",
      data: data.labels.map(() => Number(data.budget)),
      borderColor: "#dc3545",
      borderWidth: 1.5,
      borderDash: [2, 3],
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
