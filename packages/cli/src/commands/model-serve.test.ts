/**
 * `dreamgym model serve` as users run it: the CLI in its own process, the real model, an
 * OpenAI client, then SIGTERM for a clean shutdown.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { OpenAICompatibleChatModel } from '@dreamgym/core/models';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..', '..');
let child: ChildProcess | undefined;
afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

describe('dreamgym model serve', () => {
  it('serves the local model on 127.0.0.1 until SIGTERM', async () => {
    // tsx as a loader in this one process, not the tsx CLI: the CLI relays SIGTERM to a child
    // and SIGKILLs it (exit 143) when the child does not acknowledge within 30 ms.
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'packages', 'cli', 'src', 'bin.ts'),
        'model',
        'serve',
        '--port',
        '0',
        '--concurrency',
        '1',
        '--context-size',
        '512',
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk) => {
      stderr += chunk;
    });
    const baseURL = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      child!.stdout!.on('data', (chunk) => {
        stdout += chunk;
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
        if (match) resolve(match[1]!);
      });
      child!.on('exit', (code) => reject(new Error(`model serve exited with ${code}: ${stderr}`)));
    });
    const client = new OpenAICompatibleChatModel({
      baseURL,
      model: 'smollm2-135m-instruct',
      maxRetries: 0,
    });
    const reply = await client.complete({
      messages: [{ role: 'user', content: 'Hi!' }],
      maxTokens: 5,
      temperature: 0,
    });
    expect(reply.text.length).toBeGreaterThan(0);
    expect(reply.usage.completionTokens).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child!.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/serving smollm2-135m-instruct/);
    expect(stderr).toMatch(/POST \/v1\/chat\/completions 200/);
    expect(stderr).toMatch(/SIGTERM: shutting down/);
  }, 60_000);
});
