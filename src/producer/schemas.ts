// Every schema of the API, one module per resource. The client's types
// (src/client) and tests read them from here; the routes import the module
// of their resource.
export * from "./dead-schemas.js";
export * from "./job-schemas.js";
export * from "./schema-parts.js";
export * from "./stats-schemas.js";
export * from "./topic-schemas.js";
