// The strategies page, live: polls the page's state as JSON and places it — each strategy's
// performance, its latest replay job's progress bar, status, ETA and which of its buttons apply,
// and the recent strategy runs with links to their pipeline runs and theses. Values are placed as
// text (textContent), never as HTML. Buttons exist only for those allowed to use them.
(function () {
  "use strict";
  const root = document.getElementById("strategies-live");
  if (!root) return;
  const url = root.dataset.stateUrl;
  const PERIOD_MS = 2000;
  let busy = false;
  let last = "";

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([name, value]) => node.setAttribute(name, value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function setText(scope, selector, text) {
    const node = scope.querySelector(selector);
    if (node && node.textContent !== text) node.textContent = text;
  }

  function placePerformance(strategy) {
    const table = document.getElementById(`perf-${strategy.id}`);
    if (!table) return;
    Object.entries(strategy.performance).forEach(([kind, labels]) => {
      const row = table.querySelector(`tr[data-kind="${kind}"]`);
      if (!row) return;
      Object.entries(labels).forEach(([field, label]) => setText(row, `[data-field="${field}"]`, label));
    });
  }

  function placeJob(strategy) {
    const box = document.getElementById(`replay-job-${strategy.id}`);
    const job = strategy.job;
    if (!box || !job) return;
    box.classList.remove("hidden");
    box.dataset.status = job.status;
    setText(box, ".job-window", job.window);
    setText(box, ".job-policy", job.policy);
    setText(box, ".job-provider", job.provider);
    const status = box.querySelector(".job-status");
    if (status) {
      status.textContent = job.status;
      status.className = `status job-status ${job.status}`;
    }
    setText(box, ".job-days", `${job.days_done} / ${job.days_total} sessions`);
    setText(box, ".job-percent", job.percent_label);
    setText(box, ".job-eta", job.eta_label ? ` · about ${job.eta_label} left` : "");
    const bar = box.querySelector("progress");
    if (bar) bar.value = job.percent;
    const error = box.querySelector(".job-error");
    if (error) {
      error.textContent = job.error;
      error.classList.toggle("hidden", !job.error);
    }
    const cancel = box.querySelector("form.job-cancel");
    if (cancel) {
      cancel.action = job.cancel_url;
      cancel.classList.toggle("hidden", !job.can_cancel);
    }
    const resume = box.querySelector("form.job-resume");
    if (resume) {
      resume.action = job.resume_url;
      resume.classList.toggle("hidden", !job.can_resume);
    }
  }

  function runLinks(cell, run) {
    cell.replaceChildren();
    if (!run.runs.length) {
      cell.append(el("span", {class: "muted"}, "—"));
      return;
    }
    run.runs.forEach((pipeline, index) => {
      if (index) cell.append(el("br"));
      cell.append(el("a", {href: pipeline.url}, `#${pipeline.id} ${pipeline.symbol}`));
      if (pipeline.thesis_url) {
        cell.append(" → ", el("a", {class: "thesis-link", href: pipeline.thesis_url}, pipeline.thesis_label));
      }
    });
  }

  function placeRuns(runs) {
    const table = document.getElementById("strategy-runs");
    const body = table && table.querySelector("tbody");
    if (!body) return;
    runs.slice().reverse().forEach((run) => {
      let row = body.querySelector(`tr[data-strategy-run="${run.id}"]`);
      if (!row) {
        // A strategy run started since the page loaded: its row, with what the poll knows of it.
        row = el("tr", {"data-strategy-run": String(run.id)});
        row.append(el("td", {}, run.strategy), el("td", {}, run.as_of));
        const decision = el("td");
        decision.append(el("span", {class: `status decision ${run.decision}`}, run.decision));
        const count = el("td", {class: "num"});
        count.append(el("a", {class: "pipeline-count", href: run.runs_url}, String(run.pipeline_count)));
        row.append(decision, el("td", {class: "small"}), el("td", {class: "small critique-cell"}), count);
        row.append(el("td", {class: "small run-links", "data-strategy-run": String(run.id)}));
        row.append(el("td", {}, run.runs_url.includes("kind=replay") ? "replay" : "live"));
        body.prepend(row);
      }
      const decision = row.querySelector(".decision");
      if (decision && decision.textContent !== run.decision) {
        decision.textContent = run.decision;
        decision.className = `status decision ${run.decision}`;
      }
      setText(row, ".pipeline-count", String(run.pipeline_count));
      const links = row.querySelector(".run-links");
      if (links) runLinks(links, run);
    });
  }

  async function poll() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"});
      if (!response.ok) return;
      const text = await response.text();
      if (text === last) return;
      last = text;
      const state = JSON.parse(text);
      state.strategies.forEach((strategy) => {
        placePerformance(strategy);
        placeJob(strategy);
      });
      placeRuns(state.runs);
    } catch (error) {
      /* the next poll tries again */
    } finally {
      busy = false;
    }
  }

  setInterval(poll, PERIOD_MS);
})();
