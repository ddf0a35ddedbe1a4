// quickstart.mjs: DreamGym on the corridor domain (walk to the key, take it, open the door).
import { DreamGymLoop, HashingEmbedder, ReplayBuffer, RetrievalExperienceModel, SeededRandom, createLinearSoftmaxPolicy, evaluatePolicy, parseDreamGymConfig, trajectoryToTransitions } from '@dreamgym/core';
import { CorridorEnvironment, corridorTask, createCorridorAdapter } from '@dreamgym/core/testing';

const tasks = [[2, 4], [4, 1], [3, 0], [1, 3], [0, 2], [4, 4]].map(([keyRoom, doorRoom]) =>
  corridorTask({ length: 5, keyRoom, doorRoom }));
const random = new SeededRandom(7);

// Offline experience: random play in the real environment grounds the experience model.
const replayBuffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 256 }), phiWeights: { instruction: 1 } });
for (const task of tasks) for (let episode = 0; episode < 30; episode += 1) {
  const environment = new CorridorEnvironment({ maxSteps: 24 });
  let observation = await environment.reset(task), done = false;
  const steps = [];
  while (!done) {
    const action = random.choice(observation.actions);
    const result = await environment.step(action);
    steps.push({ observation, action, reward: result.reward, done: result.done });
    ({ observation, done } = result);
  }
  await replayBuffer.add(trajectoryToTransitions({ id: `${task.id}/${episode}`, task, steps, finalObservation: observation, source: 'real' }));
}

const config = parseDreamGymConfig({ seed: 1, iterations: 20, tasksPerIteration: 6, maxSteps: 16,
  trainer: { epochs: 2 }, policy: { hashBits: 14, learningRate: 0.1 } });
const policy = createLinearSoftmaxPolicy(config);
const success = async () => (await evaluatePolicy({ policy, tasks, maxSteps: 16, environment: 'real',
  environmentFactory: () => new CorridorEnvironment(), random })).metrics.successRate;
console.log(`real success before training: ${(100 * (await success())).toFixed(0)}%`);
const loop = new DreamGymLoop({ config, runDirectory: 'runs/corridor', components: {
  adapter: createCorridorAdapter(), policy, experienceModel: new RetrievalExperienceModel(), replayBuffer, seedTasks: tasks } });
await loop.run({ resume: true }); // trains on synthetic experience only; a finished run resumes as done
console.log(`real success after training: ${(100 * (await success())).toFixed(0)}%`);
