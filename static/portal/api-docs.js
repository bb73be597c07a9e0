// Start Swagger UI (drf-spectacular-sidecar's bundle, loaded before this file) on /api/docs.
// The schema URL and SWAGGER_UI_SETTINGS come from the page, so this file holds no configuration.
(function () {
  var root = document.getElementById("swagger-ui");
  var settings = JSON.parse(root.dataset.settings || "{}");
  var csrf = (document.cookie.match(/(?:^|; )csrftoken=([^;]*)/) || [])[1];
  window.ui = SwaggerUIBundle(Object.assign({
    url: root.dataset.schemaUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // "Try it out" runs in this browser with the viewer's session; a POST would need the CSRF token.
    requestInterceptor: function (request) {
      if (csrf) { request.headers[root.dataset.csrfHeader] = decodeURIComponent(csrf); }
      return request;
    }
  }, settings));
})();
