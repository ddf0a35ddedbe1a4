/**
 * The MiniWoB++ parts of DreamGym's prompts.
 */
import type { DomainPrompts } from '@dreamgym/core';

const ENVIRONMENT_DESCRIPTION = `MiniWoB++: small web tasks, each on one page of about 160 by 210 pixels: click a button or link named in the instruction, focus or fill text fields, select options, open tabs or collapsible sections, close dialogs. Every instance of a task is drawn from a seed (other labels, positions and texts) and the page checks the outcome itself.

A state is the task page as its accessibility tree, under a tab header and the page's path; its first line is the instruction:
Tab 0 (current): Click Button Task
URL: /miniwob/click-button.html

StaticText 'Click on the "previous" button.'
[1] textbox
StaticText 'velit consectetur tristique'
[2] button 'Ok'
[3] button 'previous'
Each element line is "[id] role 'name'" with properties (value, checked, expanded, selected, focused); static text has no id; indentation is nesting. After an action the page changes as a browser would: a click checks a box or expands a section, typing fills the field (its value shows), a submit or the decisive click ends the episode. The episode ends as soon as the task is done right (reward 1) or wrong (reward -1, e.g. the wrong button clicked or a wrong text submitted); every other step has reward 0.`;

const AGENT_INSTRUCTIONS = `You complete a small web task by writing exactly one action per turn, using the element ids of the current state:
- click [id]
- type [id] [text] [0|1]   (1 presses Enter after the text)
- press [keys]
An element action may end with a note naming its element, as the candidate actions do: click [3] # button 'previous'. The id decides what is clicked.
Example for 'Enter "Kasey" into the text field and press Submit.': type [1] [Kasey] [0] # textbox -> click [2] # button 'Submit'.`;

const TASK_GENERATION_GUIDANCE = `A good new MiniWoB++ task is another instance of the same page: the same kind of instruction with another target that the page has (another button label, link text, tab number, the 1st field instead of the 3rd) or another text to enter, phrased exactly as the page phrases its instructions ('Click on the "Ok" button.', 'Focus into the 2nd input textbox.', 'Enter "Kasey" into the text field and press Submit.').`;

/** The MiniWoB++ domain prompts. */
export const miniwobPrompts: DomainPrompts = {
  environmentDescription: ENVIRONMENT_DESCRIPTION,
  agentInstructions: AGENT_INSTRUCTIONS,
  taskGenerationGuidance: TASK_GENERATION_GUIDANCE,
};
