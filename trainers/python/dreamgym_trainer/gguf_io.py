"""GGUF in and out of torch: load a llama-architecture GGUF (any quantisation gguf-py can
dequantise) as an fp32 `transformers` model, and write weights back as a GGUF that llama.cpp
loads, either the whole model (F32, F16, Q8_0 or the source's own types) or a LoRA adapter.

Only `gguf` (gguf-py), numpy, torch and transformers are needed; nothing from llama.cpp's
source tree. Metadata (tokenizer, chat template, hyper-parameters) is copied from the source
GGUF, so an exported file tokenises and templates exactly like the one it came from.

llama.cpp stores the query and key projections of llama models with their rows permuted for
its rotary embedding layout (`convert_hf_to_gguf.py`'s `LlamaModel.permute`); loading undoes
the permutation and exporting redoes it (for a LoRA adapter, on the B matrix, whose rows are
the projection's output rows).
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import gguf
import numpy as np
import torch

SUPPORTED_ARCHITECTURES = ("llama",)

# Whole-model export types: the tensor type of 2-D weights (norms stay F32).
EXPORT_TYPES = {
    "f32": gguf.GGMLQuantizationType.F32,
    "f16": gguf.GGMLQuantizationType.F16,
    "q8_0": gguf.GGMLQuantizationType.Q8_0,
}
_FILE_TYPES = {
    "f32": gguf.LlamaFileType.ALL_F32,
    "f16": gguf.LlamaFileType.MOSTLY_F16,
    "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
}


class GgufFormatError(ValueError):
    """The GGUF file cannot be used: unsupported architecture, missing metadata or tensors."""


@dataclass(frozen=True)
class GgufModelInfo:
    """What a loaded GGUF was: its path, architecture and shape."""

    path: str
    architecture: str
    block_count: int
    head_count: int
    head_count_kv: int
    vocab_size: int
    tensor_types: dict[str, str]
    bytes: int


_SCALAR_FORMATS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9


@dataclass
class GgufTensorInfo:
    """One tensor's entry in a GGUF file."""

    name: str
    shape: tuple[int, ...]  # numpy order (rows, columns): ggml's dimensions reversed
    tensor_type: gguf.GGMLQuantizationType
    offset: int  # absolute offset of the data in the file
    nbytes: int


