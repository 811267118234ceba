"""An independent, deliberately plain Open Images challenge evaluator: the tests' reference for the openimages protocol.

Written from the rules of TF Object Detection API (tensorflow/models research/object_detection), which
needs TensorFlow and so cannot run here; it shares no code with deteval and works on plain rows:

* ``expand_boxes`` / ``expand_labels``: ``OIDHierarchicalLabelsExpansion.expand_boxes_or_segments_from_csv``
  and ``expand_labels_from_csv`` (dataset_tools/oid_hierarchical_labels_expansion.py);
* ``per_class_tp_fp``: ``PerImageEvaluation._compute_tp_fp_for_single_class`` in box mode with
  ``np_box_list_ops.non_max_suppression`` at IoU 1.0 (utils/per_image_evaluation.py);
* ``precision_recall`` / ``average_precision``: ``metrics.compute_precision_recall`` and
  ``compute_average_precision`` (utils/metrics.py);
* ``evaluate``: ``OpenImagesChallengeEvaluator`` (``add_single_ground_truth_image_info``,
  ``add_single_detected_image_info``) and ``ObjectDetectionEvaluation.evaluate``
  (utils/object_detection_evaluation.py), with the per-image grouping of oid_challenge_evaluation.py.

Rows: boxes ``(image, label, xmin, xmax, ymin, ymax, is_group_of)``, labels ``(image, label, confidence)``,
detections ``(image, label, score, xmin, xmax, ymin, ymax)``. Scores must be distinct: the reference
sorts with an unstable quicksort.
"""

from __future__ import annotations

import numpy as np


def hierarchy_parents(node, parent=None, parents=None):
    """label -> set of parent labels (the root is no parent, and no class); only Subcategory edges."""
    if parents is None:
        parents = {}
    for child in node.get("Subcategory", []):
        parents.setdefault(child["LabelName"], set())
        if parent is not None:
            parents[child["LabelName"]].add(node["LabelName"])
        hierarchy_parents(child, node["LabelName"], parents)
    return parents


def ancestors(label, parents):
    out, todo = set(), list(parents.get(label, ()))
    while todo:
        p = todo.pop()
        if p not in out and p != label:
            out.add(p)
            todo.extend(parents.get(p, ()))
    return out


def expand_boxes(rows, parents):
    out = []
    for r in rows:
        out.append(r)
        out.extend((r[0], a, *r[2:]) for a in sorted(ancestors(r[1], parents)))
    return out


def expand_labels(rows, parents):
    out = []
    for image, label, conf in rows:
        out.append((image, label, conf))
        if conf == 1:
            out.extend((image, a, conf) for a in sorted(ancestors(label, parents)))
        else:
            out.extend((image, c, conf) for c in sorted(parents) if label in ancestors(c, parents))
    return out


def _area(b):  # b: [ymin, xmin, ymax, xmax] rows
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def _intersection(b1, b2):
    h = np.maximum(0.0, np.minimum(b1[:, None, 2], b2[None, :, 2]) - np.maximum(b1[:, None, 0], b2[None, :, 0]))
    w = np.maximum(0.0, np.minimum(b1[:, None, 3], b2[None, :, 3]) - np.maximum(b1[:, None, 1], b2[None, :, 1]))
    return h * w


