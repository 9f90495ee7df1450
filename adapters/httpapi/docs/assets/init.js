// Renders the API document of this origin with Swagger UI (vendored, see
// scripts/vendor-docs.sh). Served from 'self' so that the page needs no
// inline script under its Content-Security-Policy.
//
// Nothing leaves the origin: the document is /openapi.json of this server,
// the online validator badge is off (validatorUrl null), the top bar that
// loads any URL is not used (BaseLayout without the standalone preset), and
// ?url= / ?configUrl= in the address are ignored (queryConfigEnabled false).
// A pasted token lives in the page only (persistAuthorization false: not in
// localStorage).
"use strict";

window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis],
  deepLinking: true,
  validatorUrl: null,
  queryConfigEnabled: false,
  persistAuthorization: false,
  displayRequestDuration: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
  withCredentials: false,
});
