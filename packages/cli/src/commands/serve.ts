/**
 * `dreamgym serve`: a domain's DreamGym environment over Meta's OpenEnv protocol (WebSocket
 * `/ws`, HTTP `/reset` `/step` ...), for Python trainers (TRL, SkyRL, ART ...). The server
 * keeps the curriculum and the replay buffer in a run folder with checkpoints; `--resume`
 * continues it. Synthetic by default (`--experience embedded|llm|hybrid|openai`, the LLM in
 * process with `--model local` or behind a server with `--base-url`), built as every command
 * builds it (`createExperienceModel`: outcomes by the learned outcome judge); `--real` serves
 * the adapter's real environment through the same protocol, for sim-to-real with one client.
 *
 * `@dreamgym/server` is loaded when the command runs, like domain adapters: install it
 * next to the CLI (`npm install @dreamgym/server`).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  ConfigError,
  type DomainAdapter,
  type Environment,
  type ExperienceModel,
  type ReplayBuffer,
  type Task,
} from '@dreamgym/core';
import { OpenAICompatibleChatModel } from '@dreamgym/core/models';
import {
  createExperienceModel,
  type DomainSetup,
  type DomainSetupOptions,
  readRunSpec,
  selectModels,
  setUpDomain,
  writeRunSpec,
} from '@dreamgym/run';
import {
  type Command,
  type CommandIo,
  decimal,
  type FlagSpecs,
  type FlagValues,
  fail,
  integer,
  parseFlags,
} from '../command-arguments.js';
import { parseModelSelection } from '../model-flags.js';
import {
  domainSetupFromFlags,
  loopConfigFromFlags,
  loopFlagSpecs,
  readJsonFile,
  runFolderFlag,
  setupFlagSpecs,
} from '../run-flags.js';

const SERVE_USAGE = `Usage: dreamgym serve --domain NAME [options]

Serves the domain's DreamGym environment over OpenEnv (WebSocket /ws; HTTP /reset, /step,
/state, /health, /schema, /metadata; GET /dreamgym/status) until SIGINT or SIGTERM, then
finishes the steps in flight and checkpoints the run.

Domain and data:
  --domain NAME              domain adapter, loaded from @dreamgym/NAME (e.g. alfworld)
  --adapter-package NAME     adapter package to load instead of @dreamgym/NAME
  --data DIR                 the domain's dataset folder (default: $DREAMGYM_DATA_DIR/NAME)
  --offline FILE             extra offline trajectories (JSONL) for the replay buffer, repeatable
  --offline-limit N          use only the first N of the dataset's offline trajectories
  --skip-invalid             load the valid tasks and trajectories, logging each invalid one
                             (file, line, id) instead of stopping at the first
  --buffer-cap N             most transitions the replay buffer keeps: the oldest written-back
                             ones are evicted first (offline seeds never); default unbounded
  --train-tasks N            seed tasks: the first N training tasks (default all)
  --index auto|flat|hnsw     replay-buffer index (default auto: flat below 20,000 transitions)
  --target-recall X          recall@8 an HNSW index's search depth is tuned to (default 0.95)

Environment:
  --experience embedded|llm|hybrid|openai
                             experience model: embedded (default; retrieval, no LLM), the
                             reasoning LLM (ReasoningExperienceModel), the LLM grounded by
                             retrieval (hybrid), or openai (llm behind --base-url, standard prompt);
                             each one's outcomes (done, success) come from the outcome judge
                             learned from the offline data, as in train, eval and fidelity
  --model local|PATH.gguf|NAME   the LLM of llm/hybrid: local (SmolLM2-135M-Instruct in process,
                             the default), any GGUF file, or with --base-url the served model
  --base-url URL             an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1)
  --api-key-env NAME         variable holding its API key (default DREAMGYM_API_KEY, then OPENAI_API_KEY)
  --experience-format compact|standard  --experience-temperature X
  --model-concurrency N  --model-context-size N  --model-threads N   local model settings
  --real                     serve the real environment (the adapter's connectReal) instead

Run:
  --config FILE              JSON with any serve setting (seed, tasksPerIteration, rolloutsPerTask,
                             maxSteps, curriculum, retrieval, history, replayWriteBack,
                             checkpointEvery) and optional "setup" and "server" objects
  --run-dir DIR              run folder (default runs/serve-NAME-<date>): experience, episodes, checkpoints
  --resume                   continue the run in --run-dir from its last checkpoint
  --seed N  --tasks-per-iteration N  --rollouts-per-task N  --max-steps N  --lambda X  --k N
  --checkpoint-every N       checkpoint every N iterations (and at shutdown)
  --no-curriculum  --no-replay  --no-history  --no-write-back
  --write-back-batch N       write finished episodes' transitions back to the buffer once N
                             wait (default 512; 1: every episode at once)
  --write-back-ms MS         ... or at most MS milliseconds after the first waited (default 250)
  --no-retrieval-cache       search the buffer for every step, even a query already answered
                             since the buffer last changed

Server:
  --host HOST                interface to bind (default 127.0.0.1: this machine only)
  --port N                   port (default 8000; 0 picks a free one)
  --max-sessions N           concurrent WebSocket sessions (default 64)
  --workers N                play the sessions' environments in N worker processes, each with
                             a read replica of the replay buffer (embedded experience model;
                             default 1: in the serving process). The serving process keeps the
                             sockets, the curriculum and the buffer that write-backs go to, and
                             publishes them to the replicas; a crashed worker is restarted and
                             its sessions closed with 1012 (reconnect)
  --max-http-episodes N      live HTTP episodes, apart from them; the least recently used
                             idle one makes room for a new one (default 64)
  --http-resets-per-second N POST /reset per client address and second (default 20)
  --session-timeout SECONDS  close sessions idle this long (default 300; 0: never)
  --max-payload BYTES        largest accepted message (default 1048576)
  --shutdown-grace SECONDS   wait this long for steps in flight at shutdown (default 10)
  --log-level LEVEL          debug, info (default), warn or error; JSON lines on stderr

Replicas on several machines (behind any load balancer), one replay buffer:
  --shared-buffer URI        share write-backs with the other replicas of this run through a
                             LanceDB table at URI (a folder, or s3://..., gs://..., az://...):
                             each replica appends the batches it writes back and adds the
                             others' to its own buffer, catching up at start; each keeps its
                             own curriculum. Needs npm install @lancedb/lancedb apache-arrow@18.1.0
  --shared-buffer-table NAME the table (default dreamgym_write_backs)
  --shared-poll-ms MS        look for the others' write-backs every MS milliseconds (default 500)
  --replica-id NAME          this replica's name in the table (default the host name)`;

const SERVE_OPTIONS: FlagSpecs = {
  domain: { type: 'string' },
  data: { type: 'string' },
  ...setupFlagSpecs([
    'adapter-package',
    'offline',
    'offline-limit',
    'skip-invalid',
    'buffer-cap',
    'train-tasks',
    'index',
    'target-recall',
  ]),
  experience: { type: 'string' },
  'base-url': { type: 'string' },
  model: { type: 'string' },
  'api-key-env': { type: 'string' },
  'experience-format': { type: 'string' },
  'experience-temperature': { type: 'string' },
  'model-concurrency': { type: 'string' },
  'model-context-size': { type: 'string' },
  'model-threads': { type: 'string' },
  real: { type: 'boolean' },
  config: { type: 'string' },
  'run-dir': { type: 'string' },
  resume: { type: 'boolean' },
  ...loopFlagSpecs([
    'seed',
    'tasks-per-iteration',
    'rollouts-per-task',
    'max-steps',
    'lambda',
    'k',
    'checkpoint-every',
    'no-curriculum',
    'no-replay',
    'no-history',
    'no-write-back',
  ]),
  'write-back-batch': { type: 'string' },
  'write-back-ms': { type: 'string' },
  'no-retrieval-cache': { type: 'boolean' },
  host: { type: 'string' },
  port: { type: 'string' },
  'max-sessions': { type: 'string' },
  workers: { type: 'string' },
  'max-http-episodes': { type: 'string' },
  'http-resets-per-second': { type: 'string' },
  'session-timeout': { type: 'string' },
  'max-payload': { type: 'string' },
  'shutdown-grace': { type: 'string' },
  'log-level': { type: 'string' },
  'shared-buffer': { type: 'string' },
  'shared-buffer-table': { type: 'string' },
  'shared-poll-ms': { type: 'string' },
  'replica-id': { type: 'string' },
};

/** The part of `@dreamgym/server` this command uses (the package is loaded at run time). */
interface ServerPackage {
  serveDreamGym(options: {
    adapter: DomainAdapter;
    replayBuffer: ReplayBuffer;
    seedTasks: readonly Task[];
    mode: 'synthetic' | 'real';
    experienceModel?: ExperienceModel;
    realEnvironment?: () => Promise<Environment>;
    config: Record<string, unknown>;
    runDirectory: string;
    resume: boolean;
    server: Record<string, unknown>;
    version?: string;
    logger: unknown;
    workers?: { count: number; replicaModule: string; replicaOptions: unknown };
    sharedBuffer?: Record<string, unknown>;
  }): Promise<{ url: string; close(): Promise<void> }>;
  createJsonLogger(options: { write: (line: string) => void; level: string }): unknown;
}

