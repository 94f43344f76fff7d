import type { Env } from "./env.js";
import "./handlers/index.js";
import { app } from "./producer/app.js";
import { scheduled } from "./tick/scheduled.js";

export { TickChunk } from "./tick/chunk.js";

export default {
  fetch: app.fetch,
  scheduled,
} satisfies ExportedHandler<Env>;
