/**
 * Loader of `expert_trajectories.jsonl`: ALFWorld's hand-checked expert demonstrations
 * (from `json_2.1.1/train/**\/gt_traj.json`), one conversation per line.
 */
import { join } from 'node:path';
import {
  ActionParseError,
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  type Step,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { parseAlfworldAction } from '../action-grammar.js';
import { extractAlfworldTask, mapAlfworldObservation } from '../state-mapper.js';
import {
  ALFWORLD_TASK_TYPES,
  type AlfworldSplit,
  parseAlfworldGameDirectory,
} from '../task-types.js';
import { resolveSplits } from './splits.js';

/** The file name of the expert trajectories inside an ALFWorld data directory. */
export const EXPERT_TRAJECTORIES_FILE = 'expert_trajectories.jsonl';

/** One line of `expert_trajectories.jsonl`. */
export const AlfworldExpertRecordSchema = z.object({
  /** The game path relative to the data directory: `<split>/<task directory>/<trial>`. */
  game: z
    .string()
    .regex(
      /^(train|valid_seen|valid_unseen)\/[^/]+\/[^/]+$/,
      'must be `<split>/<task directory>/<trial>`',
    ),
  task_type: z.enum(ALFWORLD_TASK_TYPES),
  /** `human` turns are observations, `gpt` turns the commands between them. */
  conversations: z
    .array(z.object({ from: z.enum(['human', 'gpt']), value: z.string() }))
    .min(3, 'needs the initial observation, at least one command and the final observation'),
});
/** One line of `expert_trajectories.jsonl`. */
export type AlfworldExpertRecord = z.infer<typeof AlfworldExpertRecordSchema>;

/**
 * Converts one validated expert record to a {@link Trajectory}: each `gpt` command is a
 * step taken in the state of the `human` turn before it; the last `human` turn is the
 * final observation. The episode succeeded, so the last step has reward 1 and `done`.
 *
 * @throws DatasetFormatError when turns do not alternate, the task line is missing,
 * the task directory is not an ALFWorld one, or a command breaks the grammar.
 */
export function expertRecordToTrajectory(
  record: AlfworldExpertRecord,
  where: { file: string; line: number },
): Trajectory {
  const fail: (message: string, field: string) => never = (message, field) => {
    throw new DatasetFormatError(message, { ...where, field });
  };
  const turns = record.conversations;
  for (const [index, turn] of turns.entries()) {
    const expected = index % 2 === 0 ? 'human' : 'gpt';
    if (turn.from !== expected) {
      fail(
        `turn ${index} is from "${turn.from}", expected "${expected}": turns must alternate human (observation) and gpt (command), starting and ending with human`,
        `conversations.${index}.from`,
      );
    }
  }
  if (turns.length % 2 === 0) {
    fail(
      'the last turn must be the final observation (human)',
      `conversations.${turns.length - 1}.from`,
    );
  }
  const instruction = extractAlfworldTask(turns[0]!.value);
  if (instruction === undefined) {
    fail('the first observation has no "Your task is to: ..." line', 'conversations.0.value');
  }
  const [split, directory] = record.game.split('/') as [AlfworldSplit, string];
  const game = parseAlfworldGameDirectory(directory);
  if (game === undefined || game.taskType !== record.task_type) {
    fail(
      `"${directory}" is not an ALFWorld task directory of type ${record.task_type} (<taskType>-<Object>-<MovableReceptacle>-<Receptacle>-<scene>)`,
      'game',
    );
  }
  const steps: Step[] = [];
  const commandCount = (turns.length - 1) / 2;
  for (let index = 0; index < commandCount; index += 1) {
    const command = turns[2 * index + 1]!.value;
    let action: string;
    try {
      action = parseAlfworldAction(command).text;
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      fail(error.message, `conversations.${2 * index + 1}.value`);
    }
    const last = index === commandCount - 1;
    steps.push({
      observation: mapAlfworldObservation({ text: turns[2 * index]!.value }),
      action: action!,
      reward: last ? 1 : 0,
      done: last,
    });
  }
  return parseRecord(
    TrajectorySchema,
    {
      id: `expert:${record.game}`,
      task: {
        id: record.game,
        domain: 'alfworld',
        instruction,
        origin: 'seed',
        initialObservation: steps[0]!.observation,
        meta: {
          taskType: record.task_type,
          split,
          game: record.game,
          objectType: game!.objectType,
          receptacleType: game!.receptacleType,
          scene: game!.scene,
        },
      },
      steps,
      finalObservation: mapAlfworldObservation({ text: turns[turns.length - 1]!.value }),
      source: 'offline',
      success: true,
      meta: { expert: true },
    },
    where,
  );
}

/**
 * Loads `<dir>/expert_trajectories.jsonl` as successful offline {@link Trajectory}s.
 * `splits` defaults to `['train']` (the file holds train games only); `limit` stops early.
 */
export async function* loadAlfworldExpertTrajectories(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Trajectory> {
  const splits = resolveSplits(options.splits);
  const file = join(dir, EXPERT_TRAJECTORIES_FILE);
  let count = 0;
  for await (const { line, value } of readJsonlLines(file)) {
    if (options.limit !== undefined && count >= options.limit) return;
    const record = parseRecord(AlfworldExpertRecordSchema, value, { file, line });
    if (!splits.includes(record.game.split('/')[0] as AlfworldSplit)) continue;
    yield expertRecordToTrajectory(record, { file, line });
    count += 1;
  }
}

/** The expert-trajectory loader as a core {@link DatasetLoader}. */
export const alfworldExpertTrajectoryLoader: DatasetLoader<Trajectory> = {
  load: loadAlfworldExpertTrajectories,
};
