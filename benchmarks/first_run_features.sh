#!/bin/bash
# The first run (an empty NUMBA_CACHE_DIR of its own) and a warm run (the same cache) of each feature README
# shows, with an installed deteval, on the repository's test data; a row per feature: both wall times, their
# difference, the kernels the first run compiled (.nbi files) and whether it printed the compile notice.
# usage: benchmarks/first_run_features.sh VENV TESTS_DATA OUT.tsv   (VENV: pip install ".[plot]" into it)
set -u
VENV=$(cd "$1" && pwd); D=$(cd "$2" && pwd); OUT=$(realpath -m "$3")
W=$(mktemp -d)
cd "$W"
DE="$VENV/bin/deteval"; PY="$VENV/bin/python"
zcat $D/lvis100/lvis_val_100.json.gz > lvis_gt.json; zcat $D/lvis100/dets_bbox.json.gz > lvis_bbox.json; zcat $D/lvis100/dets_segm.json.gz > lvis_segm.json
C=$D/coco_fake100; GT=$C/instances_val2014_100.json; DT=$C/instances_val2014_fakebbox100_results.json
$PY -c "
import json; d=json.load(open('$DT'))
for r in d[::3]: r['score']*=0.5
json.dump(d, open('b.json','w'))"
cat > evaluator.py <<'PYEOF'
import numpy as np, deteval
boxes = np.array([[10.0, 10, 50, 60], [20, 15, 70, 80]])
ev = deteval.Evaluator(box_format="xyxy")
for _ in range(3):
    ev.update([{"boxes": boxes, "scores": np.array([0.9, 0.4]), "labels": np.array([1, 2])}], [{"boxes": boxes[:1], "labels": np.array([1])}])
ev.compute()
PYEOF
run() {  # name, command...
  local name=$1; shift
  export NUMBA_CACHE_DIR=$W/cache-$name; rm -rf $NUMBA_CACHE_DIR; mkdir -p $NUMBA_CACHE_DIR
  local t0=$(date +%s.%N); "$@" >/dev/null 2>$W/err-$name; local rc=$?; local t1=$(date +%s.%N)
  rm -rf report  # --report's folder is replaced, not kept
  "$@" >/dev/null 2>&1; local t2=$(date +%s.%N)
  local nbi=$(find $NUMBA_CACHE_DIR -name '*.nbi' | wc -l)
  local notice=$(grep -c "compiling kernels" $W/err-$name)
  printf "%s\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\n" $name $(echo "$t1-$t0" | bc) $(echo "$t2-$t1" | bc) $(echo "($t1-$t0)-($t2-$t1)" | bc) $nbi $notice $rc | tee -a $OUT
}
printf "feature\tfirst_s\twarm_s\tdiff_s\tkernels_compiled\tcompile_notice\trc\n" > $OUT
export DETEVAL_COMPILE_HELPERS=0
# a first run after install: no extension modules built yet (they come from the background build), none started
export DETEVAL_CACHE_DIR=$W/deteval-cache DETEVAL_AOT_BACKGROUND=0
run readme_sample $DE --protocol coco --per-class --sample
run tide $DE --tide --sample
run tide_segm $DE --tide --iou-type segm $C/instances_val2014_fakesegm100_results.json $GT
run confusion $DE --confusion --sample
run curves $DE --sample --curves c.json --score-thr 0.5
run plot $DE --sample --plot . --confusion --calibration
run bootstrap50 $DE --bootstrap 50 --sample
run compare $DE compare $DT b.json $GT --bootstrap 50
run slices $DE --sample --slice-by license
run calibration $DE --calibration --sample
run lrp $DE --lrp --sample
run segm $DE --iou-type segm $C/instances_val2014_fakesegm100_results.json $GT
run keypoints $DE --iou-type keypoints $D/keypoints1/dt_dataset.json $D/keypoints1/gt_dataset.json
run obb $DE --iou-type obb $D/obb/dets.json $D/obb/gt.json
run lvis $DE --protocol lvis --per-class lvis_bbox.json lvis_gt.json
run lvis_segm $DE --protocol lvis --iou-type segm lvis_segm.json lvis_gt.json
run crowdpose $DE --protocol crowdpose $D/crowdpose/example_crowdpose_preds.json $D/crowdpose/example_crowdpose_val.json
run voc10 $DE --protocol voc10 --names $D/voc100_native/voc.names $D/voc100_native/dets_txt $D/voc100_native/gt_xml
run voc07_bootstrap $DE --protocol voc07 --bootstrap 50 --names $D/voc100_native/voc.names $D/voc100_native/dets_txt $D/voc100_native/gt_xml
run dota $DE --protocol dota --bootstrap 100 $D/dota/dets $D/dota/gt
run openimages $DE --protocol openimages $D/openimages/challenge_dets.csv $D/openimages/challenge_boxes.csv --labels $D/openimages/challenge_labels.csv --no-expand
run matches_per_image $DE --sample --matches m.csv --per-image p.csv
run report $DE --sample --tide --report report
run boundary $DE --iou-type boundary $C/instances_val2014_fakesegm100_results.json $GT
run yolo $DE --protocol yolo --bootstrap 5 --image-sizes $D/yolo_example/sizes.json $D/yolo_example/preds $D/yolo_example/labels
run widerface $DE --protocol widerface --bootstrap 5 $D/widerface_example/pred $D/widerface_example/gt
run kitti $DE --protocol kitti --bootstrap 5 $D/kitti_example/results $D/kitti_example/label_2
run citypersons $DE --protocol citypersons --curves cp.json $D/pedestrian/citypersons_results.json $D/pedestrian/citypersons_gt.json
run crowdhuman $DE --protocol crowdhuman --curves ch.json $D/pedestrian/crowdhuman_preds.odgt $D/pedestrian/crowdhuman_gt.odgt
run evaluator $PY evaluator.py
rm -rf "$W"
