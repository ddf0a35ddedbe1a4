/**
 * The GRPO update of an agent's model from the episodes it played, shared by `AgentTrainer`
 * (calls captured in process) and `ProxyTrainer` (calls recorded by the proxy): advantages
 * normalised in each task's group, one sample per model call with token ids in a group whose
 * rewards differ (the prompt's tokens masked, the answer's tokens as the server returned them,
 * on-policy), one update of the LoRA adapter by the torch trainer, the adapter saved and handed
 * to the OpenAI-compatible server, whose `servedModel` later calls are sent to.
 */
import { join } from 'node:path';
import {
  grpoAdvantages,
  type PpoLossOptions,
  resolvePpoLossOptions,
} from '@dreamgym/core/training';
import type { OpenAICompatibleRuntime, TorchTrainerBackend } from '@dreamgym/llama';
import type { ModelCall } from './capture.js';

/** What the update needs of one episode. */
export interface UpdateEpisode {
  taskId: string;
  reward: number;
  calls: readonly ModelCall[];
}

/** What one update did. */
export interface GrpoUpdateResult {
  /** Calls trained on. */
  samples: number;
  /** The update's loss; undefined when no group had differing rewards (nothing was trained). */
  loss: number | undefined;
  /** Seconds spent saving the adapter and loading it into the server (the hand-over). */
  handOverSeconds: number;
}

/** One GRPO update over `episodes`; the adapter goes to `<directory>/adapter` and the server. */
export async function grpoUpdate(options: {
  episodes: readonly UpdateEpisode[];
  backend: TorchTrainerBackend;
  runtime: OpenAICompatibleRuntime;
  directory: string;
  loss?: PpoLossOptions;
  /** Samples per optimiser step. Default: all in one step. */
  miniBatchSize?: number;
}): Promise<GrpoUpdateResult> {
  const { episodes } = options;
  const advantages = grpoAdvantages(
    episodes.map((episode) => episode.reward),
    episodes.map((episode) => episode.taskId),
  );
  const samples = episodes.flatMap((episode, index) =>
    advantages[index] === 0
      ? []
      : episode.calls
          .filter((call) => call.promptTokenIds && (call.completionTokenIds?.length ?? 0) > 0)
          .map((call) => ({
            prompt: call.promptTokenIds!,
            completion: call.completionTokenIds!,
            // The weights before the update are the ones that answered: on-policy.
            behaviour: null,
            reference: null,
            advantage: advantages[index]!,
          })),
  );
  if (samples.length === 0) return { samples: 0, loss: undefined, handOverSeconds: 0 };
  const order = samples.map((_, index) => index);
  const size = options.miniBatchSize ?? samples.length;
  const schedule = [
    Array.from({ length: Math.ceil(order.length / size) }, (_, batchIndex) =>
      order.slice(batchIndex * size, (batchIndex + 1) * size),
    ),
  ];
  const update = await options.backend.request<{ loss: number }>('update', {
    samples,
    schedule,
    loss: resolvePpoLossOptions(options.loss),
  });
  const handOverStarted = performance.now();
  const adapter = join(options.directory, 'adapter');
  await options.backend.request('save_adapter', { directory: adapter });
  await options.runtime.loadWeights({ kind: 'peft', path: adapter });
  return {
    samples: samples.length,
    loss: update.loss,
    handOverSeconds: (performance.now() - handOverStarted) / 1000,
  };
}
