#!/usr/bin/python3
# Reads the workstation's exports with independent readers: a DICOM series with pydicom and a
# NIfTI file with nibabel, and prints what the GUI test compares with the image on screen, as JSON:
#   dicom: per file (InstanceNumber order) ImagePositionPatient, ImageOrientationPatient, PixelSpacing, Rows,
#          Columns, WindowCenter, WindowWidth, the pixels in image units (stored x RescaleSlope +
#          RescaleIntercept), row-major [Rows][Columns];
#   nifti: the shape, the sform affine (RAS mm), cal_min / cal_max and the voxels in storage order
#          (i fastest: voxel (i, j, k) at i + nx (j + ny k)).
# usage: check_export.py DICOM_DIR|- NIFTI|- ; exit 3 when pydicom, nibabel or numpy is missing.
import json
import os
import sys

try:
    import nibabel
    import numpy
    import pydicom
except ImportError as e:
    print("missing: %s" % e, file=sys.stderr)
    sys.exit(3)


def dicom(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".dcm"):
            continue
        ds = pydicom.dcmread(os.path.join(folder, name))
        slope = float(getattr(ds, "RescaleSlope", 1.0))
        inter = float(getattr(ds, "RescaleIntercept", 0.0))
        pixels = ds.pixel_array.astype(numpy.float64) * slope + inter
        out.append({
            "file": name,
            "instance": int(ds.InstanceNumber),
            "ipp": [float(v) for v in ds.ImagePositionPatient],
            "iop": [float(v) for v in ds.ImageOrientationPatient],
            "spacing": [float(v) for v in ds.PixelSpacing],
            "rows": int(ds.Rows),
            "columns": int(ds.Columns),
            "center": float(ds.WindowCenter),
            "width": float(ds.WindowWidth),
            "pixels": pixels.tolist(),
        })
    out.sort(key=lambda f: f["instance"])
    return out


def nifti(path):
    img = nibabel.load(path)
    data = numpy.asarray(img.dataobj, dtype=numpy.float64)
    return {
        "shape": list(data.shape),
        "affine": img.get_sform().tolist(),
        "sform_code": int(img.header["sform_code"]),
        "cal_min": float(img.header["cal_min"]),
        "cal_max": float(img.header["cal_max"]),
        "voxels": data.flatten(order="F").tolist(),
    }


result = {}
if sys.argv[1] != "-":
    result["dicom"] = dicom(sys.argv[1])
if sys.argv[2] != "-":
    result["nifti"] = nifti(sys.argv[2])
json.dump(result, sys.stdout)
