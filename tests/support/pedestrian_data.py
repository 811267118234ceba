"""Generated CityPersons-style inputs built for the reference's quirks (see tests/parity/test_citypersons.py)."""

from __future__ import annotations

import numpy as np

# heights and visibilities on, and a hair either side of, every setup bound
HEIGHTS = [20, 50, 75, 19.999999, 20.000001, 49.99999, 50.00001, 74.99999, 75.00001, 120, 300]
VIS = [0.2, 0.65, 0.19999, 0.20001, 0.64999, 0.65001, 1.0, 0.9, 0.4]
# detection heights at the filter bounds: 50/1.25, 20/1.25, 75*1.25
DT_HEIGHTS = [16.0, 40.0, 93.75, 15.99, 40.01, 93.74, 93.76]


def citypersons_case(seed: int, n_images: int = 12, scale: int = 8) -> tuple[dict, list]:
    """(ground truth dict, results list): sparse unsorted ids, GT id 0, ``height`` differing from the box,
    ``iscrowd`` without ``ignore``, ignore regions, empty images, tied scores, near-duplicate boxes."""
    rng = np.random.default_rng(seed)
    img_ids = [int(v) for v in rng.choice(10_000, n_images, replace=False)]
    images = [{"id": i, "height": 1024, "width": 2048} for i in img_ids]
    anns, results = [], []
    ann_ids = [int(v) for v in rng.permutation(50_000)[: n_images * scale * 2]]
    ann_ids[int(rng.integers(len(ann_ids)))] = 0  # a ground truth with id 0
    k = 0
    for im in img_ids:
        if rng.random() < 0.15:
            continue  # no ground truth here
        for _ in range(int(rng.integers(0, scale))):
            h = float(rng.choice(HEIGHTS)) if rng.random() < 0.6 else float(rng.uniform(10, 400))
            h = int(h) if rng.random() < 0.3 else h
            x, y = float(rng.integers(0, 400)), float(rng.integers(0, 200))
            bh = h if rng.random() < 0.7 else h * float(rng.uniform(0.5, 1.5))  # height is not bbox[3]
            a = {"id": ann_ids[k], "image_id": im, "category_id": int(rng.choice([1, 1, 1, 1, 2, 0])),
                 "bbox": [x, y, round(bh * 0.41, 2), bh], "height": h,
                 "vis_ratio": float(rng.choice(VIS)) if rng.random() < 0.6 else float(rng.uniform(0, 1))}
            r = rng.random()
            if r < 0.15:
                a["ignore"] = 1
            elif r < 0.5:
                a["ignore"] = 0
            if rng.random() < 0.2:
                a["iscrowd"] = 1  # not read
            anns.append(a)
            k += 1
    rng.shuffle(anns)
    # detections: jittered copies of GT boxes (IoU near 0.5 too), random boxes, tied scores
    for im in img_ids:
        mine = [a for a in anns if a["image_id"] == im]
        n = int(rng.integers(0, scale * 2)) if rng.random() > 0.1 else 0
        for _ in range(n):
            if mine and rng.random() < 0.7:
                g = mine[int(rng.integers(len(mine)))]["bbox"]
                j = rng.normal(0, 0.15, 4) * [g[2], g[3], g[2], g[3]]
                box = [g[0] + j[0], g[1] + j[1], max(g[2] + j[2], 1.0), max(g[3] + j[3], 1.0)]
                if rng.random() < 0.2:  # half-overlapping copy: IoU exactly 1/3 or IoA 0.5
                    box = [g[0] + g[2] / 2, g[1], g[2], g[3]]
                if rng.random() < 0.1:
                    box = list(g)
            else:
                w = float(rng.uniform(5, 100))
                box = [float(rng.uniform(0, 500)), float(rng.uniform(0, 300)), w, w / 0.41]
            if rng.random() < 0.15:
                box[3] = float(rng.choice(DT_HEIGHTS))
            score = float(rng.choice([0.5, 0.9, 0.25])) if rng.random() < 0.3 else float(rng.random())
            results.append({"image_id": im, "category_id": int(rng.choice([1, 1, 1, 2])), "bbox": box,
                            "score": score})
    return {"images": images, "categories": [{"id": c, "name": str(c)} for c in (0, 1, 2)],
            "annotations": anns}, results


