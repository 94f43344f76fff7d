// Lays out public/docs/: Swagger UI's own files (from the pinned
// swagger-ui-dist package) and a page that points it at /openapi.json.
// Workers static assets serve them, so the API reference needs no CDN and
// renders offline.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "public/docs");
const dist = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
mkdirSync(out, { recursive: true });
for (const file of ["swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "favicon-32x32.png", "favicon-16x16.png"]) {
  copyFileSync(join(dist, file), join(out, file));
}
writeFileSync(
  join(out, "index.html"),
  `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>delayline API</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="icon" type="image/png" href="favicon-32x32.png" sizes="32x32">
  <link rel="stylesheet" href="swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="swagger-ui-bundle.js"></script>
  <script src="swagger-ui-standalone-preset.js"></script>
  <script src="init.js"></script>
</body>
</html>
`,
);
writeFileSync(
  join(out, "init.js"),
  `window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "StandaloneLayout",
  // The token stays in the page's memory: persisting it would keep it in localStorage.
  persistAuthorization: false,
  validatorUrl: null
});
`,
);
