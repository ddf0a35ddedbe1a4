/**
 * How `dreamgym doctor --fix` sets up what is missing. Doctor builds nothing itself: in a
 * DreamGym checkout it runs the project's set-up step for the check (`bash scripts/setup.sh
 * faiss`); elsewhere it runs the faiss-node step this package ships (`setup/faiss-node.sh`),
 * `dreamgym model pull` for the model and the virtualenvs of the MiniWoB++ pages and the torch
 * trainer from the requirements their installed packages ship, and names the exact commands
 * for what only the machine's owner can set up (the ALFWorld engine's build, Chromium).
 */
import type { CommandIo } from '../command-arguments.js';
import { shippedFile } from '../package-files.js';
import { commandText, execute, quote } from './shell.js';

/** One step of a fix: the exact command as printed, and how `--fix` runs it. */
export interface FixStep {
  text: string;
  run(io: CommandIo): Promise<void>;
}

/** How a missing thing is set up. */
export interface Fix {
  /** What `--fix` runs, in order. */
  steps: FixStep[];
  /** When set, `--fix` runs nothing here: the commands to run by hand instead. */
  manual?: string;
}

/** A step that runs `argv` in `cwd` (printed as typed from `from`), streaming its output to stderr. */
export function commandStep(
  argv: readonly string[],
  cwd: string,
  from: string,
  env?: Record<string, string>,
): FixStep {
  const prefix = env
    ? `${Object.entries(env)
        .map(([key, value]) => `${key}=${quote(value)}`)
        .join(' ')} `
    : '';
  return {
    text: `${prefix}${commandText(argv, cwd, from)}`,
    run: async (io) => {
      const { code, output } = await execute(argv, {
        cwd,
        env: { ...io.env, ...env },
        onOutput: (text) => io.stderr.write(text),
      });
      if (code !== 0) {
        throw new Error(`exited with ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`);
      }
    },
  };
}

/**
 * In a DreamGym checkout: the set-up script's own step for the check (`scripts/setup.d/`),
 * with its Debian packages (as root) and npm dependencies when they are stale.
 */
export function setupScriptFix(repository: string, step: string, from: string): Fix {
  return { steps: [commandStep(['bash', 'scripts/setup.sh', step], repository, from)] };
}

/**
 * faiss-node outside a DreamGym checkout: put the package back where npm left it out (without
 * its install script, which needs GitHub), then run the set-up script this package ships
 * (`setup/faiss-node.sh`, the repository's own `faiss` step): it compiles the addon against
 * Debian's libfaiss-dev with node-gyp, with the DreamGym additions, and falls back to
 * faiss-node's prebuilt (from GitHub) where it cannot.
 */
export function faissProjectFix(
  project: string,
  from: string,
  installed: { range: string } | 'installed',
): Fix {
  const install =
    installed === 'installed'
      ? []
      : [
          // `--no-save`: faiss-node is an optional dependency of @dreamgym/core, and the
          // project's lockfile records it as one through core. Saved (npm's default) it would
          // become a regular dependency of the project, and the next `npm ci` would fail
          // wherever its install script cannot reach GitHub, where now npm leaves it out. Kept
          // unsaved, it stays optional: a later `npm ci` may drop it again (then run `dreamgym
          // doctor --fix` again), but never fails because of it.
          //
          // `--ignore-scripts`: faiss-node's install script downloads a prebuilt from GitHub,
          // else git-clones faiss from GitHub, and fails the install where GitHub cannot be
          // reached. The step after this one does that script's job from the registry and
          // Debian alone.
          commandStep(
            [
              'npm',
              'install',
              '--no-save',
              '--ignore-scripts',
              '--no-audit',
              '--no-fund',
              `faiss-node@${installed.range}`,
            ],
            project,
            from,
          ),
        ];
  return {
    steps: [
      ...install,
      commandStep(['bash', shippedFile('setup/faiss-node.sh'), project], project, from),
    ],
  };
}

/**
 * A virtualenv with a package's pinned requirements outside a DreamGym checkout, run by
 * `--fix`: `python -m venv` where there is none, then `pip install --no-deps -r` of the
 * requirements file the installed package ships (each file pins its whole closure).
 */
export function virtualenvFix(
  venv: string,
  requirements: string,
  options: { venvExists: boolean; python: string; project: string; from: string },
): Fix {
  const { project, from } = options;
  return {
    steps: [
      ...(options.venvExists
        ? []
        : [commandStep([options.python, '-m', 'venv', venv], project, from)]),
      commandStep(
        [
          `${venv}/bin/python`,
          '-m',
          'pip',
          'install',
          '--disable-pip-version-check',
          '--no-deps',
          '--no-input',
          '-r',
          requirements,
        ],
        project,
        from,
      ),
    ],
  };
}

/** What to run by hand for the virtualenv of the ALFWorld engine outside a DreamGym checkout. */
export function pythonManualFix(
  venv: string,
  requirements: string,
  options: { venvExists: boolean; python: string },
): Fix {
  const bin = `${venv}/bin`;
  const install = [
    `${bin}/python`,
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--no-deps',
    '--no-input',
    '--use-pep517',
    '-r',
    requirements,
  ];
  const commands = [
    ...(options.venvExists ? [] : [[options.python, '-m', 'venv', venv].map(quote).join(' ')]),
    // fast-downward's build calls a bare `python`: the virtualenv's comes first on PATH.
    `PATH=${quote(bin)}:"$PATH" ${install.map(quote).join(' ')}`,
  ];
  return { steps: [], manual: `run by hand: ${commands.join(' && ')}` };
}

/** What to run by hand for Debian packages outside a DreamGym checkout. */
export function aptManualFix(packages: readonly string[], isRoot: boolean): Fix {
  const sudo = isRoot ? '' : 'sudo ';
  return {
    steps: [],
    manual: `run by hand: ${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${packages.join(' ')}`,
  };
}

/** `dreamgym model pull` of the model, run in process. */
export function modelPullFix(
  name: string,
  modelDirectory: string | undefined,
  force: boolean,
): Fix {
  const args = [
    name,
    ...(modelDirectory ? ['--model-dir', modelDirectory] : []),
    ...(force ? ['--force'] : []),
  ];
  return {
    steps: [
      {
        text: `dreamgym model pull ${args.map(quote).join(' ')}`,
        run: async (io) => {
          const { modelPullCommand } = await import('../commands/model-pull.js');
          const code = await modelPullCommand.run(args, { ...io, stdout: io.stderr });
          if (code !== 0) throw new Error(`dreamgym model pull exited with ${code}`);
        },
      },
    ],
  };
}
