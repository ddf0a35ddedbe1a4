/**
 * Test support: the crash child. Runs the corridor LLM loop in argv[2], acting through the
 * OpenAI-compatible server at argv[3] when it is a URL (else in process), resuming when the
 * last argument is "resume"; prints `iteration <n>` after each iteration.
 */
import { corridorLlmLoop } from './llm-policy-loop.test-support.js';

const [runDirectory, ...rest] = process.argv.slice(2);
const server = rest.find((argument) => argument.startsWith('http'));
const mode = rest.at(-1);
const { loop, policy } = await corridorLlmLoop(
  runDirectory!,
  { onIteration: (_metrics, progress) => process.stdout.write(`iteration ${progress.done}\n`) },
  {},
  server,
);
await loop.run({ resume: mode === 'resume' });
await policy.close();
process.stdout.write('finished\n');
