/**
 * Offline trajectories: recorded episodes (demonstrations, exploration) as core `Trajectory`
 * records; they seed the replay buffer the experience model retrieves from.
 */
import type { DatasetLoader, DatasetLoadOptions, Trajectory } from '@dreamgym/core';
import { notImplemented } from '../not-implemented.js';

/** Streams the offline trajectories of a dataset directory. */
export function load__PASCAL__Trajectories(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncIterable<Trajectory> {
  void dir;
  void options;
  throw notImplemented(
    'datasets.trajectories',
    'src/datasets/trajectories.ts',
    'write load__PASCAL__Trajectories(dir, { limit }): stream validated Trajectories of the __NAME__ domain, throwing DatasetNotFoundError for a missing directory and DatasetFormatError with file:line and field for a bad line',
    2,
  );
}

/** The trajectories loader of the adapter. */
export const __CAMEL__TrajectoryLoader: DatasetLoader<Trajectory> = {
  load: load__PASCAL__Trajectories,
};
