/**
 * Every code a Lua script's header names is the number src/queue/codes.ts
 * gives it: each header's Returns, in its own words, is held to the map that
 * decodes it (src/queue/replies.ts). A script added without saying here what
 * it answers fails too, and so does one whose reply has no decoder in
 * replies.ts or is run by a module that decodes it some other way.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { Code } from "../../src/queue/codes.js";
import * as lua from "../../src/queue/lua.generated.js";
import { replies } from "../../src/queue/replies.js";

const queueDir = join(import.meta.dirname, "../../src/queue");
const luaDir = join(queueDir, "lua");

type MapName = keyof typeof Code;

/**
 * Where a header names codes: `$Member` stands for the member's number in
 * `map`, the rest is the header's text (white space folded).
 */
const NAMED: Array<{ script: string; map: MapName; says: string }> = [
  { script: "cancel", map: "JobChange", says: "$Changed cancelled, $NotScheduled not scheduled (unknown or finished), $InFlight in flight" },
  { script: "reschedule", map: "JobChange", says: "$Changed rescheduled, $NotScheduled not scheduled (unknown or finished), $InFlight in flight" },
  {
    script: "delete-topic",
    map: "TopicDeletion",
    says: "code: $Deleted deleted, $Purging purging goes on (call again), $InFlight jobs in flight, $NotEmpty not empty",
  },
  { script: "configure-topic", map: "Write", says: "$Written written, or $TopicLimit when registering the topic would pass the cap" },
  { script: "schedule-write", map: "Write", says: "{ $Written } written; { $Changed, current revision }" },
  { script: "schedule-write", map: "Write", says: "{ $TopicLimit, topics registered, the cap } registering the topic would pass the cap" },
  { script: "enqueue", map: "Write", says: "{ $TopicLimit, topics registered, the cap } when new topics would pass the cap" },
  {
    script: "enqueue",
    map: "Write",
    says: "{ $TopicFull, topic, its pending jobs, its maxLength, jobs the call adds to it } when a topic's cap refuses the call",
  },
  {
    script: "enqueue",
    map: "Write",
    says: "{ $FlowKeyFull, topic, flow key, the key's pending jobs, its cap, jobs the call adds to it } when a flow key's cap refuses the call",
  },
  {
    script: "enqueue",
    map: "Write",
    says: '{ $FewCandidates, then per topic or key short of candidates: topic, flow key ("" the topic\'s own), how many oldest to drop }',
  },
  { script: "enqueue", map: "Overflow", says: "its cap ($None none, $Reject reject, $DropOldest dropOldest: the overflow of its caps)" },
  { script: "enqueue", map: "Caps", says: "which caps it has ($None none, $Topic maxLength, $Keys key caps, $Both both)" },
  { script: "enqueue", map: "Repeat", says: "deduplicated ($Repeat repeat, $ContentRepeat repeat by content, $New new)" },
  { script: "enqueue", map: "Time", says: "for a repeat, the existing job's while it is scheduled, else $None (in flight or finished)" },
  { script: "upsert", map: "Upsert", says: "{ $Created created, id, due ms }" },
  {
    script: "upsert",
    map: "Upsert",
    says: "{ $Replaced replaced, id, due ms }; { $Ignored ignored, id, due ms }; { $Moved } the pointer names another job than the caller found (nothing written)",
  },
  {
    script: "upsert",
    map: "Upsert",
    says: "{ $Labels labels, then the labels of the job found } it carries labels whose index the caller did not name (nothing written)",
  },
  { script: "upsert", map: "Overflow", says: "its cap ($None none, $Reject reject, $DropOldest dropOldest: the overflow of its caps)" },
  { script: "upsert", map: "Caps", says: "which caps it has ($None none, $Topic maxLength, $Keys key caps, $Both both)" },
  {
    script: "upsert",
    map: "Write",
    says: "{ $TopicLimit, topics registered, the cap } when registering the topic would pass the cap; { $TopicFull, topic, its pending jobs, its maxLength, 1 } when its maxLength refuses the job; { $FlowKeyFull, topic, flow key, its pending jobs, its maxKeyLength, 1 } when its flow key's cap refuses it",
  },
  { script: "settle", map: "Fenced", says: "per outcome: $Applied applied, $Stale stale" },
  {
    script: "extend-lease",
    map: "Lease",
    says: "{ $Extended, the new deadline ms } extended; { $Stale } stale: not leased at that attempt (scheduled, finished, or another attempt); { $Unknown } unknown: no such job (never enqueued, or swept); { $Push } its topic is push: the tick's lease",
  },
  { script: "schedule-fire", map: "Fenced", says: "fired_i $Applied stored, $Stale fenced off" },
  { script: "schedule-fire", map: "Time", says: "earliest due occurrence left ($None: none)" },
  { script: "schedule-delete", map: "Removed", says: "$Removed deleted, $Missing there was none" },
  { script: "lock-acquire", map: "Lock", says: "{ $Ours } when taken; { $NotOurs, ms until the holder's lock expires" },
  { script: "lock-acquire", map: "Asleep", says: "the holder's lock value, $Asleep when the holder sleeps else $Awake } when held" },
  { script: "look", map: "Held", says: "lock: $Held held, $Free free" },
  { script: "look", map: "Time", says: "the index's earliest score ($None: none)" },
  { script: "lock-release", map: "Lock", says: "$Ours released, $NotOurs the lock was not ours" },
  { script: "peek", map: "Lock", says: "lock ($Ours renewed or not asked, $NotOurs lost: not ours any more)" },
  { script: "peek", map: "More", says: "more ($More: k topics were due and more may be, else $Done)" },
  { script: "peek", map: "Time", says: "the earliest score later than now ($None: none known)" },
  { script: "schedules-due", map: "More", says: "more ($More: more may be due than returned, else $Done)" },
  { script: "list-jobs", map: "More", says: "$More when more jobs follow the page else $Done" },
  { script: "list-topics", map: "More", says: "$More when more names follow the page else $Done" },
  { script: "label-page", map: "More", says: "{ $More when the walk goes on after the last member passed else $Done" },
  { script: "list-dead", map: "More", says: "$More when more letters follow the page else $Done" },
  { script: "cancel-jobs", map: "More", says: '"window": $More when the window may hold more else $Done' },
  { script: "purge-dead", map: "More", says: "$More when the window may hold more else $Done" },
  { script: "replay-dead", map: "More", says: "$More when the window may hold more else $Done" },
  { script: "flow-key", map: "Removed", says: "$Removed set, or removed settings that were there; $Missing removed settings that were not there" },
  { script: "claim", map: "Time", says: "next due ms ($None: none)" },
  { script: "claim", map: "Paused", says: "paused ($Paused/$Active)" },
  { script: "claim", map: "Time", says: "push claims: the score written to the topic index ($None: removed); pull claims: $None" },
  {
    script: "claim",
    map: "HeldBy",
    says: "what held jobs back: $Nothing nothing (or max), $Concurrency concurrency, $Rate rate, $Paused paused, $Mode the topic's mode, $Bytes the reply's byte budget (more are takeable now, due or within the lead), $Shaped the topic is shaped and the claim plain (nothing was read or written: claim it as shaped)",
  },
];

