/**
 * Test support: the crash child. Runs the corridor loop in argv[2] (resuming when asked
 * with argv[3] = "resume") and prints `iteration <n>` after each iteration.
 */
import { corridorLoop } from './corridor-loop.test-support.js';

const [runDirectory, mode] = process.argv.slice(2);
const loop = await corridorLoop(runDirectory!, {
  onIteration: (_metrics, progress) => process.stdout.write(`iteration ${progress.done}\n`),
});
await loop.run({ resume: mode === 'resume' });
process.stdout.write('finished\n');
