// Puts the values of src/limits.ts into the Lua scripts. A script writes a
// limit as `--[[LIMIT:NAME]]<value>`: valid Lua as it stands (a comment, then
// the number), so redis-server can load the raw file, and the build replaces
// the pair with the module's value. A written value that differs from the
// module's fails the build, so the .lua files cannot drift from it unseen.
const PLACEHOLDER = /--\[\[LIMIT:([A-Z][A-Z0-9_]*)\]\](-?\d+(?:\.\d+)?)/g;

/** `source` with every placeholder replaced by its value in `limits`; throws naming the file on an unknown name or a differing value. */
export function substituteLimits(source, file, limits) {
  const out = source.replace(PLACEHOLDER, (_, name, written) => {
    const value = limits[name];
    if (typeof value !== "number") throw new Error(`${file}: --[[LIMIT:${name}]] names no number exported by src/limits.ts`);
    if (Number(written) !== value) throw new Error(`${file}: --[[LIMIT:${name}]]${written} says ${written}, src/limits.ts says ${value}: write ${value}`);
    return String(value);
  });
  if (out.includes("--[[LIMIT:")) throw new Error(`${file}: a --[[LIMIT:NAME]] without a number after it`);
  return out;
}
