/**
 * `dreamgym proxy`: the recording proxy of `@dreamgym/agents/proxy` in front of an inference
 * server, until SIGINT or SIGTERM, so an agent in any language is recorded (and trained) by
 * changing its base URL. Prints `listening on <baseURL>` once ready. `@dreamgym/agents` is
 * loaded on demand.
 */
import { resolve } from 'node:path';
import { type Command, type CommandIo, fail, integer, parseFlags } from '../command-arguments.js';

const PROXY_USAGE = `Usage: dreamgym proxy --upstream URL [options]

An OpenAI-compatible endpoint in front of a server that returns token ids and log-probs
(dreamgym model serve, vLLM >= 0.10.2): POST /v1/chat/completions (streamed or not, with
tools) is forwarded with return_token_ids and logprobs asked for, and each call is recorded
(prompt and answer token ids, log-probs, messages, tools) in <records>/calls.jsonl before its
answer is returned. Point the agent's OPENAI_BASE_URL at the printed base URL. Calls belong to
the episode named by the X-DreamGym-Episode header, or by a per-episode base URL
(<url>/episodes/<id>/v1). POST /dreamgym/proxy/model {"model": NAME} routes later calls to a
LoRA adapter loaded in the server. Runs until interrupted.

  --upstream URL     the inference server's OpenAI base URL (http://127.0.0.1:8080/v1)
  --records DIR      where calls.jsonl goes (default ./proxy-records; appended to)
  --port N           port (default 8090; 0 picks a free one)
  --host HOST        interface (default 127.0.0.1)
  --model NAME       send every call to this model (an adapter's name)
  --sync             fsync each record before answering (survives a machine crash)`;

/** The part of `@dreamgym/agents/proxy` this command uses. */
interface ProxyModule {
  startRecordingProxy(options: {
    upstream: string;
    records: string;
    host?: string;
    port?: number;
    model?: string;
    sync?: boolean;
  }): Promise<{ baseURL: string; url: string; close(): Promise<void> }>;
}

async function loadProxy(): Promise<ProxyModule> {
  const specifier: string = '@dreamgym/agents/proxy';
  try {
    return (await import(specifier)) as ProxyModule;
  } catch (error) {
    fail(
      `The proxy needs the packages @dreamgym/agents and @dreamgym/server, which could not be loaded (${(error as Error).message.split('\n')[0]}). Install them next to the CLI: npm install @dreamgym/agents @dreamgym/server.`,
    );
  }
}

/** Resolves when the process is asked to stop. */
function untilStopped(): Promise<string> {
  return new Promise((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
}

async function proxy(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      upstream: { type: 'string' },
      records: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      model: { type: 'string' },
      sync: { type: 'boolean' },
    },
    PROXY_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${PROXY_USAGE}\n`);
    return 0;
  }
  const string = (flag: string) => values[flag] as string | undefined;
  const upstream = string('upstream');
  if (!upstream)
    fail(`--upstream is required: the inference server's OpenAI base URL.\n\n${PROXY_USAGE}`);
  const records = resolve(io.cwd, string('records') ?? 'proxy-records', 'calls.jsonl');
  const { startRecordingProxy } = await loadProxy();
  const stopped = untilStopped();
  const model = string('model');
  const host = string('host');
  const running = await startRecordingProxy({
    upstream,
    records,
    port: integer(string('port'), '--port') ?? 8090,
    ...(host ? { host } : {}),
    ...(model ? { model } : {}),
    ...(values.sync ? { sync: true } : {}),
  });
  try {
    io.stderr.write(`recording calls to ${upstream} in ${records}\n`);
    io.stdout.write(`listening on ${running.baseURL}\n`);
    const signal = await stopped;
    io.stderr.write(`${signal}: shutting down\n`);
  } finally {
    await running.close();
  }
  return 0;
}

/** `dreamgym proxy`. */
export const proxyCommand: Command = {
  name: ['proxy'],
  summary: "record an agent's model calls (with token ids) in front of an inference server",
  run: proxy,
};