async function loadServerPackage(): Promise<ServerPackage> {
  // A variable specifier: bundlers leave it alone and the CLI does not depend on the package.
  const name = '@dreamgym/server';
  try {
    return (await import(name)) as ServerPackage;
  } catch (error) {
    throw new ConfigError(
      `dreamgym serve needs the ${name} package: npm install ${name} (next to @dreamgym/cli).`,
      { field: 'serve', cause: error },
    );
  }
}

type Settings = {
  config: Record<string, unknown>;
  setup: DomainSetupOptions;
  server: Record<string, unknown>;
  /** `--shared-buffer` and its companions (or a file's `sharedBuffer`), when given. */
  sharedBuffer: Record<string, unknown> | undefined;
};

function serveSettings(values: FlagValues, file: Record<string, unknown>, io: CommandIo): Settings {
  const {
    setup: fileSetup = {},
    server: fileServer = {},
    sharedBuffer: fileShared,
    ...fileConfig
  } = file as {
    setup?: Record<string, unknown>;
    server?: Record<string, unknown>;
    sharedBuffer?: Record<string, unknown>;
  };
  const config = loopConfigFromFlags(values, fileConfig);
  const batchTransitions = integer(values['write-back-batch'], '--write-back-batch');
  const batchMilliseconds = integer(values['write-back-ms'], '--write-back-ms');
  if (batchTransitions !== undefined && batchTransitions < 1)
    fail(`--write-back-batch must be >= 1, got ${batchTransitions}.`, '--write-back-batch');
  if (batchMilliseconds !== undefined && batchMilliseconds < 0)
    fail(`--write-back-ms must be >= 0, got ${batchMilliseconds}.`, '--write-back-ms');
  if (batchTransitions !== undefined || batchMilliseconds !== undefined) {
    config.writeBackBatch = {
      ...(config.writeBackBatch as Record<string, unknown> | undefined),
      ...(batchTransitions === undefined ? {} : { transitions: batchTransitions }),
      ...(batchMilliseconds === undefined ? {} : { milliseconds: batchMilliseconds }),
    };
  }
  if (values['no-retrieval-cache']) config.retrievalCache = false;
  const server = structuredClone(fileServer) as Record<string, unknown>;
  const seconds = (flag: string) => {
    const value = decimal(values[flag], `--${flag}`);
    if (value !== undefined && value < 0)
      fail(`--${flag} must be >= 0, got ${value}.`, `--${flag}`);
    return value === undefined ? undefined : Math.round(value * 1000);
  };
  for (const [field, value] of Object.entries({
    host: values.host,
    port: integer(values.port, '--port'),
    maxSessions: integer(values['max-sessions'], '--max-sessions'),
    maxHttpEpisodes: integer(values['max-http-episodes'], '--max-http-episodes'),
    httpResetsPerSecond: decimal(values['http-resets-per-second'], '--http-resets-per-second'),
    sessionTimeoutMs: seconds('session-timeout'),
    shutdownGraceMs: seconds('shutdown-grace'),
    maxPayloadBytes: integer(values['max-payload'], '--max-payload'),
  })) {
    if (value !== undefined) server[field] = value;
  }
  return {
    config,
    // Serving evaluates nothing: the set-up loads one training task in place of evaluation
    // tasks, so no adapter needs an evaluation split for it.
    setup: domainSetupFromFlags(
      values,
      { evalSplit: 'train', evalTasks: 1, ...fileSetup },
      io,
      SERVE_USAGE,
    ),
    server,
    sharedBuffer: sharedBufferSettings(values, fileShared, io),
  };
}