/** Scripts that answer counts, records and positions but no code. */
const NO_CODES = ["get", "migrate-model", "read-jobs", "sweep", "topic-stats", "flow-read", "flow-keys-top", "edit-dead"];

const fold = (text: string) => text.replace(/\s+/g, " ").trim();

/** A script's header: its leading `--[[ … ]]` comment, white space folded. */
function header(script: string): string {
  const source = readFileSync(join(luaDir, `${script}.lua`), "utf8");
  // After the first line's `#!lua flags=allow-key-locking`.
  const m = /^#!lua[^\n]*\n--\[\[([\s\S]*?)\]\]/.exec(source);
  if (!m) throw new Error(`${script}.lua has no --[[ header ]]`);
  return fold(m[1]!);
}

/** What is wrong with one entry against a header's text: "" when the header says it with the map's numbers. */
function mismatch(text: string, map: Readonly<Record<string, number>>, says: string): string {
  let pattern = "";
  const parts = fold(says).split(/\$(\w+)/);
  for (const [i, part] of parts.entries()) {
    if (i % 2 === 0) pattern += part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    else if (map[part] === undefined) return `the map has no member ${part}`;
    // The number alone, not the end of -1 or 10.
    else pattern += `(?<![\\d-])${map[part]}(?!\\d)`;
  }
  return new RegExp(pattern).test(text) ? "" : `the header does not say: ${says.replace(/\$(\w+)/g, (_, m: string) => String(map[m]))}`;
}

