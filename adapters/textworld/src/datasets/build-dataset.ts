/**
 * The TextWorld dataset, made here rather than downloaded: TextWorld generates its games.
 * `buildTextworldDataset` generates the cooking games of each split from fixed seeds
 * (`python -m dreamgym_textworld_server.generate`, skipping games already there), then plays
 * each new game on the real engine: its first state becomes the task's `initialObservation`
 * (`tasks.jsonl`), and the walkthrough of every training game is played to its win and
 * recorded as an offline `Trajectory` (`expert_trajectories.jsonl`).
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  EnvironmentError,
  type Observation,
  parseOptions,
  type Step,
  type Task,
  TaskSchema,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { readJsonl, writeJsonl } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { TextworldRealOptionsSchema } from '../real/options.js';
import { defaultTextworldPython, runTextworldPython } from '../real/python-process.js';
import { TextworldRealEnvironment } from '../real/textworld-real-environment.js';
import { type TextworldIngredient, textworldInstruction } from '../recipe.js';
import { TEXTWORLD_DOMAIN, TEXTWORLD_TASKS_FILE } from './tasks.js';
import { TEXTWORLD_EXPERT_FILE } from './trajectories.js';

/** Options of {@link buildTextworldDataset}. */
export const BuildTextworldDatasetOptionsSchema = z.object({
  /** The data directory (created): `games/`, `tasks.jsonl`, `expert_trajectories.jsonl`. */
  dir: z.string().min(1),
  /**
   * Games of the `train` split. Game `i` of a split has a recipe of `1 + i % 4` ingredients
   * and the seed `i` (`valid`: 100 000 + i, `test`: 200 000 + i). Default 40.
   */
  train: z.number().int().nonnegative().default(40),
  /** Games of the `valid` split. Default 20. */
  valid: z.number().int().nonnegative().default(20),
  /** Games of the `test` split. Default 20. */
  test: z.number().int().nonnegative().default(20),
  /** Rooms per game (`tw-cooking --go`): 1, 6, 9 or 12. Default 1 (the kitchen). */
  rooms: z.union([z.literal(1), z.literal(6), z.literal(9), z.literal(12)]).default(1),
  /** Containers (fridge, oven) start closed (`--open`). Default true. */
  open: z.boolean().default(true),
  /** Recipes ask to fry, roast or grill (`--cook`). Default true. */
  cook: z.boolean().default(true),
  /** Recipes ask to slice, dice or chop (`--cut`). Default true. */
  cut: z.boolean().default(true),
  /** Python with `textworld`. Default: the repository's `.venv`, else `python3`. */
  pythonPath: TextworldRealOptionsSchema.shape.pythonPath,
});

/** Options of {@link buildTextworldDataset} as a caller writes them. */
export type BuildTextworldDatasetOptions = z.input<typeof BuildTextworldDatasetOptionsSchema> & {
  /** Progress: each game generated or skipped, then each game recorded. */
  onProgress?: (event: TextworldBuildProgress) => void;
  /** Stops the generator and the recording. */
  signal?: AbortSignal;
};

/** One step of {@link buildTextworldDataset}'s work. */
export interface TextworldBuildProgress {
  phase: 'generate' | 'record';
  /** `<split>/<name>`. */
  game: string;
  /** `generate`: whether the game was made now (false: it was there). `record`: whether it was played now. */
  created: boolean;
  /** Seconds it took. */
  seconds: number;
}

/** What {@link buildTextworldDataset} did. */
export interface TextworldDatasetSummary {
  dir: string;
  /** Tasks per split. */
  tasks: Record<string, number>;
  /** Training walkthroughs recorded (all of them win). */
  trajectories: number;
  /** Games generated now, and games that were there. */
  generated: number;
  skipped: number;
  /** Games played now to record their task (and walkthrough). */
  recorded: number;
  /** Seconds spent generating, and recording. */
  generateSeconds: number;
  recordSeconds: number;
}

