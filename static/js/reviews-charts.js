// Draws each review chart: a <div data-chart="<id>"> whose figure sits in the json_script tag <id>.
// A file, not an inline script: the Content-Security-Policy runs no inline script.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") return;
  document.querySelectorAll("[data-chart]").forEach(function (holder) {
    var data = document.getElementById(holder.dataset.chart);
    if (!data) return;
    var figure = JSON.parse(data.textContent);
    Plotly.newPlot(holder, figure.data, figure.layout, {responsive: true, displaylogo: false, displayModeBar: false})
      .then(function () { holder.dataset.rendered = "true"; });
  });
})();
