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
