/**
 * `dreamgym doctor [--fix]`: checks what DreamGym needs from the machine beyond npm (the
 * faiss-node addon, Chromium, the Python virtualenv of the ALFWorld engine, the MiniWoB++ pages
 * and the torch trainer, the local model) and, with `--fix`, sets up what is missing the way
 * the project does: in a DreamGym checkout its set-up script's step (`bash scripts/setup.sh
 * faiss`); elsewhere the faiss-node step this package ships (`setup/faiss-node.sh`, faiss-node
 * kept an optional dependency), the project's `.venv` with the requirements the installed
 * packages ship, and `dreamgym model pull`, and the exact commands for what needs the
 * machine's owner. Every check and fix prints the exact command it runs.
 */
import { resolve } from 'node:path';
import { type Command, type CommandIo, fail, parseFlags } from '../command-arguments.js';
import {
  CHECK_NAMES,
  CHECKS,
  type DoctorCheck,
  type DoctorContext,
  type Finding,
  findUp,
} from '../doctor/checks.js';
import {
  reportFinding,
  reportFixing,
  reportNotFixed,
  reportStep,
  reportSummary,
} from '../doctor/report.js';

const DOCTOR_USAGE = `Usage: dreamgym doctor [options]

Checks what DreamGym needs beyond npm, each with the exact command it runs:
  faiss     the faiss-node addon (the replay buffer's vector index) loads
  chromium  a Chromium for @dreamgym/browser ($DREAMGYM_CHROMIUM, else /usr/bin/chromium)
  python    the virtualenv with the ALFWorld engine (the nearest .venv), where it is used
  miniwob   the MiniWoB++ task pages (PyPI miniwob) in that virtualenv, where @dreamgym/miniwob is
  trainer   the torch trainer's requirements in that virtualenv, where @dreamgym/llama is
  model     the local model SmolLM2-135M-Instruct in the model cache, where @dreamgym/llama is
With --fix it sets up what is missing. In a DreamGym checkout it runs the project's set-up
step for each (bash scripts/setup.sh faiss|chromium|python|miniwob|model; root installs the
Debian packages). Elsewhere it puts faiss-node back where npm left it out (npm install
--no-save --ignore-scripts: it stays optional, and its install script, which needs GitHub,
does not run) and runs the faiss-node step shipped with this package (bash
node_modules/@dreamgym/cli/setup/faiss-node.sh: compiles the addon against Debian's
libfaiss-dev, as root installing it); makes the project's .venv (python3 -m venv) and installs
the requirements the installed packages ship into it (pip install --no-deps -r
node_modules/@dreamgym/miniwob/python/requirements.txt, .../@dreamgym/llama/trainer/
requirements.txt: torch is a ~3 GB download); runs dreamgym model pull; and names the
commands for the ALFWorld engine's virtualenv and Chromium. Exit code 0 when nothing is missing.

  --fix                 set up what is missing, then check again
  --only LIST           comma-separated checks to run (default all): faiss,chromium,python,miniwob,trainer,model
  --venv DIR            the virtualenv to check (default: the nearest .venv from here up)
  --model-dir DIR       model cache folder (default $DREAMGYM_MODEL_DIR, else ~/.cache/dreamgym/models)
  --chromium PATH       the Chromium executable to check`;

/** Runs the finding's fix steps, then checks again; a failed step is named in the new finding. */
async function fix(check: DoctorCheck, missing: Finding, context: DoctorContext): Promise<Finding> {
  const { io } = context;
  let failed: string | undefined;
  for (const step of missing.fix?.steps ?? []) {
    reportStep(step.text, io);
    try {
      await step.run(io);
    } catch (error) {
      failed = `${step.text}: ${(error as Error).message}`;
      break;
    }
  }
  const finding = await check.inspect(context);
  return failed ? { ...finding, detail: `${finding.detail}; fix step failed: ${failed}` } : finding;
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
  const context: DoctorContext = {
    io,
    cwd,
    repository: findUp(cwd, 'scripts/setup.d/20-faiss.sh'),
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
      if (!finding.fix || finding.fix.manual || finding.fix.steps.length === 0) {
        reportNotFixed(check.name, finding, io);
        missing += 1;
        continue;
      }
      reportFixing(check.name, finding, io);
      finding = await fix(check, finding, context);
    }
    reportFinding(check.name, finding, io);
    if (finding.status === 'missing') missing += 1;
  }
  reportSummary(missing, values.fix === true, io);
  return missing === 0 ? 0 : 1;
}

/** `dreamgym doctor`. */
export const doctorCommand: Command = {
  name: ['doctor'],
  summary:
    'check (and with --fix set up) faiss-node, Chromium, the Python virtualenv, the MiniWoB++ pages, the torch trainer, the local model',
  run: doctor,
};
