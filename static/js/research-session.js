// Research session page: draws both charts, then polls the session's small JSON endpoint every few
// seconds while it runs. New trials arrive as rendered table rows (escaped by the server), the charts
// are redrawn from the figures it sends, and when the session ends the results block (PBO, shortlist,
// attach forms) is fetched and swapped in: no reload. A file, not an inline script: the
// Content-Security-Policy runs no inline script.
(function () {
  "use strict";
  var table = document.getElementById("trials");
  if (!table) return;
  var POLL_MS = 2000;
  var rows = document.getElementById("trial-rows");
  var empty = document.getElementById("no-trials");
  var after = parseInt(table.dataset.after || "0", 10);
  var charts = {dsr: "dsr-chart", folds: "folds-chart"};
  var config = {responsive: true, displaylogo: false, displayModeBar: false};

  function draw(name, figure) {
    var holder = document.getElementById(charts[name]);
    if (!holder || typeof Plotly === "undefined" || !figure) return;
    Plotly.react(holder, figure.data, figure.layout, config).then(function () {
      holder.dataset.rendered = "true";
    });
  }

  Object.keys(charts).forEach(function (name) {
    var data = document.getElementById(charts[name] + "-data");
    if (data) draw(name, JSON.parse(data.textContent));
  });

  function text(id, value) {
    var node = document.getElementById(id);
    if (node && value !== undefined && value !== null) node.textContent = String(value);
  }

  function showStatus(state) {
    var status = document.getElementById("session-status");
    if (status) {
      status.textContent = state.status;
      status.className = "status " + state.status;
    }
    text("session-trials", state.n_trials);
    text("session-data", state.data_text);
    text("session-holdout", state.holdout_text);
    text("session-tokens", Number(state.tokens_used).toLocaleString("en-US"));
    if (state.stop_reason || state.error) text("session-stop", [state.stop_reason, state.error].filter(Boolean).join(" "));
  }

  async function loadResults() {
    var holder = document.getElementById("session-results");
    var response = await fetch(table.dataset.results, {headers: {"X-Requested-With": "fetch"}});
    if (holder && response.ok) holder.innerHTML = await response.text();
    var cancel = document.getElementById("cancel-session");
    if (cancel) cancel.remove();
  }

  var polling = false;
  var timer = null;
  async function poll() {
    if (polling) return;
    polling = true;
    try {
      var response = await fetch(table.dataset.live + "?after=" + after, {headers: {"X-Requested-With": "fetch"}});
      if (!response.ok) return;
      var state = await response.json();
      if (state.rows) {
        rows.insertAdjacentHTML("beforeend", state.rows);
        if (empty) empty.hidden = true;
      }
      after = Math.max(after, state.last_number || 0);
      table.dataset.after = String(after);
      showStatus(state);
      draw("dsr", state.charts && state.charts.dsr);
      draw("folds", state.charts && state.charts.folds);
      if (state.finished) {
        clearInterval(timer);
        table.dataset.finished = "true";
        await loadResults();
      }
    } finally {
      polling = false;
    }
  }

  if (table.dataset.finished === "true") return;
  timer = setInterval(poll, POLL_MS);
  poll();
})();
