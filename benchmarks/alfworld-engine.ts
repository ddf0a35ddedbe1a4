/**
 * ALFWorld real-engine benchmark: latencies of the Python server behind the connector, and
 * the adapter's candidate actions against the engine's admissible commands.
 *
 * 1. Server start (Python imports, engine ready, `/health` answered).
 * 2. For expert trajectories of train games (`--games`, spread over the six task types):
 *    the first `reset` of a game (loads the game file), a second `reset` of the same game
 *    (the session keeps the game loaded), and every `step` of the expert's commands; then
 *    `step` with the planner's expert plan requested on a few games.
 * 3. The episodes played, with the engine's admissible commands, are scored with
 *    `measureCandidateCoverage`: how often the adapter's proposals (made without the
 *    engine's list) hold the expert's next command, and their size against the engine's list.
 * 4. The server's engine memoisation, side by side: the same seeded random episodes
 *    (`--memo-games` games, 3 episodes each, up to 30 steps) played through TextWorld as
 *    shipped and through the memoised engine (`dreamgym_alfworld_server.playthrough`, one
 *    after the other), their engine seconds, the ratio, and whether every observation,
 *    admissible-command list and win flag is the same.
 *
 * Run: `npm run alfworld-engine -w dreamgym-benchmarks` (`-- --games 24 --memo-games 8`). Needs
 * DREAMGYM_DATA_DIR and the project virtualenv (scripts/setup.sh). Writes
 * benchmarks/results/alfworld-engine.json.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { createAlfworldAdapter, measureCandidateCoverage } from '@dreamgym/alfworld';
import { type Step, type Task, TaskSchema, type Trajectory } from '@dreamgym/core';
import {
  AlfworldServerProcess,
  alfworldServerDirectory,
  connectAlfworldReal,
  defaultAlfworldPython,
} from '../adapters/alfworld/src/real/index.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 && args[index + 1] !== undefined ? args[index + 1]! : fallback;
};
const gameCount = Number(option('games', '24'));
const plannedGames = Number(option('planned-games', '3'));
const memoGames = Number(option('memo-games', '8'));

const root = process.env.DREAMGYM_DATA_DIR;
if (!root) throw new Error('Set DREAMGYM_DATA_DIR to the shared data directory (…/shared/data).');
const dataDir = resolve(root, 'alfworld');

interface ExpertRecord {
  game: string;
  task_type: string;
  conversations: { from: 'human' | 'gpt'; value: string }[];
}

/** Expert trajectories of distinct games that are in the data directory, round-robin over task types. */
function pickExperts(count: number): ExpertRecord[] {
  const byType = new Map<string, ExpertRecord[]>();
  const seen = new Set<string>();
  for (const line of readFileSync(join(dataDir, 'expert_trajectories.jsonl'), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const record = JSON.parse(line) as ExpertRecord;
    if (seen.has(record.game) || !existsSync(join(dataDir, record.game, 'game.tw-pddl'))) continue;
    seen.add(record.game);
    byType.set(record.task_type, [...(byType.get(record.task_type) ?? []), record]);
  }
  const picked: ExpertRecord[] = [];
  for (let round = 0; picked.length < count; round += 1) {
    let added = false;
    for (const records of byType.values()) {
      if (records[round] && picked.length < count) {
        picked.push(records[round]!);
        added = true;
      }
    }
    if (!added) break;
  }
  return picked;
}

function taskOf(record: ExpertRecord): Task {
  return TaskSchema.parse({
    id: record.game,
    domain: 'alfworld',
    instruction: /Your task is to: (.+)/.exec(record.conversations[0]!.value)![1]!,
    meta: { game: record.game, taskType: record.task_type, split: 'train' },
  });
}

function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  return {
    n: values.length,
    meanMs: Number(mean.toFixed(1)),
    p50Ms: Number(at(0.5).toFixed(1)),
    p90Ms: Number(at(0.9).toFixed(1)),
  };
}

const now = () => performance.now();

