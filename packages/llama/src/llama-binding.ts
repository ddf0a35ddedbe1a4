/**
 * The process-wide llama.cpp binding. `node-llama-cpp` is loaded on first use (importing it
 * costs ~0.35 s and loads a native library), always from its shipped CPU binary: no build at
 * run time, no GPU probing.
 */
import type { Llama } from 'node-llama-cpp';

type LlamaModule = typeof import('node-llama-cpp');

let moduleLoad: Promise<LlamaModule> | undefined;
let bindingLoad: Promise<Llama> | undefined;

/** The `node-llama-cpp` module, imported once. */
export function llamaModule(): Promise<LlamaModule> {
  moduleLoad ??= import('node-llama-cpp');
  return moduleLoad;
}

/** The shared `Llama` binding (CPU, shipped binary, errors-only logging). */
export function sharedLlama(): Promise<Llama> {
  bindingLoad ??= (async () => {
    const { getLlama, LlamaLogLevel } = await llamaModule();
    return getLlama({
      build: 'never',
      gpu: false,
      logLevel: LlamaLogLevel.error,
      progressLogs: false,
    });
  })();
  bindingLoad.catch(() => {
    bindingLoad = undefined;
  });
  return bindingLoad;
}
