/**
 * Test support: the crash child. Runs the corridor LLM loop in argv[2] (resuming with
 * argv[3] = "resume") and prints `iteration <n>` after each iteration.
 */
import { corridorLlmLoop } from './llm-policy-loop.test-support.js';

const [runDirectory, mode] = process.argv.slice(2);
const { loop, policy } = await corridorLlmLoop(runDirectory!, {
  onIteration: (_metrics, progress) => process.stdout.write(`iteration ${progress.done}\n`),
});
await loop.run({ resume: mode === 'resume' });
await policy.close();
process.stdout.write('finished\n');
