/**
 * This repository's own deployment (`npm start`, `npm run deploy`): the
 * library with no code handlers, so every topic is delivered over http. A
 * deployment with handlers of its own passes them here, as a Worker that
 * installs the package does (docs/handlers.md).
 */
import { delayline, type Env } from "../src/index.js";

const dl = delayline();

export default dl satisfies ExportedHandler<Env>;
export const TickChunk = dl.TickChunk;
export const TickAlarm = dl.TickAlarm;
