/**
 * The configuration reference's table (docs/configuration.md), generated
 * from the settings' declarations: `npm run docs:settings` writes it between
 * its markers, and test/node/settings.test.ts fails when the file's differs.
 */
import { SETTING_DECLARATIONS } from "./declarations.js";

const TABLE_BEGIN = "<!-- settings:begin (generated from src/settings/declarations.ts by `npm run docs:settings`) -->";
const TABLE_END = "<!-- settings:end -->";

/** The table: one row per setting, in declaration order. */
export function settingsTable(): string {
  const rows = Object.entries(SETTING_DECLARATIONS).map(([name, d]) => `| \`${name}\` | ${d.shownDefault} | ${d.accepts} | ${d.doc} |`);
  return ["| setting | default | accepts | meaning |", "|---|---|---|---|", ...rows].join("\n");
}

/** `doc` with the text between its markers replaced by the table; throws when a marker is missing. */
export function withSettingsTable(doc: string): string {
  const begin = doc.indexOf(TABLE_BEGIN);
  const end = doc.indexOf(TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`the document has no ${TABLE_BEGIN} … ${TABLE_END} markers`);
  return `${doc.slice(0, begin + TABLE_BEGIN.length)}\n${settingsTable()}\n${doc.slice(end)}`;
}
