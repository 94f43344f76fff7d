/**
 * The shapes a setting's declaration takes (src/settings/declarations.ts):
 * each builder gives the zod schema that parses the binding and the docs
 * table's default and accepted-values cells from the same bounds, so a
 * bound is written once and the docs cannot state another.
 */
import { z } from "zod";
import { MAX_WIRE_VALUE_BYTES, REQUEST_OVERHEAD_BYTES, UPSTASH_REQUEST_BYTES } from "../limits.js";

/** One setting: the binding it is read from names it (the key of its declaration). */
export interface Declaration<F extends string = string, T = unknown> {
  /** The field of Settings (src/env.ts) it fills. */
  field: F;
  /** Parses the binding (a string, undefined when unset) into the field's value; a refusal's message states the rule. */
  schema: z.ZodType<T>;
  /** The docs table's default cell (markdown). */
  shownDefault: string;
  /** The docs table's cell of what it accepts (markdown). */
  accepts: string;
  /** What it does, one line: the docs table's meaning cell and the Settings field's meaning. */
  doc: string;
}

/** A declaration whose default depends on other settings: `derive` gives it from the parsed ones when the binding is unset. */
export type Derived<F extends string, T, Needs> = Declaration<F, T | undefined> & { derive: (parsed: Needs) => T };

/** A number as the docs write it: 60,000. */
export const figure = (n: number) => n.toLocaleString("en-US");

/** Inline code in the docs. */
export const code = (v: string | number) => `\`${v}\``;

const wholeNumber = (min: number, max: number) => (v: string, ctx: z.RefinementCtx) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    ctx.addIssue({ code: "custom", message: `must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return n;
};

interface WholeOptions {
  min: number;
  max: number;
  doc: string;
  /** Said after the range in the accepts cell, e.g. "0: off". */
  note?: string;
}

const range = (o: { min: number; max: number; note?: string | undefined }) => `${figure(o.min)}–${figure(o.max)}${o.note ? `; ${o.note}` : ""}`;

/** A whole number from `min` to `max`, `fallback` when unset. */
export function whole<F extends string>(field: F, o: WholeOptions & { fallback: number }): Declaration<F, number> {
  return {
    field,
    schema: z.string().default(String(o.fallback)).transform(wholeNumber(o.min, o.max)),
    shownDefault: code(o.fallback),
    accepts: range(o),
    doc: o.doc,
  };
}

/** A whole number from `min` to `max` whose default, when unset, `derive` gives from other settings (`shownDefault` says how). */
export function wholeDerived<F extends string, Needs>(
  field: F,
  o: WholeOptions & { shownDefault: string; derive: (parsed: Needs) => number },
): Derived<F, number, Needs> {
  return {
    field,
    schema: z
      .string()
      .optional()
      .transform((v, ctx) => (v === undefined ? undefined : wholeNumber(o.min, o.max)(v, ctx))),
    shownDefault: o.shownDefault,
    accepts: range(o),
    doc: o.doc,
    derive: o.derive,
  };
}

/**
 * A byte size that reaches Redis inside one request (a payload, a body's
 * jobs): bounded by Upstash's request limit through the rule of
 * MAX_WIRE_VALUE_BYTES (src/limits.ts), which the refusal names.
 */
export function wireBytes<F extends string>(field: F, o: { min: number; fallback: number; doc: string; note: string }): Declaration<F, number> {
  const max = MAX_WIRE_VALUE_BYTES;
  return {
    field,
    schema: z
      .string()
      .default(String(o.fallback))
      .transform((v, ctx) => {
        const n = Number(v);
        if (Number.isInteger(n) && n > max) {
          ctx.addIssue({
            code: "custom",
            message: `must be at most ${max} (2 × value + ${REQUEST_OVERHEAD_BYTES} bytes of record and arguments must fit Upstash's ${UPSTASH_REQUEST_BYTES}-byte request limit: JSON escaping can double a value on the wire), got ${JSON.stringify(v)}`,
          });
          return z.NEVER;
        }
        return wholeNumber(o.min, max)(v, ctx);
      }),
    shownDefault: code(o.fallback),
    accepts: range({ min: o.min, max, note: o.note }),
    doc: o.doc,
  };
}

/** A yes or no: `true`/`1` or `false`/`0`, false when unset. */
export function flag<F extends string>(field: F, o: { doc: string; shownDefault: string }): Declaration<F, boolean> {
  return {
    field,
    schema: z
      .enum(["true", "false", "1", "0", ""])
      .default("false")
      .transform((v) => v === "true" || v === "1"),
    shownDefault: o.shownDefault,
    accepts: "`true`/`false`/`1`/`0`",
    doc: o.doc,
  };
}

/** A setting of a shape of its own: its schema, and the cells that describe it. */
export const declare = <F extends string, T>(field: F, d: Omit<Declaration<F, T>, "field">): Declaration<F, T> => ({ field, ...d });
