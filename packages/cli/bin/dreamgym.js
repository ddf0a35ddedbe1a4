#!/usr/bin/env node
// The `dreamgym` bin. npm links a package's bins when it installs the package, and only those
// whose file exists then. In the repository that is before any build, so a bin pointing at the
// built `dist/bin.js` was never linked (and `npx dreamgym` asked the registry for another
// package). This file is in the source tree: it runs the built CLI, or says how to build it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('../dist/bin.js', import.meta.url);
if (existsSync(fileURLToPath(built))) {
  await import(built.href);
} else {
  process.stderr.write(
    `dreamgym: the CLI is not built (${fileURLToPath(built)} is missing). From the repository root: npx turbo run build --filter=@dreamgym/cli\n`,
  );
  process.exitCode = 1;
}
