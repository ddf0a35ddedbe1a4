/**
 * The world a task is played in: the room, objects or site its episodes act on. Tasks of one
 * world share what their episodes can observe, whatever their instructions ask.
 */
import type { Task } from './schemas.js';

/**
 * The world a task is played in: `task.meta.world` where a task generator set it (a variation
 * of a seed task keeps its parent's world), else the task's id.
 */
export function worldOf(task: Pick<Task, 'id' | 'meta'>): string {
  const world = task.meta?.world;
  return typeof world === 'string' && world !== '' ? world : task.id;
}