JI_EDGE_SCORES = [0.1, 0.2, 0.30000000000000004, 0.3, 0.5, 0.7000000000000001, 0.8, 0.9, 0.0, 0.30000000000000010]


def crowdhuman_case(seed: int, n_images: int = 10, scale: int = 12, complete: bool = True) -> tuple[list, list]:
    """(ground-truth records, prediction records) in ODGT form: crowds, boxes beyond the image, mask regions
    with and without the ignore flag, 'background' tags, images with only ignore regions or no detections,
    scores on and a hair above the JI thresholds. ``complete``: every image has boxes and a predictions line
    (what the reference needs to run)."""
    rng = np.random.default_rng(seed)
    gts, dts = [], []
    for i in range(n_images):
        W, H = int(rng.integers(300, 900)), int(rng.integers(300, 900))
        boxes = []
        n = int(rng.integers(1 if complete else 0, scale))
        cx, cy = float(rng.uniform(0, W)), float(rng.uniform(0, H))
        for _ in range(n):
            w = float(rng.integers(8, 160))
            h = w * float(rng.uniform(1.5, 3.0))
            x = cx + float(rng.normal(0, W / 6)) - w / 2  # a crowd around (cx, cy), beyond the image at times
            y = cy + float(rng.normal(0, H / 6)) - h / 2
            fbox = [round(x), round(y), round(w), round(h)] if rng.random() < 0.7 else [x, y, w, h]
            tag = str(rng.choice(["person"] * 8 + ["mask", "background"]))
            rb = {"tag": tag, "fbox": fbox, "vbox": fbox, "hbox": [fbox[0], fbox[1], fbox[2], fbox[2]]}
            r = rng.random()
            if r < 0.1:
                rb["extra"] = {"ignore": 1}
            elif r < 0.5:
                rb["extra"] = {"ignore": 0}
            boxes.append(rb)
        ID = f"img{int(rng.integers(1e6)):06d}_{i}"
        gts.append({"ID": ID, "width": W, "height": H, "gtboxes": boxes})
        if not complete and rng.random() < 0.15:
            continue
        det = []
        for _ in range(int(rng.integers(0, scale * 2))):
            if boxes and rng.random() < 0.7:
                g = boxes[int(rng.integers(len(boxes)))]["fbox"]
                j = rng.normal(0, 0.12, 4) * [g[2], g[3], g[2], g[3]]
                box = [g[0] + j[0], g[1] + j[1], max(g[2] + j[2], 1.0), max(g[3] + j[3], 1.0)]
                if rng.random() < 0.15:
                    box = [g[0], g[1], g[2], g[3] / 2 * (1 + 1e-6)]  # IoU about 0.5
                if rng.random() < 0.1:
                    box = list(g)
            else:
                w = float(rng.uniform(5, 150))
                box = [float(rng.uniform(-50, W)), float(rng.uniform(-50, H)), w, w * 2]
            s = float(rng.choice(JI_EDGE_SCORES)) if rng.random() < 0.3 else float(rng.random())
            det.append({"box": box, "score": s, "tag": 1})
        dts.append({"ID": ID, "dtboxes": det})
    rng.shuffle(dts)
    return gts, dts


