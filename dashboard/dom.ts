/** The dashboard's DOM and formatting helpers. */

export const byId = <T extends HTMLElement = HTMLElement>(id: string) => {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
};

/** An element with text and children; data never goes through innerHTML. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { text?: string; className?: string; title?: string; data?: Record<string, string> } = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.text !== undefined) node.textContent = props.text;
  if (props.className) node.className = props.className;
  if (props.title) node.title = props.title;
  for (const [k, v] of Object.entries(props.data ?? {})) node.dataset[k] = v;
  node.append(...children);
  return node;
}

const numberFormat = new Intl.NumberFormat("en");
export const fmtCount = (n: number) => numberFormat.format(n);

export function fmtMs(ms: number | null): string {
  if (ms === null) return "–";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

export const fmtAgo = (iso: string | null, now: number) => (iso === null ? "never" : `${fmtMs(Math.max(0, now - Date.parse(iso)))} ago`);

// One format for every time the dashboard shows: "Thu, Dec 3, 2026, 13:54:52 UTC".
// UTC unless a time belongs to a zone of its own (a schedule's), so times on
// the page compare at a glance; the ISO value is in each cell's title.
const timeFormats = new Map<string, Intl.DateTimeFormat>();

/** A time (ISO text or epoch ms) in the dashboard's one format, in `timeZone` (default UTC); "–" for none. */
export function fmtTime(at: string | number | null | undefined, timeZone = "UTC"): string {
  if (at === null || at === undefined || at === "") return "–";
  let format = timeFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en", {
      timeZone,
      weekday: "short",
      year: "numeric",
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "short",
    });
    timeFormats.set(timeZone, format);
  }
  return format.format(new Date(at));
}
