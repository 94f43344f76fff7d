import { LABEL_WALK_BATCH } from "../limits.js";
import type { QueueContext } from "./context.js";
import * as lua from "./lua.generated.js";
import { replies } from "./replies.js";
import type { ListPosition } from "./views.js";

// Walks by label: a step over a label's index (label-page.lua, members in
// enqueue order) answers its jobs in the states a call wants, with their
// scores, for the call's second phase. The cursor of such a walk is the last
// member passed; as a ListPosition its score is 0 (the index's own score).

/** A job a label's walk found: where it is and its score there (due time, lease deadline or failed time). */
interface LabelledJob {
  id: string;
  state: "scheduled" | "inflight" | "dead";
  score: number;
}

/** One step of a walk by label: the jobs of the wanted states, and where the walk goes on (null: done). */
export interface LabelStep {
  jobs: LabelledJob[];
  next: ListPosition | null;
}

/** What one step of a walk by label takes on. */
export interface LabelWalk {
  /** The previous step's `next`. */
  after?: ListPosition | undefined;
  /** The states kept. */
  states: ReadonlyArray<LabelledJob["state"]>;
  /** Most jobs answered; the step also ends after LABEL_WALK_BATCH members looked at. */
  most: number;
  /** The window of scores kept. */
  from?: number | undefined;
  to?: number | undefined;
  /** Drop the stale members passed (false in dry runs: no write). */
  prune: boolean;
}

const LETTERS = { scheduled: "s", inflight: "i", dead: "d" } as const;

/** One step of the walk over `label`'s index of `topic`: at most LABEL_WALK_BATCH members looked at. */
export async function labelStep(ctx: QueueContext, topic: string, label: string, walk: LabelWalk): Promise<LabelStep> {
  const t = ctx.keys.topic(topic);
  const raw = await ctx.run(
    lua.labelPage,
    [ctx.keys.labelIndex(topic, label), ctx.keys.labelSet(topic), t.due, t.flow.fdue, t.lease, t.deadAt],
    [
      walk.after?.id ?? "",
      LABEL_WALK_BATCH,
      walk.most,
      walk.states.map((s) => LETTERS[s]).join(""),
      walk.prune ? "1" : "0",
      label,
      walk.from === undefined ? "-inf" : Math.round(walk.from),
      walk.to === undefined ? "+inf" : Math.round(walk.to),
    ],
  );
  const { after, jobs } = replies.labelPage.parse(raw);
  return { jobs, next: after === null ? null : { score: 0, id: after } };
}

/**
 * Where a walk by label goes on after a script handled its step's jobs: the
 * walk's own position when the script got through all of them, else after
 * the last one it handled (its byte budget ended it early).
 */
export function labelStepNext(step: LabelStep, handled: ListPosition | null): ListPosition | null {
  const last = step.jobs.at(-1);
  if (!handled || !last || handled.id === last.id) return step.next;
  return { score: 0, id: handled.id };
}
