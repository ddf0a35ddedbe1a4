import { SeededRandom } from '@dreamgym/core';
import { createWebshopAdapter } from '@dreamgym/webshop';

const dataDir = `${process.env.DREAMGYM_DATA_DIR}/webshop`;
const adapter = createWebshopAdapter({ dataDir });
for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 1 })) {
  console.log(task.instruction, adapter.candidateActions(task.initialObservation!, []));
  console.log(adapter.mutateTask(task, new SeededRandom(0))?.instruction);
}
console.log(adapter.parseAction('Click[buy now]')); // { type: 'click', args: ['Buy Now'], text: 'click[Buy Now]' }
