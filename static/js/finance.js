// Finance's pages: select drafts for a bulk issue, and the cost-center chart.
(() => {
  const selectedCount = () => {
    const boxes = [...document.querySelectorAll(".draft-check")];
    const chosen = boxes.filter((box) => box.checked).length;
    const label = document.getElementById("selected-count");
    if (label) label.textContent = chosen ? `${chosen} selected` : "";
    const all = document.getElementById("select-all-drafts");
    if (all) {
      all.checked = boxes.length > 0 && chosen === boxes.length;
      all.indeterminate = chosen > 0 && chosen < boxes.length;
    }
  };
  document.addEventListener("change", (event) => {
    if (event.target.id === "select-all-drafts") {
      document.querySelectorAll(".draft-check").forEach((box) => { box.checked = event.target.checked; });
    }
    if (event.target.id === "select-all-drafts" || event.target.classList.contains("draft-check")) {
      selectedCount();
    }
  });
  // Ticking a box is not a filter change: the filter form listens for changes bubbling up.
  document.addEventListener("htmx:afterSwap", selectedCount);

  const chartData = document.getElementById("cost-center-data");
  if (chartData && window.Chart) {
    const data = JSON.parse(chartData.textContent);
    const palette = ["#5b3cc4", "#0aa2c0", "#198754", "#b58105", "#dc3545", "#6c757d", "#c4b5fd", "#343a40"];
    new Chart(document.getElementById("cost-center-chart"), {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: data.datasets.map((set, i) => ({ ...set, backgroundColor: palette[i % palette.length] })),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        datasets: { bar: { maxBarThickness: 90 } },
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: data.currency } } },
        plugins: { legend: { position: "bottom" } },
      },
    });
  }
})();
