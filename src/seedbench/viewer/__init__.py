"""``seedbench view RUN [--out DIR] [--serve]``: the trajectory-and-skill viewer of a run (docs/viewer.md).

`seedbench.viewer.build.build_viewer` writes a static page and its data chunks; ``--serve`` also serves
them on localhost (the page works from ``file://`` as well)."""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="seedbench view", description="Build (and optionally serve) the HTML "
                                     "viewer of a run: iterations → groups → episodes, skills and token signals.")
    parser.add_argument("run", help="run directory (written by `seedbench run`)")
    parser.add_argument("--out", help="output directory (default RUN/viewer)")
    parser.add_argument("--serve", action="store_true", help="serve the viewer on http://127.0.0.1:PORT until Ctrl-C")
    parser.add_argument("--port", type=int, default=8765, help="port for --serve (default 8765)")
    args = parser.parse_args(argv)
    from seedbench.viewer.build import build_viewer

    page = build_viewer(args.run, args.out)
    size = sum(p.stat().st_size for p in page.parent.rglob("*") if p.is_file())
    print(f"seedbench: viewer written: {page} ({size / 1e6:.2f} MB with its data); open it in a browser")
    if args.serve:
        serve(page.parent, args.port)
    return 0


def serve(directory: Path, port: int) -> None:
    """Serve `directory` on localhost only (the run's text is not meant for the network)."""
    from http.server import ThreadingHTTPServer

    with ThreadingHTTPServer(("127.0.0.1", port), viewer_handler(directory)) as server:
        print(f"seedbench: serving http://127.0.0.1:{port}/index.html (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def viewer_handler(directory: Path) -> type:
    """A request handler that serves the files of `directory` and nothing else.

    The viewer folder sits inside a run directory, which people share, so it may hold planted symlinks: a
    request whose file resolves outside `directory` (a link, ``..``) is answered 404, as is a directory
    (no listings); a name the file system refuses (longer than its limit) is 400. Nothing is followed out."""
    import os
    from http import HTTPStatus
    from http.server import SimpleHTTPRequestHandler

    root = Path(directory).resolve()

    class ViewerRequestHandler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def send_head(self):
            path = self.translate_path(self.path)
            try:
                if os.path.isdir(path):  # a folder is its page, checked like any file
                    path = os.path.join(path, "index.html")
                target = Path(os.path.realpath(path))
                servable = target.is_relative_to(root) and target.is_file()
            except (OSError, ValueError):  # a name too long for the file system, a NUL byte
                self.send_error(HTTPStatus.BAD_REQUEST, "Bad file name")
                return None
            if not servable:
                self.send_error(HTTPStatus.NOT_FOUND, "File not found")
                return None
            return super().send_head()

        def list_directory(self, path):  # never a listing
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None

    return ViewerRequestHandler
