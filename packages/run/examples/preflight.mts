import { formatPreflight, preflightVerdict } from '@dreamgym/core/eval';
import { setUpDomain } from '@dreamgym/run';

// ALFWorld's tasks and offline episodes, its replay buffer and its judged embedded experience model.
const domain = await setUpDomain({ domain: 'alfworld', data: `${process.env.DREAMGYM_DATA_DIR}/alfworld`, trainTasks: 8, offlineLimit: 400 });
console.log(`${domain.seedTasks.length} tasks, ${domain.offlineTransitions} offline transitions, experience model ${domain.experienceModel.id}`);
// Can its synthetic environment be trusted? The outcome judge, trained without a fifth of the tasks, on those.
const offline = domain.experienceGrounding.preflight(domain.offlineTrajectories);
for (const line of formatPreflight(preflightVerdict(offline ? { offline } : {}))) console.log(line);
await domain.replayBuffer.close();
