// Confirm steps for what cannot be undone (cancel an order, close a position by hand). The step is a
// <details> block, so it works without this file; the script only moves the focus to the reason
// when a step opens, closes the other steps, and lets "Keep it" or Escape back out. A file, not
// inline handlers: the Content-Security-Policy runs no inline script.
(function () {
  "use strict";
  var steps = Array.prototype.slice.call(document.querySelectorAll("details.confirm-step"));
  steps.forEach(function (step) {
    step.addEventListener("toggle", function () {
      if (!step.open) { return; }
      steps.forEach(function (other) { if (other !== step) { other.open = false; } });
      var reason = step.querySelector("input[name]:not([type=hidden]), textarea[name]");
      if (reason) { reason.focus(); }
    });
    step.addEventListener("keydown", function (event) {
      if (event.key === "Escape") { step.open = false; step.querySelector("summary").focus(); }
    });
    var keep = step.querySelector("[data-confirm-close]");
    if (keep) {
      keep.addEventListener("click", function () { step.open = false; step.querySelector("summary").focus(); });
    }
  });
})();
