"""The runner's capture of a saved output: found from the log, decoded, hashed, referenced, deleted."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from runners.outputs import (
    capture_output,
    evenly_spaced,
    output_options,
    read_output,
    saved_paths,
)
from runners.parsing import ParsedRun, RunStatus, clean_console_text
from runners.payload import as_body, job_result
from runners.workloads.base import WorkloadResult
from wire.outputs import MAX_REFERENCE_SIDE

DATA = Path(__file__).parent.parent / "data" / "sglang"


def gradient(width: int, height: int, shift: int = 0) -> np.ndarray:
    """A deterministic RGB picture, ``uint8`` (height, width, 3)."""
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([(x + shift) % 256, (y * 2) % 256, (x + y + shift) % 256], axis=-1).astype(np.uint8)


def write_mp4(path: Path, frames: list[np.ndarray], fps: int = 8) -> None:
    """A small real H.264 video, as sglang saves one."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = "yuv420p"
        for pixels in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def decoded(png_base64: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(png_base64)))


def test_saved_paths_come_from_sglang_log_lines(tmp_path: Path) -> None:
    log = (
        "[03-12 01:07:56] Peak GPU memory: 64.44 GB\n"
        "[03-12 01:07:56] Output saved to outputs/Transform_into_anime_style_20260312-010712_73d9a86a.png\n"
        f"[03-12 01:07:57] Output saved to {tmp_path}/abs.mp4\n"
        "[03-12 01:07:57] Output saved to outputs/Transform_into_anime_style_20260312-010712_73d9a86a.png\n"
    )
    assert saved_paths(log, tmp_path) == [
        tmp_path / "outputs" / "Transform_into_anime_style_20260312-010712_73d9a86a.png",
        tmp_path / "abs.mp4",
    ]


def test_a_colour_coded_saved_line_as_sglang_0_5_23_prints_it_is_read_digested_and_deleted(
    tmp_path: Path,
) -> None:
    # The whole log, bytes as written: "Output saved to {CYAN}{path}{RESET}" (runtime/entrypoints/utils.py).
    log = (DATA / "qwen_image_0.5.23.log").read_text(encoding="utf-8")
    (line,) = [line for line in log.split("\n") if "Output saved to" in line]
    assert "Output saved to \x1b[1;36moutputs/" in line
    assert line.endswith(".png\x1b[0;0m")
    relative = clean_console_text(line).split("Output saved to ", 1)[1]
    pixels = gradient(48, 32)
    saved = tmp_path / relative
    saved.parent.mkdir()
    Image.fromarray(pixels).save(saved)
    assert saved_paths(log, tmp_path) == [saved]  # raw text is cleaned where it is read
    assert saved_paths(clean_console_text(log), tmp_path) == [saved]
    captured = capture_output(log, cwd=tmp_path, roots=(tmp_path,))
    assert captured.warnings == ()
    assert captured.output is not None
    assert captured.output.digest == "sha256:" + hashlib.sha256(b"48x32\n" + pixels.tobytes()).hexdigest()
    assert captured.output.file_name == saved.name
    assert not saved.exists()


def test_output_options_only_where_the_case_does_not_set_them(tmp_path: Path) -> None:
    both = [("save-output", True), ("output-path", str(tmp_path))]
    assert output_options({}, {"warmup": True}, tmp_path) == both
    assert output_options({}, {"save-output": True, "output-path": "mine"}, tmp_path) == []
    assert output_options({"save-output": True}, {}, tmp_path) == [("output-path", str(tmp_path))]


def test_an_image_is_hashed_over_its_pixels_and_deleted(tmp_path: Path) -> None:
    pixels = gradient(256, 256)
    saved = tmp_path / "outputs" / "fox.png"
    saved.parent.mkdir()
    Image.fromarray(pixels).save(saved)
    captured = capture_output("Output saved to outputs/fox.png\n", cwd=tmp_path, roots=(tmp_path,))
    assert captured.warnings == ()
    output = captured.output
    assert output is not None
    expected = hashlib.sha256(b"256x256\n" + pixels.tobytes()).hexdigest()
    assert output.digest == f"sha256:{expected}"
    assert (output.media, output.width, output.height, output.frame_count) == ("image", 256, 256, 1)
    assert output.file_name == "fox.png"
    (frame,) = output.frames
    assert np.array_equal(np.asarray(decoded(frame.png_base64).convert("RGB")), pixels)  # lossless
    assert not saved.exists()