/**
 * How tasks and walkthroughs are recorded, kept in `recording.json`: a directory recorded
 * another way is recorded again (its games are kept). Raise `format` when the records change.
 */
const RECORDING = { format: 1 };
const RECORDING_FILE = 'recording.json';

const GameEventSchema = z.object({
  event: z.literal('game'),
  game: z.string(),
  split: z.enum(['train', 'valid', 'test']),
  recipe: z.number().int(),
  seed: z.number().int(),
  created: z.boolean(),
  seconds: z.number(),
});

async function readExisting<T extends Task | Trajectory>(
  file: string,
  schema: typeof TaskSchema | typeof TrajectorySchema,
  key: (record: T) => string,
): Promise<Map<string, T>> {
  const records = new Map<string, T>();
  if (!existsSync(file)) return records;
  try {
    for await (const record of readJsonl(file, schema)) records.set(key(record as T), record as T);
  } catch {
    // An unreadable file is recorded again from the games.
    records.clear();
  }
  return records;
}

/**
 * Plays the walkthrough of the game just reset, to its win. The generator's walkthroughs
 * repeat a few commands that are no longer possible when their turn comes (`open fridge` when
 * it is open: "That's already open."): those are left out, so that every recorded expert
 * command is one the engine accepts where it was played.
 */
async function playWalkthrough(
  environment: TextworldRealEnvironment,
  task: Task,
  first: Observation,
  walkthrough: readonly string[],
): Promise<Trajectory> {
  const steps: Step[] = [];
  const skipped: string[] = [];
  let observation = first;
  for (const [index, action] of walkthrough.entries()) {
    if (index < walkthrough.length - 1 && !(observation.actions ?? []).includes(action)) {
      skipped.push(action);
      continue;
    }
    const result = await environment.step(action);
    steps.push({ observation, action, reward: result.reward, done: result.done });
    observation = result.observation;
    if (result.done) {
      if (result.info.won !== true || index !== walkthrough.length - 1) {
        throw new EnvironmentError(
          `The walkthrough of ${task.id} ended the game after ${steps.length} of ${walkthrough.length} commands without winning it (${observation.text.slice(0, 200)}).`,
        );
      }
      return {
        id: `walkthrough:${task.id}`,
        task,
        steps,
        finalObservation: observation,
        source: 'offline',
        success: true,
        meta: { policy: 'walkthrough', skippedInadmissible: skipped },
      };
    }
  }
  throw new EnvironmentError(
    `The walkthrough of ${task.id} (${walkthrough.length} commands) did not end the game.`,
  );
}

/**
 * Generates (or completes) a TextWorld data directory and records its tasks and training
 * walkthroughs. Deterministic: the same options give the same games; games already there
 * are neither generated nor played again.
 *
 * Timing on 2 cores: about 2.5 s to generate a game (7 s for the first, which loads
 * TextWorld), under 1 s to record one.
 *
 * @throws EnvironmentError when the generator fails or a walkthrough does not win.
 * @example
 * const summary = await buildTextworldDataset({ dir: 'data/textworld', train: 40, valid: 20, test: 20 });
 */
