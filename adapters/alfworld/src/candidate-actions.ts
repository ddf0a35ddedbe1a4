/**
 * Admissible-command proposals for states that do not list them (the synthetic
 * environment), built from the ALFWorld command grammar over what the episode has shown.
 */
import type { DomainAdapter, Observation, Step, Trajectory } from '@dreamgym/core';
import { formatAlfworldAction } from './action-grammar.js';
import { trackAlfworldEpisode } from './episode-tracker.js';

/** Receptacle types where the engine accepts `clean`, `heat` and `cool` (ALFWorld's PDDL domain). */
const APPLIANCE_ACTIONS: Readonly<Record<string, 'clean' | 'heat' | 'cool'>> = {
  sinkbasin: 'clean',
  sink: 'clean',
  microwave: 'heat',
  fridge: 'cool',
};

/** Object types that `use` switches on (the lamps of `look_at_obj_in_light`). */
const TOGGLEABLE_TYPES: ReadonlySet<string> = new Set(['desklamp', 'floorlamp']);

function typeOf(name: string): string {
  return name.slice(0, name.lastIndexOf(' '));
}

/**
 * Proposes the commands that make sense after `history` ended in `observation`.
 *
 * When the observation lists admissible `actions` (the real engine), those are returned
 * unchanged. Otherwise, from the episode's texts:
 * - `go to R` for every receptacle seen, except the one the agent stands at;
 * - at the current receptacle: `open`/`close` by its known state, `examine` it,
 *   `take O from R` for each object seen in or on it when the hands are empty (and it
 *   is not closed), `use` for a lamp seen there;
 * - with an object in hand: `put O in/on R` where R is not closed, `examine O`, and
 *   `clean`/`heat`/`cool O with R` at a sink basin, microwave or fridge;
 * - always `inventory` and `look`.
 *
 * `slice` is never proposed: no ALFWorld task type needs it.
 */
export function alfworldCandidateActions(
  observation: Observation,
  history: readonly Step[],
): string[] {
  if (observation.actions !== undefined && observation.actions.length > 0) {
    return [...new Set(observation.actions)];
  }
  const state = trackAlfworldEpisode(observation, history);
  const candidates = new Set<string>();
  for (const receptacle of state.receptacles) {
    if (receptacle !== state.location) candidates.add(formatAlfworldAction('go to', [receptacle]));
  }
  const here = state.location;
  if (here !== undefined) {
    const opened = state.opened.get(here);
    if (opened === false) candidates.add(formatAlfworldAction('open', [here]));
    if (opened === true) candidates.add(formatAlfworldAction('close', [here]));
    candidates.add(formatAlfworldAction('examine', [here]));
    const reachable = opened !== false;
    const objects = reachable ? [...(state.contents.get(here) ?? [])] : [];
    for (const object of objects) {
      if (state.held === undefined) candidates.add(formatAlfworldAction('take', [object, here]));
      if (TOGGLEABLE_TYPES.has(typeOf(object)))
        candidates.add(formatAlfworldAction('use', [object]));
    }
    if (state.held !== undefined) {
      if (reachable) candidates.add(formatAlfworldAction('put', [state.held, here]));
      const appliance = APPLIANCE_ACTIONS[typeOf(here)];
      if (appliance !== undefined) {
        candidates.add(formatAlfworldAction(appliance, [state.held, here]));
      }
    }
  }
  if (state.held !== undefined) candidates.add(formatAlfworldAction('examine', [state.held]));
  candidates.add('inventory');
  candidates.add('look');
  return [...candidates];
}

/** How well an adapter's `candidateActions` covers the commands experts actually chose. */
export interface CandidateCoverage {
  /** Fraction of expert steps whose command was among the candidates. */
  coverage: number;
  /** Mean number of candidates per step. */
  meanCandidates: number;
  /** Steps measured. */
  steps: number;
  /** Coverage per action type (`go to`, `take`...), with the number of steps of that type. */
  byActionType: Record<string, { coverage: number; steps: number }>;
}

/**
 * Replays each trajectory and checks, at every step, whether the command taken is among
 * `adapter.candidateActions(observation, history)`. Admissible `actions` listed in the
 * observations are removed first, so the grammar-based proposals are what is measured.
 * Commands are compared in the grammar's canonical form.
 */
export function measureCandidateCoverage(
  trajectories: Iterable<Trajectory>,
  adapter: Pick<DomainAdapter, 'candidateActions' | 'parseAction'>,
): CandidateCoverage {
  let steps = 0;
  let covered = 0;
  let candidateTotal = 0;
  const byType = new Map<string, { covered: number; steps: number }>();
  for (const trajectory of trajectories) {
    const history: Step[] = trajectory.steps.map((step) => ({
      ...step,
      observation: withoutActions(step.observation),
    }));
    for (const [index, step] of history.entries()) {
      const candidates = adapter
        .candidateActions(step.observation, history.slice(0, index))
        .map((candidate) => adapter.parseAction(candidate).text);
      const expert = adapter.parseAction(step.action);
      const hit = candidates.includes(expert.text);
      steps += 1;
      candidateTotal += candidates.length;
      if (hit) covered += 1;
      const tally = byType.get(expert.type) ?? { covered: 0, steps: 0 };
      tally.steps += 1;
      if (hit) tally.covered += 1;
      byType.set(expert.type, tally);
    }
  }
  const byActionType: CandidateCoverage['byActionType'] = {};
  for (const [type, tally] of byType) {
    byActionType[type] = { coverage: tally.covered / tally.steps, steps: tally.steps };
  }
  return {
    coverage: steps === 0 ? 0 : covered / steps,
    meanCandidates: steps === 0 ? 0 : candidateTotal / steps,
    steps,
    byActionType,
  };
}

function withoutActions(observation: Observation): Observation {
  const { actions: _actions, ...rest } = observation;
  return rest;
}