def per_class_tp_fp(det_boxes, det_scores, gt_boxes, gt_group_of, iou_thr, group_of_weight, max_dets=10000):
    """(scores, tp labels) of one class on one image; boxes [ymin, xmin, ymax, xmax]."""
    if len(det_boxes) == 0:
        return np.zeros(0), np.zeros(0)
    keep = det_scores > -10.0
    det_boxes, det_scores = det_boxes[keep], det_scores[keep]
    order = np.argsort(det_scores)[::-1][:max_dets]
    det_boxes, det_scores = det_boxes[order], det_scores[order]
    n = len(det_scores)
    if len(gt_boxes) == 0:
        return det_scores, np.zeros(n)
    normal, group = gt_boxes[~gt_group_of], gt_boxes[gt_group_of]
    tp = np.zeros(n, bool)
    absorbed = np.zeros(n, bool)
    if len(normal):
        inter = _intersection(det_boxes, normal)
        iou = inter / (_area(det_boxes)[:, None] + _area(normal)[None, :] - inter)
        best = np.argmax(iou, axis=1)
        taken = np.zeros(len(normal), bool)
        for i in range(n):
            if iou[i, best[i]] >= iou_thr and not taken[best[i]]:
                tp[i] = taken[best[i]] = True
    group_scores, group_labels = np.zeros(0), np.zeros(0)
    if len(group):
        ioa = _intersection(group, det_boxes).T / _area(det_boxes)[:, None]
        best = np.argmax(ioa, axis=1)
        kept = np.zeros(len(group))
        for i in range(n):
            if not tp[i] and ioa[i, best[i]] >= iou_thr:
                absorbed[i] = True
                kept[best[i]] = max(kept[best[i]], det_scores[i])
        sel = (kept > 0) & (group_of_weight > 0)
        group_scores, group_labels = kept[sel], np.full(int(sel.sum()), group_of_weight)
    return (
        np.concatenate([det_scores[~absorbed], group_scores]),
        np.concatenate([tp[~absorbed].astype(float), group_labels]),
    )


def precision_recall(scores, labels, num_gt):
    order = np.argsort(scores)[::-1]
    tp = labels[order]
    fp = (tp <= 0).astype(float)
    ctp, cfp = np.cumsum(tp), np.cumsum(fp)
    return ctp / (ctp + cfp), ctp / num_gt


def average_precision(precision, recall):
    if precision.size == 0:
        return 0.0
    recall = np.concatenate([[0.0], recall, [1.0]])
    precision = np.concatenate([[0.0], precision, [0.0]])
    for i in range(len(precision) - 2, -1, -1):
        precision[i] = max(precision[i], precision[i + 1])
    idx = np.where(recall[1:] != recall[:-1])[0] + 1
    return float(np.sum((recall[idx] - recall[idx - 1]) * precision[idx]))


def evaluate(boxes, labels, dets, hierarchy=None, expand=True, group_of_weight=1.0, iou_thr=0.5):
    """``({class: AP or None}, mAP)``: the classes are the hierarchy's non-root nodes (else those the GT names)."""
    if hierarchy is not None:
        parents = hierarchy_parents(hierarchy)
        classes = sorted(parents)
        if expand:
            boxes, labels = expand_boxes(boxes, parents), expand_labels(labels, parents)
    else:
        classes = sorted({r[1] for r in boxes} | {r[1] for r in labels})
    images = sorted({r[0] for r in boxes} | {r[0] for r in labels})
    scores = {c: [] for c in classes}
    tps = {c: [] for c in classes}
    npos = dict.fromkeys(classes, 0.0)
    for image in images:
        gt = [r for r in boxes if r[0] == image]
        evaluatable = {r[1] for r in gt} | {r[1] for r in labels if r[0] == image}
        for c in classes:
            npos[c] += sum(1 for r in gt if r[1] == c and not r[6]) + group_of_weight * sum(
                1 for r in gt if r[1] == c and r[6]
            )
        mine = [r for r in dets if r[0] == image and r[1] in evaluatable and r[1] in classes]
        mine = [r for r in mine if r[5] < r[6] and r[3] < r[4]]  # _remove_invalid_boxes
        for c in classes:
            d = [r for r in mine if r[1] == c]
            g = [r for r in gt if r[1] == c]
            s, t = per_class_tp_fp(
                np.array([[r[5], r[3], r[6], r[4]] for r in d], float).reshape(-1, 4),
                np.array([r[2] for r in d], float),
                np.array([[r[4], r[2], r[5], r[3]] for r in g], float).reshape(-1, 4),
                np.array([bool(r[6]) for r in g], bool),
                iou_thr,
                group_of_weight,
            )
            if len(s):
                scores[c].append(s)
                tps[c].append(t)
    ap: dict[str, float | None] = {}
    for c in classes:
        if npos[c] == 0:
            ap[c] = None
            continue
        s = np.concatenate(scores[c]) if scores[c] else np.zeros(0)
        t = np.concatenate(tps[c]) if tps[c] else np.zeros(0)
        ap[c] = average_precision(*precision_recall(s, t, npos[c]))
    vals = [v for v in ap.values() if v is not None]
    return ap, (float(np.mean(vals)) if vals else None)
