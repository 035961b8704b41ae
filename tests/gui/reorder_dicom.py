#!/usr/bin/python3
# Rewrites the DICOM series in FOLDER for the GUI test of the reference's pairing (pydicom), in place:
#   rotate       InstanceNumber n -> n + 1, N -> 1: the images' order is no longer their positions' order (the
#                last slice first; reversing would leave a middle slice, and a phantom symmetric in z, alike);
#   nopositions  the same, and ImagePositionPatient removed: only the (wrong) order is left to pair them by.
# usage: reorder_dicom.py FOLDER rotate|nopositions; exit 3 when pydicom is missing.
import os
import sys

try:
    import pydicom
except ImportError as e:
    print("missing: %s" % e, file=sys.stderr)
    sys.exit(3)

folder, mode = sys.argv[1], sys.argv[2]
files = [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".dcm")]
for f in files:
    ds = pydicom.dcmread(f)
    ds.InstanceNumber = int(ds.InstanceNumber) % len(files) + 1
    if mode == "nopositions" and "ImagePositionPatient" in ds:
        del ds.ImagePositionPatient
    ds.save_as(f)
print(len(files))
