import type { Trajectory, Transition } from './schemas.js';

/**
 * Splits a trajectory into transitions (s_t, a_t, s_{t+1}, r_{t+1}) for the replay buffer.
 * The last step needs `trajectory.finalObservation` as its next state; without it, the
 * last step is left out (its outcome was never observed).
 */
export function trajectoryToTransitions(
  trajectory: Trajectory,
  options: { trajectoryId?: string } = {},
): Transition[] {
  const trajectoryId = options.trajectoryId ?? trajectory.id ?? trajectory.task.id;
  const transitions: Transition[] = [];
  trajectory.steps.forEach((step, index) => {
    const nextState = trajectory.steps[index + 1]?.observation ?? trajectory.finalObservation;
    if (nextState === undefined) return;
    transitions.push({
      id: `${trajectoryId}#${index}`,
      domain: trajectory.task.domain,
      taskId: trajectory.task.id,
      instruction: trajectory.task.instruction,
      trajectoryId,
      stepIndex: index,
      state: step.observation,
      action: step.action,
      nextState,
      reward: step.reward,
      done: step.done,
      source: trajectory.source,
      trajectorySuccess: trajectory.success,
      ...(step.reasoning === undefined ? {} : { reasoning: step.reasoning }),
    });
  });
  return transitions;
}
