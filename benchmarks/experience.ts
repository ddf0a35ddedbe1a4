/**
 * Experience-model benchmark.
 *
 * 1. Steps per second of `SyntheticEnvironment` with the embedded `RetrievalExperienceModel`
 *    over a 100k-transition replay buffer (flat and HNSW faiss indexes), one faiss thread.
 *    The buffer holds the real ALFWorld expert transitions (train games, through the
 *    adapter's loader and state mapper) and copies of them with object and receptacle
 *    numbers shifted, up to 100k distinct transitions. A seeded random policy plays the
 *    adapter's candidate actions in episodes of held-out games (their real initial states).
 * 2. Per-step overhead of `ReasoningExperienceModel` excluding server time: `predict()`
 *    wall time minus the time spent inside the chat model's `completeStructured`, against
 *    a local zero-latency OpenAI-compatible server, with a 20-step history and 8 demos.
 *
 * Run: `npm run experience -w dreamgym-benchmarks` (`-- --size 100000 --steps 3000`).
 * Bundles this file with esbuild (core and the ALFWorld adapter from their sources) and
 * runs it with OMP_NUM_THREADS=1. Writes benchmarks/results/experience.json.
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import {
  createAlfworldAdapter,
  loadAlfworldExpertTrajectories,
  parseAlfworldAction,
} from '@dreamgym/alfworld';
import {
  type ChatModel,
  HashingEmbedder,
  OpenAICompatibleChatModel,
  ReasoningExperienceModel,
  ReplayBuffer,
  type ReplayIndexOptions,
  RetrievalExperienceModel,
  SeededRandom,
  SyntheticEnvironment,
  type Trajectory,
  type Transition,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { startOpenAICompatibleServer } from '@dreamgym/core/testing';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const SIZE = Number(option('size', '100000'));
const STEPS = Number(option('steps', '3000'));
const CALLS = Number(option('calls', '1000'));
const K = 8;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
function percentile(values: number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;
}

/** Shifts every entity number by `offset` (`apple 1` -> `apple 101`), keeping texts realistic. */
function shift(text: string, offset: number): string {
  return offset === 0
    ? text
    : text.replace(/\b([a-z]+) (\d+)\b/g, (_, name, n) => `${name} ${Number(n) + offset}`);
}

async function loadData(): Promise<{ train: Trajectory[]; heldOut: Trajectory[] }> {
  const root = process.env.DREAMGYM_DATA_DIR ?? resolve('../../shared/data');
  const train: Trajectory[] = [];
  const heldOut: Trajectory[] = [];
  for await (const trajectory of loadAlfworldExpertTrajectories(join(root, 'alfworld'))) {
    const directory = trajectory.task.id.split('/')[1]!;
    (createHash('sha256').update(directory).digest()[0]! % 5 === 0 ? heldOut : train).push(
      trajectory,
    );
  }
  return { train, heldOut };
}

