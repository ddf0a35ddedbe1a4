/**
 * The conformance suite: the contracts every `Environment` and `DomainAdapter` must meet,
 * as plain checks (usable from any test runner) and as vitest suites.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { DomainAdapter } from '../adapter.js';
import {
  ActionParseError,
  ConfigError,
  DatasetFormatError,
  DatasetNotFoundError,
  EnvironmentStateError,
} from '../errors.js';
import { canFork, type Environment, forkEnvironment } from '../mdp/environment.js';
import {
  ObservationSchema,
  StepResultSchema,
  type Task,
  TaskSchema,
  TrajectorySchema,
} from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';

/** One named contract check. It resolves when the contract holds and rejects with the reason otherwise. */
export interface ConformanceCheck {
  name: string;
  run(): Promise<void>;
}

/** Thrown by a failing conformance check. */
export class ConformanceFailure extends Error {
  override name = 'ConformanceFailure';
}

function ensure(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message);
}

async function expectRejection(
  promise: Promise<unknown>,
  accept: (error: unknown) => boolean,
  message: string,
): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    ensure(accept(error), `${message}; got ${String(error)}`);
    return error;
  }
  throw new ConformanceFailure(`${message}; the call succeeded`);
}

function expectValid(
  schema: typeof ObservationSchema | typeof StepResultSchema,
  value: unknown,
  what: string,
) {
  const result = schema.safeParse(value);
  ensure(
    result.success,
    `${what} does not match the schema: ${result.error?.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`,
  );
}

/** What the environment conformance checks need. */
export interface EnvironmentConformanceOptions {
  /** Creates a fresh environment; each check closes the one it made. */
  createEnvironment: () => Promise<Environment>;
  /** Tasks to reset into (at least one). */
  tasks: Task[];
  /**
   * Actions that end an episode of `tasks[0]` (reach `done`). Without it, the checks play
   * the observation's admissible actions at random until done or `maxSteps`.
   */
  solution?: string[];
  /** An action outside the domain's grammar. */
  invalidAction?: string;
  /** Bound on steps when playing without a solution. Default 100. */
  maxSteps?: number;
  /** Seed for random play. Default 0. */
  seed?: number;
}

async function withEnvironment(
  options: EnvironmentConformanceOptions,
  body: (environment: Environment) => Promise<void>,
): Promise<void> {
  const environment = await options.createEnvironment();
  try {
    await body(environment);
  } finally {
    await environment.close();
  }
}

async function playUntilDone(
  environment: Environment,
  options: EnvironmentConformanceOptions,
): Promise<void> {
  const task = options.tasks[0]!;
  let observation = await environment.reset(task);
  if (options.solution) {
    for (const [index, action] of options.solution.entries()) {
      const result = await environment.step(action);
      expectValid(StepResultSchema, result, `step(${JSON.stringify(action)}) result`);
      if (result.done) {
        ensure(
          index === options.solution.length - 1,
          `episode ended after action ${index + 1} of ${options.solution.length} of the solution`,
        );
        return;
      }
    }
    throw new ConformanceFailure(
      `the solution's ${options.solution.length} actions did not end the episode of task ${task.id}`,
    );
  }
  const random = new SeededRandom(options.seed ?? 0);
  const maxSteps = options.maxSteps ?? 100;
  for (let step = 0; step < maxSteps; step += 1) {
    ensure(
      observation.actions && observation.actions.length > 0,
      'without `solution`, observations must list admissible `actions` to play',
    );
    const result = await environment.step(random.choice(observation.actions));
    expectValid(StepResultSchema, result, 'step() result');
    if (result.done) return;
    observation = result.observation;
  }
  throw new ConformanceFailure(`episode of task ${task.id} did not end within ${maxSteps} steps`);
}

