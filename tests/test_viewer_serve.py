"""`seedbench view --serve` serves the viewer folder and nothing else: a symlink planted in RUN/viewer/ that
leads out of it is 404, a name too long for the file system is 400 without a traceback, and folders are
never listed. The server runs in this process on 127.0.0.1."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

from seedbench.viewer import viewer_handler


@pytest.fixture
def served(tmp_path):
    viewer = tmp_path / "run" / "viewer"
    (viewer / "data").mkdir(parents=True)
    (viewer / "index.html").write_text("<title>seedbench viewer</title>")
    (viewer / "data" / "chunk_0.js").write_text("chunk")
    secret = tmp_path / "secret.txt"
    secret.write_text("private key")
    (viewer / "leak.txt").symlink_to(secret)
    (viewer / "outside").symlink_to(tmp_path)
    (viewer / "empty").mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), viewer_handler(viewer))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", viewer
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def test_the_viewer_files_are_served(served):
    base, _ = served
    assert _get(f"{base}/index.html") == (200, "<title>seedbench viewer</title>")
    assert _get(f"{base}/") == (200, "<title>seedbench viewer</title>")
    assert _get(f"{base}/data/chunk_0.js") == (200, "chunk")


@pytest.mark.parametrize("path", ["/leak.txt", "/outside/secret.txt", "/outside/", "/empty/", "/data/",
                                  "/../secret.txt", "/%2e%2e/secret.txt", "/missing.png"])
def test_links_out_of_the_folder_and_listings_are_not_found(served, path):
    base, _ = served
    assert _get(base + path) == (404, "")


def test_a_planted_index_link_is_not_followed(served, tmp_path):
    base, viewer = served
    (viewer / "index.html").unlink()
    (viewer / "index.html").symlink_to(tmp_path / "secret.txt")
    assert _get(f"{base}/") == (404, "")
    assert _get(f"{base}/index.html") == (404, "")


def test_a_name_too_long_for_the_file_system_is_a_clean_400(served, capfd):
    base, _ = served
    assert _get(f"{base}/frames/{'a' * 5000}.png") == (400, "")
    assert _get(f"{base}/index.html") == (200, "<title>seedbench viewer</title>")  # the server still answers
    assert "Traceback" not in capfd.readouterr().err


def test_a_frame_name_too_long_for_the_file_system_is_dropped_with_the_warning(tmp_path, capsys):
    from tests.test_untrusted_paths import run_with_frames, shown_images

    from seedbench.viewer.build import build_viewer

    run = run_with_frames(tmp_path / "run", [f"frames/{'a' * 5000}.png"])
    page = build_viewer(run, None)
    assert shown_images(page.parent) == [None]
    assert "1 step frame(s) not shown" in capsys.readouterr().err
