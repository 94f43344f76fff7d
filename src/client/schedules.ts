/** `dl.schedules`: recurring schedules, each occurrence storing one ordinary job from the schedule's template. */
import type { z } from "@hono/zod-openapi";
import type * as scheduleSchemas from "../producer/schedule-schemas.js";
import { everyPage } from "./pages.js";
import { path, query } from "./paths.js";
import { SAFE, unlessNotFound, type Requester } from "./requester.js";

/** A recurring schedule, as PUT /v1/schedules/:id takes it. */
export type ScheduleRequest = z.input<typeof scheduleSchemas.ScheduleBody>;
/** A schedule with its next occurrences and last run. */
export type Schedule = z.output<typeof scheduleSchemas.ScheduleView>;
/** A page of schedules in id order; `nextCursor` goes on from it. */
export type SchedulePage = z.output<typeof scheduleSchemas.ScheduleList>;

/** Schedules: `/v1/schedules` and `/v1/schedules/:id`. */
export class SchedulesResource {
  constructor(private readonly r: Requester) {}

  /** Creates or replaces a schedule (a replacement with the same timing keeps its next occurrence). */
  upsert(id: string, schedule: ScheduleRequest): Promise<Schedule> {
    return this.r.json("PUT", path`/v1/schedules/${id}`, schedule, SAFE);
  }

  /** A schedule with its next occurrences and last run, or null when there is none. */
  get(id: string): Promise<Schedule | null> {
    return unlessNotFound(this.r.json<Schedule>("GET", path`/v1/schedules/${id}`, undefined, SAFE), null);
  }

  /** One page of schedules in id order; pass `nextCursor` back as `cursor` for the next. */
  list(options: { limit?: number; cursor?: string } = {}): Promise<SchedulePage> {
    return this.r.json("GET", `/v1/schedules${query(options)}`, undefined, SAFE);
  }

  /** Every schedule, page after page: `for await (const s of dl.schedules.all())`. */
  async *all(options: { limit?: number } = {}): AsyncGenerator<Schedule, void, undefined> {
    for await (const page of everyPage((at) => this.list({ ...options, ...at }))) yield* page.schedules;
  }

  /** Deletes a schedule (the jobs it stored stay); false when there was none. */
  delete(id: string): Promise<boolean> {
    return unlessNotFound(
      this.r.json("DELETE", path`/v1/schedules/${id}`, undefined, SAFE).then(() => true),
      false,
    );
  }

  /** Skips the schedule's occurrences until it is resumed. */
  pause(id: string): Promise<Schedule> {
    return this.r.json("POST", path`/v1/schedules/${id}/pause`, undefined, SAFE);
  }

  /** Goes on from the schedule's next occurrence after now. */
  resume(id: string): Promise<Schedule> {
    return this.r.json("POST", path`/v1/schedules/${id}/resume`, undefined, SAFE);
  }
}