it("every code a script header names is the number src/queue/codes.ts gives it", () => {
  const problems = NAMED.map((n) => ({ ...n, problem: mismatch(header(n.script), Code[n.map], n.says) })).filter((n) => n.problem);
  expect(problems).toEqual([]);
});

it("every code of every map is named by some header, and every script is accounted for", () => {
  const named = new Set(NAMED.flatMap((n) => [...n.says.matchAll(/\$(\w+)/g)].map((m) => `${n.map}.${m[1]}`)));
  const members = Object.entries(Code).flatMap(([map, codes]) => Object.keys(codes).map((m) => `${map}.${m}`));
  expect(members.filter((m) => !named.has(m))).toEqual([]);
  const scripts = readdirSync(luaDir)
    .filter((f) => f.endsWith(".lua"))
    .map((f) => f.replace(/\.lua$/, ""));
  expect(scripts.length).toBeGreaterThan(20);
  expect(new Set([...NAMED.map((n) => n.script), ...NO_CODES])).toEqual(new Set(scripts));
});

it("a header whose number differs from the map's fails the check (a control)", () => {
  const text = header("cancel");
  const says = NAMED.find((n) => n.script === "cancel")!.says;
  expect(mismatch(text, Code.JobChange, says)).toBe("");
  expect(mismatch(text.replace("-1 in flight", "-2 in flight"), Code.JobChange, says)).toMatch(/does not say/);
  expect(mismatch(text, { ...Code.JobChange, InFlight: -2 }, says)).toMatch(/does not say/);
  // 1 is not found inside -1 or 11.
  expect(mismatch("x -1 y", { A: 1 }, "$A y")).toMatch(/does not say/);
  expect(mismatch("x 11 y", { A: 1 }, "$A y")).toMatch(/does not say/);
});

/** The scripts, by their names in lua.generated.ts. */
const scriptNames = Object.entries(lua)
  .filter(([, v]) => typeof v === "object" && v !== null && "sha1" in v)
  .map(([name]) => name);

it("every script's reply has its decoder in src/queue/replies.ts, under the script's name", () => {
  expect(scriptNames.length).toBeGreaterThan(20);
  expect(Object.keys(replies).sort()).toEqual([...scriptNames].sort());
});

/** The scripts a module's text runs (`lua.<name>`) that it does not decode with `replies.<name>`. */
function undecoded(text: string): string[] {
  const decoded = new Set([...text.matchAll(/\breplies\.(\w+)/g)].map((m) => m[1]!));
  return [...text.matchAll(/\blua\.(\w+)/g)].map((m) => m[1]!).filter((name) => scriptNames.includes(name) && !decoded.has(name));
}

it("each module of src/queue that runs a script decodes its reply with replies.<script>", () => {
  const modules = readdirSync(queueDir).filter((f) => f.endsWith(".ts") && f !== "lua.generated.ts" && f !== "replies.ts");
  const running = modules.filter((f) => /\blua\.\w+/.test(readFileSync(join(queueDir, f), "utf8")));
  expect(running.length).toBeGreaterThanOrEqual(3);
  expect(running.flatMap((f) => undecoded(readFileSync(join(queueDir, f), "utf8")).map((name) => `${f}: lua.${name}`))).toEqual([]);
  // A control: a run whose reply is parsed inline is found.
  expect(undecoded("const raw = await ctx.run(lua.claim, keys, args); z.array(z.number()).parse(raw);")).toEqual(["claim"]);
  expect(undecoded("replies.claim.parse(await ctx.run(lua.claim, keys, args));")).toEqual([]);
});
