/**
 * Writes docs/configuration.md's settings table from the declarations
 * (src/settings/declarations.ts): `npm run docs:settings`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withSettingsTable } from "../src/settings/table.js";

const path = join(import.meta.dirname, "../docs/configuration.md");
writeFileSync(path, withSettingsTable(readFileSync(path, "utf8")));
