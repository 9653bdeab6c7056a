"""The FAISS inner-product index: exact cosine search, saved and loaded, appended to."""

from pathlib import Path

import numpy as np

from sieveqa.retrieval.dense import DenseIndex


def test_search_save_load_and_add(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(20, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = DenseIndex.build([f"d{i}" for i in range(20)], vecs)
    hits = index.search_many(vecs[[3, 7]], 2)
    assert [h[0][0] for h in hits] == ["d3", "d7"]
    assert abs(hits[0][0][1] - 1.0) < 1e-5
    expected = np.argsort(-(vecs @ vecs[5]))[:5]
    assert [i for i, _ in index.search_many(vecs[5:6], 5)[0]] == [f"d{i}" for i in expected]
    index.save(tmp_path / "dense")
    loaded = DenseIndex.load(tmp_path / "dense")
    loaded.add(["new"], -vecs[5:6])
    assert len(loaded) == 21 and loaded.search_many(-vecs[5:6], 1)[0][0][0] == "new"
    assert loaded.search_many(vecs[:1], 100)[0][-1][0] in {"new", *(f"d{i}" for i in range(20))}
