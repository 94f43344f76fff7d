/**
 * The job browser: a topic's jobs by state (scheduled, in flight, dead),
 * paged with the API's cursors, those of one label when its filter is set,
 * with cancel for one job, a selection or the filter's whole label (the bulk
 * ones after a preview of their dry run); and
 * the job view: a job's facts, payload and attempt history, opened from the
 * browser, a dead letter or the search box by id.
 */
import type { Delayline, Job, ListedJob } from "../src/client/index.js";
import { confirmBulk } from "./bulk-preview.js";
import { byId, el, fmtCount, fmtMs, fmtTime } from "./dom.js";

const PAGE = 50;

type State = "scheduled" | "inflight" | "dead";

/** What the browser needs from the page around it. */
export interface BrowserHost {
  /** The signed-in client, or null. */
  client(): Delayline | null;
  /** Runs an action from a button, showing errors as the page does. */
  act(work: () => Promise<unknown>): Promise<void>;
  /** After jobs were cancelled: the page refreshes its counts. */
  changed(): Promise<void>;
}

const when = (iso: string | null | undefined) => fmtTime(iso);

const NOUN: Record<State, string> = { scheduled: "scheduled", inflight: "in flight", dead: "dead" };

export class JobBrowser {
  private topic: string | null = null;
  private state: State = "scheduled";
  private cursor: string | null = null;
  /** The label filter ("": every job). */
  private label = "";

  constructor(private readonly host: BrowserHost) {
    byId("jobs-close").addEventListener("click", () => {
      byId("jobs").hidden = true;
      this.topic = null;
    });
    byId<HTMLSelectElement>("jobs-state").addEventListener(
      "change",
      (e) => void host.act(() => this.open(this.topic!, (e.target as HTMLSelectElement).value as State)),
    );
    byId("jobs-more").addEventListener("click", () => void host.act(() => this.load(true)));
    byId("jobs-label-filter").addEventListener("submit", (event) => {
      event.preventDefault();
      const input = byId<HTMLInputElement>("jobs-label");
      // A label the API would refuse is not sent: the field says what is wrong.
      if (!input.reportValidity()) return;
      this.label = input.value.trim();
      if (this.topic) void host.act(() => this.open(this.topic!, this.state));
    });
    byId("jobs-cancel-selected").addEventListener("click", () => void host.act(() => this.cancelSelected()));
    byId("jobs-cancel-label").addEventListener("click", () => void host.act(() => this.cancelLabelled()));
    byId("job-close").addEventListener("click", () => (byId("job").hidden = true));
    byId("job-search").addEventListener("submit", (event) => {
      event.preventDefault();
      const id = byId<HTMLInputElement>("job-search-id").value.trim();
      if (id) void host.act(() => this.openJob(id));
    });
  }

  /** Shows the first page of a topic's jobs in a state, and brings the browser into view (it sits below the charts). */
  async open(topic: string, state: State): Promise<void> {
    if (topic !== this.topic) this.label = "";
    this.topic = topic;
    this.state = state;
    byId<HTMLInputElement>("jobs-label").value = this.label;
    byId("jobs-topic").textContent = topic;
    byId<HTMLSelectElement>("jobs-state").value = state;
    byId("jobs").hidden = false;
    byId("jobs").scrollIntoView({ block: "start" });
    await this.load(false);
    byId("jobs").scrollIntoView({ block: "start" });
  }

  private async load(more: boolean): Promise<void> {
    const client = this.host.client();
    if (!client || !this.topic) return;
    // The total is the topic's count of jobs in the state (one ZCARD in the topic's stats script), read beside the page.
    const [page, topic] = await Promise.all([
      client.jobs.list(this.topic, {
        state: this.state,
        limit: PAGE,
        ...(this.label ? { label: this.label } : {}),
        ...(more && this.cursor ? { cursor: this.cursor } : {}),
      }),
      client.topics.get(this.topic),
    ]);
    this.cursor = page.nextCursor;
    byId("jobs-more").hidden = page.nextCursor === null;
    const body = byId("jobs-list").querySelector("tbody")!;
    const rows = page.jobs.map((j) => this.row(j));
    if (more) body.append(...rows);
    else body.replaceChildren(...rows);
    byId("jobs-empty").hidden = body.children.length > 0;
    const total = this.state === "scheduled" ? topic.scheduled : this.state === "inflight" ? topic.inflight : topic.dead;
    const labelled = this.label ? ` labelled ${this.label}` : "";
    byId("jobs-total").textContent = `${fmtCount(body.children.length)}${labelled} shown of ${fmtCount(total)} ${NOUN[this.state]}`;
    byId("jobs-total").dataset.total = String(total);
    byId("jobs-cancel-selected").hidden = this.state !== "scheduled";
    const byLabel = byId("jobs-cancel-label");
    byLabel.hidden = this.state !== "scheduled" || !this.label;
    byLabel.textContent = `Cancel all labelled ${this.label}`;
    this.selectionChanged();
  }

