/**
 * The task vocabulary `mutateTask` draws from: which (object, receptacle) pairs each task
 * type uses in the train split, and which object and receptacle types each scene holds.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ConfigError,
  DatasetFormatError,
  DatasetNotFoundError,
  type Trajectory,
} from '@dreamgym/core';
import { parseRecord } from '@dreamgym/core/mdp';
import { z } from 'zod';
import {
  AlfworldExpertRecordSchema,
  EXPERT_TRAJECTORIES_FILE,
  expertRecordToTrajectory,
  loadAlfworldExpertTrajectories,
} from './datasets/expert-trajectories.js';
import { parseAlfworldListing } from './episode-tracker.js';
import { ALFWORLD_TASK_TYPES, AlfworldTaskTypeSchema } from './task-types.js';

const TypeNameSchema = z.string().regex(/^[a-z]+$/, 'must be a lower-case type name');

/** The vocabulary of ALFWorld tasks, built from train data only. */
export const AlfworldVocabularySchema = z.object({
  /** Per task type, the `[objectType, receptacleType]` pairs of its train tasks (the lamp for `look_at_obj_in_light`). */
  pairs: z.partialRecord(
    AlfworldTaskTypeSchema,
    z.array(z.tuple([TypeNameSchema, TypeNameSchema])),
  ),
  /** Per AI2-THOR scene number, the object and receptacle types seen there. */
  scenes: z.record(
    z.string().regex(/^\d+$/),
    z.object({ objects: z.array(TypeNameSchema), receptacles: z.array(TypeNameSchema) }),
  ),
});
/** The vocabulary of ALFWorld tasks. */
export type AlfworldVocabulary = z.infer<typeof AlfworldVocabularySchema>;

const ROOM_LISTING = /Looking quickly around you, you see ([^.]*)\./;

function typeOf(name: string): string {
  return name.slice(0, name.lastIndexOf(' '));
}

/** The receptacle types in an ALFWorld room description, or undefined without one. */
export function roomReceptacleTypes(text: string): string[] | undefined {
  const listing = ROOM_LISTING.exec(text)?.[1];
  return listing === undefined
    ? undefined
    : [...new Set(parseAlfworldListing(listing).map(typeOf))];
}

/**
 * Builds the vocabulary from ALFWorld trajectories (the expert demonstrations): task
 * types, objects and receptacles from each task's meta, scene contents from every
 * observation.
 *
 * @throws ConfigError when a trajectory comes from `valid_unseen`, the test split, which
 * must never shape what the agent is trained on.
 */
export function buildAlfworldVocabulary(trajectories: Iterable<Trajectory>): AlfworldVocabulary {
  const pairs = new Map<string, Set<string>>();
  const scenes = new Map<string, { objects: Set<string>; receptacles: Set<string> }>();
  for (const trajectory of trajectories) {
    const meta = trajectory.task.meta;
    if (meta.split === 'valid_unseen') {
      throw new ConfigError(
        `Trajectory of ${trajectory.task.id} is from valid_unseen, ALFWorld's test split: build the vocabulary from train data only.`,
      );
    }
    const taskType = AlfworldTaskTypeSchema.safeParse(meta.taskType);
    if (
      taskType.success &&
      typeof meta.objectType === 'string' &&
      typeof meta.receptacleType === 'string'
    ) {
      const set = pairs.get(taskType.data) ?? new Set<string>();
      set.add(`${meta.objectType} ${meta.receptacleType}`);
      pairs.set(taskType.data, set);
    }
    if (typeof meta.scene !== 'number') continue;
    const scene = scenes.get(String(meta.scene)) ?? { objects: new Set(), receptacles: new Set() };
    scenes.set(String(meta.scene), scene);
    const texts = [
      trajectory.task.initialObservation?.text ?? '',
      ...trajectory.steps.map((step) => step.observation.text),
      trajectory.finalObservation?.text ?? '',
    ];
    for (const text of texts) {
      const room = ROOM_LISTING.exec(text);
      for (const type of roomReceptacleTypes(text) ?? []) scene.receptacles.add(type);
      const rest = room ? text.replace(room[0], '') : text;
      for (const name of parseAlfworldListing(rest)) scene.objects.add(typeOf(name));
    }
  }
  const vocabulary: AlfworldVocabulary = { pairs: {}, scenes: {} };
  for (const type of ALFWORLD_TASK_TYPES) {
    const set = pairs.get(type);
    if (set === undefined) continue;
    vocabulary.pairs[type] = [...set].sort().map((pair) => pair.split(' ') as [string, string]);
  }
  for (const [scene, contents] of [...scenes].sort(([a], [b]) => Number(a) - Number(b))) {
    vocabulary.scenes[scene] = {
      objects: [...contents.objects].sort(),
      receptacles: [...contents.receptacles].sort(),
    };
  }
  return vocabulary;
}

/**
 * Loads the train expert trajectories of `dir` and builds the vocabulary from them
 * (about a second for the 3,554 trajectories). Build it once and pass it to
 * `createAlfworldAdapter({ vocabulary })`.
 */
export async function loadAlfworldVocabulary(dir: string): Promise<AlfworldVocabulary> {
  const trajectories: Trajectory[] = [];
  for await (const trajectory of loadAlfworldExpertTrajectories(dir, { splits: ['train'] })) {
    trajectories.push(trajectory);
  }
  return buildAlfworldVocabulary(trajectories);
}

/**
 * {@link loadAlfworldVocabulary} without `await`, for `createAlfworldAdapter({ dataDir })`,
 * whose synchronous `mutateTask` builds the vocabulary on first use.
 */
export function loadAlfworldVocabularySync(dir: string): AlfworldVocabulary {
  const file = join(dir, EXPERT_TRAJECTORIES_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new DatasetNotFoundError(
      `Cannot build the ALFWorld vocabulary: ${file} is missing. Pass the ALFWorld data directory as dataDir.`,
      { path: file, cause: error },
    );
  }
  const trajectories: Trajectory[] = [];
  text.split('\n').forEach((lineText, index) => {
    if (lineText.trim() === '') return;
    const where = { file, line: index + 1 };
    let value: unknown;
    try {
      value = JSON.parse(lineText);
    } catch (error) {
      throw new DatasetFormatError(`invalid JSON (${(error as Error).message})`, {
        ...where,
        cause: error,
      });
    }
    const record = parseRecord(AlfworldExpertRecordSchema, value, where);
    if (record.game.startsWith('train/'))
      trajectories.push(expertRecordToTrajectory(record, where));
  });
  return buildAlfworldVocabulary(trajectories);
}
