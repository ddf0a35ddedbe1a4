/**
 * The embedded curriculum generator for ALFWorld: a new task of the same type in the
 * same room, with another object and receptacle the train data pairs for that type.
 */
import type { SeededRandom, Task } from '@dreamgym/core';
import {
  ALFWORLD_INSTRUCTION_TEMPLATES,
  AlfworldTaskTypeSchema,
  fillInstructionTemplate,
} from './task-types.js';
import { type AlfworldVocabulary, roomReceptacleTypes } from './vocabulary.js';

/**
 * A variation of `task`: same task type and room (same `initialObservation` and scene),
 * another `[object, receptacle]` pair among those the train split uses for that type,
 * and an instruction in one of ALFWorld's phrasings for the type.
 *
 * The pair must fit the room: the receptacle is listed in the room description (or, for
 * `look_at_obj_in_light`, the lamp is an object of the scene) and the object type has
 * been seen in the scene. Returns undefined when the task is not an ALFWorld task with
 * a known type, or no other pair fits.
 *
 * The child is not playable on the real engine (no game file has its goal), so its
 * meta keeps the parent's game as `baseGame` and drops `game` and `gameFile`.
 */
export function mutateAlfworldTask(
  task: Task,
  random: SeededRandom,
  vocabulary: AlfworldVocabulary,
): Task | undefined {
  const taskType = AlfworldTaskTypeSchema.safeParse(task.meta.taskType);
  if (!taskType.success) return undefined;
  const type = taskType.data;
  const scene =
    typeof task.meta.scene === 'number' ? vocabulary.scenes[String(task.meta.scene)] : undefined;
  const roomReceptacles =
    (task.initialObservation && roomReceptacleTypes(task.initialObservation.text)) ??
    scene?.receptacles;
  const candidates = (vocabulary.pairs[type] ?? []).filter(([object, receptacle]) => {
    if (object === task.meta.objectType && receptacle === task.meta.receptacleType) return false;
    if (scene !== undefined && !scene.objects.includes(object)) return false;
    if (type === 'look_at_obj_in_light')
      return scene === undefined || scene.objects.includes(receptacle);
    return roomReceptacles === undefined || roomReceptacles.includes(receptacle);
  });
  if (candidates.length === 0) return undefined;
  const [object, receptacle] = random.choice(candidates);
  const templates = ALFWORLD_INSTRUCTION_TEMPLATES[type];
  const templateIndex = random.int(templates.length);
  const { game, gameFile: _gameFile, ...meta } = task.meta;
  const baseGame = typeof game === 'string' ? game : (task.meta.baseGame ?? task.id);
  const instruction = fillInstructionTemplate(templates[templateIndex]!, { object, receptacle });
  return {
    id: `${String(baseGame)}~${object}-${receptacle}-${templateIndex}`,
    domain: task.domain,
    instruction,
    origin: 'generated',
    parentId: task.id,
    ...(task.initialObservation === undefined
      ? {}
      : {
          // The room is the parent's; only the task line it carried changes.
          initialObservation: {
            ...task.initialObservation,
            meta: { ...task.initialObservation.meta, task: instruction },
          },
        }),
    meta: { ...meta, taskType: type, objectType: object, receptacleType: receptacle, baseGame },
  };
}
