/**
 * What `dreamgym doctor` checks: each check finds one thing DreamGym needs beyond npm, says
 * the exact command it ran, and names the fix (see fixes.ts) without running it.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { loadLlamaRuntime } from '@dreamgym/run';
import type { CommandIo } from '../command-arguments.js';
import {
  aptManualFix,
  type Fix,
  faissProjectFix,
  modelPullFix,
  pythonManualFix,
  setupScriptFix,
  virtualenvFix,
} from './fixes.js';
import { commandText, execute, quote } from './shell.js';

export const CHECK_NAMES = ['faiss', 'chromium', 'python', 'miniwob', 'trainer', 'model'] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** What the ALFWorld engine's virtualenv must import. */
const PYTHON_IMPORTS = 'import textworld, fast_downward, alfworld.agents.environment.alfred_tw_env';
/** Where the MiniWoB++ pages are (as @dreamgym/browser finds them), exit 3 without them. */
const MINIWOB_PAGES =
  'import importlib.util, os, sys; s = importlib.util.find_spec("miniwob"); p = os.path.join(list(s.submodule_search_locations)[0], "html") if s and s.submodule_search_locations else ""; print(p) if os.path.isfile(os.path.join(p, "miniwob", "click-test.html")) else sys.exit(3)';
/** What the torch trainer's worker imports (run in the trainer's folder). */
const TRAINER_IMPORTS = 'import torch, transformers, peft, gguf, dreamgym_trainer.worker';

export interface DoctorContext {
  io: CommandIo;
  cwd: string;
  /** The DreamGym checkout holding `cwd`, when there is one: its set-up script fixes. */
  repository: string | undefined;
  venv: string | undefined;
  modelDirectory: string | undefined;
  chromium: string | undefined;
  isRoot: boolean;
}

/** What a check found. */
export interface Finding {
  status: 'ok' | 'missing' | 'not needed';
  detail: string;
  /** The exact command the check ran. */
  check?: string;
  /** How to set it up, when it is missing and doctor knows how. */
  fix?: Fix;
}

export interface DoctorCheck {
  name: CheckName;
  inspect(context: DoctorContext): Promise<Finding>;
}

/** The nearest folder from `start` up that holds `relative`. */
export function findUp(start: string, relative: string): string | undefined {
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

function packageJson(directory: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as Record<
    string,
    unknown
  >;
}

const faissCheck: DoctorCheck = {
  name: 'faiss',
  async inspect(context) {
    const directory = resolvePackage('faiss-node', context.cwd);
    // npm's commands act on the project's whole tree, wherever in it faiss-node lies.
    const project = findUp(context.cwd, 'package.json') ?? context.cwd;
    if (!directory) {
      const core = resolvePackage('@dreamgym/core', context.cwd);
      const optional = core
        ? (packageJson(core).optionalDependencies as Record<string, string> | undefined)
        : undefined;
      return {
        status: 'missing',
        detail: context.repository
          ? 'faiss-node is not installed in this repository (npm dependencies missing?)'
          : 'faiss-node is not installed: npm leaves the optional dependency out when its install script fails (it downloads a prebuilt from GitHub, else clones faiss from GitHub)',
        fix: context.repository
          ? setupScriptFix(context.repository, 'faiss', context.cwd)
          : faissProjectFix(project, context.cwd, { range: optional?.['faiss-node'] ?? '^0.5.1' }),
      };
    }
    const script = `const f = require(${JSON.stringify(directory)}); const i = new f.IndexFlatIP(2); i.add([1, 0]); if (i.search([1, 0], 1).labels[0] !== 0) throw new Error("wrong search result"); console.log(f.dreamgymBinding ? "with the DreamGym additions" + (f.dreamgymDistances ? ", " + f.dreamgymDistances + " distance kernels" : "") : "stock build: slower inserts and searches");`;
    const check = commandText(['node', '-e', script], context.cwd, context.cwd);
    const { code, output } = await execute([process.execPath, '-e', script], {
      cwd: context.cwd,
    });
    const version = packageJson(directory).version as string;
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
      fix: context.repository
        ? setupScriptFix(context.repository, 'faiss', context.cwd)
        : faissProjectFix(project, context.cwd, 'installed'),
    };
  },
};

