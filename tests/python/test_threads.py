"""One OCR object read from 8 threads at once gives what one thread gets."""

from concurrent.futures import ThreadPoolExecutor

from conftest import IMAGES


def summary(result):
    return [(l.text, l.score, l.box.tolist()) for l in result.lines]


def test_eight_threads_same_as_one(ocr):
    work = [str(p) for p in IMAGES] * 4
    alone = {p: summary(ocr(p)) for p in map(str, IMAGES)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(ocr, work))
    assert len(results) == len(work)
    for path, result in zip(work, results):
        assert summary(result) == alone[path], path
