/**
 * What a run folder keeps of how its run was built: `run.json`, one checked record read and
 * written here only. `dreamgym train` and `dreamgym serve` write it when a run starts; a
 * resumed run, `dreamgym eval` and `dreamgym fidelity` rebuild the same parts from it.
 *
 * The loop's configuration is not in it: the loop keeps its own (`config.json` of
 * `DreamGymLoop`, `serve-config.json` of the server's service), complete, with the hash its
 * checkpoints carry, for library users as for the CLI; one copy, so the two cannot disagree.
 *
 * Run folders written before `run.json` kept the same settings in `setup.json`, `policy.json`
 * and `models.json` (train) or one `setup.json` (serve); they are read as they are.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, parseOptions } from '@dreamgym/core';
import { z } from 'zod';
import { type DomainSetupOptions, DomainSetupOptionsSchema } from './domain-setup.js';
import { type RunPolicySettings, RunPolicySettingsSchema } from './run-policy.js';

/** The file of a run folder that holds its {@link RunSpec}. */
export const RUN_SPEC_FILE = 'run.json';

/** The model flags a run keeps, so a resumed run builds the same models. */
export const SAVED_MODEL_FLAGS = [
  'experience',
  'task-generator',
  'embedder',
  'model',
  'base-url',
  'experience-format',
  'experience-temperature',
  'embedding-model',
  'embedding-base-url',
  'model-concurrency',
  'model-context-size',
  'model-threads',
] as const;

const ModelFlagsSchema = z.partialRecord(z.enum(SAVED_MODEL_FLAGS), z.string());

/** `run.json`: how a run's parts are built. */
const RunSpecSchema = z
  .object({
    /** The command that started the run. */
    command: z.enum(['train', 'serve']),
    /** The domain's set-up, as given (no defaults filled in). */
    setup: z.record(z.string(), z.unknown()),
    /** The policy (train; serve trains none). */
    policy: RunPolicySettingsSchema.optional(),
    /** Train's model flags given (`experience`, `model`, `base-url` ...); none: every default. */
    models: ModelFlagsSchema.optional(),
    /** The server's settings (serve). */
    server: z.record(z.string(), z.unknown()).optional(),
    /** The shared replay buffer the server joined (serve). */
    sharedBuffer: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** How a run's parts are built: what `run.json` holds. */
export interface RunSpec {
  command: 'train' | 'serve';
  setup: DomainSetupOptions;
  policy?: RunPolicySettings;
  /** Train's model flags given (`SAVED_MODEL_FLAGS` to value); none: every default. */
  models?: Record<string, string>;
  server?: Record<string, unknown>;
  sharedBuffer?: Record<string, unknown>;
}

/** Writes `run.json` into the run folder. */
export async function writeRunSpec(runDirectory: string, spec: RunSpec): Promise<void> {
  parseOptions(DomainSetupOptionsSchema, spec.setup, 'domain set-up');
  await writeFile(join(runDirectory, RUN_SPEC_FILE), `${JSON.stringify(spec, null, 2)}\n`);
}

/**
 * The spec of the run in `runDirectory` (its `run.json`, or the files of a run folder written
 * before it), checked; undefined where the folder holds neither. Errors name the file and
 * the field, for `--run-dir`.
 */
export async function readRunSpec(runDirectory: string): Promise<RunSpec | undefined> {
  const raw = await readJson(runDirectory, RUN_SPEC_FILE);
  if (raw !== undefined) return checked(raw.value, raw.file);
  return readOlderRunFiles(runDirectory);
}

/** Checks a parsed `run.json` (its domain set-up too), naming `file` in every error. */
function checked(value: unknown, file: string): RunSpec {
  const spec = parseOptions(RunSpecSchema, value, file) as RunSpec;
  parseOptions(DomainSetupOptionsSchema, spec.setup, `domain set-up (${file})`);
  return spec;
}

/**
 * The settings of a run folder written before `run.json`: train's `setup.json` (the set-up),
 * `policy.json` and `models.json` (each absent in yet older folders: linear, every default);
 * serve's one `setup.json` (its loop configuration, `setup`, `server` and `sharedBuffer`).
 */
async function readOlderRunFiles(runDirectory: string): Promise<RunSpec | undefined> {
  const setup = await readJson(runDirectory, 'setup.json');
  if (setup === undefined) return undefined;
  const value = setup.value as Record<string, unknown>;
  if (existsSync(join(runDirectory, 'serve-config.json'))) {
    return checked(
      {
        command: 'serve',
        setup: value.setup ?? {},
        ...(value.server === undefined ? {} : { server: value.server }),
        ...(value.sharedBuffer === undefined ? {} : { sharedBuffer: value.sharedBuffer }),
      },
      setup.file,
    );
  }
  const policy = await readJson(runDirectory, 'policy.json');
  const models = await readJson(runDirectory, 'models.json');
  return checked(
    {
      command: 'train',
      setup: value,
      policy: policy?.value ?? { kind: 'linear' },
      models: models?.value ?? {},
    },
    `${runDirectory}/{setup,policy,models}.json`,
  );
}

/** A JSON file of the run folder, parsed; undefined when absent. */
async function readJson(
  runDirectory: string,
  name: string,
): Promise<{ file: string; value: unknown } | undefined> {
  const file = join(runDirectory, name);
  if (!existsSync(file)) return undefined;
  try {
    return { file, value: JSON.parse(await readFile(file, 'utf8')) };
  } catch (error) {
    throw new ConfigError(`${file} is not JSON: ${(error as Error).message}`, {
      field: '--run-dir',
      cause: error,
    });
  }
}
