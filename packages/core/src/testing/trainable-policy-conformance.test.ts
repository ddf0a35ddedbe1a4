/** The `TrainablePolicy` contract on the embedded policy (the LLM policy runs it in @dreamgym/llama). */
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import { describeTrainablePolicyConformance } from './describe-conformance.js';

describeTrainablePolicyConformance('LinearSoftmaxPolicy', {
  createPolicy: async () =>
    new LinearSoftmaxPolicy({ random: new SeededRandom(5), hashBits: 14, initScale: 0.01 }),
});