@dataclass
class GgufFile:
    """A GGUF file scanned without decoding its large arrays: scalar metadata, where the
    key-value section lies (to copy it verbatim), and the tensor table.

    gguf-py's `GGUFReader` decodes every entry of the tokenizer's arrays into Python objects
    (tens of seconds for a 49k-token vocabulary on a busy CPU); this scan skips over them."""

    path: str
    version: int
    kv_count: int
    kv_start: int
    kv_end: int
    metadata: dict[str, Any]  # scalars and strings; arrays as ("array", element type, count)
    value_offsets: dict[str, tuple[int, int]]  # key -> (offset of the value, value type)
    alignment: int
    tensors: list[GgufTensorInfo]

    def get(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(key, default)

    def read_strings(self, key: str) -> list[str]:
        """A string array of the metadata (the vocabulary, `tokenizer.ggml.tokens`), decoded."""
        if key not in self.value_offsets:
            raise GgufFormatError(f"{self.path}: no metadata key {key}.")
        offset, value_type = self.value_offsets[key]
        with open(self.path, "rb") as handle:
            handle.seek(offset)
            element_type, count = struct.unpack("<IQ", handle.read(12))
            if value_type != _ARRAY or element_type != _STRING:
                raise GgufFormatError(f"{self.path}: {key} is not an array of strings.")
            values = []
            for _ in range(count):
                (length,) = struct.unpack("<Q", handle.read(8))
                values.append(handle.read(length).decode("utf-8", errors="replace"))
        return values

    def read_tensor(self, info: GgufTensorInfo) -> np.ndarray:
        """The tensor dequantised to float32, shape (rows, columns)."""
        raw = np.memmap(self.path, dtype=np.uint8, mode="r", offset=info.offset, shape=(info.nbytes,))
        if info.tensor_type == gguf.GGMLQuantizationType.F32:
            values = np.frombuffer(raw, dtype=np.float32).copy()
        elif info.tensor_type == gguf.GGMLQuantizationType.F16:
            values = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
        else:
            values = dequantize(np.array(raw), info.tensor_type)
        return values.reshape(info.shape)


def dequantize(raw: np.ndarray, tensor_type: gguf.GGMLQuantizationType) -> np.ndarray:
    """Blocks of a quantised tensor -> float32, flat. Q8_0, Q4_0 and Q4_1 (the common small
    model types) are decoded in whole-array numpy; other types go through gguf-py."""
    block, type_size = gguf.GGML_QUANT_SIZES[tensor_type]
    blocks = raw.reshape(-1, type_size)
    if tensor_type == gguf.GGMLQuantizationType.Q8_0:
        scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
        return (blocks[:, 2:].view(np.int8).astype(np.float32) * scale).reshape(-1)
    if tensor_type in (gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q4_1):
        has_min = tensor_type == gguf.GGMLQuantizationType.Q4_1
        scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
        nibbles = blocks[:, 4:] if has_min else blocks[:, 2:]
        quants = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32)
        if has_min:
            minimum = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
            return (quants * scale + minimum).reshape(-1)
        return ((quants - 8.0) * scale).reshape(-1)
    rows = blocks.reshape(-1, type_size)
    return np.asarray(gguf.quants.dequantize(rows.reshape(1, -1), tensor_type), dtype=np.float32).reshape(-1)


def scan_gguf(path: str | os.PathLike[str]) -> GgufFile:
    """Reads a GGUF file's header, metadata and tensor table (not the tensor data)."""
    path = str(path)
    with open(path, "rb") as handle:
        data = handle.read(16 << 20)
        offset = 0

        def need(count: int) -> None:
            nonlocal data
            while offset + count > len(data):
                more = handle.read(max(16 << 20, count))
                if not more:
                    raise GgufFormatError(f"{path}: the file ends inside its header; it is truncated.")
                data += more

        def unpack(fmt: str) -> Any:
            nonlocal offset
            size = struct.calcsize(fmt)
            need(size)
            (value,) = struct.unpack_from(fmt, data, offset)
            offset += size
            return value

        def string() -> str:
            nonlocal offset
            length = unpack("<Q")
            need(length)
            value = data[offset : offset + length].decode("utf-8", errors="replace")
            offset += length
            return value

        def skip_value(value_type: int) -> None:
            nonlocal offset
            if value_type == _STRING:
                length = unpack("<Q")
                need(length)
                offset += length
            elif value_type in _SCALAR_FORMATS:
                size = struct.calcsize(_SCALAR_FORMATS[value_type])
                need(size)
                offset += size
            else:
                raise GgufFormatError(f"{path}: unknown metadata value type {value_type} at byte {offset}.")

        need(24)
        if data[:4] != b"GGUF":
            raise GgufFormatError(f"{path}: not a GGUF file (magic {data[:4]!r}).")
        offset = 4
        version = unpack("<I")
        if version not in (2, 3):
            raise GgufFormatError(f"{path}: GGUF version {version} is not supported (2 or 3).")
        tensor_count = unpack("<Q")
        kv_count = unpack("<Q")
        kv_start = offset
        metadata: dict[str, Any] = {}
        value_offsets: dict[str, tuple[int, int]] = {}
        for _ in range(kv_count):
            key = string()
            value_type = unpack("<I")
            value_offsets[key] = (offset, value_type)
            if value_type == _ARRAY:
                element_type = unpack("<I")
                count = unpack("<Q")
                metadata[key] = ("array", element_type, count)
                if element_type in _SCALAR_FORMATS:
                    size = struct.calcsize(_SCALAR_FORMATS[element_type]) * count
                    need(size)
                    offset += size
                else:
                    for _ in range(count):
                        skip_value(element_type)
            elif value_type == _STRING:
                metadata[key] = string()
            elif value_type in _SCALAR_FORMATS:
                metadata[key] = unpack(_SCALAR_FORMATS[value_type])
            else:
                raise GgufFormatError(f"{path}: key {key} has unknown value type {value_type}.")
        kv_end = offset
        infos: list[tuple[str, tuple[int, ...], int, int]] = []
        for _ in range(tensor_count):
            name = string()
            dims = unpack("<I")
            shape = tuple(unpack("<Q") for _ in range(dims))
            tensor_type = unpack("<I")
            relative = unpack("<Q")
            infos.append((name, shape, tensor_type, relative))
        alignment = int(metadata.get("general.alignment", 32))
        data_start = offset + (-offset % alignment)
    tensors = []
    for name, ggml_shape, tensor_type, relative in infos:
        qtype = gguf.GGMLQuantizationType(tensor_type)
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        elements = int(np.prod(ggml_shape))
        tensors.append(
            GgufTensorInfo(
                name=name,
                shape=tuple(int(d) for d in reversed(ggml_shape)),
                tensor_type=qtype,
                offset=data_start + relative,
                nbytes=elements // block * type_size,
            )
        )
    return GgufFile(
        path=path,
        version=version,
        kv_count=kv_count,
        kv_start=kv_start,
        kv_end=kv_end,
        metadata=metadata,
        value_offsets=value_offsets,
        alignment=alignment,
        tensors=tensors,
    )