/** The `Environment` contract, as checks. */
export function environmentConformanceChecks(
  options: EnvironmentConformanceOptions,
): ConformanceCheck[] {
  if (options.tasks.length === 0)
    throw new Error('environmentConformanceChecks needs at least one task.');
  const invalidAction = options.invalidAction ?? 'xyzzy plugh 42';
  return [
    {
      name: 'reset() returns a valid observation for every task',
      run: () =>
        withEnvironment(options, async (environment) => {
          for (const task of options.tasks) {
            expectValid(ObservationSchema, await environment.reset(task), `reset(${task.id})`);
          }
        }),
    },
    {
      name: 'step() before reset() throws EnvironmentStateError',
      run: () =>
        withEnvironment(options, async (environment) => {
          await expectRejection(
            environment.step(invalidAction),
            EnvironmentStateError.isInstance,
            'step() before reset() must throw EnvironmentStateError',
          );
        }),
    },
    {
      name: 'an episode ends with done, step() after done throws, reset() starts again',
      run: () =>
        withEnvironment(options, async (environment) => {
          await playUntilDone(environment, options);
          await expectRejection(
            environment.step(invalidAction),
            EnvironmentStateError.isInstance,
            'step() after done must throw EnvironmentStateError',
          );
          expectValid(
            ObservationSchema,
            await environment.reset(options.tasks[0]!),
            'reset() after done',
          );
          const result = await environment.step(invalidAction);
          expectValid(StepResultSchema, result, 'step() after a new reset()');
        }),
    },
    {
      name: 'an action outside the grammar is answered, not thrown, and flagged invalid',
      run: () =>
        withEnvironment(options, async (environment) => {
          await environment.reset(options.tasks[0]!);
          const result = await environment.step(invalidAction);
          expectValid(StepResultSchema, result, `step(${JSON.stringify(invalidAction)})`);
          ensure(
            result.info.invalidAction === true,
            `step(${JSON.stringify(invalidAction)}) must set info.invalidAction = true`,
          );
        }),
    },
    {
      name: 'fork() (where the environment can) plays on from the current state and leaves the original untouched; where it cannot, forkEnvironment says so',
      run: () =>
        withEnvironment(options, async (environment) => {
          const task = options.tasks[0]!;
          if (!canFork(environment)) {
            await environment.reset(task);
            let error: unknown;
            try {
              await forkEnvironment(environment);
            } catch (thrown) {
              error = thrown;
            }
            ensure(
              ConfigError.isInstance(error) && /cannot fork/.test((error as Error).message),
              'forkEnvironment() of an environment without fork() must throw a ConfigError that says it cannot fork',
            );
            return;
          }
          const observation = await environment.reset(task);
          const first = options.solution?.[0] ?? observation.actions?.[0];
          ensure(
            first !== undefined,
            'without `solution`, observations must list admissible `actions`',
          );
          const started = await environment.step(first);
          ensure(
            !started.done,
            'the first action of the solution ended the episode: nothing to fork',
          );
          const fork = await environment.fork();
          try {
            // The fork finishes the episode...
            const random = new SeededRandom(options.seed ?? 0);
            let forkObservation = started.observation;
            const rest = options.solution?.slice(1);
            for (let step = 0; ; step += 1) {
              ensure(
                step < (rest?.length ?? options.maxSteps ?? 100),
                'the fork did not end the episode',
              );
              const action =
                rest?.[step] ?? random.choice(forkObservation.actions ?? [invalidAction]);
              const result = await fork.step(action);
              expectValid(StepResultSchema, result, `fork step(${JSON.stringify(action)})`);
              forkObservation = result.observation;
              if (result.done) break;
            }
            await expectRejection(
              fork.step(invalidAction),
              EnvironmentStateError.isInstance,
              'step() of a fork after its episode ended must throw EnvironmentStateError',
            );
            // ...while the original is still where the fork left it, mid-episode.
            const result = await environment.step(invalidAction);
            expectValid(StepResultSchema, result, 'step() of the original after its fork ended');
          } finally {
            await fork.close();
          }
          // Closing the fork leaves the original open.
          expectValid(
            ObservationSchema,
            await environment.reset(task),
            'reset() after the fork closed',
          );
        }),
    },
    {
      name: 'close() is idempotent and the environment refuses work after it',
      run: async () => {
        const environment = await options.createEnvironment();
        await environment.reset(options.tasks[0]!);
        await environment.close();
        await environment.close();
        await expectRejection(
          environment.reset(options.tasks[0]!),
          EnvironmentStateError.isInstance,
          'reset() after close() must throw EnvironmentStateError',
        );
      },
    },
  ];
}