const chromiumCheck: DoctorCheck = {
  name: 'chromium',
  async inspect(context) {
    const wanted = context.chromium ?? context.io.env.DREAMGYM_CHROMIUM?.trim();
    const candidates = wanted ? [wanted] : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
    // A Chromium the user named is theirs to fix; the system's comes from Debian.
    const fix = wanted
      ? {}
      : {
          fix: context.repository
            ? setupScriptFix(context.repository, 'chromium', context.cwd)
            : aptManualFix(['chromium'], context.isRoot),
        };
    const path = candidates.find((candidate) => existsSync(candidate));
    if (!path) {
      return {
        status: 'missing',
        detail: `no Chromium at ${candidates.join(' or ')} (Playwright's own browser download needs GitHub-free CDN access; DreamGym drives the system's Chromium)`,
        check: `test -x ${candidates[0]}`,
        ...fix,
      };
    }
    const { code, output } = await execute([path, '--version'], { cwd: context.cwd });
    const check = `${quote(path)} --version`;
    if (code !== 0) {
      return {
        status: 'missing',
        detail: `${path} --version failed: ${output.trim().split('\n')[0]}`,
        check,
        ...fix,
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
    const { repository } = context;
    const alfworld = resolvePackage('@dreamgym/alfworld', context.cwd);
    const requirements = alfworld ? join(alfworld, 'python/requirements.txt') : undefined;
    const known = requirements !== undefined && existsSync(requirements);
    const found = context.venv ? undefined : findUp(context.cwd, '.venv/bin/python');
    const venv = context.venv ?? (found ? join(found, '.venv') : undefined);
    if (!venv && !repository && !known) {
      return {
        status: 'not needed',
        detail: 'no .venv and no Python component here (@dreamgym/alfworld is not installed)',
      };
    }
    const target = venv ?? join(findUp(context.cwd, 'package.json') ?? context.cwd, '.venv');
    const interpreter = join(target, 'bin/python');
    let fix: Fix | undefined;
    if (repository && (!context.venv || resolve(context.venv) === join(repository, '.venv'))) {
      fix = setupScriptFix(repository, 'python', context.cwd);
    } else if (known) {
      fix = pythonManualFix(target, requirements, {
        venvExists: existsSync(interpreter),
        python: existsSync('/usr/bin/python3.11') ? 'python3.11' : 'python3',
      });
    }
    const check = commandText([interpreter, '-c', PYTHON_IMPORTS], context.cwd, context.cwd);
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

/** The virtualenv a check uses: `--venv`, else the nearest `.venv`, else the project's. */
function projectVirtualenv(context: DoctorContext): { venv: string; interpreter: string } {
  const found = context.venv ? undefined : findUp(context.cwd, '.venv/bin/python');
  const venv =
    context.venv ??
    (found
      ? join(found, '.venv')
      : join(findUp(context.cwd, 'package.json') ?? context.cwd, '.venv'));
  return { venv, interpreter: join(venv, 'bin/python') };
}

/** The Python a new virtualenv is made with. */
function basePython(): string {
  return existsSync('/usr/bin/python3.11') ? 'python3.11' : 'python3';
}

/**
 * A check that `script` runs with the project's Python (in `cwd`), where the package `owner`
 * is installed. `--fix`: in a DreamGym checkout the set-up step `setupStep`; elsewhere a
 * virtualenv with the `requirements` file the installed package ships.
 */
async function virtualenvFinding(
  context: DoctorContext,
  needs: {
    what: string;
    script: string;
    cwd: string;
    requirements: string | undefined;
    setupStep: string;
  },
): Promise<Finding> {
  const { repository } = context;
  const { venv, interpreter } = projectVirtualenv(context);
  const project = findUp(context.cwd, 'package.json') ?? context.cwd;
  let fix: Fix | undefined;
  if (repository && (!context.venv || resolve(context.venv) === join(repository, '.venv'))) {
    fix = setupScriptFix(repository, needs.setupStep, context.cwd);
  } else if (needs.requirements && existsSync(needs.requirements)) {
    fix = virtualenvFix(venv, needs.requirements, {
      venvExists: existsSync(interpreter),
      python: basePython(),
      project,
      from: context.cwd,
    });
  }
  const check = commandText([interpreter, '-c', needs.script], needs.cwd, context.cwd);
  if (!existsSync(interpreter)) {
    return {
      status: 'missing',
      detail: `no virtualenv at ${venv} (for ${needs.what})`,
      check,
      ...(fix ? { fix } : {}),
    };
  }
  const { code, output } = await execute([interpreter, '-c', needs.script], { cwd: needs.cwd });
  if (code !== 0) {
    const reason = output.trim().split('\n').at(-1) || `exit code ${code}`;
    return {
      status: 'missing',
      detail: `${interpreter} has no ${needs.what}${code === 3 ? '' : `: ${reason}`}`,
      check,
      ...(fix ? { fix } : {}),
    };
  }
  const said = output.trim().split('\n').at(-1);
  return {
    status: 'ok',
    detail: `${venv} has ${needs.what}${said ? `: ${said}` : ''}`,
    check,
  };
}

const miniwobCheck: DoctorCheck = {
  name: 'miniwob',
  async inspect(context) {
    const miniwob = resolvePackage('@dreamgym/miniwob', context.cwd);
    if (!miniwob) {
      return {
        status: 'not needed',
        detail: '@dreamgym/miniwob is not installed (its task pages come from Python)',
      };
    }
    return virtualenvFinding(context, {
      what: 'the MiniWoB++ task pages of the PyPI package miniwob',
      script: MINIWOB_PAGES,
      cwd: context.cwd,
      requirements: join(miniwob, 'python/requirements.txt'),
      setupStep: 'miniwob',
    });
  },
};

const trainerCheck: DoctorCheck = {
  name: 'trainer',
  async inspect(context) {
    const llama = resolvePackage('@dreamgym/llama', context.cwd);
    if (!llama) {
      return {
        status: 'not needed',
        detail: '@dreamgym/llama is not installed (the LLM policy trains in its torch worker)',
      };
    }
    // As @dreamgym/llama finds it: a DreamGym checkout's own source, else the package's copy.
    const trainer = [
      ...(context.repository ? [join(context.repository, 'trainers/python')] : []),
      join(llama, 'trainer'),
    ].find((directory) => existsSync(join(directory, 'dreamgym_trainer/worker.py')));
    if (!trainer) {
      return {
        status: 'missing',
        detail: `${llama} has no trainer/ folder (dreamgym_trainer): an incomplete install of @dreamgym/llama; reinstall it (npm install @dreamgym/llama)`,
        check: `test -f ${quote(join(llama, 'trainer/dreamgym_trainer/worker.py'))}`,
      };
    }
    return virtualenvFinding(context, {
      what: `the torch trainer's requirements for ${join(trainer, 'dreamgym_trainer')}`,
      script: TRAINER_IMPORTS,
      cwd: trainer,
      requirements: join(trainer, 'requirements.txt'),
      setupStep: 'python',
    });
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
    const check = `sha256sum ${quote(path)}   # expected ${known.sha256}`;
    if (!existsSync(path)) {
      return {
        status: 'missing',
        detail: `${known.name} is not in the model cache (${path})`,
        check,
        fix: modelPullFix(known.name, context.modelDirectory, false),
      };
    }
    const digest = await sha256(path);
    if (digest !== known.sha256) {
      return {
        status: 'missing',
        detail: `${path} has sha256 ${digest}, expected ${known.sha256} (a damaged or partial download)`,
        check,
        fix: modelPullFix(known.name, context.modelDirectory, true),
      };
    }
    return { status: 'ok', detail: `${known.name} at ${path} (sha256 verified)`, check };
  },
};

/** Every check, in the order doctor runs them. */
export const CHECKS: readonly DoctorCheck[] = [
  faissCheck,
  chromiumCheck,
  pythonCheck,
  miniwobCheck,
  trainerCheck,
  modelCheck,
];
