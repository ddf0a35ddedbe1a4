/**
 * Loader of ALFWorld game files, `<dir>/<split>/<task directory>/<trial>/game.tw-pddl`,
 * into seed {@link Task}s. A game file is JSON with the PDDL domain and problem and a
 * TextWorld `grammar` whose `task` rule holds the instruction text.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Observation,
  type Task,
  TaskSchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { mapAlfworldObservation } from '../state-mapper.js';
import { type AlfworldSplit, parseAlfworldGameDirectory } from '../task-types.js';
import { EXPERT_TRAJECTORIES_FILE } from './expert-trajectories.js';
import { resolveSplits } from './splits.js';

/** The file name of an ALFWorld game inside its trial directory. */
export const GAME_FILE = 'game.tw-pddl';

/** The fields of a `game.tw-pddl` file the adapter reads. */
export const AlfworldGameFileSchema = z.object({
  /** TextWorld grammar of the game: its `task` rule is the instruction. */
  grammar: z.string().min(1),
  /** The PDDL problem: objects, initial state and goal. */
  pddl_problem: z.string().min(1),
  /** Whether ALFWorld's planner could solve the game. */
  solvable: z.boolean().optional(),
});

const TASK_RULE = /"task"\s*:\s*\[\s*\{\s*"rhs"\s*:\s*"Your task is to:\s*((?:[^"\\]|\\.)+)"/;

/** Extracts the instruction from a game's TextWorld grammar, or undefined. */
export function extractGameInstruction(grammar: string): string | undefined {
  return TASK_RULE.exec(grammar)?.[1]?.trim();
}

/** 1-based line of a character offset, for JSON syntax errors. */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let index = 0; index < offset && index < text.length; index += 1) {
    if (text.charCodeAt(index) === 10) line += 1;
  }
  return line;
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function sortedDirectories(path: string): Promise<string[]> {
  const entries = await readdir(path, { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/**
 * Reads and validates one game file into a {@link Task}. `game` is the path relative to
 * the data directory (`train/<task directory>/<trial>`), which becomes the task id.
 *
 * @throws DatasetFormatError naming the file (and line, for JSON syntax errors).
 */
export async function readAlfworldGameFile(
  file: string,
  game: string,
  initialObservation?: Observation,
): Promise<Task> {
  const [split, directory] = game.split('/') as [AlfworldSplit, string];
  const parsedDirectory = parseAlfworldGameDirectory(directory);
  if (parsedDirectory === undefined) {
    throw new DatasetFormatError(
      `"${directory}" is not an ALFWorld task directory (<taskType>-<Object>-<MovableReceptacle>-<Receptacle>-<scene>, taskType one of the six ALFWorld types).`,
      { file },
    );
  }
  const text = await readFile(file, 'utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new DatasetFormatError(
      `invalid JSON (${(error as Error).message}). A game.tw-pddl file is one JSON object; re-download the game files.`,
      {
        file,
        ...(position === undefined ? {} : { line: lineAt(text, Number(position)) }),
        cause: error,
      },
    );
  }
  const record = parseRecord(AlfworldGameFileSchema, value, { file });
  const instruction = extractGameInstruction(record.grammar);
  if (instruction === undefined) {
    throw new DatasetFormatError(
      'the grammar has no `"task": [{"rhs": "Your task is to: ..."}]` rule holding the instruction.',
      { file, field: 'grammar' },
    );
  }
  return parseRecord(
    TaskSchema,
    {
      id: game,
      domain: 'alfworld',
      instruction: JSON.parse(`"${instruction}"`) as string,
      origin: 'seed',
      ...(initialObservation === undefined ? {} : { initialObservation }),
      meta: {
        taskType: parsedDirectory.taskType,
        split,
        game,
        objectType: parsedDirectory.objectType,
        receptacleType: parsedDirectory.receptacleType,
        scene: parsedDirectory.scene,
        gameFile: file,
      },
    },
    { file },
  );
}

/**
 * The initial observations of games that have an expert trajectory, by game path. The
 * engine's first observation of a game is always the same, so the expert's first turn
 * is that game's s_0; synthetic environments start from it.
 */
async function expertInitialObservations(
  dir: string,
  games: ReadonlySet<string>,
): Promise<Map<string, Observation>> {
  const observations = new Map<string, Observation>();
  const file = join(dir, EXPERT_TRAJECTORIES_FILE);
  try {
    if (!(await stat(file)).isFile()) return observations;
  } catch {
    return observations;
  }
  for await (const { value } of readJsonlLines(file)) {
    const record = value as { game?: unknown; conversations?: { value?: unknown }[] };
    const first = record.conversations?.[0]?.value;
    if (typeof record.game === 'string' && games.has(record.game) && typeof first === 'string') {
      observations.set(record.game, mapAlfworldObservation({ text: first }));
    }
  }
  return observations;
}

/**
 * Loads the ALFWorld games under `dir` as seed {@link Task}s, split by split, in sorted
 * order. `splits` defaults to `['train']`: the evaluation splits (`valid_seen`,
 * `valid_unseen`) are read only when named. Tasks of games that have an expert
 * trajectory in `<dir>/expert_trajectories.jsonl` carry its first observation as
 * `initialObservation`.
 *
 * @throws DatasetNotFoundError when `dir` or a split directory is missing.
 * @throws DatasetFormatError naming the game file that is malformed.
 */
export async function* loadAlfworldGameTasks(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Task> {
  const splits = resolveSplits(options.splits);
  if (!(await isDirectory(dir))) {
    throw new DatasetNotFoundError(
      `ALFWorld data directory ${dir} does not exist. Pass the directory holding train/, valid_seen/ and valid_unseen/ (see downloadAlfworldData).`,
      { path: dir },
    );
  }
  const games: { file: string; game: string }[] = [];
  for (const split of splits) {
    const splitDirectory = join(dir, split);
    if (!(await isDirectory(splitDirectory))) {
      throw new DatasetNotFoundError(
        `ALFWorld split directory ${splitDirectory} does not exist. Download the game files (downloadAlfworldData) or load other splits.`,
        { path: splitDirectory },
      );
    }
    for (const taskDirectory of await sortedDirectories(splitDirectory)) {
      for (const trial of await sortedDirectories(join(splitDirectory, taskDirectory))) {
        const file = join(splitDirectory, taskDirectory, trial, GAME_FILE);
        try {
          if (!(await stat(file)).isFile()) continue;
        } catch {
          continue;
        }
        games.push({ file, game: `${split}/${taskDirectory}/${trial}` });
      }
    }
  }
  const selected = options.limit === undefined ? games : games.slice(0, options.limit);
  const initial = await expertInitialObservations(dir, new Set(selected.map(({ game }) => game)));
  for (const { file, game } of selected) {
    yield await readAlfworldGameFile(file, game, initial.get(game));
  }
}

/** The game-file task loader as a core {@link DatasetLoader}. */
export const alfworldGameTaskLoader: DatasetLoader<Task> = { load: loadAlfworldGameTasks };
