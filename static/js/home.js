// The home page refreshes its figures without a reload: every ~10 s it reads the small JSON the
// server formats (money already in the desk's format) and sets text only, never HTML, so nothing
// in the answer can become markup. A file, not an inline script: the Content-Security-Policy.
(function () {
  "use strict";
  var clock = document.getElementById("home-refresh");
  if (!clock || !window.fetch) { return; }
  var url = clock.getAttribute("data-url");
  var every = parseInt(clock.getAttribute("data-every"), 10) || 10000;

  function setText(name, value) {
    document.querySelectorAll('[data-home="' + name + '"]').forEach(function (node) {
      node.textContent = value === null || value === undefined ? "—" : String(value);
    });
  }

  function setSign(name, sign) {
    document.querySelectorAll('[data-home-signed="' + name + '"]').forEach(function (node) {
      node.classList.toggle("up", sign > 0);
      node.classList.toggle("down", sign < 0);
    });
  }

  function setList(name, items, render) {
    document.querySelectorAll('[data-home-list="' + name + '"]').forEach(function (list) {
      while (list.firstChild) { list.removeChild(list.firstChild); }
      items.forEach(function (item) { list.appendChild(render(item)); });
    });
  }

  function pendingItem(item) {
    var li = document.createElement("li");
    var link = document.createElement("a");
    link.href = item.link;
    link.textContent = item.label;
    var detail = document.createElement("span");
    detail.className = "muted";
    detail.textContent = " conviction " + item.conviction + " · " + item.at_risk + " at risk";
    li.appendChild(link);
    li.appendChild(detail);
    return li;
  }

  function textItem(text) {
    var li = document.createElement("li");
    li.textContent = text;
    return li;
  }

  function emptyItem(text) {
    var li = textItem(text);
    li.className = "muted";
    return li;
  }

  function apply(data) {
    ["pending_count", "pnl_total", "pnl_realised", "pnl_unrealised", "pnl_today",
     "open_count", "working_count", "running_count", "failed_count"].forEach(function (name) {
      setText(name, data[name]);
    });
    setSign("pnl_total", data.pnl_total_sign);
    setSign("pnl_today", data.pnl_today_sign);
    setList("pending", data.pending.length ? data.pending : [null], function (item) {
      return item ? pendingItem(item) : emptyItem("Nothing waits for a decision.");
    });
    setList("stale", data.stale, textItem);
    var banner = document.getElementById("stale-banner");
    if (banner) { banner.classList.toggle("is-hidden", data.stale.length === 0); }
    var pendingCard = document.getElementById("home-pending");
    if (pendingCard) { pendingCard.classList.toggle("needs-you", data.pending_count > 0); }
    if (data.nav) {
      document.querySelectorAll('[data-nav="pending"]').forEach(function (node) {
        if (data.nav.pending !== null) { node.textContent = String(data.nav.pending); }
        node.parentNode.classList.toggle("due", data.nav.pending > 0);
      });
      document.querySelectorAll('[data-nav="unread"]').forEach(function (node) {
        node.textContent = String(data.nav.unread);
        node.parentNode.classList.toggle("due", data.nav.unread > 0);
      });
    }
    setText("at", data.at);  // the desk's clock, as the server printed the page
  }

  function poll() {
    if (document.hidden) { return; }
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) { if (data) { apply(data); } })
      .catch(function () { /* the next poll tries again */ });
  }

  window.setInterval(poll, every);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { poll(); } });
})();
