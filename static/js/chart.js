// Draws every figure whose data sits in a json_script tag named "<div id>-data" / "chart-data".
(function () {
  "use strict";
  const holder = document.getElementById("price-chart");
  const data = document.getElementById("chart-data");
  if (!holder || !data || typeof Plotly === "undefined") return;
  const figure = JSON.parse(data.textContent);
  Plotly.newPlot(holder, figure.data, figure.layout, {responsive: true, displaylogo: false})
    .then(function () { holder.dataset.rendered = "true"; });
})();
