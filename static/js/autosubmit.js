// A <select data-autosubmit> submits its form when changed. A file, not an onchange attribute:
// the Content-Security-Policy runs no inline script or event handler.
(function () {
  "use strict";
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
