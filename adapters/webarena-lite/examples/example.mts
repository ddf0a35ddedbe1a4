import { SeededRandom } from '@dreamgym/core';
import { createWebarenaLiteAdapter } from '@dreamgym/webarena-lite';

const dataDir = `${process.env.DREAMGYM_DATA_DIR}/webarena-lite`;
const adapter = createWebarenaLiteAdapter({ dataDir, sites: { shopping: 'http://127.0.0.1:7770' } });
for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 2 })) {
  console.log(task.id, task.instruction, task.meta.startUrl);
  console.log(adapter.mutateTask(task, new SeededRandom(0))?.instruction);
}
console.log(adapter.parseAction('type [13] [red shoes] [1]')); // { type: 'type', args: ['13', 'red shoes', '1'], ... }
