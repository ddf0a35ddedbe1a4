/**
 * The header of a saved LLM policy state (`llm-policy.json`, beside the worker's weights and
 * optimiser files): how the policy acted, so a state saved under another action selection or
 * answer format is refused instead of loaded into a policy it does not fit.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError } from '@dreamgym/core';
import { agentAnswerFormat } from '@dreamgym/core/policy';
import type { LlmPolicyOptions } from './llm-policy-options.js';

const HEADER_FILE = 'llm-policy.json';

function policyHeader(options: LlmPolicyOptions, frozen: boolean): Record<string, unknown> {
  return {
    format: 'dreamgym-llm-policy',
    version: 1,
    actionSelection: options.actionSelection ?? 'generate',
    // The answer format, under the key states were first saved with.
    actionFormat: agentAnswerFormat(options.prompt),
    model: options.runtime.modelPath.replace(/^.*[\\/]/, ''),
    frozen,
  };
}

/** Writes the header into `directory` (`frozen`: a snapshot's state). */
export async function writePolicyHeader(
  options: LlmPolicyOptions,
  directory: string,
  frozen: boolean,
): Promise<void> {
  await writeFile(
    join(directory, HEADER_FILE),
    `${JSON.stringify(policyHeader(options, frozen), null, 2)}\n`,
  );
}

/** Throws `CheckpointError` unless `directory` holds a state this policy can load. */
export async function checkPolicyHeader(
  options: LlmPolicyOptions,
  directory: string,
): Promise<void> {
  const file = join(directory, HEADER_FILE);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new CheckpointError(
      `${file} is missing or not JSON: ${directory} holds no LLM policy state (${(error as Error).message}).`,
      { path: file, cause: error },
    );
  }
  const expected = policyHeader(options, false);
  for (const key of ['format', 'actionSelection', 'actionFormat'] as const) {
    if (header[key] !== expected[key]) {
      throw new CheckpointError(
        `${file}: saved with ${key} ${JSON.stringify(header[key])}, but this policy uses ${JSON.stringify(expected[key])}.`,
        { path: file },
      );
    }
  }
}
