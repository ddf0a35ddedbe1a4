/**
 * Test support (not exported): one replica of a served corridor run with a shared buffer, in
 * its own process (`node --import tsx`), as a machine behind a load balancer would run it.
 * Settings come in `DREAMGYM_REPLICA` (JSON: uri, runDirectory, resume, replicaId,
 * pollMilliseconds); it prints `{"url": ...}` once serving, and closes on SIGTERM.
 * LanceDB is the one installed for the tests in `test/lancedb/`.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { corridorDomain } from '../src/corridor-run.test-support.js';
import { serveDreamGym } from '../src/serve-dreamgym.js';
import type { LanceDbModule } from '../src/shared-buffer-table.js';

/** The folder the tests' LanceDB is installed in (scripts/setup.d/60-lancedb.sh). */
export const LANCEDB_FOLDER = join(import.meta.dirname, 'lancedb');

/** `@lancedb/lancedb` from {@link LANCEDB_FOLDER}. */
export async function testLanceDb(): Promise<LanceDbModule> {
  const entry = createRequire(join(LANCEDB_FOLDER, 'package.json')).resolve('@lancedb/lancedb');
  return (await import(pathToFileURL(entry).href)) as LanceDbModule;
}

interface ReplicaSettings {
  uri: string;
  runDirectory: string;
  resume?: boolean;
  replicaId: string;
  pollMilliseconds?: number;
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.DREAMGYM_REPLICA ?? 'null') as ReplicaSettings;
  const domain = await corridorDomain();
  const served = await serveDreamGym({
    ...domain,
    config: {
      seed: 5,
      tasksPerIteration: 2,
      rolloutsPerTask: 2,
      maxSteps: 12,
      curriculum: { enabled: false },
      // Every episode written back (and shared) within 20 ms.
      writeBackBatch: { transitions: 1, milliseconds: 20 },
    },
    server: { port: 0 },
    runDirectory: settings.runDirectory,
    resume: settings.resume ?? false,
    sharedBuffer: {
      uri: settings.uri,
      replicaId: settings.replicaId,
      ...(settings.pollMilliseconds ? { pollMilliseconds: settings.pollMilliseconds } : {}),
      lancedb: await testLanceDb(),
    },
  });
  process.stdout.write(`${JSON.stringify({ url: served.url })}\n`);
  process.once('SIGTERM', () => {
    served.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}

if (process.env.DREAMGYM_REPLICA) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
