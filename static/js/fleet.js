document.addEventListener("DOMContentLoaded", () => {
  const data = JSON.parse(document.getElementById("capacity-data").textContent);
  new Chart(document.getElementById("capacity-chart"), {
    type: "bar",
    data: {
      labels: data.map((row) => row.label),
      datasets: [
        { label: "Installed", data: data.map((row) => row.installed), backgroundColor: "#c4b5fd" },
        { label: "Reporting healthy", data: data.map((row) => row.healthy), backgroundColor: "#5b3cc4" },
      ],
    },
    options: { animation: false, responsive: true, scales: { y: { beginAtZero: true } } },
  });
});
