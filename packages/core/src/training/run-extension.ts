/**
 * Extending a run: resuming it with more iterations or a larger real-transition budget than it
 * started with (`run({ resume: true, extend: true })`), so that a learning curve can be taken
 * further without training its first part again. Nothing else of the configuration may change.
 *
 * The extended run is the started run followed by more training, not an uninterrupted run at the
 * larger budget: the iteration that spent the old real budget had its last episodes cut off at
 * that budget, and the old last iteration ended with the final evaluation.
 */
import { readFile } from 'node:fs/promises';
import { CheckpointError, ConfigError } from '../errors.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import {
  type DreamGymConfig,
  type DreamGymConfigInput,
  parseDreamGymConfig,
} from './dreamgym-config.js';
import type { Counters } from './loop-state.js';
import { stableHash } from './run-ledger.js';

/** The fields an extension may raise; every other field must be what the run started with. */
const EXTENDABLE = ['iterations', 'simToReal.realTransitionBudget'] as const;

function valueAt(config: DreamGymConfig, field: (typeof EXTENDABLE)[number]): number {
  return field === 'iterations' ? config.iterations : config.simToReal.realTransitionBudget;
}

/** Dotted paths where two JSON values differ (a leaf, or a key one side lacks). */
function differences(started: unknown, requested: unknown, path = ''): string[] {
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (isObject(started) && isObject(requested)) {
    const keys = [...new Set([...Object.keys(started), ...Object.keys(requested)])];
    return keys.flatMap((key) =>
      differences(started[key], requested[key], path ? `${path}.${key}` : key),
    );
  }
  return JSON.stringify(started) === JSON.stringify(requested) ? [] : [path];
}

/**
 * What extending the run started with `started` to `requested` changes, as lines such as
 * `simToReal.realTransitionBudget 10000 -> 30000` (none when the two are the same). Throws a
 * `ConfigError` naming the field when anything but {@link EXTENDABLE} differs, when one of those
 * would shrink, or when iterations would be added after the real phase began (synthetic
 * iterations come before real ones).
 */
function runExtension(
  started: DreamGymConfig,
  requested: DreamGymConfig,
  phase: Counters['phase'],
  runDirectory: string,
): string[] {
  const extendable: readonly string[] = EXTENDABLE;
  for (const field of differences(started, requested)) {
    if (!extendable.includes(field)) {
      throw new ConfigError(
        `Cannot extend the run in ${runDirectory}: ${field} differs from the run's config.json. An extension may only raise ${EXTENDABLE.join(' and ')}.`,
        { field },
      );
    }
  }
  const changes: string[] = [];
  for (const field of EXTENDABLE) {
    const before = valueAt(started, field);
    const after = valueAt(requested, field);
    if (after < before) {
      throw new ConfigError(
        `Cannot extend the run in ${runDirectory}: ${field} ${after} is below the ${before} it started with.`,
        { field },
      );
    }
    if (after > before) changes.push(`${field} ${before} -> ${after}`);
  }
  if (phase === 'real' && requested.iterations > started.iterations) {
    throw new ConfigError(
      `Cannot extend the run in ${runDirectory}: its real phase has begun, and synthetic iterations come before real ones. Raise simToReal.realTransitionBudget instead.`,
      { field: 'iterations' },
    );
  }
  return changes;
}

/**
 * Makes the run's configuration `config`, a larger one (see {@link runExtension}): the run's
 * `config.json` is rewritten and `counters` (the checkpoints from here on) carry its hash. When
 * `config.json` already holds `config`, an extension was interrupted before its first checkpoint.
 */
export async function extendRun(
  configFile: string,
  config: DreamGymConfig,
  counters: Counters,
  runDirectory: string,
  log: (message: string) => void,
): Promise<void> {
  const written: unknown = JSON.parse(await readFile(configFile, 'utf8'));
  const writtenHash = stableHash(written);
  const configHash = stableHash(config);
  if (writtenHash === configHash) {
    log(`continuing the extension of ${runDirectory}`);
  } else if (writtenHash !== counters.configHash) {
    throw new CheckpointError(
      `${configFile} is not the configuration the checkpoint in ${runDirectory} was written with, so the run cannot be extended.`,
      { path: configFile },
    );
  } else {
    const started = parseDreamGymConfig(written as DreamGymConfigInput);
    const changes = runExtension(started, config, counters.phase, runDirectory);
    await writeFileAtomic(configFile, `${JSON.stringify(config, null, 2)}\n`);
    log(`extending ${runDirectory}: ${changes.join(', ')}`);
  }
  counters.configHash = configHash;
}