def test_the_same_pixels_in_another_container_have_the_same_digest(tmp_path: Path) -> None:
    pixels = gradient(64, 32)
    Image.fromarray(pixels).save(tmp_path / "a.png")
    Image.fromarray(pixels).convert("RGBA").save(tmp_path / "b.png", compress_level=1)
    assert read_output(tmp_path / "a.png").digest == read_output(tmp_path / "b.png").digest


def test_a_big_image_gets_a_downscaled_reference(tmp_path: Path) -> None:
    Image.fromarray(gradient(1024, 512)).save(tmp_path / "big.png")
    output = read_output(tmp_path / "big.png")
    assert (output.width, output.height) == (1024, 512)
    assert decoded(output.frames[0].png_base64).size == (MAX_REFERENCE_SIDE, MAX_REFERENCE_SIDE // 2)


def test_a_video_keeps_eight_evenly_spaced_frames(tmp_path: Path) -> None:
    frames = [gradient(320, 192, shift=10 * i) for i in range(12)]
    write_mp4(tmp_path / "clip.mp4", frames)
    captured = capture_output(f"Output saved to {tmp_path}/clip.mp4\n", cwd=tmp_path, roots=(tmp_path,))
    output = captured.output
    assert output is not None, captured.warnings
    assert (output.media, output.width, output.height, output.frame_count) == ("video", 320, 192, 12)
    assert [f.frame_index for f in output.frames] == evenly_spaced(12, 8) == [0, 2, 3, 5, 6, 8, 9, 11]
    assert decoded(output.frames[0].png_base64).size == (256, 154)
    # The digest is of the decoded frames: decoding the same file twice agrees.
    write_mp4(tmp_path / "again.mp4", frames)
    assert read_output(tmp_path / "again.mp4").digest == output.digest
    assert not (tmp_path / "clip.mp4").exists()


def test_missing_or_unreadable_outputs_are_warnings(tmp_path: Path) -> None:
    nothing = capture_output("[DenoisingStage] finished\n", cwd=tmp_path, roots=(tmp_path,))
    assert nothing.output is None
    assert "no 'Output saved to' line" in nothing.warnings[0]
    gone = capture_output("Output saved to outputs/gone.png\n", cwd=tmp_path, roots=(tmp_path,))
    assert gone.output is None
    assert "gone.png" in gone.warnings[0]
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    (tmp_path / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 not really")
    for name in ("broken.png", "broken.mp4"):
        broken = capture_output(f"Output saved to {name}\n", cwd=tmp_path, roots=(tmp_path,))
        assert broken.output is None
        assert f"could not read the saved output {name}" in broken.warnings[0]
        assert not (tmp_path / name).exists()


def test_a_path_outside_the_job_is_neither_read_nor_deleted(tmp_path: Path) -> None:
    job, elsewhere = tmp_path / "job", tmp_path / "elsewhere"
    job.mkdir()
    elsewhere.mkdir()
    Image.fromarray(gradient(8, 8)).save(elsewhere / "keep.png")
    captured = capture_output("Output saved to ../elsewhere/keep.png\n", cwd=job, roots=(job,))
    assert captured.output is None
    assert "outside the job's directories" in captured.warnings[0]
    assert (elsewhere / "keep.png").exists()


@pytest.mark.parametrize(("count", "most", "expected"), [(1, 8, [0]), (8, 8, list(range(8))), (81, 8, None)])
def test_evenly_spaced_includes_both_ends(count: int, most: int, expected: list[int] | None) -> None:
    indices = evenly_spaced(count, most)
    assert indices[0] == 0
    assert indices[-1] == count - 1
    assert len(indices) == min(count, most)
    if expected is not None:
        assert indices == expected


def test_the_upload_carries_the_output_and_the_capture_warnings(tmp_path: Path) -> None:
    Image.fromarray(gradient(32, 32)).save(tmp_path / "fox.png")
    output = read_output(tmp_path / "fox.png")
    parsed = ParsedRun(status=RunStatus.OK, step_times_ms=(1.0, 1.1), warnings=("from the parser",))
    workload = WorkloadResult(command="toy", log_text="", output=output, warnings=("from the capture",))
    upload = job_result(parsed, attempt=1, workload=workload)
    assert upload.output == output
    assert upload.warnings == ["from the parser", "from the capture"]
    assert as_body(upload)["output"]["digest"] == output.digest
    assert job_result(parsed, attempt=1, workload=WorkloadResult(command="", log_text="")).output is None
