/**
 * The state mapper: the real environment's raw output -> the abstract textual state
 * (`Observation`) the policy and the experience model read.
 */
import type { Observation } from '@dreamgym/core';
import { notImplemented } from './not-implemented.js';

/** What the real environment returns before mapping (a page, a JSON record, engine text...). */
export type MiniwobRawObservation = string;

/**
 * Maps one raw output of the real environment to an `Observation`: `text` is what the agent
 * reads (keep what matters for the task, drop noise that changes between identical states),
 * `actions` the admissible actions where the environment lists them.
 */
export function mapMiniwobObservation(raw: MiniwobRawObservation): Observation {
  void raw;
  throw notImplemented(
    'toObservation',
    'src/state-mapper.ts',
    'write mapMiniwobObservation(raw): turn the raw output into { text, actions? }, keeping the text short and stable',
    3,
  );
}
