// /docs: Swagger UI from the swagger-ui-dist package, bundled here by esbuild so the page needs no
// CDN (it works offline) and no inline script (the Content-Security-Policy allows none).
import SwaggerUIBundle from "swagger-ui-dist/swagger-ui-bundle.js";
import "swagger-ui-dist/swagger-ui.css";

const root = document.getElementById("swagger-ui");
SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  deepLinking: true,
  layout: "BaseLayout",
  presets: [SwaggerUIBundle.presets.apis],
  // The schema is ours and small: no call to the public validator at swagger.io.
  validatorUrl: null,
});
