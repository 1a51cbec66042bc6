// The navigation on a narrow screen: the links fold behind the "Menu" button, which opens and
// closes them. A file, not an inline script: the Content-Security-Policy runs none. Without this
// script the links simply wrap under the brand (desk.css), so nothing is out of reach.
(function () {
  "use strict";
  var header = document.getElementById("topbar");
  var toggle = document.getElementById("nav-toggle");
  if (!header || !toggle) { return; }
  header.classList.add("js-nav");
  toggle.hidden = false;
  function setOpen(open) {
    header.classList.toggle("nav-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    toggle.textContent = open ? "Close" : "Menu";
  }
  toggle.addEventListener("click", function () {
    setOpen(!header.classList.contains("nav-open"));
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && header.classList.contains("nav-open")) {
      setOpen(false);
      toggle.focus();
    }
  });
})();
