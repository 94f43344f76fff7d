// Everything generated before the Worker can build: the Lua scripts as a
// TypeScript module, and the static pages (API reference, dashboard), their
// headers and the icon. Run by npm ci (prepare), npm test, npm start and deploys.
import "./build-lua.mjs";
import "./build-docs.mjs";
import "./build-dashboard.mjs";
import "./build-headers.mjs";
import "./build-favicon.mjs";
