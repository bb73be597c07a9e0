// Tell the server the viewer's time zone once, so times render in it.
(function () {
  try {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    var current = (document.cookie.match(/(?:^|; )portal_tz=([^;]*)/) || [])[1];
    if (zone && decodeURIComponent(current || "") !== zone) {
      document.cookie = "portal_tz=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; samesite=lax";
      if (!current) { window.location.reload(); }
    }
  } catch (e) { /* no Intl: times stay in UTC, labelled as such */ }
})();

// Following a preview (a link or the ticked-lines form) or opening a pull request reads the
// repository before the next page answers: show the progress line at once, with htmx's
// `htmx-request` class as an htmx request would, instead of a page that seems not to react.
// Plain navigation stays (the back button, a 400's error page), only the wait is said.
(function () {
  function progress() { return document.getElementById("forge-progress"); }
  function kindOf(url) {
    var bar = progress();
    if (!bar || !url) { return ""; }
    var path;
    try { path = new URL(url, window.location.href).pathname; } catch (e) { return ""; }
    if (path === bar.dataset.preview) { return "preview"; }
    if (path === bar.dataset.open) { return "open"; }
    return "";
  }
  function show(kind, busy) {
    var bar = progress();
    bar.querySelector(".text").textContent = bar.dataset[kind + "Text"];
    bar.hidden = false;
    bar.classList.add("htmx-request");
    if (busy) { busy.setAttribute("aria-busy", "true"); busy.classList.add("htmx-request"); }
  }
  function hide() {
    var bar = progress();
    if (bar) { bar.hidden = true; bar.classList.remove("htmx-request"); }
    document.querySelectorAll("[aria-busy=true]").forEach(function (el) {
      el.removeAttribute("aria-busy"); el.classList.remove("htmx-request");
    });
  }
  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) { return; }
    var link = event.target.closest ? event.target.closest("a[href]") : null;
    if (!link || (link.target && link.target !== "_self")) { return; }
    var kind = kindOf(link.href);
    if (kind) { show(kind, link); }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || (form.target && form.target !== "_self")) { return; }
    var kind = kindOf(form.action);
    if (kind) { show(kind, event.submitter || form); }
  });
  // Back from the preview, the browser may restore this page as it was left: spinning.
  window.addEventListener("pageshow", hide);
})();
