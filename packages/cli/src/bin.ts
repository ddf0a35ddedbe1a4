#!/usr/bin/env node
import { runCli } from './cli.js';

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `dreamgym: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