def crowdhuman_edges() -> tuple[list, list]:
    """Hand-built ODGT images for the reference's edges, each line complete (the reference runs on them):
    an image with only ignore regions ('mask', a person with ``extra.ignore``), one whose predictions line is
    empty, IoU exactly 0.5 and a hair either side (``inter / (union + 1e-6)`` against ``> 0.5``), IoA 0.5
    with a mask region, boxes beyond the image, and scores on and just above the JI thresholds."""
    W = H = 1000
    gts = [
        {"ID": "only_ignore", "width": W, "height": H, "gtboxes": [
            {"tag": "mask", "fbox": [0, 0, 200, 400]},
            {"tag": "person", "fbox": [400, 0, 100, 250], "extra": {"ignore": 1}},
        ]},
        {"ID": "no_detections", "width": W, "height": H, "gtboxes": [{"tag": "person", "fbox": [10, 10, 50, 120]}]},
        {"ID": "iou_edges", "width": W, "height": H, "gtboxes": [
            {"tag": "person", "fbox": [100 * i, 0, 100, 200], "extra": {"ignore": 0}} for i in range(5)
        ] + [{"tag": "mask", "fbox": [0, 600, 100, 100], "extra": {"ignore": 0}}]},
        {"ID": "beyond", "width": 640, "height": 480, "gtboxes": [
            {"tag": "person", "fbox": [-30, -20, 100, 250]}, {"tag": "person", "fbox": [600, 300, 100, 250]},
            {"tag": "background", "fbox": [300, 100, 40, 100]},
        ]},
    ]
    # IoU of [x, 0, 100, h] with [x, 0, 100, 200]: 100 h / (20000 + 1e-6) against > 0.5
    heights = [100.0, 100.000000005, 100.00000001, 100.000002, 99.99999]
    dts = [
        {"ID": "only_ignore", "dtboxes": [{"box": [10, 10, 100, 200], "score": 0.9},  # IoA 1 with the mask
                                          {"box": [450, 0, 100, 250], "score": 0.4}]},  # IoA 0.5: kept
        {"ID": "no_detections", "dtboxes": []},
        {"ID": "iou_edges", "dtboxes": [{"box": [100 * i, 0, 100, h], "score": s} for i, (h, s) in
                                        enumerate(zip(heights, [0.5, 0.30000000000000004, 0.3000000000000001,
                                                                0.1, 0.9]))]
         + [{"box": [50, 600, 100, 100], "score": 0.7}]},  # IoA 0.5 with the mask: not dropped
        {"ID": "beyond", "dtboxes": [{"box": [-40, -40, 110, 270], "score": 0.8},
                                     {"box": [590, 290, 200, 300], "score": 0.2},
                                     {"box": [300, 100, 40, 100], "score": 0.6}]},
    ]
    for g in gts:
        for b in g["gtboxes"]:  # the reference reads every box's hbox
            b["hbox"] = [b["fbox"][0], b["fbox"][1], b["fbox"][2], b["fbox"][2]]
    return gts, dts


def _cp_gt(anns: list, n_images: int = 1) -> dict:
    full = [{"id": k + 1, "image_id": 1, "category_id": 1, "height": a["bbox"][3], "vis_ratio": 1.0, **a}
            for k, a in enumerate(anns)]
    return {"images": [{"id": i + 1} for i in range(n_images)], "categories": [{"id": 1, "name": "pedestrian"}],
            "annotations": full}


def _cp_det(box: list, score: float, image: int = 1) -> dict:
    return {"image_id": image, "category_id": 1, "bbox": box, "score": score}


