/**
 * Builds a MiniWoB++ dataset directory from the installed `miniwob` package, on the real
 * pages in Chromium:
 *
 * - `tasks.jsonl`: every (task, seed) instance with the page's own instruction and its
 *   initial state, as the state mapper shows it. Each instance is started through the page's
 *   script on an open page of its task (seeded, then `core.startEpisodeReal()`) and mapped by
 *   a fresh observer, which gives the state a fresh episode of the real environment starts
 *   from, at a tenth of the cost of a new browser context per instance.
 * - `trajectories/explore-<worker>.jsonl`: exploration episodes on the training seeds,
 *   played by a seeded uniform-random policy over the candidate actions in the real
 *   environment, recorded with their rewards as the pages give them.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Browser,
  launchChromium,
  type MiniwobServer,
  PageObserver,
  startMiniwobEpisode,
  startMiniwobServer,
  suggestTypedTexts,
  TrajectoryRecorder,
} from '@dreamgym/browser';
import { InvalidArgumentError, SeededRandom, type Task, type Trajectory } from '@dreamgym/core';
import { connectMiniwobReal, type MiniwobRealOptionsInput } from '../real/connect.js';
import { mapMiniwobObservation } from '../state-mapper.js';
import {
  MINIWOB_EXPERIMENT_TASKS,
  miniwobSeeds,
  miniwobSplitOf,
  miniwobTaskId,
} from './task-list.js';
import { MINIWOB_DOMAIN, MINIWOB_TASKS_FILE } from './tasks.js';

/** Options of {@link buildMiniwobDataset}. */
export interface BuildMiniwobDatasetOptions {
  /** The dataset directory to write (its tasks file and trajectories are replaced). */
  dir: string;
  /** MiniWoB++ task pages. Default: {@link MINIWOB_EXPERIMENT_TASKS}. */
  tasks?: readonly string[];
  /** Training seeds per task (0, 1, ...). Default 30. */
  trainSeeds?: number;
  /** Evaluation seeds per task (100 000, 100 001, ...). Default 20. */
  evalSeeds?: number;
  /** Exploration episodes per training instance. Default 1 (0: no trajectories). */
  episodesPerInstance?: number;
  /** Steps per exploration episode. Default 5. */
  explorationMaxSteps?: number;
  /** Seeds the exploration policy. Default 0. */
  seed?: number;
  /** Exploration episodes played at once (browser contexts). Default 2. */
  concurrency?: number;
  /** Options of the real environment the exploration plays in. */
  real?: MiniwobRealOptionsInput;
  /** A running page server to use (else one is started and stopped). */
  server?: MiniwobServer;
  /** A browser to use (else one is launched and closed). */
  browser?: Browser;
  /** Progress: called after each recorded instance and each exploration episode. */
  onProgress?: (progress: {
    phase: 'tasks' | 'exploration';
    done: number;
    total: number;
    detail: string;
  }) => void;
}

/** What {@link buildMiniwobDataset} wrote. */
export interface MiniwobDatasetSummary {
  tasks: { train: number; eval: number };
  trajectories: number;
  /** Exploration episodes the page scored a success. */
  successes: number;
  /** Exploration transitions (steps). */
  transitions: number;
  files: string[];
}

/**
 * Records the instances of `name` for `seeds` on one page of the task: the page's
 * instruction and the initial state of each, as `Task` records.
 */
export async function recordMiniwobInstances(options: {
  browser: Browser;
  server: MiniwobServer;
  name: string;
  seeds: readonly number[];
  onInstance?: (task: Task) => void;
}): Promise<Task[]> {
  const context = await options.browser.newContext({ viewport: { width: 1280, height: 720 } });
  try {
    const page = await context.newPage();
    await page.goto(options.server.taskUrl(options.name), { waitUntil: 'load' });
    const tasks: Task[] = [];
    for (const seed of options.seeds) {
      const { instruction } = await startMiniwobEpisode(page, { seed, timeLimitMs: 600_000 });
      // A fresh observer per instance numbers the elements as a fresh episode does.
      const mapped = await new PageObserver().observe(page);
      const typeSuggestions = suggestTypedTexts(instruction);
      const initialObservation = mapMiniwobObservation({
        text: mapped.text,
        meta: {
          url: mapped.url,
          title: mapped.title,
          instruction,
          ...(typeSuggestions.length > 0 ? { typeSuggestions } : {}),
        },
      });
      const { actions: _actions, ...stored } = initialObservation;
      const task: Task = {
        id: miniwobTaskId(options.name, seed),
        domain: MINIWOB_DOMAIN,
        instruction,
        origin: 'seed',
        meta: { miniwobTask: options.name, seed, split: miniwobSplitOf(seed) },
        initialObservation: stored,
      };
      tasks.push(task);
      options.onInstance?.(task);
    }
    return tasks;
  } finally {
    await context.close().catch(() => undefined);
  }
}