export async function buildTextworldDataset(
  input: BuildTextworldDatasetOptions,
): Promise<TextworldDatasetSummary> {
  const options = parseOptions(BuildTextworldDatasetOptionsSchema, input, 'TextWorld dataset');
  const dir = resolve(options.dir);
  const pythonPath = options.pythonPath ?? defaultTextworldPython();
  const games: z.infer<typeof GameEventSchema>[] = [];
  let started = performance.now();
  await runTextworldPython(
    pythonPath,
    'dreamgym_textworld_server.generate',
    [
      '--data-dir',
      dir,
      '--train',
      String(options.train),
      '--valid',
      String(options.valid),
      '--test',
      String(options.test),
      '--rooms',
      String(options.rooms),
      options.open ? '--open' : '--no-open',
      options.cook ? '--cook' : '--no-cook',
      options.cut ? '--cut' : '--no-cut',
    ],
    (record) => {
      const game = GameEventSchema.safeParse(record);
      if (!game.success) return;
      games.push(game.data);
      input.onProgress?.({
        phase: 'generate',
        game: game.data.game,
        created: game.data.created,
        seconds: game.data.seconds,
      });
    },
    input.signal,
  );
  const generateSeconds = (performance.now() - started) / 1000;

  const tasksFile = resolve(dir, TEXTWORLD_TASKS_FILE);
  const expertFile = resolve(dir, TEXTWORLD_EXPERT_FILE);
  // Records of another format are made again from the games.
  const formatFile = resolve(dir, RECORDING_FILE);
  const current = (await readFile(formatFile, 'utf8').catch(() => '')).trim();
  const reuse = current === JSON.stringify(RECORDING);
  const knownTasks = reuse
    ? await readExisting<Task>(tasksFile, TaskSchema, (task) => task.id)
    : new Map<string, Task>();
  const knownWalkthroughs = reuse
    ? await readExisting<Trajectory>(
        expertFile,
        TrajectorySchema,
        (trajectory) => trajectory.task.id,
      )
    : new Map<string, Trajectory>();
  const tasks: Task[] = [];
  const trajectories: Trajectory[] = [];
  let recorded = 0;
  started = performance.now();
  let environment: TextworldRealEnvironment | undefined;
  try {
    for (const game of games) {
      input.signal?.throwIfAborted();
      const known = knownTasks.get(game.game);
      const walkthrough = knownWalkthroughs.get(game.game);
      if (!game.created && known && (game.split !== 'train' || walkthrough)) {
        tasks.push(known);
        if (walkthrough) trajectories.push(walkthrough);
        continue;
      }
      const gameStarted = performance.now();
      environment ??= await TextworldRealEnvironment.connect({
        dataDir: dir,
        pythonPath,
        // Long enough for any walkthrough: the game's win ends the episode, not the limit.
        maxSteps: 200,
      });
      const seed: Task = {
        id: game.game,
        domain: TEXTWORLD_DOMAIN,
        instruction: 'pending',
        origin: 'seed',
        meta: { game: game.game },
      };
      const first = await environment.reset(seed);
      const info = environment.gameInfo();
      if (info === undefined) {
        throw new EnvironmentError(`The TextWorld server told nothing about game ${game.game}.`);
      }
      const ingredients: TextworldIngredient[] = info.ingredients.map(
        ([name, cooking, cutting]) => ({ name, cooking, cutting }) as TextworldIngredient,
      );
      const task = TaskSchema.parse({
        id: game.game,
        domain: TEXTWORLD_DOMAIN,
        instruction: textworldInstruction(ingredients),
        origin: 'seed',
        meta: {
          game: game.game,
          split: game.split,
          seed: game.seed,
          ingredientCount: ingredients.length,
          ingredients,
          objective: info.objective,
        },
        initialObservation: first,
      });
      tasks.push(task);
      if (game.split === 'train') {
        trajectories.push(await playWalkthrough(environment, task, first, info.walkthrough));
      }
      recorded += 1;
      input.onProgress?.({
        phase: 'record',
        game: game.game,
        created: true,
        seconds: (performance.now() - gameStarted) / 1000,
      });
    }
  } finally {
    await environment?.close();
  }
  await writeJsonl(tasksFile, TaskSchema, tasks);
  await writeJsonl(expertFile, TrajectorySchema, trajectories);
  await writeFile(formatFile, `${JSON.stringify(RECORDING)}\n`);
  const counts: Record<string, number> = {};
  for (const task of tasks) {
    const split = String(task.meta.split);
    counts[split] = (counts[split] ?? 0) + 1;
  }
  return {
    dir,
    tasks: counts,
    trajectories: trajectories.length,
    generated: games.filter((game) => game.created).length,
    skipped: games.filter((game) => !game.created).length,
    recorded,
    generateSeconds,
    recordSeconds: (performance.now() - started) / 1000,
  };
}
