/**
 * The WebShop parts of DreamGym's prompts. The page texts quoted here are the adapter's
 * state texts (`renderWebshopPage`), which real pages, recorded sessions and synthetic
 * states share.
 */
import type { DomainPrompts } from '@dreamgym/core';

const ENVIRONMENT_DESCRIPTION = `WebShop: a simulated e-commerce site with about a million Amazon products. The agent gets a shopping instruction ("i need a red stereo sound earbud headphones, and price lower than 50.00 dollars") and must search, open products, choose options and buy the product that best fits.

States are the current page as a list of its elements; every clickable element is written in square brackets:
- Start: "WebShop search page." then "Search bar: search[<query>]". Only this page has the search bar.
- After search[query]: "Search results for "query", page 1 (50 results)." then "[Back to Search] [Next >]" (and "[< Prev]" after page 1), then up to ten products, one per line: "[B08CZ8WS38] Otium Wireless Earbuds, Bluetooth 5.0 ... | $4.89".
- After click[ASIN] on a result: "Item B08CZ8WS38: <title>", "Price: $4.89. Rating: N.A.", "[Back to Search] [< Prev]", one line per option ("color: [black] [red] [white]", "size: [small] [large]"), then "[Description] [Features] [Reviews] [Buy Now]".
- After clicking an option value: the same item page with "(selected: red)" after that option.
- After click[Description], click[Features] or click[Reviews]: "Description of item B08CZ8WS38:" and the text, then "[Back to Search] [< Prev]". click[< Prev] returns to the item page (from an item page: to the results).
- After click[Buy Now]: "Purchase complete. Score: 0.75 (1 is a perfect match)." and the episode ends. The score is the share of the instruction's attributes, options and price bound the purchase meets, times a product-type factor (0 to 1 for a wrong kind of product).
An action that is not on the page (clicking a value the page does not show, searching without the search bar) changes nothing. The episode succeeds, with reward 1, only when the purchase scores 1; every other step has reward 0.`;

const AGENT_INSTRUCTIONS = `You shop on WebShop by writing exactly one action per turn:
- search[query] on the search page: a few product words from the instruction (type, key attributes), not the whole sentence;
- click[value] with a value shown in square brackets on the current page: a product's ASIN (click[B08CZ8WS38]), an option value (click[red]), or a button (click[Next >], click[< Prev], click[Back to Search], click[Description], click[Buy Now]).
Open promising products, choose every option the instruction names (colour, size, count) before buying, check the price against the bound, and end with click[Buy Now].
Example for "i need a red stereo sound earbud headphones, and price lower than 50.00 dollars": search[red stereo sound earbud headphones] -> click[B08CZ8WS38] -> click[red] -> click[Buy Now].`;

const TASK_GENERATION_GUIDANCE = `A good new WebShop instruction asks for one kind of product in the words shoppers use ("i need a long lasting lipstick in matte red, and price lower than 30.00 dollars"): a product type, one to three attributes WebShop products carry (long lasting, easy to clean, gluten free, high quality, machine wash...), optional option values (a colour, a size such as x-large or 8.5, a count such as pack of 2) and a price bound "and price lower than N.00 dollars" with N a multiple of 10. Keep it satisfiable by an ordinary product: change one attribute to a related one, the colour, the size or the price bound to make a task slightly harder or easier than those the agent already solves.`;

/** The WebShop domain prompts. */
export const webshopPrompts: DomainPrompts = {
  environmentDescription: ENVIRONMENT_DESCRIPTION,
  agentInstructions: AGENT_INSTRUCTIONS,
  taskGenerationGuidance: TASK_GENERATION_GUIDANCE,
};
