/**
 * The schedules table: each recurring schedule with its expression (a cron
 * expression with cronstrue's reading of it, or an interval), time zone, next
 * run, last run and its job's state, and whether it is paused; with pause,
 * resume and delete. Paged with the API's cursors; refreshed with the page.
 */
import cronstrue from "cronstrue";
import type { Delayline, Schedule } from "../src/client/index.js";
import { byId, el, fmtCount, fmtMs, fmtTime } from "./dom.js";

const PAGE = 50;

/** What the table needs from the page around it. */
export interface ScheduleHost {
  /** The signed-in client, or null. */
  client(): Delayline | null;
  /** Runs an action from a button, showing errors as the page does. */
  act(work: () => Promise<unknown>): Promise<void>;
  /** Opens the job view for a schedule's last job. */
  openJob(id: string): Promise<void>;
}

/**
 * cronstrue's English reading of a cron expression, or null where it cannot
 * read one croner accepts (e.g. `5#L`): the expression itself still shows.
 * 24-hour times, so the reading matches the next-run column.
 */
function describeCron(expression: string): string | null {
  try {
    return cronstrue.toString(expression, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
  } catch {
    return null;
  }
}

const UNITS: Array<[number, string]> = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1_000, "s"],
];

/** An interval in the largest unit that holds it whole: "every 30 s", "every 90 s", "every 2 h". */
function describeEvery(ms: number): string {
  for (const [size, unit] of UNITS) if (ms % size === 0) return `every ${fmtCount(ms / size)} ${unit}`;
  return `every ${fmtCount(ms)} ms`;
}

// A schedule's times read in its own zone, where its cron expression is read
// too (09:00 Berlin shows as 09:00, not as UTC), in the dashboard's one format.
const inZone = (iso: string, timezone: string) => fmtTime(iso, timezone);

export class ScheduleTable {
  /** How many pages are shown: a refresh reloads as many, so "Load more" survives it. */
  private pages = 1;
  /** Bumped by every load; an answer to an older load is dropped, so a slow refresh cannot undo a newer render. */
  private generation = 0;

  constructor(private readonly host: ScheduleHost) {
    byId("schedules-more").addEventListener(
      "click",
      () =>
        void host.act(() => {
          this.pages++;
          return this.refresh();
        }),
    );
  }

  /** Reloads the pages shown and redraws the table; errors go to the caller. */
  async refresh(): Promise<void> {
    const client = this.host.client();
    if (!client) return;
    const generation = ++this.generation;
    const schedules: Schedule[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < this.pages; page++) {
      const got = await client.schedules.list({ limit: PAGE, ...(cursor ? { cursor } : {}) });
      schedules.push(...got.schedules);
      cursor = got.nextCursor;
      if (cursor === null) break;
    }
    if (generation !== this.generation) return;
    this.render(schedules, cursor !== null, Date.now());
  }

  private render(schedules: Schedule[], more: boolean, now: number): void {
    byId("schedules-list")
      .querySelector("tbody")!
      .replaceChildren(...schedules.map((s) => this.row(s, now)));
    byId("schedules-list").hidden = schedules.length === 0;
    byId("no-schedules").hidden = schedules.length > 0;
    byId("schedules-more").hidden = !more;
    byId("schedules-count").textContent = schedules.length === 0 ? "" : `${fmtCount(schedules.length)}${more ? "+" : ""}`;
  }

  private row(s: Schedule, now: number): HTMLTableRowElement {
    const expression = el("td", { data: { field: "expression" } }, el("code", { text: s.cron ?? describeEvery(s.every ?? 0) }));
    if (s.cron !== null) {
      const description = describeCron(s.cron);
      if (description !== null) expression.append(el("div", { text: description, className: "muted", data: { field: "description" } }));
    }

    // No next run while paused (the API skips its occurrences), or once it ended (endAt or limit reached).
    const next = el("td", { data: { field: "next", at: s.nextRunAt ?? "" }, title: s.nextRunAt ?? "" });
    if (s.nextRunAt !== null)
      next.append(inZone(s.nextRunAt, s.timezone), el("div", { className: "muted", text: `in ${fmtMs(Math.max(0, Date.parse(s.nextRunAt) - now))}` }));
    else next.append(el("span", { className: "muted", text: s.paused ? "paused" : "ended" }));

    const last = el("td", { data: { field: "last", at: s.lastRunAt ?? "" }, title: s.lastRunAt ?? "" });
    if (s.lastRunAt === null) last.append(el("span", { className: "muted", text: "never" }));
    else {
      last.append(inZone(s.lastRunAt, s.timezone));
      const job = el("div");
      if (s.lastJobId !== null) {
        const open = el("button", { text: s.lastJobId, className: "link mono", data: { action: "open" } });
        open.addEventListener("click", () => void this.host.act(() => this.host.openJob(s.lastJobId!)));
        job.append(open, " ");
      }
      // null: the job is past its retention window, so its state is no longer known.
      const state = s.lastJobState ?? "expired";
      job.append(el("span", { className: `badge job-${state}`, text: state, data: { field: "job-state" } }));
      last.append(job);
    }

    const toggle = el("button", { text: s.paused ? "Resume" : "Pause", className: "quiet", data: { action: s.paused ? "resume" : "pause" } });
    toggle.addEventListener(
      "click",
      () =>
        void this.host.act(async () => {
          toggle.disabled = true;
          const client = this.host.client()!;
          await (s.paused ? client.schedules.resume(s.id) : client.schedules.pause(s.id));
          await this.refresh();
        }),
    );
    const remove = el("button", { text: "Delete", className: "danger", data: { action: "delete" } });
    remove.addEventListener(
      "click",
      () =>
        void this.host.act(async () => {
          // Deleting cannot be undone (the jobs it stored stay); ask first, as Purge does.
          if (!confirm(`Delete schedule ${s.id}? Its future occurrences will not run. This cannot be undone.`)) return;
          remove.disabled = true;
          await this.host.client()!.schedules.delete(s.id);
          await this.refresh();
        }),
    );

    const state = s.paused ? "paused" : "active";
    return el(
      "tr",
      { data: { schedule: s.id } },
      el("td", { text: s.id, className: "mono", data: { field: "id" } }),
      expression,
      el("td", { text: s.timezone, data: { field: "timezone" } }),
      el("td", { text: s.topic, data: { field: "topic" } }),
      next,
      el("td", { text: fmtCount(s.runs), className: "num", data: { field: "runs" } }),
      last,
      el("td", { data: { field: "state" } }, el("span", { className: `badge ${state}`, text: state })),
      el("td", { className: "num" }, el("div", { className: "actions" }, toggle, remove)),
    );
  }
}
