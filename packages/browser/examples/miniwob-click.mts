import { BrowserEnvironment, miniwobTaskHooks, startMiniwobServer } from '@dreamgym/browser';

const server = await startMiniwobServer(); // html/ of the installed package, on 127.0.0.1
const environment = await BrowserEnvironment.create({ hooks: miniwobTaskHooks({ server, timeLimitMs: 600_000 }) });
const observation = await environment.reset({ id: 'click-test:3', domain: 'miniwob', instruction: 'click-test', origin: 'seed', meta: {} });
console.log(observation.text); // the page's accessibility tree: [1] button 'Click Me!' ...
const result = await environment.step('click [1]'); // reward: the page's own (raw) reward, done when the page says so
console.log(result.reward, result.done);
await environment.close();
await server.close();
