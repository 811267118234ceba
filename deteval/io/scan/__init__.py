"""COCO results and ground truth bytes straight into columns: a numba scanner for the common case.

``results.parse_results_columns(raw)`` reads a results file's bytes (a JSON list of
``{"image_id", "category_id", "bbox", "score", ...}`` objects) into int64 and
float64 columns without building a Python object per record (with
``masks="read"`` also compressed-RLE ``segmentation`` masks, checked and decoded
as they are scanned and kept as their text; with ``masks="skip"`` masks and keypoints are
validated and skipped, as box evaluation reads none; with ``"keypoints"`` each
record's keypoints are read after its optional box);
``gt.parse_gt_columns(raw)`` reads a ground truth file's images, categories and
annotations (for box evaluation: segmentations are validated and skipped; with
``segm=True`` polygons and RLE are read too, polygon coordinates into one flat
array for :mod:`deteval.io.polygons`, and :func:`gt_segm.gt_masks` makes the masks;
with ``keypoints=True`` the annotations' keypoints and ``num_keypoints``). It
is a fast path only: whenever the text is not plainly such a file (malformed
JSON or UTF-8, a missing or mistyped key, a duplicate known key, string ids,
masks or keypoints where not asked for, RLE that is not plain RLE, an
integer of 19+ digits, ...) it returns
``None`` and the caller falls back to the general loader, which reads it or
gives the precise error. Every value skipped is still validated, so text the
general loader would reject is never accepted here.

Modules, each one job: :mod:`.lexer` (JSON tokens, any value skipped),
:mod:`.numbers` (number tokens to binary64, exactly), :mod:`.rle_text`
(compressed RLE strings checked and decoded), :mod:`.result_records` (the
results kernel), :mod:`.pieces` (a results file cut and scanned on threads),
:mod:`.results` (the results entry), :mod:`.gt` and :mod:`.gt_segm` (ground
truth and its segmentations). Each module holding kernels takes ``njit`` from
:mod:`deteval.jit` (the kernel cache's source digest finds them by that line).
"""
