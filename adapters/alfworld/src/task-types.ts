/**
 * ALFWorld's six task types, the naming of its game directories, and its instruction
 * templates (the two phrasings per task type that occur in the train split).
 */
import { z } from 'zod';

/** The six ALFWorld task types, named as in the game directories. */
export const ALFWORLD_TASK_TYPES = [
  'pick_and_place_simple',
  'look_at_obj_in_light',
  'pick_clean_then_place_in_recep',
  'pick_heat_then_place_in_recep',
  'pick_cool_then_place_in_recep',
  'pick_two_obj_and_place',
] as const;

/** An ALFWorld task type. */
export const AlfworldTaskTypeSchema = z.enum(ALFWORLD_TASK_TYPES);
/** An ALFWorld task type. */
export type AlfworldTaskType = z.infer<typeof AlfworldTaskTypeSchema>;

/** ALFWorld's data splits; `valid_unseen` is the standard test split. */
export const ALFWORLD_SPLITS = ['train', 'valid_seen', 'valid_unseen'] as const;
/** An ALFWorld data split. */
export const AlfworldSplitSchema = z.enum(ALFWORLD_SPLITS);
/** An ALFWorld data split. */
export type AlfworldSplit = z.infer<typeof AlfworldSplitSchema>;

/** What a game directory name (`pick_heat_then_place_in_recep-Apple-None-Fridge-12`) says. */
export interface AlfworldGameDirectory {
  taskType: AlfworldTaskType;
  /** The object to move or look at, lower-case as the engine names it (`apple`). */
  objectType: string;
  /** The target receptacle, or the lamp for `look_at_obj_in_light` (`fridge`, `desklamp`). */
  receptacleType: string;
  /** The AI2-THOR scene (floor plan) number. */
  scene: number;
}

/**
 * Parses an ALFWorld task directory name `<taskType>-<Object>-<MovableReceptacle>-<Receptacle>-<scene>`,
 * or returns undefined when it does not follow that pattern.
 */
export function parseAlfworldGameDirectory(name: string): AlfworldGameDirectory | undefined {
  const parts = name.split('-');
  if (parts.length !== 5) return undefined;
  const [taskType, object, , receptacle, scene] = parts as [string, string, string, string, string];
  const type = AlfworldTaskTypeSchema.safeParse(taskType);
  if (!type.success || !/^[A-Za-z]+$/.test(object) || !/^[A-Za-z]+$/.test(receptacle)) {
    return undefined;
  }
  if (!/^\d+$/.test(scene)) return undefined;
  return {
    taskType: type.data,
    objectType: object.toLowerCase(),
    receptacleType: receptacle.toLowerCase(),
    scene: Number(scene),
  };
}

/**
 * The instruction phrasings of each task type, with `{object}` and `{receptacle}` slots
 * (the receptacle is the lamp for `look_at_obj_in_light`). These are the only two
 * phrasings per type among the 3,554 expert trajectories of the train split.
 */
export const ALFWORLD_INSTRUCTION_TEMPLATES: Readonly<Record<AlfworldTaskType, readonly string[]>> =
  {
    pick_and_place_simple: [
      'put some {object} on {receptacle}.',
      'put a {object} in {receptacle}.',
    ],
    look_at_obj_in_light: [
      'look at {object} under the {receptacle}.',
      'examine the {object} with the {receptacle}.',
    ],
    pick_clean_then_place_in_recep: [
      'clean some {object} and put it in {receptacle}.',
      'put a clean {object} in {receptacle}.',
    ],
    pick_heat_then_place_in_recep: [
      'heat some {object} and put it in {receptacle}.',
      'put a hot {object} in {receptacle}.',
    ],
    pick_cool_then_place_in_recep: [
      'cool some {object} and put it in {receptacle}.',
      'put a cool {object} in {receptacle}.',
    ],
    pick_two_obj_and_place: [
      'put two {object} in {receptacle}.',
      'find two {object} and put them in {receptacle}.',
    ],
  };

/** Fills an instruction template's slots. */
export function fillInstructionTemplate(
  template: string,
  slots: { object: string; receptacle: string },
): string {
  return template.replace('{object}', slots.object).replace('{receptacle}', slots.receptacle);
}
