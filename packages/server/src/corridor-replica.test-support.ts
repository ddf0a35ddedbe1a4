/**
 * Test support (not exported): the replica module of the corridor domain for
 * `serve --workers` tests. Each worker builds the same buffer as `corridorDomain()` (seeded).
 * The action `crash worker` makes the worker thread crash with an uncaught exception, as a
 * bug in an experience model would.
 */

import { corridorDomain } from './corridor-run.test-support.js';
import type { ReplicaParts } from './worker-pool.js';

/** The action that crashes the worker playing it. */
export const CRASH_ACTION = 'crash worker';

export async function createReplica(): Promise<ReplicaParts> {
  const domain = await corridorDomain();
  const parseAction = domain.adapter.parseAction.bind(domain.adapter);
  const adapter = {
    ...domain.adapter,
    parseAction: (text: string) => {
      if (text === CRASH_ACTION) {
        setImmediate(() => {
          throw new Error('the replica crashed on purpose');
        });
      }
      return parseAction(text);
    },
  };
  return { adapter, replayBuffer: domain.replayBuffer, experienceModel: domain.experienceModel };
}