def citypersons_edges() -> list[tuple[str, dict, list]]:
    """(name, ground truth, results) built for one quirk each of ``eval_MR_multisetup.py``; every results
    list is non-empty (the reference's ``loadRes`` reads ``anns[0]``)."""
    cases = []
    gt = _cp_gt([{"bbox": [0, 0, 40, 100]}, {"bbox": [200, 0, 40, 120]}])
    cases.append(("perfect_and_setups_without_positives", gt, [_cp_det([0, 0, 40, 100], 0.9),
                                                                _cp_det([200, 0, 40, 120], 0.8)]))
    cases.append(("every_detection_too_short", _cp_gt([{"bbox": [0, 0, 40, 100]}]),
                  [_cp_det([0, 0, 40, 15.99], 0.9), _cp_det([0, 0, 40, 39.99], 0.8)]))
    gt = _cp_gt([{"bbox": [0, 0, 40, 100]}, {"bbox": [100, 0, 40, 100]}])
    gt["annotations"][0]["id"] = 0
    cases.append(("gt_id_zero", gt, [_cp_det([0, 0, 40, 100], 0.9), _cp_det([100, 0, 40, 100], 0.8)]))
    gt = _cp_gt([{"bbox": [0, 0, 40, 200]}, {"bbox": [500, 0, 40, 100]}, {"bbox": [0, 300, 100, 200], "ignore": 1}])
    cases.append(("iou_and_ioa_half", gt, [_cp_det([0, 0, 40, 100], 0.9), _cp_det([50, 300, 100, 200], 0.95),
                                           _cp_det([500, 0, 40, 100], 0.5)]))
    gt = _cp_gt([{"bbox": [500, 0, 40, 100]}, {"bbox": [0, 0, 300, 300], "ignore": 1}])
    res = [_cp_det([0, 0, 40, 100], 0.9) for _ in range(1000)] + [_cp_det([500, 0, 40, 100], 0.5)]
    cases.append(("over_1000_behind_an_ignore_region", gt, res))
    # 2249 images: 40 false positives give FPPI 0.0177857, <= the literal 0.0178, above 10 ** -1.75
    gt = _cp_gt([{"bbox": [1000, 0, 40, 100]}, {"bbox": [1500, 0, 40, 100]}], n_images=2249)
    fps = [_cp_det([10 * i, 500, 20, 60], 0.9 - i * 1e-3) for i in range(41)]
    res = fps[:40] + [_cp_det([1000, 0, 40, 100], 0.85), fps[40], _cp_det([1500, 0, 40, 100], 0.1)]
    cases.append(("fppi_between_the_literal_points_and_10x", gt, res))
    gt = _cp_gt([{"bbox": [1000, 0, 40, 100]}])
    cases.append(("no_index_reads_the_final_recall", gt, [_cp_det([0, 0, 40, 100], 0.9),
                                                          _cp_det([1000, 0, 40, 100], 0.8)]))
    # heights and visibilities a hair either side of each bound; detection heights at the filter bounds
    anns, dets = [], []
    for i, (h, v) in enumerate(zip(HEIGHTS, VIS + VIS)):
        anns.append({"bbox": [60 * i, 0, 30, h], "height": h, "vis_ratio": v})
        dets.append(_cp_det([60 * i, 0, 30, h], 0.5 + i * 0.01))
    for i, h in enumerate(DT_HEIGHTS):
        dets.append(_cp_det([60 * i, 500, 30, h], 0.3))
    cases.append(("bounds", _cp_gt(anns), dets))
    # tied scores across images, sparse unsorted image ids, height differing from the box, iscrowd without ignore
    gt = {"images": [{"id": 907}, {"id": 3}, {"id": 55}], "categories": [{"id": 1, "name": "p"}], "annotations": [
        {"id": 40, "image_id": 907, "category_id": 1, "bbox": [0, 0, 40, 100], "height": 60, "vis_ratio": 0.7},
        {"id": 7, "image_id": 3, "category_id": 1, "bbox": [0, 0, 40, 100], "height": 100, "vis_ratio": 0.9,
         "iscrowd": 1},
        {"id": 12, "image_id": 55, "category_id": 1, "bbox": [0, 0, 40, 100], "height": 45, "vis_ratio": 0.9},
    ]}
    res = [_cp_det([0, 0, 40, 100], 0.7, im) for im in (907, 3, 55)] + [_cp_det([300, 0, 40, 100], 0.7, 3)]
    cases.append(("ties_sparse_ids_height_iscrowd", gt, res))
    return cases