/** A malformed dataset the adapter's loaders must reject with `file:line`. */
export interface MalformedDatasetCase {
  /** What is wrong, for the check's name. */
  description: string;
  /** Which loader reads it. */
  loader: 'trajectories' | 'tasks';
  /** Files to write into an empty dataset directory, by relative path. */
  files: Record<string, string>;
  /** The file (relative path) and 1-based line the error must name. */
  expected: { file: string; line?: number; field?: string };
}

/** What the adapter conformance checks need. */
export interface AdapterConformanceOptions {
  adapter: DomainAdapter;
  /** Actions the grammar accepts. */
  validActions: string[];
  /** Actions the grammar rejects. */
  invalidActions: string[];
  /** Raw outputs of the real environment, for the state mapper. */
  rawObservations: unknown[];
  /** Tasks for `mutateTask`. */
  tasks: Task[];
  /** Malformed datasets (bad JSON, missing field, wrong type...). */
  malformedDatasets: MalformedDatasetCase[];
  /** A real dataset directory; its first records must load and validate. */
  datasetDirectory?: string;
  /** How many records to read from `datasetDirectory` per loader. Default 20. */
  datasetSample?: number;
}

async function collect<T>(
  iterable: AsyncIterable<T>,
  limit = Number.POSITIVE_INFINITY,
): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) {
    items.push(item);
    if (items.length >= limit) break;
  }
  return items;
}

