// Live run page: stage events arrive over the websocket; a slow poll is the safety net for a
// dropped socket or a proxy without websockets. Both just re-render the run body.
(function () {
  "use strict";
  const body = document.getElementById("run-body");
  if (!body) return;
  const url = body.dataset.url;
  const finished = () => {
    const state = document.getElementById("run-state");
    return state && state.dataset.finished === "true";
  };
  let refreshing = false;
  async function refresh() {
    if (refreshing) return;
    refreshing = true;
    try {
      const response = await fetch(url, {headers: {"X-Requested-With": "fetch"}});
      if (response.ok) body.innerHTML = await response.text();
    } finally {
      refreshing = false;
    }
  }
  if (finished()) return;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  try {
    const socket = new WebSocket(`${scheme}://${location.host}/ws/runs/${body.dataset.run}/`);
    socket.onmessage = () => refresh();
  } catch (error) { /* polling below still updates the page */ }
  const timer = setInterval(async () => {
    await refresh();
    if (finished()) clearInterval(timer);
  }, 2500);
})();
