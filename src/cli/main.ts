#!/usr/bin/env node
/**
 * `npx delayline …`: the operator's command line, built on the client.
 * Reads DELAYLINE_URL and DELAYLINE_TOKEN (or --url/--token); see
 * `delayline --help` and the README's CLI section.
 */
import { buildProgram } from "./program.js";

const program = buildProgram({
  env: process.env,
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  },
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
});
await program.parseAsync(process.argv);
