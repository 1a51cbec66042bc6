// The runs list, live: polls the same page of the same filters as JSON and redraws its rows, so a
// queued run turns running, then completed with its thesis, without a reload. Every value is
// placed as text (textContent), never as HTML: a failure reason can hold anything.
(function () {
  "use strict";
  const list = document.getElementById("runs-list");
  if (!list) return;
  const url = list.dataset.liveUrl;
  const table = document.getElementById("runs");
  const body = table && table.querySelector("tbody");
  const total = document.getElementById("runs-total");
  const state = document.getElementById("runs-live-state");
  const PERIOD_MS = 3000;
  let last = "";
  let busy = false;

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([name, value]) => node.setAttribute(name, value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function cell(children, className) {
    const td = el("td", className ? {class: className} : {});
    children.forEach((child) => td.append(child));
    return td;
  }

  function row(run) {
    const tr = el("tr", {"data-run": String(run.id)});
    const first = [el("a", {href: run.url}, `#${run.id}`)];
    if (run.is_replay) first.push(" ", el("span", {class: "tag"}, "replay"));
    tr.append(cell(first));
    tr.append(cell([run.symbol]), cell([run.as_of]), cell([run.provider]));
    const status = [el("span", {class: `status ${run.status}`}, run.status)];
    if (run.failure_reason) {
      const cut = run.failure_reason.length > 60 ? `${run.failure_reason.slice(0, 59)}…` : run.failure_reason;
      status.push(" ", el("span", {class: "muted small", title: run.failure_reason}, cut));
    }
    tr.append(cell(status));
    tr.append(cell(run.strategy ? [el("a", {href: run.strategy.url}, run.strategy.name)] : ["—"]));
    if (run.thesis) {
      const risk = run.thesis.risk_approved ? el("span", {class: "up"}, "risk ✓") : el("span", {class: "down"}, "risk ✗");
      tr.append(cell([el("a", {class: "thesis-link", href: run.thesis.url}, run.thesis.label), " · ", risk]));
    } else {
      tr.append(cell(["—"]));
    }
    tr.append(cell([run.tokens_label], "num"), cell([run.started]));
    return tr;
  }

  function draw(data) {
    if (!body) return;
    body.replaceChildren(...data.runs.map(row));
    table.classList.toggle("hidden", data.runs.length === 0);
    const empty = document.getElementById("runs-empty");
    if (empty) empty.classList.toggle("hidden", data.runs.length > 0);
    if (total) {
      total.dataset.total = String(data.total);
      total.firstChild.textContent = `${data.total_label} run${data.total === 1 ? "" : "s"}` +
        (data.pages > 1 ? ` · page ${data.page} of ${data.pages}` : "");
    }
  }

  async function poll() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"});
      if (!response.ok) throw new Error(String(response.status));
      const text = await response.text();
      if (text !== last) {
        last = text;
        draw(JSON.parse(text));
      }
      if (state) state.textContent = " · live";
    } catch (error) {
      if (state) state.textContent = " · live updates paused (the server did not answer)";
    } finally {
      busy = false;
    }
  }

  setInterval(poll, PERIOD_MS);
  poll();
})();
