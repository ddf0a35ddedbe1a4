/**
 * How a domain answers an action it does not admit, learned from its real data.
 *
 * Why: a real environment that lists admissible actions (ALFWorld's admissible commands)
 * answers anything else with no change at all (`Nothing happens.`), while an experience model
 * asked about a `put` of an apple never taken writes what a `put` usually shows ("You put the
 * apple 1 in/on the cabinet 8."). LLM policies that write free text, and trainers that send it
 * over `dreamgym serve`, meet that on every invalid step. Two things decide the answer, both
 * measured on the domain's own data rather than written per domain:
 * - whether the actions the synthetic environment lists (the adapter's candidate actions) are
 *   the domain's admissible ones: they are when they hold the action actually taken at nearly
 *   every real step (free-text domains, a web form's typed values, are not refused);
 * - what the domain says when nothing happens: the one observation that follows actions of
 *   several kinds in the data (ALFWorld's exploration: `Nothing happens.` after takes, puts,
 *   opens), or the state itself when the data shows actions that leave it unchanged (a web
 *   page). Data without any (expert demonstrations never fail) falls back to the adapter's
 *   `experienceHints.noEffectObservations`, then to `Nothing happens.`.
 */
import type { DomainAdapter } from '../adapter.js';
import type { Observation, Step, Trajectory } from '../mdp/schemas.js';

/** How the domain answers an action it refuses. */
export type RefusalAnswer = { kind: 'text'; text: string } | { kind: 'unchanged' };

/** What {@link learnActionRefusal} learned. */
export interface ActionRefusal {
  /** Refuse an action that the state's listed actions do not hold. */
  refuseUnlisted: boolean;
  /** What the refused action is answered with. */
  answer: RefusalAnswer;
  /** Where `answer` came from: the data, the adapter's hint, or the default text. */
  answerSource: 'data' | 'hint' | 'default';
  /** Real steps read, and how many of their actions the listed actions held. */
  steps: number;
  listed: number;
}

/** Options of {@link learnActionRefusal}. */
export interface ActionRefusalOptions {
  /** Trajectories read for the listed-action share (the cost is a candidate list a step). Default 300. */
  sampleTrajectories?: number;
  /** Share of real actions the listed actions must hold for unlisted ones to be refused. Default 0.99. */
  minListedShare?: number;
  /** Fewest real steps from which the share is trusted. Default 50. */
  minSteps?: number;
}

const DEFAULT_ANSWER = 'Nothing happens.';

/**
 * Learns how the domain answers actions it does not admit, from real or offline trajectories
 * (synthetic ones are skipped). `adapter.candidateActions` is asked at each step of a sample
 * with the observation's text alone, as the synthetic environment asks it.
 */
export function learnActionRefusal(
  adapter: Pick<DomainAdapter, 'parseAction' | 'candidateActions' | 'experienceHints'>,
  trajectories: readonly Trajectory[],
  options: ActionRefusalOptions = {},
): ActionRefusal {
  const real = trajectories.filter((trajectory) => trajectory.source !== 'synthetic');
  const sample = spread(real, options.sampleTrajectories ?? 300);
  let steps = 0;
  let listed = 0;
  for (const trajectory of sample) {
    trajectory.steps.forEach((step, index) => {
      steps += 1;
      const candidates = adapter.candidateActions(
        { text: step.observation.text },
        trajectory.steps.slice(0, index),
      );
      if (candidates.includes(step.action) || candidates.includes(canonical(adapter, step.action)))
        listed += 1;
    });
  }
  const share = steps === 0 ? 0 : listed / steps;
  const learned = learnedAnswer(real);
  const hint = adapter.experienceHints?.noEffectObservations?.[0];
  return {
    refuseUnlisted: steps >= (options.minSteps ?? 50) && share >= (options.minListedShare ?? 0.99),
    ...(learned
      ? { answer: learned, answerSource: 'data' as const }
      : hint !== undefined
        ? { answer: { kind: 'text' as const, text: hint }, answerSource: 'hint' as const }
        : {
            answer: { kind: 'text' as const, text: DEFAULT_ANSWER },
            answerSource: 'default' as const,
          }),
    steps,
    listed,
  };
}

/**
 * Whether `refusal` refuses `action` in `state`: the state lists its actions and none of them
 * is `action`.
 */
export function refuses(
  refusal: ActionRefusal | undefined,
  state: Observation,
  action: string,
): boolean {
  if (!refusal?.refuseUnlisted || state.actions === undefined || state.actions.length === 0)
    return false;
  return !state.actions.includes(action);
}

/** The observation a refused action leads to: the same state, or the no-effect text with the same actions. */
export function refusalObservation(refusal: ActionRefusal, state: Observation): Observation {
  if (refusal.answer.kind === 'unchanged') return state;
  return { ...state, text: refusal.answer.text };
}

/**
 * The no-effect answer the data shows: of the observations that follow actions of at least
 * three kinds, five times or more, the most frequent (a text before an unchanged state on a
 * tie); an unchanged state counts as one such observation. Undefined when the data shows none.
 */
function learnedAnswer(trajectories: readonly Trajectory[]): RefusalAnswer | undefined {
  const UNCHANGED = '\u0000unchanged';
  const seen = new Map<string, { count: number; kinds: Set<string> }>();
  for (const trajectory of trajectories) {
    trajectory.steps.forEach((step, index) => {
      const next = nextObservation(trajectory, index);
      if (next === undefined) return;
      // An answer repeated after itself is both that text and an unchanged state.
      const keys = [next.text.trim()];
      if (next.text === step.observation.text) keys.push(UNCHANGED);
      for (const key of keys) {
        if (key === '') continue;
        const entry = seen.get(key) ?? { count: 0, kinds: new Set<string>() };
        entry.count += 1;
        entry.kinds.add(step.action.trim().split(/\s+/)[0] ?? '');
        seen.set(key, entry);
      }
    });
  }
  let best: [string, number] | undefined;
  for (const [key, { count, kinds }] of seen) {
    if (count >= 5 && kinds.size >= 3 && (best === undefined || count > best[1]))
      best = [key, count];
  }
  if (best === undefined) return undefined;
  return best[0] === UNCHANGED ? { kind: 'unchanged' } : { kind: 'text', text: best[0] };
}

function nextObservation(trajectory: Trajectory, index: number): Observation | undefined {
  const following: Step | undefined = trajectory.steps[index + 1];
  return following?.observation ?? trajectory.finalObservation;
}

function canonical(adapter: Pick<DomainAdapter, 'parseAction'>, action: string): string {
  try {
    return adapter.parseAction(action).text;
  } catch {
    return action;
  }
}

/** Up to `count` items spread evenly over `items` (every item when there are fewer). */
function spread<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  const step = items.length / count;
  return Array.from({ length: count }, (_, index) => items[Math.floor(index * step)]!);
}
