"""Token ids back to text with the GGUF's own vocabulary, for reading what the model wrote
(parsing an action out of a generated answer) where no tokenizer library is at hand.

Byte-level BPE vocabularies (GPT-2 style, `tokenizer.ggml.model == "gpt2"`: SmolLM2, Llama 3,
Qwen) spell each byte as one printable character; decoding maps them back and reads UTF-8.
"""

from __future__ import annotations

from .gguf_io import GgufFile, GgufFormatError


def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable-character spelling of the 256 byte values, reversed."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes)}


class TokenText:
    """Decodes token ids of one GGUF's vocabulary."""

    def __init__(self, reader: GgufFile):
        model = reader.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise GgufFormatError(f"{reader.path}: decoding needs a byte-level BPE vocabulary (gpt2), got {model!r}.")
        self.tokens = reader.read_strings("tokenizer.ggml.tokens")
        self.bytes_of = _byte_decoder()

    def decode(self, ids: list[int]) -> str:
        out = bytearray()
        for token_id in ids:
            token = self.tokens[token_id]
            if all(char in self.bytes_of for char in token):
                out.extend(self.bytes_of[char] for char in token)
            else:  # special tokens (`<|im_end|>`) are stored as their text
                out.extend(token.encode("utf-8"))
        return out.decode("utf-8", errors="replace")
