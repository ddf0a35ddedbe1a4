/**
 * Offline trajectories: recorded episodes (demonstrations, exploration) as core `Trajectory`
 * records; they seed the replay buffer the experience model retrieves from.
 */
import type { DatasetLoader, DatasetLoadOptions, Trajectory } from '@dreamgym/core';
import { notImplemented } from '../not-implemented.js';

/** Streams the offline trajectories of a dataset directory. */
export function loadMiniwobTrajectories(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncIterable<Trajectory> {
  void dir;
  void options;
  throw notImplemented(
    'datasets.trajectories',
    'src/datasets/trajectories.ts',
    'write loadMiniwobTrajectories(dir, { limit }): stream validated Trajectories of the miniwob domain, throwing DatasetNotFoundError for a missing directory and DatasetFormatError with file:line and field for a bad line',
    2,
  );
}

/** The trajectories loader of the adapter. */
export const miniwobTrajectoryLoader: DatasetLoader<Trajectory> = {
  load: loadMiniwobTrajectories,
};
