/**
 * Test support (not exported): ALFWorld expert trajectories from
 * `$DREAMGYM_DATA_DIR/alfworld/expert_trajectories.jsonl` as replay-buffer transitions.
 * Each line is `{game, task_type, conversations: [{from: 'human' | 'gpt', value}]}`:
 * human turns are observations, gpt turns are commands.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { readJsonl } from '../mdp/jsonl.js';
import type { Transition } from '../mdp/schemas.js';

const ExpertTrajectorySchema = z.object({
  game: z.string().min(1),
  task_type: z.string().min(1),
  conversations: z.array(z.object({ from: z.enum(['human', 'gpt']), value: z.string() })),
});

/** The expert-trajectory file, or an error saying what to set: tests fail, never skip. */
export function expertTrajectoriesFile(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (root === undefined || root.trim() === '') {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set. Set it to the shared data directory (e.g. DREAMGYM_DATA_DIR=../shared/data) so that $DREAMGYM_DATA_DIR/alfworld/expert_trajectories.jsonl exists.',
    );
  }
  const file = resolve(join(root, 'alfworld', 'expert_trajectories.jsonl'));
  if (!existsSync(file)) {
    throw new Error(
      `${file} does not exist: DREAMGYM_DATA_DIR=${root} does not hold the ALFWorld data.`,
    );
  }
  return file;
}

/** The command's verb phrase: `go to`, `take`, `put`, `open`, ... */
export function actionType(command: string): string {
  const [first = '', second = ''] = command.trim().toLowerCase().split(/\s+/);
  return first === 'go' && second === 'to' ? 'go to' : first;
}

/** Transitions of the first `limit` expert trajectories, grouped by game. */
export async function loadExpertTransitions(limit: number): Promise<Map<string, Transition[]>> {
  const file = expertTrajectoriesFile();
  const byGame = new Map<string, Transition[]>();
  let count = 0;
  for await (const trajectory of readJsonl(file, ExpertTrajectorySchema)) {
    if (count >= limit) break;
    count += 1;
    const turns = trajectory.conversations;
    const first = turns[0]?.value ?? '';
    const instruction = /Your task is to: (.*)/.exec(first)?.[1]?.trim() ?? trajectory.task_type;
    const transitions: Transition[] = [];
    for (let index = 1; index + 1 < turns.length; index += 2) {
      const [state, action, next] = [turns[index - 1]!, turns[index]!, turns[index + 1]!];
      if (state.from !== 'human' || action.from !== 'gpt' || next.from !== 'human') continue;
      const stepIndex = (index - 1) / 2;
      const last = index + 2 >= turns.length;
      transitions.push({
        id: `${trajectory.game}#${stepIndex}`,
        domain: 'alfworld',
        taskId: trajectory.game,
        instruction,
        trajectoryId: trajectory.game,
        stepIndex,
        state: { text: state.value },
        action: action.value,
        nextState: { text: next.value },
        reward: last ? 1 : 0,
        done: last,
        source: 'offline',
        trajectorySuccess: true,
      });
    }
    byGame.set(trajectory.game, [...(byGame.get(trajectory.game) ?? []), ...transitions]);
  }
  return byGame;
}

/** A synthetic variant of `transition`: another id and next state (`suffix` in both). */
export function synthetic(transition: Transition, suffix: string): Transition {
  return {
    ...transition,
    id: `${transition.id}~${suffix}`,
    source: 'synthetic',
    nextState: { text: `${transition.nextState.text} (${suffix})` },
  };
}