  private row(j: ListedJob): HTMLTableRowElement {
    const pick = el("input", { data: { action: "select" } });
    pick.type = "checkbox";
    pick.value = j.id;
    pick.disabled = j.state !== "scheduled";
    pick.addEventListener("change", () => this.selectionChanged());
    const open = el("button", { text: j.id, className: "link mono", data: { action: "open" } });
    open.addEventListener("click", () => void this.host.act(() => this.openJob(j.id)));
    const cancel = el("button", { text: "Cancel", className: "quiet", data: { action: "cancel" } });
    cancel.hidden = j.state !== "scheduled";
    cancel.addEventListener("click", () => void this.host.act(() => this.cancel([j.id])));
    const time = j.state === "dead" ? j.failedAt : j.state === "inflight" ? j.leaseExpiresAt : j.dueAt;
    return el(
      "tr",
      { data: { job: j.id } },
      el("td", {}, pick),
      el("td", {}, open),
      el("td", { text: when(time), title: time ?? "" }),
      el("td", { text: String(j.attempts), className: "num" }),
      el("td", { text: j.lastError ?? "–" }),
      el("td", { data: { field: "labels" } }, ...(j.labels ?? []).map((l) => el("span", { className: "badge label", text: l }))),
      el("td", { className: "num" }, cancel),
    );
  }

  private selected(): string[] {
    return [...byId("jobs-list").querySelectorAll<HTMLInputElement>('input[data-action="select"]:checked')].map((i) => i.value);
  }

  private selectionChanged(): void {
    const n = this.selected().length;
    const button = byId<HTMLButtonElement>("jobs-cancel-selected");
    button.disabled = n === 0;
    button.textContent = n === 0 ? "Cancel selected" : `Cancel ${n} selected`;
  }

  /** The selection's dry run first: the cancel goes ahead once the preview is confirmed. */
  private async cancelSelected(): Promise<void> {
    const client = this.host.client();
    const ids = this.selected();
    if (!client || !this.topic || ids.length === 0) return;
    const dry = await client.jobs.bulkCancel(this.topic, { ids, dryRun: true });
    if (!(await confirmBulk({ verb: "Cancel", noun: "scheduled jobs", topic: this.topic }, { count: dry.cancelled, ids: dry.ids ?? [] }))) return;
    await this.cancel(ids);
  }

  /** Every scheduled job of the filter's label, after the preview of its dry run (the whole label, not the page). */
  private async cancelLabelled(): Promise<void> {
    const client = this.host.client();
    const { topic, label } = this;
    if (!client || !topic || !label) return;
    const dry = await client.jobs.bulkCancel(topic, { label, dryRun: true });
    const action = { verb: "Cancel", noun: `scheduled jobs labelled ${label}`, topic };
    if (!(await confirmBulk(action, { count: dry.cancelled, ids: dry.ids ?? [] }))) return;
    await client.jobs.bulkCancel(topic, { label });
    await Promise.all([this.load(false), this.host.changed()]);
  }

  private async cancel(ids: string[]): Promise<void> {
    const client = this.host.client();
    if (!client || !this.topic || ids.length === 0) return;
    await client.jobs.bulkCancel(this.topic, { ids });
    await Promise.all([this.load(false), this.host.changed()]);
  }

  /** Shows one job: its facts, payload and attempts; says so when it is unknown. */
  async openJob(id: string): Promise<void> {
    const client = this.host.client();
    if (!client) return;
    const job = await client.jobs.get(id);
    byId("job").hidden = false;
    byId("job-id").textContent = id;
    const missing = byId("job-missing");
    missing.hidden = job !== null;
    missing.textContent = job === null ? `No job ${id}: unknown, or finished longer ago than the retention window.` : "";
    for (const part of ["job-facts", "job-payload-box", "job-history-box"]) byId(part).hidden = job === null;
    if (job) this.renderJob(job);
    byId("job").scrollIntoView({ block: "start" });
  }

  private renderJob(job: Job): void {
    const fact = (label: string, value: string) => [el("dt", { text: label }), el("dd", { text: value, data: { fact: label } })];
    byId("job-facts").replaceChildren(
      ...fact("state", job.state),
      ...fact("topic", job.topic),
      ...fact("due", when(job.dueAt)),
      ...fact("attempts", `${job.attempts} of ${job.maxAttempts}`),
      ...fact("created", when(job.createdAt)),
      ...(job.finishedAt ? fact("finished", when(job.finishedAt)) : []),
      ...(job.leaseExpiresAt ? fact("lease until", when(job.leaseExpiresAt)) : []),
      ...(job.labels ? fact("labels", job.labels.join(" ")) : []),
    );
    byId("job-payload").textContent = JSON.stringify(job.payload, null, 2) ?? "null";
    const body = byId("job-history").querySelector("tbody")!;
    body.replaceChildren(
      ...job.history.map((a) =>
        el(
          "tr",
          { data: { attempt: String(a.attempt) } },
          el("td", { text: String(a.attempt), className: "num" }),
          el("td", { text: when(a.startedAt), title: a.startedAt ?? "" }),
          el("td", { text: fmtMs(a.durationMs), className: "num" }),
          el("td", { data: { field: "outcome" } }, el("span", { className: `badge outcome-${a.outcome}`, text: a.outcome })),
          el("td", { text: a.httpStatus === undefined ? "–" : String(a.httpStatus), className: "num", data: { field: "status" } }),
          el("td", { text: a.error ?? "", className: "payload" }),
        ),
      ),
    );
    byId("job-no-history").hidden = job.history.length > 0;
  }
}