/**
 * Builds a dataset directory on the real MiniWoB++ pages: the task instances of every task
 * and seed, and exploration trajectories on the training seeds.
 *
 * @throws EnvironmentError when the `miniwob` package or Chromium is missing.
 * @example
 * const summary = await buildMiniwobDataset({ dir: 'data/miniwob', tasks: ['click-test', 'click-button'], trainSeeds: 10, evalSeeds: 5 });
 */
export async function buildMiniwobDataset(
  options: BuildMiniwobDatasetOptions,
): Promise<MiniwobDatasetSummary> {
  const names = options.tasks ?? MINIWOB_EXPERIMENT_TASKS;
  const trainSeeds = options.trainSeeds ?? 30;
  const evalSeeds = options.evalSeeds ?? 20;
  const episodesPerInstance = options.episodesPerInstance ?? 1;
  const concurrency = options.concurrency ?? 2;
  for (const [name, value] of Object.entries({ trainSeeds, evalSeeds, episodesPerInstance })) {
    if (!Number.isInteger(value) || value < 0) {
      throw new InvalidArgumentError(`${name} must be a non-negative integer, got ${value}.`, {
        argument: name,
      });
    }
  }
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new InvalidArgumentError(`concurrency must be a positive integer, got ${concurrency}.`, {
      argument: 'concurrency',
    });
  }
  const server = options.server ?? (await startMiniwobServer());
  const browser = options.browser ?? (await launchChromium());
  try {
    await mkdir(options.dir, { recursive: true });
    const seeds = miniwobSeeds({ train: trainSeeds, eval: evalSeeds });
    const tasks: Task[] = [];
    const totalInstances = names.length * (trainSeeds + evalSeeds);
    let recorded = 0;
    for (const name of names) {
      tasks.push(
        ...(await recordMiniwobInstances({
          browser,
          server,
          name,
          seeds: [...seeds.train, ...seeds.eval],
          onInstance: (task) => {
            recorded += 1;
            options.onProgress?.({
              phase: 'tasks',
              done: recorded,
              total: totalInstances,
              detail: task.id,
            });
          },
        })),
      );
    }
    const tasksFile = join(options.dir, MINIWOB_TASKS_FILE);
    await writeFile(tasksFile, `${tasks.map((task) => JSON.stringify(task)).join('\n')}\n`);

    const trajectoriesDirectory = join(options.dir, 'trajectories');
    await rm(trajectoriesDirectory, { recursive: true, force: true });
    const episodes = tasks
      .filter((task) => task.meta.split === 'train')
      .flatMap((task) =>
        Array.from({ length: episodesPerInstance }, (_, episode) => ({ task, episode })),
      );
    const files: string[] = [tasksFile];
    let done = 0;
    let successes = 0;
    let transitions = 0;
    const random = new SeededRandom(options.seed ?? 0);
    const worker = async (index: number) => {
      const mine = episodes.filter((_, position) => position % concurrency === index);
      if (mine.length === 0) return;
      const output = join(trajectoriesDirectory, `explore-${index}.jsonl`);
      files.push(output);
      const environment = await connectMiniwobReal({
        maxSteps: options.explorationMaxSteps ?? 5,
        ...options.real,
        server,
        browser,
      });
      const recorder = await TrajectoryRecorder.open(environment, {
        output,
        meta: { policy: 'uniform-random', recordedBy: 'buildMiniwobDataset' },
        onRecord: (trajectory: Trajectory) => {
          done += 1;
          transitions += trajectory.steps.length;
          if (trajectory.success) successes += 1;
          options.onProgress?.({
            phase: 'exploration',
            done,
            total: episodes.length,
            detail: `${trajectory.task.id} ${trajectory.success ? 'success' : 'failure'} in ${trajectory.steps.length} steps`,
          });
        },
      });
      try {
        for (const { task, episode } of mine) {
          const { initialObservation: _initial, ...played } = task;
          const policy = random.fork(`explore:${task.id}:${episode}`);
          let observation = await recorder.reset(played);
          for (;;) {
            const candidates = observation.actions ?? [];
            // A page with nothing to act on ends the episode.
            const action = candidates.length > 0 ? policy.choice(candidates) : 'stop []';
            const result = await recorder.step(action);
            if (result.done) break;
            observation = result.observation;
          }
        }
      } finally {
        await recorder.close();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, index) => worker(index)));
    const train = tasks.filter((task) => task.meta.split === 'train').length;
    return {
      tasks: { train, eval: tasks.length - train },
      trajectories: episodes.length,
      successes,
      transitions,
      files: files.sort(),
    };
  } finally {
    if (!options.browser) await browser.close().catch(() => undefined);
    if (!options.server) await server.close().catch(() => undefined);
  }
}
