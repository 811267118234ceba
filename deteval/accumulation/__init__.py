"""The accumulation stage (layer 3): COCO's accumulation and the stable per-class ranking, cumulative TP/FP,
the AP integrators, re-accumulation of resampled images (bootstrap, slices, compare), and ranking
(retrieval) metrics."""