const startedAt = now();
const server = await AlfworldServerProcess.start({
  dataDir,
  pythonPath: defaultAlfworldPython(),
  port: 0,
  startTimeoutMs: 180_000,
  requestTimeoutMs: 120_000,
});
const serverStartMs = now() - startedAt;
const firstResets: number[] = [];
const repeatResets: number[] = [];
const steps: number[] = [];
const plannedSteps: number[] = [];
const trajectories: Trajectory[] = [];
const engineActionCounts: number[] = [];
let wins = 0;
try {
  const environment = await connectAlfworldReal({ url: server.url });
  const experts = pickExperts(gameCount);
  for (const record of experts) {
    const task = taskOf(record);
    let begin = now();
    await environment.reset(task);
    firstResets.push(now() - begin);
    begin = now();
    let observation = await environment.reset(task);
    repeatResets.push(now() - begin);
    const played: Step[] = [];
    for (const turn of record.conversations.filter((entry) => entry.from === 'gpt')) {
      engineActionCounts.push(observation.actions?.length ?? 0);
      begin = now();
      const result = await environment.step(turn.value);
      steps.push(now() - begin);
      played.push({ observation, action: turn.value, reward: result.reward, done: result.done });
      observation = result.observation;
      if (result.info.won === true) wins += 1;
    }
    trajectories.push({
      task,
      steps: played,
      source: 'real',
      success: played.at(-1)?.reward === 1,
    });
  }
  await environment.close();

  const planned = await connectAlfworldReal({ url: server.url, expertPlan: true });
  for (const record of experts.slice(0, plannedGames)) {
    await planned.reset(taskOf(record));
    for (let step = 0; step < 50; step += 1) {
      const begin = now();
      const result = await planned.step(planned.expertPlan()![0]!);
      plannedSteps.push(now() - begin);
      if (result.done) break;
    }
  }
  await planned.close();
} finally {
  await server.stop();
}

interface Playthrough {
  episodes: { game: string; steps: [string, string[], boolean][] }[];
  seconds: number;
}

/** Seeded random episodes through TextWorld, as shipped or with the server's memoisation. */
function playthrough(memoised: boolean): Playthrough {
  const output = execFileSync(
    defaultAlfworldPython(),
    [
      '-m',
      'dreamgym_alfworld_server.playthrough',
      '--data-dir',
      dataDir,
      '--games',
      String(memoGames),
      '--episodes',
      '3',
      '--steps',
      '30',
      ...(memoised ? ['--memoised'] : []),
    ],
    { cwd: alfworldServerDirectory(), encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  return JSON.parse(output) as Playthrough;
}

const shipped = playthrough(false);
const memoised = playthrough(true);
const memoisation = {
  games: memoGames,
  episodes: shipped.episodes.length,
  steps: shipped.episodes.reduce((total, episode) => total + episode.steps.length - 1, 0),
  shippedSeconds: Number(shipped.seconds.toFixed(1)),
  memoisedSeconds: Number(memoised.seconds.toFixed(1)),
  speedUp: Number((shipped.seconds / memoised.seconds).toFixed(2)),
  identicalEpisodes: JSON.stringify(shipped.episodes) === JSON.stringify(memoised.episodes),
};

const coverage = measureCandidateCoverage(trajectories, createAlfworldAdapter());
const engineMean =
  engineActionCounts.reduce((sum, value) => sum + value, 0) / engineActionCounts.length;
const results = {
  machine: { cpus: cpus().length, model: cpus()[0]?.model },
  games: trajectories.length,
  expertEpisodesWon: wins,
  serverStartMs: Number(serverStartMs.toFixed(0)),
  firstReset: summary(firstResets),
  repeatReset: summary(repeatResets),
  step: summary(steps),
  stepWithExpertPlan: summary(plannedSteps),
  memoisation,
  candidates: {
    coverage: Number(coverage.coverage.toFixed(4)),
    meanCandidates: Number(coverage.meanCandidates.toFixed(2)),
    meanEngineAdmissible: Number(engineMean.toFixed(2)),
    sizeRatio: Number((coverage.meanCandidates / engineMean).toFixed(3)),
    steps: coverage.steps,
    byActionType: coverage.byActionType,
  },
};
console.log(JSON.stringify(results, null, 2));
const out = resolve(import.meta.dirname, 'results', 'alfworld-engine.json');
await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${out}`);
