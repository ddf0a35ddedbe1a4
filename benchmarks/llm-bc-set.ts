/**
 * The ALFWorld behaviour-cloning set of the LLM policy, as token ids: every step of every
 * successful expert trajectory (`demonstrationSamples`), with the prompt the policy acts
 * under (`alfworld-llm-prompt.ts`) tokenised by llama.cpp exactly as generation tokenises it,
 * and the answer `<action>ACTION</action><|im_end|>`. Games are split by a seeded draw into
 * training and held-out ones; held-out steps also carry their candidate actions (text and
 * token ids) so that the trainer can measure parsable, admissible and expert-match rates.
 *
 * The trainer reads it with `python -m dreamgym_trainer.behaviour_cloning --data FILE`, on a
 * GPU or the CPU; the set is what travels to a machine that has no Node.
 *
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/llm-bc-set.ts \
 *     [--out runs/llm-bc/alfworld-bc.jsonl] [--held-out-share 0.05] [--limit N] \
 *     [--prompt compact|full] [--seed 1] [--model local|PATH.gguf]
 *
 * One JSON object per line: `task` (game id), `heldOut`, `prompt` and `answer` (token ids),
 * `action`; held-out lines also `candidates` and `candidateAnswers` (token ids of each
 * candidate's answer). The first line is a header: `{"header": {...}}` with the counts, the
 * prompt options and the model the ids belong to.
 */
import { existsSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SeededRandom } from '@dreamgym/core';
import { buildAgentMessages, formatAgentAnswer } from '@dreamgym/core/policy';
import { demonstrationSamples } from '@dreamgym/core/training';
import { setUpDomain } from '@dreamgym/run';
import { LlamaPolicyRuntime } from '../packages/llama/src/index.js';
import { type AlfworldLlmPromptStyle, alfworldLlmPrompt } from './alfworld-llm-prompt.js';
import { log } from './alfworld-protocol.js';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: 'runs/llm-bc/alfworld-bc.jsonl' },
    'held-out-share': { type: 'string', default: '0.05' },
    limit: { type: 'string' },
    prompt: { type: 'string', default: 'compact' },
    seed: { type: 'string', default: '1' },
    model: { type: 'string', default: 'local' },
  },
});

const dataRoot = process.env.DREAMGYM_DATA_DIR ?? '../shared/data';
if (!existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error(
    `No alfworld/ in ${resolve(dataRoot)}: set DREAMGYM_DATA_DIR to the folder holding alfworld/.`,
  );
}
const style = values.prompt as AlfworldLlmPromptStyle;
if (style !== 'compact' && style !== 'full') {
  throw new Error(`--prompt must be compact or full, got ${values.prompt}`);
}
const heldOutShare = Number(values['held-out-share']);
if (!(heldOutShare > 0 && heldOutShare < 1)) {
  throw new Error(`--held-out-share must be in (0, 1), got ${values['held-out-share']}`);
}
const seed = Number(values.seed);
const outFile = resolve(values.out!);

const setup = await setUpDomain(
  { domain: 'alfworld', data: resolve(dataRoot, 'alfworld'), evalTasks: 1, index: 'flat' },
  log,
);
const prompt = alfworldLlmPrompt(setup, style);
const runtime = await LlamaPolicyRuntime.load({ model: values.model!, concurrency: 1 });
const trajectories = setup.offlineTrajectories
  .filter((trajectory) => trajectory.success)
  .slice(0, values.limit === undefined ? undefined : Number(values.limit));
const games = new SeededRandom(seed)
  .fork('llm-bc-held-out')
  .shuffle([...new Set(trajectories.map((trajectory) => trajectory.task.id))]);
const heldOutGames = new Set(games.slice(0, Math.max(1, Math.round(games.length * heldOutShare))));
const samples = demonstrationSamples(trajectories, (observation, history) =>
  setup.adapter.candidateActions(observation, history),
);
const answerIds = (action: string) =>
  runtime.tokenize(`${formatAgentAnswer(action)}${runtime.endOfTurn}`);

await mkdir(dirname(outFile), { recursive: true });
const file = await open(outFile, 'w');
let heldOut = 0;
let promptTokens = 0;
try {
  await file.write(
    `${JSON.stringify({
      header: {
        what: 'ALFWorld behaviour-cloning set of the LLM policy (benchmarks/llm-bc-set.ts)',
        samples: samples.length,
        trajectories: trajectories.length,
        games: games.length,
        heldOutGames: heldOutGames.size,
        heldOutShare,
        seed,
        prompt: { style, ...prompt },
        model: runtime.modelPath,
        endOfTurn: runtime.endOfTurn,
      },
    })}\n`,
  );
  let lines: string[] = [];
  for (const [index, sample] of samples.entries()) {
    const messages = buildAgentMessages(
      sample.task,
      sample.observation,
      sample.previousActions,
      sample.candidates,
      prompt,
    );
    const ids = await runtime.promptTokens(messages);
    promptTokens += ids.length;
    const isHeldOut = heldOutGames.has(sample.task.id);
    const record: Record<string, unknown> = {
      task: sample.task.id,
      heldOut: isHeldOut,
      prompt: ids,
      answer: await answerIds(sample.action),
      action: sample.action,
    };
    if (isHeldOut) {
      heldOut += 1;
      record.candidates = sample.candidates;
      record.candidateAnswers = await Promise.all(sample.candidates.map(answerIds));
    }
    lines.push(JSON.stringify(record));
    if (lines.length === 1000 || index === samples.length - 1) {
      await file.write(`${lines.join('\n')}\n`);
      lines = [];
      log(`${index + 1}/${samples.length} samples`);
    }
  }
} finally {
  await file.close();
  await runtime.close();
}
log(
  `wrote ${outFile}: ${samples.length} samples (${heldOut} held out, ${heldOutGames.size} of ${games.length} games), mean prompt ${(promptTokens / Math.max(1, samples.length)).toFixed(0)} tokens`,
);
