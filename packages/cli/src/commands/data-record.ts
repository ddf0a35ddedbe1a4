/**
 * `dreamgym data record`: one browser episode, played from a file of actions or typed at the
 * terminal, appended to a JSONL file as an offline `Trajectory` (the format the web
 * adapters' trajectory loaders read). `@dreamgym/browser` (and `@dreamgym/webarena-lite` for
 * `--task-id`) are loaded on demand.
 */
import { createReadStream } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Environment, StepResult, Task, Trajectory } from '@dreamgym/core';
import { type Command, type CommandIo, fail, integer, parseFlags } from '../command-arguments.js';
import { defaultDataDirectory } from '../run-flags.js';

const RECORD_USAGE = `Usage: dreamgym data record --out FILE (--url URL | --task-id N) [options]

Plays one browser episode and appends it to FILE as a Trajectory (one JSON line). Actions
come from --actions FILE (one per line, # comments), or are typed at the terminal after each
observation. The episode ends at stop [answer], at the step budget, or when the actions run
out (then it is saved marked unfinished).

  --url URL              start page of a plain browser episode
  --instruction TEXT     its instruction (default "Explore the page.")
  --domain NAME          its task domain (default webarena-lite)
  --storage-state FILE   a saved login (Playwright storage state) for --url
  --task-id N            a WebArena task from --data DIR (default $DREAMGYM_DATA_DIR/webarena-lite),
                         played on the sites given with --site and scored by its evaluators
  --site NAME=URL        a site's base URL, repeatable (shopping=http://127.0.0.1:7770 ...)
  --auth DIR             the folder of login storage states (WebArena's .auth)
  --actions FILE         actions, one per line ("-": standard input)
  --max-steps N          step budget (default 30)
  --viewport-only        observe only the viewport
  --headed               show the browser window (needs a display)`;

/** The parts of `@dreamgym/browser` this command uses. */
interface BrowserModule {
  BrowserEnvironment: { create(options: Record<string, unknown>): Promise<Environment> };
  TrajectoryRecorder: {
    open(
      environment: Environment,
      options: {
        output: string;
        meta?: Record<string, unknown>;
        onRecord?: (trajectory: Trajectory) => void;
      },
    ): Promise<Environment>;
  };
}

/** The parts of `@dreamgym/webarena-lite` this command uses. */
interface WebarenaModule {
  loadWebarenaTasks(dir: string, options?: { sites?: Record<string, string> }): AsyncIterable<Task>;
  connectWebarenaLiteReal(options: Record<string, unknown>): Promise<Environment>;
}

async function importPackage<T>(name: string, why: string): Promise<T> {
  const specifier: string = name;
  try {
    return (await import(specifier)) as T;
  } catch (error) {
    fail(
      `${why} needs the package ${name}, which could not be loaded (${(error as Error).message.split('\n')[0]}). Install it next to the CLI: npm install ${name}.`,
    );
  }
}

/** `shopping=http://...` flags as a sites object. */
function parseSites(values: string[]): Record<string, string> {
  const sites: Record<string, string> = {};
  for (const value of values) {
    const match = /^([a-z_]+)=(\S+)$/.exec(value);
    if (!match)
      fail(`--site ${value}: expected NAME=URL, such as shopping=http://127.0.0.1:7770.`, '--site');
    sites[match[1]!] = match[2]!;
  }
  return sites;
}

/** The actions to play: lines of a file, of standard input, or typed after each prompt. */
async function* actionSource(file: string | undefined, io: CommandIo): AsyncGenerator<string> {
  const interactive = file === undefined;
  const input = file === undefined || file === '-' ? process.stdin : createReadStream(file);
  if (file !== undefined && file !== '-') {
    await new Promise<void>((done, failed) => {
      input.once('open', () => done());
      input.once('error', () => failed(new Error('unreadable')));
    }).catch(() => fail(`--actions ${file} does not exist or cannot be read.`, '--actions'));
  }
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    if (interactive) io.stdout.write('action> ');
    for await (const raw of lines) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) {
        if (interactive) io.stdout.write('action> ');
        continue;
      }
      yield line;
      if (interactive) io.stdout.write('action> ');
    }
  } finally {
    lines.close();
    // A terminal left reading would keep the process alive after the episode.
    if (input === process.stdin) process.stdin.pause();
  }
}

