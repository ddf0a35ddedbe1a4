/**
 * The models a run was trained with: `dreamgym train` keeps its model flags in the run
 * folder's `run.json`, so a resumed run and `dreamgym eval` build the same parts.
 */
import { type ModelSelection, RUN_SPEC_FILE, SAVED_MODEL_FLAGS } from '@dreamgym/run';
import { type FlagSpecs, type FlagValues, fail } from './command-arguments.js';
import { parseModelSelection } from './model-flags.js';

/** Where the servers are and how the local model runs may change on resume; which models, not. */
const RESUMABLE_MODEL_FLAGS = new Set<string>([
  'base-url',
  'embedding-base-url',
  'model-concurrency',
  'model-threads',
]);

/**
 * The model flags a command that reopens a run may change (where the servers are and how the
 * local model runs), for its `parseFlags`.
 */
export const RUN_MODEL_OVERRIDE_FLAGS: FlagSpecs = Object.fromEntries(
  [...RESUMABLE_MODEL_FLAGS].map((flag) => [flag, { type: 'string' }]),
);

/**
 * The model flags of the run (those given, or on resume the saved ones with the resumable
 * overrides) and what they select, checked before anything loads: every flag must back a
 * part that is selected, and each error names its flag.
 */
export function modelSettings(
  values: FlagValues,
  options: { policy: 'linear' | 'llm'; saved?: Record<string, string>; runDirectory: string },
): { flags: Record<string, string>; selection: ModelSelection } {
  const given = (flag: string) => values[flag] as string | undefined;
  const flags: Record<string, string> = { ...options.saved };
  for (const flag of SAVED_MODEL_FLAGS) {
    const value = given(flag);
    if (value === undefined) continue;
    if (options.saved && !RESUMABLE_MODEL_FLAGS.has(flag) && options.saved[flag] !== value) {
      fail(
        `${options.runDirectory} was trained with ${options.saved[flag] === undefined ? `the default --${flag}` : `--${flag} ${options.saved[flag]}`} (${RUN_SPEC_FILE}); --resume continues it as it started: drop --${flag} ${value}.`,
        `--${flag}`,
      );
    }
    flags[flag] = value;
  }
  const experience = flags.experience ?? 'embedded';
  const chatParts = [
    ...(experience !== 'embedded' ? [`--experience ${experience}`] : []),
    ...(flags['task-generator'] === 'llm' ? ['--task-generator llm'] : []),
  ];
  const needs = (flag: string, what: string) => {
    if (flags[flag] !== undefined) fail(`--${flag} ${what}`, `--${flag}`);
  };
  if (chatParts.length === 0) {
    needs(
      'base-url',
      options.policy === 'llm'
        ? 'is the server of --experience llm|hybrid and --task-generator llm, and neither is selected; --policy llm runs its model in process (--model local|PATH.gguf).'
        : 'is the server of --experience llm|hybrid and --task-generator llm, and neither is selected (an embedding server alone: --embedding-base-url URL).',
    );
    if (options.policy === 'linear') {
      needs(
        'model',
        'names the LLM of --experience llm|hybrid, --task-generator llm and --policy llm, and none of them is selected: add the part it should back.',
      );
    }
    for (const flag of ['model-concurrency', 'model-context-size', 'model-threads']) {
      needs(
        flag,
        'is a setting of the in-process model of --experience llm|hybrid and --task-generator llm, and neither is selected (the LLM policy takes its settings from the "llmPolicy" object of --config).',
      );
    }
  } else if (flags['base-url'] !== undefined) {
    for (const flag of ['model-concurrency', 'model-context-size', 'model-threads']) {
      needs(flag, 'is a setting of an in-process model; the server at --base-url has its own.');
    }
  }
  if (experience === 'embedded') {
    for (const flag of ['experience-format', 'experience-temperature']) {
      needs(flag, 'is a setting of the LLM experience model: add --experience llm or hybrid.');
    }
  }
  if (flags.embedder !== 'openai') {
    for (const flag of ['embedding-model', 'embedding-base-url']) {
      needs(flag, 'is a setting of --embedder openai.');
    }
  }
  // The policy is train's own (a trainable LLM policy, see run-policy.ts), not the selection's.
  const selection = parseModelSelection({ ...flags, policy: 'linear' });
  return { flags, selection };
}