/** `--shared-buffer URI` and its companions over a settings file's `sharedBuffer`. */
function sharedBufferSettings(
  values: FlagValues,
  file: Record<string, unknown> | undefined,
  io: CommandIo,
): Record<string, unknown> | undefined {
  const pollMilliseconds = integer(values['shared-poll-ms'], '--shared-poll-ms');
  if (pollMilliseconds !== undefined && pollMilliseconds < 1)
    fail(`--shared-poll-ms must be >= 1, got ${pollMilliseconds}.`, '--shared-poll-ms');
  for (const flag of ['shared-buffer-table', 'replica-id']) {
    const name = values[flag] as string | undefined;
    // Names go into the table's rows and filters: the alphabet @dreamgym/server accepts.
    if (name !== undefined && !/^[A-Za-z0-9_.-]{1,128}$/.test(name))
      fail(
        `--${flag} takes letters, digits, '_', '.' and '-' (at most 128), got "${name}".`,
        `--${flag}`,
      );
  }
  const given = Object.fromEntries(
    Object.entries({
      uri: values['shared-buffer'],
      table: values['shared-buffer-table'],
      pollMilliseconds,
      replicaId: values['replica-id'],
    }).filter(([, value]) => value !== undefined),
  );
  const settings = { ...file, ...given };
  if (Object.keys(settings).length === 0) return undefined;
  if (typeof settings.uri !== 'string') {
    const flag = ['shared-buffer-table', 'shared-poll-ms', 'replica-id'].find(
      (name) => values[name] !== undefined,
    );
    if (flag) fail(`--${flag} is for a shared buffer: add --shared-buffer URI.`, `--${flag}`);
    fail(
      'The settings file\'s sharedBuffer has no uri: add "uri" or --shared-buffer URI.',
      '--config',
    );
  }
  // A folder is the working directory's; a URI (s3://, gs://, memory://...) is LanceDB's.
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(settings.uri)) settings.uri = resolve(io.cwd, settings.uri);
  return settings;
}

