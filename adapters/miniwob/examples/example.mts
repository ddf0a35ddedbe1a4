import { buildMiniwobDataset, createMiniwobAdapter } from '@dreamgym/miniwob';

const dataDir = 'data/miniwob';
await buildMiniwobDataset({ dir: dataDir, tasks: ['click-button', 'enter-text'], trainSeeds: 5, evalSeeds: 3 });
const adapter = createMiniwobAdapter({ dataDir });
const environment = await adapter.connectReal({});
for await (const task of adapter.datasets.tasks.load(dataDir, { splits: ['eval'], limit: 1 })) {
  const observation = await environment.reset(task); // the page's AX tree, its instruction first
  console.log(await environment.step(observation.actions![0]!)); // reward 1 or -1 when the page ends the episode
}
await environment.close();
