/**
 * Plain-text tables for a terminal: a header row, columns padded to their
 * widest cell, numbers right-aligned. No colours, so the output reads the
 * same in a pipe, a log or a test.
 */

export interface Column<T> {
  header: string;
  /** The cell's text; null and undefined print as "-". */
  value: (row: T) => unknown;
  align?: "left" | "right";
}

/** A cell's text. */
function cell(v: unknown): string {
  if (v === null || v === undefined || v === "") return "-";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

/** Rows under a header; an empty list prints `empty` instead. */
export function table<T>(rows: T[], columns: Array<Column<T>>, empty = "(none)"): string {
  if (rows.length === 0) return empty;
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r)).replace(/\s*\n\s*/g, " ")));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i]!.align === "right" ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join("\n");
}

/** `key  value` lines, keys padded, for one object. */
export function details(pairs: Array<[string, unknown]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join("\n");
}

/** A duration in ms as people say it: 850ms, 12s, 4m 5s, 3h 2m, 2d 1h. */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(ms)}ms`;
  const s = Math.round(abs / 1_000);
  const sign = ms < 0 ? "-" : "";
  if (s < 60) return `${sign}${s}s`;
  if (s < 3_600) return `${sign}${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ""}`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3_600)}h${Math.floor((s % 3_600) / 60) ? ` ${Math.floor((s % 3_600) / 60)}m` : ""}`;
  return `${sign}${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3_600) ? ` ${Math.floor((s % 86_400) / 3_600)}h` : ""}`;
}

/** An ISO time with how far it is from now: `2026-12-01T16:00:00.000Z (in 59m)`. */
export function when(iso: string | null | undefined, now = Date.now()): string | null {
  if (!iso) return null;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const d = at - now;
  return `${iso} (${d >= 0 ? `in ${duration(d)}` : `${duration(-d)} ago`})`;
}

/** A dry run's first ids, one a line after its count. */
export const dryIds = (ids: string[] | undefined) => (ids && ids.length > 0 ? `, first:\n${ids.join("\n")}` : "");