/** An experience model built for the server, and what frees it at shutdown. */
interface ChosenExperienceModel {
  model: ExperienceModel;
  dispose(): Promise<void>;
}

/**
 * The experience model the flags ask for, checked before any data is loaded: a builder that
 * gets the loaded domain. Every kind is built by `createExperienceModel` on the domain's
 * grounding, so its outcomes are judged as `train`'s, `eval`'s and `fidelity`'s are.
 */
export function serveExperienceModel(
  values: FlagValues,
  io: CommandIo,
): (domain: DomainSetup) => Promise<ChosenExperienceModel> {
  const kind = (values.experience as string | undefined) ?? 'embedded';
  const modelFlags = [
    'base-url',
    'model',
    'api-key-env',
    'experience-format',
    'experience-temperature',
    'model-concurrency',
    'model-context-size',
    'model-threads',
  ];
  if (kind === 'embedded') {
    for (const flag of modelFlags) {
      if (values[flag] !== undefined) {
        fail(
          `--${flag} is for an LLM experience model (--experience llm, hybrid or openai); the embedded model takes none.`,
          `--${flag}`,
        );
      }
    }
    return async (domain) => ({ model: domain.experienceModel, dispose: async () => {} });
  }
  if (!['llm', 'hybrid', 'openai'].includes(kind)) {
    fail(`--experience must be embedded, llm, hybrid or openai, got "${kind}".`, '--experience');
  }
  const keyVariable = values['api-key-env'] as string | undefined;
  if (keyVariable !== undefined && values['base-url'] === undefined) {
    fail('--api-key-env is for a model server: add --base-url URL.', '--api-key-env');
  }
  let apiKey: string | undefined;
  if (keyVariable !== undefined) {
    apiKey = io.env[keyVariable];
    if (!apiKey) fail(`--api-key-env ${keyVariable}: that variable is not set.`, '--api-key-env');
  }
  if (kind === 'openai') {
    const baseURL = values['base-url'] as string | undefined;
    const model = values.model as string | undefined;
    if (!baseURL || !model) {
      fail(
        '--experience openai needs --base-url (an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1) and --model.',
        baseURL ? '--model' : '--base-url',
      );
    }
    // Validates the URL and model now (a ConfigError naming the field), not after loading data.
    const chat = new OpenAICompatibleChatModel({ baseURL, model, ...(apiKey ? { apiKey } : {}) });
    // The reasoning LLM with the standard prompt and the server's temperature.
    return async (domain) => ({
      model: createExperienceModel(domain.experienceGrounding, { kind: 'llm', chat }),
      dispose: async () => {},
    });
  }
  // The same flags and defaults as every other command (`--model local` by default).
  const selection = parseModelSelection(values);
  const env = apiKey ? { ...io.env, DREAMGYM_API_KEY: apiKey } : io.env;
  return async (domain) => {
    const selected = await selectModels(selection, {
      adapter: domain.adapter,
      grounding: domain.experienceGrounding,
      env,
      cwd: io.cwd,
      log: (message) => io.stderr.write(`${message}\n`),
    });
    for (const line of selected.describe().slice(0, 1))
      io.stderr.write(`dreamgym serve: ${line}\n`);
    return { model: selected.experienceModel, dispose: () => selected.dispose() };
  };
}