def _field_value(reader: GgufFile, key: str, default: Any = None) -> Any:
    value = reader.get(key)
    if value is None or (isinstance(value, tuple) and value and value[0] == "array"):
        return default
    return value


def _require(reader: GgufFile, key: str, path: str) -> Any:
    value = _field_value(reader, key)
    if value is None:
        raise GgufFormatError(f"{path}: the GGUF has no `{key}` metadata; it cannot be loaded as a model.")
    return value


def _arch_enum(name: str) -> gguf.MODEL_ARCH:
    for arch, arch_name in gguf.MODEL_ARCH_NAMES.items():
        if arch_name == name:
            return arch
    raise GgufFormatError(f"unknown GGUF architecture {name!r}")


def permute_rotary(weights: np.ndarray, n_head: int, n_head_kv: int | None = None) -> np.ndarray:
    """HF row order -> llama.cpp row order of a query or key projection (rows = outputs)."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def unpermute_rotary(weights: np.ndarray, n_head: int, n_head_kv: int | None = None) -> np.ndarray:
    """llama.cpp row order -> HF row order (the inverse of :func:`permute_rotary`)."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    dim = weights.shape[0] // n_head // 2
    return weights.reshape(n_head, dim, 2, *weights.shape[1:]).swapaxes(2, 1).reshape(weights.shape)


def _rotary_heads(gguf_name: str, head_count: int, head_count_kv: int) -> tuple[int, int] | None:
    """(n_head, n_head_kv) for the permutation of a query/key weight, else None."""
    if gguf_name.endswith("attn_q.weight"):
        return head_count, head_count
    if gguf_name.endswith("attn_k.weight"):
        return head_count, head_count_kv
    return None


def hf_to_gguf_names(hf_names: Iterable[str], architecture: str, block_count: int) -> dict[str, str]:
    """GGUF tensor name of each `transformers` parameter name that has one."""
    name_map = gguf.get_tensor_name_map(_arch_enum(architecture), block_count)
    mapping: dict[str, str] = {}
    for hf_name in hf_names:
        gguf_name = name_map.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if gguf_name is not None:
            mapping[hf_name] = gguf_name
    return mapping


