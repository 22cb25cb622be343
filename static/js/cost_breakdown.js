// The cost breakdown's chart: each workload's, person's or label's total, largest first.
document.addEventListener("DOMContentLoaded", () => {
  const canvas = document.getElementById("cost-breakdown-chart");
  const source = document.getElementById("cost-breakdown-data");
  if (!canvas || !source) return;
  const data = JSON.parse(source.textContent);
  new Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [{ label: `Total (${data.currency})`, data: data.values.map(Number), backgroundColor: "#5b3cc4", borderRadius: 2 }],
    },
    options: {
      indexAxis: "y",
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: { legend: { display: false } },
      scales: {
        x: { beginAtZero: true, title: { display: true, text: data.currency } },
        y: { grid: { display: false } },
      },
    },
  });
});
