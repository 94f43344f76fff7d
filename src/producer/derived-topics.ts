// What the API allows on a topic derived from another (`<topic>@<name>`,
// src/queue/ids.ts): it reads, lists, pauses and replays like any topic,
// but jobs reach it only from its root, so nothing may make it take jobs of
// its own or pull them, and a subscription's topic is changed only through
// its subscription.
import { CALLBACKS_NAME, derivedNameOf, rootOf } from "../queue/ids.js";
import { ApiProblem, invalid } from "./problem.js";

/** What a topic view says of where a topic comes from. */
export function lineageOf(topic: string): { kind: "topic" | "subscription" | "callbacks"; parent: string | null } {
  const name = derivedNameOf(topic);
  if (name === null) return { kind: "topic", parent: null };
  return { kind: name === CALLBACKS_NAME ? "callbacks" : "subscription", parent: rootOf(topic) };
}

/** 409 for a subscription's topic, which only its subscription's routes change; `what` the refused action. */
export function refuseSubscriptionTopic(topic: string, what: string): void {
  const name = derivedNameOf(topic);
  if (name === null || name === CALLBACKS_NAME) return;
  throw new ApiProblem(
    409,
    `topic ${topic} holds the deliveries of ${rootOf(topic)}'s subscription ${name}: ${what} it with /v1/topics/${rootOf(topic)}/subscriptions/${name}`,
  );
}

/** Settings that would make a derived topic take jobs of its own: a callbacks topic refuses them (422). */
const FOR_ROOTS_ONLY = ["mode", "url", "webhookSecret"] as const;

/** Refuses a settings change a derived topic cannot take: any on a subscription's topic (409), those that would make a callbacks topic take jobs of its own (422). */
export function refuseDerivedSettings(topic: string, body: Partial<Record<(typeof FOR_ROOTS_ONLY)[number], unknown>>): void {
  if (derivedNameOf(topic) === null) return;
  refuseSubscriptionTopic(topic, "configure");
  const issues = FOR_ROOTS_ONLY.filter((f) => body[f] !== undefined).map((f) => ({
    path: f,
    message: `a callbacks topic takes no ${f}: its jobs are callbacks, made and targeted by ${rootOf(topic)}'s settles`,
  }));
  if (issues.length > 0) throw invalid("body", issues);
}
