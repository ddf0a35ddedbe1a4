/**
 * The ALFWorld parts of DreamGym's prompts. The engine texts quoted here are the ones
 * ALFWorld's game grammar produces and the expert trajectories show.
 */
import type { DomainPrompts } from '@dreamgym/core';

const ENVIRONMENT_DESCRIPTION = `ALFWorld: text-based household tasks on the TextWorld ALFRED engine. The agent stands in a room (kitchen, bedroom, bathroom or living room) full of numbered receptacles and objects, and must accomplish one task of six types: put an object in or on a receptacle; put two objects of one type in a receptacle; clean (at a sinkbasin), heat (with a microwave) or cool (with a fridge) an object and then put it in a receptacle; or look at an object under a desklamp or floorlamp.

States are short English texts in fixed engine phrasings:
- Start: "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a countertop 1, a drawer 1, a fridge 1, a microwave 1, and a sinkbasin 1."
- After "go to R" on an open surface: "On the countertop 1, you see a apple 1, a knife 2, and a mug 1." or "On the shelf 1, you see nothing."
- After "go to R" on a closed container: "The drawer 1 is closed." After "open R": "You open the drawer 1. The drawer 1 is open. In it, you see a creditcard 2." After "close R": "You close the drawer 1."
- "take O from R": "You pick up the apple 1 from the countertop 1." (the agent holds one object at a time).
- "put O in/on R": "You put the apple 1 in/on the fridge 1."
- "clean/heat/cool O with R": "You clean the apple 1 using the sinkbasin 1.", "You heat the apple 1 using the microwave 1.", "You cool the apple 1 using the fridge 1."
- "use O": "You turn on the desklamp 1."
- "examine O": "There's nothing special about cd 3." or "This is a hot apple.". "inventory": "You are carrying: a apple 1." or "You are not carrying anything."
- Any command that is not possible in the current state (wrong place, closed container, empty hands, unknown object) gives exactly "Nothing happens." and changes nothing.
Objects are only where the engine has said they are; a receptacle's contents are unknown until the agent goes there (and opens it, if it is closed). The episode succeeds, with reward 1, on the step that completes the task; every other step has reward 0.`;

const AGENT_INSTRUCTIONS = `You act in ALFWorld by writing exactly one command per turn, in lower case, naming objects and receptacles with their number exactly as the game shows them (apple 1, countertop 2). Commands:
- go to R
- open R / close R
- take O from R (your hands must be empty; you hold one object at a time)
- put O in/on R (write "in/on" literally)
- clean O with R (a sinkbasin), heat O with R (a microwave), cool O with R (a fridge): you must hold O and stand at R
- use O (switch on a desklamp or floorlamp)
- examine X, inventory, look
"Nothing happens." means the command was not possible here: change plan instead of repeating it.
Example for "put a clean mug in coffeemachine.": go to countertop 1 -> take mug 1 from countertop 1 -> go to sinkbasin 1 -> clean mug 1 with sinkbasin 1 -> go to coffeemachine 1 -> put mug 1 in/on coffeemachine 1.`;

const TASK_GENERATION_GUIDANCE = `A good new ALFWorld task keeps one of the six task types and ALFWorld's phrasing ("put some X on Y.", "put a X in Y.", "put a clean X in Y.", "heat some X and put it in Y.", "put a cool X in Y.", "put two X in Y.", "look at X under the desklamp."), uses object and receptacle types without numbers (apple, countertop), and is achievable in the given room: the receptacle must be among those the room description lists, the object must be something that can be picked up and plausibly found in that room, and the step (clean, heat, cool) must fit the object (food and dishes can be heated or cooled; dishes, cutlery, food and cloths can be cleaned). Vary the object, the receptacle, or the task type to make tasks slightly harder or easier than the ones the agent already solves.`;

/** The ALFWorld domain prompts. */
export const alfworldPrompts: DomainPrompts = {
  environmentDescription: ENVIRONMENT_DESCRIPTION,
  agentInstructions: AGENT_INSTRUCTIONS,
  taskGenerationGuidance: TASK_GENERATION_GUIDANCE,
};
