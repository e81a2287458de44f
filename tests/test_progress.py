"""Progress bars as a log file sees them (stderr not a terminal)."""

import io

from seedbench.progress import progress_bar


def frames(buffer: io.StringIO) -> list[str]:
    return [frame for frame in buffer.getvalue().split("\r") if frame.strip()]


def test_a_bar_whose_total_comes_later_starts_the_log_with_that_total(monkeypatch):
    monkeypatch.setenv("SEEDBENCH_PROGRESS", "1")
    log = io.StringIO()
    with progress_bar(desc="self-analysis", unit="token", file=log) as bar:
        bar.reset(total=96)  # what the HF engine does once it knows its batches
        bar.update(96)
    assert frames(log) and all("/96" in frame for frame in frames(log)), frames(log)


def test_a_bar_with_its_total_shows_it_at_once(monkeypatch):
    monkeypatch.setenv("SEEDBENCH_PROGRESS", "1")
    log = io.StringIO()
    bar = progress_bar(total=5, desc="episodes", file=log)
    assert len(frames(log)) == 1 and frames(log)[0].startswith("episodes:") and "0/5" in frames(log)[0]
    bar.close()


def test_seedbench_progress_0_silences_every_bar(monkeypatch):
    monkeypatch.setenv("SEEDBENCH_PROGRESS", "0")
    log = io.StringIO()
    with progress_bar(total=5, desc="episodes", file=log) as bar:
        bar.update(5)
    assert log.getvalue() == ""
