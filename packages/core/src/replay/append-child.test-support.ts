/**
 * Test support: a writer process for the crash test. Opens the buffer in argv[2], appends
 * the transitions of argv[3] (a JSON file) one by one, printing `committed <id>` after each
 * `add` resolves, flushing once after `argv[4]` of them, and never stops on its own: the
 * test kills it with SIGKILL.
 */
import { readFile } from 'node:fs/promises';
import type { Transition } from '../mdp/schemas.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { ReplayBuffer } from './replay-buffer.js';

const [directory, transitionsFile, flushAfter] = process.argv.slice(2);
const transitions = JSON.parse(await readFile(transitionsFile!, 'utf8')) as Transition[];
const buffer = await ReplayBuffer.open(directory!, {
  embedder: new HashingEmbedder({ dimension: 256 }),
});
process.stdout.write('ready\n');
for (const [index, transition] of transitions.entries()) {
  const { added } = await buffer.add([transition]);
  for (const id of added) process.stdout.write(`committed ${id}\n`);
  if (index + 1 === Number(flushAfter)) await buffer.flush();
}
process.stdout.write('exhausted\n');
await new Promise(() => undefined);
