"""llama.cpp's Hugging Face -> GGUF converter, taken from the `llama-cpp-python` sdist on PyPI
(the only registry reachable here; no GitHub). Its `convert_hf_to_gguf.py` with the `gguf-py`
and `conversion` packages beside it is copied once into a cache folder and run from there; the
repository never holds its code.

Fetch it at set-up time (minutes: pip prepares the sdist's metadata):

    .venv/bin/python trainers/python/gguf_converter.py            # or --sdist PATH.tar.gz

The cache is `$DREAMGYM_TOOLS_DIR`, else `$XDG_CACHE_HOME/dreamgym/tools`, else
`~/.cache/dreamgym/tools`, with `llama-cpp-python-<version>/` inside.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
"""The sdist whose vendored llama.cpp converter is used (it must know the model architectures)."""

_MEMBERS = ("convert_hf_to_gguf.py", "gguf-py/", "conversion/")


class ConverterError(RuntimeError):
    """The converter could not be fetched, or a conversion failed."""


def tools_directory() -> Path:
    """Where fetched tools are cached."""
    if os.environ.get("DREAMGYM_TOOLS_DIR", "").strip():
        return Path(os.environ["DREAMGYM_TOOLS_DIR"]).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache).expanduser().resolve() / "dreamgym" / "tools"


def converter_directory(root: Path | None = None) -> Path:
    return (root or tools_directory()) / f"llama-cpp-python-{LLAMA_CPP_PYTHON_VERSION}"


def converter_script(root: Path | None = None) -> Path:
    return converter_directory(root) / "convert_hf_to_gguf.py"


def _download_sdist(scratch: Path, python: str) -> Path:
    command = [
        python, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
        "--no-binary", ":all:", f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", str(scratch),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    archives = sorted(scratch.glob("llama_cpp_python-*.tar.gz"))
    if result.returncode != 0 or not archives:
        raise ConverterError(
            f"pip download llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} failed "
            f"(exit {result.returncode}): {(result.stderr or result.stdout)[-1500:]}"
        )
    return archives[0]


def ensure_converter(
    root: Path | None = None,
    sdist: Path | None = None,
    python: str = sys.executable,
    log=print,
) -> Path:
    """The converter script, fetched into the cache first when it is not there."""
    script = converter_script(root)
    if script.is_file():
        return script
    target = converter_directory(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dreamgym-convert-") as scratch_name:
        scratch = Path(scratch_name)
        if sdist is None:
            log(f"fetching llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} (sdist) for llama.cpp's GGUF converter")
            sdist = _download_sdist(scratch, python)
        staging = scratch / "converter"
        with tarfile.open(sdist, "r:gz") as archive:
            for member in archive.getmembers():
                parts = member.name.split("/", 1)
                if len(parts) < 2 or not parts[1].startswith("vendor/llama.cpp/"):
                    continue
                inner = parts[1][len("vendor/llama.cpp/"):]
                if not any(inner == name or inner.startswith(name) for name in _MEMBERS):
                    continue
                if not (member.isfile() or member.isdir()):
                    continue
                member.name = inner
                archive.extract(member, staging, filter="data")
        if not (staging / "convert_hf_to_gguf.py").is_file():
            raise ConverterError(f"{sdist} holds no vendor/llama.cpp/convert_hf_to_gguf.py")
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(staging), str(target))
    log(f"GGUF converter ready: {script}")
    return script


def convert_to_gguf(
    hf_directory: Path,
    outfile: Path,
    outtype: str = "q8_0",
    script: Path | None = None,
    python: str = sys.executable,
) -> Path:
    """Writes `outfile` from a saved Hugging Face model folder (weights, config, tokenizer)."""
    script = script or ensure_converter()
    outfile.parent.mkdir(parents=True, exist_ok=True)
    command = [python, str(script), str(hf_directory), "--outfile", str(outfile), "--outtype", outtype]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not outfile.is_file():
        raise ConverterError(
            f"convert_hf_to_gguf.py failed (exit {result.returncode}) for {hf_directory}: "
            f"{(result.stderr or result.stdout)[-2000:]}"
        )
    return outfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", type=Path, help="a llama-cpp-python sdist already downloaded")
    parser.add_argument("--root", type=Path, help="tools cache folder (default as above)")
    args = parser.parse_args()
    print(ensure_converter(args.root, args.sdist))


if __name__ == "__main__":
    main()
