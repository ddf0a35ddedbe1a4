/**
 * `dreamgym model serve`: a local GGUF model behind an OpenAI-compatible HTTP server on
 * 127.0.0.1, until SIGINT or SIGTERM. Prints `listening on <baseURL>` once ready.
 */
import { resolve } from 'node:path';
import { loadLlamaRuntime } from '@dreamgym/run';
import { type Command, type CommandIo, integer, parseFlags } from '../command-arguments.js';

const SERVE_USAGE = `Usage: dreamgym model serve [options]

Serves a local model with the OpenAI API on 127.0.0.1: POST /v1/chat/completions
(response_format json_schema, logprobs), POST /v1/completions (echo + logprobs), GET /v1/models,
GET /health; and vLLM's fields for RL trainers: return_token_ids, token-id prompts with
prompt_logprobs, POST /tokenize, POST /v1/load_lora_adapter and /v1/unload_lora_adapter
(an LlmPolicy acts through it with OpenAICompatibleRuntime). Runs until interrupted.

  --model local|NAME|PATH   the model (default local: SmolLM2-135M-Instruct from the cache)
  --port N                  port (default 8080; 0 picks a free one)
  --name NAME               model name clients send (default the model's name)
  --concurrency N           requests evaluated at once (default 2)
  --context-size N          tokens per request, prompt and answer (default 2048)
  --threads N               CPU threads (default 1)
  --max-body-bytes N        largest request body (default 1048576)
  --quiet                   no line per request`;

/** Resolves when the process is asked to stop. */
function untilStopped(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      process.off('SIGINT', onInterrupt);
      process.off('SIGTERM', onTerminate);
      resolve(signal);
    };
    const onInterrupt = () => stop('SIGINT');
    const onTerminate = () => stop('SIGTERM');
    process.once('SIGINT', onInterrupt);
    process.once('SIGTERM', onTerminate);
  });
}

async function serve(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      model: { type: 'string' },
      port: { type: 'string' },
      name: { type: 'string' },
      concurrency: { type: 'string' },
      'context-size': { type: 'string' },
      threads: { type: 'string' },
      'max-body-bytes': { type: 'string' },
      quiet: { type: 'boolean' },
    },
    SERVE_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${SERVE_USAGE}\n`);
    return 0;
  }
  const string = (flag: string) => values[flag] as string | undefined;
  const runtime = await loadLlamaRuntime();
  const concurrency = integer(string('concurrency'), '--concurrency');
  const contextSize = integer(string('context-size'), '--context-size');
  const threads = integer(string('threads'), '--threads');
  const maxBodyBytes = integer(string('max-body-bytes'), '--max-body-bytes');
  const spec = string('model') ?? 'local';
  const model = await runtime.LlamaChatModel.load({
    model: /\.gguf$/i.test(spec) ? resolve(io.cwd, spec) : spec,
    modelDirectory: runtime.modelCacheDirectory(io.env),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(contextSize === undefined ? {} : { contextSize }),
    ...(threads === undefined ? {} : { threads }),
  });
  const stopped = untilStopped();
  let server: Awaited<ReturnType<typeof runtime.startLlamaServer>> | undefined;
  try {
    const name = string('name');
    server = await runtime.startLlamaServer({
      model,
      port: integer(string('port'), '--port') ?? 8080,
      ...(name ? { modelName: name } : {}),
      ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
      ...(values.quiet ? {} : { log: (line: string) => io.stderr.write(`${line}\n`) }),
    });
    io.stderr.write(
      `serving ${model.name} (${model.path}), context ${model.contextSize} tokens; model name "${server.modelName}"\n`,
    );
    io.stdout.write(`listening on ${server.baseURL}\n`);
    const signal = await stopped;
    io.stderr.write(`${signal}: shutting down\n`);
  } finally {
    await server?.close();
    await model.dispose();
  }
  return 0;
}

/** `dreamgym model serve`. */
export const modelServeCommand: Command = {
  name: ['model', 'serve'],
  summary: 'serve a local model (GGUF) with the OpenAI API on 127.0.0.1',
  run: serve,
};
