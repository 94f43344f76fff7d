/**
 * A shaped topic's flow keys: their counts by state for the topics table, and
 * the keys panel — the topic's busiest keys (in flight, waiting, state) from
 * `GET /v1/topics/:topic`, with pause and resume per key.
 */
import type { Delayline, FlowKeySettings, Stats, Topic } from "../src/client/index.js";
import { byId, el, fmtCount } from "./dom.js";

/** A shaped topic's keys counted by state, as `/v1/stats` and `GET /v1/topics/:topic` give them. */
type KeyCounts = NonNullable<Stats["topics"][number]["flowKeys"]>;
type BusyKey = NonNullable<NonNullable<Topic["flowKeys"]>["busiest"]>[number];

/** Keys' own settings read per panel load (the API's largest page); a key past them is read on its own when it is paused or resumed. */
const SETTINGS_PAGE = 1_000;

const STATE_LABEL: Record<BusyKey["state"], string> = {
  turn: "in turn",
  rate: "waiting for rate",
  parallelism: "at parallelism",
  paused: "paused",
  running: "running",
};

const breakdown = (k: KeyCounts) =>
  `${fmtCount(k.inTurn)} in turn · ${fmtCount(k.waitingForRate)} waiting for rate · ${fmtCount(k.atParallelism)} at parallelism · ${fmtCount(k.paused)} paused`;

/**
 * The topics table's keys cell: a shaped topic's keys at a glance (a key at
 * its parallelism and one its rate holds are both "at limit"; the title tells
 * them apart), a button that opens the keys panel; "–" for a plain topic.
 */
export function keysCell(topic: string, counts: KeyCounts | undefined, open: (topic: string) => void): HTMLTableCellElement {
  if (!counts) return el("td", { text: "–", className: "num", data: { field: "keys" } });
  const text = `${fmtCount(counts.inTurn)} in turn · ${fmtCount(counts.waitingForRate + counts.atParallelism)} at limit · ${fmtCount(counts.paused)} paused`;
  const button = el("button", { text, className: "link", title: `${breakdown(counts)}: open the busiest keys` });
  button.addEventListener("click", () => open(topic));
  return el("td", { className: "num", data: { field: "keys" } }, button);
}

/** What the panel needs from the page around it. */
export interface KeysHost {
  /** The signed-in client, or null. */
  client(): Delayline | null;
  /** Runs an action from a button, showing errors as the page does. */
  act(work: () => Promise<unknown>): Promise<void>;
  /** After a key was paused or resumed: the page refreshes its counts. */
  changed(): Promise<void>;
}

export class KeysPanel {
  private topic: string | null = null;
  /** The keys' own settings as last read; `complete` when no key with settings was left unread. */
  private own: { settings: Map<string, FlowKeySettings>; complete: boolean } = { settings: new Map(), complete: true };

  constructor(private readonly host: KeysHost) {
    byId("keys-close").addEventListener("click", () => {
      byId("keys").hidden = true;
      this.topic = null;
    });
    byId("keys-reload").addEventListener("click", () => void host.act(() => this.load()));
  }

  /** Shows a topic's busiest keys and brings the panel into view (it sits below the charts). */
  async open(topic: string): Promise<void> {
    this.topic = topic;
    byId("keys-topic").textContent = topic;
    byId("keys").hidden = false;
    await this.load();
    byId("keys").scrollIntoView({ block: "start" });
  }

  private async load(): Promise<void> {
    const client = this.host.client();
    const topic = this.topic;
    if (!client || topic === null) return;
    // A key's Pause button goes by its own settings: pausing a key parked at its parallelism leaves its state as it is until its jobs settle.
    const [view, own] = await Promise.all([client.topics.get(topic), client.flowKeys.list(topic, { limit: SETTINGS_PAGE })]);
    if (this.topic !== topic) return;
    this.own = { settings: new Map(own.keys.map((k) => [k.key, k.settings])), complete: own.nextCursor === null };
    const keys = view.flowKeys;
    byId("keys-counts").textContent = keys ? breakdown(keys) : "";
    const busiest = keys?.busiest ?? [];
    byId("keys-list")
      .querySelector("tbody")!
      .replaceChildren(...busiest.map((k) => this.row(k)));
    const empty = byId("keys-empty");
    empty.hidden = busiest.length > 0;
    empty.textContent = keys ? "No key has jobs in flight or waiting." : "This topic has no flow keys.";
  }

  private row(k: BusyKey): HTMLTableRowElement {
    // The default lane (jobs without a key, key "") takes turns like a key but has no settings of its own to pause it by.
    const lane = k.key === "";
    const paused = k.state === "paused" || this.own.settings.get(k.key)?.paused === true;
    const toggle = el("button", { text: paused ? "Resume" : "Pause", className: "quiet", data: { action: paused ? "resume" : "pause" } });
    toggle.hidden = lane;
    toggle.addEventListener(
      "click",
      () =>
        void this.host.act(async () => {
          toggle.disabled = true;
          await this.setPaused(k.key, !paused);
        }),
    );
    // Paused while parked at its parallelism: it starts nothing more, and shows as paused once its jobs in flight settle.
    const pausedBadge = paused && k.state !== "paused" ? [" ", el("span", { className: "badge key-paused", text: "paused" })] : [];
    return el(
      "tr",
      { data: { key: k.key } },
      lane ? el("td", { text: "(jobs without a key)", className: "muted" }) : el("td", { text: k.key, className: "mono payload" }),
      el("td", { text: fmtCount(k.inFlight), className: "num", data: { field: "inflight" } }),
      el("td", { text: fmtCount(k.waiting), className: "num", data: { field: "waiting" } }),
      el("td", { data: { field: "state", state: k.state } }, el("span", { className: `badge key-${k.state}`, text: STATE_LABEL[k.state] }), ...pausedBadge),
      el("td", { className: "num" }, toggle),
    );
  }

  /** Pauses or resumes a key, keeping its other settings of its own (a PUT replaces them all); a key left with none is deleted. */
  private async setPaused(key: string, paused: boolean): Promise<void> {
    const client = this.host.client();
    const topic = this.topic;
    if (!client || topic === null) return;
    const own = this.own.settings.get(key) ?? (this.own.complete ? undefined : (await client.flowKeys.get(topic, key))?.settings);
    const { paused: _was, ...rest } = own ?? {};
    if (paused || Object.keys(rest).length > 0) await client.flowKeys.set(topic, key, paused ? { ...rest, paused: true } : rest);
    else await client.flowKeys.delete(topic, key);
    await Promise.all([this.load(), this.host.changed()]);
  }
}
