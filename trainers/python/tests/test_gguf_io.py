"""GGUF in and out: the dequantiser against gguf-py, the load -> export round trip against the
source file, and LoRA adapters in llama.cpp's layout."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch

from dreamgym_trainer.gguf_io import (
    GgufFormatError,
    dequantize,
    export_full_gguf,
    export_lora_gguf,
    load_gguf_model,
    permute_rotary,
    read_gguf_tensors,
    scan_gguf,
    unpermute_rotary,
)


@pytest.fixture(scope="module")
def loaded(model_path):
    model, info = load_gguf_model(model_path)
    return model, info


@pytest.mark.parametrize(
    "qtype",
    [gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q4_1],
)
def test_dequantize_matches_gguf_py(qtype):
    values = np.random.default_rng(0).normal(size=(8, 64)).astype(np.float32)
    blocks = gguf.quants.quantize(values, qtype)
    assert np.array_equal(dequantize(blocks.reshape(-1), qtype).reshape(8, 64), gguf.quants.dequantize(blocks, qtype))


def test_rotary_permutation_round_trips():
    weights = np.arange(12 * 4, dtype=np.float32).reshape(12, 4)
    for heads, kv_heads in ((3, 3), (3, 1)):
        rows = 12 if kv_heads == heads else 4
        block = weights[:rows]
        assert np.array_equal(unpermute_rotary(permute_rotary(block, heads, kv_heads), heads, kv_heads), block)
        assert not np.array_equal(permute_rotary(block, heads, kv_heads), block)


def test_scan_reads_metadata_without_decoding_arrays(model_path):
    file = scan_gguf(model_path)
    assert file.get("general.architecture") == "llama"
    assert file.get("llama.block_count") == 30
    assert file.get("tokenizer.ggml.tokens")[:1] == ("array",)
    assert file.get("tokenizer.ggml.tokens")[2] == 49152
    assert len(file.tensors) == 272


def test_load_then_export_reproduces_the_source(loaded, model_path, tmp_path):
    model, info = loaded
    assert info.architecture == "llama" and info.block_count == 30
    weights = dict(model.named_parameters())
    exact = export_full_gguf(weights, model_path, tmp_path / "f32.gguf", tensor_type="f32")
    assert exact["bytes"] > 500_000_000
    source = read_gguf_tensors(model_path)
    written = read_gguf_tensors(tmp_path / "f32.gguf")
    assert sorted(source) == sorted(written)
    for name in source:
        assert np.array_equal(source[name], written[name]), name
    # Re-quantised to the source's own types, the file is the source byte for byte.
    export_full_gguf(weights, model_path, tmp_path / "source.gguf", tensor_type="source")
    assert (tmp_path / "source.gguf").read_bytes() == model_path.read_bytes()
    # Metadata is copied (tokenizer, template); file type follows the tensors.
    reader = gguf.GGUFReader(str(tmp_path / "f32.gguf"))
    assert reader.fields["general.file_type"].contents() == int(gguf.LlamaFileType.ALL_F32)
    assert reader.fields["tokenizer.chat_template"].contents().startswith("{% for message in messages %}")


def test_lora_adapter_layout(loaded, model_path, tmp_path):
    model, _ = loaded
    rank = 4
    generator = torch.Generator().manual_seed(0)
    q_proj = model.model.layers[3].self_attn.q_proj.weight
    k_proj = model.model.layers[3].self_attn.k_proj.weight
    adapters = {
        "base_model.model.model.layers.3.self_attn.q_proj": (
            torch.randn(rank, q_proj.shape[1], generator=generator),
            torch.randn(q_proj.shape[0], rank, generator=generator),
        ),
        "model.layers.3.self_attn.k_proj": (
            torch.randn(rank, k_proj.shape[1], generator=generator),
            torch.randn(k_proj.shape[0], rank, generator=generator),
        ),
    }
    export_lora_gguf(adapters, 8.0, model_path, tmp_path / "adapter.gguf")
    reader = gguf.GGUFReader(str(tmp_path / "adapter.gguf"))
    assert reader.fields["general.type"].contents() == "adapter"
    assert reader.fields["adapter.type"].contents() == "lora"
    assert reader.fields["adapter.lora.alpha"].contents() == 8.0
    tensors = read_gguf_tensors(tmp_path / "adapter.gguf")
    assert sorted(tensors) == [
        "blk.3.attn_k.weight.lora_a",
        "blk.3.attn_k.weight.lora_b",
        "blk.3.attn_q.weight.lora_a",
        "blk.3.attn_q.weight.lora_b",
    ]
    a, b = adapters["model.layers.3.self_attn.k_proj"]
    assert np.array_equal(tensors["blk.3.attn_k.weight.lora_a"], a.numpy())
    # B's rows are the projection's outputs: permuted like the base weight (3 KV heads).
    assert np.array_equal(tensors["blk.3.attn_k.weight.lora_b"], permute_rotary(b.numpy(), 9, 3))


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOPE" + bytes(40))
    with pytest.raises(GgufFormatError, match="bad.gguf: not a GGUF file"):
        scan_gguf(bad)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (1).to_bytes(8, "little") + (5).to_bytes(8, "little"))
    with pytest.raises(GgufFormatError, match="truncated"):
        scan_gguf(truncated)