async function serve(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(args, SERVE_OPTIONS, SERVE_USAGE);
  if (values.help) {
    io.stdout.write(`${SERVE_USAGE}\n`);
    return 0;
  }
  const level = (values['log-level'] as string | undefined) ?? 'info';
  if (!['debug', 'info', 'warn', 'error'].includes(level)) {
    fail(`--log-level must be debug, info, warn or error, got "${level}".`, '--log-level');
  }
  if (values.real && values.experience !== undefined) {
    fail('--real serves the real environment; it takes no --experience.', '--real');
  }
  const workers = integer(values.workers, '--workers') ?? 1;
  if (workers < 1) fail(`--workers must be >= 1, got ${workers}.`, '--workers');
  if (workers > 1 && values.real) {
    fail('--workers serves the synthetic environment; --real runs in one process.', '--workers');
  }
  if (workers > 1 && (values.experience ?? 'embedded') !== 'embedded') {
    fail(
      '--workers runs the embedded experience model in each worker; an LLM experience model is served in one process (put the LLM behind --base-url to share it).',
      '--workers',
    );
  }
  const runDirectory = runFolderFlag(values, io, 'serve-');
  const saved = values.resume ? await readRunSpec(runDirectory) : undefined;
  let fileSettings: Record<string, unknown> = {};
  if (saved !== undefined) {
    // A resumed run keeps the settings it started with: the service's configuration and run.json.
    if (saved.command !== 'serve') {
      fail(`${runDirectory} holds a dreamgym ${saved.command} run, not a served one.`, '--run-dir');
    }
    const configFile = join(runDirectory, SERVE_CONFIG_FILE);
    fileSettings = {
      ...(existsSync(configFile) ? await readJsonFile(configFile, '--run-dir') : {}),
      setup: saved.setup,
      ...(saved.server ? { server: saved.server } : {}),
      ...(saved.sharedBuffer ? { sharedBuffer: saved.sharedBuffer } : {}),
    };
  } else if (values.config) {
    fileSettings = await readJsonFile(resolve(io.cwd, values.config as string), '--config');
  }
  const { config, setup, server, sharedBuffer } = serveSettings(values, fileSettings, io);
  const chooseModel = values.real ? undefined : serveExperienceModel(values, io);
  const serverPackage = await loadServerPackage();
  const logger = serverPackage.createJsonLogger({
    write: (line) => io.stderr.write(line),
    level,
  });
  const log = (message: string) => io.stderr.write(`${message}\n`);
  // With workers, sessions search the replicas: the serving process's buffer only takes the
  // write-backs, which a flat index takes without the graph inserts.
  const domain = await setUpDomain(workers > 1 ? { ...setup, index: 'flat' } : setup, log);
  const chosen = await chooseModel?.(domain);
  const model = chosen?.model;
  await mkdir(runDirectory, { recursive: true });
  const served = await serverPackage.serveDreamGym({
    adapter: domain.adapter,
    replayBuffer: domain.replayBuffer,
    seedTasks: domain.seedTasks,
    mode: values.real ? 'real' : 'synthetic',
    ...(model ? { experienceModel: model } : {}),
    ...(values.real ? { realEnvironment: domain.realEnvironment } : {}),
    config,
    runDirectory,
    resume: values.resume === true,
    server,
    logger,
    ...(sharedBuffer ? { sharedBuffer: { ...sharedBuffer, flag: '--shared-buffer' } } : {}),
    ...(workers > 1
      ? {
          workers: { count: workers, replicaModule: replicaModuleUrl(), replicaOptions: { setup } },
        }
      : {}),
  });
  await writeRunSpec(runDirectory, {
    command: 'serve',
    setup,
    server,
    ...(sharedBuffer ? { sharedBuffer } : {}),
  });
  io.stdout.write(
    `dreamgym serve: ${setup.domain} (${values.real ? 'real' : `synthetic, ${model!.id}`}) listening on ${served.url} (WebSocket ${served.url.replace(/^http/, 'ws')}/ws); run folder ${runDirectory}\n`,
  );
  const signal = await new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
  log(`dreamgym serve: ${signal}: finishing the steps in flight, then checkpointing...`);
  await served.close();
  await chosen?.dispose();
  await domain.replayBuffer.close();
  io.stdout.write(`dreamgym serve: stopped; resume with --resume --run-dir ${runDirectory}\n`);
  return 0;
}

/** The served run's configuration, as `@dreamgym/server`'s service writes it into the run folder. */
const SERVE_CONFIG_FILE = 'serve-config.json';

/** The replica module each worker process imports (the built file, or the source under tsx). */
function replicaModuleUrl(): string {
  const fromSources = import.meta.url.endsWith('.ts');
  return new URL(fromSources ? '../serve-replica.ts' : './serve-replica.js', import.meta.url).href;
}

/** `dreamgym serve`. */
export const serveCommand: Command = {
  name: ['serve'],
  summary: 'serve a domain over the OpenEnv protocol for Python trainers (TRL, SkyRL, ART ...)',
  run: serve,
};
