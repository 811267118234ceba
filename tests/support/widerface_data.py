"""Generated WIDER FACE inputs for the parity tests: the official ``.mat`` structures (scipy.io.savemat) and a
prediction folder, built for the evaluation script's quirks (see :func:`write_dataset`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SCORE_STYLES = ("probabilities", "grid", "logits", "above_one", "ties")
SUBSETS = ("easy", "medium", "hard")


def _cells(items: list) -> np.ndarray:
    out = np.empty((len(items), 1), dtype=object)
    for i, v in enumerate(items):
        out[i, 0] = v
    return out


def scores(rng: np.random.Generator, style: str, n: int) -> np.ndarray:
    if style == "probabilities":
        s = rng.random(n)
    elif style == "grid":  # a 0.001 grid holding 0 and 1
        s = rng.integers(0, 1001, n) / 1000
        s[: min(n, 2)] = [0.0, 1.0][: min(n, 2)]
    elif style == "logits":
        s = rng.normal(0.0, 3.0, n)
    elif style == "above_one":
        s = 1.0 + rng.random(n) * 9.0
    elif style == "ties":
        s = rng.choice(np.array([0.25, 0.5, 0.5, 0.75]), n)
    else:
        raise ValueError(style)
    return rng.permutation(s)


def _faces(rng: np.random.Generator, n: int) -> np.ndarray:
    xy = rng.integers(0, 200, (n, 2)).astype(np.float64)
    wh = rng.choice(np.array([0, 1, 2, 3, 5, 9, 15, 29, 61]), (n, 2)).astype(np.float64)  # zero-width, tiny, odd
    return np.hstack([xy, wh])


def _predictions(rng: np.random.Generator, faces: np.ndarray, n: int) -> np.ndarray:
    rows = []
    for _ in range(n):
        kind = rng.integers(0, 5)
        if len(faces) and kind < 3:
            x, y, w, h = faces[rng.integers(0, len(faces))]
            if kind == 0:  # the face itself (IoU 1)
                rows.append([x, y, w, h])
            elif kind == 1 and h % 2 == 1:  # half the height with +1 widths: IoU exactly 0.5
                rows.append([x, y, w, (h + 1) / 2 - 1])
            else:  # jittered
                dx, dy = rng.integers(-3, 4, 2)
                rows.append([x + dx, y + dy, max(w + rng.integers(-2, 3), 0), max(h + rng.integers(-2, 3), 0)])
        else:
            rows.append([*rng.integers(0, 200, 2), *rng.integers(0, 40, 2)])
    return np.array(rows, np.float64).reshape(-1, 4)


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


def write_dataset(root: Path, seed: int, style: str, n_events: int = 4, n_images: int = 6) -> tuple[Path, Path]:
    """``(pred_dir, gt_dir)`` under ``root``. Quirks: tiny and zero-width faces, faces outside a subset (keep
    lists are random subsets, easy within medium within hard), images without faces ((0, 0) or (0, 4)) and
    without predictions, keep lists empty as (0, 1) or (0, 0), uint8 and uint16, predictions at IoU exactly
    0.5, rows in random order, prediction file names that differ from their first lines (a path prefix or
    none), files of images and events the ground truth lacks, the five score styles."""
    rng = np.random.default_rng(seed)
    gt_dir, pred_dir = root / "gt", root / "pred"
    gt_dir.mkdir(parents=True)
    pred_dir.mkdir(parents=True)
    events, files, boxes = [], [], []
    keeps: dict[str, list] = {s: [] for s in SUBSETS}
    images: list[tuple[str, str, np.ndarray]] = []
    for e in range(n_events):
        event = f"{e}--Event_{e}"
        events.append(np.array([event]))
        names, bbs = [], []
        ks: dict[str, list] = {s: [] for s in SUBSETS}
        for j in range(n_images):
            name = f"{e}_Event_img_{j}_{rng.integers(0, 1000)}"
            n_faces = int(rng.choice([0, 1, 3, 8, 20]))
            f = _faces(rng, n_faces)
            names.append(np.array([name]))
            bbs.append(f.astype(np.int32) if n_faces else np.zeros((0, 0) if j % 2 else (0, 4)))
            hard = np.sort(rng.choice(n_faces, rng.integers(0, n_faces + 1), replace=False)) + 1 if n_faces else []
            medium = [k for k in hard if rng.random() < 0.7]
            easy = [k for k in medium if rng.random() < 0.6]
            for s, chosen in zip(SUBSETS, (easy, medium, hard)):
                dtype = np.uint16 if rng.random() < 0.3 else np.uint8
                empty_shape = (0, 0) if rng.random() < 0.5 else (0, 1)
                ks[s].append(np.array(chosen, dtype).reshape(-1, 1) if len(chosen) else np.zeros(empty_shape, dtype))
            images.append((event, name, f))
        files.append(_cells(names))
        boxes.append(_cells(bbs))
        for s in SUBSETS:
            keeps[s].append(_cells(ks[s]))
    from scipy.io import savemat

    savemat(
        gt_dir / "wider_face_val.mat",
        {"event_list": _cells(events), "file_list": _cells(files), "face_bbx_list": _cells(boxes)},
    )
    for s in SUBSETS:
        savemat(gt_dir / f"wider_{s}_val.mat", {"gt_list": _cells(keeps[s])})
    # predictions: the ground truth's images, plus images and an event it lacks
    extra = [("99--Unknown", f"99_Unknown_{k}", np.zeros((0, 4))) for k in range(2)]
    extra.append((images[0][0], "not_in_gt_image", np.zeros((0, 4))))
    all_images = images + extra
    n_rows = [0 if rng.random() < 0.15 else int(rng.integers(1, 30)) for _ in all_images]
    all_scores = scores(rng, style, sum(n_rows))
    at = 0
    for k, ((event, name, f), n) in enumerate(zip(all_images, n_rows)):
        folder = pred_dir / event
        folder.mkdir(exist_ok=True)
        rows = _predictions(rng, f, n)
        s = all_scores[at : at + n]
        at += n
        prefix = ("", f"{event}/", f"/some/where/{event}/")[k % 3]
        file_name = f"{name}.txt" if k % 4 else f"renamed_{k}.txt"
        lines = [f"{prefix}{name}.jpg", str(n if k % 5 else n + 7)]  # the count line is not read
        lines += [" ".join(_number(v) for v in (*r, sc)) for r, sc in zip(rows, s)]
        (folder / file_name).write_text("\n".join(lines) + "\n")
    return pred_dir, gt_dir
