/**
 * Test support: real documentation pages nobody here wrote — the HTML documentation that
 * Python's `pydoc` writes for modules of its standard library, from the project virtualenv's
 * Python (long pages of prose, tables, code names and links: 8k-31k tokens of SmolLM2 each,
 * once flattened), served on 127.0.0.1. Not exported from the package.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultMiniwobPython } from './miniwob/miniwob.js';
import { type StaticServer, serveDirectory } from './static-server.js';

/** Standard-library modules whose pydoc pages the tests read (`typing` is the longest). */
export const DOCUMENTED_MODULES = ['typing', 'collections', 'argparse', 'json'] as const;

/** The pages, served: `<module>.html` under `server.url`. */
export interface DocumentationPages {
  server: StaticServer;
  /** Stops the server and deletes the pages. */
  close(): Promise<void>;
}

/**
 * Writes the pydoc pages of `modules` into a temporary folder and serves it.
 *
 * @throws Error naming the Python used when it cannot write them (no project virtualenv: run
 * `bash scripts/setup.sh python`).
 */
export async function serveDocumentationPages(
  modules: readonly string[] = DOCUMENTED_MODULES,
): Promise<DocumentationPages> {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-pydoc-'));
  const python = defaultMiniwobPython();
  await new Promise<void>((done, fail) => {
    execFile(
      python,
      ['-m', 'pydoc', '-w', ...modules],
      { cwd: directory, timeout: 60_000 },
      (error, stdout) => {
        if (error || modules.some((module) => !stdout.includes(`wrote ${module}.html`))) {
          fail(
            new Error(
              `${python} -m pydoc -w ${modules.join(' ')} did not write the pages (${error?.message ?? stdout.trim()}): the tests need the project virtualenv (bash scripts/setup.sh python).`,
            ),
          );
        } else done();
      },
    );
  });
  const server = await serveDirectory(directory);
  return {
    server,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