/** The `DomainAdapter` contract, as checks. */
export function adapterConformanceChecks(options: AdapterConformanceOptions): ConformanceCheck[] {
  const { adapter } = options;
  const checks: ConformanceCheck[] = [
    {
      name: 'name and prompts are set',
      run: async () => {
        ensure(
          /^[a-z][a-z0-9-]*$/.test(adapter.name),
          `adapter name ${JSON.stringify(adapter.name)} must be lower-case kebab`,
        );
        for (const [key, value] of Object.entries(adapter.prompts)) {
          ensure(
            typeof value === 'string' && value.trim().length > 0,
            `prompts.${key} must be non-empty text`,
          );
        }
      },
    },
    {
      name: 'parseAction() accepts valid actions and is stable on its canonical text',
      run: async () => {
        ensure(options.validActions.length > 0, 'give at least one valid action');
        for (const action of options.validActions) {
          const parsed = adapter.parseAction(action);
          ensure(
            parsed.type.length > 0,
            `parseAction(${JSON.stringify(action)}) has an empty type`,
          );
          const again = adapter.parseAction(parsed.text);
          ensure(
            again.text === parsed.text && again.type === parsed.type,
            `parseAction is not stable on ${JSON.stringify(parsed.text)}`,
          );
        }
      },
    },
    {
      name: 'parseAction() rejects invalid actions with ActionParseError naming the action',
      run: async () => {
        ensure(options.invalidActions.length > 0, 'give at least one invalid action');
        for (const action of options.invalidActions) {
          let thrown: unknown;
          try {
            adapter.parseAction(action);
          } catch (error) {
            thrown = error;
          }
          ensure(
            ActionParseError.isInstance(thrown),
            `parseAction(${JSON.stringify(action)}) must throw ActionParseError; got ${String(thrown)}`,
          );
          ensure(thrown.action === action, 'ActionParseError.action must be the action as given');
          ensure(
            thrown.message.length > 20,
            `ActionParseError message is not explanatory: ${thrown.message}`,
          );
        }
      },
    },
    {
      name: 'toObservation() maps raw outputs to valid observations',
      run: async () => {
        ensure(options.rawObservations.length > 0, 'give at least one raw observation');
        for (const [index, raw] of options.rawObservations.entries()) {
          expectValid(
            ObservationSchema,
            adapter.toObservation(raw),
            `toObservation(raw #${index})`,
          );
        }
      },
    },
    {
      name: 'candidateActions() proposes unique actions the grammar accepts',
      run: async () => {
        for (const [index, raw] of options.rawObservations.entries()) {
          const observation = adapter.toObservation(raw);
          const candidates = adapter.candidateActions(observation, []);
          ensure(Array.isArray(candidates), 'candidateActions must return an array');
          ensure(
            new Set(candidates).size === candidates.length,
            `candidateActions(raw #${index}) has duplicates`,
          );
          for (const candidate of candidates) adapter.parseAction(candidate);
        }
      },
    },
    {
      name: 'mutateTask() returns undefined or a new generated task derived from its parent',
      run: async () => {
        const random = new SeededRandom(7);
        for (const task of options.tasks) {
          const mutated = adapter.mutateTask(task, random);
          if (mutated === undefined) continue;
          const parsed = TaskSchema.safeParse(mutated);
          ensure(parsed.success, `mutateTask(${task.id}) is not a valid Task`);
          ensure(mutated.origin === 'generated', 'a mutated task must have origin "generated"');
          ensure(mutated.parentId === task.id, 'a mutated task must name its parent in parentId');
          ensure(mutated.id !== task.id, 'a mutated task needs a new id');
          ensure(mutated.domain === adapter.name, 'a mutated task must keep the adapter domain');
        }
      },
    },
    {
      name: 'loaders report a missing dataset directory with DatasetNotFoundError',
      run: async () => {
        const missing = join(tmpdir(), `dreamgym-missing-${process.pid}-${Date.now()}`);
        const loads: Record<string, () => Promise<unknown>> = {
          trajectories: () => collect(adapter.datasets.trajectories.load(missing)),
          tasks: () => collect(adapter.datasets.tasks.load(missing)),
        };
        for (const [loader, load] of Object.entries(loads)) {
          await expectRejection(
            load(),
            DatasetNotFoundError.isInstance,
            `datasets.${loader}.load(<missing dir>) must throw DatasetNotFoundError`,
          );
        }
      },
    },
  ];

  for (const malformed of options.malformedDatasets) {
    checks.push({
      name: `datasets.${malformed.loader} rejects ${malformed.description} with file:line`,
      run: async () => {
        const directory = await mkdtemp(join(tmpdir(), 'dreamgym-conformance-'));
        try {
          for (const [relative, content] of Object.entries(malformed.files)) {
            await mkdir(dirname(join(directory, relative)), { recursive: true });
            await writeFile(join(directory, relative), content);
          }
          const error = await expectRejection(
            malformed.loader === 'tasks'
              ? collect(adapter.datasets.tasks.load(directory))
              : collect(adapter.datasets.trajectories.load(directory)),
            DatasetFormatError.isInstance,
            `loading ${malformed.description} must throw DatasetFormatError`,
          );
          const formatError = error as DatasetFormatError;
          const expectedFile = join(directory, malformed.expected.file);
          ensure(
            formatError.file === expectedFile,
            `error names file ${formatError.file}, expected ${expectedFile}`,
          );
          ensure(formatError.message.includes(expectedFile), 'the message must name the file');
          if (malformed.expected.line !== undefined) {
            ensure(
              formatError.line === malformed.expected.line,
              `error names line ${formatError.line}, expected ${malformed.expected.line}`,
            );
            ensure(
              formatError.message.includes(`:${malformed.expected.line}`),
              'the message must name the line',
            );
          }
          if (malformed.expected.field !== undefined) {
            ensure(
              formatError.field === malformed.expected.field,
              `error names field ${formatError.field}, expected ${malformed.expected.field}`,
            );
          }
        } finally {
          await rm(directory, { recursive: true, force: true });
        }
      },
    });
  }

  const { datasetDirectory } = options;
  if (datasetDirectory !== undefined) {
    checks.push({
      name: 'loaders read valid records from the real dataset',
      run: async () => {
        const sample = options.datasetSample ?? 20;
        const trajectories = await collect(
          adapter.datasets.trajectories.load(datasetDirectory),
          sample,
        );
        ensure(trajectories.length > 0, `no trajectories loaded from ${datasetDirectory}`);
        for (const trajectory of trajectories) {
          ensure(
            TrajectorySchema.safeParse(trajectory).success,
            'a loaded trajectory is not a valid Trajectory',
          );
          ensure(
            trajectory.task.domain === adapter.name,
            'a loaded trajectory belongs to another domain',
          );
        }
        const tasks = await collect(adapter.datasets.tasks.load(datasetDirectory), sample);
        ensure(tasks.length > 0, `no tasks loaded from ${datasetDirectory}`);
        for (const task of tasks)
          ensure(TaskSchema.safeParse(task).success, 'a loaded task is not a valid Task');
      },
    });
  }
  return checks;
}