def _config_from_reader(reader: GgufFile, path: str):
    from transformers import LlamaConfig

    arch = _require(reader, "general.architecture", path)
    if arch not in SUPPORTED_ARCHITECTURES:
        raise GgufFormatError(
            f"{path}: architecture {arch!r} is not supported by the DreamGym trainer "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)}: Llama, SmolLM, Mistral-style models)."
        )
    key = lambda suffix: f"{arch}.{suffix}"  # noqa: E731
    hidden = int(_require(reader, key("embedding_length"), path))
    heads = int(_require(reader, key("attention.head_count"), path))
    tokens = reader.get("tokenizer.ggml.tokens")
    vocab = int(_field_value(reader, key("vocab_size"), tokens[2] if isinstance(tokens, tuple) else 0))
    if vocab <= 0:
        raise GgufFormatError(f"{path}: no vocabulary size (`{arch}.vocab_size` or tokenizer tokens).")
    names = {tensor.name for tensor in reader.tensors}
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=int(_require(reader, key("feed_forward_length"), path)),
        num_hidden_layers=int(_require(reader, key("block_count"), path)),
        num_attention_heads=heads,
        num_key_value_heads=int(_field_value(reader, key("attention.head_count_kv"), heads)),
        head_dim=int(_field_value(reader, key("rope.dimension_count"), hidden // heads)),
        max_position_embeddings=int(_field_value(reader, key("context_length"), 2048)),
        rms_norm_eps=float(_field_value(reader, key("attention.layer_norm_rms_epsilon"), 1e-5)),
        rope_theta=float(_field_value(reader, key("rope.freq_base"), 10000.0)),
        tie_word_embeddings="output.weight" not in names,
        bos_token_id=_field_value(reader, "tokenizer.ggml.bos_token_id"),
        eos_token_id=_field_value(reader, "tokenizer.ggml.eos_token_id"),
        pad_token_id=_field_value(reader, "tokenizer.ggml.padding_token_id"),
        attention_bias=False,
        mlp_bias=False,
    )
    return arch, config


def load_gguf_model(
    path: str | os.PathLike[str],
    *,
    dtype: torch.dtype = torch.float32,
    log: Callable[[str], None] | None = None,
):
    """Loads a llama-architecture GGUF as a `transformers` `LlamaForCausalLM` in `dtype`.

    Quantised tensors are dequantised with gguf-py, so the returned weights are exactly the
    values llama.cpp multiplies with. Returns `(model, info)`.
    """
    from transformers import LlamaForCausalLM

    started = time.perf_counter()
    path = str(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"GGUF file {path} does not exist.")
    reader = scan_gguf(path)
    arch, config = _config_from_reader(reader, path)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    hf_names = [name for name, _ in model.named_parameters()]
    to_gguf = hf_to_gguf_names(hf_names, arch, config.num_hidden_layers)
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    state: dict[str, torch.Tensor] = {}
    for hf_name in hf_names:
        gguf_name = to_gguf.get(hf_name)
        if gguf_name is None or gguf_name not in tensors:
            raise GgufFormatError(f"{path}: no tensor for parameter {hf_name} (expected {gguf_name}).")
        values = reader.read_tensor(tensors[gguf_name])
        heads = _rotary_heads(gguf_name, config.num_attention_heads, config.num_key_value_heads)
        if heads is not None:
            values = unpermute_rotary(values, *heads)
        state[hf_name] = torch.from_numpy(np.ascontiguousarray(values)).to(dtype)
    model.load_state_dict(state, strict=False, assign=True)
    if config.tie_word_embeddings:
        model.tie_weights()
    # Rotary buffers were created on the meta device: rebuild them on the CPU.
    model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    model.eval()
    info = GgufModelInfo(
        path=path,
        architecture=arch,
        block_count=config.num_hidden_layers,
        head_count=config.num_attention_heads,
        head_count_kv=config.num_key_value_heads,
        vocab_size=config.vocab_size,
        tensor_types={tensor.name: tensor.tensor_type.name for tensor in reader.tensors},
        bytes=os.path.getsize(path),
    )
    if log:
        log(f"loaded {path} ({arch}, {config.num_hidden_layers} blocks) in {time.perf_counter() - started:.1f} s")
    return model, info


def _temporary_path(out: str) -> str:
    return f"{out}.tmp-{os.getpid()}"


def _gguf_string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return struct.pack("<Q", len(encoded)) + encoded


def export_full_gguf(
    weights: dict[str, torch.Tensor],
    source: str | os.PathLike[str] | GgufFile,
    out_path: str | os.PathLike[str],
    *,
    tensor_type: str = "f16",
) -> dict[str, Any]:
    """Writes `weights` (HF parameter names, e.g. a model's `state_dict()`) as a GGUF with the
    source GGUF's metadata and tensor list. `tensor_type`: `f32`, `f16`, `q8_0`, or `source`
    (each tensor re-quantised to its type in the source file).

    The source's key-value section is copied byte for byte (only `general.file_type` is
    patched in place), so the tokenizer and chat template are exactly the source's. Written
    to a temporary file and renamed: a reader never sees half a file. Returns
    `{path, bytes, seconds}`."""
    started = time.perf_counter()
    out_path = str(out_path)
    if tensor_type not in (*EXPORT_TYPES, "source"):
        raise ValueError(f"tensor_type must be one of {', '.join([*EXPORT_TYPES, 'source'])}, got {tensor_type!r}")
    reader = source if isinstance(source, GgufFile) else scan_gguf(source)
    arch, config = _config_from_reader(reader, reader.path)
    to_gguf = hf_to_gguf_names(weights.keys(), arch, config.num_hidden_layers)
    by_gguf = {gguf_name: hf_name for hf_name, gguf_name in to_gguf.items()}
    # Encode every tensor first: the table needs their types and sizes.
    encoded: list[tuple[GgufTensorInfo, gguf.GGMLQuantizationType, np.ndarray]] = []
    for tensor in reader.tensors:
        hf_name = by_gguf.get(tensor.name)
        if hf_name is None:
            raise GgufFormatError(f"no weight for tensor {tensor.name} of {reader.path}")
        values = weights[hf_name].detach().to("cpu", torch.float32).numpy()
        if tuple(values.shape) != tensor.shape:
            raise GgufFormatError(
                f"weight {hf_name} has shape {tuple(values.shape)}, tensor {tensor.name} of {reader.path} {tensor.shape}"
            )
        heads = _rotary_heads(tensor.name, config.num_attention_heads, config.num_key_value_heads)
        if heads is not None:
            values = permute_rotary(values, *heads)
        values = np.ascontiguousarray(values)
        if values.ndim < 2:
            target = gguf.GGMLQuantizationType.F32
        elif tensor_type == "source":
            target = tensor.tensor_type
        else:
            target = EXPORT_TYPES[tensor_type]
        if target == gguf.GGMLQuantizationType.F32:
            data = values
        elif target == gguf.GGMLQuantizationType.F16:
            data = values.astype(np.float16)
        else:
            data = gguf.quants.quantize(values, target)
        encoded.append((tensor, target, data))
    with open(reader.path, "rb") as handle:
        handle.seek(reader.kv_start)
        kv = bytearray(handle.read(reader.kv_end - reader.kv_start))
    file_type = _FILE_TYPES[tensor_type] if tensor_type != "source" else reader.get("general.file_type")
    if file_type is not None and "general.file_type" in reader.value_offsets:
        value_offset, value_type = reader.value_offsets["general.file_type"]
        fmt = _SCALAR_FORMATS[value_type]
        struct.pack_into(fmt, kv, value_offset - reader.kv_start, int(file_type))
    alignment = reader.alignment
    table = bytearray()
    relative = 0
    for tensor, target, data in encoded:
        table += _gguf_string(tensor.name)
        table += struct.pack("<I", len(tensor.shape))
        for dim in reversed(tensor.shape):
            table += struct.pack("<Q", dim)
        table += struct.pack("<I", int(target))
        table += struct.pack("<Q", relative)
        relative += data.nbytes + (-data.nbytes % alignment)
    header = b"GGUF" + struct.pack("<IQQ", 3, len(encoded), reader.kv_count)
    temporary = _temporary_path(out_path)
    with open(temporary, "wb") as out:
        out.write(header)
        out.write(kv)
        out.write(table)
        position = len(header) + len(kv) + len(table)
        out.write(b"\0" * (-position % alignment))
        for _, _, data in encoded:
            out.write(data.tobytes())
            out.write(b"\0" * (-data.nbytes % alignment))
    os.replace(temporary, out_path)
    return {"path": out_path, "bytes": os.path.getsize(out_path), "seconds": time.perf_counter() - started}


def lora_module_gguf_name(module_name: str, architecture: str, block_count: int) -> str | None:
    """GGUF base tensor name (`blk.3.attn_q.weight`) of a LoRA-wrapped linear module name
    such as `base_model.model.model.layers.3.self_attn.q_proj`."""
    name = module_name
    for prefix in ("base_model.model.",):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    mapping = hf_to_gguf_names([f"{name}.weight"], architecture, block_count)
    return mapping.get(f"{name}.weight")


def export_lora_gguf(
    adapters: dict[str, tuple[torch.Tensor, torch.Tensor]],
    alpha: float,
    source: str | os.PathLike[str] | GgufFile,
    out_path: str | os.PathLike[str],
    tensor_type: str = "f32",
) -> dict[str, Any]:
    """Writes LoRA adapters as a llama.cpp adapter GGUF.

    `adapters` maps a wrapped module's name (`...layers.3.self_attn.q_proj`) to its
    `(lora_A, lora_B)` weights, shapes `(r, in)` and `(out, r)`. llama.cpp scales the product
    by `alpha / r`, as peft does. `tensor_type`: `f32` (default) or `f16` (half the size).
    Returns `{path, bytes, seconds}`."""
    if tensor_type not in ("f32", "f16"):
        raise ValueError(f"a LoRA adapter GGUF is f32 or f16, got {tensor_type!r}")
    numpy_type = np.float32 if tensor_type == "f32" else np.float16
    started = time.perf_counter()
    out_path = str(out_path)
    reader = source if isinstance(source, GgufFile) else scan_gguf(source)
    arch, config = _config_from_reader(reader, reader.path)
    source_names = {tensor.name for tensor in reader.tensors}
    temporary = _temporary_path(out_path)
    writer = gguf.GGUFWriter(temporary, arch)
    writer.add_string(gguf.Keys.General.TYPE, gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    for module_name, (lora_a, lora_b) in sorted(adapters.items()):
        base = lora_module_gguf_name(module_name, arch, config.num_hidden_layers)
        if base is None or base not in source_names:
            raise GgufFormatError(f"LoRA module {module_name} has no tensor in {reader.path} (looked for {base}).")
        a = lora_a.detach().to("cpu", torch.float32).numpy()
        b = lora_b.detach().to("cpu", torch.float32).numpy()
        heads = _rotary_heads(base, config.num_attention_heads, config.num_key_value_heads)
        if heads is not None:
            b = permute_rotary(b, *heads)
        writer.add_tensor(f"{base}.lora_a", np.ascontiguousarray(a, dtype=numpy_type))
        writer.add_tensor(f"{base}.lora_b", np.ascontiguousarray(b, dtype=numpy_type))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(temporary, out_path)
    return {"path": out_path, "bytes": os.path.getsize(out_path), "seconds": time.perf_counter() - started}


def read_gguf_tensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Every tensor of a GGUF, dequantised to float32, shape (rows, columns), by GGUF name.
    For tests and diagnostics."""
    reader = scan_gguf(path)
    return {tensor.name: reader.read_tensor(tensor) for tensor in reader.tensors}