function bufferTransitions(train: Trajectory[], size: number): Transition[] {
  const base = train.flatMap((trajectory) => trajectoryToTransitions(trajectory));
  const transitions: Transition[] = [];
  const seen = new Set<string>();
  for (let copy = 0; transitions.length < size; copy += 1) {
    for (const transition of base) {
      if (transitions.length >= size) break;
      const offset = copy * 100;
      const shifted: Transition = {
        ...transition,
        id: `${transition.id}~${copy}`,
        trajectoryId: `${transition.trajectoryId}~${copy}`,
        state: { text: shift(transition.state.text, offset) },
        action: shift(transition.action, offset),
        nextState: { text: shift(transition.nextState.text, offset) },
      };
      // The buffer suppresses duplicate contents; count only distinct ones.
      const key = `${shifted.state.text}\u0000${shifted.action}\u0000${shifted.nextState.text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      transitions.push(shifted);
    }
  }
  return transitions;
}

async function syntheticStepsPerSecond(
  transitions: Transition[],
  heldOut: Trajectory[],
  index: ReplayIndexOptions,
) {
  const buildStart = performance.now();
  const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 256 }), index });
  for (let start = 0; start < transitions.length; start += 10_000) {
    await buffer.add(transitions.slice(start, start + 10_000));
  }
  const buildSeconds = (performance.now() - buildStart) / 1000;
  const adapter = createAlfworldAdapter();
  const model = new RetrievalExperienceModel({
    parseAction: parseAlfworldAction,
    hints: {
      revisitActionTypes: ['go to', 'examine'],
      removeActionTypes: ['take'],
      placeActionTypes: ['put'],
    },
  });
  const environment = new SyntheticEnvironment({
    model,
    retriever: buffer,
    adapter,
    k: K,
    maxSteps: 30,
  });
  const random = new SeededRandom(7);
  const stepTimes: number[] = [];
  let episodes = 0;
  let steps = 0;
  const run = async (limit: number, record: boolean) => {
    let done = true;
    let observation = await environment.reset(heldOut[0]!.task);
    for (let count = 0; count < limit; count += 1) {
      if (done) {
        observation = await environment.reset(heldOut[random.int(heldOut.length)]!.task);
        episodes += record ? 1 : 0;
      }
      const action = random.choice(observation.actions ?? ['look']);
      const started = performance.now();
      const result = await environment.step(action);
      if (record) stepTimes.push(performance.now() - started);
      observation = result.observation;
      done = result.done;
    }
  };
  await run(200, false);
  const started = performance.now();
  await run(STEPS, true);
  const seconds = (performance.now() - started) / 1000;
  steps = STEPS;
  await buffer.close();
  return {
    index: index.type,
    bufferSize: transitions.length,
    buildSeconds: Number(buildSeconds.toFixed(1)),
    steps,
    episodes,
    stepsPerSecond: Math.round(steps / seconds),
    stepMedianMs: Number(median(stepTimes).toFixed(3)),
    stepP99Ms: Number(percentile(stepTimes, 0.99).toFixed(3)),
  };
}

/** Times the calls into the chat model, so that what remains of predict() is our overhead. */
function timed(chat: ChatModel): { chat: ChatModel; inside: () => number } {
  let inside = 0;
  return {
    inside: () => inside,
    chat: {
      id: chat.id,
      complete: (request) => chat.complete(request),
      stats: () => chat.stats(),
      async completeStructured(request) {
        const started = performance.now();
        try {
          return await chat.completeStructured(request);
        } finally {
          inside += performance.now() - started;
        }
      },
    },
  };
}

async function reasoningOverhead(train: Trajectory[]) {
  const answer = JSON.stringify({
    reasoning: 'The agent opens the drawer; it holds nothing.',
    nextState: 'You open the drawer 1. The drawer 1 is open. In it, you see nothing.',
    done: false,
    success: false,
    reward: 0,
  });
  const server = await startOpenAICompatibleServer({ chat: () => answer });
  const client = new OpenAICompatibleChatModel({
    baseURL: server.url,
    model: 'bench',
    retryBaseDelayMs: 0,
  });
  const { chat, inside } = timed(client);
  const adapter = createAlfworldAdapter();
  const model = new ReasoningExperienceModel({
    chat,
    environmentDescription: adapter.prompts.environmentDescription,
  });
  const trajectory = train.find((candidate) => candidate.steps.length >= 21)!;
  const transitions = trajectoryToTransitions(trajectory);
  const demos = train.slice(0, K).map((other, index) => ({
    transition: trajectoryToTransitions(other)[0]!,
    score: 1 - index / 100,
  }));
  const input = {
    task: trajectory.task,
    history: trajectory.steps.slice(0, 20),
    state: transitions[20]!.state,
    action: transitions[20]!.action,
    demos,
  };
  const overheads: number[] = [];
  const totals: number[] = [];
  for (let call = 0; call < CALLS + 100; call += 1) {
    const before = inside();
    const started = performance.now();
    await model.predict(input);
    const total = performance.now() - started;
    if (call >= 100) {
      totals.push(total);
      overheads.push(total - (inside() - before));
    }
  }
  await server.close();
  return {
    calls: CALLS,
    historySteps: input.history.length,
    demos: demos.length,
    overheadMedianMs: Number(median(overheads).toFixed(4)),
    overheadP99Ms: Number(percentile(overheads, 0.99).toFixed(4)),
    predictMedianMs: Number(median(totals).toFixed(3)),
  };
}

const { train, heldOut } = await loadData();
const transitions = bufferTransitions(train, SIZE);
console.log(
  `buffer: ${transitions.length} transitions (${train.length} train games, ${heldOut.length} held out for episodes)`,
);
const synthetic = [];
for (const index of [
  { type: 'flat' },
  { type: 'hnsw', m: 16, efConstruction: 40, efSearch: 64 },
] as ReplayIndexOptions[]) {
  const figures = await syntheticStepsPerSecond(transitions, heldOut, index);
  console.log(
    `SyntheticEnvironment + RetrievalExperienceModel, ${figures.bufferSize} transitions, ${index.type}: ${figures.stepsPerSecond} steps/s (median ${figures.stepMedianMs} ms, p99 ${figures.stepP99Ms} ms per step; ${figures.episodes} episodes; buffer built in ${figures.buildSeconds} s)`,
  );
  synthetic.push(figures);
}
const reasoning = await reasoningOverhead(train);
console.log(
  `ReasoningExperienceModel overhead excluding server time: median ${reasoning.overheadMedianMs} ms, p99 ${reasoning.overheadP99Ms} ms (predict() median ${reasoning.predictMedianMs} ms incl. local HTTP)`,
);
const report = {
  benchmark: 'experience',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    node: process.version,
    ompThreads: process.env.OMP_NUM_THREADS ?? 'unset',
  },
  targets: { syntheticStepsPerSecond: 500, reasoningOverheadMedianMs: 1 },
  synthetic,
  reasoning,
};
const out = resolve(import.meta.dirname, 'results', 'experience.json');
await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
console.log(`wrote ${out}`);