async function record(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      out: { type: 'string' },
      url: { type: 'string' },
      instruction: { type: 'string' },
      domain: { type: 'string' },
      'storage-state': { type: 'string' },
      'task-id': { type: 'string' },
      data: { type: 'string' },
      site: { type: 'string', multiple: true },
      auth: { type: 'string' },
      actions: { type: 'string' },
      'max-steps': { type: 'string' },
      'viewport-only': { type: 'boolean' },
      headed: { type: 'boolean' },
    },
    RECORD_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${RECORD_USAGE}\n`);
    return 0;
  }
  const string = (flag: string) => values[flag] as string | undefined;
  const out = string('out');
  if (!out) fail(`--out FILE is required.\n\n${RECORD_USAGE}`, '--out');
  const url = string('url');
  const taskId = integer(string('task-id'), '--task-id');
  if ((url === undefined) === (taskId === undefined)) {
    fail(
      `Give either --url URL or --task-id N.\n\n${RECORD_USAGE}`,
      url === undefined ? '--url' : '--task-id',
    );
  }
  const maxSteps = integer(string('max-steps'), '--max-steps') ?? 30;
  if (maxSteps < 1) fail('--max-steps must be at least 1.', '--max-steps');
  const sites = parseSites((values.site as string[] | undefined) ?? []);
  const browserOptions = {
    maxSteps,
    viewportOnly: values['viewport-only'] === true,
    chromium: { headless: values.headed !== true },
  };
  const browser = await importPackage<BrowserModule>(
    '@dreamgym/browser',
    'Recording browser episodes',
  );

  let task: Task;
  let environment: Environment;
  if (taskId !== undefined) {
    const webarena = await importPackage<WebarenaModule>('@dreamgym/webarena-lite', '--task-id');
    const data = string('data') ?? defaultDataDirectory('webarena-lite', io);
    if (!data)
      fail(
        '--task-id needs the WebArena-Lite configs: --data DIR, or set DREAMGYM_DATA_DIR.',
        '--data',
      );
    let found: Task | undefined;
    for await (const candidate of webarena.loadWebarenaTasks(resolve(io.cwd, data), { sites })) {
      if (candidate.meta.taskId === taskId) {
        found = candidate;
        break;
      }
    }
    if (!found) fail(`There is no task ${taskId} in ${resolve(io.cwd, data)}.`, '--task-id');
    task = found;
    environment = await webarena.connectWebarenaLiteReal({
      sites,
      ...(string('auth') ? { authDirectory: resolve(io.cwd, string('auth')!) } : {}),
      browser: browserOptions,
    });
  } else {
    let host: string;
    try {
      host = new URL(url!).host;
    } catch {
      fail(
        `--url ${url} is not a URL (write it with its scheme: http://127.0.0.1:8080/).`,
        '--url',
      );
    }
    task = {
      id: `record:${host}`,
      domain: string('domain') ?? 'webarena-lite',
      instruction: string('instruction') ?? 'Explore the page.',
      origin: 'seed',
      meta: { startUrl: url },
    };
    const storageState = string('storage-state');
    environment = await browser.BrowserEnvironment.create({
      ...browserOptions,
      ...(storageState ? { storageState: resolve(io.cwd, storageState) } : {}),
    });
  }

  const output = resolve(io.cwd, out);
  let saved: Trajectory | undefined;
  const recorder = await browser.TrajectoryRecorder.open(environment, {
    output,
    meta: { recordedBy: 'dreamgym data record' },
    onRecord: (trajectory) => {
      saved = trajectory;
    },
  });
  const interactive = string('actions') === undefined;
  try {
    const observation = await recorder.reset(task);
    io.stderr.write(`recording ${task.id} (${task.instruction}) to ${output}\n`);
    if (interactive) io.stdout.write(`${observation.text}\n\n`);
    let step = 0;
    let last: StepResult;
    for await (const action of actionSource(
      string('actions') === undefined ? undefined : resolve(io.cwd, string('actions')!),
      io,
    )) {
      last = await recorder.step(action);
      step += 1;
      const notes = [
        `reward ${last.reward}`,
        ...(last.done ? [last.truncated ? 'truncated' : 'done'] : []),
        ...(last.info.invalidAction ? ['invalid action'] : []),
        ...(typeof last.info.actionError === 'string' ? ['action failed'] : []),
      ];
      io.stderr.write(`step ${step}: ${action} -> ${notes.join(', ')}\n`);
      if (interactive && !last.done) io.stdout.write(`${last.observation.text}\n\n`);
      if (last.done) break;
    }
  } finally {
    await recorder.close();
  }
  io.stdout.write(
    `${JSON.stringify({
      output,
      task: task.id,
      steps: saved?.steps.length ?? 0,
      success: saved?.success ?? false,
      finished: saved ? saved.meta?.unfinished !== true : false,
    })}\n`,
  );
  return 0;
}

/** `dreamgym data record`. */
export const dataRecordCommand: Command = {
  name: ['data', 'record'],
  summary:
    'record a browser episode (actions from a file or the terminal) as offline trajectory data',
  run: record,
};
