"""The named choices shared across layers, in one place (light: the CLI reads them without numba).

Kernels and protocols take these names; the command line offers them as choices.
"""

from __future__ import annotations

from dataclasses import dataclass

# AP integrators (deteval.accumulation.integrators): how a precision/recall curve becomes one number
INTEGRATORS = ("coco101", "voc11", "all_points", "non_interpolated")
# how equal scores are ranked: each detection in row order (a stable sort), a tie block as one step
# (scikit-learn), or each detection where np.argsort(-score) put it before numpy 1.25 (voc_eval.py's order)
TIE_POLICIES = ("item", "group", "argsort")
# the 11 recall points of VOC07: np.arange(0., 1.1, 0.1) (voc_eval.py) or MATLAB's 0:0.1:1
VOC11_GRIDS = ("numpy", "matlab")
# VOC's IoU test: IoU > threshold (voc_eval.py, detectron2) or IoU >= threshold (MATLAB devkit)
IOU_TESTS = ("gt", "ge")
# box layouts of files: corners, or corner and size
FILE_BOX_FORMATS = ("xyxy", "xywh")


@dataclass(frozen=True)
class IouType:
    """An iou type of the COCO family: what its loaders read, its overlap, its kernels.

    Names only (this module is light): the overlap named here is bound to its kernel in
    :mod:`deteval.protocols.coco_matching` (``OVERLAPS``), the kernel groups are those of
    :mod:`deteval._startup.kernel_signatures`. Adding an iou type is one entry here, its kernel and its binding.
    """

    name: str
    loads: tuple[str, ...]  # the container fields read besides boxes, category, image and score
    overlap: str  # the overlap of a (detection, ground truth) pair: a key of coco_matching.OVERLAPS
    kernel_group: str  # deteval._startup.compile_ahead's group of its evaluation
    scan_group: str  # the byte scanner's kernel group (deteval.io.coco reads large files with it)
    overlap_kernels: str | None = None  # the module whose KERNELS a warm-up loads beside matching's (jit.warm)
    box_optional: bool = False  # a ground truth record may lack its bbox (its own geometry is read)
    warm_scan: bool = False  # the scanner reads mid-sized files once its (box) kernels are cached
    ignores_unlabelled: bool = False  # a ground truth with no labelled keypoint is ignored
    has_mask_area: bool = False  # results have a mask area apart from their box's (fixed mode reads it)
    reads: str | None = None  # the iou type whose records the loaders read, when not its own (boundary: segm's)
    # the coco protocol's reference for it ignores a ground truth that is crowd or has ``ignore`` set in compat
    # mode too (boundary-iou-api's COCOeval), where pycocotools reads ``iscrowd`` only
    honours_ignore: bool = False

    @property
    def loader_type(self) -> str:
        """The iou type :mod:`deteval.io`'s loaders are given."""
        return self.reads or self.name


IOU_TYPES: dict[str, IouType] = {
    t.name: t
    for t in (
        IouType("bbox", (), "box_iou", "coco-bbox", "coco-bbox-scan", "deteval.geometry.boxes", warm_scan=True),
        IouType("segm", ("masks",), "mask_iou", "coco-segm", "coco-segm-gt-scan", box_optional=True,
                has_mask_area=True),
        IouType("keypoints", ("keypoints", "num_keypoints"), "oks", "coco-keypoints", "coco-bbox-scan",
                warm_scan=True, ignores_unlabelled=True),
        IouType("obb", ("obb",), "obb_iou", "coco-obb", "coco-segm-gt-scan", box_optional=True),
        IouType("boundary", ("masks",), "boundary_iou", "coco-boundary", "coco-segm-gt-scan",
                "deteval.geometry.boundary", box_optional=True, has_mask_area=True, reads="segm",
                honours_ignore=True),
    )
}  # fmt: skip
