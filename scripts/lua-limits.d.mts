/** `source` with every `--[[LIMIT:NAME]]<value>` replaced by `limits[NAME]`; throws naming `file` on an unknown name or a differing value. */
export function substituteLimits(source: string, file: string, limits: Readonly<Record<string, unknown>>): string;
