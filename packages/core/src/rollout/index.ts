/**
 * Rollouts: episodes of a policy over a pool of environments (`RolloutCollector`), and what
 * they become (core trajectories for the logs, transitions for the replay buffer).
 */
export { EnvironmentPool } from './environment-pool.js';
export {
  type CollectOptions,
  collectRollouts,
  type EpisodeState,
  type Rollout,
  RolloutCollector,
  type RolloutCollectorOptions,
  type RolloutStep,
  rolloutToTrajectory,
} from './rollout.js';
