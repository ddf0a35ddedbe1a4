import { SeededRandom } from '@dreamgym/core';
import { createAlfworldAdapter } from '@dreamgym/alfworld';

const dataDir = `${process.env.DREAMGYM_DATA_DIR}/alfworld`;
const adapter = createAlfworldAdapter({ dataDir });
for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 1 })) {
  console.log(task.instruction, adapter.candidateActions(task.initialObservation!, []));
  console.log(adapter.mutateTask(task, new SeededRandom(0))?.instruction);
}
console.log(adapter.parseAction('put apple 1 in/on fridge 1')); // { type: 'put', args: [...] }
