/**
 * The WebArena-Lite parts of DreamGym's prompts.
 */
import { WEB_ACTION_FORMS } from '@dreamgym/browser';
import type { DomainPrompts } from '@dreamgym/core';

const ENVIRONMENT_DESCRIPTION = `WebArena-Lite: realistic tasks on five self-hosted websites: an online shop (OneStopShop, Magento storefront), the shop's admin panel (orders, products, reviews, reports), a GitLab instance (repositories, issues, merge requests, members), a Reddit-like forum (Postmill: forums, posts, comments, votes) and OpenStreetMap (search, directions); some tasks also use a Kiwix Wikipedia. A task either asks for information (the agent answers it with "stop [answer]") or asks for a change on a site (an order, a post, a repository setting), which is checked on the live site afterwards.

A state is the current page as its accessibility tree, under a tab header and the URL:
Tab 0 (current): Orders | Tab 1: Dashboard
URL: http://shop.example/admin/sales/order/

[1] link 'Dashboard' url: /admin/dashboard/
[2] searchbox 'Search by keyword' focused: true
[3] button 'Filters' expanded: false
[4] table
	[5] row
		[6] cell '000000180'
StaticText 'Showing 1 to 20 of 308 records'
Each element line is "[id] role 'name'" with properties (value, checked, expanded, selected, disabled, required, focused, url); static text has no id; indentation is nesting. Ids stay the same for an element across steps; new elements get new ids. After an action the page changes as a browser would: a click on a link loads its page (new URL, new elements), typing fills the field (its value shows), a form submission shows results or errors, scrolling reveals other parts when the state shows only the viewport. An action that refers to an id not on the page fails with "Action failed: ...". The episode succeeds, with reward 1, only when the final answer or the final state of the site is what the task asked for; every other step has reward 0.`;

const AGENT_INSTRUCTIONS = `You complete tasks on websites by writing exactly one action per turn, using the element ids of the current state:
${WEB_ACTION_FORMS.map((form) => `- ${form}`).join('\n')}
In "type [id] [text] [1]", 1 presses Enter after the text (0 does not). "press" takes keys such as Enter or Control+a. "stop [answer]" ends the task: give the answer the task asks for, "stop [N/A]" when it cannot be done, "stop []" when the task needed no answer.
Example for "How many open issues has the a11yproject repository?": click [14] (the a11yproject.com project link) -> click [52] (Issues) -> stop [12].`;

const TASK_GENERATION_GUIDANCE = `A good new WebArena-Lite task keeps the style of the existing ones: one concrete goal on one of the sites (shop, shop admin, GitLab, forum, map), phrased as a user would ("What is the price range of ...", "Create an issue in ... titled ...", "Show me the route from ... to ...", "Like all submissions created by ... in subreddit ..."), with names, numbers and dates that plausibly exist on that site (products of the shop's catalog, the repositories and users of the GitLab instance, the forums of the Reddit clone, real places on the map). Vary one entity, quantity or period of a task the agent already solves to make a slightly harder or easier one; an information task must have one checkable answer.`;

/** The WebArena-Lite domain prompts. */
export const webarenaLitePrompts: DomainPrompts = {
  environmentDescription: ENVIRONMENT_DESCRIPTION,
  agentInstructions: AGENT_INSTRUCTIONS,
  taskGenerationGuidance: TASK_GENERATION_GUIDANCE,
};
