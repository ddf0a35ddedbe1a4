/**
 * Worker-process entry of `serve --workers N`: builds a read replica of the run's replay
 * buffer (with the adapter and experience model) from the replica module named in its
 * setup (the `DREAMGYM_WORKER_SETUP` variable), then plays the environments the serving
 * process opens on it. Written-back transitions arrive from the writer (`apply`) and join
 * the replica in publishing order. Processes, not threads: the faiss addon keeps
 * process-wide state that one thread's exit tears down under the other threads.
 */
import {
  DreamGymError,
  type Environment,
  syntheticEnvironmentFromConfig,
  type Transition,
} from '@dreamgym/core';
import { CachingRetriever } from './caching-retriever.js';
import type { ReplicaFactory } from './worker-pool.js';
import type {
  WorkerFailure,
  WorkerFigures,
  WorkerReply,
  WorkerRequest,
  WorkerSetup,
  WorkerValue,
} from './worker-protocol.js';

const setup = JSON.parse(process.env.DREAMGYM_WORKER_SETUP ?? 'null') as WorkerSetup | null;
const send = (reply: WorkerReply) => process.send!(reply);

function failure(error: unknown): WorkerFailure {
  if (error instanceof Error) {
    return {
      name: error.name,
      message: error.message,
      ...(DreamGymError.isInstance(error) ? { code: error.code } : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}

async function main(): Promise<void> {
  if (!setup || !process.send) {
    throw new Error('serve-worker runs as a worker process of serve --workers, not on its own.');
  }
  const module = (await import(setup.replicaModule)) as { createReplica?: ReplicaFactory };
  if (typeof module.createReplica !== 'function') {
    throw new Error(`${setup.replicaModule} exports no createReplica(options) function.`);
  }
  const replica = await module.createReplica(setup.replicaOptions);
  const { environment: settings } = setup;
  const retriever = new CachingRetriever(replica.replayBuffer, {
    maxEntries: settings.retrievalCache ? 8192 : 0,
  });
  const environments = new Map<number, Environment>();
  let appliedSequence = 0;
  let applyMilliseconds = 0;
  // Batches are applied one after another, in the order published.
  let applying: Promise<void> = Promise.resolve();

  const handle = async (request: WorkerRequest): Promise<WorkerValue> => {
    switch (request.op) {
      case 'create': {
        const { retrieval, history, maxSteps, invalidActionPenalty } = settings;
        environments.set(
          request.environment,
          syntheticEnvironmentFromConfig(
            { retrieval, history, maxSteps, invalidActionPenalty },
            { experienceModel: replica.experienceModel, retriever, adapter: replica.adapter },
          ),
        );
        return undefined;
      }
      case 'reset':
        return opened(request.environment).reset(request.task);
      case 'step':
        return opened(request.environment).step(request.action);
      case 'close': {
        const environment = environments.get(request.environment);
        environments.delete(request.environment);
        await environment?.close();
        return undefined;
      }
      case 'apply': {
        const transitions: readonly Transition[] = request.transitions;
        const sequence = request.sequence;
        applying = applying.then(async () => {
          const started = performance.now();
          await replica.replayBuffer.add(transitions);
          applyMilliseconds += performance.now() - started;
          retriever.invalidate();
          appliedSequence = sequence;
        });
        await applying;
        return undefined;
      }
      case 'stats': {
        await applying;
        const cpu = process.cpuUsage();
        return {
          pid: process.pid,
          cpuMilliseconds: Math.round((cpu.user + cpu.system) / 1000),
          rssBytes: process.memoryUsage.rss(),
          retrieval: retriever.stats(),
          bufferSize: replica.replayBuffer.size,
          searchIndex: replica.replayBuffer.stats().index,
          appliedSequence,
          applyMilliseconds: Math.round(applyMilliseconds),
          environments: environments.size,
          // Time the worker's event loop was busy (not waiting): its share of the CPU.
          busyMilliseconds: Math.round(performance.eventLoopUtilization().active),
        } satisfies WorkerFigures;
      }
    }
  };

  const opened = (id: number): Environment => {
    const environment = environments.get(id);
    if (!environment) throw new Error(`environment ${id} is not open in this worker.`);
    return environment;
  };

  process.on('message', (request: WorkerRequest) => {
    handle(request).then(
      (value) => send({ id: request.id, ok: true, value }),
      (error: unknown) => send({ id: request.id, ok: false, error: failure(error) }),
    );
  });
  // The serving process gone (its IPC channel closed): nothing is left to serve.
  process.on('disconnect', () => process.exit(0));
  send({ id: 0, ok: true });
}

main().catch((error: unknown) => {
  if (process.send) send({ id: 0, ok: false, error: failure(error) });
  else console.error(error);
  process.exitCode = 1;
});
