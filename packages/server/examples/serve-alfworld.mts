import { createAlfworldAdapter } from '@dreamgym/alfworld';
import { HashingEmbedder, ReplayBuffer, RetrievalExperienceModel, type Task, trajectoryToTransitions } from '@dreamgym/core';
import { serveDreamGym } from '@dreamgym/server';

const dataDir = `${process.env.DREAMGYM_DATA_DIR}/alfworld`;
const adapter = createAlfworldAdapter({ dataDir });
const replayBuffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 256 }) });
let index = 0;
for await (const t of adapter.datasets.trajectories.load(dataDir, { limit: 200 })) await replayBuffer.add(trajectoryToTransitions(t, { trajectoryId: `offline:${index++}` }));
const seedTasks: Task[] = []; for await (const task of adapter.datasets.tasks.load(dataDir, { splits: ['train'], limit: 20 })) seedTasks.push(task);
const experienceModel = new RetrievalExperienceModel({ parseAction: adapter.parseAction, hints: adapter.experienceHints });
const port = Number(process.env.PORT ?? 8000);
const served = await serveDreamGym({ adapter, replayBuffer, seedTasks, experienceModel, runDirectory: 'runs/serve-alfworld', server: { port } });
console.log(`OpenEnv clients connect to ${served.url}`);
process.once('SIGINT', () => served.close());