def citypersons_detections(gt: dict, seed: int, per_image: int = 12) -> list:
    """Generated detections for a CityPersons ground truth (the real ``val_gt.json``): jittered copies of its
    boxes (ignore regions included), random boxes, tied scores, and 1,100 detections behind the first ignore
    region of one image."""
    rng = np.random.default_rng(seed)
    by_image: dict = {}
    for a in gt["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    res = []
    for im in gt["images"]:
        mine = by_image.get(im["id"], [])
        for _ in range(int(rng.integers(0, per_image))):
            if mine and rng.random() < 0.6:
                g = mine[int(rng.integers(len(mine)))]["bbox"]
                j = rng.normal(0, 0.1, 4) * [g[2], g[3], g[2], g[3]]
                box = [g[0] + j[0], g[1] + j[1], max(g[2] + j[2], 1.0), max(g[3] + j[3], 1.0)]
            else:
                h = float(rng.uniform(10, 300))
                box = [float(rng.uniform(0, 2000)), float(rng.uniform(0, 900)), h * 0.41, h]
            score = float(rng.choice([0.5, 0.9])) if rng.random() < 0.2 else float(rng.random())
            res.append({"image_id": im["id"], "category_id": 1, "bbox": box, "score": score})
    region = next(a for a in gt["annotations"] if a["category_id"] == 0 or a.get("ignore"))
    g = region["bbox"]
    res += [{"image_id": region["image_id"], "category_id": 1, "bbox": [g[0], g[1], g[2], g[3]], "score": 0.99}
            for _ in range(1100)]
    return res


def citypersons_batches(gt: dict, res: list) -> list[tuple[dict, dict]]:
    """(preds, target) per image of a CityPersons dataset, as the Evaluator takes them: boxes xywh, labels the
    category ids, ``ignore`` (a missing one 0; ``iscrowd`` not passed), ``height`` and ``vis_ratio`` per box."""
    out = []
    for im in gt["images"]:
        a = [x for x in gt["annotations"] if x["image_id"] == im["id"]]
        r = [x for x in res if x["image_id"] == im["id"]]
        target = {"image_id": im["id"], "boxes": np.array([x["bbox"] for x in a], float).reshape(-1, 4),
                  "labels": np.array([x["category_id"] for x in a], np.int64),
                  "ignore": np.array([x.get("ignore", 0) for x in a], np.int64),
                  "height": np.array([x["height"] for x in a], float),
                  "vis_ratio": np.array([x["vis_ratio"] for x in a], float)}
        preds = {"image_id": im["id"], "boxes": np.array([x["bbox"] for x in r], float).reshape(-1, 4),
                 "scores": np.array([x["score"] for x in r], float),
                 "labels": np.array([x["category_id"] for x in r], np.int64)}
        out.append((preds, target))
    return out


def crowdhuman_batches(gts: list, dts: list, box_format: str = "xywh") -> list[tuple[dict, dict]]:
    """(preds, target) per ground-truth line, as the Evaluator takes them: fbox / box (``"xyxy"``: x2 = x + w,
    the reference's arithmetic), labels 1, each box's reference tag (1, 0, -1 from its tag and extra.ignore),
    the image's height and width."""
    classes = ("background", "person")

    def tag(rb: dict) -> int:
        t = classes.index(rb["tag"]) if rb["tag"] in classes else -1
        return -1 if rb.get("extra", {}).get("ignore", 0) != 0 else t

    def boxes(rows: list) -> np.ndarray:
        b = np.array(rows, float).reshape(-1, 4)
        if box_format == "xyxy":
            b[:, 2:4] += b[:, :2]
        return b

    d_of = {d["ID"]: d["dtboxes"] for d in dts}
    out = []
    for g in gts:
        dd = d_of.get(g["ID"], [])
        target = {"image_id": g["ID"], "boxes": boxes([b["fbox"] for b in g["gtboxes"]]),
                  "labels": np.ones(len(g["gtboxes"]), np.int64),
                  "tag": np.array([tag(b) for b in g["gtboxes"]], float), "height": g["height"], "width": g["width"]}
        preds = {"image_id": g["ID"], "boxes": boxes([b["box"] for b in dd]),
                 "scores": np.array([b["score"] for b in dd], float), "labels": np.ones(len(dd), np.int64)}
        out.append((preds, target))
    return out
