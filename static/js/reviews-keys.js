// Keyboard shortcuts of the review pages (loaded on every page under /reviews/ by base.html).
//
// On FATE > Reviews one review card is selected (the first by default; arrow keys or j/k move it):
// Enter opens its full report, D its diff from the previous review, H the heuristic detail, P the
// position detail. On the other review pages (a report, a diff, a lifecycle, a heuristic) Esc goes
// back to the reviews page the person came from (or the page's own back link, else the reviews). "?" opens the list of keys; Esc closes it. Nothing is captured while a
// person types in a field, or with Ctrl, Alt or Cmd held (the browser's own shortcuts).
(function () {
  "use strict";
  var HOME = "/reviews/";
  var cards = Array.prototype.slice.call(document.querySelectorAll(".review-card[data-report-url]"));
  var selected = -1;
  var dialog = null;
  var closeButton = null;
  var lastFocus = null;

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    return target.isContentEditable || tag === "input" || tag === "textarea" || tag === "select";
  }

  function actionable(target) {
    if (!target || !target.closest) return false;
    return target.closest("a[href], button, summary, [role=button]") !== null;
  }

  function select(index, focus) {
    if (!cards.length) return;
    selected = (index + cards.length) % cards.length;
    cards.forEach(function (card, at) {
      var on = at === selected;
      card.classList.toggle("selected", on);
      if (on) card.setAttribute("aria-current", "true"); else card.removeAttribute("aria-current");
    });
    if (!focus) return;
    var card = cards[selected];
    card.focus({preventScroll: true});
    card.scrollIntoView({block: "nearest", inline: "nearest"});
  }

  function go(url) {
    if (url) window.location.assign(url);
  }

  // Esc leads back to the reviews page a person came from (its book kept), else to the page's own
  // back link (a heuristic's leads to the playbook), else to the reviews.
  function backUrl() {
    try {
      var from = new URL(document.referrer);
      if (from.origin === window.location.origin && from.pathname === HOME) return from.href;
    } catch (error) { /* no referrer, or not a URL */ }
    var link = document.querySelector("a[data-back]");
    return link ? link.getAttribute("href") : HOME;
  }

  function shortcuts() {
    var rows = [];
    if (cards.length) {
      rows.push(["↑ ↓ ← → or j k", "choose a review"]);
      rows.push(["Enter", "open the chosen review's full report"]);
      rows.push(["D", "its diff from the previous review of the same horizon"]);
      rows.push(["H", "the heuristic detail (the first of its audit, or the playbook)"]);
      rows.push(["P", "the position detail (its worst position's lifecycle, else its best)"]);
    } else {
      rows.push(["Esc", "back to the reviews"]);
    }
    rows.push(["?", "this list of keys"]);
    rows.push(["Esc", "close this list"]);
    return rows;
  }

  function buildDialog() {
    var backdrop = document.createElement("div");
    backdrop.className = "keys-backdrop";
    backdrop.hidden = true;
    var box = document.createElement("div");
    box.className = "keys-dialog";
    box.id = "keys-help";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.setAttribute("aria-labelledby", "keys-help-title");
    var title = document.createElement("h2");
    title.id = "keys-help-title";
    title.textContent = "Keyboard shortcuts";
    box.appendChild(title);
    var list = document.createElement("dl");
    shortcuts().forEach(function (row) {
      var key = document.createElement("dt");
      var kbd = document.createElement("kbd");
      kbd.textContent = row[0];
      key.appendChild(kbd);
      var what = document.createElement("dd");
      what.textContent = row[1];
      list.appendChild(key);
      list.appendChild(what);
    });
    box.appendChild(list);
    closeButton = document.createElement("button");
    closeButton.type = "button";
    closeButton.className = "link-button";
    closeButton.textContent = "Close (Esc)";
    closeButton.addEventListener("click", closeHelp);
    box.appendChild(closeButton);
    backdrop.appendChild(box);
    backdrop.addEventListener("click", function (event) { if (event.target === backdrop) closeHelp(); });
    document.body.appendChild(backdrop);
    return backdrop;
  }

  function helpOpen() {
    return dialog !== null && !dialog.hidden;
  }

  function openHelp() {
    if (dialog === null) dialog = buildDialog();
    lastFocus = document.activeElement;
    dialog.hidden = false;
    closeButton.focus();
  }

  function closeHelp() {
    if (!helpOpen()) return;
    dialog.hidden = true;
    if (lastFocus && lastFocus.focus) lastFocus.focus();
  }

  var MOVES = {ArrowDown: 1, ArrowRight: 1, j: 1, ArrowUp: -1, ArrowLeft: -1, k: -1};
  var OPENS = {d: "diffUrl", h: "heuristicUrl", p: "positionUrl"};

  function onCardKey(event) {
    var key = event.key;
    if (key in MOVES) {
      select(selected + MOVES[key], true);
      return true;
    }
    var card = cards[selected];
    if (key === "Enter") {
      if (actionable(event.target)) return false; // a focused link or button does its own thing
      go(card.dataset.reportUrl);
      return true;
    }
    var lower = key.toLowerCase();
    if (lower in OPENS) {
      go(card.dataset[OPENS[lower]]);
      return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (helpOpen()) {
      if (event.key === "Escape") closeHelp();
      else if (event.key === "Tab") closeButton.focus(); // focus stays in the dialog
      else return;
      event.preventDefault();
      return;
    }
    if (typing(event.target)) return;
    var handled = false;
    if (event.key === "?") {
      openHelp();
      handled = true;
    } else if (cards.length) {
      handled = onCardKey(event);
    } else if (event.key === "Escape" && window.location.pathname !== HOME) {
      go(backUrl());
      handled = true;
    }
    if (handled) event.preventDefault();
  });

  cards.forEach(function (card, at) {
    card.addEventListener("focus", function () { if (selected !== at) select(at, false); });
    card.addEventListener("click", function (event) { if (!actionable(event.target)) select(at, true); });
  });
  document.querySelectorAll("[data-keys-help]").forEach(function (button) {
    button.addEventListener("click", openHelp);
  });
  if (cards.length) select(0, false);
})();
